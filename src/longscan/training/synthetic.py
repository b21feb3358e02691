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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import zip_longest
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from longscan.answering.llm import LLMClient, LLMError
from longscan.answering.pipelines import with_context
from longscan.answering.prompts import (
    SYNTH_CHUNK,
    SYNTH_LINKS,
    SYNTH_TABLE,
    SYNTH_TWO_CHUNKS,
    Prompt,
)
from longscan.answering.tokens import count_each, count_tokens
from longscan.documents import Document, Evidence
from longscan.progress import track
from longscan.readers.files import read_paths
from longscan.tables import row_context, table_context
from longscan.training.data import says_something
from longscan.training.decontamination import DECONTAMINATION_THRESHOLD, contamination
from longscan.training.synthetic_examples import (
    SyntheticExample,
    SynthStats,
    sentence_spans,
    stats_path,
    write_examples,
)

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
    own = sentence_spans(text)
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
