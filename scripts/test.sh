#!/usr/bin/env bash
# The test suite (fast tests; add `-m slow` or `-m ""` for the slow ones).
#   bash scripts/test.sh [pytest options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh" "[test,local-llm,answerer]"
# The browser test drives Debian's chromium through Playwright (never `playwright install`).
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && SUDO="sudo -n"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } >/dev/null
fi
export LONGSCAN_REQUIRE_LLM=1  # the LLM tests run against a real local server, never skip
export LONGSCAN_REQUIRE_BROWSER=1  # and the browser test in real chromium, never skip
cd "$ROOT"
# Two workers: most tests wait on one thread (a subprocess, the local LLM, Python), so two
# finish the suite sooner even on two cores. `--dist load` hands out tests by position: the
# schema test's generated cases share one test id, which the grouping modes would run once.
# `-n 0`: one process.
python -m pytest -n 2 --dist load "$@"
