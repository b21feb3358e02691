#!/usr/bin/env bash
# The test suite (fast tests; add `-m slow` or `-m ""` for the slow ones).
#   bash scripts/test.sh [pytest options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh" "[test]"
cd "$ROOT"
python -m pytest "$@"
