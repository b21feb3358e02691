"""The heading path of every part of a Markdown text, found with ``markdown-it-py`` (so a
``#`` inside a code block is not a heading). The text itself is read as plain text: its
offsets are those of the user's file."""

from __future__ import annotations

import re

from longscan.documents import Place

_LINE_END = re.compile(r"\r\n?|\n")  # the line ends markdown-it counts lines by


def markdown_places(text: str) -> tuple[Place, ...]:
    """A place at every ATX or setext heading, naming the headings it sits under."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    line_starts = [0, *(match.end() for match in _LINE_END.finditer(text))]
    places: list[Place] = []
    headings: list[tuple[int, str]] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        level = int(token.tag[1:])
        title = " ".join(tokens[index + 1].content.split())
        while headings and headings[-1][0] >= level:
            headings.pop()
        headings.append((level, title))
        places.append(Place(line_starts[token.map[0]], None, tuple(h for _, h in headings)))
    return tuple(places)
