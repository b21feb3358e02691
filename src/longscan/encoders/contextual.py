"""Contextual sentence vectors: MiniLM over paragraph-aligned windows, pooled per sentence.

The scanner's local encoder. Consecutive sentences of one paragraph are packed into windows
of at most ``window_tokens`` tokens and encoded together, so each sentence vector (the mean
of its own tokens' final states) carries its local context. Windows never cross a paragraph
boundary, which makes a paragraph's vectors independent of where it sits in a document:
they can be cached per paragraph and reused when the same paragraph appears elsewhere
(training documents are built by shuffling paragraphs, so this saves most of the encoding).

With ``table_context`` (a name ending in ``+rows``), a table row that is a paragraph of its
own is read after its table's title, column header and row group (``longscan.tables``): those
tokens lead its window as context and are not pooled, so the row keeps its own vector and
offsets but knows which table and columns it belongs to.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache, spans_digest
from longscan.encoders.minilm import (
    SentenceEncoder,
    cache_name,
    get_encoder,
    unit_rows,
    without_adapter,
)
from longscan.tables import context_texts, row_context, rules_digest

DEFAULT_WINDOW_TOKENS = 256  # MiniLM was trained at 256 tokens or fewer
TABLE_CONTEXT_SUFFIX = "+rows"
ROW_CONTEXT_SHARE = 2  # a row's table context takes at most 1/2 of its window
BLOCK_SENTENCES = 2048
MIN_FILL = 0.95
"""Share of a batch's tokens that must be real (not padding)."""
Progress = Callable[[int, int], None]  # (sentences encoded so far, sentences to encode)


def parse_name(name: str) -> tuple[str, int, bool]:
    """``ENCODER/ctxN`` or ``ENCODER/ctxN+rows`` (a contextual encoder's name) as
    ``(ENCODER, N, table_context)``.

    Raises:
        ValueError: ``name`` is not of that form.
    """
    base, _, context = name.partition("/")
    table_context = context.endswith(TABLE_CONTEXT_SUFFIX)
    window = context.removesuffix(TABLE_CONTEXT_SUFFIX).removeprefix("ctx")
    if not (base and context.startswith("ctx") and window.isdigit()):
        raise ValueError(f"{name!r} is no contextual encoder name (ENCODER/ctxN[+rows])")
    return base, int(window), table_context


@dataclass(frozen=True)
class _Window:
    """Token ids of one window and the sentence each token range belongs to."""

    ids: list[int]
    sentences: list[tuple[int, int, int]]  # (sentence index, first token, end token)


class ContextualSentenceEncoder:
    """Encodes every sentence of a document in context.

    Args:
        encoder: The sentence encoder (its tokenizer and BERT body are used).
        window_tokens: Tokens per window including [CLS] and [SEP] (MiniLM was trained at
            256 or fewer).
        batch_tokens: Padded tokens per forward batch (bounds activation memory).
        paragraph_cache_size: Paragraph encodings kept in memory for reuse (0: none, the
            right choice for one long document; training sets it high).
        table_context: Read a table row alone in its paragraph after its table's title,
            column header and row group.
    """

    def __init__(
        self,
        encoder: SentenceEncoder,
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        batch_tokens: int = 8192,
        paragraph_cache_size: int = 0,
        table_context: bool = False,
    ) -> None:
        if window_tokens < 8:
            raise ValueError("window_tokens must be at least 8")
        self.encoder = encoder
        self.window_tokens = window_tokens
        self.batch_tokens = batch_tokens
        self.paragraph_cache_size = paragraph_cache_size
        self.table_context = table_context
        self._paragraphs: OrderedDict[str, np.ndarray] = OrderedDict()
        self.encoded_sentences = 0

    @classmethod
    def from_name(cls, name: str, adapter: Path | None = None) -> ContextualSentenceEncoder:
        """The encoder whose ``name`` is ``name`` (``ENCODER/ctxN``, as a checkpoint records
        it), so a scanner reads vectors made exactly as its training data's were; a name
        with an adapter's hash needs that ``adapter`` (a ``train-encoder`` folder).

        Raises:
            ValueError: ``name`` is not of that form, or names an unknown encoder.
            AdapterError: the adapter folder is missing, corrupt or foreign.
        """
        base, window, table_context = parse_name(name)
        encoder = get_encoder(without_adapter(base), None if adapter is None else str(adapter))
        return cls(encoder, window_tokens=window, table_context=table_context)

    @property
    def name(self) -> str:
        suffix = TABLE_CONTEXT_SUFFIX if self.table_context else ""
        return f"{self.encoder.name}/ctx{self.window_tokens}{suffix}"

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def cache_key(self, document: Document) -> str:
        """The document's text, units and encoder; with ``table_context`` also the table
        rules, which decide what each row reads, so vectors cached under other rules are
        not reused. Cheap: a re-query finds its vectors without reading any table."""
        name = self.name.replace(self.encoder.name, cache_name(self.encoder.name), 1)
        parts = ["contextual", name, document.content_hash, spans_digest(document.sentences)]
        if self.table_context:
            parts.append(rules_digest())
        return EmbeddingCache.key(*parts)

    def cached_vectors(
        self,
        document: Document,
        cache: EmbeddingCache | None,
        progress: bool = False,
        on_progress: Progress | None = None,
    ) -> np.ndarray:
        """``encode_document`` through a per-document cache (``None``: always encode)."""
        key = self.cache_key(document)
        vectors = None if cache is None else cache.get(key)
        if vectors is None:
            vectors = self.encode_document(document, progress, on_progress)
            if cache is not None:
                cache.put(key, vectors)
        return vectors

    def encode_document(
        self, document: Document, progress: bool = False, on_progress: Progress | None = None
    ) -> np.ndarray:
        """``(n_sentences, dim)`` float32 unit vectors, in sentence order; ``on_progress``
        hears after every batch how far the encoding is (a service streams it to the user)."""
        sentences = document.sentences
        owner = document.sentence_paragraph
        rows = self._row_contexts(document)
        result = np.zeros((len(sentences), self.dim), dtype=np.float32)
        missing: list[tuple[str, np.ndarray, str]] = []  # (paragraph key, sentences, context)
        for paragraph in np.unique(owner).tolist():
            indices = np.flatnonzero(owner == paragraph)
            context = rows.get(int(indices[0]), "") if len(indices) == 1 else ""
            key = self._paragraph_key(document.text, sentences[indices], context)
            if key in self._paragraphs:
                self._paragraphs.move_to_end(key)
                result[indices] = self._paragraphs[key]
            else:
                missing.append((key, indices, context))
        if missing:
            all_indices = np.concatenate([indices for _, indices, _ in missing])
            texts = [document.text[s:e] for s, e in sentences[all_indices].tolist()]
            groups = [len(indices) for _, indices, _ in missing]
            contexts = [context for _, _, context in missing]
            vectors = self.encode_grouped(texts, groups, progress, on_progress, contexts)
            result[all_indices] = vectors
            offset = 0
            for (key, _, _), size in zip(missing, groups, strict=True):
                self._remember(key, vectors[offset : offset + size])
                offset += size
        return result

    def _row_contexts(self, document: Document) -> dict[int, str]:
        """Each table row's context text (title, column header, row group), with
        ``table_context``; otherwise none."""
        if not self.table_context:
            return {}
        return {row: " ".join(context_texts(document, row)) for row in row_context(document)}

    def encode_grouped(
        self,
        texts: Sequence[str],
        group_sizes: Sequence[int],
        progress: bool = False,
        on_progress: Progress | None = None,
        group_contexts: Sequence[str] | None = None,
    ) -> np.ndarray:
        """Encode sentences given as consecutive groups (paragraphs); windows stay in groups.
        ``group_contexts`` (one text per group, "" for none) leads a group's first window
        as context that is read but not pooled.

        Returns:
            ``(len(texts), dim)`` float32 unit vectors.
        """
        if sum(group_sizes) != len(texts):
            raise ValueError("group sizes must add up to the number of texts")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        output = np.zeros((len(texts), self.dim), dtype=np.float32)
        bar = None
        if progress:
            from longscan.progress import Bar

            bar = Bar("encoding sentences", total=len(texts)).start()
        encoded = 0
        contexts = [""] * len(group_sizes) if group_contexts is None else list(group_contexts)
        # Blocks of whole groups keep token ids and windows small on million-token inputs.
        for first, stop, groups in self._blocks(group_sizes):
            sizes = [group_sizes[group] for group in groups]
            windows = self._windows(texts[first:stop], sizes, [contexts[g] for g in groups])
            windows.sort(key=lambda window: len(window.ids))
            for batch in self._batches(windows):
                self._encode_batch(batch, output[first:stop])
                done = sum(len(w.sentences) for w in batch)
                encoded += done
                if bar is not None:
                    bar.advance(done)
                if on_progress is not None:
                    on_progress(encoded, len(texts))
        if bar is not None:
            bar.close()
        self.encoded_sentences += len(texts)
        return unit_rows(output)

    @staticmethod
    def _blocks(group_sizes: Sequence[int]) -> list[tuple[int, int, list[int]]]:
        """Consecutive groups in blocks of about ``BLOCK_SENTENCES`` sentences: each block's
        first and end sentence and the indices of its groups."""
        blocks: list[tuple[int, int, list[int]]] = []
        first, sentences, groups = 0, 0, []
        for group, size in enumerate(group_sizes):
            groups.append(group)
            sentences += size
            if sentences >= BLOCK_SENTENCES:
                blocks.append((first, first + sentences, groups))
                first, sentences, groups = first + sentences, 0, []
        if groups:
            blocks.append((first, first + sentences, groups))
        return blocks

    def _windows(
        self, texts: Sequence[str], group_sizes: Sequence[int], contexts: Sequence[str]
    ) -> list[_Window]:
        tokenizer = self.encoder.tokenizer
        budget = self.window_tokens - 2
        token_ids = tokenizer.pieces(list(texts), budget)
        share = budget // ROW_CONTEXT_SHARE  # a long context keeps its lines nearest the row
        context_ids = dict(
            zip(
                (g for g, context in enumerate(contexts) if context),
                (ids[-share:] for ids in tokenizer.pieces([c for c in contexts if c], budget)),
                strict=True,
            )
        )
        windows: list[_Window] = []
        index = 0
        for group, size in enumerate(group_sizes):
            ids: list[int] = list(context_ids.get(group, ()))
            spans: list[tuple[int, int, int]] = []
            for sentence in range(index, index + size):
                tokens = token_ids[sentence] or [tokenizer.unk_id]
                if not spans and len(ids) + len(tokens) > budget:  # the row before its context
                    ids = ids[len(ids) + len(tokens) - budget :]
                if spans and len(ids) + len(tokens) > budget:
                    windows.append(_Window(ids, spans))
                    ids, spans = [], []
                spans.append((sentence, len(ids) + 1, len(ids) + 1 + len(tokens)))
                ids = ids + tokens
            if ids:
                windows.append(_Window(ids, spans))
            index += size
        return windows

    def _batches(self, windows: list[_Window]) -> list[list[_Window]]:
        """Batches of at most ``batch_tokens`` padded tokens, each at least ``MIN_FILL`` real.

        Without the fill rule, a document of many short paragraphs (filings: one table row per
        paragraph) put hundreds of windows of widths 3 to 30 in one batch, and padding grew
        the encoded tokens by 27% at 400k tokens against 9% at 100k: time was super-linear in
        the document's length for no reason but its layout.
        """
        batches: list[list[_Window]] = []
        current: list[_Window] = []
        real = 0
        for window in windows:  # sorted by length, so the last one sets the padded width
            width = len(window.ids) + 2
            padded = width * (len(current) + 1)
            if current and (padded > self.batch_tokens or real + width < MIN_FILL * padded):
                batches.append(current)
                current, real = [], 0
            current.append(window)
            real += width
        if current:
            batches.append(current)
        return batches

    def _encode_batch(self, batch: list[_Window], output: np.ndarray) -> None:
        tokenizer = self.encoder.tokenizer
        ids, mask = tokenizer.pad([[tokenizer.cls_id, *w.ids, tokenizer.sep_id] for w in batch])
        hidden = self.encoder.body.hidden_states(ids, mask)
        # hidden: (windows, width, dim); pool each sentence's own token range
        for row, window in enumerate(batch):
            for sentence, first, end in window.sentences:
                output[sentence] = hidden[row, first:end].mean(axis=0)

    def _paragraph_key(self, text: str, spans: np.ndarray, context: str = "") -> str:
        digest = hashlib.sha256()
        if context:
            digest.update(context.encode("utf-8", "surrogatepass") + b"\x1e")
        for start, end in spans.tolist():
            digest.update(text[start:end].encode("utf-8", "surrogatepass"))
            digest.update(b"\x1f")
        return digest.hexdigest()

    def _remember(self, key: str, vectors: np.ndarray) -> None:
        if self.paragraph_cache_size == 0:
            return
        self._paragraphs[key] = vectors
        while len(self._paragraphs) > self.paragraph_cache_size:
            self._paragraphs.popitem(last=False)
