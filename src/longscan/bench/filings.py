"""A filings development split: questions about the figures of whole reports kept out of
training, asked as a user asks them.

Loong's 20 sample items move five points per item, and only a handful have an answer that a
single unit holds, so they cannot rank retrievers on reports. This split is built from the
statement rows of ``HELD_OUT_FILINGS``: for each report and each line item found in one of its
tables (revenue, net income, total assets, operating cash flow, ...), the figure of the latest
year is read from the row and its column header, and the question is asked three ways:

- ``label``: the row's own wording ("What is the 'Total assets' of Tesla, Inc. at the end
  of 2024?");
- ``concept``: the standard name of the figure, which a report's row often words otherwise,
  and no period, as Loong's spotlight questions ask ("What is the Net Income of ...?");
- ``paraphrase``: the way people ask, with none of the row's words where that can be
  avoided ("What was everything Tesla, Inc. owned worth on its books at the end of 2024?").

Each item reads its report beside two other held-out reports, as Loong's items read several
companies. Gold evidence is every whole-token occurrence of the answer figure in the report
asked about, so ``hit@B`` says whether the figure is within the first B words of evidence.

A row is kept only when its figures line up with the years of the nearest column header
above it (one figure per year, every year once), which drops percentage columns, quarters
asked twice and headers the text lost; nothing here is hand-labelled.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from longscan.bench.datasets import LOONG_DOC_DIR, data_path, financial_name
from longscan.documents import Document
from longscan.items import GoldSpan, QAItem
from longscan.readers.files import read_file
from longscan.segment import count_words

FILINGS_DIR = "train-docs/sec-full-filings"
# The whole reports of ``train-docs/sec-full-filings`` that no packaged synthetic example of
# ``training-data/synthetic-filings`` names: the shipped scanner never read them, and
# training drops every example drawn from them (``training.synthetic_examples``).
HELD_OUT_FILINGS = (
    "10-K_0001193125-10-073212.txt",
    "10-K_0001376474-16-000635.txt",
    "amzn_amzn-10-k-2025-02-07.txt",
    "hd_hd-10-k-2025-03-21.txt",
    "nflx_nflx-10-q-2025-07-18.txt",
    "tsla_tsla-10-k-2025-01-30.txt",
    "wfc_wfc-10-k-2025-02-25.txt",
    "xom_xom-10-q-2025-08-04.txt",
)
DISTRACTORS = 2  # other reports read beside the one asked about


@dataclass(frozen=True, slots=True)
class LineItem:
    """A statement line: the row labels that name it, the standard name of what it
    reports (as Loong's questions name it) and a question that avoids both."""

    key: str
    concept: str
    label: re.Pattern[str]
    paraphrase: str  # {company} and {period} are filled in
    balance: bool = False  # a balance at the end of the year, not a flow during it
    per_share: bool = False  # a per-share figure: has decimals, sits under "per share"


def _label(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?:{pattern})(?=\s*[$(\d])", re.IGNORECASE)


LINE_ITEMS = (
    LineItem(
        "revenue",
        "Total Revenue",
        _label(r"total net sales|net sales|total (?:net )?revenues?|revenues?"),
        "How much did {company} bring in from customers {period}?",
    ),
    LineItem(
        "net_income",
        "Net Income",
        _label(
            r"net (?:income|earnings)(?: \(loss\))?"
            r"(?: attributable to (?!noncontrolling)[^$(\d]{3,60}?)?"
        ),
        "How much profit did {company} make {period}?",
    ),
    LineItem(
        "operating_income",
        "Operating Income",
        _label(r"operating income|income from operations"),
        "What did {company} earn from running its business, before interest and taxes, {period}?",
    ),
    LineItem(
        "gross_profit",
        "Gross Profit",
        _label(r"gross (?:profit|margin)"),
        "How much of {company}'s sales {period} was left after the cost of those sales?",
    ),
    LineItem(
        "operating_expenses",
        "Total Operating Expenses",
        _label(r"total operating expenses"),
        "How much did it cost {company} to run the business {period}, all overheads counted?",
    ),
    LineItem(
        "research",
        "Research and Development Expense",
        _label(r"research and development"),
        "How much did {company} invest in R&D {period}?",
    ),
    LineItem(
        "income_tax",
        "Income Tax Expense",
        _label(r"provision for income taxes|income tax (?:expense|provision)"),
        "What was {company}'s tax bill on its profits {period}?",
    ),
    LineItem(
        "eps_basic",
        "Basic Earnings Per Share",
        _label(r"basic earnings per share|basic"),
        "What did {company} earn for each share, before dilution, {period}?",
        per_share=True,
    ),
    LineItem(
        "eps_diluted",
        "Diluted Earnings Per Share",
        _label(r"diluted earnings per share|diluted"),
        "How much did {company} earn per share {period}, counting the shares its options "
        "and convertibles could add?",
        per_share=True,
    ),
    LineItem(
        "total_assets",
        "Total Assets",
        _label(r"total assets"),
        "What was everything {company} owned worth on its books {period}?",
        balance=True,
    ),
    LineItem(
        "total_liabilities",
        "Total Liabilities",
        _label(r"total liabilities"),
        "How much did {company} owe in all {period}?",
        balance=True,
    ),
    LineItem(
        "equity",
        "Total Equity",
        _label(r"total (?:stockholders|shareholders)['’]? equity"),
        "What was the owners' stake in {company} (its book value) {period}?",
        balance=True,
    ),
    LineItem(
        "cash",
        "Cash and Cash Equivalents at End of Period",
        _label(r"cash and cash equivalents(?:,? (?:at )?end of (?:year|period))?"),
        "How much cash did {company} hold {period}?",
        balance=True,
    ),
    LineItem(
        "operating_cash_flow",
        "Net Cash Flow from Operating Activities",
        _label(r"net cash provided by (?:\(used in\) )?operating activities"),
        "How much cash did {company}'s day-to-day operations generate {period}?",
    ),
    LineItem(
        "long_term_debt",
        "Long-term Debt",
        _label(r"long-term debt"),
        "How much did {company} have borrowed for the long run {period}?",
        balance=True,
    ),
)

_MONTHS = "January February March April May June July August September October November December"
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_FIGURE = re.compile(r"^\(?-?\d[\d,]*(?:\.\d+)?\)?$")
_HEADER_LOOKBACK = 80  # non-empty lines above a row searched for its column header
_TITLE_LOOKBACK = 8  # non-empty lines above a header searched for a statement's title


@dataclass(frozen=True, slots=True)
class StatementFigure:
    """One line item's latest figure in one report, read off a row of its tables."""

    item: LineItem
    row_label: str
    year: int
    period: str  # the header's date of that year ("June 30, 2025"), or the year alone
    figure: str  # as printed, parentheses kept: "(2,722)"
    row_start: int  # character offsets of the row in the report
    row_end: int
    consolidated: bool  # the table is titled as a consolidated statement


def _lines(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    for line in text.split("\n"):
        yield start, line
        start += len(line) + 1


def _row_figures(rest: str) -> list[str] | None:
    """The figures after a row label (``$`` dropped, ``( 2,722 )`` joined), or None when
    the row holds anything else (percentages, words)."""
    rest = re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", rest.replace("$", " ")))
    tokens = rest.split()
    if tokens and all(_FIGURE.match(token) or token == "—" for token in tokens):
        return tokens
    return None


def _header_years(line: str) -> list[int] | None:
    """The years of a column-header line ("Fiscal 2024 2023", "December 31, 2024 2023"),
    or None when the line is not one: it must name a year at least twice and hold no other
    number than a day of the month."""
    years = [int(year) for year in _YEAR.findall(line)]
    if len(years) < 2 or len(line) > 120:
        return None
    others = [n.rstrip(",") for n in _NUMBER.findall(_YEAR.sub(" ", line))]
    if any(not n.isdigit() or int(n) > 31 for n in others):
        return None
    return years


def _rows(lines: list[tuple[int, str]]) -> Iterator[tuple[int, int, str, str, int]]:
    """``(index, start, label line, figures, end)`` of every non-empty line that may be a
    table row: a label followed by figures on its line, or a label alone on its line whose
    next non-empty line holds the figures (a layout the text conversion often leaves);
    ``end`` is where the row's last line ends in the text."""
    for index, (start, line) in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped[0].isdigit():
            continue
        yield index, start, line, "", start + len(line)
        if index + 1 < len(lines) and not any(ch.isdigit() for ch in stripped):
            after, following = lines[index + 1]
            if _row_figures(following) is not None:
                yield index, start, line, following, after + len(following)


def _header(above: list[str]) -> tuple[int, list[int]] | None:
    """The index and years of the nearest column header in the lines above a row, or None
    where a paragraph of prose or a line naming a single year comes first: the row then
    belongs to a table whose header the text lost, and an older table's header would
    misalign it."""
    for index in reversed(range(len(above))):
        if (years := _header_years(above[index])) is not None:
            return index, years
        if len(above[index]) > 150 or len(_YEAR.findall(above[index])) == 1:
            return None
    return None


def _period(header: str, year: int) -> str:
    """The header's date for ``year`` ("June 30, 2025" in a quarterly report's header), or
    the year alone when the header names no date (an annual report's "2024 2023")."""
    date = re.search(rf"\b(?:{_MONTHS.replace(' ', '|')})\s+\d{{1,2}},\s+{year}\b", header)
    return date.group(0) if date else str(year)


def statement_figures(text: str) -> list[StatementFigure]:
    """Each line item's figure for the latest year its rows give, read off every row whose
    figures line up with a column header's years. Where rows disagree (a segment's table
    beside the statement), a row of a table titled "Consolidated ..." wins, then the figure
    most rows give, then the first."""
    lines = [(start, line) for start, line in _lines(text) if line.strip()]
    candidates: dict[str, list[StatementFigure]] = {}
    for index, start, line, following, end in _rows(lines):
        stripped = line.strip()
        for item in LINE_ITEMS:
            match = item.label.match(f"{stripped} {following.strip()}".strip())
            if not match or (following and match.end() < len(stripped)):
                continue
            figures = _row_figures(f"{stripped} {following}"[match.end() :])
            if figures is None:
                continue
            above = [prior for _, prior in lines[max(0, index - _HEADER_LOOKBACK) : index]]
            if item.per_share and not any("per share" in prior.lower() for prior in above[-8:]):
                continue
            found = _header(above)
            if found is None:
                continue
            header, years = found
            if len(years) != len(figures) or len(set(years)) != len(years):
                continue
            latest = max(years)
            figure = figures[years.index(latest)]
            digits = sum(character.isdigit() for character in figure)
            if figure == "—" or digits < 3 or item.per_share != ("." in figure):
                continue
            title = [
                prior.strip().lower() for prior in above[max(0, header - _TITLE_LOOKBACK) : header]
            ]
            if any("parent company" in prior or "of the registrant" in prior for prior in title):
                continue  # the parent company's own schedule, not the group's statement
            consolidated = any(prior.startswith("consolidated") for prior in title)
            offset = start + len(line) - len(line.lstrip())
            period = _period(above[header], latest)
            if period != str(latest) and not item.balance and "ended" not in above[header].lower():
                continue  # a flow under a balance date: a table of changes, not the statement
            row = StatementFigure(
                item, match.group(0).strip(), latest, period, figure, offset, end, consolidated
            )
            candidates.setdefault(item.key, []).append(row)
    chosen = []
    for item in LINE_ITEMS:
        rows = candidates.get(item.key, [])
        if rows:
            counts = Counter((row.year, row.figure) for row in rows)
            chosen.append(
                max(rows, key=lambda row: (row.consolidated, counts[(row.year, row.figure)]))
            )
    return chosen


def registrant(text: str) -> str:
    """The company's name as the cover page gives it (the line above "Exact name of
    registrant"), in title case when the filing prints it in capitals."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if "exact name of registrant" in line.lower():
            name = next((prior.strip() for prior in reversed(lines[:index]) if prior.strip()), "")
            if name:
                return name.title() if name.isupper() else name
    raise ValueError("no registrant name on the cover page")


def figure_spans(text: str, figure: str) -> list[tuple[int, int]]:
    """Every whole-token occurrence of a figure's digits ("(2,722)" is found as "2,722")."""
    digits = figure.strip("()")
    pattern = re.compile(rf"(?<![\d,.]){re.escape(digits)}(?![\d]|[,.]\d)")
    return [(match.start(), match.end()) for match in pattern.finditer(text)]


@cache
def _report(path: Path) -> Document:
    return read_file(path, doc_id=path.name)


def _questions(figure: StatementFigure, company: str) -> dict[str, str]:
    """The question in the row's words and in other words, the period said as a person
    says it ("at the end of 2024", "as of June 30, 2025", "in 2024", "in the period ended
    June 30, 2025"), and in the standard name with no period, as Loong asks for the
    report's latest figure."""
    dated = figure.period != str(figure.year)
    if figure.item.balance:
        period = f"as of {figure.period}" if dated else f"at the end of {figure.year}"
    else:
        period = f"in the period ended {figure.period}" if dated else f"in {figure.year}"
    return {
        "label": f"What is the '{figure.row_label}' of {company} {period}?",
        "concept": f"What is the {figure.item.concept} of {company}?",
        "paraphrase": figure.item.paraphrase.format(company=company, period=period),
    }


def build_filings(
    max_items: int | None = None,
    seed: int = 0,
    data_dir: str | Path | None = None,
    *,
    loong: bool = False,
) -> list[QAItem]:
    """The filings development split: every figure of every held-out report, asked three
    ways, each over its report and ``DISTRACTORS`` others drawn with ``seed``. With
    ``loong``, the same questions over the reports of Loong's development sample instead
    (small filers' quarterly reports in Loong's text layout), each named as Loong names it."""
    if loong:
        folder = data_path(LOONG_DOC_DIR, data_dir) / "financial"
        # one report per filer (the first file, as Loong picks it): two of one company
        # would leave its question two right answers
        firsts = {}
        for path in sorted(folder.glob("*.txt")):
            firsts.setdefault(financial_name(path.name), path)
        paths = list(firsts.values())
    else:
        folder = data_path(FILINGS_DIR, data_dir)
        paths = [folder / name for name in HELD_OUT_FILINGS]
    reports = [_report(path.resolve()) for path in paths]
    rng = random.Random(seed)
    items: list[QAItem] = []
    for report in reports:
        company = financial_name(report.id) if loong else registrant(report.text)
        others = [other for other in reports if other.id != report.id]
        for figure in statement_figures(report.text):
            spans = figure_spans(report.text, figure.figure)
            documents = [report, *rng.sample(others, DISTRACTORS)]
            rng.shuffle(documents)
            for phrasing, question in _questions(figure, company).items():
                items.append(
                    QAItem(
                        id=f"{Path(report.id).stem}:{figure.item.key}:{phrasing}",
                        query=question,
                        documents=documents,
                        gold_spans=[GoldSpan(report.id, start, end) for start, end in spans],
                        gold_doc_ids=[report.id],
                        answers=[figure.figure],
                        metadata={
                            "dataset": "filings-loong" if loong else "filings",
                            "split": "dev",
                            "phrasing": phrasing,
                            "line_item": figure.item.key,
                            "row": [figure.row_start, figure.row_end],
                            "year": figure.year,
                            "total_words": sum(count_words(d.text) for d in documents),
                        },
                    )
                )
    return items[:max_items]
