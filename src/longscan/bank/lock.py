"""The bank's writer lock: one process writes at a time.

An ``flock`` on ``write.lock``, which the kernel releases when its holder dies, however it
dies, so a killed writer never leaves the bank locked. The file names its holder, so a
writer that finds it taken can say whom it waits for.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from longscan.bank.errors import BankBusy

LOCK_POLL_SECONDS = 0.2
logger = logging.getLogger(__name__)


class WriterLock:
    """The writer lock of the bank in ``folder``, re-entrant within one process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._file: IO[str] | None = None
        self._depth = 0

    @property
    def held(self) -> bool:
        """Whether this process holds the lock now (only its holder may save an index)."""
        return self._depth > 0

    @contextlib.contextmanager
    def hold(self, timeout: float | None) -> Iterator[None]:
        """Hold the lock for the block, waiting (with a message) up to ``timeout`` seconds
        for another process's writer; ``None`` waits as long as it takes."""
        if self._depth == 0:
            self._acquire(timeout)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._release()

    def _acquire(self, timeout: float | None) -> None:
        file = open(self.folder / "write.lock", "a+")  # noqa: SIM115  # held until _release
        started = time.monotonic()
        warned = False
        while True:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                file.seek(0)
                holder = file.read().strip() or "another process"
                waited = time.monotonic() - started
                if timeout is not None and waited >= timeout:
                    file.close()
                    raise BankBusy(
                        f"the bank in {self.folder} is being written by {holder}; "
                        f"gave up after {waited:.0f} s (one writer at a time: try again "
                        "when it has finished)"
                    ) from None
                if not warned:
                    logger.warning(
                        "the bank in %s is being written by %s; waiting for it to finish",
                        self.folder,
                        holder,
                    )
                    warned = True
                time.sleep(LOCK_POLL_SECONDS)
        file.seek(0)
        file.truncate()
        file.write(f"pid {os.getpid()} ({' '.join(sys.argv)[:200]})")
        file.flush()
        self._file = file

    def _release(self) -> None:
        file, self._file = self._file, None
        assert file is not None
        file.seek(0)
        file.truncate()
        file.close()  # closing releases the flock
