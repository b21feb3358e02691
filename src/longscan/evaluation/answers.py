"""Evidence *use*: scores of generated answers, deterministic and LLM-judged.

Deterministic scores follow LongBench/SQuAD normalisation (lowercase, no punctuation, no
articles, single spaces): token F1, exact match, SubEM (a gold answer inside the
prediction, as the in-context-retrieval paper scores) and multiple-choice accuracy.

Judges follow the seed papers: SPScanner's yes/no (free-form and multiple-choice prompts),
Loong's 1-100 ``[[score]]``, EMB-S's 0-5. A judge output that cannot be parsed is a
*failure*, counted and reported, never turned into a score.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from longscan.answering.llm import LLMClient
from longscan.answering.prompts import (
    JUDGE_EMBS,
    JUDGE_FREE_FORM,
    JUDGE_LOONG,
    JUDGE_MULTIPLE_CHOICE,
    Prompt,
)

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_for_scoring(text: str) -> str:
    """LongBench/SQuAD answer normalisation."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION))
    return " ".join(text.split())


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """The best token-level F1 of the prediction against any gold answer."""
    predicted = normalize_for_scoring(prediction).split()
    best = 0.0
    for answer in answers:
        gold = normalize_for_scoring(answer).split()
        common = sum((Counter(predicted) & Counter(gold)).values())
        if common:
            precision, recall = common / len(predicted), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    predicted = normalize_for_scoring(prediction)
    return float(any(predicted == normalize_for_scoring(a) for a in answers))


def sub_em(prediction: str, answers: Sequence[str]) -> float:
    """1 when some normalised gold answer occurs in the normalised prediction."""
    predicted = normalize_for_scoring(prediction)
    return float(any(g and g in predicted for g in map(normalize_for_scoring, answers)))


def part_recall(prediction: str, parts: Sequence[Sequence[str]]) -> float:
    """The share of a reference's parts (each given as its accepted wordings) that the
    prediction names, each part matched as ``sub_em`` matches: a Loong answer lists
    companies or papers, and one JSON string of them is never a substring of a reply."""
    if not parts:
        raise ValueError("a reference with no parts has no part recall")
    return sum(sub_em(prediction, wordings) for wordings in parts) / len(parts)


_CHOICE = re.compile(r"(?<![A-Za-z])([A-E])(?![A-Za-z])")
_ANSWER_IS = re.compile(
    r"[Aa]nswer\s*(?:is|:)?\s*\(?([A-E](?:\s*(?:,|and|&)?\s*[A-E])*)\)?(?![A-Za-z])"
)
_LETTERS_ONLY = re.compile(r"\W*([A-E]{1,5})\W*")


def extract_choices(text: str) -> frozenset[str] | None:
    """Option letters an answer picks: after "answer is"/"answer:" when present; else a
    first line that is only letters ("ABD", "(C)"); else the standalone capitals A-E of the
    first line. None when there are none."""
    stated = _ANSWER_IS.search(text)
    if stated:
        return frozenset(re.sub(r"[^A-E]", "", stated.group(1)))
    first = (text.strip().splitlines() or [""])[0]
    whole = _LETTERS_ONLY.fullmatch(first)
    letters = frozenset(whole.group(1) if whole else _CHOICE.findall(first))
    return letters or None


def choice_accuracy(prediction: str, gold: str) -> float:
    """1 when the prediction picks exactly the gold letters (``"C"`` or ``"ABD"``)."""
    return float(extract_choices(prediction) == frozenset(gold.strip().upper()))


# ------------------------------------------------------------------------------ judges

_YES_NO = re.compile(r"\b(yes|no)\b", re.I)
_LOONG_SCORE = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")
_EMBS_SCORE = re.compile(r"score\s*[:=]?\s*\**\s*(\d+(?:\.\d+)?)(?:\s*/\s*5)?", re.I)


def parse_yes_no(text: str) -> float | None:
    """1.0 for yes, 0.0 for no, None when the verdict is missing or both words appear
    before any other word settles it (``"yes and no"``)."""
    words = [w.lower() for w in _YES_NO.findall(text)]
    if not words:
        return None
    first_line = [w.lower() for w in _YES_NO.findall(text.strip().splitlines()[0])]
    verdicts = set(first_line or words)
    return float(verdicts == {"yes"}) if len(verdicts) == 1 else None


def parse_loong_score(text: str) -> float | None:
    """The first ``[[n]]`` with 1 <= n <= 100, as Loong reads its judge."""
    match = _LOONG_SCORE.search(text)
    if not match:
        return None
    value = float(match.group(1))
    return value if 1 <= value <= 100 else None


def parse_embs_score(text: str) -> float | None:
    """``Score: n`` (optionally ``n/5``) with 0 <= n <= 5; else a reply that is one digit."""
    match = _EMBS_SCORE.search(text) or re.fullmatch(r"\s*(\d)\s*\.?\s*", text)
    if not match:
        return None
    value = float(match.group(1))
    return value if 0 <= value <= 5 else None


@dataclass(frozen=True)
class Verdict:
    score: float | None  # None: the judge's output could not be parsed
    raw: str


@dataclass(frozen=True)
class JudgeKind:
    name: str
    prompt: Prompt
    parse: Callable[[str], float | None]
    max_tokens: int


JUDGES = {
    "yes-no": JudgeKind("yes-no", JUDGE_FREE_FORM, parse_yes_no, 8),
    "yes-no-mc": JudgeKind("yes-no-mc", JUDGE_MULTIPLE_CHOICE, parse_yes_no, 8),
    "loong": JudgeKind("loong", JUDGE_LOONG, parse_loong_score, 256),
    "embs": JudgeKind("embs", JUDGE_EMBS, parse_embs_score, 64),
}


def judge_answers(
    client: LLMClient,
    kind: str,
    questions: Sequence[str],
    references: Sequence[str],
    answers: Sequence[str],
) -> list[Verdict]:
    """One verdict per answer from the judge ``kind`` (a key of ``JUDGES``)."""
    judge = JUDGES[kind]
    requests = [
        judge.prompt.messages(question=q, reference=r, answer=a)
        for q, r, a in zip(questions, references, answers, strict=True)
    ]
    completions = client.chat_many(requests, max_tokens=judge.max_tokens, desc=f"judge {kind}")
    return [Verdict(judge.parse(c.text), c.text) for c in completions]


def summarize_verdicts(verdicts: Sequence[Verdict], perfect: float | None = None) -> dict:
    """Mean over parsed verdicts, the parse-failure rate and (Loong) the perfect rate."""
    parsed = [v.score for v in verdicts if v.score is not None]
    summary = {
        "n": len(verdicts),
        "parsed": len(parsed),
        "parse_failure_rate": (len(verdicts) - len(parsed)) / len(verdicts) if verdicts else 0.0,
        "mean": sum(parsed) / len(parsed) if parsed else None,
    }
    if perfect is not None:
        summary["perfect_rate"] = (
            sum(score >= perfect for score in parsed) / len(parsed) if parsed else None
        )
    return summary
