"""A cross-encoder re-scorer: the packaged MiniLM reads (question, sentence in context) as
one sequence, so every question word attends to every sentence word.

A bi-encoder compares two vectors computed apart, and BM25 counts shared words; neither can
tell which of two look-alike sentences actually answers. A cross-encoder can, at the cost of
one transformer pass per candidate, so it only re-scores a first stage's few best.

What ships is small: a LoRA adapter (low-rank updates of MiniLM's attention and feed-forward
weights) and a fresh scoring head, read and merged by ``encoders.adapter``, so scoring costs
exactly a plain MiniLM pass and needs no ``peft`` at run time.

Second hop: a multi-hop question's second sentence often shares no word with the question
("... starring Shirley Temple" answers "Which film's star became a diplomat?"). Joining the
question with the best first-hop sentence (``join_hop``) makes a query that does share them,
as multi-hop dense retrieval (MDR) does; the same model is trained on both kinds of query.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from longscan.devices import cpu_bfloat16
from longscan.documents import Document
from longscan.encoders.adapter import AdapterConfig, merge_adapter, read_adapter
from longscan.headings import section_headings
from longscan.tables import row_context

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

PACKAGED = Path(str(files("longscan") / "checkpoints" / "reranker-minilm"))
HOP_SEPARATOR = " [SEP] "  # BERT's own separator token between the question and a hop
CONTEXT_SEPARATOR = " [SEP] "  # between the sentence and the context it is read with
SCORE_CACHE_SIZE = 4096  # (query, passage) scores kept: re-reads within and across queries
MAX_CONTEXT_WORDS = 40  # the context words read beside a sentence (paragraph lead, previous)
QUERY_PIECES = 64  # a longer query is read from its end: half of the 128-piece pair window


def query_tail(query: str, offsets: Sequence[tuple[int, int]], limit: int = QUERY_PIECES) -> str:
    """The end of ``query`` that fits in ``limit`` word pieces, given each piece's character
    offsets (no special tokens). A pair is cut longest first, which cuts a long query from
    its end: a prompt that asks its question after an instruction (Loong's, L-Eval's) would
    be read without the question. A query that fits is kept as given: every development
    question of HotpotQA, MuSiQue and SQuAD does (at most 36 pieces)."""
    if len(offsets) <= limit:
        return query
    return query[offsets[-limit][0] :]


def sentence_in_context(document: Document, index: int, headings: bool = True) -> str:
    """Sentence ``index`` followed by what it needs to be understood alone, in document
    order: the heading it sits under (``longscan.headings``: often the only place naming an
    article's subject), the first sentence of its paragraph and the one before it; for a
    table row on a line of its own, the table's title, column header and row group
    (``longscan.tables``). ``headings`` False reads as adapters trained before headings did.

    The sentence comes first, so truncation cuts context, never the sentence.
    """
    spans = document.sentences
    paragraph = document.sentence_paragraph
    start, end = (int(v) for v in spans[index])
    sentence = document.text[start:end]
    context: set[int] = set()
    first = index
    while first > 0 and paragraph[first - 1] == paragraph[index]:
        first -= 1
    if first < index:
        context.add(first)
    if index - 1 > first:
        context.add(index - 1)
    if not context:  # a line of its own: a table row reads with its title and header
        context.update(row_context(document).get(index, ()))
    heading = int(section_headings(document)[index]) if headings else -1
    if heading >= 0:
        context.add(heading)
    if not context:
        return sentence
    words = " ".join(document.text[spans[i, 0] : spans[i, 1]] for i in sorted(context)).split()
    return sentence + CONTEXT_SEPARATOR + " ".join(words[:MAX_CONTEXT_WORDS])


def join_hop(query: str, hop: str) -> str:
    """The second round's query: the question with a first-hop sentence after it."""
    return query + HOP_SEPARATOR + hop


def base_cross_encoder(max_length: int, device: str = "cpu") -> CrossEncoder:
    """The packaged MiniLM with a fresh one-logit scoring head, loaded offline.

    The package holds a SentenceTransformer model; sentence-transformers warns that it
    converts one to a CrossEncoder, which is what is meant here: that one message is dropped
    (on the logger that writes it, during this load only), every other warning kept.
    """
    import logging

    from sentence_transformers import CrossEncoder
    from transformers.utils import logging as transformers_logging

    from longscan.encoders.bert import checked_model_dir

    def not_the_conversion(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Converting SentenceTransformer model ")

    converting = logging.getLogger("sentence_transformers.base.model")
    transformers_logging.disable_progress_bar()
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # "classifier newly initialized" is expected
    converting.addFilter(not_the_conversion)
    try:
        model = CrossEncoder(
            str(checked_model_dir()),
            num_labels=1,
            max_length=max_length,
            device=device,
            local_files_only=True,
        )
    finally:
        converting.removeFilter(not_the_conversion)
        transformers_logging.set_verbosity(verbosity)
    return model


def _classifier(model: CrossEncoder) -> Any:
    return model[0].model


class CrossEncoderReranker:
    """Scores (query, passage) pairs; higher is more relevant (a logit, not a probability).

    Attributes:
        model: The sentence-transformers ``CrossEncoder`` with the adapter merged.
        config: The adapter's configuration.
        digest: SHA-256 of the adapter weights: part of every cache key that depends on it.
        cache_size: (query, passage) scores kept (a benchmark comparing ways of combining the
            same reads raises it, so they are read once).
        bfloat16: Read pairs under bfloat16 autocast (matrix products in bfloat16, layer
            norms and softmax in float32); ``load`` follows ``devices.cpu_bfloat16()``.
    """

    def __init__(
        self, model: CrossEncoder, config: AdapterConfig, digest: str, bfloat16: bool = False
    ) -> None:
        self.model = model
        self.config = config
        self.digest = digest
        self.bfloat16 = bfloat16
        self.cache_size = SCORE_CACHE_SIZE
        self._scores: OrderedDict[tuple[str, str], float] = OrderedDict()

    def passage(self, document: Document, index: int) -> str:
        """Sentence ``index`` of ``document`` in context, as this adapter was trained to read
        it (with or without its heading)."""
        return sentence_in_context(document, index, headings=self.config.headings)

    def fit_query(self, query: str) -> str:
        """``query`` as a pair reads it whole: its end within ``QUERY_PIECES`` pieces."""
        tokens = self.model.tokenizer(
            query, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        return query_tail(query, tokens["offset_mapping"])

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """``(len(passages),)`` float32 logits of ``query`` against each passage; pairs read
        recently are not read again (a second round meets first-round candidates).

        Pairs are read shortest first, so a batch pads to a length near its own pairs'
        (15-25% faster in one measurement than reading them in the given order; the scores are
        the same).
        """
        pairs = [(query, passage) for passage in passages]
        missing = sorted(
            dict.fromkeys(pair for pair in pairs if pair not in self._scores),
            key=lambda pair: len(pair[0]) + len(pair[1]),
        )
        if missing:
            import torch

            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bfloat16):
                scores = self.model.predict(
                    missing,
                    batch_size=batch_size,
                    activation_fn=_identity(),
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            self._scores.update(zip(missing, np.asarray(scores).reshape(-1).tolist(), strict=True))
        for pair in pairs:
            self._scores.move_to_end(pair)
        result = np.array([self._scores[pair] for pair in pairs], dtype=np.float32)
        while len(self._scores) > self.cache_size:
            self._scores.popitem(last=False)
        return result

    @classmethod
    def load(
        cls, directory: str | Path = PACKAGED, bfloat16: bool | None = None
    ) -> CrossEncoderReranker:
        """Load an adapter directory (default: the one shipped in the package); ``bfloat16``
        ``None`` follows ``devices.cpu_bfloat16()`` (bfloat16 where the CPU makes it fast).

        Raises:
            AdapterError: a file is missing, the weights' hash or the base model differs
                from the config, or a tensor's name or shape does not fit MiniLM.
        """
        adapter = read_adapter(directory, rebuild="longscan train-reranker")
        model = base_cross_encoder(adapter.config.max_length)
        merge_adapter(_classifier(model), adapter, Path(directory))
        model.eval()
        fast = cpu_bfloat16() if bfloat16 is None else bfloat16
        return cls(model, adapter.config, adapter.digest, bfloat16=fast)


def _identity() -> Any:
    import torch

    return torch.nn.Identity()


@cache
def get_reranker(directory: str | None = None) -> CrossEncoderReranker:
    """Load (once per process) a re-ranker; ``None`` is the packaged one."""
    return CrossEncoderReranker.load(PACKAGED if directory is None else directory)


__all__ = [
    "CrossEncoderReranker",
    "get_reranker",
    "join_hop",
    "sentence_in_context",
]
