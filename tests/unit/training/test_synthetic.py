"""Synthetic examples: reply validation, exact sentence offsets, decontamination, training."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longscan.documents import Document
from longscan.training import synthetic as syn
from longscan.training import synthetic_examples as sx
from longscan.training.decontamination import fingerprint
from scripted_server import completion_body

SETTINGS = syn.SynthSettings(
    chunk_sentences=5, window_sentences=20, min_tokens=200, max_tokens=600, reply_tokens=160
)


def _span(request: syn._Request, rng: random.Random) -> tuple[int, int]:
    return syn.example_span(request.source, request.chunks, rng, SETTINGS)


@pytest.fixture(scope="module")
def source(novel: Document) -> syn.SourceDocument:
    return syn.SourceDocument(Document("alice", novel.text[:60_000]), SETTINGS.chunk_sentences)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"question": "Why?", "relevant": [1]}', "no question"),
        ('{"question": "Which firms appear in both passages?", "relevant": [1]}', "passages"),
        ('{"question": "Who is the Hatter here?", "relevant": []}', "no relevant"),
        ('{"question": "Who is the Hatter here?", "relevant": [7]}', "out of range"),
        ('{"question": "Who is the Hatter here?", "relevant": [true]}', "non-integer"),
    ],
)
def test_invalid_chunk_replies_are_refused_not_repaired(reply: str, reason: str) -> None:
    with pytest.raises(syn.InvalidReply, match=reason):
        syn.validate_chunk_reply(reply, 5)


def test_valid_replies_parse() -> None:
    assert syn.validate_chunk_reply(
        '{"question": "Who is late here?", "relevant": [3, 1, 3]}', 5
    ) == (
        "Who is late here?",
        [1, 3],
    )
    assert syn.validate_links_reply('{"chunk": 2, "connection": "the same rabbit"}', [1, 2]) == 2
    for bad in (
        '{"chunk": 0, "connection": "x"}',
        '{"chunk": 1, "connection": " "}',
        '{"chunk": true}',
    ):
        with pytest.raises(syn.InvalidReply):
            syn.validate_links_reply(bad, [1, 2])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_labels_are_exact_sentences_of_the_example(source: syn.SourceDocument, data) -> None:
    strategy = data.draw(st.sampled_from(["chunk", "link"]))
    seed = data.draw(st.integers(0, 10_000))
    rng = random.Random(seed)
    requests = syn.plan(
        [source], strategy, 1, syn.SynthSettings(**{**SETTINGS.__dict__, "seed": seed})
    )
    request = requests[0]
    if strategy == "link":
        anchor = int(request.fields["anchor"])
        other = data.draw(st.sampled_from([k for k in range(len(request.window)) if k != anchor]))
        request = syn._two_chunk_request(
            "link", source, request.chunks[0], request.window[other], "linked"
        )
    relevant = [
        data.draw(st.lists(st.integers(0, b - a - 1), min_size=1, max_size=3))
        for a, b in request.chunks
    ]
    example = syn.build_example(
        request, relevant, "Who did what here?", _span(request, rng), SETTINGS, 0
    )
    assert example is not None
    own = {(int(a), int(b)) for a, b in Document("x", example.text).sentences}
    assert example.labels and set(example.labels) <= own
    original = source.document.text
    for start, end in example.labels:  # the label is the source sentence, moved by source_start
        assert (
            original[example.source_start + start : example.source_start + end]
            == example.text[start:end]
        )
    if strategy == "link":
        (a1, b1), (a2, b2) = example.chunks
        assert (a1, b1) != (a2, b2)
        in_chunk = [
            {
                i
                for i in range(a, b)
                if tuple(int(x) - example.source_start for x in source.spans[i])
                in set(example.labels)
            }
            for a, b in example.chunks
        ]
        assert all(in_chunk)  # labels in two different chunks


def test_plans_are_reproducible_and_estimated(source: syn.SourceDocument) -> None:
    first = syn.plan([source], "link", 5, SETTINGS)
    again = syn.plan([source], "link", 5, SETTINGS)
    assert [r.fields for r in first] == [r.fields for r in again]
    estimate = syn.estimate(first, SETTINGS)
    assert estimate["calls"] == 10 and estimate["prompt_tokens"] > 0


def _constructed(n_sentences: int, shared: int) -> tuple[str, set[bytes]]:
    sentences = [f"Sentence number {i} says a thing about item {i}." for i in range(n_sentences)]
    return " ".join(sentences), {fingerprint(s) for s in sentences[:shared]}


@pytest.mark.parametrize(("shared", "kept"), [(1, True), (4, False)])  # 0.5% and 2% of 200
def test_decontamination_keeps_half_a_percent_and_drops_two(
    scripted, shared: int, kept: bool
) -> None:
    text, fingerprints = _constructed(200, shared)
    source = syn.SourceDocument(Document("constructed", text), 5)
    reply = json.dumps({"question": "What does sentence three say?", "relevant": [0, 2]})
    _, client = scripted([(200, completion_body(reply), 0)])
    stats = sx.SynthStats()
    wide = syn.SynthSettings(
        chunk_sentences=5, min_tokens=100_000, max_tokens=100_000
    )  # whole text
    examples = list(
        syn.generate(client, syn.plan([source], "chunk", 1, wide), wide, stats, fingerprints)
    )
    assert len(examples) == int(kept)
    assert stats.dropped.get("chunk", {}).get("contaminated", 0) == int(not kept)
    assert stats.llm.get("chunk", {}).get("calls", 0) == int(kept)  # no call for a dropped one


def test_a_contaminated_span_is_drawn_again_before_any_call(scripted) -> None:
    """Evaluation text in one part of a document drops only the spans that reach it: the
    chunk at the other end gets a clean span on a later draw, never a contaminated one."""
    text, _ = _constructed(400, 0)
    source = syn.SourceDocument(Document("constructed", text), 5)
    tail = {fingerprint(s) for s in source.texts[200:]}
    settings = syn.SynthSettings(chunk_sentences=5, min_tokens=300, max_tokens=4_000)
    request = syn.plan([source], "chunk", 1, settings)[0]
    request.chunks = [(0, 5)]
    rng = random.Random(0)
    spans = [syn.clean_span(request, rng, settings, tail, 0.01) for _ in range(20)]
    assert all(span is not None and span[1] <= 202 for span in spans)  # 2 of 202 ≤ 1%
    assert max(span[1] for span in spans) > 100  # and they are not all short
    everything = {fingerprint(s) for s in source.texts}
    assert syn.clean_span(request, rng, settings, everything, 0.01) is None


def test_invalid_replies_are_counted_per_reason(scripted, source: syn.SourceDocument) -> None:
    _, client = scripted([(200, completion_body('{"question": "Who?", "relevant": [0]}'), 0)])
    stats = sx.SynthStats()
    assert not list(syn.generate(client, syn.plan([source], "chunk", 3, SETTINGS), SETTINGS, stats))
    report = stats.as_dict()["chunk"]
    assert report["dropped"] == {"no question": 3} and report["llm"]["calls"] == 3
    assert report["llm"]["prompt_tokens"] == 33 and report["per_1000_examples"] is None


def test_local_model_end_to_end_then_a_few_training_steps(
    local_llm_url: str, source, tmp_path: Path
) -> None:
    from longscan.answering.llm import LLMClient, LLMConfig, ResponseCache
    from longscan.encoders import get_encoder
    from longscan.encoders.contextual import ContextualSentenceEncoder
    from longscan.models.config import ScannerConfig
    from longscan.scanning import N_FEATURES
    from longscan.training import TrainingArgs, train
    from longscan.training.data import synthetic_training_set

    config = LLMConfig(local_llm_url, "local", json_mode="json_object_schema", max_tokens=120)
    client = LLMClient(config, ResponseCache(tmp_path / "synth.sqlite"))
    stats = sx.SynthStats()
    vectors = syn.chunk_vectors([source])
    strategies = [s for s in syn.STRATEGIES if s != "table"]  # the novel holds no table
    requests = [r for s in strategies for r in syn.plan([source], s, 2, SETTINGS, vectors)]
    out = tmp_path / "examples.jsonl"
    sx.write_examples(syn.generate(client, requests, SETTINGS, stats), out)
    report = stats.as_dict()
    for strategy in strategies:  # every attempt is an example or a counted drop
        row = report[strategy]
        assert row["attempts"] == 2 == row["examples"] + sum(row["dropped"].values())
    examples = sx.read_examples(out)  # re-checks every label against the text
    assert examples, report
    data = synthetic_training_set(
        ContextualSentenceEncoder(get_encoder()), examples, progress=False
    )
    args = TrainingArgs(
        model=ScannerConfig(d_model=32, n_layers=1, d_state=8, headdim=16, n_features=N_FEATURES),
        batch_size=2,
        accumulation=1,
        threads=1,
    )
    _, history = train(args, data, progress=False, max_steps=3)
    assert history["optimizer_steps"] > 0 and all(math.isfinite(x) for x in history["loss"])


def test_a_file_named_twice_weighs_twice_and_its_spans_are_encoded_once(
    scripted, source: syn.SourceDocument, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from longscan.encoders import get_encoder
    from longscan.encoders.cache import EmbeddingCache
    from longscan.encoders.contextual import ContextualSentenceEncoder
    from longscan.training.data import synthetic_training_set

    reply = json.dumps({"question": "What did the Rabbit take out of its pocket?", "relevant": [0]})
    _, client = scripted([(200, completion_body(reply), 0)])
    vectors = syn.chunk_vectors([source])
    requests = syn.plan([source], "chunk", 3, SETTINGS, vectors)
    out = tmp_path / "examples.jsonl"
    sx.write_examples(syn.generate(client, requests, SETTINGS, sx.SynthStats()), out)
    examples = sx.read_examples(out)
    assert len({e.text for e in examples}) == len(examples) > 1  # three distinct spans
    encoder = ContextualSentenceEncoder(get_encoder())
    cache = EmbeddingCache(tmp_path / "vectors", max_items=0)
    once = synthetic_training_set(encoder, examples, progress=False, cache=cache)
    monkeypatch.setattr(encoder, "encode_document", _never_called)  # the cache must answer
    twice = synthetic_training_set(encoder, [*examples, *examples], progress=False, cache=cache)
    assert len(twice.vectors) == len(once.vectors) == len(examples)
    assert len(twice.labels) == 2 * len(once.labels)
    assert twice.document_of == [*once.document_of, *once.document_of]
    for a, b in zip(once.vectors, twice.vectors, strict=True):
        assert torch.equal(a, b)


def test_a_contaminated_example_is_dropped_and_named_in_the_manifest(
    scripted, source: syn.SourceDocument, tmp_path: Path
) -> None:
    """The manifest names what decontamination dropped, so counts taken before it (the
    examples cut to begin at their evidence) can leave those out."""
    from longscan.encoders import get_encoder
    from longscan.encoders.contextual import ContextualSentenceEncoder
    from longscan.training.data import synthetic_training_set
    from longscan.training.decontamination import sentence_fingerprints

    reply = json.dumps({"question": "What did the Rabbit take out of its pocket?", "relevant": [0]})
    _, client = scripted([(200, completion_body(reply), 0)])
    requests = syn.plan([source], "chunk", 4, SETTINGS, syn.chunk_vectors([source]))
    out = tmp_path / "examples.jsonl"
    sx.write_examples(syn.generate(client, requests, SETTINGS, sx.SynthStats()), out)
    examples = sx.read_examples(out)
    tainted = examples[0]
    fingerprints = sentence_fingerprints(Document("x", tainted.text).sentence_texts())
    data = synthetic_training_set(
        ContextualSentenceEncoder(get_encoder()), examples, fingerprints, progress=False
    )
    dropped = data.manifest["dropped_ids"]
    assert dropped[0] == tainted.id and len(set(dropped)) == len(dropped) < len(examples)
    assert data.manifest["dropped_contaminated"] == len(dropped)
    assert len(data.labels) == len(examples) - len(dropped)


def _never_called(*args: object, **kwargs: object) -> None:
    raise AssertionError("encoded a document the cache holds")


def test_one_command_fine_tunes_the_shipped_checkpoint_on_synthetic_examples(
    scripted, source: syn.SourceDocument, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from longscan.cli import app
    from longscan.scanning import load_checkpoint
    from longscan.scanning.checkpoint import default_checkpoint_dir

    reply = json.dumps(
        {"question": "What did the Rabbit take out of its pocket?", "relevant": [1, 3]}
    )
    _, client = scripted([(200, completion_body(reply), 0)])
    examples = syn.generate(
        client, syn.plan([source], "chunk", 12, SETTINGS), SETTINGS, sx.SynthStats()
    )
    path = tmp_path / "examples.jsonl"
    assert sx.write_examples(examples, path) == 12
    out = tmp_path / "tuned"
    result = CliRunner().invoke(
        app,
        ["train", "--out", str(out), "--datasets", "", "--synthetic", str(path),
         "--init-from", str(default_checkpoint_dir()), "--threads", "1",
         "--evidence-first", "0.5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    tuned, info = load_checkpoint(out)
    shipped, _ = load_checkpoint(default_checkpoint_dir())
    assert tuned.config == shipped.config  # the shipped architecture, trained further
    assert any(
        not torch.equal(a, b)
        for a, b in zip(tuned.state_dict().values(), shipped.state_dict().values(), strict=True)
    )
    manifest = json.loads((out / "training.json").read_text())["train_manifest"]
    assert manifest["split"] == "synthetic" and manifest["sources"]["synthetic/chunk"]["kept"] >= 9
    card = (out / "MODEL_CARD.md").read_text()  # says what was trained on, and nothing else
    kept = manifest["sources"]["synthetic/chunk"]["kept"]
    assert f"| synthetic/chunk | {kept} |" in card and "train* splits" not in card
    assert f"Training: {manifest['examples']} examples" in card
    cut = manifest["starting_at_evidence"]
    assert 0 < cut < 12 and f"{cut} of them cut to begin at their first labelled" in card
    drops = (  # a synthetic drop's reason is said, a dataset's absent ones are not
        f"Of the synthetic examples, {manifest['dropped_contaminated']} shared it and "
        f"{manifest['dropped_without_content']} labelled no line"
    )
    assert drops in card and "A dataset's" not in card


def test_a_refused_request_is_a_counted_drop_but_an_outage_stops_the_run(
    scripted, source: syn.SourceDocument
) -> None:
    from longscan.answering.llm import LLMError

    _, client = scripted([(400, "{}", 0)], max_retries=0)
    stats = sx.SynthStats()
    assert not list(syn.generate(client, syn.plan([source], "chunk", 2, SETTINGS), SETTINGS, stats))
    assert stats.dropped["chunk"] == {"request refused (HTTP 400)": 2}
    _, down = scripted([(503, "{}", 0)], max_retries=0)
    with pytest.raises(LLMError, match="503"):
        list(
            syn.generate(down, syn.plan([source], "chunk", 2, SETTINGS), SETTINGS, sx.SynthStats())
        )


def test_a_link_is_checked_for_contamination_between_its_two_calls(
    scripted, source: syn.SourceDocument
) -> None:
    """The first call names the linked chunk; a contaminated span then costs no second call,
    and a refused second call is a counted drop like a refused first one."""
    (request,) = syn.plan([source], "link", 1, SETTINGS)
    other = next(k for k in range(len(request.window)) if k != int(request.fields["anchor"]))
    link = json.dumps({"chunk": other, "connection": "the same rabbit"})
    everything = {fingerprint(s) for s in source.texts}
    for fingerprints, second, reason, requests in (
        (everything, (200, "{}", 0), "contaminated", 1),
        (None, (413, "{}", 0), "request refused (HTTP 413)", 2),
    ):
        server, client = scripted([(200, completion_body(link), 0), second], max_retries=0)
        stats = sx.SynthStats()
        assert not list(syn.generate(client, [request], SETTINGS, stats, fingerprints))
        assert stats.dropped["link"] == {reason: 1} and len(server.requests) == requests


def test_counts_are_handed_out_as_the_run_goes(scripted, source: syn.SourceDocument) -> None:
    _, client = scripted([(200, completion_body('{"question": "Who?", "relevant": [0]}'), 0)])
    seen: list[dict] = []
    stats = sx.SynthStats()
    requests = syn.plan([source], "chunk", 3, SETTINGS)
    save = lambda now: seen.append(now.as_dict())  # noqa: E731
    assert not list(syn.generate(client, requests, SETTINGS, stats, after_each=save))
    assert [s["chunk"]["dropped"] for s in seen] == [{"no question": 1}, {"no question": 2}]


def test_packed_examples_read_back_the_labelled_text_of_a_real_filing(
    data_dir: Path, tmp_path: Path
) -> None:
    """A committed data file carries offsets and hashes, not text: reading it rebuilds the
    exact example from ``train-docs/``, and a changed source file is refused."""
    from longscan.readers.files import read_file

    folder = data_dir / "train-docs"
    path = sorted((folder / "sec-full-filings").glob("*.txt"))[0]
    source = syn.SourceDocument(read_file(path, doc_id=path.name), SETTINGS.chunk_sentences)
    request = syn.plan([source], "chunk", 1, SETTINGS)[0]
    span = _span(request, random.Random(0))
    example = syn.build_example(request, [[0, 2]], "What does the filing say?", span, SETTINGS, 0)
    assert example is not None
    packed = sx.pack_examples([example], folder)
    assert "text" not in packed[0] and packed[0]["source"] == f"sec-full-filings/{path.name}"
    file = tmp_path / "packed.jsonl"
    file.write_text(json.dumps(packed[0]) + "\n", encoding="utf-8")
    (again,) = sx.read_examples(file, folder)
    assert (again.text, again.labels, again.question) == (
        example.text, example.labels, example.question
    )  # fmt: skip
    changed = tmp_path / "docs" / "sec-full-filings"
    changed.mkdir(parents=True)
    (changed / path.name).write_text(read_file(path).text.replace(" the ", " a ", 1), "utf-8")
    with pytest.raises(ValueError, match="has changed since the example was written"):
        sx.read_examples(file, tmp_path / "docs")


def test_a_line_separator_inside_an_example_stays_inside_it(data_dir: Path, tmp_path: Path) -> None:
    """A CUAD contract holds U+2028, which JSON Lines written with ensure_ascii=False keep
    raw inside a string: reading must split at "\\n" only, as the run wrote them."""
    from longscan.readers.files import read_file

    path = (
        data_dir
        / "train-docs"
        / "cuad"
        / "KALLOINC_11_03_2011-EX-10.1-STRATEGIC_ALLIANCE_AGREEMENT.txt"
    )  # noqa: E501
    document = read_file(path, doc_id=path.name)
    assert "\u2028" in document.text
    source = syn.SourceDocument(document, SETTINGS.chunk_sentences)
    requests = syn.plan([source], "chunk", 40, SETTINGS)
    examples = [
        syn.build_example(r, [[0]], "What does it say?", _span(r, random.Random(0)), SETTINGS, i)
        for i, r in enumerate(requests)
    ]
    holding = [e for e in examples if e is not None and "\u2028" in e.text]
    assert holding
    file = tmp_path / "run.jsonl"
    assert sx.write_examples(iter(holding), file) == len(holding)
    assert [e.text for e in sx.read_examples(file)] == [e.text for e in holding]


def test_synth_pack_joins_runs_reads_whole_lines_and_refuses_shared_ids(
    data_dir: Path, tmp_path: Path
) -> None:
    """Two runs' files (one still being written: a half line at its end) pack into one file
    that reads back, their counts summed; the same ids twice (two runs with one seed) are
    refused."""
    from dataclasses import replace

    from typer.testing import CliRunner

    from longscan.cli import app
    from longscan.readers.files import read_file

    folder = data_dir / "train-docs"
    path = sorted((folder / "cuad").glob("*.txt"))[0]
    source = syn.SourceDocument(read_file(path, doc_id=path.name), SETTINGS.chunk_sentences)
    request = syn.plan([source], "chunk", 1, SETTINGS)[0]
    span = _span(request, random.Random(0))
    example = syn.build_example(request, [[1]], "What does the contract say?", span, SETTINGS, 0)
    assert example is not None
    first, second = tmp_path / "seed0.jsonl", tmp_path / "seed1.jsonl"
    other = replace(example, id="chunk-1-0", question="Which party does the contract bind?")
    again = replace(example, id="chunk-1-1", text=example.text[:-1])  # another span, same ask
    first.write_text(example.to_json() + "\n" + example.to_json()[:100], encoding="utf-8")
    second.write_text(other.to_json() + "\n" + again.to_json() + "\n", encoding="utf-8")
    for run, (attempts, reason) in ((first, (3, "contaminated")), (second, (3, "not JSON"))):
        report = {"attempts": attempts, "examples": 1 + (run == second), "dropped": {}}
        report["dropped"] = {reason: attempts - report["examples"]}
        report["llm"] = {"calls": attempts, "prompt_tokens": 100 * attempts, "seconds": 2.0}
        run.with_name(run.name + ".stats.json").write_text(json.dumps({"chunk": report}))
    out, stats = tmp_path / "packed.jsonl", tmp_path / "stats.json"
    runner = CliRunner()
    args = ["synth-pack", str(first), str(second), "--out", str(out), "--sources", str(folder)]
    result = runner.invoke(app, [*args, "--stats", str(stats)])
    assert result.exit_code == 0, result.output
    assert [e.id for e in sx.read_examples(out, folder)] == ["chunk-0-0", "chunk-1-0"]
    assert "left out 1 repeated" in " ".join(result.output.split())  # 80 columns wrap it
    merged = json.loads(stats.read_text())["chunk"]
    assert (merged["attempts"], merged["examples"]) == (6, 2)
    assert merged["dropped"] == {"contaminated": 2, "not JSON": 1, sx.REPEATED: 1}
    assert merged["llm"] == {"calls": 6, "prompt_tokens": 600, "seconds": 4.0}
    sentences = len(syn.Document("d", example.text).sentences)
    assert merged["positive_rate"] == pytest.approx(len(example.labels) / sentences)
    same = runner.invoke(app, [*args[:2], str(first), *args[3:]])
    assert same.exit_code == 2 and "share example ids" in same.output


@pytest.fixture(scope="module")
def filing(data_dir: Path) -> syn.SourceDocument:
    from longscan.readers.files import read_file

    path = data_dir / "train-docs" / "sec-full-filings" / "10-K_0001193125-10-073212.txt"
    return syn.SourceDocument(read_file(path, doc_id=path.name), 12)


def test_table_examples_are_asked_of_rows_shown_with_their_context(
    filing: syn.SourceDocument, scripted
) -> None:
    """A table chunk is mostly rows; the LLM sees each row's title and header in braces (once
    per table); a reply that labels no row is dropped, one that labels a row keeps its exact
    offsets in the example."""
    settings = syn.SynthSettings(chunk_sentences=12, min_tokens=2_000, max_tokens=4_000)
    requests = syn.plan([filing], "table", 20, settings)
    request = next(r for r in requests if not all(filing.is_row(r.chunks[0])))
    first, last = request.chunks[0]
    rows = filing.is_row((first, last))
    assert sum(rows) >= syn.TABLE_ROW_SHARE * len(rows)
    lines = request.fields["chunk"].split("\n")
    row = rows.index(True)
    assert lines[row].endswith(f"{{{filing.context(first + row)}}}")
    other = rows.index(False)
    with pytest.raises(syn.InvalidReply, match="no table row labelled"):
        syn.validate_table_reply(
            json.dumps({"question": "What does this line state?", "relevant": [other]}), rows
        )
    reply = json.dumps({"question": "What was the figure in that row?", "relevant": [row]})
    _, client = scripted([(200, completion_body(reply), 0)])
    stats = sx.SynthStats()
    (example,) = syn.generate(client, [request], settings, stats)
    (label,) = example.labels
    start, end = filing.spans[first + row]
    assert example.text[slice(*label)] == filing.document.text[start:end]
    assert example.strategy == "table" and stats.kept["table"] == 1


BULLETED = (  # lines as a filing's flattened list has them: a bullet and a page number alone
    "Risk Factors\n\n•\n\nOur revenue depends on a few large customers in the United States."
    "\n\n•\n\nA loss of any of them would reduce our sales and profits.\n\n21\n\n"
    "We face competition from larger firms with more resources than ours.\n"
)


def test_labelled_lines_that_say_nothing_are_left_out_or_the_reply_dropped(scripted) -> None:
    source = syn.SourceDocument(Document("risks", BULLETED), 7)
    assert (source.texts[1], source.texts[3], source.texts[5]) == ("•", "•", "21")
    settings = syn.SynthSettings(chunk_sentences=7, min_tokens=10, max_tokens=400)
    replies = ['{"question": "Who does revenue depend on?", "relevant": [1, 2]}',
               '{"question": "What would a lost customer cost?", "relevant": [3, 4, 5]}',
               '{"question": "What page is this on?", "relevant": [5]}']  # fmt: skip
    examples, stats = [], sx.SynthStats()
    for reply in replies:
        _, client = scripted([(200, completion_body(reply), 0)])
        request = syn.plan([source], "chunk", 1, settings)[0]
        examples += syn.generate(client, [request], settings, stats)
    assert [[example.text[a:b] for a, b in example.labels] for example in examples] == [
        [source.texts[2]],
        [source.texts[4]],
    ]
    assert stats.as_dict()["chunk"]["dropped"] == {
        "labelled lines say nothing (bullets, numbers, marks)": 1
    }
