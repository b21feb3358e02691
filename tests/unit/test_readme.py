"""The README's Python runs as written, from any folder, and answers for real; every relative
link in README.md and docs/ lands on a file (and a heading, where it names one); the documents
speak of the software, not of its making."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCUMENTS = [
    README,
    REPO / "BENCHMARKS.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "training-data").glob("*/README.md")),
    *sorted((REPO / "src" / "longscan" / "checkpoints").glob("*/MODEL_CARD.md")),
]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```[ \t]*\n(?:\s*```\n(.*?)^```)?", re.S | re.M)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
HIT_LINE = re.compile(
    r"^(?P<doc>\S+) (?P<start>\d+) (?P<end>\d+) (?P<score>-?[\d.]+) (?P<text>.+)$"
)
REPORT = "README-PROBE "

# Runs a snippet as a script, then reports what it left behind: its documents and, for each
# answer, whether every piece of evidence, citation and answer span slices its document.
PROBE = f"""
import json, runpy, sys
from longscan.answering.pipelines import Answer
from longscan.documents import Document

names = runpy.run_path(sys.argv[1], run_name="__main__")
documents = {{}}
for value in names.values():
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, Document):
            documents[item.id] = item.text

def exact(piece):
    text = documents.get(piece.doc_id)
    return text is not None and text[piece.start : piece.end] == piece.text

answers = [
    {{
        "text": value.text,
        "evidence": len(value.evidence),
        "citations": len(value.citations),
        "exact": all(exact(piece) for piece in [*value.evidence, *value.citations]),
        "span": None if value.span is None else exact(value.span),
    }}
    for value in names.values()
    if isinstance(value, Answer)
]
print({REPORT!r} + json.dumps({{"documents": documents, "answers": answers}}))
"""


def python_blocks() -> list[tuple[str, str | None]]:
    """Each ```python block in README.md, with the plain ``` block right after it (the
    output the README shows), if any."""
    return [
        (code, shown or None) for code, shown in PYTHON_BLOCK.findall(README.read_text("utf-8"))
    ]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its words
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text("utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_the_readme_has_python_to_run() -> None:
    assert python_blocks(), "README.md has no ```python block"


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_runs_and_answers(index: int, tmp_path: Path) -> None:
    """Run as written (no answerer or model swapped in), in a folder of its own, offline."""
    code, shown = python_blocks()[index]
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "probe.py", "snippet.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    printed, _, report = result.stdout.rpartition(REPORT)
    probe = json.loads(report)
    documents: dict[str, str] = probe["documents"]
    assert printed.strip(), "the snippet printed nothing"

    for answer in probe["answers"]:  # an Answer the snippet made is a real, cited one
        assert answer["text"].strip() and answer["evidence"] and answer["citations"], answer
        assert answer["exact"], "evidence or a citation does not slice its document"
        assert answer["span"] in (None, True), "the answer's span does not slice its document"

    lines = [line for line in printed.splitlines() if line.strip()]
    hits = [HIT_LINE.match(line) for line in lines]
    for hit in filter(None, hits):  # printed offsets slice the document they name
        text = documents[hit["doc"]][int(hit["start"]) : int(hit["end"])]
        assert text.startswith(ast.literal_eval(hit["text"])), hit.group(0)
    if shown is not None and all(hits):  # what the README shows is what it prints
        expected = [HIT_LINE.match(line) for line in shown.splitlines() if line.strip()]
        assert all(expected), f"the README shows lines no hit prints:\n{shown}"
        assert [(h["doc"], h["start"], h["end"], h["text"]) for h in hits] == [
            (h["doc"], h["start"], h["end"], h["text"]) for h in expected
        ], f"the README's output is stale; the snippet printed:\n{printed}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_relative_links_land(document: Path) -> None:
    broken = []
    for target in LINK.findall(FENCE.sub("", document.read_text("utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_documents_speak_of_the_software_not_its_making(document: Path) -> None:
    text = document.read_text("utf-8")
    history = re.findall(r"(?i)\b(?:stop|issue) \d+|this session|last stop|/work/", text)
    assert not history, history
