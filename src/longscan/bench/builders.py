"""Long-document benchmarks (and training sets) built from the reference datasets.

Short-context QA data becomes long-document QA by surrounding each question's evidence with
real distractor text from the *same split*: whole SQuAD articles, or paragraphs of other
HotpotQA/MuSiQue questions. Gold evidence is mapped to exact character spans while the text
is assembled, so ``document.text[start:end]`` is always the evidence.

Every builder is deterministic: randomness comes from one ``random.Random(seed)``, and splits
from a hash of the article title or question id (``split_of``), which does not depend on the
sampling seed, so a training set built with any seed never holds an evaluation article or
question.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from longscan.bench.datasets import (
    SPLITS,
    MultiHopParagraph,
    MultiHopQuestion,
    Split,
    SquadArticle,
    SquadParagraph,
    load_hotpotqa,
    load_leval,
    load_loong,
    load_musique,
    load_squad,
    stable_id,
)
from longscan.documents import Document
from longscan.items import GoldSpan, QAItem
from longscan.segment import count_words

DEFAULT_TARGET_WORDS = 20_000
DEFAULT_QUESTIONS_PER_DOC = 20
# An even split leaves both sides enough text to fill long documents from small samples.
DEFAULT_DEV_FRACTION = 0.5
# SQuAD's dev split must hold a single >= 50k-word document (the scanner's long-document
# bar); on the 36-article sample a 0.55 hash split gives 12 dev articles (57k words).
SQUAD_DEV_FRACTION = 0.55
SEPARATOR = "\n\n"  # a blank line: the paragraph break the segmenter recognises

MultiHopDataset = Literal["hotpotqa", "musique"]
MultiHopMode = Literal["long", "collection"]


def split_of(key: str, dev_fraction: float, seed: int = 0) -> Split:
    """The split of an article title or question id: a stable hash, not ``hash()``.

    Python's ``hash`` of a string changes with every process, which would move items between
    train and dev from one run to the next.

    Raises:
        ValueError: ``dev_fraction`` is outside ``[0, 1]``.
    """
    if not 0.0 <= dev_fraction <= 1.0:
        raise ValueError(f"dev_fraction must be in [0, 1], got {dev_fraction}")
    digest = hashlib.sha256(f"{seed}\x1f{key}".encode("utf-8", "surrogatepass")).digest()
    return "dev" if int.from_bytes(digest[:8], "big") < dev_fraction * 2**64 else "train"


def check_split(split: str) -> None:
    """Reject a split name outside ``SPLITS`` (shared with the named-benchmark catalogue)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {SPLITS}")


def _check_positive(**values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")


def _join(pieces: Sequence[str]) -> tuple[str, list[int]]:
    """``SEPARATOR.join(pieces)`` and the start offset of every piece in it."""
    starts, position = [], 0
    for piece in pieces:
        starts.append(position)
        position += len(piece) + len(SEPARATOR)
    return SEPARATOR.join(pieces), starts


def _positions(spans: Sequence[GoldSpan], length: int) -> list[float]:
    """Relative start of each gold span (0 = first character, towards 1 = the end), so
    reports can break recall down by where the evidence sits in a long document."""
    return [span.start / length for span in spans]


# --------------------------------------------------------------------------------- SQuAD long


def squad_articles(
    split: Split,
    dev_fraction: float = SQUAD_DEV_FRACTION,
    split_seed: int = 0,
    data_dir: str | Path | None = None,
) -> list[SquadArticle]:
    """The SQuAD articles of one split (split by title, so an article never crosses)."""
    check_split(split)
    return [
        article
        for article in load_squad(data_dir)
        if split_of(article.title, dev_fraction, split_seed) == split
    ]


def _squad_groups(
    articles: Sequence[SquadArticle], target_words: int, rng: random.Random
) -> Iterator[list[tuple[SquadArticle, SquadParagraph]]]:
    """One pass over the articles in random order, cut into runs of whole paragraphs of at
    least ``target_words`` (counting title lines); a trailing short run is dropped."""
    order = list(articles)
    rng.shuffle(order)
    group: list[tuple[SquadArticle, SquadParagraph]] = []
    words = 0
    for article in order:
        for paragraph in article.paragraphs:
            if not group or group[-1][0] is not article:
                words += count_words(article.heading)
            group.append((article, paragraph))
            words += paragraph.words
            if words >= target_words:
                yield group
                group, words = [], 0


def _squad_document(
    group: Sequence[tuple[SquadArticle, SquadParagraph]], doc_id: str
) -> tuple[Document, list[int]]:
    """The concatenated text (a title line starts each article's run of paragraphs) and the
    start offset of every paragraph in it."""
    pieces: list[str] = []
    paragraph_piece: list[int] = []
    for index, (article, paragraph) in enumerate(group):
        if index == 0 or group[index - 1][0] is not article:
            pieces.append(article.heading)
        paragraph_piece.append(len(pieces))
        pieces.append(paragraph.context)
    text, starts = _join(pieces)
    titles = list(dict.fromkeys(article.title for article, _ in group))
    document = Document(id=doc_id, text=text, metadata={"articles": titles})
    return document, [starts[piece] for piece in paragraph_piece]


def _squad_items(
    group: Sequence[tuple[SquadArticle, SquadParagraph]],
    doc_id: str,
    questions_per_doc: int,
    used: set[str],
    rng: random.Random,
    metadata: dict[str, Any],
) -> list[QAItem]:
    """Items for up to ``questions_per_doc`` questions (not used before) of the group."""
    candidates = [
        (index, question)
        for index, (_, paragraph) in enumerate(group)
        for question in paragraph.questions
        if question.id not in used
    ]
    if not candidates:
        return []
    document, offsets = _squad_document(group, doc_id)
    words = count_words(document.text)
    items = []
    for index, question in rng.sample(candidates, min(questions_per_doc, len(candidates))):
        used.add(question.id)
        offset = offsets[index]
        spans = list(
            dict.fromkeys(
                GoldSpan(doc_id, offset + start, offset + start + len(text))
                for text, start in question.answers
            )
        )
        items.append(
            QAItem(
                id=f"{doc_id}/{question.id}",
                query=question.question,
                documents=[document],
                gold_spans=spans,
                answers=list(dict.fromkeys(text for text, _ in question.answers)),
                metadata={
                    **metadata,
                    "question_id": question.id,
                    "title": group[index][0].title,
                    "total_words": words,
                    "gold_positions": _positions(spans, len(document.text)),
                },
            )
        )
    return items


def build_squad_long(
    split: Split = "dev",
    target_words: int = DEFAULT_TARGET_WORDS,
    max_items: int | None = None,
    seed: int = 0,
    data_dir: str | Path | None = None,
    *,
    questions_per_doc: int = DEFAULT_QUESTIONS_PER_DOC,
    dev_fraction: float = SQUAD_DEV_FRACTION,
    split_seed: int = 0,
) -> list[QAItem]:
    """Long single documents of whole SQuAD paragraphs, each with questions about it.

    Articles of one split are concatenated in random order, paragraph by paragraph, until a
    document holds ``target_words``; up to ``questions_per_doc`` of its questions become
    items, with every distinct answer span as gold. Each question is used at most once. With
    ``max_items`` set, further passes (new article orders, so new documents) continue until
    enough items exist or the questions run out; without it, one pass is made.

    Raises:
        ValueError: bad arguments, or the split holds fewer than ``target_words`` words.
    """
    _check_positive(
        target_words=target_words, questions_per_doc=questions_per_doc, max_items=max_items
    )
    articles = squad_articles(split, dev_fraction, split_seed, data_dir)
    rng = random.Random(seed)
    metadata = {
        "dataset": "squad",
        "benchmark": "squad-long",
        "split": split,
        "target_words": target_words,
    }
    used: set[str] = set()
    items: list[QAItem] = []
    documents = 0
    while True:
        before = len(items)
        for group in _squad_groups(articles, target_words, rng):
            doc_id = f"squad-long-{split}-{documents:04d}"
            documents += 1
            items.extend(_squad_items(group, doc_id, questions_per_doc, used, rng, metadata))
            if max_items is not None and len(items) >= max_items:
                return items[:max_items]
        if documents == 0:
            words = sum(p.words for article in articles for p in article.paragraphs)
            raise ValueError(
                f"the SQuAD {split} split holds {words:,} words, fewer than target_words="
                f"{target_words:,}; lower the target or change dev_fraction"
            )
        if max_items is None or len(items) == before:
            return items


# ---------------------------------------------------------------------------- multi-hop


def multihop_questions(
    dataset: MultiHopDataset,
    split: Split,
    dev_fraction: float | None = None,
    split_seed: int = 0,
    data_dir: str | Path | None = None,
    sentence_support: bool = False,
) -> list[MultiHopQuestion]:
    """The questions of one split, split by question id.

    HotpotQA has a train and a dev file: with ``dev_fraction=None`` the split names the
    file. With a fraction, both splits are carved out of the *train* file by ``split_of``,
    which leaves the official dev file untouched for final evaluation. MuSiQue has one file,
    always split by ``split_of`` (``dev_fraction=None`` means ``DEFAULT_DEV_FRACTION``);
    ``sentence_support`` gives it sentence-level gold (see ``read_musique``).
    """
    check_split(split)
    if dataset == "hotpotqa":
        if dev_fraction is None:
            return load_hotpotqa(data_dir, split)
        questions = load_hotpotqa(data_dir, "train")
    elif dataset == "musique":
        questions = load_musique(data_dir, sentence_support)
    else:
        raise ValueError(f"unknown multi-hop dataset {dataset!r}; choose hotpotqa or musique")
    fraction = DEFAULT_DEV_FRACTION if dev_fraction is None else dev_fraction
    return [q for q in questions if split_of(q.id, fraction, split_seed) == split]


class _Filler:
    """Draws distinct random paragraphs from the pool of a split's unique paragraphs.

    A partial Fisher-Yates shuffle over a persistent index array costs O(drawn) per
    question rather than O(pool), which keeps thousands of items over large pools fast.
    """

    def __init__(
        self,
        questions: Sequence[MultiHopQuestion],
        rng: random.Random,
        keep: Callable[[MultiHopParagraph], bool] | None = None,
    ) -> None:
        unique = {p.key: p for q in questions for p in q.paragraphs if keep is None or keep(p)}
        self.pool = list(unique.values())
        self.order = list(range(len(self.pool)))
        self.rng = rng

    def draw(self) -> Iterator[MultiHopParagraph]:
        order, size = self.order, len(self.order)
        for i in range(size):
            j = self.rng.randrange(i, size)
            order[i], order[j] = order[j], order[i]
            yield self.pool[order[i]]


def _mix(
    question: MultiHopQuestion,
    filler: _Filler,
    target_words: int,
    rng: random.Random,
    keep: Callable[[MultiHopParagraph], bool] | None = None,
) -> tuple[list[MultiHopParagraph], set[tuple[str, str]]]:
    """The question's own paragraphs plus other questions' paragraphs until ``target_words``,
    shuffled, with no paragraph twice; also the keys of the question's own paragraphs.
    Own distractors that ``keep`` rejects are left out (supporting ones always stay).

    Raises:
        ValueError: the split's paragraphs cannot fill ``target_words``.
    """
    own: dict[tuple[str, str], MultiHopParagraph] = {}
    for paragraph in question.paragraphs:  # a duplicate keeps the supporting copy
        if not paragraph.supporting and keep is not None and not keep(paragraph):
            continue
        if paragraph.key not in own or paragraph.supporting:
            own[paragraph.key] = paragraph
    chosen = list(own.values())
    words = sum(paragraph.words for paragraph in chosen)
    draws = filler.draw()
    while words < target_words:
        paragraph = next(draws, None)
        if paragraph is None:
            raise ValueError(
                f"the split's paragraphs hold too few words for target_words={target_words:,}"
            )
        if paragraph.key not in own:
            chosen.append(paragraph)
            words += paragraph.words
    rng.shuffle(chosen)
    return chosen, set(own)


def _collection_ids(paragraphs: Sequence[MultiHopParagraph]) -> list[str]:
    """Document ids: the title, plus a short content hash where a title repeats."""
    counts = Counter(paragraph.title for paragraph in paragraphs)
    return [
        p.title if counts[p.title] == 1 else f"{p.title} [{stable_id(p.title, p.text, length=8)}]"
        for p in paragraphs
    ]


def _multihop_item(
    question: MultiHopQuestion,
    paragraphs: Sequence[MultiHopParagraph],
    own: set[tuple[str, str]],
    item_id: str,
    mode: MultiHopMode,
    metadata: dict[str, Any],
) -> QAItem:
    """One item: the paragraphs as one document (``long``) or one document each."""
    gold = [p.key in own and p.supporting for p in paragraphs]
    metadata = {
        **metadata,
        **question.metadata,
        "question_id": question.id,
        "total_words": sum(p.words for p in paragraphs),
        "paragraphs": len(paragraphs),
        "own_paragraphs": len(own),
    }
    if mode == "long":
        text, starts = _join([p.text for p in paragraphs])
        spans = [
            GoldSpan(item_id, offset + start, offset + end)
            for p, offset, is_gold in zip(paragraphs, starts, gold, strict=True)
            if is_gold
            for start, end in p.support
        ]
        documents = [Document(id=item_id, text=text)]
        gold_doc_ids: list[str] = []
        metadata["gold_positions"] = _positions(spans, len(text))
    else:
        ids = _collection_ids(paragraphs)
        documents = [
            Document(id=doc_id, text=p.text, metadata={"title": p.title})
            for doc_id, p in zip(ids, paragraphs, strict=True)
        ]
        gold_doc_ids = [doc_id for doc_id, is_gold in zip(ids, gold, strict=True) if is_gold]
        spans = [
            GoldSpan(doc_id, start, end)
            for doc_id, p, is_gold in zip(ids, paragraphs, gold, strict=True)
            if is_gold
            for start, end in p.support
        ]
    return QAItem(
        id=item_id,
        query=question.question,
        documents=documents,
        gold_spans=spans,
        gold_doc_ids=gold_doc_ids,
        answers=list(question.answers),
        metadata=metadata,
    )


def build_multihop(
    dataset: MultiHopDataset,
    split: Split = "dev",
    target_words: int = DEFAULT_TARGET_WORDS,
    max_items: int | None = None,
    seed: int = 0,
    data_dir: str | Path | None = None,
    *,
    mode: MultiHopMode = "long",
    dev_fraction: float | None = None,
    split_seed: int = 0,
    keep: Callable[[MultiHopParagraph], bool] | None = None,
    sentence_support: bool = False,
) -> list[QAItem]:
    """One item per question (in random order): its paragraphs mixed with other questions'.

    Distractors come only from the same split's questions, so no evaluation paragraph set
    leaks into training; ``keep`` can reject more distractors (training uses it to leave
    out paragraphs that also occur in evaluation documents, since MuSiQue's questions share
    paragraphs across its train/dev split). ``mode="long"`` makes one document (paragraphs
    separated by blank lines, gold = supporting sentence or paragraph spans);
    ``mode="collection"`` makes one document per paragraph, with ``gold_doc_ids`` for
    document-level metrics. ``sentence_support`` labels MuSiQue's sentences that answer
    each hop instead of its whole supporting paragraphs (training; see ``read_musique``).

    Raises:
        ValueError: bad arguments, or too little text in the split for ``target_words``.
    """
    if mode not in ("long", "collection"):
        raise ValueError(f"unknown mode {mode!r}; choose long or collection")
    _check_positive(target_words=target_words, max_items=max_items)
    questions = multihop_questions(
        dataset, split, dev_fraction, split_seed, data_dir, sentence_support
    )
    rng = random.Random(seed)
    filler = _Filler(questions, rng, keep)
    order = list(questions)
    rng.shuffle(order)
    benchmark = f"{dataset}-{mode}"
    metadata = {
        "dataset": dataset,
        "benchmark": benchmark,
        "split": split,
        "target_words": target_words,
    }
    items = []
    for question in order[:max_items]:
        paragraphs, own = _mix(question, filler, target_words, rng, keep)
        item_id = f"{benchmark}/{question.id}"
        items.append(_multihop_item(question, paragraphs, own, item_id, mode, metadata))
    return items


# ------------------------------------------------------------------------- L-Eval and Loong


def build_leval(
    task: str = "coursera",
    max_items: int | None = None,
    data_dir: str | Path | None = None,
) -> list[QAItem]:
    """L-Eval items in file order: one document (the row's input) per item."""
    _check_positive(max_items=max_items)
    return load_leval(data_dir, task)[:max_items]


def build_loong(
    max_items: int | None = None,
    seed: int = 0,
    data_dir: str | Path | None = None,
    *,
    concatenate: bool = False,
) -> list[QAItem]:
    """Loong items in file order, documents shuffled as Loong does (unless ``shuffle_doc`` is
    false), as a collection or, with ``concatenate``, as one document whose parts (headers
    kept) are separated by blank lines; ``metadata["parts"]`` gives each part's span."""
    _check_positive(max_items=max_items)
    rng = random.Random(seed)
    items = []
    for item in load_loong(data_dir)[:max_items]:
        documents = list(item.documents)
        if item.metadata["shuffle_doc"]:
            rng.shuffle(documents)
        if not concatenate:
            items.append(replace(item, documents=documents))
            continue
        text, starts = _join([document.text for document in documents])
        parts = [
            {"id": document.id, "start": start, "end": start + len(document.text)}
            for document, start in zip(documents, starts, strict=True)
        ]
        items.append(
            replace(
                item,
                documents=[Document(id=item.id, text=text, metadata={"parts": parts})],
                metadata={**item.metadata, "parts": parts},
            )
        )
    return items
