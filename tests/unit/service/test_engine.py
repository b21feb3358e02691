"""The engine's queue: bounded, timed out, never hanging (no scanner needed)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from longscan.encoders.cache import EmbeddingCache
from longscan.service.engine import Busy, Engine, JobCounts, TimedOut
from longscan.service.settings import ServiceSettings


def test_a_full_queue_is_busy_and_a_slow_job_times_out(tmp_path: Path) -> None:
    engine = Engine(ServiceSettings(tmp_path, scan_timeout_s=0.3, max_queued=2))
    release = threading.Event()
    ran: list[str] = []

    def blocking() -> None:
        release.wait(5)

    async def scenario() -> list[BaseException | None]:
        first = asyncio.create_task(engine.call(blocking))
        second = asyncio.create_task(engine.call(ran.append, "queued"))
        await asyncio.sleep(0.05)
        with pytest.raises(Busy):
            await engine.call(ran.append, "refused")
        outcomes = await asyncio.gather(first, second, return_exceptions=True)
        release.set()
        await asyncio.sleep(0.1)  # the worker is free again; the expired job was skipped
        await engine.call(ran.append, "later")
        return outcomes

    outcomes = asyncio.run(scenario())
    assert all(isinstance(outcome, TimedOut) for outcome in outcomes)
    assert ran == ["later"]  # "queued" waited past its deadline and never ran
    assert engine.pending == 0


def test_jobs_run_one_at_a_time_in_order(tmp_path: Path) -> None:
    engine = Engine(ServiceSettings(tmp_path))
    spans: list[tuple[float, float]] = []

    def job() -> None:
        start = time.perf_counter()
        time.sleep(0.05)
        spans.append((start, time.perf_counter()))

    async def scenario() -> None:
        await asyncio.gather(*(engine.call(job) for _ in range(4)))

    asyncio.run(scenario())
    ends = [end for _, end in spans[:-1]]
    starts = [start for start, _ in spans[1:]]
    assert all(end <= start for end, start in zip(ends, starts, strict=True))


def test_an_abandoned_job_stops_at_its_next_checkpoint(tmp_path: Path) -> None:
    engine = Engine(ServiceSettings(tmp_path, scan_timeout_s=1.0))
    steps: list[int] = []
    resume = threading.Event()

    def long_job() -> None:  # 10 s of work, in steps, as an encoding is in batches
        for step in range(1000):
            engine.checkpoint()
            steps.append(step)
            resume.wait(30)  # held in its first step until the test has seen it abandoned
            time.sleep(0.01)

    async def scenario() -> tuple[JobCounts, float]:
        with pytest.raises(TimedOut):
            await engine.call(long_job)
        abandoned = engine.counts()
        resume.set()
        started = time.monotonic()
        await engine.call(steps.append, -1)  # the worker is free again within a step
        return abandoned, time.monotonic() - started

    abandoned, waited = asyncio.run(scenario())
    assert abandoned == JobCounts(queued=0, running=1, abandoned=1)
    assert waited < 1.0 and steps[-1] == -1 and len(steps) < 100
    assert engine.counts() == JobCounts(0, 0, 0) and engine.pending == 0


def test_work_nobody_waits_for_is_counted_until_it_ends(tmp_path: Path) -> None:
    """A job without checkpoints runs on after its 504: health must say the worker is busy
    (it said ``queued: 0``), and the queue bound must count it."""
    engine = Engine(ServiceSettings(tmp_path, scan_timeout_s=0.2, max_queued=2))
    release = threading.Event()
    skipped: list[str] = []

    async def scenario() -> list[JobCounts]:
        with pytest.raises(TimedOut):
            await engine.call(release.wait, 10)
        seen = [engine.counts()]
        waiting = asyncio.create_task(engine.call(skipped.append, "ran", on_skip=lambda: None))
        await asyncio.sleep(0.05)
        seen.append(engine.counts())
        with pytest.raises(Busy):  # the abandoned job still takes its place in the bound
            await engine.call(skipped.append, "refused")
        with pytest.raises(TimedOut):
            await waiting
        seen.append(engine.counts())
        release.set()
        while engine.pending:  # the job ends; the one queued behind it is skipped
            await asyncio.sleep(0.01)
        await engine.call(skipped.append, "later")
        seen.append(engine.counts())
        return seen

    seen = asyncio.run(scenario())
    assert seen == [JobCounts(0, 1, 1), JobCounts(1, 1, 1), JobCounts(1, 1, 2), JobCounts(0, 0, 0)]
    assert skipped == ["later"]


def test_a_skipped_job_runs_its_cleanup(tmp_path: Path) -> None:
    engine = Engine(ServiceSettings(tmp_path, scan_timeout_s=0.1))
    release = threading.Event()
    partial = tmp_path / ".upload.part"
    partial.write_text("never read")

    async def scenario() -> None:
        blocker = asyncio.create_task(engine.call(release.wait, 10))
        await asyncio.sleep(0.02)
        with pytest.raises(TimedOut):
            await engine.call(partial.read_text, on_skip=partial.unlink)
        release.set()
        with pytest.raises(TimedOut):
            await blocker
        await engine.call(lambda: None)  # the skipped job has passed

    asyncio.run(scenario())
    assert not partial.exists()


def test_the_embedding_cache_holds_at_most_its_bytes() -> None:
    cache = EmbeddingCache(max_bytes=1000)
    for key in "abcdef":
        cache.put(key, np.zeros(50, np.float32))  # 200 bytes each
    assert cache.memory_bytes == 1000 and cache.get("a") is None and cache.get("f") is not None
    cache.put("big", np.zeros(1000, np.float32))  # larger than the budget: not kept
    assert cache.get("big") is None and cache.memory_bytes == 1000
    cache.put("f", np.zeros(10, np.float32))  # replacing an entry frees its bytes
    assert cache.memory_bytes == 840


def test_a_job_past_its_commit_point_is_waited_for_and_one_short_of_it_changes_nothing(
    tmp_path: Path,
) -> None:
    """What a caller hears is what happened: past its commit point a job is waited for
    beyond the deadline and reported; a job that reaches it after the deadline stops."""
    engine = Engine(ServiceSettings(tmp_path))
    committed, finish, late = threading.Event(), threading.Event(), threading.Event()
    stored: list[str] = []

    def keep() -> str:
        engine.commit()
        committed.set()
        finish.wait(30)
        stored.append("kept")
        return "kept"

    def too_late() -> None:
        late.wait(30)
        engine.commit()
        stored.append("late")

    async def scenario() -> tuple[str, bool]:
        deadline = time.monotonic() + 2.0  # generous for the job to reach its commit point
        kept = asyncio.create_task(engine.call(keep, deadline=deadline))
        while not committed.is_set():
            await asyncio.sleep(0.01)
        while time.monotonic() < deadline + 0.2:
            await asyncio.sleep(0.05)
        waited = not kept.done()
        finish.set()
        with pytest.raises(TimedOut):
            await engine.call(too_late, deadline=time.monotonic() + 0.2)
        late.set()
        while engine.pending:
            await asyncio.sleep(0.01)
        return await kept, waited

    assert asyncio.run(scenario()) == ("kept", True)
    assert stored == ["kept"]


def test_kept_work_goes_on_after_a_timeout_and_stops_when_its_caller_left(
    tmp_path: Path,
) -> None:
    """An encoding is kept for the next question (``checkpoint(keeps=True)``): a timeout
    does not stop it, a caller that left does."""
    engine = Engine(ServiceSettings(tmp_path))
    go = threading.Event()
    done: list[str] = []

    def encode(name: str) -> None:
        go.wait(30)
        for _ in range(3):
            engine.checkpoint(keeps=True)
        done.append(name)

    async def scenario() -> JobCounts:
        with pytest.raises(TimedOut):
            await engine.call(encode, "timed out", deadline=time.monotonic() + 0.2)
        go.set()
        while engine.pending:
            await asyncio.sleep(0.01)
        go.clear()
        left = asyncio.create_task(engine.call(encode, "left"))
        while engine.counts().running == 0:
            await asyncio.sleep(0.01)
        left.cancel()
        with pytest.raises(asyncio.CancelledError):
            await left
        counted = engine.counts()
        go.set()
        while engine.pending:
            await asyncio.sleep(0.01)
        return counted

    assert asyncio.run(scenario()) == JobCounts(queued=0, running=1, abandoned=1)
    assert done == ["timed out"]
