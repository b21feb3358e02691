"""What reading table rows with their context (``ctx128+rows``) costs when a document is first
encoded, against the same encoder reading every unit in its paragraph window (``ctx128``).

    python benchmarks/table_reading_cost.py [--data-dir ../shared/data] [--repeats 3]

A table row alone on its line gets a window of its own, with its title, column header and
row group in front, so a filing costs more windows; prose has no rows and should cost the
same. Both encoders run in one process, alternating, on a fresh ``Document`` each time (no
cached segmentation, row context or vectors).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from longscan.documents import Document
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.readers.files import read_file
from longscan.tables import row_context

ENCODERS = ("all-MiniLM-L6-v2+int8/ctx128", "all-MiniLM-L6-v2+int8/ctx128+rows")
FILING = Path("train-docs/sec-full-filings/aapl_aapl-10-q-2025-08-01.txt")
NOVEL = Path(__file__).parents[1] / "src" / "longscan" / "data" / "sample_novel.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    documents = [read_file(args.data_dir / FILING), read_file(NOVEL)]
    encoders = [ContextualSentenceEncoder.from_name(name) for name in ENCODERS]
    encoders[0].encode_document(Document("warm-up", "A first sentence. A second one."))
    for repeat in range(args.repeats):
        for encoder in encoders:
            for document in documents:
                fresh = Document(document.id, document.text)
                start = time.perf_counter()
                encoder.encode_document(fresh)
                seconds = time.perf_counter() - start
                rows = len(row_context(fresh))
                print(
                    f"{repeat} {encoder.name:36} {Path(document.id).name[:32]:32} "
                    f"{len(fresh.sentences):5} units {rows:4} rows {seconds:6.2f} s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
