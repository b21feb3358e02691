#!/usr/bin/env bash
# One local-model run of each answer-level runner (BENCHMARKS.md, "Answering").
#   bash benchmarks/answering.sh [out-dir]
# Needs the [local-llm] extra; every call is cached, so a rerun costs nothing. Add `-r NAME`
# to compare systems; with the local model an L-Eval question takes ~30 s on 2 cores, so the
# L-Eval runs are capped (coursera alone has 172 questions).
set -euo pipefail
OUT="${1:-runs/qa}"
COMMON=(--local --context-tokens 4096 --max-tokens 128 --out "$OUT")
longscan bench loong -r scanner -r full-context "${COMMON[@]}"
longscan bench localize-hotpotqa --max-items 10 "${COMMON[@]}"
longscan bench leval-coursera -r scanner --max-items 10 "${COMMON[@]}"
longscan bench leval-financial -r full-context --max-items 2 "${COMMON[@]}"  # sliding windows
