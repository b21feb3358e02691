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
  if [[ "$EXTRAS" == *local-llm* ]]; then
    # llama-cpp-python ships only source: build its wheel once and keep it outside the venv.
    WHEELS="${LONGSCAN_WHEEL_CACHE:-$HOME/.cache/longscan/wheels}"
    if ! compgen -G "$WHEELS/llama_cpp_python-0.3.36-*.whl" >/dev/null; then
      echo "building llama.cpp (llama-cpp-python 0.3.36) once; 15-40 minutes on 2 cores" >&2
      CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        python -m pip wheel --quiet --no-deps -w "$WHEELS" "llama-cpp-python==0.3.36"
    fi
    python -m pip install --quiet "$(compgen -G "$WHEELS/llama_cpp_python-0.3.36-*.whl" | head -1)"
  fi
  python -m pip install --quiet -e "$ROOT$EXTRAS"
  if python -m pip list 2>/dev/null | grep -qi nvidia; then
    echo "error: CUDA packages were installed; longscan needs the CPU build of torch" >&2
    exit 1
  fi
  touch "$STAMP"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
