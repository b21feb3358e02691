"""Progress of long work on stderr, in one style (rich) for every command.

Bars nest: a bar opened while another is shown becomes another line of the same display
(rich allows one live display at a time), and it is removed when done. When stderr is not a
terminal (a log, a pipe), nothing is drawn: a bar whose work lasts writes a plain line every
``LINE_SECONDS`` instead, and one when it ends, so a log shows the work moving and work done
quickly adds nothing to it.
"""

from __future__ import annotations

import threading
import time
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
LINE_SECONDS = 10.0  # between two lines of a bar when stderr is not a terminal
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
        self._lines: _Lines | None = None

    def __enter__(self) -> Bar:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def start(self) -> Bar:
        """Show the bar (``with`` does this; call ``close`` when not using ``with``)."""
        global _open_bars
        if not self.enabled:
            return self
        if not stderr.is_terminal:
            self._lines = _Lines(self.description, self.total)
            return self
        with _lock:
            _open_bars += 1
            self._task = _display().add_task(self.description, total=self.total, note="")
        return self

    def close(self) -> None:
        global _open_bars, _shared
        if self._lines is not None:
            self._lines.close()
            self._lines = None
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
        if self._lines is not None:
            self._lines.update(self._lines.completed + steps)
        if self._task is not None:
            _display().advance(self._task, steps)

    def update(self, completed: float | None = None, note: str | None = None) -> None:
        """Set the steps done and a short note shown after the bar (tokens so far, ...)."""
        if self._lines is not None:
            self._lines.update(completed, note)
        if self._task is not None:
            fields = {} if note is None else {"note": note}
            _display().update(self._task, completed=completed, **fields)


class _Lines:
    """A bar as plain lines (``description: done/total (percent), elapsed, left, note``), at
    most one every ``LINE_SECONDS``, and on ``close`` a last one when the work went on after
    the one before."""

    def __init__(self, description: str, total: float | None) -> None:
        self.description = description
        self.total = total
        self.completed = 0.0
        self.note = ""
        self.started = self.written = time.monotonic()
        self.shown: tuple[float, str] | None = None  # what the last line said
        self._lock = threading.Lock()

    def update(self, completed: float | None = None, note: str | None = None) -> None:
        with self._lock:
            self.completed = self.completed if completed is None else completed
            self.note = self.note if note is None else note
            if time.monotonic() - self.written >= LINE_SECONDS:
                self._write()

    def close(self) -> None:
        with self._lock:
            if self.shown not in (None, (self.completed, self.note)):
                self._write()

    def _write(self) -> None:
        now = time.monotonic()
        elapsed = now - self.started
        parts = [f"{self.completed:,.0f}"]
        if self.total:
            parts[0] += f"/{self.total:,.0f} ({self.completed / self.total:.0%})"
        parts.append(f"{elapsed:,.0f} s")
        if self.total and 0 < self.completed < self.total:
            parts.append(f"about {elapsed * (self.total / self.completed - 1):,.0f} s left")
        if self.note:
            parts.append(self.note)
        line = f"{self.description}: {', '.join(parts)}"
        stderr.print(line, markup=False, highlight=False, soft_wrap=True)
        self.written = now
        self.shown = (self.completed, self.note)


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
