"""Pseudo-relevance feedback: what the first pass's best sentences point at.

Multi-hop evidence often shares no word with the question: it is about an entity that only
the first hop names ("... starring Shirley Temple"). The best sentences of a lexical + dense
first pass name it, so their terms that are not in the query, their mean vector and their
capitalised names are a second query, scored over every sentence before the scan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from importlib import resources
from itertools import dropwhile

import numpy as np

from longscan.lexical.bm25 import tokenize
from longscan.scanning.features.base import Columns, FeatureInputs, FeaturePart
from longscan.scanning.features.lexical import TermPresence
from longscan.scanning.features.paragraphs import ParagraphRuns, paragraph_max, paragraph_runs
from longscan.scanning.first_stage import rank_feature

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


def feedback(inputs: FeatureInputs, columns: Columns) -> None:
    """The fed-back sentences' new terms (BM25) and mean vector (dense rank)."""
    index = inputs.first.index
    fed_back = dict.fromkeys(
        t for terms in tokenize(inputs.fed_back_texts) for t in terms if t not in inputs.asked
    )
    scores = index.scores([t for t in fed_back if t in index.bm25.vocab_dict])
    if scores.max() > 0:
        columns["feedback_bm25"] = scores / scores.max()
    centre = inputs.vectors[inputs.fed_back].mean(axis=0)
    centre /= max(float(np.linalg.norm(centre)), 1e-12)
    columns["feedback_dense_rank"] = rank_feature(inputs.vectors @ centre)


def names(inputs: FeatureInputs, columns: Columns) -> None:
    """A bridge between two passages usually goes through a name: the second hop's
    paragraph is about the person, work or place the first hop mentions. Names match as
    all their content terms in one sentence, so "Shirley Temple" finds "Shirley Temple
    Black"; each name weighs by how few paragraphs mention it, so the subject of a whole
    book counts for little."""
    runs = paragraph_runs(columns.array)
    presence = TermPresence(inputs.first.index.bm25)
    fed_back = name_terms(inputs.fed_back_texts)
    bridges = [t for t in fed_back if not set(t) <= inputs.asked]  # () is a subset too
    in_query = rarest_mention(presence, name_terms([inputs.first.query]), runs)
    bridge = rarest_mention(presence, bridges, runs)
    columns["query_name_paragraph"] = paragraph_max(in_query, runs)
    columns["bridge_name"] = bridge
    columns["bridge_name_paragraph"] = paragraph_max(bridge, runs)


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


def rarest_mention(
    presence: TermPresence, names: Sequence[tuple[str, ...]], runs: ParagraphRuns
) -> np.ndarray:
    """Per sentence, the largest rarity ``log((P + 1) / p) / log(P + 1)`` of the names it
    mentions (all of a name's terms), p of the P paragraphs mentioning that name."""
    best = np.zeros(int(runs[1].sum()), dtype=np.float32)
    total = len(runs[0])
    for terms in names:
        if not terms or any(t not in presence.bm25.vocab_dict for t in terms):
            continue
        mentions = np.logical_and.reduce([presence.of(t) for t in terms])
        paragraphs = int(np.count_nonzero(np.maximum.reduceat(mentions, runs[0])))
        if paragraphs:
            rarity = np.log((total + 1) / paragraphs) / np.log(total + 1)
            np.maximum(best, np.where(mentions, rarity, 0), out=best)
    return best


FEEDBACK = FeaturePart(
    "feedback",
    ("feedback_bm25", "feedback_dense_rank"),
    "the first pass's best sentences, their terms and vectors",
    feedback,
)
NAMES = FeaturePart(
    "names",
    ("query_name_paragraph", "bridge_name", "bridge_name_paragraph"),
    "the capitalised names of the query and of the first pass's best sentences",
    names,
)
