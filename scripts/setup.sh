#!/usr/bin/env bash
# Creates .venv (once) and installs longscan into it. Sourced by demo.sh and test.sh.
# torch is installed first, so nothing can pull another build behind it. Which build:
#   LONGSCAN_TORCH=cpu   (default) the CPU build: a local wheel if pip can find one
#                        (e.g. through its find-links), else PyTorch's CPU wheel index;
#   LONGSCAN_TORCH=cuda  PyPI's default build (CUDA on Linux), for a machine with a GPU;
#   LONGSCAN_TORCH=URL   any wheel index, e.g. https://download.pytorch.org/whl/cu126.
# The encoders and the scanner use a GPU when torch sees one (LONGSCAN_DEVICE overrides).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${LONGSCAN_VENV:-$ROOT/.venv}"
EXTRAS="${1:-}"
TORCH_VERSION="$(sed -n 's/^torch==//p' "$ROOT/scripts/constraints.txt")"  # the tested pin
TORCH_CHOICE="${LONGSCAN_TORCH:-cpu}"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"

install_torch() {
  case "$TORCH_CHOICE" in
    cpu)
      if python -m pip install --quiet --dry-run --no-deps --no-index "torch==$TORCH_VERSION+cpu" \
        >/dev/null 2>&1; then
        python -m pip install --quiet "torch==$TORCH_VERSION+cpu"  # the local CPU wheel
      else
        # PyPI's torch for Linux is the CUDA build (GBs of nvidia packages): take PyTorch's
        # CPU wheel, and its dependencies from PyPI.
        python -m pip install --quiet --index-url "$TORCH_CPU_INDEX" \
          --extra-index-url https://pypi.org/simple "torch==$TORCH_VERSION+cpu"
      fi
      ;;
    cuda) python -m pip install --quiet "torch==$TORCH_VERSION" ;;
    http://* | https://* | file://*)
      python -m pip install --quiet --index-url "$TORCH_CHOICE" \
        --extra-index-url https://pypi.org/simple "torch==$TORCH_VERSION"
      ;;
    *)
      echo "error: LONGSCAN_TORCH=$TORCH_CHOICE: use cpu, cuda or the URL of a wheel index" >&2
      return 1
      ;;
  esac
}

STAMP="$VENV/.longscan-installed$EXTRAS"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ] \
  || [ "$ROOT/scripts/constraints.txt" -nt "$STAMP" ] \
  || [ "$(cat "$STAMP")" != "torch=$TORCH_CHOICE" ]; then
  python -m pip install --quiet --upgrade pip
  install_torch
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
  python -m pip install --quiet -c "$ROOT/scripts/constraints.txt" -e "$ROOT$EXTRAS"
  if [[ "$EXTRAS" == *local-llm* ]]; then
    # kvpress pins transformers<5.3 in its metadata; it runs on ours (see pyproject.toml)
    python -m pip install --quiet --no-deps "kvpress==$(sed -n 's/^kvpress==//p' \
      "$ROOT/scripts/constraints.txt")"
  fi
  if [ "$TORCH_CHOICE" = cpu ] && python -m pip list 2>/dev/null | grep -qi nvidia; then
    echo "error: CUDA packages were installed beside the CPU build of torch;" \
      "set LONGSCAN_TORCH=cuda to use a GPU build instead" >&2
    exit 1
  fi
  echo "torch=$TORCH_CHOICE" >"$STAMP"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
