"""The work lexbor's HTML tree builder will spend on a page's nesting, estimated in one pass
over its tags before lexbor parses it.

For every new block element the tree builder searches down its stack of open elements (is a
``<p>`` open?), and for every end tag until it finds the element the tag names: ``m`` such
tags on a page nested ``n`` deep cost ``n·m`` steps, so 100,000 nested ``<div>`` take tens of
seconds. The estimate keeps the stack as the HTML standard's tree construction does (void
and raw-text elements; end tags implied by a new paragraph, list item, table cell, row,
option or heading; the section and row a table implies; end tags ignored outside their
scope; misnested formatting elements, which the parser moves, and reopens at the next text,
at most three alike) and counts the elements each search visits. Where it simplifies the
rules (SVG and MathML content, ``<select>``, ruby, quirks mode), it keeps elements open
rather than close them early.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field

_SPACE = "\t\n\f\r "
# A comment, a bogus comment (doctype, processing instruction, "</" before a non-letter), or
# a tag: its name, then attributes (a quoted value may hold ">"), up to ">" or the end.
_TOKEN = re.compile(
    r"<!--(?:-?>|.*?(?:--!?>|\Z))|<[!?][^>]*+>?|</(?![A-Za-z])[^>]*+>?"
    r"|<(/?)([A-Za-z][^\t\n\f\r />]*+)"
    r"((?:[\t\n\f\r /]++|[^\t\n\f\r />][^\t\n\f\r />=]*+"
    r"(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:\"[^\"]*+\"?|'[^']*+'?|[^\t\n\f\r >]*+))?)*+)(?:>|\Z)",
    re.S,
)
_RAW_END = {
    name: re.compile(rf"</{name}[{_SPACE}/>]", re.I)
    for name in ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
}
VOID = frozenset(
    ("area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
     "input", "keygen", "link", "meta", "param", "source", "track", "wbr")
)  # fmt: skip
MERGED = frozenset(("html", "head", "body"))  # the parser has them already: never pushed
FOREIGN = frozenset(("svg", "math"))
FORMATTING = frozenset(
    ("a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt",
     "u")
)  # fmt: skip
HEADINGS = frozenset(f"h{level}" for level in range(1, 7))
CELLS = frozenset(("td", "th"))
SECTIONS = frozenset(("tbody", "thead", "tfoot"))
TABLE_PARTS = CELLS | SECTIONS | {"tr", "caption", "colgroup"}
# The innermost of these sets how the parser reads a tag (elements placed before a table
# while it is open leave it in charge); inside those of TABLE_CONTEXT a table ends the one
# open.
STRUCTURE = TABLE_PARTS | {"table", "template"}
TABLE_CONTEXT = SECTIONS | {"table", "tr", "colgroup"}
# End tags that close an open select along with the element they name.
SELECT_CLOSERS = TABLE_PARTS | {"table", "select", "template"}
SCOPE = frozenset(
    ("applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "mi",
     "mo", "mn", "ms", "mtext", "annotation-xml", "foreignobject", "desc", "title")
)  # fmt: skip
MARKERS = frozenset(("applet", "marquee", "object", "td", "th", "caption", "template"))
# Where HTML resumes inside MathML and inside SVG.
INTEGRATION_IN = {
    "math": frozenset(("mi", "mo", "mn", "ms", "mtext", "annotation-xml")),
    "svg": frozenset(("foreignobject", "desc", "title")),
}
INTEGRATION = INTEGRATION_IN["math"] | INTEGRATION_IN["svg"]
SPECIAL = (
    frozenset(
        ("address", "applet", "area", "article", "aside", "base", "basefont", "bgsound",
         "blockquote", "body", "br", "button", "caption", "center", "col", "colgroup", "dd",
         "details", "dir", "div", "dl", "dt", "embed", "fieldset", "figcaption", "figure",
         "footer", "form", "frame", "frameset", "head", "header", "hgroup", "hr", "html",
         "iframe", "img", "input", "keygen", "li", "link", "listing", "main", "marquee",
         "menu", "meta", "nav", "noembed", "noframes", "noscript", "object", "ol", "p",
         "param", "plaintext", "pre", "script", "search", "section", "select", "source",
         "style", "summary", "table", "tbody", "td", "template", "textarea", "tfoot", "th",
         "thead", "title", "tr", "track", "ul", "wbr", "xmp")
    )
    | HEADINGS
    | INTEGRATION
)  # fmt: skip
CLOSES_P = (
    frozenset(
        ("address", "article", "aside", "blockquote", "center", "details", "dialog", "dir",
         "div", "dl", "fieldset", "figcaption", "figure", "footer", "header", "hgroup", "main",
         "menu", "nav", "ol", "p", "search", "section", "summary", "ul", "pre", "listing",
         "form", "li", "dd", "dt", "plaintext")
    )
    | HEADINGS
)  # fmt: skip
# HTML elements that end foreign (SVG, MathML) content they appear in.
BREAKOUT = (
    frozenset(
        ("b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt",
         "em", "embed", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr",
         "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike", "sub", "sup",
         "table", "tt", "u", "ul", "var")
    )
    | HEADINGS
)  # fmt: skip
# The categories an element's position is also kept under, each a stop for some search down
# the stack (names in angle brackets, which no tag name holds): the default, button, list
# item and table scopes; what ends the search for an open list item or definition; headings,
# cells and table sections; SVG and MathML roots, and the points where HTML resumes in them;
# the markers that bound the formatting elements to reopen.
_CATEGORY_MEMBERS = {
    "<special>": SPECIAL,
    "<scope>": SCOPE,
    "<button>": SCOPE | {"button"},
    "<list>": SCOPE | {"ol", "ul"},
    "<table>": frozenset(("html", "table", "template")),
    "<li-stop>": SPECIAL - {"address", "div", "p", "li"},
    "<dd-stop>": SPECIAL - {"address", "div", "p", "dd", "dt"},
    "<heading>": HEADINGS,
    "<cell>": CELLS,
    "<section>": SECTIONS,
    "<structure>": STRUCTURE,
    "<foreign>": FOREIGN,
    "<integration>": INTEGRATION,
    "<marker>": MARKERS,
}
# An element's name and categories. An element in SVG or MathML content is kept under its
# name after "foreign:" (an SVG <a> is not an HTML <a>), and only those where HTML resumes
# in its own language have categories there; in HTML, their names are unknown elements.
_HTML_LABELS = {
    name: (name, *(label for label, members in _CATEGORY_MEMBERS.items() if name in members))
    for members in _CATEGORY_MEMBERS.values()
    for name in members - INTEGRATION
}
_FOREIGN_LABELS = {
    (language, name): (f"foreign:{name}", *(label for label, members
                                            in _CATEGORY_MEMBERS.items() if name in members))
    for language, names in INTEGRATION_IN.items()
    for name in names
}  # fmt: skip
NOAHS_ARK = 3  # the parser keeps at most three alike formatting elements to reopen
ADOPTION_ROUNDS = 8  # the most special elements the adoption agency moves a copy through
# Start tags before which the parser does not reopen kept formatting elements.
NO_REOPEN = CLOSES_P | TABLE_PARTS | MERGED | {"hr", "table"}


def _labels(name: str, language: str) -> tuple[str, ...]:
    """The name and the categories an element's position is kept under (``language``:
    "svg" or "math" in SVG or MathML content, else "")."""
    if language:
        return _FOREIGN_LABELS.get((language, name)) or (f"foreign:{name}",)
    return _HTML_LABELS.get(name) or (name,)


@dataclass(slots=True)
class _Kept:
    """Formatting elements the parser will reopen, as name → (name and attributes → count):
    those closed by another element's end, at most ``NOAHS_ARK`` alike."""

    by_name: dict[str, dict[str, int]] = field(default_factory=dict)
    total: int = 0

    def add(self, key: str, count: int = 1) -> None:
        """Add ``count`` elements alike (``key``: name and attributes), as many as fit."""
        alike = self.by_name.setdefault(key.split(" ", 1)[0], {})
        fitted = min(count, NOAHS_ARK - alike.get(key, 0))
        if fitted > 0:
            alike[key] = alike.get(key, 0) + fitted
            self.total += fitted

    def take(self, name: str) -> str | None:
        """Take out one element named ``name``; its key, or None when there is none."""
        alike = self.by_name.get(name)
        if not alike:
            return None
        key = next(iter(alike))
        alike[key] -= 1
        if not alike[key]:
            del alike[key]
            if not alike:
                del self.by_name[name]
        self.total -= 1
        return key


@dataclass(slots=True)
class _Open:
    """An element on the estimated stack: its name, the labels its position is kept under,
    the depth below it, and, for a formatting element, its key (name and attributes) and the
    part of the list of formatting elements it belongs to (that after its last marker when
    it opened); whether it is still open (the parser takes a misnested formatting element or
    a form out of the middle); the copies of formatting elements the parser left inside it;
    and, for formatting elements reopened together, what they are."""

    name: str
    labels: tuple[str, ...]
    below: int
    key: str = ""
    level: _Kept | None = None
    live: bool = True
    moved: list[tuple[str, _Kept]] | None = None
    reopened: _Kept | None = None


class _Stack:
    """The stack of open elements as the tree builder keeps it, with the positions of the
    open elements by name and by category, so each search down the stack is a look at the
    end of a list; and the list of formatting elements to reopen at the next text or inline
    element, in parts apart by markers (a table cell, a caption, an object...): only the last
    part is reopened, and a marker's proper end clears it. ``depth`` counts what is on the
    stack (not what is kept to reopen), ``work`` the elements the parser's searches visit."""

    def __init__(self) -> None:
        self.entries: list[_Open] = []
        # Positions by name and category, each list starting at -1 (none), ascending.
        self.where: defaultdict[str, list[int]] = defaultdict(lambda: [-1])
        self.kept: list[_Kept] = [_Kept()]
        self.depth = 0
        self.work = 0

    def top(self, label: str) -> int:
        """The position of the topmost open element with this name or category, or -1."""
        return self.where[label][-1]

    def walk(self, stop: int) -> None:
        """Count a search from the top of the stack down to the element at ``stop`` (-1: the
        whole stack), one element at least."""
        self.work += max(self.depth - (self.entries[stop].below if stop >= 0 else 0), 1)

    def push(self, name: str, key: str = "", language: str = "") -> None:
        """Push an element (``key``: a formatting element's; ``language``: "svg" or "math"
        in SVG or MathML content)."""
        labels = _labels(name, language)
        for label in labels:
            self.where[label].append(len(self.entries))
        level = self.kept[-1] if key else None
        self.entries.append(_Open(name, labels, self.depth, key, level))
        self.depth += 1
        if name in MARKERS and not language:
            self.kept.append(_Kept())

    def clear_marker(self) -> None:
        """A marker's proper end: drop the last part of the list of formatting elements."""
        if len(self.kept) > 1:
            self.kept.pop()

    def reopen(self) -> None:
        """Reopen the last part of the list of formatting elements, as one entry on top."""
        level = self.kept[-1]
        if not level.total:
            return
        group = _Kept(level.by_name, level.total)
        level.by_name, level.total = {}, 0
        self.work += group.total
        for name in group.by_name:
            self.where[name].append(len(self.entries))
        self.entries.append(_Open("", (), self.depth, level=level, reopened=group))
        self.depth += group.total

    def pop_until(self, position: int) -> None:
        """Pop every element from the top down to ``position``, inclusive; the formatting
        elements above it are kept in their part of the list, to be reopened."""
        while len(self.entries) > position:
            entry = self.entries.pop()
            if entry.moved:
                self.depth -= len(entry.moved)
                for key, level in entry.moved:
                    level.add(key)
            if entry.reopened is not None:
                for name in entry.reopened.by_name:
                    self.where[name].pop()
                self.depth -= entry.reopened.total
                for alike in entry.reopened.by_name.values():
                    for key, count in alike.items():
                        entry.level.add(key, count)
            elif entry.live:
                for label in entry.labels:
                    self.where[label].pop()
                self.depth -= 1
                if entry.level is not None and len(self.entries) > position:
                    entry.level.add(entry.key)

    def remove(self, position: int, name: str) -> str:
        """Take one element named ``name`` out of the stack at ``position``, leaving those
        above it; its key."""
        entry = self.entries[position]
        if entry.reopened is not None:
            key = entry.reopened.take(name) or ""
            labels = () if name in entry.reopened.by_name else (name,)
        else:
            key, entry.live, labels = entry.key, False, entry.labels
        for label in labels:
            positions = self.where[label]
            del positions[bisect_left(positions, position)]
        self.depth -= 1
        return key

    def adopt(self, position: int, name: str) -> None:
        """End the formatting element at ``position`` as the adoption agency does: with no
        special element above it, pop to it; else it leaves the stack, and a copy of it,
        moved inside each special element above it in turn, ends after the last of them,
        unless the parser stops at the ``ADOPTION_ROUNDS``-th, where the copy stays open."""
        specials = self.where["<special>"]
        index = bisect_right(specials, position)
        entry = self.entries[position]
        if index == len(specials) and entry.reopened is None:
            self.pop_until(position)
            return
        key = self.remove(position, name)
        if len(specials) - index >= ADOPTION_ROUNDS and entry.level is not None:
            block = self.entries[specials[index + ADOPTION_ROUNDS - 1]]
            block.moved = [*(block.moved or ()), (key, entry.level)]
            self.depth += 1

    def forget(self, name: str) -> None:
        """Drop one kept element named ``name``: a new ``<a>`` or ``<nobr>`` ends the one
        before it."""
        self.kept[-1].take(name)


def _start(stack: _Stack, name: str, attributes: str, self_closing: bool) -> None:
    """Apply a start tag to the estimated stack."""
    if stack.top("<foreign>") > stack.top("<integration>"):
        if name not in BREAKOUT:
            if not self_closing:
                stack.push(name, language=stack.entries[stack.top("<foreign>")].name)
            return
        stack.pop_until(stack.top("<foreign>"))
    if name in MERGED or name in VOID or name in FOREIGN and self_closing:
        return
    if name in TABLE_PARTS:
        _table_part(stack, name)
        return
    if name == "form" and stack.top("form") >= 0:
        return  # a form inside a form is ignored
    structure = stack.top("<structure>")
    if name == "table" and structure >= 0 and stack.entries[structure].name in TABLE_CONTEXT:
        table = stack.top("table")
        if 0 <= table >= stack.top("<table>"):
            stack.pop_until(table)  # a table directly in a table ends it
    if name in CLOSES_P:
        paragraph, boundary = stack.top("p"), stack.top("<button>")
        stack.walk(max(paragraph, boundary))
        if paragraph > max(boundary, stack.top("select")):
            stack.pop_until(paragraph)
    if name in HEADINGS and 0 <= stack.top("<heading>") == len(stack.entries) - 1:
        stack.pop_until(len(stack.entries) - 1)
    elif name in ("li", "dd", "dt"):
        item = stack.top("li") if name == "li" else max(stack.top("dd"), stack.top("dt"))
        boundary = stack.top("<li-stop>" if name == "li" else "<dd-stop>")
        stack.walk(max(item, boundary))
        if item > boundary:
            stack.pop_until(item)
    elif name in ("a", "nobr"):
        # The parser looks through the formatting elements since the last marker for one.
        stack.walk(stack.top("<marker>"))
        stack.work += stack.kept[-1].total
        stack.forget(name)
        before = stack.top(name)
        if before > max(stack.top("<scope>"), stack.top("select")):
            stack.adopt(before, name)
    elif name in ("option", "optgroup"):
        for closed in ("option", "optgroup") if name == "optgroup" else ("option",):
            if 0 <= stack.top(closed) == len(stack.entries) - 1:
                stack.pop_until(len(stack.entries) - 1)
    elif name in ("button", "select"):
        before, boundary = stack.top(name), stack.top("<scope>")
        stack.walk(max(before, boundary))
        if before > boundary and (name == "select" or before > stack.top("select")):
            stack.pop_until(before)
            if name == "select":
                return  # a select inside a select only ends it
    stack.push(name, f"{name} {attributes.strip()}" if name in FORMATTING else "")


def _table_part(stack: _Stack, name: str) -> None:
    """A cell, row, section, caption or column group: the parser first clears the stack back
    to the row, section or table it belongs in, and inserts the section and row it implies;
    outside a table it ignores the tag."""
    table, structure = stack.top("<table>"), stack.top("<structure>")
    if table < 0:
        return
    if stack.entries[structure].name == "template" and structure < len(stack.entries) - 1:
        return  # in a template that holds other content
    row, section = stack.top("tr"), stack.top("<section>")
    if name in CELLS and row > table:
        base = row
    elif name in CELLS or name == "tr":
        base = max(section, table)
    else:
        base = table
    closes = max(stack.top("<cell>"), stack.top("caption")) > base  # ends the open one
    stack.pop_until(base + 1)
    if closes:
        stack.clear_marker()
    if name in CELLS and row < table or name == "tr":
        if section < table:
            stack.push("tbody")
        if name in CELLS:
            stack.push("tr")
    stack.push(name)


def _end(stack: _Stack, name: str) -> None:
    """Apply an end tag to the estimated stack."""
    top = stack.entries[-1] if stack.entries else None
    if top is not None and top.live and top.name == name and top.labels[0] == name:
        stack.work += 1  # the common case: the element on top, found at once
        stack.pop_until(len(stack.entries) - 1)
        if name in MARKERS:
            stack.clear_marker()
        return
    root, integration = stack.top("<foreign>"), stack.top("<integration>")
    if root > integration or 0 <= integration == len(stack.entries) - 1:
        position = stack.top(f"foreign:{name}")
        if position < root and stack.entries[root].name == name:
            position = root
        stack.walk(max(position, root))
        if 0 <= root <= position:  # an SVG or MathML element, found before any HTML one
            stack.pop_until(position)
            return
        if name in ("p", "br") and root > integration:
            stack.pop_until(root)  # they end SVG or MathML content
    if name in MERGED or name == "br":
        return
    position = stack.top("<heading>" if name in HEADINGS else name)
    stop = _END_STOPS.get(name) or (
        "<scope>"
        if name in FORMATTING or position >= 0 and "<special>" in stack.entries[position].labels
        else "<special>"
    )
    boundary = stack.top(stop) if stop != "template" else -1
    stack.walk(max(position, boundary))
    if name in FORMATTING:
        stack.work += stack.kept[-1].total  # it looks through those kept to reopen, too
    if position < max(boundary, 0) or name not in SELECT_CLOSERS and position < stack.top("select"):
        return  # none open in scope, or open outside a select, whose content cannot end it
    if name in FORMATTING:
        stack.adopt(position, name)
    elif name == "form":
        stack.remove(position, name)
    else:
        closes = (
            name in TABLE_PARTS | {"table"}
            and max(stack.top("<cell>"), stack.top("caption")) > position
        )
        stack.pop_until(position)
        if name in MARKERS or closes:  # a marker's end, or a table's ending its open cell
            stack.clear_marker()


# Where the search for the element an end tag names stops, by name; elsewhere at the first
# element of the default scope (special elements and formatting elements), or at the first
# special element (any other end tag). "template" ends whatever is open inside it.
_END_STOPS = {
    "template": "template",
    "li": "<list>",
    "p": "<button>",
    **{name: "<table>" for name in TABLE_PARTS | {"table"}},
}


def overrun(html: str, max_work: int) -> tuple[int, int] | None:
    """Where the estimated work of parsing ``html`` first passes ``max_work``: the character
    offset of the tag and the depth of the stack there; None when it stays within. One pass
    over the page, each tag in about constant time.
    """
    stack = _Stack()
    where, kept = stack.where, stack.kept
    position = 0
    while (match := _TOKEN.search(html, position)) is not None:
        if match.start() > position and kept[-1].total:  # text: the parser reopens them
            stack.reopen()
        position = match.end()
        closing, raw_name, attributes = match.groups()
        if raw_name is None:
            continue
        name = raw_name.lower()
        foreign = where["<foreign>"][-1] > where["<integration>"][-1] and name not in BREAKOUT
        if closing:
            _end(stack, name)
        else:
            if kept[-1].total and not foreign and name not in NO_REOPEN:
                stack.reopen()
            _start(stack, name, attributes, match.group().endswith("/>"))
        if stack.work > max_work:
            return match.start(), stack.depth
        if closing or foreign:
            continue
        if name == "plaintext":
            return None  # the rest of the page is text
        if name in _RAW_END:
            end = _RAW_END[name].search(html, position)
            position = len(html) if end is None else end.start()
    return None
