"""A contract development split: questions about whole contracts kept out of training, with
the answer checked against the text.

Loong has no contracts, and the filings split asks about figures; a user reading a licence or
a supply agreement asks who may terminate, for how long a clause binds, which law governs.
This split is built from ``HELD_OUT_CONTRACTS``, contracts of ``train-docs/cuad`` that
training drops whole (``training.synthetic_examples``), so no scanner trained since reads a
line of them. Its questions are written once by an LLM and kept in
``contract_questions.jsonl`` beside this module (``benchmarks/contract_questions.py`` writes
them); this module only reads them and builds the items, so every run asks the same ones.

For each contract, passages of ``PASSAGE_SENTENCES`` numbered sentences spread over the text
are shown to the writer, which names a question, its short answer and the sentence that
answers it. A reply is kept only when (``checked_question``):

- the question ends with "?" and does not hold its answer;
- the answer is at most ``MAX_ANSWER_WORDS`` words and occurs in the sentence named, as
  written there (case and spacing aside);
- the answer occurs at most ``MAX_OCCURRENCES`` times in the whole contract, so the gold
  evidence is specific: "thirty (30) days" in a dozen clauses says nothing of which one a
  question means;
- a reader shown the same passage and the question alone answers it as the writer did
  (``answered_alike``, the round-trip check of synthetic QA data).

Each question is asked as written (``written``) and, where the writer's rewording passes the
rewording checks of ``training.reword``, in other words (``reworded``). Each item reads its
contract beside ``DISTRACTORS`` other held-out contracts; gold is every occurrence of the
answer in the contract asked about, so ``hit@B`` says whether the answer is within the first
B words of evidence.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscan.bench.datasets import data_path
from longscan.evaluation.answers import token_f1
from longscan.items import GoldSpan, QAItem
from longscan.readers.files import read_file
from longscan.segment import count_words, segment

CONTRACTS_DIR = "train-docs/cuad"
# The contracts of ``train-docs/cuad`` whose name's SHA-256 (its first 8 hex digits as a
# number) is 0 modulo 10: chosen by their names alone, before any question was written
HELD_OUT_CONTRACTS = (
    "AIRTECHINTERNATIONALGROUPINC_05_08_2000-EX-10.4-FRANCHISE_AGREEMENT.txt",
    "BLUEHILLSBANCORP_INC_05_20_2014-EX-1.1-AGENCY_AGREEMENT.txt",
    "FIBROGENINC_10_01_2014-EX-10.11-COLLABORATION_AGREEMENT.txt",
    "FuelcellEnergyInc_20191106_8-K_EX-10.1_11868007_EX-10.1_Development_Agreement.txt",
    "MetLife_Inc._-_Remarketing_Agreement.txt",
    "NlsPharmaceuticsLtd_20200228_F-1_EX-10.14_12029046_EX-10.14_Development_Agreement.txt",
    "SANDRIDGEENERGYINC_08_06_2009-EX-10.6-OPERATIONS_AND_MAINTENANCE_AGREEMENT.txt",
    "TELEGLOBEINTERNATIONALHOLDINGSLTD_03_29_2004-EX-10.10-CONSTRUCTION_AND_MAINTENANCE_AGREEMENT.txt",
    "TRANSPHORM_INC_02_14_2020-EX-10.12_1_-JOINT_VENTURE_AGREEMENT.txt",
)
QUESTIONS_FILE = Path(__file__).with_name("contract_questions.jsonl")
DISTRACTORS = 2  # other contracts read beside the one asked about
PASSAGE_SENTENCES = 12
MIN_SENTENCE_WORDS = 5  # shorter lines (headings, page numbers, footers) are not shown
ROUNDTRIP_F1 = 0.5
MAX_ANSWER_WORDS = 12
MAX_OCCURRENCES = 3
PHRASINGS = ("written", "reworded")

_REPLY_FIELD = re.compile(
    r"^\s*\**(question|answer|sentence)\**\s*:\s*\**\s*(.*?)\s*$", re.IGNORECASE
)


# "[5]", "5" or "[5] The sentence again...", never a section number ("3.1 Term.")
_SENTENCE_NUMBER = re.compile(r"\[(\d+)\]|(\d+)(?=\s|$)")


class Unchecked(ValueError):
    """A writer's reply that is not kept; the message is the reason counted."""


def is_held_out(name: str) -> bool:
    """Whether a contract file's name falls in the held-out tenth (the rule that chose
    ``HELD_OUT_CONTRACTS``)."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % 10 == 0


def title_of(name: str) -> str:
    """A contract's kind from its file name, as the writer is told it
    ("...-EX-10.4-FRANCHISE_AGREEMENT.txt" → "Franchise Agreement"): the text's own first
    lines are often a logo's placeholder or an exhibit number."""
    kind = Path(name).stem.rsplit("-", 1)[-1]
    return re.sub(r"^[\d._]+", "", kind).replace("_", " ").strip().title()


def passages(text: str, count: int, seed: int = 0) -> list[list[tuple[int, int]]]:
    """``count`` runs of ``PASSAGE_SENTENCES`` consecutive sentence spans of at least
    ``MIN_SENTENCE_WORDS`` words, one drawn with ``seed`` inside each of ``count`` equal
    stretches of the text, so the passages cover the whole contract and never overlap."""
    sentences = [
        (int(s), int(e))
        for s, e in segment(text)[0]
        if len(text[s:e].split()) >= MIN_SENTENCE_WORDS
    ]
    stretch = len(sentences) // max(count, 1)
    if stretch < PASSAGE_SENTENCES:
        raise ValueError(f"{len(sentences)} sentences hold no {count} passages")
    rng = random.Random(seed)
    found = []
    for index in range(count):
        first = index * stretch + rng.randrange(stretch - PASSAGE_SENTENCES + 1)
        found.append(sentences[first : first + PASSAGE_SENTENCES])
    return found


def _pattern(answer: str) -> re.Pattern[str]:
    """The answer as written, any run of white space for each space, case aside, not inside
    a longer word or number."""
    words = [re.escape(word) for word in answer.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def answer_spans(text: str, answer: str) -> list[tuple[int, int]]:
    """Every occurrence of ``answer`` in ``text`` as character spans (``_pattern``)."""
    return [match.span() for match in _pattern(answer).finditer(text)]


def parse_reply(reply: str) -> dict[str, str]:
    """The question, answer and sentence fields of a writer's reply (bold marks and field
    case aside); a field given twice keeps its first value."""
    fields: dict[str, str] = {}
    for line in reply.splitlines():
        if match := _REPLY_FIELD.match(line):
            fields.setdefault(match.group(1).lower(), match.group(2).strip().strip("\"'`*").strip())
    return fields


def checked_question(reply: str, sentences: list[str], contract: str) -> tuple[str, str, int]:
    """``(question, answer, index of the answering sentence)`` of a writer's reply about
    the numbered ``sentences`` (1-based in the prompt) of ``contract``, by the module's rules;
    the answer as the sentence writes it.

    Raises:
        Unchecked: why the reply is not kept.
    """
    fields = parse_reply(reply)
    question, answer = fields.get("question", ""), fields.get("answer", "").rstrip(".;,")
    if not question.endswith("?"):
        raise Unchecked("no question")
    if not answer:
        raise Unchecked("no answer")
    number = _SENTENCE_NUMBER.match(fields.get("sentence", ""))
    if number is None or not 1 <= int(number.group(1) or number.group(2)) <= len(sentences):
        raise Unchecked("no sentence of the passage named")
    if len(answer.split()) > MAX_ANSWER_WORDS:
        raise Unchecked("answer too long")
    pattern = _pattern(answer)
    if pattern.search(question):
        raise Unchecked("the question holds its answer")
    index = int(number.group(1) or number.group(2)) - 1
    found = pattern.search(sentences[index])
    if found is None:
        raise Unchecked("answer not in the sentence named")
    answer = " ".join(found.group().split())  # as the contract writes it
    if len(answer_spans(contract, answer)) > MAX_OCCURRENCES:
        raise Unchecked("answer not specific to one clause")
    return question, answer, index


def answered_alike(written: str, answered: str) -> bool:
    """Whether a reader shown the passage answered the question as the writer did (token F1
    at least ``ROUNDTRIP_F1``): a question its own passage does not answer, or answers
    otherwise, is a question of the writer's confusion, not of the contract."""
    return token_f1(answered, [written]) >= ROUNDTRIP_F1


@dataclass(frozen=True, slots=True)
class ContractQuestion:
    """One stored question: the contract and its SHA-256 (a changed file is refused, not
    read with offsets that no longer hold), the answer and the sentence that gave it."""

    contract: str
    sha256: str
    question: str
    phrasing: str
    answer: str
    sentence: tuple[int, int]

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ContractQuestion:
        if raw["phrasing"] not in PHRASINGS:
            raise ValueError(f"unknown phrasing {raw['phrasing']!r}")
        start, end = raw["sentence"]
        return cls(
            raw["contract"], raw["sha256"], raw["question"], raw["phrasing"], raw["answer"],
            (int(start), int(end)),
        )  # fmt: skip


def read_questions(path: Path = QUESTIONS_FILE) -> list[ContractQuestion]:
    """The stored questions, in order.

    Raises:
        ValueError: a line is not a stored question (its number said).
    """
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            questions.append(ContractQuestion.from_dict(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}:{number}: not a contract question ({error})") from None
    return questions


def build_contracts(
    max_items: int | None = None,
    seed: int = 0,
    data_dir: str | Path | None = None,
    questions_file: Path = QUESTIONS_FILE,
) -> list[QAItem]:
    """The contract development split: every stored question over its contract and
    ``DISTRACTORS`` other held-out contracts drawn with ``seed``.

    Raises:
        ValueError: a contract differs from the one its questions were written over, or its
            answer is no longer where the question says.
    """
    folder = data_path(CONTRACTS_DIR, data_dir)
    contracts = {
        name: read_file((folder / name).resolve(), doc_id=name) for name in HELD_OUT_CONTRACTS
    }
    rng = random.Random(seed)
    items: list[QAItem] = []
    for number, asked in enumerate(read_questions(questions_file)):
        if asked.contract not in contracts:
            raise ValueError(f"{asked.contract} is not a held-out contract")
        contract = contracts[asked.contract]
        if contract.content_hash != asked.sha256:
            raise ValueError(f"{asked.contract} differs from the text its questions were asked of")
        spans = answer_spans(contract.text, asked.answer)
        start, end = asked.sentence
        if not any(start <= s and e <= end for s, e in spans):
            raise ValueError(f"{asked.contract}: {asked.answer!r} is not in its sentence")
        others = [c for name, c in contracts.items() if name != asked.contract]
        documents = [contract, *rng.sample(others, DISTRACTORS)]
        rng.shuffle(documents)
        items.append(
            QAItem(
                id=f"{Path(asked.contract).stem[:40]}:{number}:{asked.phrasing}",
                query=asked.question,
                documents=documents,
                gold_spans=[GoldSpan(contract.id, s, e) for s, e in spans],
                gold_doc_ids=[contract.id],
                answers=[asked.answer],
                metadata={
                    "dataset": "contracts",
                    "split": "dev",
                    "phrasing": asked.phrasing,
                    "sentence": list(asked.sentence),
                    "total_words": sum(count_words(d.text) for d in documents),
                },
            )
        )
    return items[:max_items]
