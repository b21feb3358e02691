"""Where batch work runs: in this process, or on Ray, with a bounded number in flight.

Without a Ray session (the default), ``bounded_map`` runs each call here, one after another:
the encoders already use every core, and a small ``bank add`` must not pay seconds of
cluster start. ``execution(address)`` opens a Ray session instead (the ``[cluster]`` extra):
``local`` starts Ray embedded on this machine (no dashboard, quiet logs), any other address
joins a running cluster (``ray://host:10001`` or ``auto``), and the same code runs there.
Tasks are retried when their worker dies (``max_retries``), so a killed worker costs time,
never a result: each task's result is returned once, from the attempt that finished.
Submitting a whole corpus at once would hold all of it in the object store; ``bounded_map``
keeps at most ``max_in_flight`` tasks submitted, so memory stays flat however long the input.

An embedded session is bound to this process: a watchdog process kills what is left of it
when this process ends, however it ends (Ray's own fate-sharing kills the head processes on
``SIGKILL``, but not the agents they start). Its temporary folder (sockets, logs) is a short
one of its own when ``TMPDIR`` is long, because a Unix socket path holds at most 107 bytes.

A cluster is checked before any work: every node must run the same longscan version with the
same weights (``check_nodes``), since a node with other weights would write vectors that do
not match the others' into the same index.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from longscan.files import weights_digest
from longscan.settings import temp_root, worker_environment

Context = TypeVar("Context")

TASK_RETRIES = 3  # attempts after a worker dies (a process killed, a node lost)
NODE_CHECK_S = 120.0  # how long a node may take to answer the installation check
EMBEDDED = "local"  # the address that starts Ray on this machine
INSTALL_HINT = 'Ray is not installed: pip install "longscan[cluster]"'
OBJECT_STORE_BYTES = 512 * 1024**2  # embedded only: batches in flight are a few MB each
# Ray's sockets are ``<temp dir>/session_<date>_<time>_<µs>_<pid>/sockets/plasma_store``:
# 64 characters after the folder, in a path of at most 107 bytes.
MAX_TEMP_DIR_CHARS = 40
WATCHDOG = """
import os, select, sys, time
import psutil

roots = []
for pid in sys.argv[1:]:
    try:
        roots.append(psutil.Process(int(pid)))
    except psutil.NoSuchProcess:
        pass
seen = {}
while True:
    for root in roots:
        try:
            for process in [root, *root.children(recursive=True)]:
                seen.setdefault(process.pid, process)
        except psutil.NoSuchProcess:
            pass
    ready, _, _ = select.select([0], [], [], 1.0)
    if ready and not os.read(0, 64):
        break  # end of file: the driver ended its session, or died
left = [p for p in seen.values() if p.is_running()]  # is_running: the same process, not its pid
for process in left:
    try:
        process.terminate()
    except psutil.NoSuchProcess:
        pass
_, alive = psutil.wait_procs(left, timeout=3)
for process in alive:
    try:
        process.kill()
    except psutil.NoSuchProcess:
        pass
"""


def execution(address: str | None) -> contextlib.AbstractContextManager[None]:
    """Run the block's ``bounded_map`` calls in this process (``address`` None), on Ray
    embedded here (``local``), or on the Ray cluster at ``address``."""
    if address is None:
        return contextlib.nullcontext()
    return ray_session(None if address == EMBEDDED else address)


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[None]:
    """Use the Ray session already started, or start one for the duration of the block.

    Args:
        address: A cluster to join; ``None`` starts Ray embedded on this machine.
        num_cpus: Workers for an embedded session (default: every core); ignored on a cluster.

    Raises:
        ValueError: Ray is not installed, or the cluster cannot be joined.
    """
    try:
        import ray
    except ImportError:
        raise ValueError(INSTALL_HINT) from None

    if ray.is_initialized():
        yield
        return
    watchdog = None
    if address is None:
        before = _children()
        ray.init(
            num_cpus=num_cpus or os.cpu_count() or 1,
            object_store_memory=OBJECT_STORE_BYTES,
            include_dashboard=False,
            logging_level=logging.WARNING,
            ignore_reinit_error=True,
            _temp_dir=ray_temp_dir(),
            runtime_env={"env_vars": worker_environment()},
        )
        watchdog = _start_watchdog(_children() - before)
    else:
        try:
            ray.init(
                address=address,
                logging_level=logging.WARNING,
                ignore_reinit_error=True,
                runtime_env={"env_vars": worker_environment()},
            )
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise ValueError(f"cannot join the Ray cluster at {address!r}: {error}") from None
    try:
        if address is not None:
            check_nodes()
        yield
    finally:
        ray.shutdown()
        if watchdog is not None:
            watchdog.stdin.close()  # type: ignore[union-attr]  # it cleans up what is left
            with contextlib.suppress(subprocess.TimeoutExpired):
                watchdog.wait(timeout=10)


def ray_temp_dir() -> str | None:
    """A temporary folder for an embedded Ray, or ``None`` for Ray's own (``$RAY_TMPDIR``,
    ``$TMPDIR`` or ``/tmp``, then ``ray``) when that is short enough for its socket paths.

    The short one is ``/tmp/longscan-ray-<uid>``, private to this user; if someone else
    owns that name, a fresh ``/tmp/longscan-ray-*`` folder.
    """
    system = temp_root()
    if len(os.path.join(system, "ray")) <= MAX_TEMP_DIR_CHARS:
        return None
    folder = Path("/tmp") / f"longscan-ray-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
        return tempfile.mkdtemp(prefix="longscan-ray-", dir="/tmp")
    return str(folder)


def installation() -> dict[str, str]:
    """What this machine runs: its longscan version and ``files.weights_digest``."""
    from longscan import __version__

    return {"longscan": __version__, "weights": weights_digest()}


def check_nodes(expected: dict[str, str] | None = None) -> None:
    """Check that every live node of the Ray session runs ``expected`` (by default this
    process's ``installation``), by a task pinned to each node.

    Raises:
        ValueError: a node runs another longscan or other weights (naming the node and
            what it runs), or does not answer within ``NODE_CHECK_S``.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    wanted = expected or installation()
    probe = ray.remote(num_cpus=0, max_retries=0)(installation)
    nodes = [node for node in ray.nodes() if node["Alive"]]
    refs = [
        probe.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote()
        for node in nodes
    ]
    try:
        found = ray.get(refs, timeout=NODE_CHECK_S)
    except ray.exceptions.GetTimeoutError:
        raise ValueError(f"a Ray node did not answer within {NODE_CHECK_S:g} s") from None
    differ = [
        f"{node['NodeManagerAddress']} ({node['NodeID'][:8]}) runs {theirs}"
        for node, theirs in zip(nodes, found, strict=True)
        if theirs != wanted
    ]
    if differ:
        raise ValueError(
            f"every Ray node must run this longscan and its weights ({wanted}); "
            + "; ".join(differ)
            + ". Install the same longscan on every node"
        )


def _children() -> set[int]:
    """The ids of this process's children."""
    import psutil

    return {child.pid for child in psutil.Process().children()}


def _start_watchdog(pids: set[int]) -> subprocess.Popen[bytes]:
    """A process that waits for this one to end (its stdin reaches end of file: the kernel
    closes the pipe however this process dies), then kills ``pids`` and every process they
    started that is still running. It runs in a session of its own, so a Ctrl-C meant for
    this process does not stop it before it has cleaned up."""
    return subprocess.Popen(
        [sys.executable, "-c", WATCHDOG, *map(str, sorted(pids))],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def on_ray() -> bool:
    """Whether a Ray session is open in this process (without importing Ray when it is not
    loaded: then no session can be open)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def workers() -> int:
    """Tasks that can run at once: the session's CPUs on Ray (at least 1), else 1."""
    if not on_ray():
        return 1
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _remote(function: Callable[..., Any]) -> Any:
    """``function`` as a Ray task of one CPU, retried when its worker dies.

    Python exceptions are not retried: encoding and searching are deterministic, so an
    exception would only repeat; a dead worker is what a retry repairs.
    """
    import ray

    return ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(function)


def bounded_map(
    function: Callable[..., Any],
    calls: Iterable[tuple[Context, tuple[Any, ...]]],
    max_in_flight: int,
) -> Iterator[tuple[Context, Any]]:
    """Run ``function(*args)`` for each ``(context, args)``, yielding ``(context, result)``.

    In a Ray session each call is a task, yielded as it finishes (not in order), with at
    most ``max_in_flight`` submitted at a time; tasks still running when the caller stops
    (an error, an interrupt) are cancelled. Without one, calls run here, in order. Either
    way ``calls`` is read lazily, so the input may be a generator over a corpus larger than
    memory.
    """
    if max_in_flight < 1:
        raise ValueError("max_in_flight must be at least 1")
    if not on_ray():
        for context, args in calls:
            yield context, function(*args)
        return
    import ray

    task = _remote(function)
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
