"""Fuzz reading, segmenting, every retriever, and the service's upload and ask.

    OMP_NUM_THREADS=1 python benchmarks/fuzz.py [--inputs 100000] [--seed 0] [--out runs]

Generates ``--inputs`` hostile inputs from one seed (the same seed gives the same inputs):
bytes in mixed encodings with and without byte-order marks, NULs early and late, lone
surrogates, astral, bidi and control characters, 1 MB runs without punctuation, and empty,
one-character and over-long queries. Each input goes through one stage, and every stage
either answers exactly or refuses with a clear error:

- ``read_file``: bytes written to a file. A Document's text must be the file's decoding
  in the reader's documented convention, worked out here independently: UTF-8 with U+FFFD
  for bad bytes, or the UTF-16/32 a byte-order mark names, the mark itself left out (and
  named by ``metadata["encoding"]``); no NUL may survive. The clear error is
  ``DocumentError``.
- ``segment``: a str (lone surrogates included) as ``Document(...).sentences``,
  ``.paragraphs`` and ``.chunks()`` under a random segmenter and ``max_sentence_chars``:
  spans exact, stripped, ordered, non-overlapping, in bounds, capped, sentences inside
  paragraphs, and no character but white space left out.
- one stage per retriever of the registry (``longscan.retrievers.available()``): a query
  over 1-3 documents; evidence must satisfy ``doc.text[start:end] == text`` with finite
  scores, best first, at most ``top_k`` of them; then ``select`` (widened to neighbours or
  the paragraph, budgeted) must keep them exact and never overlapping. Model-backed
  retrievers (MiniLM on the CPU)
  get 1,000 small inputs each, the lexical ones thousands, with 1 MB documents.
- ``service upload`` and ``service ask``: multipart uploads and pasted JSON text through
  ``create_app`` (FastAPI's TestClient), then questions over what was stored; the stored
  text must be the upload's decoding and every evidence's offsets must index it. 4xx is a
  clear refusal, 5xx (or an exception in the client) a crash, 504 a hang.
- ``service attacks``: ``longscan.service.server.serve`` in a process of its own on loopback
  (header and body timeouts of 5 s), attacked in turn: a warm-up question, a .docx zip bomb
  (``word/document.xml`` inflating to 1.5 GB from about 1.5 MB), a page of 100,000 nested
  ``<div>`` (with a question about another document asked while it is read, which must
  answer within ``--limit-s``), 400 connections that never finish their request head, and
  50 uploads whose body stalls; each slow connection must be closed by the server. Memory
  is the server's: its RSS after the warm-up, at the end, and its peak (``VmHWM``), whose
  growth over ``--server-memory-mb`` counts as unbounded; a server over ``--server-kill-mb``
  is killed (a crash) rather than left to take the machine.
- ``service health``: ``/api/health`` of that server, asked every half second throughout the
  attacks: each probe must answer 200 within 10 s (slower is a hang, anything else a crash).

A crash is any exception but the clear ones (``DocumentError``, or a plain ``ValueError``
raised by longscan's own code, never by a library inside it): a ``UnicodeError``,
``IndexError``, ``TypeError``... A hang is an input that ran over its time limit
(``--limit-s``, three times that for the retrievers and the service, plus ``--per-mb-s``
per MB of input: pysbd, the slowest segmenter, reads about 50 KB/s of one-word lines; an
alarm at three times the limit aborts the input).
Memory: resident set size after the first tenth of a stage (the warm-up) against its end,
after garbage collection; growth over ``--memory-mb`` is reported as unbounded.

Prints a Markdown table and writes everything, with the first failing inputs of each kind,
to ``<out>/fuzz-<seed>-<inputs>.json``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import json
import logging
import os
import platform
import random
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from longscan.devices import peak_rss_bytes
from longscan.progress import Bar

MB = 1 << 20
SURROGATE = re.compile("[\ud800-\udfff]")
CHEAP_RETRIEVERS = ("bm25", "random")
STAGE_SHARES = {"read_file": 0.36, "segment": 0.36}  # of --inputs; the rest below
LEXICAL_SHARE = 0.06  # each lexical retriever (bm25-sentence, bm25-chunk, random)
MODEL_SHARE = 0.01  # each model-backed retriever (dense, hybrid, scanner...)
SERVICE_SHARE = 0.02  # uploads, and as many questions
EXAMPLES_KEPT = 5

# ------------------------------------------------------------------------ generation

WORDS = [
    "the",
    "key",
    "is",
    "under",
    "blue",
    "flowerpot",
    "by",
    "back",
    "door",
    "Mara",
    "Tom",
    "Lisbon",
    "ferry",
    "clock",
    "noon",
    "Dr.",
    "Mr.",
    "St.",
    "e.g.",
    "U.S.A.",
    "3.14",
    "a.b.c",
    "naïve",
    "café",
    "Straße",
    "東京",
    "北京市",
    "Москва",
    "القاهرة",
    "שלום",
    "नमस्ते",
    "🎉",
    "👩\u200d👩\u200d👧",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "𠀀𠀁",
    "﷽",
]
PUNCTUATION = [". ", "! ", "? ", "... ", "; ", ", ", "\u3002", "\u061f ", "\u0964 ", ".", " "]
HOSTILE = [
    "\ufeff",  # BOM / zero-width no-break space
    "\x00",
    "\ud800",  # lone surrogates
    "\udfff",
    "\udbff\udc00",  # a surrogate *pair* in a str: two code points, not one character
    "\u202e",  # RIGHT-TO-LEFT OVERRIDE
    "\u202d",
    "\u2066",
    "\u2067",
    "\u2069",
    "\u200f",
    "\u061c",
    "\u2028",
    "\u2029",
    "\u200b",
    "\u200d",
    "\u00ad",
    "\u0301",  # combining mark with nothing to combine with
    "\x1b]0;title\x07",
    "\x1b[2J",
    "\x7f",
    "\x85",
    "\xa0",
    "\u3000",
    "\ufffd",
    "\uffff",
    "\U0010ffff",
    "\U000e0001",
    "\r",
    "\r\n",
    "\n",
    "\n\n",
    "\n \t\n",
    "\t",
    "\x0b",
    "\x0c",
    "\x1c",
]
CODE_POINT_RANGES = [
    (0x00, 0x7F),
    (0x80, 0x2FF),
    (0x300, 0x36F),
    (0x590, 0x6FF),
    (0x900, 0x97F),
    (0x2000, 0x206F),
    (0x3000, 0x9FFF),
    (0xD800, 0xDFFF),
    (0xE000, 0xFFFF),
    (0x10000, 0x10FFFF),
]
ENCODINGS = [
    "utf-8",
    "utf-8",
    "utf-8",
    "utf-8-sig",
    "utf-16",
    "utf-16-le",
    "utf-16-be",
    "utf-32",
    "latin-1",
    "cp1252",
    "shift_jis",
    "gb18030",
    "koi8-r",
]


def random_piece(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(WORDS) + rng.choice([" ", " ", " ", ""])
    if roll < 0.6:
        return rng.choice(PUNCTUATION)
    if roll < 0.85:
        return rng.choice(HOSTILE)
    low, high = rng.choice(CODE_POINT_RANGES)
    return "".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 6)))


def random_text(rng: random.Random, max_pieces: int = 80, surrogates: bool = True) -> str:
    """Pieces of words, punctuation, hostile characters and random code points; without
    ``surrogates``, lone surrogates become U+FFFD (most texts would hold one otherwise)."""
    text = "".join(random_piece(rng) for _ in range(rng.randint(0, max_pieces)))
    return text if surrogates else SURROGATE.sub("\ufffd", text)


def megabyte_run(rng: random.Random) -> str:
    """About 1 MB (code points) without sentence punctuation, in one of several shapes."""
    shape = rng.choice(["words", "solid", "astral", "cjk", "lines", "spaces", "bidi", "zwsp"])
    unit = {
        "words": "lorem ",
        "solid": "x",
        "astral": "\U0001f600",
        "cjk": "東京",
        "lines": "word\n",
        "spaces": " " * 63 + "w",
        "bidi": "\u202eabc\u202c ",
        "zwsp": "a\u200b",
    }[shape]
    text = unit * (MB // len(unit))
    if rng.random() < 0.5:  # a hostile character somewhere inside
        where = rng.randrange(len(text))
        text = text[:where] + rng.choice(HOSTILE) + text[where:]
    return text


def random_document_text(rng: random.Random, huge_rate: float, surrogates: bool = True) -> str:
    if rng.random() < huge_rate:
        return megabyte_run(rng)
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(["", " ", "\n\n", "\ufeff", "\x00", "\ud800", "\u2029"])
    if roll < 0.15:  # medium: several paragraphs
        paragraphs = rng.randint(2, 12)
        return "\n\n".join(random_text(rng, 120, surrogates) for _ in range(paragraphs))
    return random_text(rng, surrogates=surrogates)


def random_bytes(rng: random.Random, huge_rate: float) -> bytes:
    """A file's content: text in an encoding, then maybe damaged."""
    text = random_document_text(rng, huge_rate)
    encoding = rng.choice(ENCODINGS)
    errors = "surrogatepass" if encoding.startswith("utf-8") else "replace"
    try:
        raw = text.encode(encoding, errors)
    except UnicodeEncodeError:  # utf-16/32 refuse lone surrogates even with "replace"
        raw = text.encode(encoding, "ignore")
    roll = rng.random()
    if roll < 0.08 and raw:  # a NUL early, or past the first 8 KiB
        where = rng.randrange(len(raw)) if rng.random() < 0.5 else len(raw)
        raw = raw[:where] + b"\x00" + raw[where:]
        if rng.random() < 0.5:
            raw = raw + b"\n" * 9000 + b"late NUL \x00 here"
    elif roll < 0.16 and raw:  # truncated in the middle of a character
        raw = raw[: rng.randrange(len(raw))]
    elif roll < 0.22:  # random bytes appended
        raw = raw + rng.randbytes(rng.randint(1, 64))
    elif roll < 0.25:  # a BOM that contradicts the encoding
        raw = rng.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"]) + raw
    return raw


def random_query(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.06:
        return rng.choice(["", " ", "\n\t", "\u3000", "\ufeff", "\x00", "\u200b"])
    if roll < 0.1:
        return rng.choice(["\ud800", "where is the \udfff key", "key\udbff"])
    if roll < 0.14:  # at, and just over, the 8,000-character limit; and huge
        return "q" * rng.choice([7_999, 8_000, 8_001, 100_000, MB])
    if roll < 0.3:
        return rng.choice(WORDS)
    return random_text(rng, 20, surrogates=False)


def random_top_k(rng: random.Random) -> int | None:
    return rng.choice([None, None, 1, 3, 10, 200, 0, -1])


# ----------------------------------------------------------------------- bookkeeping


class Hang(Exception):  # noqa: N818 - named for what it reports
    """Raised by the alarm inside an input that ran far over its limit."""


@contextlib.contextmanager
def alarm(seconds: float) -> Iterator[None]:
    def ring(_signum: int, _frame: object) -> None:
        raise Hang(f"over {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def rss_mb() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / MB


def short(value: Any, limit: int = 300) -> str:
    text = ascii(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} chars in ascii)"


@dataclass
class Stage:
    name: str
    planned: int
    inputs: int = 0
    ok: int = 0
    clear_errors: int = 0
    crashes: int = 0
    inexact: int = 0
    wrong: int = 0  # accepted what must be refused (a NUL kept in the text)
    hangs: int = 0
    seconds: float = 0.0
    slowest_s: float = 0.0
    rss_warm_mb: float = 0.0
    rss_end_mb: float = 0.0
    rss_peak_mb: float = 0.0  # a server's high-water mark; 0 where none is measured
    memory_limit_mb: float = 0.0  # growth that counts as unbounded; 0: --memory-mb
    keeps_ok: bool = False  # keep what every input did, not only what went wrong
    examples: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    clear_messages: dict[str, int] = field(default_factory=dict)

    def keep(self, kind: str, case: str, detail: str) -> None:
        found = self.examples.setdefault(kind, [])
        if len(found) < (50 if kind == "clear" else EXAMPLES_KEPT):
            found.append({"input": case, "detail": detail[:2000]})

    @property
    def growth_mb(self) -> float:
        return max(self.rss_end_mb, self.rss_peak_mb) - self.rss_warm_mb

    def unbounded(self, memory_mb: float) -> bool:
        return self.growth_mb > (self.memory_limit_mb or memory_mb)

    def count(self, outcome: Outcome, description: str) -> None:
        """Count one input's outcome (the first examples of each kind kept)."""
        self.inputs += 1
        if outcome.kind == "ok":
            self.ok += 1
            if self.keeps_ok:
                self.keep("ok", description, outcome.detail)
        elif outcome.kind == "clear":
            self.clear_errors += 1
            first = outcome.detail.split(":")[-1].strip()[:60] or outcome.detail[:60]
            self.clear_messages[first] = self.clear_messages.get(first, 0) + 1
            if self.clear_messages[first] == 1 and len(self.clear_messages) <= 50:
                self.keep("clear", description, outcome.detail)
        else:
            attribute = {"crash": "crashes", "inexact": "inexact", "hang": "hangs"}
            name = attribute.get(outcome.kind, outcome.kind)
            setattr(self, name, getattr(self, name) + 1)
            self.keep(outcome.kind, description, outcome.detail)


class Outcome:
    """What one input did: exactly one of ok, clear, crash, inexact, wrong, hang."""

    def __init__(self, kind: str, detail: str = "") -> None:
        self.kind, self.detail = kind, detail


def is_clear(error: BaseException) -> bool:
    """A DocumentError or a plain ValueError raised by longscan's own code; the same types
    raised inside a library (pysbd's ``int()`` of a list number) are crashes."""
    import longscan
    from longscan.documents import DocumentError

    if not (isinstance(error, DocumentError) or type(error) is ValueError):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    package = Path(longscan.__file__).resolve().parent
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(package)


def run_stage(
    stage: Stage,
    cases: Callable[[], Iterator[tuple[str, float, Callable[[], Outcome]]]],
    limit_s: float,
    per_mb_s: float,
    rss: Callable[[], float] = rss_mb,
) -> None:
    """Run each ``(description, megabytes, job)`` and count what happened; ``rss`` measures
    the memory that matters (this process's, or a server's)."""
    warm_at = max(1, stage.planned // 10)
    started = time.perf_counter()
    with Bar(stage.name, total=stage.planned) as bar:
        for description, megabytes, job in cases():
            limit = limit_s + per_mb_s * megabytes
            began = time.perf_counter()
            try:
                with alarm(3 * limit):
                    outcome = job()
            except Hang as error:
                outcome = Outcome("hang", str(error))
            except Exception as error:  # noqa: BLE001 - classifying errors is the point
                if is_clear(error):
                    outcome = Outcome("clear", str(error))
                else:
                    outcome = Outcome("crash", "".join(traceback.format_exception(error)[-3:]))
            elapsed = time.perf_counter() - began
            stage.slowest_s = max(stage.slowest_s, elapsed)
            if elapsed > limit and outcome.kind != "hang":
                outcome = Outcome("hang", f"{elapsed:.1f} s over the {limit:.0f} s limit")
            stage.count(outcome, description)
            if stage.inputs == warm_at:
                stage.rss_warm_mb = rss()
            bar.advance()
    stage.seconds = time.perf_counter() - started
    stage.rss_end_mb = rss()
    if stage.inputs < warm_at:
        stage.rss_warm_mb = stage.rss_end_mb


# ----------------------------------------------------------------------------- checks


# Byte-order marks, longest first, and the codec that reads past them (the reader's
# documented convention: the mark belongs to the encoding, offset 0 is the character after it).
BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def file_decoding(raw: bytes) -> tuple[str, str]:
    """``(text, codec)`` a file's bytes stand for, worked out here independently of the
    reader: UTF-8 (bad bytes as U+FFFD), or the UTF-16/32 its byte-order mark names."""
    codec = next((name for bom, name in BOMS if raw.startswith(bom)), "utf-8")
    return raw.decode(codec, "replace"), codec


def check_document_text(text: str, raw: bytes, metadata: dict[str, Any]) -> Outcome:
    if "\x00" in text:
        return Outcome("wrong", f"a NUL at {text.index(chr(0))} was kept in the text")
    reference, codec = file_decoding(raw)
    if text == reference and metadata.get("encoding", codec) == codec:
        return Outcome("ok")
    where = next(
        (i for i, (a, b) in enumerate(zip(text, reference, strict=False)) if a != b),
        min(len(text), len(reference)),
    )
    return Outcome(
        "inexact",
        f"text ({len(text):,} chars, {metadata.get('encoding')}) differs from the file's "
        f"{codec} decoding ({len(reference):,}) at {where}: "
        f"{short(text[where : where + 8])} vs {short(reference[where : where + 8])}",
    )


def check_spans(text: str, spans: np.ndarray, what: str, cap: int | None) -> str | None:
    previous = 0
    for start, end in spans.tolist():
        if not previous <= start < end <= len(text):
            return f"{what} [{start}, {end}) after {previous} in {len(text)} chars"
        if text[start].isspace() or text[end - 1].isspace():
            return f"{what} [{start}, {end}) is not stripped"
        if cap is not None and end - start > cap:
            return f"{what} [{start}, {end}) is over {cap} chars"
        previous = end
    return None


def check_segmentation(document: Any) -> Outcome:
    text = document.text
    sentences, paragraphs = document.sentences, document.paragraphs
    owner = document.sentence_paragraph
    problem = check_spans(text, sentences, "sentence", document.max_sentence_chars)
    problem = problem or check_spans(text, paragraphs, "paragraph", None)
    if problem is None and len(owner) != len(sentences):
        problem = f"{len(owner)} paragraph indexes for {len(sentences)} sentences"
    if problem is None and len(sentences):
        bounds = paragraphs[owner]
        if not ((bounds[:, 0] <= sentences[:, 0]) & (sentences[:, 1] <= bounds[:, 1])).all():
            problem = "a sentence crosses its paragraph"
    if problem is None:
        covered = np.zeros(len(text) + 1, dtype=np.int64)
        np.add.at(covered, sentences[:, 0], 1)
        np.add.at(covered, sentences[:, 1], -1)
        inside = np.cumsum(covered)[:-1] > 0
        left_out = np.flatnonzero(~inside)
        # str.isspace per character only where needed: runs of a 1 MB text are mostly in.
        lost = next((int(i) for i in left_out.tolist() if not text[i].isspace()), None)
        if lost is not None:
            problem = f"character {lost} ({short(text[lost])}) is in no sentence"
    if problem is None:
        words = document.chunks(words_per_chunk=document.metadata["words_per_chunk"])
        problem = check_spans(text, words, "chunk", None)
    return Outcome("inexact", problem) if problem else Outcome("ok")


def check_evidence(evidence: Any, documents: list[Any], top_k: int | None) -> Outcome:
    from longscan.documents import Evidence

    if not isinstance(evidence, list):
        return Outcome("wrong", f"retrieve returned {type(evidence).__name__}")
    texts = {document.id: document.text for document in documents}
    previous = float("inf")
    for item in evidence:
        if not isinstance(item, Evidence) or item.doc_id not in texts:
            return Outcome("wrong", f"not evidence of these documents: {short(item)}")
        text = texts[item.doc_id]
        if not 0 <= item.start < item.end <= len(text) or text[item.start : item.end] != item.text:
            return Outcome("inexact", f"[{item.start}, {item.end}) != {short(item.text, 80)}")
        if not np.isfinite(item.score) or item.score > previous:
            return Outcome("wrong", f"score {item.score} after {previous}")
        previous = item.score
    if top_k is not None and len(evidence) > top_k:
        return Outcome("wrong", f"{len(evidence)} items for top_k={top_k}")
    return Outcome("ok")


def check_selection(chosen: list[Any], documents: list[Any]) -> Outcome:
    """Selected spans are exact and, within a document, never overlap (they are merged)."""
    texts = {document.id: document.text for document in documents}
    spans: dict[str, list[tuple[int, int]]] = {}
    for item in chosen:
        text = texts[item.doc_id]
        if not 0 <= item.start < item.end <= len(text) or text[item.start : item.end] != item.text:
            return Outcome("inexact", f"selected [{item.start}, {item.end}) {short(item.text, 80)}")
        spans.setdefault(item.doc_id, []).append((item.start, item.end))
    for found in spans.values():
        found.sort()
        if any(end > start for (_, end), (start, _) in zip(found, found[1:], strict=False)):
            return Outcome("wrong", f"selected spans overlap: {found[:6]}")
    return Outcome("ok")


# ----------------------------------------------------------------------------- stages


def read_cases(
    rng: random.Random, count: int, directory: Path, huge_rate: float
) -> Callable[[], Iterator[tuple[str, float, Callable[[], Outcome]]]]:
    from longscan.readers.files import read_file

    def cases() -> Iterator[tuple[str, float, Callable[[], Outcome]]]:
        path = directory / "input.txt"
        for _ in range(count):
            raw = random_bytes(rng, huge_rate)

            def job(raw: bytes = raw) -> Outcome:
                path.write_bytes(raw)
                document = read_file(path)
                return check_document_text(document.text, raw, document.metadata)

            yield short(raw), len(raw) / MB, job

    return cases


def segment_cases(
    rng: random.Random, count: int, huge_rate: float
) -> Callable[[], Iterator[tuple[str, float, Callable[[], Outcome]]]]:
    from longscan.documents import Document
    from longscan.segment import SEGMENTERS

    def cases() -> Iterator[tuple[str, float, Callable[[], Outcome]]]:
        for _ in range(count):
            text = random_document_text(rng, huge_rate)
            segmenter = rng.choice(SEGMENTERS)
            max_chars = rng.choice([2, 3, 17, 200, 1_000, 1_000, 1_000])
            words = rng.choice([1, 7, 300])

            def job(text: str = text, segmenter: str = segmenter, max_chars: int = max_chars,
                    words: int = words) -> Outcome:  # fmt: skip
                document = Document("fuzz", text, {"words_per_chunk": words}, segmenter, max_chars)
                return check_segmentation(document)

            yield f"{segmenter}, max {max_chars}: {short(text)}", len(text) / MB, job

    return cases


def retriever_cases(
    rng: random.Random, count: int, retriever: Any, huge_rate: float, small: bool
) -> Callable[[], Iterator[tuple[str, float, Callable[[], Outcome]]]]:
    """A query over 1-3 documents, then ``select`` (widened, budgeted) over its evidence."""
    from longscan.documents import Document
    from longscan.selection import select

    def cases() -> Iterator[tuple[str, float, Callable[[], Outcome]]]:
        for _ in range(count):
            texts = []
            for _ in range(rng.choice([1, 1, 2, 3])):
                surrogates = rng.random() < 0.05  # else most documents would be refused
                texts.append(
                    random_text(rng, 30, surrogates)
                    if small
                    else random_document_text(rng, huge_rate, surrogates)
                )
            documents = [Document(f"doc{i}", text) for i, text in enumerate(texts)]
            if rng.random() < 0.02 and len(documents) > 1:  # duplicate ids
                documents[1] = Document("doc0", texts[1])
            if rng.random() < 0.02:
                documents = []
            query, top_k = random_query(rng), random_top_k(rng)

            selection = {
                "neighbours": rng.choice([0, 0, 1, 3]),
                "paragraph": rng.random() < 0.3,
                "budget_words": rng.choice([None, None, 1, 50, 1000]),
                "order": rng.choice(["score", "document"]),
            }

            def job(query: str = query, documents: list[Any] = documents,
                    top_k: int | None = top_k, selection: dict[str, Any] = selection,
                    ) -> Outcome:  # fmt: skip
                evidence = retriever.retrieve(query, documents, top_k=top_k)
                outcome = check_evidence(evidence, documents, top_k)
                if outcome.kind != "ok" or not evidence:
                    return outcome
                return check_selection(select(evidence, documents, **selection), documents)

            megabytes = (sum(map(len, texts)) + len(query)) / MB
            yield f"q={short(query, 120)} top_k={top_k} docs={short(texts)}", megabytes, job

    return cases


def upload_name(rng: random.Random) -> str:
    if rng.random() < 0.9:
        return f"doc{rng.randrange(40)}.txt"
    return rng.choice(
        [
            "",
            "..txt",
            "../escape.txt",
            "a/b.txt",
            "\u202etxt.exe",
            "\u2066name\u2069.txt",
            "nul\x00.txt",
            "x" * 300 + ".txt",
            "名前.txt",
            "\U0001f600.md",
            " .txt",
            "CON.txt",
            "line\nbreak.txt",
        ]
    )


class Service:
    """One app over a temporary data directory, and the documents stored so far."""

    def __init__(self, directory: Path) -> None:
        from fastapi.testclient import TestClient

        from longscan.service import ServiceSettings, create_app

        settings = ServiceSettings(directory, max_upload_bytes=2 * MB, scan_timeout_s=60.0)
        self.client = TestClient(
            create_app(settings), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
        )
        self.client.__enter__()
        self.ids: list[int] = []

    def post_json(self, url: str, body: dict[str, Any]) -> Any:
        """JSON as a browser's JSON.stringify sends it: a lone surrogate as a \\uXXXX escape
        (httpx's ``json=`` would fail to encode it before sending)."""
        headers = {"Content-Type": "application/json"}
        return self.client.post(url, content=json.dumps(body), headers=headers)

    def close(self) -> None:
        self.client.__exit__(None, None, None)


def response_outcome(response: Any) -> Outcome | None:
    """A refusal or failure, or None for 200."""
    if response.status_code == 200:
        return None
    detail = f"{response.status_code} {response.text[:300]}"
    if response.status_code == 504:
        return Outcome("hang", detail)
    if 400 <= response.status_code < 500:
        return Outcome("clear", detail)
    return Outcome("crash", detail)


def upload_cases(
    rng: random.Random, count: int, service: Service
) -> Callable[[], Iterator[tuple[str, float, Callable[[], Outcome]]]]:
    def cases() -> Iterator[tuple[str, float, Callable[[], Outcome]]]:
        for _ in range(count):
            name = upload_name(rng)
            pasted = rng.random() < 0.3
            text, raw = "", b""
            if pasted:
                text = random_document_text(rng, 0.0)[:4000]
            else:
                raw = random_bytes(rng, 0.0)[:8000]

            def job(name: str = name, pasted: bool = pasted, raw: bytes = raw,
                    text: str = text) -> Outcome:  # fmt: skip
                if pasted:
                    response = service.post_json(
                        "/api/documents/text", {"name": name, "text": text}
                    )
                else:
                    files = {"file": (name, raw, "text/plain")}
                    response = service.client.post("/api/documents", files=files)
                refused = response_outcome(response)
                if refused is not None:
                    return refused
                doc_id = response.json()["id"]
                stored = service.client.get(f"/api/documents/{doc_id}")
                if stored.status_code != 200:
                    return Outcome("crash", f"stored document: {stored.status_code}")
                if doc_id not in service.ids:
                    service.ids.append(doc_id)
                if pasted:  # JSON reads an escaped surrogate pair as the one character it is
                    if stored.json()["text"] != json.loads(json.dumps(text)):
                        return Outcome("inexact", "the stored text differs from the pasted one")
                    return Outcome("ok")
                return check_document_text(stored.json()["text"], raw, {})

            what = f"paste {short(text)}" if pasted else f"upload {short(raw)}"
            yield f"name={short(name)} {what}", (len(raw) + len(text)) / MB, job

    return cases


def ask_cases(
    rng: random.Random, count: int, service: Service
) -> Callable[[], Iterator[tuple[str, float, Callable[[], Outcome]]]]:
    def cases() -> Iterator[tuple[str, float, Callable[[], Outcome]]]:
        for _ in range(count):
            query, top_k = random_query(rng), random_top_k(rng)
            picks = rng.choice([1, 1, 2, 3])
            bad_id = rng.random() < 0.05

            def job(query: str = query, top_k: int | None = top_k, picks: int = picks,
                    bad_id: bool = bad_id) -> Outcome:  # fmt: skip
                ids = rng.sample(service.ids, min(picks, len(service.ids)))
                if bad_id or not ids:
                    ids = [*ids, rng.choice([0, -1, 10**9, 2**63])]
                body: dict[str, Any] = {"question": query, "doc_ids": ids}
                if top_k is not None:
                    body["top_k"] = top_k
                response = service.post_json("/api/ask", body)
                refused = response_outcome(response)
                if refused is not None:
                    return refused
                texts = {}
                for doc_id in ids:
                    stored = service.client.get(f"/api/documents/{doc_id}")
                    texts[str(doc_id)] = stored.json()["text"]
                for item in response.json()["evidence"]:
                    text = texts.get(item["doc_id"])
                    if text is None or text[item["start"] : item["end"]] != item["text"]:
                        return Outcome("inexact", f"evidence {short(item, 200)}")
                return Outcome("ok")

            yield f"q={short(query, 200)} top_k={top_k}", len(query) / MB, job

    return cases


# ------------------------------------------------------------- attacks on a real server

SLOW_CLIENT_S = 5.0  # the server's header and body timeouts
HEALTH_EVERY_S = 0.5
HEALTH_LIMIT_S = 10.0
START_LIMIT_S = 600.0  # the server loads the scanner first
UPLOAD_LIMIT_S = 300.0
BOMB_INFLATED = 1_500 * MB
NESTING = 100_000
PARTIAL_HEADS = 400  # over the 320 connections uvicorn's old concurrency limit counted
STALLED_BODIES = 50
ATTACKS = 5
TINY = (
    "Mara kept the spare key under the blue flowerpot by the back door. "
    "Her brother Tom never found it.\n\nThe ferry across the river was late."
)
SERVER = """
import sys
from pathlib import Path

from longscan.service.server import serve
from longscan.service.settings import MIB, ServiceSettings

slow = float(sys.argv[3])
settings = ServiceSettings(
    Path(sys.argv[1]), max_upload_bytes=4 * MIB, scan_timeout_s=60.0,
    header_timeout_s=slow, body_timeout_s=slow,
)
serve(settings, int(sys.argv[2]))
"""
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" '
    'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
PACKAGE_RELATIONS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Target="word/document.xml" Type="http://schemas.openxmlformats'
    '.org/officeDocument/2006/relationships/officeDocument"/></Relationships>'
)
WORD = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def zip_bomb_docx(path: Path, inflated: int) -> None:
    """A .docx whose ``word/document.xml`` inflates to about ``inflated`` bytes: paragraphs
    of 1 MB of one letter (each well under XML parsers' 10 MB text-node limit), deflated
    about a thousand to one, written a paragraph at a time."""
    head = f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{WORD}"><w:body>'
    paragraph = b"<w:p><w:r><w:t>" + b"a" * MB + b"</w:t></w:r></w:p>"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES)
        archive.writestr("_rels/.rels", PACKAGE_RELATIONS)
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            member.write(head.encode())
            for _ in range(inflated // len(paragraph)):
                member.write(paragraph)
            member.write(b"</w:body></w:document>")


def nested_html(depth: int) -> bytes:
    inside = b"Deep inside, the spare key is under the mat."
    return b"<html><body>" + b"<div>" * depth + inside + b"</div>" * depth + b"</body></html>"


def still_open(sockets: list[socket.socket], within_s: float) -> int:
    """How many of ``sockets`` the server has not closed within ``within_s`` (what it sends
    first, a 408 say, is read and dropped; a reset counts as closed)."""
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            selector.register(sock, selectors.EVENT_READ)
        left = len(sockets)
        deadline = time.monotonic() + within_s
        while left and time.monotonic() < deadline:
            for key, _ in selector.select(0.5):
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(key.fileobj)
                    left -= 1
    return left


class LiveServer:
    """``longscan.service.server.serve`` in a process of its own on a free loopback port,
    with a thread that asks for health every half second (counting each probe into
    ``health``) and samples the process's RSS, killing it past ``kill_mb``."""

    def __init__(self, directory: Path, kill_mb: float, health: Stage) -> None:
        import httpx

        directory.mkdir(parents=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.address = ("127.0.0.1", port)
        self.url = f"http://127.0.0.1:{port}"
        self.log = directory / "server.log"
        env = {**os.environ, "LONGSCAN_CACHE_DIR": str(directory / "cache")}
        command = [sys.executable, "-c", SERVER, str(directory), str(port), str(SLOW_CLIENT_S)]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        self.client = httpx.Client(base_url=self.url, timeout=UPLOAD_LIMIT_S)
        self.health, self.kill_mb = health, kill_mb
        self.killed = ""
        self.sampled_peak_mb = 0.0
        self.tiny_id = 0
        deadline = time.monotonic() + START_LIMIT_S
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start; see {self.log}")
            time.sleep(0.5)
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _answers(self) -> bool:
        import httpx

        try:
            return self.client.get("/api/health", timeout=HEALTH_LIMIT_S).status_code == 200
        except httpx.HTTPError:
            return False

    def rss_mb(self) -> float:
        try:
            return psutil.Process(self.process.pid).memory_info().rss / MB
        except psutil.NoSuchProcess:
            return 0.0

    def peak_mb(self) -> float:
        return max(peak_rss_bytes(self.process.pid) / MB, self.sampled_peak_mb)

    def reading(self) -> int:
        """Uploads the server is reading (or about to)."""
        return int(self.client.get("/api/health", timeout=HEALTH_LIMIT_S).json()["reading"])

    def _watch(self) -> None:
        import httpx

        with httpx.Client(base_url=self.url, timeout=HEALTH_LIMIT_S) as probe:
            while not self._stop.wait(HEALTH_EVERY_S):
                rss = self.rss_mb()
                self.sampled_peak_mb = max(self.sampled_peak_mb, rss)
                if rss > self.kill_mb and not self.killed:
                    self.killed = f"the server was killed at {rss:,.0f} MB RSS"
                    self.process.kill()
                began = time.perf_counter()
                try:
                    status = probe.get("/api/health").status_code
                    outcome = Outcome("ok" if status == 200 else "crash", f"health: {status}")
                except httpx.TimeoutException:
                    outcome = Outcome("hang", f"no health within {HEALTH_LIMIT_S:.0f} s")
                except httpx.HTTPError as error:
                    outcome = Outcome("crash", f"health: {error!r} {self.killed}")
                elapsed = time.perf_counter() - began
                self.health.slowest_s = max(self.health.slowest_s, elapsed)
                self.health.count(outcome, f"probe at {datetime.now(UTC):%H:%M:%S}")

    def close(self) -> None:
        self._stop.set()
        self._watcher.join()
        self.client.close()
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def attack_cases(
    server: LiveServer, workdir: Path, question_limit_s: float
) -> Callable[[], Iterator[tuple[str, float, Callable[[], Outcome]]]]:
    import httpx

    def ask_tiny() -> Outcome:
        body = {"question": "Where is the spare key?", "doc_ids": [server.tiny_id]}
        began = time.perf_counter()
        response = server.client.post("/api/ask", json=body)
        refused = response_outcome(response)
        if refused is not None:
            return refused
        for item in response.json()["evidence"]:
            if TINY[item["start"] : item["end"]] != item["text"]:
                return Outcome("inexact", f"evidence {short(item, 200)}")
        return Outcome("ok", f"answered in {time.perf_counter() - began:.1f} s")

    def warm_up() -> Outcome:
        stored = server.client.post("/api/documents/text", json={"name": "tiny.txt", "text": TINY})
        refused = response_outcome(stored)
        if refused is not None:
            return refused
        server.tiny_id = stored.json()["id"]
        return ask_tiny()

    def upload(name: str, content: bytes) -> Outcome:
        began = time.perf_counter()
        try:
            with httpx.Client(base_url=server.url, timeout=UPLOAD_LIMIT_S) as client:
                response = client.post("/api/documents", files={"file": (name, content)})
        except httpx.HTTPError as error:
            return Outcome("crash", f"{error!r} {server.killed}")
        outcome = response_outcome(response) or Outcome("ok", f"{response.status_code}")
        return Outcome(outcome.kind, f"{outcome.detail} in {time.perf_counter() - began:.1f} s")

    def read_meanwhile(name: str, content: bytes) -> Outcome:
        """Upload while a question about the small document is asked: it must answer
        within ``question_limit_s`` however long the upload takes to read."""
        outcomes: list[Outcome] = []
        before = server.reading()
        thread = threading.Thread(target=lambda: outcomes.append(upload(name, content)))
        thread.start()
        while thread.is_alive() and server.reading() <= before:
            time.sleep(0.05)
        began = time.perf_counter()
        asked = ask_tiny()
        waited = time.perf_counter() - began
        meanwhile = "while it was read" if server.reading() > before else "after it was read"
        thread.join()
        if asked.kind != "ok":
            return asked
        question = f"a question answered in {waited:.1f} s {meanwhile}"
        if waited > question_limit_s:
            return Outcome("hang", f"{question}, over {question_limit_s:.0f} s")
        return Outcome(outcomes[0].kind, f"upload {outcomes[0].detail}; {question}")

    def slow_connections(head: bytes, count: int) -> Outcome:
        """``count`` connections that send ``head`` and nothing more: health must answer
        beside them, and the server must close them all."""
        sockets = []
        try:
            for _ in range(count):
                sockets.append(socket.create_connection(server.address, HEALTH_LIMIT_S))
                sockets[-1].sendall(head)
            status = server.client.get("/api/health", timeout=HEALTH_LIMIT_S).status_code
            within = SLOW_CLIENT_S + 30
            began = time.perf_counter()
            left = still_open(sockets, within)
            closed_s = time.perf_counter() - began
        except OSError as error:
            return Outcome("crash", f"{error!r} {server.killed}")
        finally:
            for sock in sockets:
                sock.close()
        if status != 200:
            return Outcome("crash", f"health answered {status} beside {count} slow clients")
        if left:
            return Outcome("hang", f"{left} of {count} slow connections open {within:.0f} s on")
        return Outcome("ok", f"health 200 beside them; all closed {closed_s:.1f} s after")

    partial_head = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    stalled_body = (
        b"POST /api/documents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n"
        b"Content-Type: multipart/form-data; boundary=b\r\n\r\n--b\r\nContent-Disposition: "
        b'form-data; name="file"; filename="stalled.txt"\r\n\r\nThe body stops here'
    )

    def cases() -> Iterator[tuple[str, float, Callable[[], Outcome]]]:
        yield "warm-up: a question about a small document", 0.0, warm_up
        bomb = workdir / "bomb.docx"
        zip_bomb_docx(bomb, BOMB_INFLATED)
        raw = bomb.read_bytes()
        what = f"zip bomb .docx: {len(raw):,} bytes inflating to {BOMB_INFLATED:,}"
        yield what, len(raw) / MB, lambda: upload("bomb.docx", raw)
        page = nested_html(NESTING)
        what = f"{NESTING:,} nested <div> ({len(page):,} bytes), a question meanwhile"
        yield what, len(page) / MB, lambda: read_meanwhile("nested.html", page)
        what = f"{PARTIAL_HEADS} connections that never finish their request head"
        yield what, 0.0, lambda: slow_connections(partial_head, PARTIAL_HEADS)
        what = f"{STALLED_BODIES} uploads whose body stalls"
        yield what, 0.0, lambda: slow_connections(stalled_body, STALLED_BODIES)

    return cases


# ------------------------------------------------------------------------------ main


def plan(total: int, retrievers: list[str]) -> dict[str, int]:
    counts = {name: int(total * share) for name, share in STAGE_SHARES.items()}
    for name in retrievers:
        cheap = name.startswith(CHEAP_RETRIEVERS)
        counts[f"retrieve {name}"] = max(1, int(total * (LEXICAL_SHARE if cheap else MODEL_SHARE)))
    counts["service upload"] = counts["service ask"] = max(1, int(total * SERVICE_SHARE))
    counts["service attacks"] = ATTACKS  # however many inputs: each attack once
    counts["segment"] += max(0, total - sum(counts.values()))  # the rounding goes to the cheap
    return counts


def table(stages: list[Stage], memory_mb: float) -> str:
    lines = [
        "| stage | inputs | ok | clear errors | crashes | inexact offsets | wrong results "
        "| hangs | RSS warm → end (MB) | memory | slowest (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for s in stages:
        verdict = "unbounded" if s.unbounded(memory_mb) else "bounded"
        rss = f"{s.rss_warm_mb:,.0f} → {s.rss_end_mb:,.0f}"
        if s.rss_peak_mb:
            rss += f" (peak {s.rss_peak_mb:,.0f})"
        elif not s.rss_end_mb:  # measures no memory (the health probes)
            rss = verdict = "—"
        lines.append(
            f"| {s.name} | {s.inputs:,} | {s.ok:,} | {s.clear_errors:,} | {s.crashes} "
            f"| {s.inexact} | {s.wrong} | {s.hangs} | {rss} | {verdict} | {s.slowest_s:.1f} |"
        )
    total = {
        key: sum(getattr(s, key) for s in stages)
        for key in ("inputs", "ok", "clear_errors", "crashes", "inexact", "wrong", "hangs")
    }
    unbounded = sum(s.unbounded(memory_mb) for s in stages)
    lines.append(
        f"| **all** | **{total['inputs']:,}** | {total['ok']:,} | {total['clear_errors']:,} "
        f"| **{total['crashes']}** | **{total['inexact']}** | **{total['wrong']}** "
        f"| **{total['hangs']}** | | **{unbounded} unbounded** | |"
    )
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inputs", type=int, default=100_000, help="Total inputs (all stages).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs"), help="Where the JSON goes.")
    parser.add_argument(
        "--stages", nargs="*", help="Run only stages whose name contains one of these."
    )
    parser.add_argument(
        "--huge-rate",
        type=float,
        default=0.001,
        help="Share of documents that are 1 MB runs (segment, read_file, lexical retrievers).",
    )
    parser.add_argument("--limit-s", type=float, default=10.0, help="Time limit per input.")
    parser.add_argument("--per-mb-s", type=float, default=60.0, help="Added per MB of input.")
    parser.add_argument(
        "--memory-mb", type=float, default=64.0, help="RSS growth after warm-up that counts."
    )
    parser.add_argument(
        "--server-memory-mb",
        type=float,
        default=512.0,
        help="Growth of the attacked server's peak RSS over its RSS after the warm-up that "
        "counts as unbounded.",
    )
    parser.add_argument(
        "--server-kill-mb", type=float, default=6144.0, help="RSS at which the server is killed."
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    from longscan import __version__
    from longscan.retrievers import available, get_retriever

    logging.disable(logging.WARNING)  # every undecodable byte run would log a warning
    workdir = Path(tempfile.mkdtemp(prefix="longscan-fuzz-"))
    atexit.register(shutil.rmtree, workdir, True)  # its files and caches take gigabytes
    os.environ["LONGSCAN_CACHE_DIR"] = str(workdir / "cache")  # no vectors left in ~/.cache
    counts = plan(args.inputs, available())
    if args.stages:
        counts = {k: v for k, v in counts.items() if any(s in k for s in args.stages)}
    started = datetime.now(UTC)
    stages: list[Stage] = []
    service: Service | None = None
    for name, count in counts.items():
        rng = random.Random(f"{args.seed}:{name}")
        stage = Stage(name, count)
        if name == "read_file":
            (workdir / "files").mkdir()
            cases = read_cases(rng, count, workdir / "files", args.huge_rate)
        elif name == "segment":
            cases = segment_cases(rng, count, args.huge_rate)
        elif name.startswith("retrieve "):
            retriever_name = name.removeprefix("retrieve ")
            small = not retriever_name.startswith(CHEAP_RETRIEVERS)
            retriever = get_retriever(retriever_name)
            cases = retriever_cases(rng, count, retriever, args.huge_rate, small)
        elif name == "service attacks":
            health = Stage("service health", 0)
            server = LiveServer(workdir / "server", args.server_kill_mb, health)
            stage.memory_limit_mb, stage.keeps_ok = args.server_memory_mb, True
            try:
                cases = attack_cases(server, workdir, args.limit_s)
                run_stage(stage, cases, args.limit_s * 3, args.per_mb_s, rss=server.rss_mb)
                stage.rss_peak_mb = server.peak_mb()
            finally:
                server.close()
            stages += [stage, health]
            for row in table([stage, health], args.memory_mb).splitlines()[2:4]:
                print(row, file=sys.stderr, flush=True)
            continue
        else:
            if service is None:
                service = Service(workdir / "service")
            maker = upload_cases if name == "service upload" else ask_cases
            cases = maker(rng, count, service)
        run_stage(stage, cases, args.limit_s * (1 if name in STAGE_SHARES else 3), args.per_mb_s)
        stages.append(stage)
        print(table([stage], args.memory_mb).splitlines()[2], file=sys.stderr, flush=True)
    if service is not None:
        service.close()
    report = table(stages, args.memory_mb)
    print(report)
    for stage in stages:  # what each attack did
        if stage.keeps_ok:
            print(f"\n{stage.name}:")
            for kind, found in stage.examples.items():
                for example in found:
                    print(f"- {example['input']}: {kind}, {example['detail']}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"fuzz-{args.seed}-{args.inputs}.json"
    result = {
        "command": " ".join(["python", *sys.argv]),
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "version": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "threads": torch.get_num_threads(),
        "seed": args.seed,
        "huge_rate": args.huge_rate,
        "limit_s": args.limit_s,
        "per_mb_s": args.per_mb_s,
        "memory_mb": args.memory_mb,
        "server_memory_mb": args.server_memory_mb,
        "table": report,
        "stages": [{**asdict(s), "growth_mb": s.growth_mb} for s in stages],
    }
    path.write_text(json.dumps(result, indent=1, ensure_ascii=True))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
