#!/usr/bin/env bash
# Creates .venv (once) and installs longscan into it. Sourced by demo.sh and test.sh.
# torch is pinned to the CPU build first, so nothing can pull CUDA packages behind it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${LONGSCAN_VENV:-$ROOT/.venv}"
EXTRAS="${1:-}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
STAMP="$VENV/.longscan-installed$EXTRAS"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
  python -m pip install --quiet --upgrade pip
  python -m pip install --quiet "torch==2.13.0"
  python -m pip install --quiet -e "$ROOT$EXTRAS"
  if python -m pip list 2>/dev/null | grep -qi nvidia; then
    echo "error: CUDA packages were installed; longscan needs the CPU build of torch" >&2
    exit 1
  fi
  touch "$STAMP"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
