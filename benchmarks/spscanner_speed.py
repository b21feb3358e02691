"""Speed and memory of the paper's token-level scanner (130m layout) beside the shipped
hierarchical scanner, in one run.

    # here (CPU): builds the text from the Loong corpus, times both scanners in fresh processes
    python benchmarks/spscanner_speed.py --tokenizer runs/spscanner/tokenizer.json \
        --tokens 100000 --hierarchical
    # on a GPU machine, with the text and tokenizer carried there:
    python benchmarks/spscanner_speed.py --tokenizer T --text FILE --tokens 69000,100000 \
        --device cuda

No published SPScanner checkpoint can be fetched here, so the network has random weights in
the published 130m layout (``state-spaces/mamba2-130m``'s config): the timings are the
architecture's, not a claim about quality. Tokens are the given tokenizer's (a byte-level
BPE like GPT-NeoX-20B's). Each measurement runs in a fresh process (peak RSS per run):
the first ``score`` of a document (tokenize, map sentence ends, one streamed pass), then the
same again (warm: on a GPU the first call pays for kernel selection), and a sliding-window
pass (``--window`` tokens, stride half of it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from longscan.models.spscanner import MAMBA2_130M

CHILD = r"""
import json, os, sys, time
import torch
from longscan.devices import clock, peak_rss_bytes
from longscan.documents import Document
from longscan.models.spscanner import SPScannerConfig, SPScannerModel
from longscan.scanning.spscanner import SPScanner, load_tokenizer

settings = json.loads(os.environ["SETTINGS"])
device = settings["device"]
torch.manual_seed(0)
torch.set_num_threads(settings["threads"])
config = SPScannerConfig.from_mamba_ssm(settings["config"])
chunk = settings.get("chunk_size")
model = SPScannerModel(config)
tokenizer = load_tokenizer(settings["tokenizer"])
text = open(settings["text"], encoding="utf-8").read()
offsets = tokenizer.encode(text, add_special_tokens=False).offsets
text = text[: offsets[min(settings["tokens"], len(offsets)) - 1][1]]
document = Document("doc", text)
document.sentences
query = "What was the total revenue reported for the fiscal year?"

def timed(scanner):
    started = clock(device)
    scanner.score(query, [document])
    return clock(device) - started

stream = SPScanner(model, tokenizer, mode="stream", device=device, chunk_size=chunk)
tokens = len(tokenizer.encode(text, add_special_tokens=False).ids)
first = timed(stream)
warm = min((timed(stream) for _ in range(settings["repeats"])), default=None)
started = time.perf_counter()
tokenizer.encode(text, add_special_tokens=False)
tokenize = time.perf_counter() - started
window = settings["window"]
sliding_seconds = None
if window:
    sliding = SPScanner(
        model, tokenizer, mode="sliding", window_tokens=window, device=device, chunk_size=chunk
    )
    sliding_seconds = timed(sliding)
gpu_peak = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else None
print(json.dumps({
    "tokens": tokens, "sentences": len(document.sentences), "first_s": first, "warm_s": warm,
    "tokenize_s": tokenize, "sliding_s": sliding_seconds, "window": window,
    "rss_mb": peak_rss_bytes() / 2**20, "gpu_peak_mb": gpu_peak, "device": device,
    "bfloat16": stream.bfloat16, "chunk_size": stream.model.layers[0].mixer.chunk_size,
    "gpu": torch.cuda.get_device_name() if device.startswith("cuda") else None,
}))
"""


def train_tokenizer(path: Path, data_dir: Path | None) -> None:
    """A byte-level BPE with GPT-NeoX-20B's vocabulary size, learnt offline from the
    training documents (the published tokenizer cannot be fetched here)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from longscan.bench.datasets import default_data_dir

    files = sorted(str(f) for f in (data_dir or default_data_dir()).glob("train-docs/**/*.txt"))
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=MAMBA2_130M["vocab_size"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
    )
    tokenizer.train(files, trainer)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))


def write_init(directory: Path, tokenizer: Path) -> None:
    """A random-weight checkpoint in the 130m layout, to fine-tune with
    ``longscan train --token-level --init`` where no published one can be fetched."""
    import torch

    from longscan.models.spscanner import SPScannerConfig, SPScannerModel
    from longscan.scanning.spscanner import save_spscanner

    torch.manual_seed(0)
    model = SPScannerModel(SPScannerConfig.from_mamba_ssm(MAMBA2_130M))
    save_spscanner(model, directory, tokenizer, {"random_init": "state-spaces/mamba2-130m layout"})


RUNS = (("cpu", "cpu", False), ("cuda", "cuda", False), ("bf16", "cuda", True))
"""The parity runs: name, device, bfloat16 autocast."""


def parity(tokenizer: Path, text: Path, tokens: int) -> dict:
    """The 130m layout (random weights) on CUDA against the CPU, both float32, and bfloat16
    autocast against float32 on CUDA: the largest logit difference at sentence ends."""
    import numpy as np
    import torch

    from longscan.documents import Document
    from longscan.models.spscanner import SPScannerConfig, SPScannerModel
    from longscan.scanning.spscanner import SPScanner, load_tokenizer

    torch.manual_seed(0)
    model = SPScannerModel(SPScannerConfig.from_mamba_ssm(MAMBA2_130M))
    words = load_tokenizer(tokenizer)
    full = text.read_text(encoding="utf-8")
    offsets = words.encode(full, add_special_tokens=False).offsets
    document = Document("doc", full[: offsets[tokens - 1][1]])
    query = "What was the total revenue reported for the fiscal year?"
    scores = {}
    for name, device, bf16 in RUNS:
        scanner = SPScanner(model, words, device=device, bfloat16=bf16, chunk_size=64)
        scores[name] = scanner.score(query, [document])
    spread = float(np.std(scores["cpu"]))
    return {
        "tokens": tokens,
        "cuda_vs_cpu_max_abs": float(np.abs(scores["cuda"] - scores["cpu"]).max()),
        "bf16_vs_fp32_max_abs": float(np.abs(scores["bf16"] - scores["cuda"]).max()),
        "bf16_vs_fp32_corr": float(np.corrcoef(scores["bf16"], scores["cuda"])[0, 1]),
        "logit_std": spread,
    }


def measure_spscanner(text: Path, tokenizer: Path, tokens: int, args: argparse.Namespace) -> dict:
    settings = {
        "config": MAMBA2_130M,
        "tokenizer": str(tokenizer),
        "text": str(text),
        "tokens": tokens,
        "device": args.device,
        "threads": args.threads,
        "repeats": args.repeats,
        "window": args.window,
        "chunk_size": args.chunk_size,
    }
    env = {**os.environ, "SETTINGS": json.dumps(settings), "OMP_NUM_THREADS": str(args.threads)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", type=Path, required=True, help="A tokenizer.json.")
    parser.add_argument(
        "--train-tokenizer",
        action="store_true",
        help="First learn --tokenizer (a byte-level BPE of GPT-NeoX-20B's size) from the "
        "training documents in ../shared/data/train-docs.",
    )
    parser.add_argument("--text", type=Path, help="Text to read (default: Loong reports).")
    parser.add_argument("--data-dir", type=Path, help="Shared data (for the default text).")
    parser.add_argument("--tokens", default="100000", help="Document lengths, comma-separated.")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help="Warm passes (the fastest kept).")
    parser.add_argument(
        "--window", type=int, default=32_000, help="Sliding window (tokens); 0: none."
    )
    parser.add_argument(
        "--chunk-size", type=int, help="SSD chunk (default: 64 on a CPU, else 256)."
    )
    parser.add_argument(
        "--hierarchical",
        action="store_true",
        help="Also time the shipped hierarchical scanner's first scan of the same text.",
    )
    parser.add_argument("--out", type=Path, help="Write the results as JSON here too.")
    parser.add_argument(
        "--write-init", type=Path, help="Only write a random 130m-layout checkpoint here."
    )
    parser.add_argument(
        "--parity", type=int, help="Only compare CUDA with the CPU over this many tokens."
    )
    args = parser.parse_args()
    if args.train_tokenizer:
        train_tokenizer(args.tokenizer, args.data_dir)
    if args.write_init:
        write_init(args.write_init, args.tokenizer)
        return
    if args.parity:
        print(json.dumps(parity(args.tokenizer, args.text, args.parity)))
        return
    sizes = [int(size) for size in args.tokens.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        text = args.text
        if text is None:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from speed import corpus_text

            from longscan.bench.datasets import default_data_dir

            data_dir = args.data_dir or default_data_dir()
            text = Path(folder) / "doc.txt"  # MiniLM pieces overshoot the BPE's count a little
            text.write_text(corpus_text(data_dir, int(max(sizes) * 1.2)), encoding="utf-8")
        results = []
        for size in sizes:
            result = measure_spscanner(text, args.tokenizer, size, args)
            results.append({"scanner": "token-level 130m (random weights)", **result})
            print(json.dumps(results[-1]), flush=True)
            if args.hierarchical:
                from speed import measure

                cut = Path(folder) / f"cut{size}.txt"
                full = text.read_text(encoding="utf-8")
                from longscan.scanning.spscanner import load_tokenizer

                offsets = load_tokenizer(args.tokenizer).encode(full).offsets
                cut.write_text(full[: offsets[min(size, len(offsets)) - 1][1]], encoding="utf-8")
                shipped = measure(cut, "scanner", args.threads)
                results.append({"scanner": "hierarchical (shipped)", "tokens": size, **shipped})
                print(json.dumps(results[-1]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
