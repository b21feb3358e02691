#!/usr/bin/env bash
# CFIC on a CUDA machine at the papers' model size, in one go (BENCHMARKS.md, "CFIC on an
# NVIDIA GPU"): no larger model's weights can reach the lent machine (no network, 64 MiB per
# call; the packaged Qwen2.5-Coder-1.5B GGUF alone is 1.1 GB), so the models are Qwen2
# architectures of 1.5B and 7B shapes with random weights and the real Qwen tokenizer. Their
# outputs mean nothing; their decoding cost is the real models'.
#
#   bash benchmarks/incontext_gpu.sh CARRY OUT
#
# CARRY holds qwen/ (the Qwen2.5 tokenizer and config.json), data/squad/ (the SQuAD file that
# LONGSCAN_BENCH_DATA points to), whl/ (wheels of what the GPU machine lacks) and site/
# (blingfire unpacked); OUT receives the JSON.
set -euo pipefail
carry=$1
out=$2
source benchmarks/gpu_setup.sh "$carry" "$out"
export LONGSCAN_BENCH_DATA="$carry/data"
bench=(python3 benchmarks/incontext.py)
"${bench[@]}" random-lm "$carry/qwen" /tmp/random-7b
"${bench[@]}" random-lm "$carry/qwen" /tmp/random-1.5b --hidden-size 1536 \
    --intermediate-size 8960 --layers 28 --heads 12 --kv-heads 2
for words in 800 3000; do  # one window of 8192 tokens
    for size in 7b 1.5b; do
        "${bench[@]}" cfic-speed --model /tmp/random-$size --items 8 --words $words \
            --window-tokens 8192 --out "$out" --file-name "cfic-speed-$size-$words.json"
    done
done
