"""Ingestion and evaluation on Ray: killed workers, interrupted runs, updates, the cache."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psutil
import pytest
from bank_checks import assert_each_document_once
from typer.testing import CliRunner

from longscan.bank import MemoryBank, search
from longscan.bank.indexes import embed_openings
from longscan.bank.ingest import Encoded, IngestReport, encode_batch, ingest
from longscan.bank.search import SCANNED_TOKENS
from longscan.bench.ladder import Answer, LadderQuery, answer_queries, evaluate_rung
from longscan.cli import app
from longscan.documents import Document

pytestmark = pytest.mark.usefixtures("ray_workers")


def test_a_worker_killed_mid_ingestion_loses_nothing(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    marker = tmp_path / "killed"

    def dies_once(texts: list[str], scanned_tokens: int | None, encoder: str) -> Encoded:
        if not marker.exists():  # the first attempt of the first task kills its worker
            marker.touch()
            os._exit(1)
        return encode_batch(texts, scanned_tokens, encoder)

    documents = paragraphs[:20]
    bank = MemoryBank(tmp_path / "bank")
    report = ingest(bank, documents, batch_documents=4, encode=dies_once, progress=False)
    assert marker.exists()
    assert report.added == report.indexed == len(documents)
    assert_each_document_once(MemoryBank(tmp_path / "bank"), documents)


def test_interrupted_ingestion_resumes_without_loss_or_duplicates(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    def stop_after_two_batches(report: IngestReport) -> None:
        if report.batches == 2:
            raise KeyboardInterrupt  # the driver is stopped mid-ingestion

    bank = MemoryBank(tmp_path)
    bank.add(paragraphs[-3:])  # stored by a plain add, never indexed
    with pytest.raises(KeyboardInterrupt):
        ingest(
            bank,
            paragraphs[:-3],
            batch_documents=4,
            on_batch=stop_after_two_batches,
            progress=False,
        )
    committed = len(bank) - 3
    assert 0 < committed < len(paragraphs) - 3
    resumed = MemoryBank(tmp_path)
    report = ingest(resumed, paragraphs, batch_documents=4, progress=False)
    assert report.added == len(paragraphs) - 3 - committed and report.updated == 0
    assert_each_document_once(resumed, paragraphs)


def test_a_crash_between_checkpoints_is_redone_without_duplicates(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    crashed = tmp_path / "crashed"

    def snapshot_after_two_batches(report: IngestReport) -> None:
        if report.batches == 2:  # what a killed driver leaves: rows and BM25 in, dense unsaved
            shutil.copytree(tmp_path / "bank", crashed)

    documents = paragraphs[:20]
    ingest(
        MemoryBank(tmp_path / "bank"),
        documents,
        batch_documents=4,
        checkpoint_seconds=3600,
        on_batch=snapshot_after_two_batches,
        progress=False,
    )
    left = MemoryBank(crashed)
    assert left.stats()["not_indexed"] == 8 and len(left.indexes.dense()) == 0
    report = ingest(left, documents, batch_documents=4, progress=False)
    assert (report.indexed, report.added, report.unchanged) == (20, 12, 8)
    assert_each_document_once(MemoryBank(crashed), documents)


def test_an_update_replaces_the_document_in_both_indexes_across_a_restart(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    documents = paragraphs[:10]
    ingest(MemoryBank(tmp_path), documents, progress=False)
    old = documents[2]
    new = Document(old.id, "Zanzibar quokkas juggle marmalade under a violet moon.")
    bank = MemoryBank(tmp_path)
    doc_id = bank.id_of(old.id)
    report = ingest(bank, [*documents[:2], new], progress=False)
    assert (report.updated, report.unchanged, report.added) == (1, 2, 0)
    reopened = MemoryBank(tmp_path)
    assert reopened.id_of(old.id) == doc_id and reopened.get([doc_id])[0].text == new.text
    assert [i for i, _ in reopened.search_bm25("quokkas marmalade", 3)] == [doc_id]
    operators = "IN Zanzibar, NOT quokkas AND OR"  # words, not query syntax
    assert reopened.search_bm25(operators, 1)[0][0] == doc_id
    old_word = max(old.text.split(), key=len).strip(".,;:()\"'")
    assert doc_id not in [i for i, _ in reopened.search_bm25(old_word, 50)]
    stored = reopened.indexes.dense().get(doc_id)
    assert np.allclose(stored, embed_openings([new.text])[0], atol=1e-5)
    expected = [*documents[:2], new, *documents[3:]]
    assert_each_document_once(reopened, expected)


def test_ingestion_caches_the_sentence_vectors_two_stage_search_reads(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    from longscan.scanning.scanner import Scanner

    bank = MemoryBank(tmp_path)
    ingest(bank, paragraphs[:16], scanned_tokens=SCANNED_TOKENS, progress=False)
    cache = bank.sentence_cache()
    scanner = Scanner.from_pretrained(cache=cache)
    query = " ".join(paragraphs[4].text.split()[:12])
    assert len(search(bank, query, k=3, depth=8, scanner=scanner)) == 3
    assert cache.misses == 0 and cache.hits == 8  # read from the cache, none encoded again


def test_a_worker_killed_mid_evaluation_answers_every_query_once(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    bank = MemoryBank(tmp_path / "bank")
    ingest(bank, paragraphs[:24], progress=False)
    queries = [
        LadderQuery(f"q{i}", " ".join(d.text.split()[:10]), (d.id,), "wiki")
        for i, d in enumerate(paragraphs[:12])
    ]
    marker = tmp_path / "killed"

    def dies_once(*args: object) -> list[Answer]:
        if not marker.exists():
            marker.touch()
            os._exit(1)
        return answer_queries(*args)  # type: ignore[arg-type]

    systems = ("bm25", "dense")
    killed = evaluate_rung(bank, queries, systems, queries_per_task=3, answer=dies_once)
    undisturbed = evaluate_rung(bank, queries, systems, queries_per_task=3)
    assert marker.exists()
    for system in systems:
        assert killed[system]["queries"] == len(queries)
        for measure in ("docSR@1", "docSR@10", "docR@1"):
            assert killed[system][measure] == undisturbed[system][measure]
    assert killed["bm25"]["docSR@10"] > 0.5  # real rankings, not empty ones


def test_bank_add_streams_a_folder_and_a_rerun_adds_nothing(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    for i, document in enumerate(paragraphs[:5]):
        (folder / f"{i}.txt").write_text(document.text)
    command = [
        "bank",
        "add",
        str(folder),
        "--bank",
        str(tmp_path / "bank"),
        "--no-sentence-vectors",
    ]
    first = CliRunner().invoke(app, command)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, command)
    assert '"unchanged": 5' in again.output and '"added": 0' in again.output
    assert len(MemoryBank(tmp_path / "bank")) == 5
    missing = CliRunner().invoke(app, ["bank", "add", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "does not exist" in _unwrapped(missing.output)


def _unwrapped(output: str) -> str:
    """CLI output with rich's line wrapping and box drawing undone: the same at any width."""
    return " ".join(re.sub(r"[\u2500-\u257f]", " ", output).split())


CLI = [sys.executable, "-c", "from longscan.cli import app; app()"]


def _texts(folder: Path, prefix: str, n: int, paragraphs: list[Document]) -> None:
    folder.mkdir(parents=True)
    for i in range(n):
        text = f"{prefix} {i}. {paragraphs[i % len(paragraphs)].text[:400]}"
        (folder / f"{prefix}{i}.txt").write_text(text)


WRITER = """
import sys, time
from pathlib import Path
from longscan.bank import MemoryBank
from longscan.readers.files import iter_paths

folder, bank, go = sys.argv[1:]
store = MemoryBank(Path(bank))
documents = list(iter_paths([Path(folder)]))
store.sync(progress=False)  # loads the encoder before the start
while not Path(go).exists():  # both writers start together
    time.sleep(0.05)
print("started", time.time(), flush=True)
store.add(documents)
store.sync(batch=10, progress=False)  # ten index saves, each of the whole dense index
print("ended", time.time(), flush=True)
"""


def test_two_writer_processes_into_one_bank_lose_nothing(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    """Two processes add and index 100 documents each into one bank at the same moment:
    every document ends up in SQLite, tantivy and usearch."""
    for prefix in ("one", "two"):
        _texts(tmp_path / prefix, prefix, 100, paragraphs)
    bank, go = tmp_path / "bank", tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path / prefix), str(bank), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for prefix in ("one", "two")
    ]
    time.sleep(1)
    go.touch()
    outputs = [writer.communicate(timeout=600) for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], outputs
    times = [dict(line.split() for line in out.splitlines()) for out, _ in outputs]
    assert max(float(t["started"]) for t in times) < min(float(t["ended"]) for t in times)
    stored = MemoryBank(bank)
    assert len(stored) == 200 and stored.stats()["not_indexed"] == 0
    ids = [doc_id for (doc_id,) in stored.db.execute("SELECT id FROM documents")]
    dense = stored.indexes.dense()
    assert len(dense) == 200 and all(i in dense for i in ids)
    assert stored.stats()["index_entries"] == {"bm25": 200, "dense": 200}
    assert stored.check().ok


def test_ingestion_holds_the_writer_lock_from_start_to_end(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    """The dense index grows in memory between checkpoints: no other writer may save
    meanwhile."""
    from longscan.bank.errors import BankBusy

    other = MemoryBank(tmp_path, lock_timeout=0)
    refused = []

    def another_writer_tries(report: IngestReport) -> None:
        with pytest.raises(BankBusy, match="being written by pid"):
            other.add([Document("other", "Another writer's document.")])
        refused.append(report.batches)

    documents = paragraphs[:8]
    ingest(MemoryBank(tmp_path), documents, batch_documents=4, on_batch=another_writer_tries,
           progress=False)  # fmt: skip
    assert refused == [1, 2]
    assert other.add([Document("other", "Another writer's document.")])["added"] == 1


@pytest.fixture
def long_tmpdir() -> Iterator[Path]:
    """An existing folder whose path is 100 characters long."""
    root = Path(tempfile.mkdtemp(prefix="longscan-", dir="/tmp"))
    folder = root / ("t" * (99 - len(str(root))))
    folder.mkdir()
    assert len(str(folder)) == 100
    yield folder
    shutil.rmtree(root, ignore_errors=True)


def test_bank_add_works_under_a_100_character_tmpdir(
    tmp_path: Path, paragraphs: list[Document], long_tmpdir: Path
) -> None:
    _texts(tmp_path / "texts", "doc", 3, paragraphs)
    environment = {**os.environ, "TMPDIR": str(long_tmpdir), "COLUMNS": "80"}
    environment.pop("RAY_TMPDIR", None)
    environment.pop("RAY_ADDRESS", None)
    command = [*CLI, "bank", "add", str(tmp_path / "texts"), "--bank", str(tmp_path / "bank")]
    run = subprocess.run(
        [*command, "--no-sentence-vectors", "--ray-address", "local"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )  # Ray's socket paths under it would be too long: it gets a short folder of its own
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(MemoryBank(tmp_path / "bank")) == 3


def test_an_embedded_ray_dies_with_its_driver_killed(tmp_path: Path) -> None:
    script = (
        "import time\n"
        "from longscan.parallel import ray_session\n"
        "with ray_session(num_cpus=1):\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(600)\n"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert driver.stdout is not None and driver.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 60
        while True:  # the raylet starts its agents (the processes Ray leaves behind)
            ray_processes = psutil.Process(driver.pid).children(recursive=True)
            if any("agent" in " ".join(_cmdline(p)).lower() for p in ray_processes):
                break
            assert time.monotonic() < deadline, "no Ray agent started"
            time.sleep(0.5)
        time.sleep(2)  # the watchdog looks every second
    finally:
        driver.kill()  # SIGKILL: no Python cleanup runs
        driver.wait()
    deadline = time.monotonic() + 30
    while (left := [p for p in ray_processes if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, [_cmdline(p) for p in left]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _alive(process: psutil.Process) -> bool:
    """Running, and not a zombie waiting for a parent that is gone to reap it."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
