"""Measure sentence segmenters on speed and on SQuAD answer spans cut by a boundary.

    python benchmarks/segmentation.py [--data-dir ../shared/data] [--chars 1000000]

Speed: characters per second on a 1M-character text built from SQuAD paragraphs (through
longscan's own `segment`, so paragraph splitting and offset checks are included).
Quality: on every SQuAD paragraph, the share of answer spans that cross a sentence boundary
(lower is better: such an answer could never be retrieved as one sentence).
Also times the default segmenter on a 1M-word text.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from longscan.segment import SEGMENTERS, segment


def squad_paragraphs(data_dir: Path) -> list[tuple[str, list[tuple[int, int]]]]:
    raw = json.loads((data_dir / "squad" / "squad-v1.1-dev-36articles.json").read_text())
    found = []
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            spans = {
                (a["answer_start"], a["answer_start"] + len(a["text"]))
                for qa in paragraph["qas"]
                for a in qa["answers"]
            }
            found.append((paragraph["context"], sorted(spans)))
    return found


def crossing_rate(paragraphs, segmenter: str) -> float:
    crossed = total = 0
    for context, answers in paragraphs:
        sentences, _, _ = segment(context, segmenter)
        for start, end in answers:
            inside = (sentences[:, 0] <= start) & (sentences[:, 1] >= end)
            crossed += int(not inside.any())
            total += 1
    return crossed / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--chars", type=int, default=1_000_000)
    args = parser.parse_args()
    paragraphs = squad_paragraphs(args.data_dir)
    corpus = "\n\n".join(context for context, _ in paragraphs)
    text = (corpus * (args.chars // len(corpus) + 1))[: args.chars]
    print("| segmenter | chars/s (1M chars) | sentences | answer spans crossing a boundary |")
    print("|---|---:|---:|---:|")
    for segmenter in SEGMENTERS:
        started = time.perf_counter()
        sentences, _, _ = segment(text, segmenter)
        seconds = time.perf_counter() - started
        rate = crossing_rate(paragraphs, segmenter)
        print(f"| {segmenter} | {len(text) / seconds:,.0f} | {len(sentences):,} | {rate:.2%} |")
    corpus_words = corpus.split()
    repeats = 1_000_000 // len(corpus_words) + 1
    words = "\n\n".join([corpus] * repeats)
    words = words[: len(words) * 1_000_000 // (len(corpus_words) * repeats)]
    started = time.perf_counter()
    sentences, _, _ = segment(words)
    seconds = time.perf_counter() - started
    lengths = np.diff(sentences, axis=1)
    print(
        f"\ndefault segmenter on 1,000,000 words ({len(words):,} chars): {seconds:.2f} s, "
        f"{len(sentences):,} sentences, longest {int(lengths.max())} chars"
    )


if __name__ == "__main__":
    main()
