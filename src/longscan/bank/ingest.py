"""Streaming ingestion into a memory bank: read on the driver, encode on Ray workers, index
on the driver.

1. **read** (driver): documents come one at a time from an iterator (``iter_paths``), are
   hashed and looked up; unchanged, indexed documents are skipped and the rest grouped in
   batches of at most ``batch_documents`` documents or ``batch_chars`` characters.
2. **encode** (Ray tasks, retried when their worker dies): cl100k token counts, the
   opening-window MiniLM vector of each document (the dense index), and optionally the
   scanner's contextual sentence vectors of the part two-stage search reads.
3. **index** (driver): SQLite rows, tantivy, usearch and the sentence-vector cache. None of
   these takes writers from several processes, so the driver is the only writer, and it
   commits batch by batch. It holds the bank's writer lock from start to end (the dense
   index grows in memory between checkpoints), so a second ``ingest`` into the same bank
   waits for this one.

Only ``max_in_flight`` batches exist at a time, so memory does not grow with the corpus.
A batch is committed whole or not at all, and committed documents are skipped by their
``(key, content hash)``: an interrupted ingestion is resumed by running it again, and
nothing is lost or added twice. Rows a plain ``MemoryBank.add`` left unindexed are indexed
first.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

import numpy as np

from longscan.bank.indexes import embed_openings
from longscan.bank.records import groups
from longscan.bank.search import scanned_part
from longscan.bank.store import MemoryBank
from longscan.devices import peak_rss_bytes
from longscan.documents import Document, places_to_json
from longscan.encoders.external import PACKAGED
from longscan.parallel import bounded_map, workers
from longscan.progress import Bar

Item = TypeVar("Item")
BATCH_DOCUMENTS = 64
BATCH_CHARS = 4_000_000  # about 1M tokens: a few MB in flight per batch
CHECKPOINT_SECONDS = 30.0  # a killed driver redoes at most this much work
STAGES = ("read", "load", "tokenize", "encode", "sentences", "index")


@dataclass
class Batch:
    """Documents to encode: new or changed ones (``keys``), or rows never indexed (``ids``)."""

    texts: list[str]
    keys: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    places: list[str] = field(default_factory=list)  # JSON (``places_to_json``) per key
    origins: list[str] = field(default_factory=list)  # the file of each key ("" unknown)
    outcomes: Counter[str] = field(default_factory=Counter)  # ``Change.outcome`` per key
    ids: list[int] = field(default_factory=list)


@dataclass
class Encoded:
    """What a worker returns for one batch."""

    tokens: list[int]
    openings: np.ndarray  # (documents, dim) float32 unit vectors
    sentence_vectors: list[tuple[str, np.ndarray]]  # (cache key, (sentences, dim))
    seconds: dict[str, float]
    peak_rss_bytes: int


@dataclass
class IngestReport:
    """Counts, per-stage seconds (worker stages summed over workers) and peak memory."""

    added: int = 0
    updated: int = 0
    replaced: int = 0  # updated from another file than the stored document's
    unchanged: int = 0
    indexed: int = 0
    tokens: int = 0
    batches: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    wall_seconds: float = 0.0
    peak_rss_driver_bytes: int = 0
    peak_rss_worker_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Everything, plus tokens per second of each stage (per worker for worker stages)."""
        return {
            "added": self.added,
            "updated": self.updated,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "indexed": self.indexed,
            "tokens": self.tokens,
            "batches": self.batches,
            "wall_seconds": round(self.wall_seconds, 2),
            "seconds": {stage: round(value, 2) for stage, value in self.seconds.items()},
            "tokens_per_second": {
                stage: round(self.tokens / value)
                for stage, value in self.seconds.items()
                if value and stage != "load"
            },
            "peak_rss_driver_mb": round(self.peak_rss_driver_bytes / 2**20),
            "peak_rss_worker_mb": round(self.peak_rss_worker_bytes / 2**20),
        }


def encode_batch(texts: list[str], scanned_tokens: int | None, encoder: str = PACKAGED) -> Encoded:
    """The worker's stage: token counts, opening vectors by the bank's ``encoder`` and
    (optionally) sentence vectors of the first ``scanned_tokens`` tokens of each document."""
    from longscan.answering.tokens import count_each
    from longscan.encoders.external import load_text_encoder

    seconds = {}
    started = time.perf_counter()
    load_text_encoder(encoder)  # once per worker: its time is kept apart from the per-token stages
    if scanned_tokens is not None:
        _contextual_encoder()
    seconds["load"] = time.perf_counter() - started
    started = time.perf_counter()
    tokens = count_each(texts)
    seconds["tokenize"] = time.perf_counter() - started
    started = time.perf_counter()
    openings = embed_openings(texts, encoder)
    seconds["encode"] = time.perf_counter() - started
    sentence_vectors = []
    if scanned_tokens is not None:
        started = time.perf_counter()
        encoder = _contextual_encoder()
        for text in texts:
            part = scanned_part(Document("-", text), scanned_tokens)
            sentence_vectors.append((encoder.cache_key(part), encoder.encode_document(part)))
        seconds["sentences"] = time.perf_counter() - started
    return Encoded(tokens, openings, sentence_vectors, seconds, peak_rss_bytes())


@cache
def _contextual_encoder() -> Any:
    """The shipped scanner's sentence encoder, loaded once per worker process."""
    from longscan.scanning.scanner import Scanner

    return Scanner.from_pretrained().encoder


def ingest(
    bank: MemoryBank,
    documents: Iterable[Document],
    source: str = "",
    domain: str = "",
    scanned_tokens: int | None = None,
    batch_documents: int = BATCH_DOCUMENTS,
    batch_chars: int = BATCH_CHARS,
    max_in_flight: int | None = None,
    checkpoint_seconds: float = CHECKPOINT_SECONDS,
    encode: Callable[[list[str], int | None, str], Encoded] = encode_batch,
    on_batch: Callable[[IngestReport], None] | None = None,
    progress: bool = True,
    total: int | None = None,
) -> IngestReport:
    """Add or update ``documents`` (keyed by ``Document.id``) and index them.

    Batches are encoded in this process, or on Ray when a session is open
    (``longscan.parallel.execution``).

    Args:
        scanned_tokens: Also cache the scanner's sentence vectors of this many leading tokens
            of each document (two-stage search's ``max_tokens_per_document``); ``None``: no.
        max_in_flight: Batches submitted at once (default: twice the workers).
        checkpoint_seconds: How often the dense index is saved and committed rows flagged
            indexed (and when ingestion stops, however it stops short of a kill).
        encode: The worker's function (``encode_batch``; tests wrap it to kill workers).
        on_batch: Called after each committed batch with the report so far.
        total: How many ``documents`` come (``len`` of ``iter_paths``), for the progress
            bar, which counts them with the rows left unindexed before.
    """
    if batch_documents < 1 or batch_chars < 1:
        raise ValueError("batch_documents and batch_chars must be at least 1")
    report = IngestReport()
    started = time.perf_counter()
    cache_ = bank.sentence_cache() if scanned_tokens is not None else None
    unmarked: list[int] = []  # indexed, not yet flagged: see ``MemoryBank.mark_indexed``
    marked_at = time.perf_counter()
    with (
        bank.writing(),
        Bar(
            "ingesting documents",
            total=None if total is None else total + bank.unindexed(),
            enabled=progress,
        ) as bar,
        _finally_mark(bank, unmarked, report),
    ):
        batches = itertools.chain(
            _never_indexed(bank, batch_documents),
            _changed(bank, documents, batch_documents, batch_chars, report, bar),
        )
        calls = ((batch, (batch.texts, scanned_tokens, bank.encoder)) for batch in batches)
        for batch, encoded in bounded_map(encode, calls, max_in_flight or 2 * workers()):
            committing = time.perf_counter()
            unmarked += _commit(bank, batch, encoded, source, domain, cache_)
            if committing - marked_at >= checkpoint_seconds:
                bank.mark_indexed(unmarked)
                unmarked.clear()
                marked_at = time.perf_counter()
            report.seconds["index"] += time.perf_counter() - committing
            for stage, value in encoded.seconds.items():
                report.seconds[stage] += value
            report.peak_rss_worker_bytes = max(report.peak_rss_worker_bytes, encoded.peak_rss_bytes)
            report.added += batch.outcomes["added"]
            report.updated += batch.outcomes["updated"]
            report.replaced += batch.outcomes["replaced"]
            report.indexed += len(batch.texts)
            report.tokens += sum(encoded.tokens)
            report.batches += 1
            bar.advance(len(batch.texts))
            bar.update(note=f"{report.tokens:,} tokens")
            if on_batch is not None:
                on_batch(report)
    bank.reload()
    report.wall_seconds = time.perf_counter() - started
    report.peak_rss_driver_bytes = peak_rss_bytes()
    return report


def _commit(
    bank: MemoryBank,
    batch: Batch,
    encoded: Encoded,
    source: str,
    domain: str,
    cache_: Any,
) -> list[int]:
    """Rows, then the sentence cache (content-keyed, harmless if left over), then the indexes;
    returns the ids, flagged indexed later: a crash before that leaves them to be redone."""
    ids = batch.ids or bank.upsert(
        [
            (key, source, domain, tokens, digest, text, places, origin)
            for key, tokens, digest, text, places, origin in zip(
                batch.keys,
                encoded.tokens,
                batch.digests,
                batch.texts,
                batch.places,
                batch.origins,
                strict=True,
            )
        ]
    )
    if cache_ is not None:
        for key, vectors in encoded.sentence_vectors:
            cache_.put(key, vectors)
    bank.index_batch(list(zip(ids, batch.texts, strict=True)), encoded.openings, mark=False)
    return ids


@contextlib.contextmanager
def _finally_mark(bank: MemoryBank, unmarked: list[int], report: IngestReport) -> Iterator[None]:
    """Flag what is indexed when the loop ends, also on an error or an interrupt."""
    try:
        yield
    finally:
        started = time.perf_counter()
        bank.mark_indexed(unmarked)
        report.seconds["index"] += time.perf_counter() - started


def _never_indexed(bank: MemoryBank, size: int) -> Iterator[Batch]:
    for rows in bank.pending(size):
        yield Batch(texts=[text for _, text in rows], ids=[doc_id for doc_id, _ in rows])


def _changed(
    bank: MemoryBank,
    documents: Iterable[Document],
    batch_documents: int,
    batch_chars: int,
    report: IngestReport,
    bar: Bar,
) -> Iterator[Batch]:
    """Batches of the documents that are new or changed (the unchanged advance ``bar``).
    One stored unchanged but never indexed is skipped: ``_never_indexed`` runs first and
    indexes it."""
    for group in groups(_timed(documents, report.seconds), batch_documents, batch_chars):
        started = time.perf_counter()
        changes, unchanged = bank.triage(group)  # unchanged: indexed, or ``_never_indexed``'s
        report.unchanged += unchanged
        bar.advance(unchanged)
        batch = Batch(texts=[])
        for change in changes:
            batch.texts.append(change.document.text)
            batch.keys.append(change.document.id)
            batch.digests.append(change.digest)
            batch.places.append(places_to_json(change.document.places))
            batch.origins.append(change.origin)
            batch.outcomes[change.outcome] += 1
        report.seconds["read"] += time.perf_counter() - started
        if batch.texts:
            yield batch


def _timed(items: Iterable[Item], seconds: dict[str, float]) -> Iterator[Item]:
    """``items``, adding the time spent producing each (reading files) to ``seconds["read"]``."""
    iterator = iter(items)
    while True:
        started = time.perf_counter()
        try:
            item = next(iterator)
        except StopIteration:
            return
        finally:
            seconds["read"] += time.perf_counter() - started
        yield item
