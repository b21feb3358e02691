"""The main text of an HTML page with ``selectolax``, and the headings each part sits under.

The text is rebuilt from the page's elements: a block element (paragraph, list, table,
heading) becomes a paragraph, a table row or list item a line with its cells apart by tabs,
and navigation, scripts and forms are left out. When the page marks its main content
(``<main>``, else a single ``<article>``), only that is read.
"""

from __future__ import annotations

from pathlib import Path

from longscan.documents import DocumentError
from longscan.readers.extracted import Extracted, TextBuilder
from longscan.readers.html_nesting import overrun

SKIPPED = frozenset(
    ("head", "script", "style", "noscript", "template", "nav", "header", "footer", "aside",
     "form", "button", "select", "svg", "canvas", "iframe", "object", "embed", "-comment")
)  # fmt: skip
BLOCKS = frozenset(
    ("p", "div", "section", "article", "main", "ul", "ol", "dl", "dt", "dd", "blockquote",
     "pre", "figure", "figcaption", "caption", "table", "thead", "tbody", "tfoot", "address",
     "hr", "details", "summary", "center", "body", "html")
)  # fmt: skip
LINES = frozenset({"li", "tr", "br"})
CELLS = frozenset({"td", "th"})
HEADINGS = {f"h{level}": level for level in range(1, 7)}
CELL = "\x1f"  # marks a new cell inside a line until the line is joined with tabs
MAX_PARSE_WORK = 500_000_000
"""The most elements the HTML parser's searches of its stack of open elements may visit on
one page, as ``html_nesting.overrun`` estimates them before parsing: a few seconds of
parsing. Each search can go as deep as the nesting, so a page nested ``n`` deep costs up to
``n²``: 100,000 nested ``<div>`` need 5·10⁹ (tens of seconds). Real pages stay far below: a
15 MB filing needs about 10⁶, and 100,000 tags nested 512 deep (where Chromium's parser stops
nesting) 5·10⁷."""


class _Walker:
    """Turns the element tree into blocks of lines without recursion, so deeply nested pages
    cannot exhaust the stack."""

    def __init__(self) -> None:
        self.builder = TextBuilder()
        self.headings: list[tuple[int, str]] = []
        self.lines: list[str] = []
        self.line: list[str] = []

    @property
    def section(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.headings)

    def end_line(self) -> None:
        cells = (" ".join(cell.split()) for cell in "".join(self.line).split(CELL))
        text = "\t".join(cell for cell in cells if cell)
        if text:
            self.lines.append(text)
        self.line = []

    def end_block(self) -> None:
        self.end_line()
        self.builder.add("\n".join(self.lines), section=self.section)
        self.lines = []

    def heading(self, level: int, text: str) -> None:
        self.end_block()
        text = " ".join(text.split())
        if not text:
            return
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, text))
        self.builder.add(text, section=self.section)

    def walk(self, root) -> None:  # noqa: ANN001 (selectolax's node type)
        stack = [(root, False)]
        while stack:
            node, closing = stack.pop()
            tag = node.tag
            if closing:
                if tag in BLOCKS:
                    self.end_block()
                elif tag in LINES:
                    self.end_line()
                continue
            if tag == "-text":
                self.line.append(node.text(deep=False))
                continue
            if tag in SKIPPED:
                continue
            if tag in HEADINGS:
                self.heading(HEADINGS[tag], node.text(deep=True, separator=" "))
                continue
            if tag in BLOCKS:
                self.end_block()
            elif tag in LINES:
                self.end_line()
            elif tag in CELLS:
                self.line.append(CELL)
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(list(node.iter(include_text=True))))


def read_html(path: Path) -> Extracted:
    """The page's main text, a paragraph per block, with its heading paths.

    Raises:
        DocumentError: a page without any text, or one nested so deep that parsing it would
            take past ``MAX_PARSE_WORK``.
    """
    from selectolax.lexbor import LexborHTMLParser

    page = path.read_bytes().decode("utf-8", errors="replace")
    found = overrun(page, MAX_PARSE_WORK)
    if found is not None:
        offset, depth = found
        raise DocumentError(
            f"{path}: elements nested {depth:,} deep (at character {offset:,}); the HTML "
            "parser's work grows with the square of the nesting, past "
            f"{MAX_PARSE_WORK:,} steps here, so the page is not read"
        )
    tree = LexborHTMLParser(page)
    articles = tree.css("article")
    root = tree.css_first("main") or (articles[0] if len(articles) == 1 else None) or tree.body
    if root is None:
        raise DocumentError(f"{path}: the page has no body")
    walker = _Walker()
    walker.walk(root)
    walker.end_block()
    title = tree.css_first("title")
    extracted = walker.builder.build(title=title.text(strip=True) if title else "")
    if not extracted.text:
        raise DocumentError(f"{path}: the page holds no text")
    return extracted
