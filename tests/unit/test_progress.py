"""Progress in one style: nested bars share rich's single live display, and every bar is
gone once its work ends."""

from __future__ import annotations

from longscan import progress
from longscan.progress import Bar, track


def test_nested_bars_share_one_display_and_close_it() -> None:
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
