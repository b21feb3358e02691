"""Training examples for the scanner, built from the benchmark builders' train splits.

Each example is a long document (≈2k/5k/10k tokens) with a question and a 0/1 label per
sentence (the sentence overlaps a gold span). The frozen encoder's sentence vectors are
computed once per paragraph and reused wherever the paragraph appears again, and lexical
features once per (question, document); training then touches only small tensors.

Decontamination (``longscan.training.decontamination``) follows the paper: a training
document is dropped when more than 1% of its sentences also occur (after normalisation) in
any development or benchmark document.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

from longscan.bench.builders import build_multihop, build_squad_long
from longscan.bench.datasets import MultiHopParagraph
from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.evaluation.gold import gold_unit_labels
from longscan.items import QAItem
from longscan.progress import track
from longscan.scanning.features import LexicalFeatures
from longscan.tables import row_context
from longscan.training.decontamination import (
    DECONTAMINATION_THRESHOLD,
    CleanParagraphs,
    Contaminated,
    contamination,
)
from longscan.training.instructions import with_instruction_copies

if TYPE_CHECKING:
    from longscan.training.synthetic_examples import SyntheticExample

logger = logging.getLogger(__name__)

ExampleRow = tuple[str, tuple[int, ...], np.ndarray, str]
"""An example before encoding: its query, the documents it reads, their labels, its source."""


def source_items(
    dataset: str,
    split: str,
    words: int,
    seed: int,
    limit: int,
    data_dir: str | None = None,
    keep: Callable[[MultiHopParagraph], bool] | None = None,
    sentence_support: bool = False,
) -> list[QAItem]:
    """Items of one training source at one length (a fresh distractor mix per seed)."""
    if dataset == "squad":
        return build_squad_long(split, words, max_items=limit, seed=seed, data_dir=data_dir)
    items = build_multihop(
        dataset,
        split,
        words,
        max_items=None,
        seed=seed,
        data_dir=data_dir,
        keep=keep,
        sentence_support=sentence_support,
    )
    return items[:limit]


@dataclass
class TrainingSet:
    """Examples as tensors: documents hold vectors; examples point at a document.

    Attributes:
        vectors: Per document ``(n_i, d)`` float32 sentence vectors.
        queries: ``(m, d)`` query vectors.
        features: Per example ``(n_doc, n_features)`` float32.
        labels: Per example ``(n_doc,)`` float32 0/1.
        document_of: ``(m,)`` document index of each example.
        sources: Per example "dataset/words".
        manifest: What was built, kept, dropped (saved beside the weights).
    """

    vectors: list[torch.Tensor]
    queries: torch.Tensor
    features: list[torch.Tensor]
    labels: list[torch.Tensor]
    document_of: list[int]
    sources: list[str]
    manifest: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.document_of)

    def lengths(self) -> np.ndarray:
        return np.array([len(self.labels[i]) for i in range(len(self))])

    def save(self, directory: Path) -> None:
        """Persist as one safetensors file (ragged arrays flattened with offsets) + JSON."""
        from safetensors.torch import save_file

        directory.mkdir(parents=True, exist_ok=True)
        tensors = {
            "vectors": torch.cat(self.vectors),
            "vector_offsets": _offsets(self.vectors),
            "features": torch.cat(self.features),
            "labels": torch.cat(self.labels),
            "example_offsets": _offsets(self.labels),
            "queries": self.queries,
            "document_of": torch.tensor(self.document_of),
        }
        save_file(
            {k: v.contiguous() for k, v in tensors.items()}, str(directory / "data.safetensors")
        )
        meta = {"sources": self.sources, "manifest": self.manifest}
        (directory / "data.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, directory: Path) -> TrainingSet:
        from safetensors.torch import load_file

        tensors = load_file(str(directory / "data.safetensors"))
        meta = json.loads((directory / "data.json").read_text())
        return cls(
            vectors=_split(tensors["vectors"], tensors["vector_offsets"]),
            queries=tensors["queries"],
            features=_split(tensors["features"], tensors["example_offsets"]),
            labels=_split(tensors["labels"], tensors["example_offsets"]),
            document_of=tensors["document_of"].tolist(),
            sources=meta["sources"],
            manifest=meta["manifest"],
        )


def _offsets(parts: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([0, *np.cumsum([len(p) for p in parts]).tolist()], dtype=torch.int64)


def _split(flat: torch.Tensor, offsets: torch.Tensor) -> list[torch.Tensor]:
    bounds = offsets.tolist()
    return [flat[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def build_training_set(
    encoder: ContextualSentenceEncoder,
    split: str,
    datasets: Sequence[str],
    lengths_words: Sequence[int],
    seeds: Sequence[int],
    max_per_source: int,
    fingerprints: set[bytes] | None = None,
    threshold: float = DECONTAMINATION_THRESHOLD,
    data_dir: str | None = None,
    progress: bool = True,
    sentence_support: bool = False,
    cache: EmbeddingCache | None = None,
    instruction_copies: float = 0.0,
) -> TrainingSet:
    """Build, decontaminate, label and encode examples of ``split`` (``sentence_support``:
    MuSiQue gold at sentence level, see ``read_musique``; ``cache``: per-document sentence
    vectors kept on disk, so a rebuild with other labels or features encodes nothing;
    ``instruction_copies``: see ``with_instruction_copies``)."""
    documents: dict[str, int] = {}
    doc_list: list[Document] = []
    examples: list[ExampleRow] = []
    manifest: dict[str, Any] = {
        "split": split,
        "musique_gold": "sentence" if sentence_support else "paragraph",
        "encoder": encoder.name,  # the checkpoint records what made its input vectors
        "sources": {},
        "dropped_contaminated": 0,
    }
    combos = [(d, w, s) for d in datasets for w in lengths_words for s in seeds]
    contaminated: set[str] = set()
    keep = CleanParagraphs(fingerprints) if fingerprints is not None else None
    for dataset, words, seed in track(combos, f"building {split} examples", enabled=progress):
        items = source_items(
            dataset, split, words, seed, max_per_source, data_dir, keep, sentence_support
        )
        kept, dropped = 0, set()
        for item in items:
            (document,) = item.documents
            if document.content_hash in contaminated:
                continue
            if document.content_hash not in documents:
                if fingerprints is not None and contamination(document, fingerprints) > threshold:
                    contaminated.add(document.content_hash)
                    dropped.add(document.content_hash)
                    continue
                documents[document.content_hash] = len(doc_list)
                doc_list.append(document)
            labels = gold_unit_labels(item)[document.id].astype(np.float32)
            if labels.sum() == 0:  # gold fell outside every sentence: nothing to learn
                continue
            index = documents[document.content_hash]
            examples.append((item.query, (index,), labels, f"{dataset}/{words}"))
            kept += 1
        manifest["sources"][f"{dataset}/{words}/seed{seed}"] = {
            "kept": kept,
            "dropped": len(dropped),
        }
        manifest["dropped_contaminated"] += len(dropped)
    examples = _with_copies(examples, instruction_copies, split, manifest, doc_list)
    return _assemble(encoder, doc_list, examples, manifest, split, progress, cache)


def _with_copies(
    examples: list[ExampleRow],
    share: float,
    salt: str,
    manifest: dict[str, Any],
    doc_list: Sequence[Document],
) -> list[ExampleRow]:
    """``examples`` with their instructed copies, counted in ``manifest`` when asked for;
    a copy's topic comes from the units its labels leave 0."""
    if not share:
        return examples

    def negatives_of(example: ExampleRow) -> list[str]:
        units = [unit for i in example[1] for unit in doc_list[i].sentence_texts()]
        return [unit for unit, label in zip(units, example[2], strict=True) if not label]

    rows = with_instruction_copies(examples, share, salt, negatives_of)
    manifest["instruction_copies"] = len(rows) - len(examples)
    return rows


def _assemble(
    encoder: ContextualSentenceEncoder,
    doc_list: Sequence[Document],
    examples: Sequence[ExampleRow],
    manifest: dict[str, Any],
    split: str,
    progress: bool,
    cache: EmbeddingCache | None = None,
) -> TrainingSet:
    """Encode documents and queries once, compute each example's features: the tensors.
    An example reads the documents it names one after another, as the scanner reads a
    collection."""
    features = LexicalFeatures(encoder.encoder, max_cached=4)
    vectors = [
        torch.from_numpy(encoder.cached_vectors(document, cache))
        for document in track(doc_list, f"encoding {split} documents", enabled=progress)
    ]
    encoded = len(vectors)
    read_together: dict[tuple[int, ...], int] = {}  # documents read one after another

    def vectors_of(indices: tuple[int, ...]) -> int:
        if len(indices) == 1:
            return indices[0]
        if indices not in read_together:
            read_together[indices] = len(vectors)
            vectors.append(torch.cat([vectors[i] for i in indices]))
        return read_together[indices]

    queries = torch.from_numpy(
        encoder.encoder.encode([e[0] for e in examples], batch_size=128)
        if examples
        else np.zeros((0, encoder.dim), dtype=np.float32)
    )
    document_of = [vectors_of(indices) for _, indices, _, _ in examples]
    example_features = [
        torch.from_numpy(
            features.for_scan(
                query, [doc_list[i] for i in indices], vectors[read].numpy(), query_vector
            )
        )
        for (query, indices, _, _), read, query_vector in track(
            zip(examples, document_of, queries.numpy(), strict=True),
            f"features of {split} examples",
            total=len(examples),
            enabled=progress,
        )
    ]
    manifest.update(
        examples=len(examples),
        documents=len(doc_list),
        sentences=int(sum(len(v) for v in vectors[:encoded])),
        positive_rate=float(
            sum(e[2].sum() for e in examples) / max(sum(len(e[2]) for e in examples), 1)
        ),
    )
    return TrainingSet(
        vectors=vectors,
        queries=queries,
        features=example_features,
        labels=[torch.from_numpy(e[2]) for e in examples],
        document_of=document_of,
        sources=[e[3] for e in examples],
        manifest=manifest,
    )


_LETTER = re.compile(r"[^\W\d_]")
_FIGURE = re.compile(r"\d")


def says_something(text: str) -> bool:
    """Whether a labelled unit can be evidence: a writer labels a run of lines, and a bullet,
    a list or page number, a redaction mark or an invisible character inside that run says
    nothing (16% of the filing examples' labels were such units). A unit with a letter, or
    with two figures (a table's column header "2024 2023"), can."""
    return bool(_LETTER.search(text)) or sum(bool(_FIGURE.search(w)) for w in text.split()) >= 2


def synthetic_labels(
    example: SyntheticExample, row_context_negative: bool = False
) -> tuple[Document, np.ndarray]:
    """A synthetic example's text as a document, and 1 for each of its labelled sentences
    that ``says_something``.

    ``row_context_negative``: a labelled line that is the title, column header or group of a
    labelled table row (``tables.row_context``) is labelled 0. Evidence always carries a
    row's context with it, so such a line is what the row is read with, not evidence of its
    own; a writer who labels the run of lines down to the figure labels it too (17% of the
    committed table examples' labels). A labelled row is processed before any row below it,
    so each row's own label is the writer's when its context is cleared."""
    document = Document(example.id, example.text)
    gold = set(example.labels)
    labels = np.array(
        [
            (int(a), int(b)) in gold and says_something(example.text[a:b])
            for a, b in document.sentences
        ],
        np.float32,
    )
    if row_context_negative:
        for row, context in row_context(document).items():
            if labels[row]:
                labels[list(context)] = 0.0
    return document, labels


SyntheticDrop = Literal["without_content", "contaminated"]


def usable_synthetic(
    examples: Iterable[SyntheticExample],
    fingerprints: set[bytes] | None = None,
    threshold: float = DECONTAMINATION_THRESHOLD,
    dropped: Callable[[SyntheticExample, SyntheticDrop], None] | None = None,
    contaminated: Contaminated | None = None,
    row_context_negative: bool = False,
) -> Iterator[tuple[SyntheticExample, Document, np.ndarray]]:
    """The examples every reader may learn from, with their documents and labels
    (``synthetic_labels``): one whose labelled lines all say nothing, or whose span shares
    more than ``threshold`` of its sentences with evaluation text, is passed to ``dropped``
    instead. A span several examples share is checked once (by ``contaminated``, when the
    caller checks other spans too)."""
    contaminated = contaminated or Contaminated(fingerprints, threshold)
    for example in examples:
        document, labels = synthetic_labels(example, row_context_negative)
        reason: SyntheticDrop | None = None
        if not labels.any():
            reason = "without_content"
        elif contaminated(document):
            reason = "contaminated"
        if reason is None:
            yield example, document, labels
        elif dropped is not None:
            dropped(example, reason)


def synthetic_training_set(
    encoder: ContextualSentenceEncoder,
    examples: Sequence[SyntheticExample],
    fingerprints: set[bytes] | None = None,
    threshold: float = DECONTAMINATION_THRESHOLD,
    progress: bool = True,
    cache: EmbeddingCache | None = None,
    beside: Mapping[str, Sequence[SyntheticExample]] | None = None,
    row_context_negative: bool = False,
    instruction_copies: float = 0.0,
) -> TrainingSet:
    """``longscan synth`` examples as tensors, decontaminated like the dataset examples; a
    span that several examples share (or a file named twice) is encoded once, through
    ``cache`` when given, so later runs encode nothing. ``beside`` names, by example id,
    other examples whose spans are read with its own, in an order its id's hash picks, all
    their lines negatives (a contaminated one is left out). ``row_context_negative``: see
    ``synthetic_labels``."""
    manifest: dict[str, Any] = {
        "split": "synthetic",
        "encoder": encoder.name,
        "sources": {},
        "dropped_contaminated": 0,
        "dropped_without_content": 0,
        "dropped_ids": [],
    }
    documents: dict[str, int] = {}
    doc_list: list[Document] = []
    rows: list[ExampleRow] = []

    def counts(example: SyntheticExample) -> dict[str, int]:
        return manifest["sources"].setdefault(
            f"synthetic/{example.strategy}", {"kept": 0, "dropped": 0}
        )

    def dropped(example: SyntheticExample, reason: SyntheticDrop) -> None:
        counts(example)["dropped"] += 1
        manifest[f"dropped_{reason}"] += 1
        manifest["dropped_ids"].append(example.id)

    def index_of(document: Document) -> int:
        if document.content_hash not in documents:
            documents[document.content_hash] = len(doc_list)
            doc_list.append(document)
        return documents[document.content_hash]

    contaminated = Contaminated(fingerprints, threshold)  # an other span may be an example's
    usable = usable_synthetic(
        examples, fingerprints, threshold, dropped, contaminated, row_context_negative
    )
    for example, document, labels in usable:
        parts = [(document, labels)]
        for other in (beside or {}).get(example.id, ()):
            other_document = Document(other.id, other.text)
            if not contaminated(other_document):
                negatives = np.zeros(len(other_document.sentences), np.float32)
                parts.append((other_document, negatives))
        first = hashlib.sha256(example.id.encode()).digest()[0] % len(parts)
        parts = parts[first:] + parts[:first]
        indices = tuple(index_of(part) for part, _ in parts)
        all_labels = np.concatenate([part_labels for _, part_labels in parts])
        rows.append((example.question, indices, all_labels, f"synthetic/{example.strategy}"))
        counts(example)["kept"] += 1
    if beside:
        manifest["read_beside_others"] = sum(len(indices) > 1 for _, indices, _, _ in rows)
    rows = _with_copies(rows, instruction_copies, "synthetic", manifest, doc_list)
    return _assemble(encoder, doc_list, rows, manifest, "synthetic", progress, cache)


def concatenate(first: TrainingSet, second: TrainingSet) -> TrainingSet:
    """Both sets' examples in one set (manifests kept side by side)."""
    offset = len(first.vectors)
    return TrainingSet(
        vectors=[*first.vectors, *second.vectors],
        queries=torch.cat([first.queries, second.queries]),
        features=[*first.features, *second.features],
        labels=[*first.labels, *second.labels],
        document_of=[*first.document_of, *(i + offset for i in second.document_of)],
        sources=[*first.sources, *second.sources],
        manifest={**first.manifest, "synthetic": second.manifest},
    )


def batches(
    data: TrainingSet, batch_size: int, generator: torch.Generator, shuffle: bool = True
) -> Iterable[tuple[torch.Tensor, ...]]:
    """Padded batches of similar length: ``(sentences, query, features, labels, mask)``."""
    order = np.argsort(data.lengths(), kind="stable")
    groups = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if shuffle:
        permutation = torch.randperm(len(groups), generator=generator).tolist()
        groups = [groups[i] for i in permutation]
    for group in groups:
        yield collate(data, group.tolist())


def collate(data: TrainingSet, indices: Sequence[int]) -> tuple[torch.Tensor, ...]:
    longest = max(len(data.labels[i]) for i in indices)
    dim = data.queries.size(1)
    n_features = data.features[indices[0]].size(1)
    sentences = torch.zeros(len(indices), longest, dim)
    features = torch.zeros(len(indices), longest, n_features)
    labels = torch.zeros(len(indices), longest)
    mask = torch.zeros(len(indices), longest, dtype=torch.bool)
    for row, i in enumerate(indices):
        n = len(data.labels[i])
        sentences[row, :n] = data.vectors[data.document_of[i]]
        features[row, :n] = data.features[i]
        labels[row, :n] = data.labels[i]
        mask[row, :n] = True
    return sentences, data.queries[list(indices)], features, labels, mask
