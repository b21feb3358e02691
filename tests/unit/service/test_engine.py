"""The engine's queue: bounded, timed out, never hanging (no scanner needed)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from longscan.service.engine import Busy, Engine, TimedOut
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
