"""Ray as the execution engine: one session, and tasks run with a bounded number in flight.

By default Ray runs embedded on this machine (no dashboard, quiet logs); ``address`` joins a
running cluster instead (``ray://host:10001`` or ``auto``), and the same code runs there.
Tasks are retried when their worker dies (``max_retries``), so a killed worker costs time,
never a result: each task's result is returned once, from the attempt that finished.
Submitting a whole corpus at once would hold all of it in the object store; ``bounded_map``
keeps at most ``max_in_flight`` tasks submitted, so memory stays flat however long the input.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

Context = TypeVar("Context")

TASK_RETRIES = 3  # attempts after a worker dies (a process killed, a node lost)
OBJECT_STORE_BYTES = 512 * 1024**2  # embedded only: batches in flight are a few MB each


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[None]:
    """Use the Ray session already started, or start one for the duration of the block.

    Args:
        address: A cluster to join; ``None`` starts Ray embedded on this machine.
        num_cpus: Workers for an embedded session (default: every core); ignored on a cluster.
    """
    import ray

    if ray.is_initialized():
        yield
        return
    if address is None:
        ray.init(
            num_cpus=num_cpus or os.cpu_count() or 1,
            object_store_memory=OBJECT_STORE_BYTES,
            include_dashboard=False,
            logging_level=logging.WARNING,
            ignore_reinit_error=True,
        )
    else:
        try:
            ray.init(address=address, logging_level=logging.WARNING, ignore_reinit_error=True)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise ValueError(f"cannot join the Ray cluster at {address!r}: {error}") from None
    try:
        yield
    finally:
        ray.shutdown()


def workers() -> int:
    """CPUs the session can run tasks on (at least 1)."""
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def remote(function: Callable[..., Any]) -> Any:
    """``function`` as a Ray task of one CPU, retried when its worker dies.

    Python exceptions are not retried: encoding and searching are deterministic, so an
    exception would only repeat; a dead worker is what a retry repairs.
    """
    import ray

    return ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(function)


def bounded_map(
    task: Any, calls: Iterable[tuple[Context, tuple[Any, ...]]], max_in_flight: int
) -> Iterator[tuple[Context, Any]]:
    """Run ``task.remote(*args)`` for each ``(context, args)``, yielding ``(context, result)``
    as tasks finish (not in order), with at most ``max_in_flight`` submitted at a time.

    ``calls`` is read lazily, so the input may be a generator over a corpus larger than
    memory. Tasks still running when the caller stops (an error, an interrupt) are cancelled.
    """
    import ray

    if max_in_flight < 1:
        raise ValueError("max_in_flight must be at least 1")
    in_flight: dict[Any, Context] = {}
    try:
        for context, args in calls:
            while len(in_flight) >= max_in_flight:
                yield _next_finished(in_flight)
            in_flight[task.remote(*args)] = context
        while in_flight:
            yield _next_finished(in_flight)
    finally:
        for ref in in_flight:
            ray.cancel(ref)


def _next_finished(in_flight: dict[Any, Context]) -> tuple[Context, Any]:
    import ray

    (ref,), _ = ray.wait(list(in_flight), num_returns=1)
    return in_flight.pop(ref), ray.get(ref)
