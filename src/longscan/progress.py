"""Progress of long work on stderr, in one style (rich) for every command.

Bars nest: a bar opened while another is shown becomes another line of the same display
(rich allows one live display at a time), and it is removed when done. Nothing is drawn when
stderr is not a terminal, so logs and pipes stay clean.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Item = TypeVar("Item")
stderr = Console(stderr=True)  # where bars are drawn (a test may put a recording one here)
_lock = threading.Lock()
_shared: Progress | None = None
_open_bars = 0


def _display() -> Progress:
    """The display every open bar draws on, started with the first bar."""
    global _shared
    if _shared is None:
        _shared = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=stderr,
            transient=True,
        )
        _shared.start()
    return _shared


class Bar:
    """One line of progress: ``with Bar("encoding", total=n) as bar: bar.advance()``.

    Args:
        description: What is being done.
        total: Steps in all; None when unknown.
        enabled: False draws nothing (a caller's ``progress=False``).
    """

    def __init__(self, description: str, total: float | None = None, enabled: bool = True):
        self.description = description
        self.total = total
        self.enabled = enabled
        self._task: TaskID | None = None

    def __enter__(self) -> Bar:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def start(self) -> Bar:
        """Show the bar (``with`` does this; call ``close`` when not using ``with``)."""
        global _open_bars
        if self.enabled:
            with _lock:
                _open_bars += 1
                self._task = _display().add_task(self.description, total=self.total, note="")
        return self

    def close(self) -> None:
        global _open_bars, _shared
        if self._task is None:
            return
        with _lock:
            display = _display()
            display.remove_task(self._task)
            self._task = None
            _open_bars -= 1
            if _open_bars == 0:
                display.stop()
                _shared = None

    def advance(self, steps: float = 1) -> None:
        if self._task is not None:
            _display().advance(self._task, steps)

    def update(self, completed: float | None = None, note: str | None = None) -> None:
        """Set the steps done and a short note shown after the bar (tokens so far, ...)."""
        if self._task is not None:
            fields = {} if note is None else {"note": note}
            _display().update(self._task, completed=completed, **fields)


def track(
    items: Iterable[Item], description: str, total: float | None = None, enabled: bool = True
) -> Iterator[Item]:
    """``items``, advancing a bar as each is taken (``total`` defaults to ``len(items)``)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with Bar(description, total, enabled) as bar:
        for item in items:
            yield item
            bar.advance()
