"""Synthetic questions that name the filer, so the reader learns that a name is not an answer.

Users ask about a company by name ("What were Tesla's total revenues in 2024?"), but the
question writer, shown one chunk of one filing, rarely names its filer. A scanner trained
only on such questions ranks every line that matches the question's words: for a named
question, the filing's bare name lines ("TESLA, INC.", above each statement) come before
the row that answers. A copy of an example whose question names the filer, with the same
labels, teaches the opposite: the name picks the filing; the labelled line still answers.

The filer is the name an SEC filing's cover page gives above "(Exact name of registrant as
specified in its charter)"; a source without such a cover (a contract, a risk-factor
section, a prospectus) gives no named copy.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from longscan.readers.files import read_file
from longscan.scanning.features import ENGLISH_STOP_WORDS
from longscan.training.synthetic_examples import SyntheticExample, train_docs

COVER_WINDOW = 20_000  # characters: the cover page comes first
MAX_NAME_CHARS = 80
NAMED_SUFFIX = "~named"

_REGISTRANT = re.compile(
    r"([^\n]*\S)[ \t\xa0]*\n(?:[ \t\xa0]*\n)*[ \t\xa0]*\(exact name of registrant", re.IGNORECASE
)
_FORMS = (
    "For {name}, {lowered}",
    "{bare} of {name}?",
    "{name}: {question}",
)


def filer_name(text: str) -> str | None:
    """The registrant's name on a filing's cover page, spaces collapsed; None without one."""
    match = _REGISTRANT.search(text[:COVER_WINDOW])
    if match is None:
        return None
    name = " ".join(match.group(1).split())
    if len(name) > MAX_NAME_CHARS or not re.search(r"[A-Za-z]{2}", name):
        return None
    return name


def naming(question: str, name: str, key: str) -> str:
    """``question`` naming ``name``, in one of three phrasings chosen by a hash of ``key``."""
    question = question.strip()
    form = _FORMS[hashlib.sha256(key.encode()).digest()[0] % len(_FORMS)]
    bare = question.rstrip(" ?.")
    if "{bare}" in form and bare == question.rstrip():  # not a question: name it in front
        form = _FORMS[2]
    lowered = question[:1].lower() + question[1:] if question[1:2].islower() else question
    return form.format(name=name, question=question, bare=bare, lowered=lowered)


def named_copies(
    examples: Iterable[SyntheticExample], sources: Path | None = None
) -> tuple[list[SyntheticExample], int]:
    """A copy of each example whose source (a path under ``sources``, default the reference
    data's ``train-docs/``) has a filer name that its question lacks, the copy's question
    naming the filer and its id ending in ``~named``. Returns the copies and how many
    examples had no filer to name."""
    names = Filers(sources)
    copies, unnamed = [], 0
    for example in examples:
        name = names.of(example)
        if name is None:
            unnamed += 1
            continue
        if name.casefold() in example.question.casefold():
            continue  # the writer named it already
        copies.append(
            replace(
                example,
                id=example.id + NAMED_SUFFIX,
                question=naming(example.question, name, example.id),
            )
        )
    return copies, unnamed


@functools.cache
def _filer_of_file(path: Path) -> str | None:
    """A source file's filer name, its cover page read once per process: naming the copies
    and choosing the other filers beside them both ask."""
    return filer_name(read_file(path).text) if path.is_file() else None


class Filers:
    """Each example's filer name, read from its source under ``sources`` (default the
    reference data's ``train-docs/``)."""

    def __init__(self, sources: Path | None = None) -> None:
        self.root = sources or train_docs()

    def of(self, example: SyntheticExample) -> str | None:
        return _filer_of_file(self.root / example.source_id)


_WORD = re.compile(r"[a-z0-9]+")


def _same(name: str | None) -> str:
    """A filer's name as compared: one filer's covers differ in spaces and case."""
    return "".join((name or "").split()).casefold()


def content_words(text: str, leave_out: str = "") -> set[str]:
    """Lower-case words of ``text`` but stop words and the words of ``leave_out``."""
    left_out = set(_WORD.findall(leave_out.lower()))
    return {w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOP_WORDS} - left_out


def other_filers(
    copies: Sequence[SyntheticExample],
    pool: Iterable[SyntheticExample],
    among: int,
    sources: Path | None = None,
) -> dict[str, list[SyntheticExample]]:
    """For each named copy, ``among`` examples of ``pool`` over other filers' filings, to be
    read beside it as a collection of filings is read: a user names the company because
    several reports are open. Chosen are those whose questions share the most words with the
    copy's (ties broken by a hash), so their spans likely state the same figure for another
    company, and only the name tells the labelled line from theirs."""
    names = Filers(sources)
    candidates = [(e, _same(names.of(e)), content_words(e.question)) for e in pool]
    candidates = [(e, name, words) for e, name, words in candidates if name]
    chosen: dict[str, list[SyntheticExample]] = {}
    for copy in copies:
        name = names.of(copy)
        words, own = content_words(copy.question, leave_out=name or ""), _same(name)
        ranked = sorted(
            (
                -len(words & other_words),
                hashlib.sha256(f"{copy.id} {other.id}".encode()).digest(),  # ties
                index,
            )
            for index, (other, other_name, other_words) in enumerate(candidates)
            if other_name != own
        )
        chosen[copy.id] = [candidates[index][0] for _, _, index in ranked[:among]]
    return chosen
