"""Loaders read the original files of the shared reference data and keep gold evidence exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscan.bench import datasets
from longscan.bench.datasets import (
    BENCH_DATA_ENV,
    HOTPOTQA_FILES,
    HOTPOTQA_TRAIN_EXTRA,
    LEVAL_FILES,
    LOONG_FILE,
    MUSIQUE_FILE,
    default_data_dir,
    financial_name,
    load_hotpotqa,
    load_leval,
    load_loong,
    load_musique,
    load_squad,
    read_musique,
    read_squad,
)
from longscan.evaluation.answers import part_recall, sub_em
from longscan.evaluation.budgets import answer_parts
from longscan.evaluation.gold import contains_answer


def _raw(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_bench_data_setting_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(BENCH_DATA_ENV, str(tmp_path))
    assert default_data_dir() == tmp_path


def test_the_bench_data_setting_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(BENCH_DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        default_data_dir()


def _checkout(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    """A source checkout at ``root``, as if longscan ran from it, with no setting."""
    monkeypatch.delenv(BENCH_DATA_ENV, raising=False)
    (root / "repo").mkdir()
    (root / "repo" / "pyproject.toml").write_text("[project]\n")
    monkeypatch.setattr(datasets, "CHECKOUT", root / "repo")
    return root / "repo"


def test_data_beside_the_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _checkout(monkeypatch, tmp_path)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)  # wherever the command runs
    assert default_data_dir() == tmp_path / "shared" / "data"


def test_the_memory_banks_folder_is_not_the_bench_data(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """LONGSCAN_DATA_DIR holds memory banks; with no data beside the checkout and no
    LONGSCAN_BENCH_DATA, the error says what to set (no folder of some machine is tried)."""
    _checkout(monkeypatch, tmp_path)
    (tmp_path / "banks").mkdir()
    monkeypatch.setenv("LONGSCAN_DATA_DIR", str(tmp_path / "banks"))
    monkeypatch.setenv(BENCH_DATA_ENV, "")  # empty: unset
    with pytest.raises(FileNotFoundError, match=f"set \\${BENCH_DATA_ENV} to the folder"):
        default_data_dir()


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        load_squad(tmp_path)


def test_squad_answers_point_at_their_text(data_dir: Path) -> None:
    articles = load_squad(data_dir)
    questions = [q for a in articles for p in a.paragraphs for q in p.questions]
    assert len(articles) == 36
    assert len(questions) == 7513  # as the data README says: nothing dropped
    for article in articles:
        for paragraph in article.paragraphs:
            for question in paragraph.questions:
                for text, start in question.answers:
                    assert paragraph.context[start : start + len(text)] == text


def test_squad_misplaced_answer_is_dropped(tmp_path: Path) -> None:
    qas = [
        {"id": "ok", "question": "q?", "answers": [{"text": "cat", "answer_start": 4}]},
        {"id": "bad", "question": "q?", "answers": [{"text": "cat", "answer_start": 0}]},
    ]
    data = {"data": [{"title": "T", "paragraphs": [{"context": "the cat sat", "qas": qas}]}]}
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data))
    (article,) = read_squad(path)
    assert [q.id for q in article.paragraphs[0].questions] == ["ok"]


@pytest.mark.parametrize("split", ["train", "dev"])
def test_hotpotqa_support_is_the_supporting_sentences(data_dir: Path, split: str) -> None:
    raw = _raw(data_dir / HOTPOTQA_FILES[split])
    if split == "train":  # the 991 extra training questions follow the train sample
        raw += _raw(data_dir / HOTPOTQA_TRAIN_EXTRA)
    questions = load_hotpotqa(data_dir, split)
    assert len(questions) == len(raw)
    assert len({q.id for q in questions}) == len(questions)
    for row, question in zip(raw, questions, strict=True):
        context, facts = row["context"], row["supporting_facts"]
        if isinstance(context, dict):  # the Hugging Face column layout of the dev sample
            context = list(zip(context["title"], context["sentences"], strict=True))
            facts = list(zip(facts["title"], facts["sent_id"], strict=True))
        sentences = dict(context)
        expected = sorted(sentences[t][i].strip() for t, i in facts if sentences[t][i].strip())
        found = sorted(p.text[s:e] for p in question.paragraphs for s, e in p.support)
        assert found == expected
        for paragraph, (title, body) in zip(question.paragraphs, context, strict=True):
            assert paragraph.text == title + "\n" + "".join(body)


def test_musique_support_is_the_paragraph_body(data_dir: Path) -> None:
    raw = _raw(data_dir / MUSIQUE_FILE)
    questions = load_musique(data_dir)
    assert len(questions) == len(raw)
    for row, question in zip(raw, questions, strict=True):
        expected = [p["paragraph_text"] for p in row["paragraphs"] if p["is_supporting"]]
        assert [p.text[s:e] for p in question.paragraphs for s, e in p.support] == expected
        assert question.answers[0] == row["answer"]


def test_musique_sentence_support_marks_the_hop_sentences(data_dir: Path) -> None:
    """Same texts, same supporting paragraphs; gold narrows to one sentence per hop, and
    that sentence holds the hop's answer in nearly every hop of the real file."""
    raw = _raw(data_dir / MUSIQUE_FILE)
    by_paragraph = load_musique(data_dir)
    by_sentence = load_musique(data_dir, sentence_support=True)
    hops = answered = 0
    for row, coarse, fine in zip(raw, by_paragraph, by_sentence, strict=True):
        assert [p.text for p in fine.paragraphs] == [p.text for p in coarse.paragraphs]
        assert [p.supporting for p in fine.paragraphs] == [p.supporting for p in coarse.paragraphs]
        for index, paragraph in enumerate(fine.paragraphs):
            steps = [
                s for s in row["question_decomposition"] if s["paragraph_support_idx"] == index
            ]
            if not paragraph.supporting:
                assert paragraph.support == ()
                continue
            ((body_start, body_end),) = coarse.paragraphs[index].support
            assert 1 <= len(paragraph.support) <= len(steps)
            for start, end in paragraph.support:
                assert body_start <= start < end <= body_end
            for step in steps:
                hops += 1
                answered += any(
                    step["answer"].casefold() in paragraph.text[a:b].casefold()
                    for a, b in paragraph.support
                )
    assert hops > 100
    assert answered / hops >= 0.9


def test_musique_sentence_support_fills_in_earlier_answers(tmp_path: Path) -> None:
    """Hop 2 asks about "#1": with hop 1's answer filled in, the sentence that says who the
    first president was wins over the earlier one that merely names the answer."""
    second = (
        "The study of adolescence began with G. Stanley Hall's book of 1904. "
        "Hall, who was the first president of the American Psychological Association, "
        "saw youth as turmoil."
    )
    row = {
        "id": "2hop_1",
        "question": "Who was the first president of the publisher of the journal?",
        "answer": "G. Stanley Hall",
        "paragraphs": [
            {
                "title": "Journal",
                "paragraph_text": "It is published by the American "
                "Psychological Association. It began in 1991.",
                "is_supporting": True,
            },
            {"title": "Hall", "paragraph_text": second, "is_supporting": True},
            {"title": "Other", "paragraph_text": "Nothing here.", "is_supporting": False},
        ],
        "question_decomposition": [
            {
                "question": "Who publishes the journal?",
                "answer": "American Psychological Association",
                "paragraph_support_idx": 0,
            },
            {
                "question": "Who was the first president of #1 ?",
                "answer": "G. Stanley Hall",
                "paragraph_support_idx": 1,
            },
        ],
    }
    path = tmp_path / "musique.json"
    path.write_text(json.dumps([row]))
    (question,) = read_musique(path, sentence_support=True)
    support = [[p.text[a:b] for a, b in p.support] for p in question.paragraphs]
    assert support == [
        ["It is published by the American Psychological Association."],
        [
            "Hall, who was the first president of the American Psychological Association, "
            "saw youth as turmoil."
        ],
        [],
    ]


def test_musique_json_lines_read_like_a_list(data_dir: Path, tmp_path: Path) -> None:
    raw = _raw(data_dir / MUSIQUE_FILE)[:3]
    path = tmp_path / "musique.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in raw) + "\n")
    assert read_musique(path) == tuple(load_musique(data_dir)[:3])


@pytest.mark.parametrize("task", sorted(LEVAL_FILES))
def test_leval_one_item_per_instruction(data_dir: Path, task: str) -> None:
    raw = _raw(data_dir / LEVAL_FILES[task])
    items = load_leval(data_dir, task)
    assert len(items) == sum(len(row["instructions"]) for row in raw)
    assert [item.query for item in items] == [q for row in raw for q in row["instructions"]]
    assert [item.answers for item in items] == [[a] for row in raw for a in row["outputs"]]
    for item in items:
        (document,) = item.documents
        assert not item.gold_spans
        row = raw[int(document.id.rsplit("-", 1)[1])]
        assert document.text == row["input"]


def test_leval_coursera_keeps_the_options(data_dir: Path) -> None:
    items = load_leval(data_dir, "coursera")
    assert all("\nA. " in item.query and "\nD. " in item.query for item in items)


def test_financial_names_as_loong_derives_them() -> None:
    assert financial_name("2024-Acorda Therapeutics, Inc.-j.txt") == "Acorda Therapeutics, Inc."
    assert financial_name("2024-BLUE DOLPHIN ENERGY CO-n.txt") == "BLUE DOLPHIN ENERGY CO"
    assert financial_name("2022-aqb-20211231x10k.txt") == "aqb-20211231x10k"


def test_loong_documents_carry_loong_headers(data_dir: Path) -> None:
    raw = _raw(data_dir / LOONG_FILE)
    items = load_loong(data_dir)
    assert len(items) == len(raw)
    for row, item in zip(raw, items, strict=True):
        assert item.metadata["level"] == row["level"]
        assert item.metadata["prompt_template"] == row["prompt_template"]
        assert row["instruction"] in item.query and row["question"] in item.query
        assert len(item.documents) == len(set(row["doc"]))  # listed twice, read once
        for name, document in zip(dict.fromkeys(row["doc"]), item.documents, strict=True):
            path = data_dir / "loong" / "doc" / row["type"] / document.id
            body = path.read_text(encoding="utf-8").removeprefix("\ufeff")
            header, text = document.text.split("\n", 1)
            assert text == body
            if row["type"] == "financial":
                assert header == f"《{name}》"
                assert financial_name(document.id) == name
            else:
                assert document.id == name
                first = next(line for line in body.splitlines() if line.strip())
                assert header == first.strip("# ") and header


def test_a_structured_loong_answer_names_parts_that_its_documents_hold(data_dir: Path) -> None:
    items = load_loong(data_dir)
    structured = {i.id for i in items if not isinstance(i.metadata["answer"], str)}
    assert {i.metadata["type"] for i in items if i.id in structured} == {"financial", "paper"}
    for item in items:
        parts = item.metadata["answer_parts"]
        assert parts and all(part == part.strip("# ") for part in parts)
        if item.id in structured:  # company names and paper titles, each in some document
            assert len(parts) > 1
            for part in parts:
                assert any(contains_answer(d.text, [part]) for d in item.documents), part
        else:
            assert parts == [item.metadata["answer"]]


def test_loong_prefers_one_report_when_a_name_is_ambiguous(data_dir: Path) -> None:
    items = [i for i in load_loong(data_dir) if "ambiguous_docs" in i.metadata]
    assert items  # BLUE DOLPHIN and GRANT PARK have -j and -n reports
    for item in items:
        for name, candidates in item.metadata["ambiguous_docs"].items():
            chosen = next(d.id for d in item.documents if financial_name(d.id) == name)
            assert chosen == candidates[0]


def test_hotpotqa_train_holds_the_extra_questions_and_none_of_dev(data_dir: Path) -> None:
    train = load_hotpotqa(data_dir, "train")
    dev = load_hotpotqa(data_dir, "dev")
    assert len(train) == len(_raw(data_dir / HOTPOTQA_FILES["train"])) + len(
        _raw(data_dir / HOTPOTQA_TRAIN_EXTRA)
    )
    assert not {q.id for q in train} & {q.id for q in dev}
    dev_gold = {p.title for q in dev for p in q.paragraphs if p.support}
    extra = train[len(_raw(data_dir / HOTPOTQA_FILES["train"])) :]
    assert not {p.title for q in extra for p in q.paragraphs if p.support} & dev_gold


def test_a_reply_naming_some_of_a_loong_answers_parts_recalls_that_share(data_dir: Path) -> None:
    item = next(i for i in load_loong(data_dir) if len(i.metadata["answer_parts"]) > 2)
    parts = answer_parts(item)
    named = ", ".join(wordings[0] for wordings in parts[:2])
    assert sub_em(named, item.answers) == 0.0  # the JSON reference is no substring of a reply
    assert part_recall(named, parts) == pytest.approx(2 / len(parts))
    assert part_recall("; ".join(w[0] for w in parts), parts) == 1.0
    assert part_recall("I cannot tell from the evidence.", parts) == 0.0
    with pytest.raises(ValueError, match="no parts"):
        part_recall(named, [])
