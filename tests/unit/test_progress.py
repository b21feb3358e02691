"""Progress in one style: nested bars share rich's single live display, and every bar is
gone once its work ends; where stderr is not a terminal, lasting work writes plain lines."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from longscan import progress
from longscan.progress import Bar, track


def _stderr(monkeypatch: pytest.MonkeyPatch, terminal: bool) -> io.StringIO:
    """What the bars write, on a terminal or not (a log, a pipe)."""
    written = io.StringIO()
    monkeypatch.setattr(progress, "stderr", Console(file=written, force_terminal=terminal))
    return written


def test_nested_bars_share_one_display_and_close_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _stderr(monkeypatch, terminal=True)
    seen = []
    with Bar("outer", total=3) as outer:
        for item in track(range(4), "inner"):  # rich would refuse a second live display
            seen.append(item)
            assert progress._shared is not None
            assert len(progress._shared.tasks) == 2
        outer.advance()
        outer.update(note="3 tokens")
        assert progress._shared.tasks[0].completed == 1
        assert progress._shared.tasks[0].fields["note"] == "3 tokens"
    assert seen == [0, 1, 2, 3] and progress._shared is None


def test_a_disabled_bar_draws_nothing_and_still_yields() -> None:
    assert list(track(iter("abc"), "quiet", enabled=False)) == ["a", "b", "c"]
    assert progress._shared is None


def test_lasting_work_writes_plain_lines_where_stderr_is_no_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written = _stderr(monkeypatch, terminal=False)
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)  # every step lasts long enough
    with Bar("ingesting documents", total=4) as bar:
        bar.advance()
        bar.update(completed=3, note="1,200 tokens")
        bar.advance()
        monkeypatch.setattr(progress, "LINE_SECONDS", 60.0)
        bar.update(note="1,500 tokens")  # the last step, quickly
    lines = written.getvalue().splitlines()
    assert progress._shared is None  # no live display: no escape sequences in a log
    assert [line.split(",")[0] for line in lines] == [
        "ingesting documents: 1/4 (25%)",
        "ingesting documents: 3/4 (75%)",
        "ingesting documents: 4/4 (100%)",
        "ingesting documents: 4/4 (100%)",  # the last step's, when the bar closes
    ]
    assert "s left" in lines[0] and lines[1].endswith(", 1,200 tokens")
    assert lines[3].endswith(", 1,500 tokens")


def test_quick_work_writes_nothing_where_stderr_is_no_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written = _stderr(monkeypatch, terminal=False)
    assert list(track(range(3), "counting")) == [0, 1, 2]
    assert written.getvalue() == ""


def test_no_last_line_repeats_the_one_before(monkeypatch: pytest.MonkeyPatch) -> None:
    written = _stderr(monkeypatch, terminal=False)
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)
    with Bar("reading", total=2) as bar:
        bar.advance(2)
    (line,) = written.getvalue().splitlines()
    assert line.startswith("reading: 2/2 (100%), ") and line.endswith(" s")
