"""Extractive reading: the answer to a question as a span of its evidence, with the span's
exact character offsets in its document.

A generated answer has to be checked against the evidence it cites; an extracted one is a
piece of that evidence by construction, so it can be highlighted where it stands. MiniLM
reads the question with the evidence (joined in the order given) in windows of
``max_length`` word pieces that overlap by ``STRIDE``, and scores every evidence piece as
the answer's first and as its last; the best pair over all windows is the answer, unless
the score of "no answer" (both ends on ``[CLS]``) beats it.

What ships is a LoRA adapter and a fresh span head (``encoders.adapter``), merged into the
packaged MiniLM and exported once to ONNX into the cache, as the re-scorer is: a question
is then read with the ``tokenizers`` library and ONNX Runtime alone, without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from longscan.documents import Evidence
from longscan.encoders.adapter import checked_adapter_config, merge_adapter, read_adapter
from longscan.encoders.bert import (
    adapter_onnx,
    checked_model_dir,
    default_threads,
    onnx_session,
    tokenizer_file,
    trace_bert,
)
from longscan.encoders.storage import READER_STORAGE
from longscan.rerankers.cross_encoder import QUERY_PIECES, query_tail

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PACKAGED = Path(str(files("longscan") / "checkpoints" / "reader-minilm"))
REBUILD = "longscan train-reader"
HEAD = "qa_outputs"  # transformers' span head: a start and an end logit per piece
EVIDENCE_SEPARATOR = " [SEP] "  # between evidence items: BERT's separator, never an answer
STRIDE = 64  # pieces of context two neighbouring windows share, so no answer is cut in two
MAX_ANSWER_PIECES = 30  # longer spans are never answers in SQuAD-style data
WINDOW_BATCH = 16  # windows read per ONNX Runtime call


@dataclass(frozen=True, slots=True)
class Span:
    """An answer read from the evidence: ``document.text[start:end] == text``.

    Attributes:
        text: The answer, exactly as in the document.
        doc_id: The document it comes from.
        start: First character in the document, inclusive.
        end: Last character, exclusive.
        score: How far the span's logit sum lies above "no answer" (positive: answered).
        evidence: Index of the evidence item that holds it, in the order given.
    """

    text: str
    doc_id: str
    start: int
    end: int
    score: float
    evidence: int


def join_evidence(texts: Sequence[str]) -> tuple[str, np.ndarray]:
    """The context the reader reads, ``texts`` joined by ``EVIDENCE_SEPARATOR``, and the
    offset in it where each text starts: how pieces map back to their evidence."""
    starts = np.cumsum([0, *(len(text) + len(EVIDENCE_SEPARATOR) for text in texts[:-1])])
    return EVIDENCE_SEPARATOR.join(texts), starts.astype(np.int64)


@dataclass(frozen=True)
class Windows:
    """The question with overlapping stretches of one context, padded into arrays.

    Attributes:
        input_ids: ``(windows, pieces)`` word-piece ids (``[CLS] question [SEP] context
            [SEP]``, zeros after the end).
        attention_mask: ``(windows, pieces)`` 1 on real pieces.
        token_type_ids: ``(windows, pieces)`` 1 on the context and its closing ``[SEP]``.
        offsets: ``(windows, pieces, 2)`` each context piece's characters in the context.
        in_context: ``(windows, pieces)`` True on the context's pieces (not the question's,
            nor the special pieces around them).
    """

    input_ids: np.ndarray
    attention_mask: np.ndarray
    token_type_ids: np.ndarray
    offsets: np.ndarray
    in_context: np.ndarray

    def feeds(self) -> dict[str, np.ndarray]:
        """The model's inputs by name, as ONNX Runtime and the PyTorch model take them."""
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "token_type_ids": self.token_type_ids,
        }

    def answer_pieces(self, window: int, start: int, end: int) -> tuple[int, int]:
        """The first and last piece of the context characters ``[start, end)`` in
        ``window``; ``(0, 0)`` (``[CLS]``: no answer) when the window does not hold them
        whole. Training labels every window of an example this way."""
        pieces = np.flatnonzero(self.in_context[window])
        offsets = self.offsets[window, pieces]
        if not len(pieces) or offsets[0, 0] > start or offsets[-1, 1] < end:
            return 0, 0
        first = pieces[offsets[:, 1] > start][0]
        last = pieces[offsets[:, 0] < end][-1]
        return int(first), int(last)


class WindowTokenizer:
    """MiniLM's word pieces (the ``tokenizers`` library, no transformers) cutting a long
    context into overlapping windows, as training and reading both need them."""

    def __init__(self, max_length: int) -> None:
        from tokenizers import Tokenizer

        saved = tokenizer_file().read_text(encoding="utf-8")
        self.pairs: Tokenizer = Tokenizer.from_str(saved)
        self.pairs.enable_truncation(max_length, stride=STRIDE, strategy="only_second")
        self.pairs.no_padding()  # the file pads to 128; windows are padded together below
        self.plain: Tokenizer = Tokenizer.from_str(saved)
        self.plain.no_truncation()
        self.plain.no_padding()

    def fit_question(self, question: str) -> str:
        """``question`` cut to its last ``QUERY_PIECES`` pieces (``query_tail``): a prompt
        that asks its question after an instruction keeps the question, and every window
        keeps room for context.

        Raises:
            ValueError: an empty question (nothing to look for).
        """
        if not question.strip():
            raise ValueError("the question is empty: the reader needs something to look for")
        encoding = self.plain.encode(question, add_special_tokens=False)
        return query_tail(question, encoding.offsets, QUERY_PIECES)

    def windows(self, question: str, context: str) -> Windows:
        """The windows of ``question`` (already fitted) over ``context``."""
        first = self.pairs.encode(question, context)
        encodings = [first, *first.overflowing]
        width = max(len(e.ids) for e in encodings)
        shape = (len(encodings), width)
        ids, mask, types = (np.zeros(shape, np.int64) for _ in range(3))
        offsets = np.zeros((*shape, 2), np.int64)
        in_context = np.zeros(shape, bool)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            mask[row, :length] = encoding.attention_mask
            types[row, :length] = encoding.type_ids
            offsets[row, :length] = encoding.offsets
            in_context[row, :length] = [s == 1 for s in encoding.sequence_ids]
        return Windows(ids, mask, types, offsets, in_context)


def best_span(
    logits: np.ndarray, owner: np.ndarray, max_pieces: int = MAX_ANSWER_PIECES
) -> tuple[float, int, int, int] | None:
    """``(score, window, first, last)`` of the best answer: the highest start + end logit
    over pieces of one evidence item (``owner`` ``(windows, pieces)``: its index, -1 off
    the evidence) with ``first <= last < first + max_pieces``; the score is that sum less
    the lowest "no answer" sum of any window (the window that sees the answer best is the
    one to believe). None when no piece lies in the evidence."""
    start, end = logits[..., 0], logits[..., 1]
    pieces = owner.shape[1]
    first, last = np.arange(pieces)[:, None], np.arange(pieces)[None, :]
    allowed = (last >= first) & (last < first + max_pieces)
    allowed = allowed[None] & (owner[:, :, None] == owner[:, None, :]) & (owner >= 0)[:, :, None]
    if not allowed.any():
        return None
    sums = np.where(allowed, start[:, :, None] + end[:, None, :], -np.inf)
    window, i, j = np.unravel_index(int(np.argmax(sums)), sums.shape)
    no_answer = float(np.min(start[:, 0] + end[:, 0]))
    return float(sums[window, i, j]) - no_answer, int(window), int(i), int(j)


def piece_owners(windows: Windows, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(windows, pieces)``: the index of the evidence item each context piece lies in
    whole, -1 for the question, special pieces and the separators between items."""
    begin, end = windows.offsets[..., 0], windows.offsets[..., 1]
    owner = np.searchsorted(starts, begin, side="right") - 1
    inside = (owner >= 0) & (end <= starts[owner.clip(0)] + lengths[owner.clip(0)])
    return np.where(windows.in_context & inside & (end > begin), owner, -1)


def base_reader_model(attention: str = "sdpa") -> Any:
    """The packaged MiniLM with a fresh span head (``BertForQuestionAnswering``), loaded
    offline; transformers' report of the new head and the unused pooler is expected, so
    it is silenced during this load only."""
    from transformers import BertForQuestionAnswering
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        return BertForQuestionAnswering.from_pretrained(
            str(checked_model_dir()), attn_implementation=attention, local_files_only=True
        )
    finally:
        transformers_logging.set_verbosity(verbosity)


def load_reader_model(directory: Path = PACKAGED) -> Any:
    """The PyTorch reader: the adapter in ``directory`` merged into the packaged MiniLM,
    on the CPU in float32 (the reference the ONNX export is traced from).

    Raises:
        AdapterError: a file is missing, corrupt, or does not fit MiniLM.
    """
    adapter = read_adapter(directory, rebuild=REBUILD)
    model = base_reader_model(attention="eager")
    merge_adapter(model, adapter, Path(directory), head=HEAD)
    return model.eval()


def onnx_reader(
    directory: Path = PACKAGED, cache_dir: Path | None = None, storage: str | None = READER_STORAGE
) -> Path:
    """The ONNX file of the reader in ``directory``, exported on first use and read from
    the cache afterwards (named by the adapter's checked SHA-256); ``storage``: how it keeps
    its weights (``encoders.storage``; None: float32)."""
    config, digest = checked_adapter_config(directory, REBUILD)
    return adapter_onnx(
        "reader-minilm",
        digest,
        config.max_length,
        lambda target: _export(target, directory),
        storage,
        cache_dir,
    )


def _export(path: Path, directory: Path) -> None:
    """Trace the merged PyTorch reader's start and end logits to ONNX at ``path``."""
    import torch

    model = load_reader_model(directory)
    ids = torch.tensor([[101, 2040, 102, 2003, 1037, 102], [101, 2040, 102, 2003, 102, 0]])
    types = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]])
    example = (ids, (ids != 0).long(), types)  # padded windows: mask and types stay inputs
    trace_bert(
        model,
        lambda outputs: torch.stack([outputs.start_logits, outputs.end_logits], dim=-1),
        example,
        path,
        ("logits", {0: "rows", 1: "tokens"}),
    )


class ExtractiveReader:
    """Finds the answer to a question as a span of the evidence, through ONNX Runtime.

    Attributes:
        threshold: The least ``Span.score`` (logit margin over "no answer") read as an
            answer; below it ``read`` gives None.
    """

    def __init__(
        self, directory: Path = PACKAGED, threads: int | None = None, threshold: float = 0.0
    ) -> None:
        self.config, self.digest = checked_adapter_config(directory, REBUILD)
        exported = onnx_reader(directory)
        self.session = onnx_session(exported, threads or default_threads())
        self.tokenizer = WindowTokenizer(self.config.max_length)
        self.threshold = threshold

    def logits(self, windows: Windows) -> np.ndarray:
        """``(windows, pieces, 2)`` float32 start and end logits of every piece."""
        feeds = windows.feeds()
        rows = len(windows.input_ids)
        return np.concatenate(
            [
                self.session.run(
                    None, {name: value[i : i + WINDOW_BATCH] for name, value in feeds.items()}
                )[0]
                for i in range(0, rows, WINDOW_BATCH)
            ]
        )

    def read(self, question: str, evidence: Sequence[Evidence]) -> Span | None:
        """The answer to ``question`` in ``evidence`` (read in the order given), or None
        when the evidence is empty or holds no answer the reader trusts.

        Raises:
            ValueError: an empty question.
        """
        question = self.tokenizer.fit_question(question)
        if not any(item.text for item in evidence):
            return None
        texts = [item.text for item in evidence]
        context, starts = join_evidence(texts)
        windows = self.tokenizer.windows(question, context)
        lengths = np.array([len(text) for text in texts], dtype=np.int64)
        owner = piece_owners(windows, starts, lengths)
        found = best_span(self.logits(windows), owner)
        if found is None or found[0] < self.threshold:
            return None
        score, window, first, last = found
        index = int(owner[window, first])
        item = evidence[index]
        begin = int(windows.offsets[window, first, 0] - starts[index])
        end = int(windows.offsets[window, last, 1] - starts[index])
        return Span(
            item.text[begin:end], item.doc_id, item.start + begin, item.start + end, score, index
        )


@cache
def get_reader(threshold: float = 0.0) -> ExtractiveReader:
    """The packaged reader at ``threshold``, loaded once per process and threshold."""
    return ExtractiveReader(threshold=threshold)


__all__ = ["ExtractiveReader", "Span", "get_reader", "join_evidence"]
