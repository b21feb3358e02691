"""Synthetic training examples from the user's own long documents (SPScanner's recipe).

An LLM reads 20-sentence chunks of a real document and writes a question with a relevance
label for every sentence, with three strategies:

* ``chunk``: one random chunk;
* ``table``: a random chunk of a table, at least half of it rows read under their table's
  title and column header (``tables.row_context``), shown to the LLM with that context; the
  question must be answered by a row (prose chunks rarely label one);
* ``pair``: a random chunk and the chunk most similar to it (MiniLM vectors);
* ``link`` (the paper's best): a chunk at the start or end of a 200-sentence window; the LLM
  names real connections to other chunks of the window, then writes a question that needs
  the chunk and a linked one.

Each example is a random span of 2k-10k tokens of the source around the labelled chunks;
labels are sentence offsets into the example's text. LLM replies are JSON under a schema
and are validated (indices in range, every list non-empty); an invalid reply is dropped and
counted, never repaired. Every call goes through the response cache, so an interrupted run
resumes without repeating a call, and ``plan`` estimates calls and tokens before any is made.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from itertools import zip_longest
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from longscan.answering.llm import Completion, LLMClient, LLMError
from longscan.answering.pipelines import with_context
from longscan.answering.prompts import (
    SYNTH_CHUNK,
    SYNTH_LINKS,
    SYNTH_TABLE,
    SYNTH_TWO_CHUNKS,
    Prompt,
)
from longscan.answering.tokens import count_each, count_tokens
from longscan.bench.builders import split_of
from longscan.documents import Document, Evidence
from longscan.progress import track
from longscan.readers.files import read_file, read_paths
from longscan.tables import row_context, table_context
from longscan.training.data import says_something
from longscan.training.decontamination import DECONTAMINATION_THRESHOLD, contamination

Strategy = Literal["chunk", "table", "pair", "link"]
REFUSED_REQUEST = (400, 413, 422)  # this request cannot succeed (e.g. longer than the window)
STRATEGIES: tuple[Strategy, ...] = ("chunk", "table", "pair", "link")
TABLE_ROW_SHARE = 0.5  # rows with context among a chunk's lines that make it a table chunk
TABLE_CHUNK_TOKENS = 400  # a longer table chunk is a flattened page, not rows (and slow to read)
SPAN_TRIES = 8  # spans drawn around an example's chunks to find one free of evaluation text


@dataclass(frozen=True)
class SynthSettings:
    chunk_sentences: int = 20
    window_sentences: int = 200
    min_tokens: int = 2_000
    max_tokens: int = 10_000
    reply_tokens: int = 300
    seed: int = 0


@dataclass
class SyntheticExample:
    """One training example: a span of a source document, a question, labelled sentences.

    ``labels`` are ``(start, end)`` offsets into ``text``, each exactly one sentence of
    ``Document(id, text)``; ``source_start`` places ``text`` in the source document.
    """

    id: str
    strategy: str
    question: str
    text: str
    labels: list[tuple[int, int]]
    source_id: str
    source_start: int
    chunks: list[tuple[int, int]]  # labelled chunks as [first, last) sentence indices of the source
    link_distance: int | None = None  # sentences between the two chunks' starts

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> SyntheticExample:
        return cls.from_dict(json.loads(line))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SyntheticExample:
        labels = [tuple(x) for x in raw["labels"]]
        return cls(**{**raw, "labels": labels, "chunks": [tuple(x) for x in raw["chunks"]]})


@dataclass
class SynthStats:
    """Per-strategy counts: attempts, kept, dropped by reason, label balance, link distance."""

    attempts: Counter[str] = field(default_factory=Counter)
    kept: Counter[str] = field(default_factory=Counter)
    dropped: dict[str, Counter[str]] = field(default_factory=dict)
    positives: Counter[str] = field(default_factory=Counter)
    sentences: Counter[str] = field(default_factory=Counter)
    distances: dict[str, list[int]] = field(default_factory=dict)
    llm: dict[str, Counter[str]] = field(default_factory=dict)  # calls, tokens, seconds

    def count_call(self, strategy: str, completion: Completion) -> None:
        """Cost of a call as first made (a cached reply keeps its original counts)."""
        usage = self.llm.setdefault(strategy, Counter())
        usage["calls"] += 1
        usage["prompt_tokens"] += completion.prompt_tokens
        usage["completion_tokens"] += completion.completion_tokens
        usage["seconds"] += completion.seconds

    def drop(self, strategy: str, reason: str) -> None:
        self.dropped.setdefault(strategy, Counter())[reason] += 1

    def keep(self, example: SyntheticExample) -> None:
        self.kept[example.strategy] += 1
        self.observe(example)

    def observe(self, example: SyntheticExample) -> None:
        """Label balance and link distance of an example (kept now or in an earlier run)."""
        self.positives[example.strategy] += len(example.labels)
        self.sentences[example.strategy] += len(_sentence_spans(example.text))
        if example.link_distance is not None:
            self.distances.setdefault(example.strategy, []).append(example.link_distance)

    def as_dict(self) -> dict[str, Any]:
        report = {}
        for strategy in sorted(self.attempts):
            distances = self.distances.get(strategy, [])
            report[strategy] = {
                "attempts": self.attempts[strategy],
                "examples": self.kept[strategy],
                "dropped": dict(self.dropped.get(strategy, {})),
                "positive_rate": self.positives[strategy] / self.sentences[strategy]
                if self.sentences[strategy]
                else None,
                "link_distance_median": float(np.median(distances)) if distances else None,
                "link_distance_mean": float(np.mean(distances)) if distances else None,
                "llm": dict(self.llm.get(strategy, {})),
                "per_1000_examples": {
                    key: round(value * 1000 / self.kept[strategy], 1)
                    for key, value in self.llm.get(strategy, {}).items()
                }
                if self.kept[strategy]
                else None,
            }
        return report


QUESTION_SCHEMA = {"type": "string", "minLength": 10, "maxLength": 300}


def _indices_schema(n: int) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "integer", "enum": list(range(n))}, "minItems": 1}


def chunk_schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"question": QUESTION_SCHEMA, "relevant": _indices_schema(n)},
        "required": ["question", "relevant"],
    }


def two_chunk_schema(n_a: int, n_b: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "question": QUESTION_SCHEMA,
            "relevant_a": _indices_schema(n_a),
            "relevant_b": _indices_schema(n_b),
        },
        "required": ["question", "relevant_a", "relevant_b"],
    }


def links_schema(chunk_ids: Sequence[int]) -> dict[str, Any]:
    """One link, the strongest: llama.cpp's grammar engine blows up (gigabytes, minutes) on
    an array of such objects, and the question needs only one linked chunk."""
    return {
        "type": "object",
        "properties": {
            "chunk": {"type": "integer", "enum": list(chunk_ids)},
            "connection": {"type": "string", "maxLength": 300},
        },
        "required": ["chunk", "connection"],
    }


class InvalidReply(ValueError):
    """An LLM reply that does not satisfy its schema or the chunk it talks about."""


def _parse(text: str) -> dict[str, Any]:
    try:
        reply = json.loads(text)
    except json.JSONDecodeError:
        raise InvalidReply("not JSON") from None
    if not isinstance(reply, dict):
        raise InvalidReply("not a JSON object")
    return reply


# A user asks about a document, never about "both passages" or "chunk 3": a question naming
# the prompt's own framing cannot be asked of the long document it is trained on.
_PROMPT_FRAMING = re.compile(r"\b(passages?|chunks?|numbered sentences?)\b", re.IGNORECASE)


def _question(reply: dict[str, Any]) -> str:
    question = reply.get("question")
    if not isinstance(question, str) or len(question.split()) < 3 or "?" not in question:
        raise InvalidReply("no question")
    if _PROMPT_FRAMING.search(question):
        raise InvalidReply("question names the prompt's passages")
    return " ".join(question.split())


def _indices(reply: dict[str, Any], key: str, n: int) -> list[int]:
    values = reply.get(key)
    if not isinstance(values, list) or not values:
        raise InvalidReply(f"no {key}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise InvalidReply(f"{key} holds a non-integer")
    if not all(0 <= v < n for v in values):
        raise InvalidReply(f"{key} index out of range")
    return sorted(set(values))


def validate_chunk_reply(text: str, n: int) -> tuple[str, list[int]]:
    reply = _parse(text)
    return _question(reply), _indices(reply, "relevant", n)


def validate_table_reply(text: str, rows: Sequence[bool]) -> tuple[str, list[int]]:
    """A chunk reply whose labelled lines include a table row (``rows[i]``: line i is one)."""
    question, relevant = validate_chunk_reply(text, len(rows))
    if not any(rows[i] for i in relevant):
        raise InvalidReply("no table row labelled")
    return question, relevant


def validate_two_chunk_reply(text: str, n_a: int, n_b: int) -> tuple[str, list[int], list[int]]:
    reply = _parse(text)
    return _question(reply), _indices(reply, "relevant_a", n_a), _indices(reply, "relevant_b", n_b)


def validate_links_reply(text: str, chunk_ids: Sequence[int]) -> int:
    """The linked chunk, which must be another chunk of the window, with a stated connection."""
    reply = _parse(text)
    chunk = reply.get("chunk")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk not in chunk_ids:
        raise InvalidReply("no valid link")
    if not str(reply.get("connection", "")).strip():
        raise InvalidReply("no connection")
    return chunk


class SourceDocument:
    """A source document cut into chunks of consecutive sentences (never across the end)."""

    def __init__(self, document: Document, chunk_sentences: int) -> None:
        self.document = document
        self.spans = document.sentences
        self.texts = document.sentence_texts()
        self.tokens = np.asarray(count_each(self.texts)) if self.texts else np.zeros(0)
        n = len(self.texts)
        self.chunks = [(a, min(a + chunk_sentences, n)) for a in range(0, n, chunk_sentences)]

    def numbered(self, chunk: tuple[int, int], row_context: bool = False) -> str:
        """``[i] line`` for each line of ``chunk``; with ``row_context``, a table row is
        followed by its title, column header and group in braces when the line above had
        other ones (as ``format_evidence`` shows rows to the answerer)."""
        first, last = chunk
        texts = self.texts[first:last]
        contexts = [self.context(i) if row_context else "" for i in range(first, last)]
        return "\n".join(f"[{i}] {line}" for i, line in enumerate(with_context(texts, contexts)))

    def context(self, sentence: int) -> str:
        """``table_context`` of the document's ``sentence``."""
        start, end = self.spans[sentence]
        return table_context(self.document, Evidence.of(self.document, start, end, 0.0, sentence))

    def is_row(self, chunk: tuple[int, int]) -> list[bool]:
        """Whether each line of ``chunk`` is a table row read with context."""
        rows = row_context(self.document)
        return [i in rows for i in range(*chunk)]

    @cached_property
    def table_chunks(self) -> list[tuple[int, int]]:
        """The chunks of at most ``TABLE_CHUNK_TOKENS`` at least ``TABLE_ROW_SHARE`` of whose
        lines are rows with context."""
        return [
            (a, b)
            for a, b in self.chunks
            if self.tokens[a:b].sum() <= TABLE_CHUNK_TOKENS
            and np.mean(self.is_row((a, b))) >= TABLE_ROW_SHARE
        ]


@dataclass
class _Request:
    """One planned example: the prompt(s) it needs, before any call is made."""

    strategy: Strategy
    source: SourceDocument
    chunks: list[tuple[int, int]]
    prompt: Prompt
    fields: dict[str, str]
    schema: dict[str, Any]
    window: list[tuple[int, int]] = field(default_factory=list)  # link: the window's chunks


def plan(
    sources: Sequence[SourceDocument],
    strategy: Strategy,
    count: int,
    settings: SynthSettings,
    chunk_vectors: Sequence[np.ndarray] | None = None,
) -> list[_Request]:
    """The first-stage requests for ``count`` examples, drawn with a fixed seed."""
    rng = random.Random(f"{settings.seed}/{strategy}")
    if strategy == "table":
        eligible = [s for s in sources if s.table_chunks]
    else:
        eligible = [s for s in sources if len(s.chunks) >= (1 if strategy == "chunk" else 2)]
    if not eligible:
        need = "has a table" if strategy == "table" else "is long enough"
        raise ValueError(f"no document {need} for {strategy}-based examples")
    requests = []
    for _ in range(count):
        index = rng.randrange(len(eligible))
        source = eligible[index]
        if strategy == "table":
            chunk = rng.choice(source.table_chunks)
            requests.append(
                _Request(
                    strategy,
                    source,
                    [chunk],
                    SYNTH_TABLE,
                    {"chunk": source.numbered(chunk, row_context=True)},
                    chunk_schema(chunk[1] - chunk[0]),
                )
            )
            continue
        anchor = rng.randrange(len(source.chunks))
        chunk = source.chunks[anchor]
        if strategy == "chunk":
            requests.append(
                _Request(
                    strategy,
                    source,
                    [chunk],
                    SYNTH_CHUNK,
                    {"chunk": source.numbered(chunk)},
                    chunk_schema(chunk[1] - chunk[0]),
                )
            )
        elif strategy == "pair":
            vectors = chunk_vectors[sources.index(source)]  # type: ignore[index]
            similarity = vectors @ vectors[anchor]
            similarity[anchor] = -np.inf
            partner = source.chunks[int(np.argmax(similarity))]
            requests.append(
                _two_chunk_request(strategy, source, chunk, partner, "two similar passages")
            )
        else:
            per_window = max(2, settings.window_sentences // settings.chunk_sentences)
            at_start = rng.random() < 0.5
            first = anchor if at_start else max(0, anchor - per_window + 1)
            window = source.chunks[first : first + per_window]
            if len(window) < 2:
                window = source.chunks[max(0, anchor - per_window + 1) : anchor + 1]
            label = window.index(chunk)
            text = "\n\n".join(
                f"Chunk {k}:\n{' '.join(' '.join(source.texts[i].split()) for i in range(a, b))}"
                for k, (a, b) in enumerate(window)
            )
            others = [k for k in range(len(window)) if k != label]
            requests.append(
                _Request(
                    strategy,
                    source,
                    [chunk],
                    SYNTH_LINKS,
                    {"window": text, "anchor": str(label)},
                    links_schema(others),
                    window,
                )
            )
    return requests


def plan_runs(
    paths: Sequence[Path], strategies: Sequence[str], count: int, settings: SynthSettings
) -> list[_Request]:
    """``count`` requests per strategy over the documents at ``paths``, the strategies taking
    turns: a run stopped early still holds each of them.

    Raises:
        ValueError: an unknown strategy, or a shortest span longer than the longest.
        DocumentError: a path that cannot be read.
    """
    unknown = [strategy for strategy in strategies if strategy not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; choose chunk, table, pair or link")
    if settings.min_tokens > settings.max_tokens:
        raise ValueError("--min-tokens must not exceed --max-tokens")
    sources = [SourceDocument(d, settings.chunk_sentences) for d in read_paths(paths)]
    vectors = chunk_vectors(sources) if "pair" in strategies else None
    plans = [plan(sources, cast(Strategy, s), count, settings, vectors) for s in strategies]
    return [request for turn in zip_longest(*plans) for request in turn if request is not None]


def _two_chunk_request(
    strategy: Strategy,
    source: SourceDocument,
    chunk_a: tuple[int, int],
    chunk_b: tuple[int, int],
    relation: str,
) -> _Request:
    fields = {
        "chunk_a": source.numbered(chunk_a),
        "chunk_b": source.numbered(chunk_b),
        "relation": relation,
    }
    schema = two_chunk_schema(chunk_a[1] - chunk_a[0], chunk_b[1] - chunk_b[0])
    return _Request(strategy, source, [chunk_a, chunk_b], SYNTH_TWO_CHUNKS, fields, schema)


def estimate(requests: Sequence[_Request], settings: SynthSettings) -> dict[str, float]:
    """Calls and cl100k tokens a run will need (a link example makes two calls)."""
    calls = prompt_tokens = 0
    for request in requests:
        tokens = count_tokens(request.prompt.system.format(**request.fields)) + count_tokens(
            request.prompt.user.format(**request.fields)
        )
        calls += 1
        prompt_tokens += tokens
        if request.strategy == "link":  # the question call reads two chunks
            calls += 1
            prompt_tokens += tokens * 2 // max(1, len(request.window))
    return {
        "calls": calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens_at_most": calls * settings.reply_tokens,
    }


def example_span(
    source: SourceDocument,
    chunks: Sequence[tuple[int, int]],
    rng: random.Random,
    settings: SynthSettings,
) -> tuple[int, int]:
    """``[first, last)`` sentences: a random span of min-max tokens that holds ``chunks``
    (longer when the chunks alone need more, shorter when the document is)."""
    need_first = min(a for a, _ in chunks)
    need_last = max(b for _, b in chunks)
    n = len(source.texts)
    target = rng.randint(settings.min_tokens, settings.max_tokens)
    budget = max(0, target - int(source.tokens[need_first:need_last].sum()))
    before_share = rng.random()
    first, last = need_first, need_last
    spare_before = int(budget * before_share)
    while first > 0 and spare_before - source.tokens[first - 1] >= 0:
        spare_before -= int(source.tokens[first - 1])
        first -= 1
    spare_after = budget - int(budget * before_share) + spare_before
    while last < n and spare_after - source.tokens[last] >= 0:
        spare_after -= int(source.tokens[last])
        last += 1
    return first, last


def _sentence_spans(text: str) -> set[tuple[int, int]]:
    """``text``'s own sentences as ``(start, end)`` offsets: every label of an example must be
    one of them."""
    return {(int(a), int(b)) for a, b in Document("x", text).sentences}


def starting_at_evidence(example: SyntheticExample) -> SyntheticExample | None:
    """The example cut to begin at its first labelled sentence; None when the cut text's own
    segmentation no longer holds every label as a sentence.

    ``example_span`` never begins a span with its evidence, so a scanner trained on its spans
    alone learns that a document's first sentence is never the answer (BENCHMARKS.md, "A
    short document's first sentence").
    """
    cut = min(start for start, _ in example.labels)
    text = example.text[cut:]
    labels = [(start - cut, end - cut) for start, end in example.labels]
    if not _sentence_spans(text).issuperset(labels):
        return None
    return replace(example, text=text, labels=labels, source_start=example.source_start + cut)


def begin_some_at_evidence(
    examples: Sequence[SyntheticExample], share: float
) -> tuple[list[SyntheticExample], set[str]]:
    """``share`` of the examples, chosen by a stable hash of their ids (independent of the
    dev split's), replaced by ``starting_at_evidence``; the rest and any that cannot be cut
    are kept as they are. Returns the examples and the ids of those cut."""
    out, cut = [], set()
    for example in examples:
        chosen = split_of(example.id, share, seed=1) == "dev"
        moved = starting_at_evidence(example) if chosen else None
        if moved is not None:
            cut.add(example.id)
        out.append(moved or example)
    return out, cut


def clean_span(
    request: _Request,
    rng: random.Random,
    settings: SynthSettings,
    fingerprints: set[bytes] | None,
    threshold: float,
) -> tuple[int, int] | None:
    """The first of up to ``SPAN_TRIES`` spans (``example_span``) around the request's chunks
    that shares at most ``threshold`` of its sentences with evaluation data; None when none
    does. A filing's tables sit among form lines that every filing repeats ("Notes to
    Consolidated Financial Statements"), so one draw is often contaminated where another of
    the same chunk is not."""
    source = request.source
    for _ in range(SPAN_TRIES):
        first, last = example_span(source, request.chunks, rng, settings)
        if fingerprints is None:
            return first, last
        text = source.document.text[int(source.spans[first][0]) : int(source.spans[last - 1][1])]
        if contamination(Document("span", text), fingerprints) <= threshold:
            return first, last
    return None


def build_example(
    request: _Request,
    relevant: Sequence[Sequence[int]],
    question: str,
    span: tuple[int, int],
    settings: SynthSettings,
    number: int,
) -> SyntheticExample | None:
    """Cut ``span`` (sentences of the source, as ``example_span`` draws), re-segment it and
    map the labelled sentences to exact offsets in it; None when a labelled sentence is not
    a sentence of the example's own segmentation."""
    source = request.source
    first, last = span
    start, end = int(source.spans[first][0]), int(source.spans[last - 1][1])
    text = source.document.text[start:end]
    own = _sentence_spans(text)
    labels = []
    for (chunk_first, _), indices in zip(request.chunks, relevant, strict=True):
        for i in indices:
            a, b = source.spans[chunk_first + i]
            span = (int(a) - start, int(b) - start)
            if span not in own:
                return None
            labels.append(span)
    distance = request.chunks[1][0] - request.chunks[0][0] if len(request.chunks) == 2 else None
    return SyntheticExample(
        id=f"{request.strategy}-{settings.seed}-{number}",
        strategy=request.strategy,
        question=question,
        text=text,
        labels=sorted(set(labels)),
        source_id=source.document.id,
        source_start=int(start),
        chunks=[(int(a), int(b)) for a, b in request.chunks],
        link_distance=None if distance is None else abs(int(distance)),
    )


def generate(
    client: LLMClient,
    requests: Sequence[_Request],
    settings: SynthSettings,
    stats: SynthStats,
    fingerprints: set[bytes] | None = None,
    threshold: float = DECONTAMINATION_THRESHOLD,
    after_each: Callable[[SynthStats], None] | None = None,
) -> Iterator[SyntheticExample]:
    """Call the LLM for each planned request, validate, cut, decontaminate; yield examples.
    ``after_each`` sees the counts before every request after the first (a run of hours
    can be stopped at any point and its counts are on disk)."""
    rng = random.Random(f"{settings.seed}/spans")
    for number, request in enumerate(track(requests, "synthesising")):
        if after_each is not None and number:
            after_each(stats)
        strategy = request.strategy
        stats.attempts[strategy] += 1
        try:
            if strategy == "link":  # a first call names the chunk to link the anchor to
                request = _linked_request(request, _chat(client, request, settings, stats))
            # every chunk is known now: a clean span is found before the (last) call, so no
            # call is spent on an example that would be dropped as contaminated
            span = clean_span(request, rng, settings, fingerprints, threshold)
            if span is None:
                stats.drop(strategy, "contaminated")
                continue
            question, labelled = _validated(request, _chat(client, request, settings, stats))
        except LLMError as error:
            if error.status not in REFUSED_REQUEST:  # outages stop the run; rerun to resume
                raise
            stats.drop(strategy, f"request refused (HTTP {error.status})")
            continue
        except InvalidReply as error:
            stats.drop(strategy, str(error))
            continue
        example = build_example(request, labelled, question, span, settings, number)
        if example is None:
            stats.drop(strategy, "label is not a sentence of the example")
            continue
        stats.keep(example)
        yield example


def _chat(client: LLMClient, request: _Request, settings: SynthSettings, stats: SynthStats) -> str:
    """The reply to ``request``, its cost counted."""
    completion = client.chat(
        request.prompt.messages(**request.fields), settings.reply_tokens, request.schema
    )
    stats.count_call(request.strategy, completion)
    return completion.text


def _linked_request(request: _Request, reply: str) -> _Request:
    """The second-stage request of a link example: its anchor and the chunk the first
    ``reply`` linked it to."""
    anchor = int(request.fields["anchor"])
    linked = validate_links_reply(reply, [k for k in range(len(request.window)) if k != anchor])
    return _two_chunk_request(
        "link", request.source, request.chunks[0], request.window[linked], "linked passages"
    )


def _validated(request: _Request, reply: str) -> tuple[str, list[list[int]]]:
    """The question and the labelled lines of each chunk in a (last-stage) ``reply``, those
    that say nothing (a bullet, a page number, a redaction mark: the writer labels a run of
    lines) left out.

    Raises:
        InvalidReply: the reply is malformed, or a chunk's labelled lines all say nothing.
    """
    if request.strategy in ("chunk", "table"):
        chunk = request.chunks[0]
        if request.strategy == "table":
            question, relevant = validate_table_reply(reply, request.source.is_row(chunk))
        else:
            question, relevant = validate_chunk_reply(reply, chunk[1] - chunk[0])
        labelled = [relevant]
    else:
        chunk_a, chunk_b = request.chunks
        question, rel_a, rel_b = validate_two_chunk_reply(
            reply, chunk_a[1] - chunk_a[0], chunk_b[1] - chunk_b[0]
        )
        labelled = [rel_a, rel_b]
    texts = request.source.texts
    with_content = [
        [i for i in indices if says_something(texts[first + i])]
        for (first, _), indices in zip(request.chunks, labelled, strict=True)
    ]
    if not all(with_content):
        raise InvalidReply("labelled lines say nothing (bullets, numbers, marks)")
    return question, with_content


def chunk_vectors(sources: Sequence[SourceDocument]) -> list[np.ndarray]:
    """Mean MiniLM vector of each chunk (normalised), for pair-based examples."""
    from longscan.encoders.minilm import get_encoder, unit_rows

    encoder = get_encoder()
    result = []
    for source in track(sources, "embedding chunks"):
        texts = [" ".join(source.texts[a:b]) for a, b in source.chunks]
        vectors = np.asarray(encoder.encode(texts), dtype=np.float32) if texts else np.zeros((0, 1))
        result.append(unit_rows(vectors))
    return result


def write_examples(examples: Iterator[SyntheticExample], path: Path) -> int:
    """Stream examples to a JSONL file (the format ``longscan train --synthetic`` reads), a
    line at a time, so a run stopped early keeps what it wrote."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(example.to_json() + "\n")
            out.flush()
            written += 1
    return written


def stats_path(examples: Path) -> Path:
    """Where the run writing ``examples`` keeps its counts (``SynthStats.as_dict``)."""
    return examples.with_name(examples.name + ".stats.json")


def generate_into(
    out: Path,
    client: LLMClient,
    requests: Sequence[_Request],
    settings: SynthSettings,
    fingerprints: set[bytes] | None = None,
) -> tuple[int, SynthStats]:
    """``generate`` into ``out`` a line at a time, the counts into ``stats_path(out)`` after
    each request and at the end, so a run of hours stopped at any point keeps what it did:
    the examples written and the counts.

    Raises:
        LLMError: the LLM failed (finished calls are cached: a rerun resumes).
    """
    stats = SynthStats()
    counts = stats_path(out)

    def save_counts(now: SynthStats) -> None:
        counts.write_text(json.dumps(now.as_dict(), indent=1) + "\n", encoding="utf-8")

    examples = generate(client, requests, settings, stats, fingerprints, after_each=save_counts)
    written = write_examples(examples, out)
    save_counts(stats)
    return written, stats


def read_examples(path: Path, sources: Path | None = None) -> list[SyntheticExample]:
    """Examples from a JSONL file: ``parse_examples`` of its text."""
    return parse_examples(path.read_text(encoding="utf-8"), str(path), sources)


def parse_examples(text: str, origin: str, sources: Path | None = None) -> list[SyntheticExample]:
    """Examples from JSONL ``text`` (``origin`` names it in errors), each checked: labels
    must be sentences of its text.

    Packed lines (``pack_examples``) carry no text; it is read back from ``sources`` (default:
    the reference data's ``train-docs/``) and must hash as it did when packed.

    Raises:
        ValueError: a line that is not an example, a packed line whose source is missing or
            changed, or a label that is not a sentence.
    """
    examples = []
    # JSON Lines end at "\n" only: str.splitlines would also cut at U+2028 or \x1e, which
    # ensure_ascii=False writes raw inside a string (filings hold both)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if "source" in raw and "text" not in raw:
                raw = _unpack(raw, sources or train_docs())
            example = SyntheticExample.from_dict(raw)
        except (json.JSONDecodeError, TypeError, KeyError, ValueError) as error:
            raise ValueError(f"{origin}:{number}: not a synthetic example ({error})") from None
        if not example.labels or not set(example.labels) <= _sentence_spans(example.text):
            raise ValueError(f"{origin}:{number}: a label is not a sentence of the example's text")
        examples.append(example)
    return examples


def train_docs() -> Path:
    """The reference data's training documents."""
    from longscan.bench.datasets import data_path

    return data_path("train-docs")


REPEATED = "repeated (the same question of the same chunks of one source)"


def distinct_examples(
    examples: Sequence[SyntheticExample],
) -> tuple[list[SyntheticExample], list[SyntheticExample]]:
    """The examples without repeats, and the repeats left out: a chunk drawn twice (in one
    run or in runs of two seeds) gets the same reply from the response cache, so the same
    question of the same sentences, only in another span. The first is kept."""
    seen: set[tuple[str, tuple[tuple[int, ...], ...], str]] = set()
    kept, repeated = [], []
    for example in examples:
        key = (example.source_id, tuple(tuple(c) for c in example.chunks), example.question)
        (repeated if key in seen else kept).append(example)
        seen.add(key)
    return kept, repeated


def merge_stats(
    reports: Sequence[dict[str, Any]],
    examples: Sequence[SyntheticExample],
    repeated: Sequence[SyntheticExample] = (),
) -> dict[str, Any]:
    """One report for several runs (``SynthStats.as_dict`` each): attempts, kept, drops and
    LLM costs summed, the ``repeated`` examples moved from kept to dropped; label balance and
    link distances recomputed from ``examples`` (those packed), since a rate or a median of
    two runs cannot be added."""
    stats = SynthStats()
    for report in reports:
        for strategy, row in report.items():
            stats.attempts[strategy] += row["attempts"]
            stats.kept[strategy] += row["examples"]
            stats.dropped.setdefault(strategy, Counter()).update(row["dropped"])
            stats.llm.setdefault(strategy, Counter()).update(row["llm"])
    for example in repeated:
        stats.kept[example.strategy] -= 1
        stats.drop(example.strategy, REPEATED)
    for example in examples:
        stats.observe(example)
    return stats.as_dict()


def pack_examples(examples: Sequence[SyntheticExample], sources: Path) -> list[dict[str, Any]]:
    """Examples without their text, for a data file small enough to commit: each names its
    source file (relative to ``sources``), the span's offsets and the source text's SHA-256,
    so ``read_examples`` rebuilds exactly the text that was labelled, or refuses.

    Raises:
        ValueError: a source is not found under ``sources`` exactly once, or its text does
            not hold the example's text at ``source_start``.
    """
    by_name: dict[str, list[Path]] = {}
    for file in sources.rglob("*"):
        by_name.setdefault(file.name, []).append(file)
    read: dict[str, tuple[str, Document]] = {}
    packed = []
    for example in examples:
        if example.source_id not in read:
            found = [f for f in by_name.get(Path(example.source_id).name, [])
                     if f.as_posix().endswith(Path(example.source_id).as_posix())]  # fmt: skip
            if len(found) != 1:
                raise ValueError(f"{example.source_id}: found {len(found)} times under {sources}")
            relative = found[0].relative_to(sources).as_posix()
            read[example.source_id] = (relative, read_file(found[0]))
        relative, source = read[example.source_id]
        end = example.source_start + len(example.text)
        if source.text[example.source_start : end] != example.text:
            raise ValueError(f"{example.id}: {relative} does not hold its text")
        raw = asdict(example)
        del raw["text"], raw["source_id"]
        packed.append(
            {**raw, "source": relative, "source_end": end, "source_sha256": source.content_hash}
        )
    return packed


def pack_files(
    files: Sequence[Path], out: Path, sources: Path | None = None, stats: Path | None = None
) -> tuple[int, int]:
    """The examples of ``files`` (a file a run is still writing read up to its last whole
    line), without repeats, packed into ``out`` (``pack_examples``, ``sources`` by default
    ``train_docs()``) and read back to check them; with ``stats``, the runs' counts summed
    there, read after the examples so they count at least every example packed. The number
    of examples packed and of those left out as repeated.

    Raises:
        FileNotFoundError: a file, a source or a run's counts is missing.
        ValueError: the files share example ids, or an example cannot be packed.
    """
    folder = sources or train_docs()
    read = []
    for file in files:
        text = file.read_text(encoding="utf-8")
        read += parse_examples(text[: text.rfind("\n") + 1], str(file))
    ids = [example.id for example in read]
    if len(set(ids)) != len(ids):
        raise ValueError("the files share example ids: were two runs given the same seed?")
    kept, repeated = distinct_examples(read)
    packed = pack_examples(kept, folder)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in packed), "utf-8")
    read_examples(out, folder)  # what was written reads back, labels and all
    if stats is not None:
        reports = [json.loads(stats_path(file).read_text("utf-8")) for file in files]
        merged = merge_stats(reports, kept, repeated)
        stats.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    return len(packed), len(repeated)


def _unpack(raw: dict[str, Any], sources: Path) -> dict[str, Any]:
    """A packed line with its text read back from ``sources``."""
    source = read_file(sources / raw["source"])
    if source.content_hash != raw["source_sha256"]:
        raise ValueError(f"{raw['source']} has changed since the example was written")
    rest = {k: v for k, v in raw.items() if k not in ("source", "source_end", "source_sha256")}
    start, end = int(raw["source_start"]), int(raw["source_end"])
    return {**rest, "text": source.text[start:end], "source_id": raw["source"]}
