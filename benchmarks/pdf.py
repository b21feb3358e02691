"""PDF citations and memory: Loong's financial reports printed to PDF, read back, and asked.

Citations: every financial report of the Loong development items is printed to a PDF with
fpdf2, its lines flowing over pages as a word processor would, and the page each source
line starts on is recorded while printing. The PDF is read back with `read_file`, each
item's question is asked with the retrievers below, and each piece of evidence's `page` is
compared with the page its first character was printed on (characters are matched between
the PDF's text and the source in order, white space aside).

Memory: the same reports printed to 100 and to 1,000 pages, each read (text and sentences)
in a process of its own; its peak RSS is compared.

python benchmarks/pdf.py --retrievers bm25-sentence,scanner --top-k 10
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import logging
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

from fpdf import FPDF

from longscan.bench.datasets import load_loong
from longscan.documents import Document
from longscan.readers.files import read_file
from longscan.retrievers import get_retriever

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from printed_pdf import FONT  # noqa: E402  (the tests' Unicode font)

LINE_HEIGHT = 4.5
FONT_SIZE = 9


def printable_line(line: str) -> str:
    """A line as printed: a tab as a space (fpdf2 draws no tab stops), so offsets stay."""
    return line.replace("\t", " ")


def print_pdf(text: str, path: Path) -> list[tuple[int, int]]:
    """Print ``text`` line by line, pages flowing, each line wrapped into rows that are
    printed one by one; ``(source offset, page)`` of every row, so a line that wraps over a
    page break gives each part its own page."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_font("DejaVu", fname=str(FONT))
    pdf.set_font("DejaVu", size=FONT_SIZE)
    pdf.add_page()
    rows: list[tuple[int, int]] = []
    offset = 0
    for line in text.split("\n"):
        printed = printable_line(line)
        at = 0  # where the next row starts in the line
        wrapped = pdf.multi_cell(0, LINE_HEIGHT, printed, dry_run=True, output="LINES")
        for row in wrapped if printed.strip() else [""]:
            found = printed.find(row.strip(), at) if row.strip() else at
            at = max(found, at)
            page = pdf.page_no() + int(pdf.will_page_break(LINE_HEIGHT))
            rows.append((offset + min(at, len(line)), page))
            pdf.cell(0, LINE_HEIGHT, row, new_x="LMARGIN", new_y="NEXT")
            at += len(row.strip())
        offset += len(line) + 1
    pdf.output(str(path))
    return rows


def dense_index(text: str) -> list[int]:
    """Offsets of the visible characters of ``text`` (not white space, not format or control
    characters such as U+200B, which print as nothing), in order."""
    return [i for i, c in enumerate(text)
            if not c.isspace() and unicodedata.category(c) not in ("Cf", "Cc")]  # fmt: skip


class Alignment:
    """Where each non-space character of the PDF's text came from in the source. The two
    differ only where the font lacked a glyph (Loong's titles are in 《》, which print as
    nothing), so a linear walk that skips source characters the PDF lacks matches the rest.
    """

    RESYNC = 8  # source characters a mismatch may skip (one missing glyph run)

    def __init__(self, extracted: str, source: str) -> None:
        pdf, original = dense_index(extracted), dense_index(source)
        self.pdf_offsets: list[int] = []
        self.source_offsets: list[int] = []
        i = j = 0
        while i < len(pdf) and j < len(original):
            if extracted[pdf[i]] == source[original[j]]:
                self.pdf_offsets.append(pdf[i])
                self.source_offsets.append(original[j])
                i, j = i + 1, j + 1
                continue
            ahead = next((k for k in range(1, self.RESYNC + 1) if j + k < len(original)
                          and source[original[j + k]] == extracted[pdf[i]]), None)  # fmt: skip
            if ahead is None:
                i += 1  # a character the source lacks: left unmatched
            else:
                j += ahead
        self.matched = len(self.source_offsets) / max(len(original), 1)

    def source_offset(self, offset: int) -> int | None:
        """The source offset of the PDF text's character at ``offset`` (None: unmatched)."""
        at = bisect.bisect_left(self.pdf_offsets, offset)
        if at == len(self.pdf_offsets) or self.pdf_offsets[at] != offset:
            return None
        return self.source_offsets[at]


def page_of(lines: list[tuple[int, int]], source_offset: int) -> int:
    """The page the source line holding ``source_offset`` was printed on."""
    return lines[bisect.bisect_right([start for start, _ in lines], source_offset) - 1][1]


def citations(retrievers: list[str], top_k: int, out: Path) -> dict:
    items = [i for i in load_loong() if i.metadata.get("type") == "financial"]
    reports = {d.id: d for item in items for d in item.documents}
    printed: dict[str, tuple[Document, list[tuple[int, int]], Alignment]] = {}
    for name, report in reports.items():
        path = out / (re.sub(r"[^\w.-]", "_", name) + ".pdf")
        lines = print_pdf(report.text, path)
        document = read_file(path, doc_id=name)
        printed[name] = (document, lines, Alignment(document.text, report.text))
    rows = {}
    for retriever_name in retrievers:
        retriever = get_retriever(retriever_name)
        checked = correct = 0
        for item in items:
            documents = [printed[d.id][0] for d in item.documents]
            for evidence in retriever.retrieve(item.query, documents, top_k=top_k):
                document, lines, alignment = printed[evidence.doc_id]
                assert document.text[evidence.start : evidence.end] == evidence.text
                at = alignment.source_offset(evidence.start)
                checked += at is not None
                correct += at is not None and evidence.page == page_of(lines, at)
        rows[retriever_name] = {"evidence": checked, "correct_page": correct,
                                "share": correct / max(checked, 1)}  # fmt: skip
    pages = sum(document.metadata["pages"] for document, _, _ in printed.values())
    matched = min(alignment.matched for _, _, alignment in printed.values())
    return {"reports": len(reports), "matched": matched, "pages": pages, "items": len(items),
            "retrievers": rows}  # fmt: skip


MEASURE = """
import json, sys, time
from pathlib import Path
from longscan.devices import peak_rss_bytes
from longscan.readers import read_document
started = time.perf_counter()
document = read_document(Path(sys.argv[1]), "big.pdf", cache_dir=Path(sys.argv[2]))
sentences = len(document.sentences)
print(json.dumps({"seconds": time.perf_counter() - started, "chars": len(document.text),
                  "sentences": sentences, "pages": document.metadata["pages"],
                  "peak_rss_mb": peak_rss_bytes() / 2**20}))
"""


def memory(out: Path, page_counts: list[int]) -> list[dict]:
    reports = [d.text for i in load_loong() if i.metadata.get("type") == "financial"
               for d in i.documents]  # fmt: skip
    lines = itertools.cycle(line for text in reports for line in text.split("\n"))
    rows = []
    for count in page_counts:
        pdf = FPDF(format="A4")
        pdf.set_auto_page_break(True, margin=15)
        pdf.add_font("DejaVu", fname=str(FONT))
        pdf.set_font("DejaVu", size=FONT_SIZE)
        pdf.add_page()
        while not (pdf.page_no() >= count and pdf.will_page_break(LINE_HEIGHT * 3)):
            text = printable_line(next(lines)) or " "
            pdf.multi_cell(0, LINE_HEIGHT, text, new_x="LMARGIN", new_y="NEXT")
        path = out / f"pages-{count}.pdf"
        pdf.output(str(path))
        command = [sys.executable, "-c", MEASURE, str(path), str(out / f"cache-{count}")]
        run = subprocess.run(command, capture_output=True, text=True, check=True)
        rows.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return rows


def main() -> None:
    logging.getLogger("fpdf").setLevel(logging.ERROR)  # glyphs the font lacks: known, above
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retrievers", default="bm25-sentence,scanner")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--pages", default="100,1000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="longscan-pdf-") as folder:
        out = Path(folder)
        started = time.perf_counter()
        cited = citations(args.retrievers.split(","), args.top_k, out)
        print(f"{cited['reports']} reports, {cited['pages']:,} pages (at least "
              f"{cited['matched']:.2%} of each report's characters read back), "
              f"{cited['items']} questions, top {args.top_k} each "
              f"({time.perf_counter() - started:.0f} s)\n")  # fmt: skip
        print("| retriever | evidence (mapped to the source) | on the right page | share |")
        print("|---|---:|---:|---:|")
        for name, row in cited["retrievers"].items():
            print(f"| {name} | {row['evidence']} | {row['correct_page']} | {row['share']:.1%} |")
        rows = memory(out, [int(p) for p in args.pages.split(",")])
        print("\n| pages | characters | sentences | read and segmented (s) | peak RSS (MB) |")
        print("|---:|---:|---:|---:|---:|")
        for row in rows:
            print(f"| {row['pages']:,} | {row['chars']:,} | {row['sentences']:,} | "
                  f"{row['seconds']:.1f} | {row['peak_rss_mb']:.0f} |")  # fmt: skip
        print(
            f"\npeak RSS, {rows[-1]['pages']:,} / {rows[0]['pages']:,} pages: "
            f"{rows[-1]['peak_rss_mb'] / rows[0]['peak_rss_mb']:.2f} (bar: ≤ 1.3)"
        )


if __name__ == "__main__":
    main()
