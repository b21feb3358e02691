"""Encoder speed/quality options: MiniLM on PyTorch and ONNX Runtime, float32 and int8.

    python benchmarks/encoder_options.py [--threads 2] [--items 60]

Speed: contextual sentence encoding (the scanner's local encoder) of the squad-long 10k-word
dev documents, in tokens/s. Quality: cosine of each variant's vectors to the reference's,
and the dense-sentence retriever's hit@100 / hit@300 on the same items when it uses that
variant.
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
import torch

from longscan.bench.catalogue import build_benchmark
from longscan.encoders.bert import OnnxBert, TorchBert, WordPieces, onnx_export, packaged_model_dir
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.encoders.minilm import SentenceEncoder
from longscan.evaluation import evaluate
from longscan.retrievers import DenseRetriever


def variants(threads: int) -> dict[str, SentenceEncoder]:
    """Each runtime and precision, over the same word pieces; the first is the reference."""
    from torch.ao.quantization import quantize_dynamic

    words = WordPieces(packaged_model_dir())
    reference = TorchBert.packaged()
    quantized = quantize_dynamic(
        copy.deepcopy(reference.model), {torch.nn.Linear}, dtype=torch.qint8
    )
    shallow = copy.deepcopy(reference.model)
    shallow.encoder.layer = shallow.encoder.layer[:3]
    bodies = {
        "PyTorch fp32, 6 layers (reference)": reference,
        "PyTorch int8 dynamic (per tensor)": TorchBert(quantized),
        "PyTorch fp32, 3 layers": TorchBert(shallow),
        "ONNX Runtime fp32": OnnxBert(onnx_export(quantized=False), threads),
        "ONNX Runtime int8 (per channel)": OnnxBert(onnx_export(quantized=True), threads),
    }
    return {name: SentenceEncoder(body, words, name) for name, body in bodies.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--items", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    items = build_benchmark("squad-long", target_words=10_000, max_items=args.items)
    documents = list({d.content_hash: d for i in items for d in i.documents}.values())
    words = WordPieces(packaged_model_dir())
    tokens = sum(len(ids) for d in documents for ids in words.pieces(d.sentence_texts(), 10**9))
    reference = None
    print(f"{len(documents)} documents, {tokens:,} tokens, {len(items)} questions\n")
    print(
        "| encoder | tokens/s | cosine to reference (mean, min) | dense hit@100 | dense hit@300 |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, encoder in variants(args.threads).items():
        contextual = ContextualSentenceEncoder(encoder)
        started = time.perf_counter()
        vectors = np.concatenate([contextual.encode_document(d) for d in documents])
        seconds = time.perf_counter() - started
        reference = vectors if reference is None else reference
        cosine = (vectors * reference).sum(axis=1)
        dense = DenseRetriever("sentence", cache=EmbeddingCache(None), encoder=encoder)
        result = evaluate(dense, items, progress=False)
        print(
            f"| {name} | {tokens / seconds:,.0f} | {cosine.mean():.4f}, {cosine.min():.4f} | "
            f"{result.overall['hit@100']:.3f} | {result.overall['hit@300']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
