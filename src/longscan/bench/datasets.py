"""Loaders for the reference QA datasets, each reading the original files unchanged.

Every benchmark and every training set is built from these files, so the loaders keep what
the builders need to place gold evidence exactly: SQuAD answer offsets, HotpotQA supporting
sentences and MuSiQue supporting paragraphs become character spans at load time, and the
multi-document sets (L-Eval, Loong) become ready ``QAItem``s.

Parsed files are cached by path (``functools.cache``), so building thousands of items
re-reads nothing; loaders return fresh lists (and fresh ``QAItem``s), never the cache itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from longscan.documents import Document
from longscan.items import QAItem, instructed_query
from longscan.readers.files import read_file
from longscan.segment import count_words, sentence_spans_in
from longscan.settings import BenchData

logger = logging.getLogger(__name__)

BENCH_DATA_ENV = "LONGSCAN_BENCH_DATA"
# The source checkout when longscan runs from one (src/longscan/bench/ inside it).
CHECKOUT = Path(__file__).resolve().parents[3]
Split = Literal["train", "dev"]
SPLITS: tuple[Split, ...] = ("train", "dev")

SQUAD_FILE = "squad/squad-v1.1-dev-36articles.json"
HOTPOTQA_FILES: dict[Split, str] = {
    "train": "hotpotqa/hotpot-train-sample100.json",
    "dev": "hotpotqa/hotpot-dev-distractor-sample100.json",
}
# 991 more questions for training, disjoint from the dev sample's gold paragraphs (the data's
# README); they join the train split wherever the data directory has them.
HOTPOTQA_TRAIN_EXTRA = "hotpotqa/hotpot-dev-distractor-extra.json"
MUSIQUE_FILE = "musique/musique-train-sample100.json"
LEVAL_FILES = {
    "coursera": "leval/Closed-ended-tasks/coursera.jsonl",
    "financial_qa": "leval/Open-ended-tasks/financial_qa.jsonl",
}
LOONG_FILE = "loong/loong-en-sample20.jsonl"
LOONG_DOC_DIR = "loong/doc"

# Loong names a financial report file ``YYYY-<company>[-x].txt`` and heads the document with
# ``《<company>》``: the year prefix and the one-letter variant suffix are not part of the name.
_FINANCIAL_FILE = re.compile(r"^(?:(?P<year>\d{4})-)?(?P<name>.+?)(?:-[a-z])?$")


def default_data_dir() -> Path:
    """Where the reference data lives: ``$LONGSCAN_BENCH_DATA`` (``settings.BenchData``),
    else ``../shared/data`` beside the source checkout this package runs from (the folder
    holding its ``pyproject.toml``): the data is shared read-only by the checkouts of one
    machine and never copied into a repository.

    Raises:
        FileNotFoundError: ``$LONGSCAN_BENCH_DATA`` is not a directory, or it is unset and
            there is no ``shared/data`` beside a checkout.
    """
    configured = BenchData().bench_data
    if configured is not None:
        if not configured.is_dir():
            raise FileNotFoundError(f"${BENCH_DATA_ENV}={str(configured)!r} is not a directory")
        return configured
    beside = CHECKOUT.parent / "shared" / "data"
    if (CHECKOUT / "pyproject.toml").is_file() and beside.is_dir():
        return beside
    raise FileNotFoundError(
        f"no benchmark data: set ${BENCH_DATA_ENV} to the folder of the reference datasets "
        f"(squad/, hotpotqa/, musique/, leval/, loong/), or put them in {beside} beside a "
        "source checkout"
    )


def data_path(relative: str, data_dir: str | Path | None = None) -> Path:
    """``data_dir / relative`` (``data_dir`` defaults to ``default_data_dir()``).

    Raises:
        FileNotFoundError: the path does not exist; the message names it.
    """
    path = Path(data_dir if data_dir is not None else default_data_dir()) / relative
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    return path


def stable_id(*parts: str, length: int = 12) -> str:
    """A short hex digest of ``parts``: the same on every machine and Python run."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:length]


def _read_json(path: Path) -> Any:
    """Uncached: every caller caches its parsed result, and raw JSON would double memory."""
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _read_jsonl(path: Path) -> tuple[dict[str, Any], ...]:
    with path.open(encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle if line.strip())


def _read_records(path: Path) -> Sequence[dict[str, Any]]:
    """Records of a JSON list or of a JSON-lines file: MuSiQue is released as JSON lines but
    also circulates as one JSON list."""
    with path.open(encoding="utf-8") as handle:
        head = handle.read(256).lstrip()
    return _read_json(path) if head.startswith("[") else _read_jsonl(path)


# --------------------------------------------------------------------------------------- SQuAD


@dataclass(frozen=True, slots=True)
class SquadQuestion:
    """A SQuAD question; ``answers`` are ``(text, start)`` with ``start`` in the context."""

    id: str
    question: str
    answers: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class SquadParagraph:
    context: str
    words: int
    questions: tuple[SquadQuestion, ...]


@dataclass(frozen=True, slots=True)
class SquadArticle:
    title: str
    paragraphs: tuple[SquadParagraph, ...]

    @property
    def heading(self) -> str:
        """The title as a reader would write it (SQuAD titles use ``_`` for spaces)."""
        return self.title.replace("_", " ")


def _squad_question(qa: dict[str, Any], context: str) -> SquadQuestion | None:
    """A question whose answers all point at their text; answers that do not are dropped
    (with a warning), because a misplaced gold span would silently corrupt recall."""
    answers = []
    for answer in qa["answers"]:
        text, start = answer["text"], int(answer["answer_start"])
        if text.strip() and context[start : start + len(text)] == text:
            answers.append((text, start))
        else:
            logger.warning(
                "SQuAD %s: answer %r is not at offset %d; dropped", qa["id"], text, start
            )
    if not answers:
        return None
    return SquadQuestion(id=qa["id"], question=qa["question"], answers=tuple(answers))


@cache
def read_squad(path: Path) -> tuple[SquadArticle, ...]:
    """Parse an official SQuAD v1.1 JSON file (``{"data": [{"title", "paragraphs"}]}``)."""
    articles = []
    for article in _read_json(path)["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            questions = (_squad_question(qa, context) for qa in paragraph["qas"])
            paragraphs.append(
                SquadParagraph(
                    context=context,
                    words=count_words(context),
                    questions=tuple(q for q in questions if q is not None),
                )
            )
        articles.append(SquadArticle(title=article["title"], paragraphs=tuple(paragraphs)))
    return tuple(articles)


def load_squad(data_dir: str | Path | None = None) -> list[SquadArticle]:
    """The SQuAD v1.1 articles of the reference data, in file order."""
    return list(read_squad(data_path(SQUAD_FILE, data_dir).resolve()))


# ----------------------------------------------------------------------- multi-hop datasets


@dataclass(frozen=True, slots=True)
class MultiHopParagraph:
    """A titled paragraph as it appears in a built document: ``title + "\\n" + body``.

    Attributes:
        title: The paragraph's title (its Wikipedia page).
        text: The title line, a newline, then the body exactly as the dataset gives it.
        words: ``count_words(text)``, precomputed because builders fill word budgets.
        supporting: Whether the paragraph is evidence for the question it came with.
        support: Gold spans relative to ``text``: the supporting sentences (HotpotQA) or the
            whole body (MuSiQue), stripped of surrounding white space like segmenter units.
    """

    title: str
    text: str
    words: int
    supporting: bool = False
    support: tuple[tuple[int, int], ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        """Identity for de-duplication: the same title and text is the same paragraph."""
        return self.title, self.text


@dataclass(frozen=True, slots=True)
class MultiHopQuestion:
    id: str
    question: str
    answers: tuple[str, ...]
    paragraphs: tuple[MultiHopParagraph, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


def _paragraph(
    title: str, sentences: Sequence[str], supporting: Collection[int]
) -> MultiHopParagraph:
    """Join ``sentences`` exactly as given and map the supporting ones to spans in the text."""
    pieces = [title + "\n"]
    position = len(pieces[0])
    spans = []
    for index, sentence in enumerate(sentences):
        stripped = sentence.strip()
        if index in supporting and stripped:  # a blank supporting sentence has no span
            start = position + len(sentence) - len(sentence.lstrip())
            spans.append((start, start + len(stripped)))
        pieces.append(sentence)
        position += len(sentence)
    text = "".join(pieces)
    return MultiHopParagraph(
        title=title,
        text=text,
        words=count_words(text),
        supporting=bool(supporting),
        support=tuple(spans),
    )


def _columns_to_rows(value: Any, *columns: str) -> list[tuple[Any, ...]]:
    """HotpotQA ships ``[[a, b], ...]`` officially and ``{"a": [...], "b": [...]}`` on the
    Hugging Face hub; both mean the same rows."""
    if isinstance(value, dict):
        return list(zip(*(value[column] for column in columns), strict=True))
    return [tuple(row) for row in value]


@cache
def read_hotpotqa(path: Path) -> tuple[MultiHopQuestion, ...]:
    """Parse a HotpotQA JSON file (official list-of-pairs or Hugging Face column layout).

    Rows without ``_id`` (the Hugging Face dev layout) get a stable id from the question text.
    """
    questions = []
    for row in _read_json(path):
        facts: dict[str, set[int]] = {}
        for title, sent_id in _columns_to_rows(row["supporting_facts"], "title", "sent_id"):
            facts.setdefault(title, set()).add(int(sent_id))
        paragraphs = tuple(
            _paragraph(title, sentences, facts.get(title, set()))
            for title, sentences in _columns_to_rows(row["context"], "title", "sentences")
        )
        questions.append(
            MultiHopQuestion(
                id=row.get("_id") or "hotpot-" + stable_id(row["question"]),
                question=row["question"],
                answers=(row["answer"],),
                paragraphs=paragraphs,
                metadata={"type": row.get("type"), "level": row.get("level")},
            )
        )
    return tuple(questions)


def load_hotpotqa(
    data_dir: str | Path | None = None, split: Split = "dev"
) -> list[MultiHopQuestion]:
    """The HotpotQA questions of one split: ``dev`` is the development sample; ``train`` is
    the train sample plus, where present, the 991 extra training questions."""
    if split not in HOTPOTQA_FILES:
        raise ValueError(f"unknown HotpotQA split {split!r}; choose one of {SPLITS}")
    questions = list(read_hotpotqa(data_path(HOTPOTQA_FILES[split], data_dir).resolve()))
    extra = Path(data_dir if data_dir is not None else default_data_dir()) / HOTPOTQA_TRAIN_EXTRA
    if split == "train" and extra.exists():
        questions.extend(read_hotpotqa(extra.resolve()))
    return questions


def _hop_sentences(body: str, hops: Sequence[tuple[str, str]]) -> list[tuple[int, int]]:
    """Spans of the sentences of ``body`` that state the hops' answers: for each hop, the
    sentence sharing the most content terms with its question and answer (ties: one that
    holds the answer string, then the earlier one)."""
    from longscan.lexical.bm25 import tokenize  # bm25s is needed only by this labelling

    spans = sentence_spans_in(body, 0, len(body))
    texts = [body[a:b] for a, b in spans]
    terms = [set(t) for t in tokenize(texts)]
    chosen = set()
    for question, answer in hops:
        wanted = set(tokenize([f"{question} {answer}"])[0])
        folded = answer.casefold()
        chosen.add(
            max(
                range(len(texts)),
                key=lambda i: (len(terms[i] & wanted), folded in texts[i].casefold(), -i),
            )
        )
    return [spans[i] for i in sorted(chosen)]


def _resolved_hops(row: dict[str, Any]) -> dict[int, list[tuple[str, str]]]:
    """Each paragraph index's hops as (question, answer), ``#k`` replaced by hop k's answer."""
    answers: list[str] = []
    hops: dict[int, list[tuple[str, str]]] = {}
    for step in row.get("question_decomposition", ()):

        def earlier(match: re.Match[str]) -> str:
            k = int(match.group(1))
            return answers[k - 1] if 0 < k <= len(answers) else match.group(0)

        question = re.sub(r"#(\d+)", earlier, step["question"])
        answers.append(step["answer"])
        index = step.get("paragraph_support_idx")
        if index is not None:
            hops.setdefault(index, []).append((question, step["answer"]))
    return hops


def _musique_paragraph(
    paragraph: dict[str, Any], hops: Sequence[tuple[str, str]]
) -> MultiHopParagraph:
    """A supporting paragraph whose gold is the sentences answering its ``hops``."""
    body = paragraph["paragraph_text"]
    chosen = _hop_sentences(body, hops)
    cuts = sorted({0, len(body), *(x for span in chosen for x in span)})
    pieces = list(zip(cuts, cuts[1:], strict=False))
    supporting = {i for i, piece in enumerate(pieces) if piece in chosen}
    return _paragraph(paragraph["title"], [body[a:b] for a, b in pieces], supporting)


@cache
def read_musique(path: Path, sentence_support: bool = False) -> tuple[MultiHopQuestion, ...]:
    """Parse a MuSiQue file (JSON lines as released, or one JSON list).

    MuSiQue marks whole paragraphs as support. With ``sentence_support`` the gold of a
    supporting paragraph is instead the sentence that answers each hop it supports (from the
    question decomposition, as SQuAD's gold is the answer's sentence): training labels that
    do not teach a scanner to spread its score over a paragraph. A supporting paragraph no
    hop points at keeps the paragraph label.
    """
    questions = []
    for row in _read_records(path):
        hops = _resolved_hops(row) if sentence_support else {}
        paragraphs = tuple(
            _musique_paragraph(p, hops[i])
            if p["is_supporting"] and i in hops
            else _paragraph(p["title"], [p["paragraph_text"]], {0} if p["is_supporting"] else set())
            for i, p in enumerate(row["paragraphs"])
        )
        questions.append(
            MultiHopQuestion(
                id=row["id"],
                question=row["question"],
                answers=(row["answer"], *row.get("answer_aliases", ())),
                paragraphs=paragraphs,
                metadata={
                    "answerable": row.get("answerable", True),
                    "hops": len(row.get("question_decomposition", ())),
                },
            )
        )
    return tuple(questions)


def load_musique(
    data_dir: str | Path | None = None, sentence_support: bool = False
) -> list[MultiHopQuestion]:
    """The MuSiQue questions of the reference data (one file; split it with ``split_of``)."""
    return list(read_musique(data_path(MUSIQUE_FILE, data_dir).resolve(), sentence_support))


# -------------------------------------------------------------------------------------- L-Eval


def read_leval(path: Path, task: str) -> list[QAItem]:
    """One ``QAItem`` per instruction of an L-Eval JSONL task file.

    The items of one row share its single ``Document`` (the row's ``input``), so the document
    is segmented and encoded once. Questions are kept as given, multiple-choice options
    included, because the options are part of what the model must read.
    """
    items = []
    for row_index, row in enumerate(_read_jsonl(path)):
        instructions, outputs = row["instructions"], row["outputs"]
        if len(instructions) != len(outputs):
            raise ValueError(
                f"{path}: row {row_index} has {len(instructions)} instructions "
                f"but {len(outputs)} outputs"
            )
        doc_id = f"leval-{task}-{row_index:03d}"
        document = Document(id=doc_id, text=row["input"], metadata={"source": row.get("source")})
        words = count_words(document.text)
        for index, (instruction, output) in enumerate(zip(instructions, outputs, strict=True)):
            items.append(
                QAItem(
                    id=f"{doc_id}-{index:02d}",
                    query=instruction,
                    documents=[document],
                    answers=[output],
                    metadata={
                        "dataset": "leval",
                        "task": task,
                        "split": "dev",
                        "source": row.get("source"),
                        "evaluation": row.get("evaluation"),
                        "total_words": words,
                    },
                )
            )
    return items


def load_leval(data_dir: str | Path | None = None, task: str = "coursera") -> list[QAItem]:
    """The items of one L-Eval task of the reference data (``coursera`` or ``financial_qa``)."""
    if task not in LEVAL_FILES:
        raise ValueError(f"unknown L-Eval task {task!r}; choose one of {', '.join(LEVAL_FILES)}")
    return read_leval(data_path(LEVAL_FILES[task], data_dir).resolve(), task)


# --------------------------------------------------------------------------------------- Loong


def financial_name(file_name: str) -> str:
    """The company name Loong derives from a report file: ``2024-ACME, Inc.-j.txt`` gives
    ``ACME, Inc.``."""
    match = _FINANCIAL_FILE.match(Path(file_name).stem)
    return match["name"] if match else Path(file_name).stem


def _financial_file(doc_dir: Path, name: str) -> tuple[Path, list[str]]:
    """The report Loong reads for company ``name``, and every candidate file.

    Loong globs ``*2024-<name>*.txt``, which may match several variants (``-j``, ``-n``) in
    directory order; here the match is exact on the derived name (or the file stem), and ties
    go to the latest year, then to the first file name, so the choice is reproducible.
    """
    candidates = [
        path for path in doc_dir.glob("*.txt") if name in (path.stem, financial_name(path.name))
    ]
    if not candidates:
        raise FileNotFoundError(f"{doc_dir}: no financial report for {name!r}")

    def year(path: Path) -> int:
        match = _FINANCIAL_FILE.match(path.stem)
        return int(match["year"]) if match and match["year"] else 0

    candidates.sort(key=lambda path: (-year(path), path.name))
    return candidates[0], [path.name for path in candidates]


@cache
def _loong_document_text(path: Path, kind: str) -> tuple[str, str]:
    """``(header, text)`` of one Loong document, the text starting with Loong's header line:
    ``《<company>》`` for a financial report, the title line (``#`` stripped) for a paper."""
    body = read_file(path).text
    if kind == "financial":
        header = f"《{financial_name(path.name)}》"
    else:
        first = next((line for line in body.splitlines() if line.strip()), path.stem)
        header = first.strip().strip("#").strip()
    return header, f"{header}\n{body}"


def _loong_documents(row: dict[str, Any], doc_dir: Path) -> tuple[list[Document], dict[str, Any]]:
    """The row's documents, de-duplicated (an item may list a paper twice), with notes on
    names that matched several files."""
    kind = row["type"]
    documents: list[Document] = []
    ambiguous: dict[str, list[str]] = {}
    for name in dict.fromkeys(row["doc"]):
        if kind == "financial":
            path, candidates = _financial_file(doc_dir / kind, name)
            if len(candidates) > 1:
                ambiguous[name] = candidates
        else:
            path = doc_dir / kind / name
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such file (Loong item {row['id']})")
        header, text = _loong_document_text(path.resolve(), kind)
        documents.append(
            Document(id=path.name, text=text, metadata={"path": str(path), "header": header})
        )
    return documents, ambiguous


def loong_answer_text(answer: Any) -> str:
    """Loong answers are strings, lists or dicts; non-strings become JSON, as judges read them."""
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def loong_answer_parts(answer: Any) -> list[str]:
    """What a structured Loong answer names, in order: the strings of a list or of a dict's
    values (company names, paper titles without their Markdown heading marks); a string
    answer is one part."""
    if isinstance(answer, dict):
        return [part for value in answer.values() for part in loong_answer_parts(value)]
    if isinstance(answer, list):
        return [part for value in answer for part in loong_answer_parts(value)]
    text = str(answer).strip().lstrip("#").strip()
    return [text] if text else []


def read_loong(path: Path, doc_dir: Path) -> list[QAItem]:
    """Loong items, each over its own documents (ids are file names, texts carry headers).

    The query is the instruction followed by the question (level-4 items have none); the
    prompt template is kept in the metadata so the full Loong prompt can be rebuilt.
    """
    items = []
    for row in _read_jsonl(path):
        documents, ambiguous = _loong_documents(row, doc_dir)
        question = row["question"].strip()
        query = instructed_query(row["instruction"], question) if question else row["instruction"]
        metadata = {
            "dataset": "loong",
            "split": "dev",
            "total_words": sum(count_words(document.text) for document in documents),
            "answer": row["answer"],
            "answer_parts": loong_answer_parts(row["answer"]),
            "doc": list(row["doc"]),
            "shuffle_doc": row.get("shuffle_doc", True),
            **{key: row[key] for key in ("level", "set", "type", "instruction", "prompt_template")},
        }
        if ambiguous:
            metadata["ambiguous_docs"] = ambiguous
        items.append(
            QAItem(
                id=str(row["id"]),
                query=query,
                documents=documents,
                answers=[loong_answer_text(row["answer"])],
                metadata=metadata,
            )
        )
    return items


def load_loong(data_dir: str | Path | None = None) -> list[QAItem]:
    """The Loong items of the reference data, documents in the order the item lists them."""
    return read_loong(
        data_path(LOONG_FILE, data_dir).resolve(), data_path(LOONG_DOC_DIR, data_dir).resolve()
    )
