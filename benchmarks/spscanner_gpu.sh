#!/usr/bin/env bash
# The token-level scanner on a CUDA machine, in one go (BENCHMARKS.md, "The paper's
# token-level scanner"): CUDA against the CPU, speed at 69k and 100k tokens (streamed and
# sliding), and `longscan train --token-level` on the 130m layout.
#
#   bash benchmarks/spscanner_gpu.sh CARRY OUT
#
# CARRY holds tokenizer.json, doc.txt (the text to read), cache/ (token examples written by
# `longscan train --token-level --data-cache` here), whl/ (wheels of what the GPU machine
# lacks) and site/ (blingfire unpacked without its 90 MB of unused tokenizer models);
# OUT receives the logs and JSON.
set -euo pipefail
carry=$1
out=$2
source benchmarks/gpu_setup.sh "$carry" "$out"
bench=(python3 benchmarks/spscanner_speed.py --tokenizer "$carry/tokenizer.json")
bench+=(--text "$carry/doc.txt")
"${bench[@]}" --parity 4000 | tee "$out/parity.json"
"${bench[@]}" --device cuda --tokens 69000,100000 --repeats 5 --window 32000 \
    --out "$out/speed.json"
"${bench[@]}" --device cuda --tokens 69000 --repeats 5 --window 0 --chunk-size 64 \
    --out "$out/speed-chunk64.json"
"${bench[@]}" --write-init /tmp/spscanner-init
python3 -m longscan.cli train --token-level --init /tmp/spscanner-init --out /tmp/tuned \
    --datasets squad,hotpotqa,musique --seeds 0 --max-per-source 16 --batch-size 8 \
    --data-cache "$carry/cache" 2>&1 | tee "$out/train.log"
