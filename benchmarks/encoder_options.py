"""Encoder speed/quality options: full MiniLM, int8 dynamic quantisation, fewer layers.

    python benchmarks/encoder_options.py [--threads 2] [--items 60]

Speed: contextual sentence encoding (the scanner's local encoder) of the squad-long 10k-word
dev documents, in tokens/s. Quality: mean cosine of each variant's vectors to the full
model's, and the dense-sentence retriever's hit@100 / hit@300 on the same items when it
uses that variant.
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
import torch

from longscan.bench.builders import build_benchmark
from longscan.encoders import get_encoder
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.encoders.minilm import SentenceEncoder
from longscan.evaluation import evaluate
from longscan.retrievers import DenseRetriever


def variants(base: SentenceEncoder) -> dict[str, SentenceEncoder]:
    from torch.ao.quantization import quantize_dynamic

    quantized = copy.deepcopy(base.model)
    # `auto_model` is a read-only alias of the Transformer module's `model` in
    # sentence-transformers 6; replace the module itself.
    quantized[0].model = quantize_dynamic(
        quantized[0].auto_model, {torch.nn.Linear}, dtype=torch.qint8
    )
    shallow = copy.deepcopy(base.model)
    shallow[0].auto_model.encoder.layer = shallow[0].auto_model.encoder.layer[:3]
    return {
        "fp32, 6 layers": base,
        "int8 dynamic, 6 layers": SentenceEncoder(quantized, "int8"),
        "fp32, 3 layers": SentenceEncoder(shallow, "3layers"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--items", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    items = build_benchmark("squad-long", target_words=10_000, max_items=args.items)
    documents = list({d.content_hash: d for i in items for d in i.documents}.values())
    tokenizer = get_encoder().model.tokenizer
    tokens = sum(
        len(ids)
        for d in documents
        for ids in tokenizer(d.sentence_texts(), add_special_tokens=False, verbose=False)[
            "input_ids"
        ]
    )
    reference = None
    print(f"{len(documents)} documents, {tokens:,} tokens, {len(items)} questions\n")
    print("| encoder | tokens/s | cosine to fp32 | dense hit@100 | dense hit@300 |")
    print("|---|---:|---:|---:|---:|")
    for name, encoder in variants(get_encoder()).items():
        contextual = ContextualSentenceEncoder(encoder)
        started = time.perf_counter()
        vectors = np.concatenate([contextual.encode_document(d) for d in documents])
        seconds = time.perf_counter() - started
        reference = vectors if reference is None else reference
        cosine = float((vectors * reference).sum(axis=1).mean())
        dense = DenseRetriever("sentence", cache=EmbeddingCache(None), encoder=encoder)
        result = evaluate(dense, items, progress=False)
        print(
            f"| {name} | {tokens / seconds:,.0f} | {cosine:.4f} | "
            f"{result.overall['hit@100']:.3f} | {result.overall['hit@300']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
