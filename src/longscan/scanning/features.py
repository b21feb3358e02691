"""Per-sentence features the scanner reads beside the sentence vectors.

Dense vectors blur exact names and numbers, which decide many questions; these features give
the scanner the lexical signal (BM25 and query-term coverage) and the document structure
(paragraph starts and positions) at every step, computed in milliseconds per query. A first
pass (BM25 + dense) also feeds its best sentences back: their new terms, mean vector and
capitalised names point at the second hop of multi-hop questions. The first pass's best
sentences are also matched word by word against the query (late interaction over MiniLM's
token states), which tells the scanner which close candidate actually answers.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import dropwhile
from typing import Any

import numpy as np

from longscan.documents import Document, SentencePositions
from longscan.encoders.minilm import MAX_TOKENS, SentenceEncoder, unit_rows
from longscan.lexical.bm25 import tokenize
from longscan.models.config import ScannerConfig
from longscan.scanning.first_stage import FirstStage, SentenceIndex, SentenceIndexes, rank_feature
from longscan.segment import segment

FEATURE_NAMES = (
    "bm25_over_max",  # BM25 score / the document's best score
    "bm25_rank",  # 1 - log(rank) / log(n): rank-based, robust to score scale
    "query_coverage",  # share of the query's content terms in the sentence
    "paragraph_start",  # 1 on a paragraph's first sentence
    "paragraph_position",  # index in the paragraph / paragraph length
    "log_words",  # log(1 + words) / 5
    "dense_rank",  # 1 - log(rank) / log(n) of the sentence vector's cosine with the query
    # Appended later; a checkpoint trained on a prefix of these names reads only that prefix.
    "paragraph_bm25",  # the best bm25_over_max in the sentence's paragraph
    "paragraph_dense_rank",  # rank of the paragraph's mean vector among all paragraphs
    "feedback_bm25",  # BM25 of the new terms of the best first-pass sentences / best score
    "feedback_dense_rank",  # rank of the cosine with the mean of those sentences' vectors
    "query_name_paragraph",  # the paragraph mentions a capitalised name of the query (rarity)
    "bridge_name",  # the sentence mentions a name the best first-pass sentences add (rarity)
    "bridge_name_paragraph",  # the best bridge_name in the sentence's paragraph
    "token_match",  # MaxSim of the query's tokens in the sentence's, first-pass candidates only
    "token_match_rank",  # rank of token_match among the candidates, 0 for other sentences
    "query_part_bm25",  # the best over the query's sentences of BM25 / that sentence's best
    "query_part_dense_rank",  # the best over the query's sentences of the dense rank under it
    "window_dense_rank",  # rank of the mean vector of the units within WINDOW_WORDS around it
)
FEEDBACK_SENTENCES = 3  # the first-pass sentences whose words, vectors and names are fed back
TOKEN_CACHE_SIZE = 2048  # sentences whose token states are kept (re-queries, training)
MAX_QUERY_PARTS = 16  # a query of more sentences is read in this many runs of them
# A unit's neighbourhood for window_dense_rank: the chunk baselines' 300 words, centred on it
WINDOW_WORDS = 300
WINDOW_BLOCK = 4096  # units summed at a time (bounds the float64 sums of a huge document)
MAX_NAMES = 32  # names taken from the query or the fed-back sentences (bounds a huge query)
# lower-case words that join a name: "Bank of England", "Ludwig van Beethoven"
NAME_LINKS = frozenset(["of", "the", "de", "du", "da", "del", "der", "van", "von", "la", "le"])
# scikit-learn's English stop words, read from a copy (importing scikit-learn takes a second),
# and two it lacks
ENGLISH_STOP_WORDS = frozenset(
    line
    for line in resources.files("longscan.data")
    .joinpath("english_stop_words.txt")
    .read_text()
    .split("\n")
    if line and not line.startswith("#")
)
NAME_STOP_WORDS = ENGLISH_STOP_WORDS | {"did", "does"}
_NAME_WORD = re.compile(r"[^\W_][\w'’\-]*")
N_FEATURES = len(FEATURE_NAMES)
FEATURE_COLUMNS = tuple(range(N_FEATURES))  # what the training data holds: every column
# what `longscan train` reads unless told: the shipped layout, the first 16 columns and the
# window column (docs/experiments.md). The query-part columns are opt-in (`--features 18`):
# three seeds with them lost more SQuAD questions than three without (docs/experiments.md)
TRAINED_FEATURES = (*FEATURE_NAMES[: FEATURE_NAMES.index("query_part_bm25")], "window_dense_rank")


def feature_names(config: ScannerConfig) -> tuple[str, ...]:
    """The columns a scanner network reads, by name (its config's, or the first
    ``n_features`` for a config written before configs named them)."""
    return config.feature_names or FEATURE_NAMES[: config.n_features]


def feature_columns(config: ScannerConfig) -> list[int]:
    """The columns a scanner network reads, as indices of ``FEATURE_NAMES``.

    Raises:
        ValueError: a name this longscan does not compute.
    """
    names = feature_names(config)
    unknown = [name for name in names if name not in FEATURE_NAMES]
    if unknown:
        raise ValueError(f"unknown feature columns {unknown}; longscan computes {FEATURE_NAMES}")
    return [FEATURE_NAMES.index(name) for name in names]


@dataclass(frozen=True)
class TokenMatch:
    """How ``token_match`` reads the first pass: its ``candidates`` best sentences, each cut
    to ``max_tokens`` word pieces, against the query's first ``query_tokens``. A checkpoint
    records the values it was trained with, since other values give other columns (fewer
    make a re-query cheaper).

    The query is not cut like a sentence: a prompt often states its question after an
    instruction ("Review the statements above ... What is the Basic EPS of X?"), and cut at
    32 pieces it kept only the instruction. A query reads the encoder's whole window.
    """

    candidates: int = 16
    max_tokens: int = 32  # about a line and a half of text
    query_tokens: int = MAX_TOKENS

    def __post_init__(self) -> None:
        for name in ("candidates", "max_tokens", "query_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"token match {name} must be a positive integer, not {value!r}")
        if self.query_tokens > MAX_TOKENS:
            raise ValueError(
                f"token match query_tokens must be at most the encoder's {MAX_TOKENS} pieces, "
                f"not {self.query_tokens}"
            )

    @classmethod
    def recorded(cls, settings: dict[str, Any]) -> TokenMatch:
        """The settings a checkpoint's config records. Configs written before
        ``query_tokens`` existed cut the query at ``max_tokens``, as their training did."""
        if not isinstance(settings, dict):
            raise TypeError(f"token match settings must be a mapping, not {settings!r}")
        return cls(**{"query_tokens": settings.get("max_tokens", cls.max_tokens), **settings})


DEFAULT_TOKEN_MATCH = TokenMatch()  # what training computes
# what checkpoints whose config records no token match were trained with
LEGACY_TOKEN_MATCH = TokenMatch(candidates=20, max_tokens=48, query_tokens=48)


class LexicalFeatures:
    """Computes ``(n_sentences, N_FEATURES)`` features; per-document indexes are cached.

    Args:
        encoder: The sentence encoder whose token states give ``token_match``; without one,
            ``for_scan`` can only fill the columns before it.
        max_cached: Document indexes kept.
        token_match: How the token-match columns read the first pass (a checkpoint's own).
    """

    def __init__(
        self,
        encoder: SentenceEncoder | None = None,
        max_cached: int = 64,
        token_match: TokenMatch = DEFAULT_TOKEN_MATCH,
    ) -> None:
        self.indexes = SentenceIndexes(max_cached)
        self.encoder = encoder
        self.token_match = token_match
        self._tokens: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()  # (text, cut)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's pooled vector; its token states, from the same forward pass, wait in
        the token cache for ``token_match``."""
        if self.encoder is None:
            raise ValueError("encoding a query needs the sentence encoder")
        vector, tokens = self.encoder.vector_and_tokens(query, self.token_match.query_tokens)
        self._remember_tokens((query, self.token_match.query_tokens), tokens)
        return vector

    def first_stage(
        self,
        query: str,
        documents: Sequence[Document],
        vectors: np.ndarray,
        query_vector: np.ndarray,
    ) -> FirstStage:
        """The query's BM25 and dense rankings over ``documents`` read as one sequence (BM25
        statistics are those of the whole sequence, as the scanner reads it)."""
        return FirstStage.run(query, self.indexes(documents), vectors, query_vector)

    def for_scan(
        self,
        query: str,
        documents: Sequence[Document],
        vectors: np.ndarray,
        query_vector: np.ndarray,
        read: Sequence[int] = FEATURE_COLUMNS,
    ) -> np.ndarray:
        """``first_stage`` then ``columns``: every feature column of a query."""
        first = self.first_stage(query, documents, vectors, query_vector)
        return self.columns(first, documents, vectors, query_vector, read)

    def columns(
        self,
        first: FirstStage,
        documents: Sequence[Document],
        vectors: np.ndarray,
        query_vector: np.ndarray,
        read: Sequence[int] = FEATURE_COLUMNS,
    ) -> np.ndarray:
        """Every feature column, exactly as the scanner reads them; training and inference
        both come here, so the two cannot drift apart.

        Args:
            first: The query's first stage over ``documents``.
            vectors: ``(n_sentences, d)`` sentence vectors of ``documents``, in order.
            query_vector: ``(d,)``.
            read: The columns the caller reads (``feature_columns`` of a checkpoint's
                config); the costly ones (token match, query parts) are left at 0 when unread.

        Raises:
            ValueError: the token-match columns are read but no encoder was given.
        """
        features = np.zeros((first.index.size, N_FEATURES), dtype=np.float32)
        if not len(features):
            return features
        self._add_text_columns(features, first)
        add_paragraph_features(features, vectors, query_vector)
        first_pass = first.order()
        self._add_feedback(features, first, documents, vectors, first_pass)
        if FEATURE_NAMES.index("token_match") in read:
            self._add_token_match(features, first.query, documents, first_pass)
        if FEATURE_NAMES.index("query_part_bm25") in read:
            self._add_query_parts(features, first, vectors)
        features[:, FEATURE_NAMES.index("window_dense_rank")] = window_dense_rank(
            vectors, query_vector, first.index.words, first.index.document_bounds
        )
        return features

    def _add_query_parts(
        self, features: np.ndarray, first: FirstStage, vectors: np.ndarray
    ) -> None:
        """Fill ``query_part_bm25`` and ``query_part_dense_rank``: the query read sentence by
        sentence.

        A prompt often asks its question after an instruction ("Review the statements
        above ... What is the Basic EPS of X?"). Scored as one text, the longer instruction
        outweighs the question in BM25 and in the pooled vector, and the evidence of the
        question ranks below boilerplate that matches the instruction. Scored part by part,
        a sentence is as high as the query part it answers best. A one-sentence query's
        columns equal ``bm25_over_max`` and ``dense_rank``.
        """
        bm25_column = FEATURE_NAMES.index("query_part_bm25")
        dense_column = FEATURE_NAMES.index("query_part_dense_rank")
        parts = query_parts(first.query)
        if len(parts) < 2:
            features[:, bm25_column] = features[:, FEATURE_NAMES.index("bm25_over_max")]
            features[:, dense_column] = first.dense_rank
            return
        if self.encoder is None:
            raise ValueError("the query_part features need the sentence encoder")
        part_vectors = self.encoder.encode(parts)
        for part, vector in zip(parts, part_vectors, strict=True):
            scores = first.index.lexical(part)
            if scores.max() > 0:
                features[:, bm25_column] = np.maximum(
                    features[:, bm25_column], scores / scores.max()
                )
            features[:, dense_column] = np.maximum(
                features[:, dense_column], rank_feature(vectors @ vector)
            )

    @staticmethod
    def _add_text_columns(features: np.ndarray, first: FirstStage) -> None:
        """The first stage's columns, query coverage and the structure columns."""
        features[:, 3:6] = first.index.structure
        features[:, FEATURE_NAMES.index("bm25_rank")] = first.bm25_rank
        features[:, FEATURE_NAMES.index("dense_rank")] = first.dense_rank
        best = first.bm25.max()
        if best > 0:
            features[:, FEATURE_NAMES.index("bm25_over_max")] = first.bm25 / best
        query_terms = list(dict.fromkeys(tokenize([first.query])[0]))
        presence = _TermPresence(first.index.bm25)
        coverage = FEATURE_NAMES.index("query_coverage")
        for term in first.index.known_terms(first.query):
            features[:, coverage] += presence.of(term)
        if query_terms:
            features[:, coverage] /= len(query_terms)

    def _add_token_match(
        self,
        features: np.ndarray,
        query: str,
        documents: Sequence[Document],
        first_pass: np.ndarray,
    ) -> None:
        """Fill ``token_match`` and ``token_match_rank`` for the first pass's best sentences.

        Among close candidates, BM25 counts shared words and the dense cosine compares
        whole-sentence averages; neither checks that each word of the question finds its
        counterpart ("invaded" ~ "invasion", "year" ~ "1066"). MaxSim does: the mean over
        query tokens of the best cosine with any sentence token. Only a few candidates are
        encoded, so a re-query stays cheap.
        """
        top = np.sort(first_pass[: self.token_match.candidates])
        texts = SentencePositions(documents).texts(top)
        query_tokens = self._token_vectors([query], self.token_match.query_tokens)[0]
        candidates = self._token_vectors(texts, self.token_match.max_tokens)
        match = np.array([max_sim(query_tokens, tokens) for tokens in candidates])
        features[top, FEATURE_NAMES.index("token_match")] = match
        features[top, FEATURE_NAMES.index("token_match_rank")] = rank_feature(match)

    def _token_vectors(self, texts: list[str], max_tokens: int) -> list[np.ndarray]:
        """Token states of ``texts`` cut to ``max_tokens``, each encoded once while it stays
        in the cache."""
        if self.encoder is None:
            raise ValueError("the token_match features need the sentence encoder")
        missing = list(dict.fromkeys(t for t in texts if (t, max_tokens) not in self._tokens))
        encoded = self.encoder.token_vectors(missing, max_tokens)
        for text, tokens in zip(missing, encoded, strict=True):
            self._tokens[text, max_tokens] = tokens
        result = []
        for text in texts:
            self._tokens.move_to_end((text, max_tokens))
            result.append(self._tokens[text, max_tokens])
        self._trim_tokens()
        return result

    def _remember_tokens(self, key: tuple[str, int], tokens: np.ndarray) -> None:
        self._tokens[key] = tokens
        self._tokens.move_to_end(key)
        self._trim_tokens()

    def _trim_tokens(self) -> None:
        while len(self._tokens) > TOKEN_CACHE_SIZE:
            self._tokens.popitem(last=False)

    def _add_feedback(
        self,
        features: np.ndarray,
        first: FirstStage,
        documents: Sequence[Document],
        vectors: np.ndarray,
        first_pass: np.ndarray,
    ) -> None:
        """Fill the pseudo-relevance-feedback columns (``feedback_*``, ``*name*``) from the
        best sentences of ``first_pass`` (positions, best first: ``FirstStage.order``).

        Multi-hop evidence often shares no word with the question: it is about an entity
        that only the first hop names ("... starring Shirley Temple"). The best sentences of
        a lexical+dense first pass name it, so their terms that are not in the query, their
        mean vector and their capitalised names are a second query, scored over every
        sentence before the scan.
        """
        if not len(vectors):
            return
        top = np.sort(first_pass[:FEEDBACK_SENTENCES])
        index = first.index
        texts = SentencePositions(documents).texts(top)
        asked = set(tokenize([first.query])[0])
        fed_back = dict.fromkeys(t for terms in tokenize(texts) for t in terms if t not in asked)
        scores = index.scores([t for t in fed_back if t in index.bm25.vocab_dict])
        if scores.max() > 0:
            features[:, FEATURE_NAMES.index("feedback_bm25")] = scores / scores.max()
        centre = vectors[top].mean(axis=0)
        centre /= max(float(np.linalg.norm(centre)), 1e-12)
        features[:, FEATURE_NAMES.index("feedback_dense_rank")] = rank_feature(vectors @ centre)
        self._add_names(features, index, first.query, texts, asked)

    def _add_names(
        self,
        features: np.ndarray,
        index: SentenceIndex,
        query: str,
        fed_back_texts: list[str],
        asked: set[str],
    ) -> None:
        """Fill ``query_name_paragraph``, ``bridge_name`` and ``bridge_name_paragraph``.

        A bridge between two passages usually goes through a name: the second hop's
        paragraph is about the person, work or place the first hop mentions. Names match
        as all their content terms in one sentence, so "Shirley Temple" finds "Shirley
        Temple Black"; each name weighs by how few paragraphs mention it, so the subject of
        a whole book counts for little.
        """
        runs = paragraph_runs(features)
        presence = _TermPresence(index.bm25)
        bridges = [t for t in name_terms(fed_back_texts) if not set(t) <= asked]  # () is too
        in_query = presence.rarest_mention(name_terms([query]), runs)
        bridge = presence.rarest_mention(bridges, runs)
        features[:, FEATURE_NAMES.index("query_name_paragraph")] = paragraph_max(in_query, runs)
        features[:, FEATURE_NAMES.index("bridge_name")] = bridge
        features[:, FEATURE_NAMES.index("bridge_name_paragraph")] = paragraph_max(bridge, runs)


def query_parts(query: str) -> list[str]:
    """The query's sentences, or ``MAX_QUERY_PARTS`` runs of consecutive sentences when it
    has more (a pasted page stays a few encoder calls and still covers the whole query)."""
    spans = segment(query)[0]
    if len(spans) > MAX_QUERY_PARTS:
        runs = np.array_split(np.arange(len(spans)), MAX_QUERY_PARTS)
        spans = np.array([[spans[run[0], 0], spans[run[-1], 1]] for run in runs])
    return [query[start:end] for start, end in spans.tolist()]


def max_sim(query: np.ndarray, sentence: np.ndarray) -> float:
    """Late interaction of unit token vectors ``(q, d)`` and ``(s, d)``: the mean over query
    tokens of their best cosine in the sentence (0 when either has no token)."""
    if not len(query) or not len(sentence):
        return 0.0
    return float((query @ sentence.T).max(axis=1).mean())


def add_paragraph_features(features: np.ndarray, vectors: np.ndarray, query: np.ndarray) -> None:
    """Fill ``paragraph_bm25`` and ``paragraph_dense_rank``: a sentence that says little on
    its own ("He was born there.") is evidence when its paragraph matches the question, as
    chunk retrievers know; these columns give the scanner that signal at every step."""
    if not len(vectors):
        return
    runs = paragraph_runs(features)
    starts, sizes = runs
    bm25 = features[:, FEATURE_NAMES.index("bm25_over_max")]
    features[:, FEATURE_NAMES.index("paragraph_bm25")] = paragraph_max(bm25, runs)
    means = unit_rows(np.add.reduceat(vectors, starts, axis=0))
    paragraph_rank = rank_feature(means @ query)
    features[:, FEATURE_NAMES.index("paragraph_dense_rank")] = np.repeat(paragraph_rank, sizes)


def window_dense_rank(
    vectors: np.ndarray,
    query: np.ndarray,
    words: np.ndarray,
    document_bounds: np.ndarray,
    width: int = WINDOW_WORDS,
) -> np.ndarray:
    """Rank of the query's cosine with each unit's neighbourhood: the mean vector of the
    units that lie within ``width / 2`` words of it, in its own document.

    A filing states a figure in a terse row ("Basic and diluted ... $ (0.12)") whose
    meaning is in the rows and lines around it, and a line-per-row table gives every row a
    paragraph of its own, so ``paragraph_dense_rank`` reads the row alone. A chunk
    retriever reads the neighbourhood; this column gives the scanner the same signal for
    every unit, with no chunk boundary to fall on.

    Args:
        vectors: ``(n, d)`` unit vectors of the sequence.
        words: ``(n,)`` words of each unit.
        document_bounds: ``(documents + 1,)`` each document's first unit, then ``n``.
    """
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    ends = np.cumsum(words)
    starts = ends - words
    first = np.searchsorted(ends, starts - width / 2, side="right")
    stop = np.searchsorted(starts, ends + width / 2, side="left")
    document = np.searchsorted(document_bounds, np.arange(len(vectors)), side="right") - 1
    first = np.maximum(first, document_bounds[document])
    stop = np.minimum(stop, document_bounds[document + 1])
    cosines = np.empty(len(vectors))
    for begin in range(0, len(vectors), WINDOW_BLOCK):  # float64 sums of a block at a time
        end = min(begin + WINDOW_BLOCK, len(vectors))
        low, high = first[begin:end].min(), stop[begin:end].max()
        sums = np.zeros((high - low + 1, vectors.shape[1]))
        np.cumsum(vectors[low:high], axis=0, out=sums[1:])
        windows = sums[stop[begin:end] - low] - sums[first[begin:end] - low]
        norms = np.maximum(np.linalg.norm(windows, axis=1), 1e-12)
        cosines[begin:end] = windows @ query / norms
    return rank_feature(cosines)


ParagraphRuns = tuple[np.ndarray, np.ndarray]  # first sentence of each paragraph, its size


def paragraph_runs(features: np.ndarray) -> ParagraphRuns:
    """The paragraphs of a non-empty sequence, from its ``paragraph_start`` column."""
    starts = np.flatnonzero(features[:, FEATURE_NAMES.index("paragraph_start")])
    if not len(starts) or starts[0] != 0:  # every document's first sentence starts a paragraph
        starts = np.r_[0, starts]
    return starts, np.diff(np.r_[starts, len(features)])


def paragraph_max(values: np.ndarray, runs: ParagraphRuns) -> np.ndarray:
    """Every sentence gets the largest value of its paragraph."""
    starts, sizes = runs
    return np.repeat(np.maximum.reduceat(values, starts), sizes)


def capitalised_names(text: str) -> list[str]:
    """Runs of capitalised words ("Androscoggin Bank Colisée", "Bank of England").

    A lower-case linking word (``NAME_LINKS``) joins a run only when a capitalised word
    follows it; punctuation, a line break or any other word ends the run. Leading stop words
    go ("The Bank of England", "Did Alice Smith"), and one capitalised word that opens a
    sentence ("Ships sail ...") is grammar, not a name.
    """
    names: list[str] = []
    run: list[str] = []
    links: list[str] = []
    opens_sentence = False
    previous_end = 0

    def close() -> None:
        content = list(dropwhile(lambda word: word.lower() in NAME_STOP_WORDS, run))
        stripped = len(content) < len(run)
        if len(content) > 1 or (content and (stripped or not opens_sentence)):
            names.append(" ".join(content))
        run.clear()
        links.clear()

    for match in _NAME_WORD.finditer(text):
        word, gap = match.group(), text[previous_end : match.start()]
        sentence_start = previous_end == 0 or "\n" in gap or any(c in gap for c in ".!?:")
        previous_end = match.end()
        if run and (gap.strip() or "\n" in gap):
            close()
        if word[0].isupper():
            if not run:
                opens_sentence = sentence_start
            run.extend([*links, word])
            links.clear()
        elif run and word in NAME_LINKS:
            links.append(word)
        elif run:
            close()
    close()
    return names


def name_terms(texts: Iterable[str]) -> list[tuple[str, ...]]:
    """The distinct names of ``texts`` (at most ``MAX_NAMES``) as their BM25 content terms;
    a name of stop words only ("The", "Who") has none."""
    names = list(dict.fromkeys(name for text in texts for name in capitalised_names(text)))
    names = names[:MAX_NAMES]
    return list(dict.fromkeys(tuple(terms) for terms in tokenize(names))) if names else []


class _TermPresence:
    """Which sentences hold a term (BM25 idf is positive, so a score > 0 means present),
    looked up once per term and query."""

    def __init__(self, bm25: Any) -> None:
        self.bm25 = bm25
        self._seen: dict[str, np.ndarray] = {}

    def of(self, term: str) -> np.ndarray:
        if term not in self._seen:
            self._seen[term] = np.asarray(self.bm25.get_scores([term])) > 0
        return self._seen[term]

    def rarest_mention(self, names: Sequence[tuple[str, ...]], runs: ParagraphRuns) -> np.ndarray:
        """Per sentence, the largest rarity ``log((P + 1) / p) / log(P + 1)`` of the names it
        mentions (all of a name's terms), p of the P paragraphs mentioning that name."""
        best = np.zeros(int(runs[1].sum()), dtype=np.float32)
        total = len(runs[0])
        for terms in names:
            if not terms or any(t not in self.bm25.vocab_dict for t in terms):
                continue
            mentions = np.logical_and.reduce([self.of(t) for t in terms])
            paragraphs = int(np.count_nonzero(np.maximum.reduceat(mentions, runs[0])))
            if paragraphs:
                rarity = np.log((total + 1) / paragraphs) / np.log(total + 1)
                np.maximum(best, np.where(mentions, rarity, 0), out=best)
        return best
