#!/usr/bin/env bash
# One complete local-model run of each answer-level runner (BENCHMARKS.md, "Answering").
#   bash benchmarks/answering.sh [out-dir]
# Needs the [local-llm] extra; every call is cached, so a rerun costs nothing. Each line is
# one runner with one system (about 15-25 minutes each on 2 cores); add `-r NAME` to compare.
set -euo pipefail
OUT="${1:-runs/qa}"
COMMON=(--local --context-tokens 4096 --max-tokens 128 --out "$OUT")
longscan bench loong -r scanner -r full-context "${COMMON[@]}"
longscan bench leval-coursera -r scanner "${COMMON[@]}"
longscan bench leval-financial -r full-context "${COMMON[@]}"
longscan bench localize-hotpotqa --max-items 10 "${COMMON[@]}"
