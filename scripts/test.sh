#!/usr/bin/env bash
# The test suite (fast tests; add `-m slow` or `-m ""` for the slow ones).
#   bash scripts/test.sh [pytest options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh" "[test,local-llm]"
# The browser test drives Debian's chromium through Playwright (never `playwright install`).
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null
fi
export LONGSCAN_REQUIRE_LLM=1  # the LLM tests run against a real local server, never skip
cd "$ROOT"
python -m pytest "$@"
