#!/usr/bin/env bash
# The main job on the embedded defaults: evidence for a question over the bundled novel.
#   bash scripts/demo.sh ["your question"] [extra `longscan ask` options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh" ""
DEFAULT_QUESTION="What time is it always at the Hatter's tea party?"
QUESTION="${1:-$DEFAULT_QUESTION}"
shift || true
longscan ask "$ROOT/src/longscan/data/sample_novel.txt" -q "$QUESTION" "$@"
