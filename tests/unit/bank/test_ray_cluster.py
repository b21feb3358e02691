"""A bank filled by a Ray cluster of two nodes started as users start them (``ray start
--head``, then ``ray start --address``), each node checked for the same longscan and
weights, one worker killed mid-run, and the ingest complete."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from bank_checks import assert_each_document_once

from longscan.bank import MemoryBank
from longscan.documents import Document

RAY = str(Path(sys.executable).with_name("ray"))
TASK_TITLE = "ray::encode_batch"  # a Ray worker's process title while it runs that task
# `ray start` turns on token authentication: every node and driver of the test's cluster
# shares one token, as the machines of a real cluster must
TOKEN = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _node(arguments: list[str], temp: str) -> subprocess.Popen[bytes]:
    """One Ray node in the foreground (``--block``): ending the process ends the node,
    and only that node (``ray stop`` would end every Ray on the machine)."""
    return subprocess.Popen(
        [RAY, "start", "--block", "--num-cpus=1", "--disable-usage-stats", *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **TOKEN, "RAY_TMPDIR": temp},
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    temp = tempfile.mkdtemp(prefix="lsray", dir="/tmp")  # Ray's socket paths must be short
    address = f"127.0.0.1:{_free_port()}"
    head = _node(["--head", f"--port={address.split(':')[1]}", "--include-dashboard=false",
                  f"--temp-dir={temp}", "--node-ip-address=127.0.0.1"], temp)  # fmt: skip
    nodes = [head]
    try:
        deadline = time.monotonic() + 120
        while True:  # the head answers once its GCS is up
            probe = subprocess.run(
                [RAY, "status", f"--address={address}"],
                capture_output=True,
                env={**os.environ, **TOKEN},
            )
            if probe.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        nodes.append(_node([f"--address={address}", "--node-ip-address=127.0.0.1"], temp))
        joined = _driver(address, JOINED)
        assert joined.returncode == 0, joined.stderr[-2000:]
        yield address
    finally:
        for node in reversed(nodes):  # the node's process group: raylet, workers, agents
            try:
                os.killpg(node.pid, signal.SIGTERM)
                node.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(node.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


JOINED = """
import time, ray
ray.init(address=ADDRESS, logging_level="ERROR")
deadline = time.monotonic() + 120
while len([n for n in ray.nodes() if n["Alive"]]) < 2:
    assert time.monotonic() < deadline, "the second node did not join"
    time.sleep(1)
"""
CHECKED = """
import ray, pytest
from longscan.parallel import check_nodes, installation
ray.init(address=ADDRESS, logging_level="ERROR")
check_nodes()  # both nodes run this checkout
with pytest.raises(ValueError, match="every Ray node must run") as refused:
    check_nodes({**installation(), "weights": "0" * 16})
assert str(refused.value).count(" runs {") == 2, str(refused.value)  # both nodes named
"""


def _driver(address: str, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` as a driver process of its own (this one may hold a Ray session)."""
    code = script.replace("ADDRESS", repr(address))
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **TOKEN},
    )


def _kill_first_task(stop: threading.Event, killed: list[int]) -> None:
    """SIGKILL the first worker seen running an encoding task."""
    while not stop.is_set() and not killed:
        for process in psutil.process_iter(["pid", "cmdline"]):
            if (process.info["cmdline"] or [""])[0].startswith(TASK_TITLE):
                process.kill()
                killed.append(process.info["pid"])
                return
        time.sleep(0.02)


def test_two_nodes_fill_the_bank_though_a_worker_is_killed(
    cluster: str, tmp_path: Path, paragraphs: list[Document]
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    documents = [Document(f"{n:03d}.txt", d.text) for n, d in enumerate(paragraphs)]
    for document in documents:
        (folder / document.id).write_text(document.text, encoding="utf-8")
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_first_task, args=(stop, killed))
    killer.start()
    try:
        added = subprocess.run(
            [
                sys.executable,
                "-m",
                "longscan.cli",
                "bank",
                "add",
                str(folder),
                "--bank",
                str(tmp_path / "bank"),
                "--ray-address",
                cluster,
            ],  # fmt: skip
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, **TOKEN},
        )
    finally:
        stop.set()
        killer.join()
    assert added.returncode == 0, added.stderr[-2000:]
    assert killed, "no encoding task was seen running"
    assert_each_document_once(MemoryBank(tmp_path / "bank"), documents)


def test_a_node_that_runs_other_weights_is_refused_before_any_work(cluster: str) -> None:
    checked = _driver(cluster, CHECKED)
    assert checked.returncode == 0, checked.stderr[-2000:]
