#!/usr/bin/env bash
# The test suite (fast tests; add `-m slow` or `-m ""` for the slow ones).
#   bash scripts/test.sh [pytest options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh" "[test,local-llm]"
export LONGSCAN_REQUIRE_LLM=1  # the LLM tests run against a real local server, never skip
cd "$ROOT"
python -m pytest "$@"
