"""HTML nested so that the parser's work grows with the square of the depth is refused
before it is parsed, whatever markup builds the nesting; deep but cheap nesting and sloppy
real-world markup still read."""

from __future__ import annotations

from pathlib import Path

import pytest
import selectolax.lexbor

from longscan.documents import DocumentError
from longscan.readers.files import read_file
from longscan.readers.html import read_html

N = 100_000
QUADRATIC = {
    "nested divs": "<div>" * N + "deep text" + "</div>" * N,
    "unclosed divs": "<div>" * N + "deep text",
    "self-closing divs": "<div/>" * N + "deep text",
    "nested lists": "<ul><li>" * 40_000 + "deep text",
    "mixed blocks": "<section><article><div>" * 15_000 + "deep text",
    "end tags matching nothing": "<span>" * 40_000 + "</em>" * 40_000,
    "end tags out of scope": ("<span>" * 10 + "<div>" * 10 + "</span>" * 10) * 4_000,
    "end tags kept out by a paragraph": ("<span>" * 5 + "<p>" + "</span>" * 5 + "<div>") * 16_000,
    "reopened formatting": "<div><font size=2>x</div>y" * 40_000,
    "tables closing in between": ("<div>" * 10 + "<table><td>" + "</div>" * 10 + "</table>")
    * 4_000,
}


def write(path: Path, body: str) -> Path:
    path.write_text(f"<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>")
    return path


@pytest.mark.parametrize("body", QUADRATIC.values(), ids=QUADRATIC.keys())
def test_nesting_that_costs_the_square_of_its_depth_is_refused_unparsed(
    body: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the page was handed to the parser")

    monkeypatch.setattr(selectolax.lexbor, "LexborHTMLParser", not_parsed)
    path = write(tmp_path / "deep.html", body)
    with pytest.raises(DocumentError, match=r"deep.html: elements nested [\d,]+ deep .* not read"):
        read_file(path)


def test_deep_nesting_that_parses_in_linear_time_still_reads(tmp_path: Path) -> None:
    path = write(tmp_path / "spans.html", "<p>" + "<span>" * 50_000 + "deep text")
    assert read_html(path).text == "deep text"


def test_sloppy_markup_reads_with_every_paragraph(tmp_path: Path) -> None:
    blocks = []
    for number in range(2_000):
        blocks += [
            f"<p><font face=arial size=2>Paragraph {number} left open",  # no </font>, no </p>
            f"<ul><li><a href=/{number}>Link {number}<li>Item {number}</ul>",  # open <a>, <li>
            f"<table><tr><td><b>Cell {number}<td>Next {number}</table>",  # open <b>, <td>, <tr>
            f"<b><p>Misnested {number}</b></p>",
            f"<select><option>One {number}<option>Two {number}</select>",  # open <option>
        ]
    path = write(tmp_path / "sloppy.html", "".join(blocks))
    text = read_html(path).text
    for number in (0, 1_000, 1_999):
        for words in ("Paragraph", "Item", "Next", "Misnested"):
            assert f"{words} {number}" in text
