"""Decontamination: which training text also occurs in development or benchmark documents.

Kept apart from the example builders in ``longscan.training.data`` because every trainer
(scanner, reader, reranker, synthetic data) applies the same rule: a training document is
dropped when more than 1% of its sentences also occur (after normalisation) in evaluation
text, and evaluation sentences are fingerprinted once and cached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from importlib.metadata import version
from pathlib import Path

from longscan import __version__
from longscan.bench.builders import multihop_questions, squad_articles
from longscan.bench.catalogue import build_benchmark
from longscan.bench.datasets import MultiHopParagraph, default_data_dir
from longscan.documents import Document
from longscan.encoders.cache import built_once
from longscan.evaluation.gold import normalize_text
from longscan.files import default_cache_dir, file_sha256
from longscan.progress import track
from longscan.readers.files import read_file

EVALUATION_ONLY = ("leval-coursera", "leval-financial", "loong")
# a training document sharing more than this share of its sentences with evaluation text is
# dropped (the single-pass scanning paper's rule); every reader's data follows it
DECONTAMINATION_THRESHOLD = 0.01
FINGERPRINT_BYTES = 12


def fingerprint(sentence: str) -> bytes:
    """A short hash of the sentence under ``normalize_text``, the rule answers are matched by,
    so a sentence differing from evaluation text only in case or white space still counts."""
    return hashlib.blake2b(
        normalize_text(sentence).encode(), digest_size=FINGERPRINT_BYTES
    ).digest()


def sentence_fingerprints(texts: Iterable[str]) -> set[bytes]:
    return {fingerprint(text) for text in texts}


def _sentences_of(text: str) -> list[str]:
    return Document("paragraph", text).sentence_texts()


def evaluation_fingerprints(data_dir: str | Path | None = None, corpus: bool = False) -> set[bytes]:
    """Sentences of every development and benchmark document, for decontamination; with
    ``corpus``, also of every file under the data's ``corpus/`` (the Loong document set:
    about 88 MB, a minute to segment), which synthetic examples over filings must not
    share: their standard wording recurs across filings.

    Kept in the cache folder under a key of the bytes of every evaluation file and of the
    code and segmenter that read them, so a later run reads them back in a second; the file
    is checked against its recorded SHA-256 on every read, and made again if damaged."""
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    key = _fingerprints_key(root, corpus)
    path = default_cache_dir() / "fingerprints" / f"{key}.bin"

    def build(staging: Path) -> None:
        found = _read_evaluation_fingerprints(root, corpus)
        staging.write_bytes(b"".join(sorted(found)))

    raw = built_once(path, build, "evaluation fingerprints").read_bytes()
    return {raw[i : i + FINGERPRINT_BYTES] for i in range(0, len(raw), FINGERPRINT_BYTES)}


def _fingerprints_key(root: Path, corpus: bool) -> str:
    """A digest of what the fingerprints depend on: every file of the data but the training
    documents (and the corpus, unless read), this package's code and the segmenter."""
    digest = hashlib.sha256(f"{__version__} {version('blingfire')} {corpus}".encode())
    left_out = {"train-docs", *(() if corpus else ("corpus",))}
    package = Path(__file__).parents[1]
    files = [
        (root, path) for path in root.rglob("*") if path.relative_to(root).parts[0] not in left_out
    ]
    files += [(package, path) for path in package.rglob("*.py")]
    for base, path in sorted(files, key=lambda pair: (str(pair[0]), str(pair[1]))):
        if path.is_file():
            digest.update(f"{path.relative_to(base)} {file_sha256(path)}\n".encode())
    return digest.hexdigest()[:16]


def _read_evaluation_fingerprints(root: Path, corpus: bool) -> set[bytes]:
    texts: list[str] = []
    if corpus:
        from longscan.bench.datasets import data_path

        files = sorted(p for p in data_path("corpus", root).rglob("*") if p.is_file())
        for path in track(files, "corpus sentences"):
            texts.extend(read_file(path).sentence_texts())
    for article in squad_articles("dev", data_dir=root):
        for paragraph in article.paragraphs:
            texts.extend(_sentences_of(paragraph.context))
    for dataset in ("hotpotqa", "musique"):
        for question in multihop_questions(dataset, "dev", data_dir=root):
            for paragraph in question.paragraphs:
                texts.extend(_sentences_of(paragraph.text))
    for name in EVALUATION_ONLY:
        for item in build_benchmark(name, data_dir=root):
            for document in item.documents:
                texts.extend(document.sentence_texts())
    return sentence_fingerprints(texts)


MIN_CONTAMINATING_WORDS = 4


def contamination(document: Document, fingerprints: set[bytes]) -> float:
    """Share of the document's sentences found in ``fingerprints``.

    Sentences under ``MIN_CONTAMINATING_WORDS`` words ("# Introduction", "Table 1.",
    "Net income") recur in every paper or filing, so a match on them says nothing about
    shared content; they count in the denominator, never as a match.
    """
    sentences = document.sentence_texts()
    if not sentences:
        return 0.0
    found = sum(
        len(s.split()) >= MIN_CONTAMINATING_WORDS and fingerprint(s) in fingerprints
        for s in sentences
    )
    return found / len(sentences)


class CleanParagraphs:
    """Accepts a multi-hop paragraph when none of its sentences occurs in evaluation data.

    Filtering distractors paragraph by paragraph keeps training documents that a
    whole-document check would drop: MuSiQue's train and dev questions share many paragraphs.
    """

    def __init__(self, fingerprints: set[bytes]) -> None:
        self.fingerprints = fingerprints
        self._verdicts: dict[tuple[str, str], bool] = {}

    def __call__(self, paragraph: MultiHopParagraph) -> bool:
        if paragraph.key not in self._verdicts:
            self._verdicts[paragraph.key] = not any(
                fingerprint(s) in self.fingerprints for s in _sentences_of(paragraph.text)
            )
        return self._verdicts[paragraph.key]


class Contaminated:
    """Whether a document shares more than ``threshold`` of its sentences with evaluation
    text (never, without ``fingerprints``); a span several examples share is checked once."""

    def __init__(self, fingerprints: set[bytes] | None, threshold: float) -> None:
        self.fingerprints = fingerprints
        self.threshold = threshold
        self.seen: dict[str, bool] = {}

    def __call__(self, document: Document) -> bool:
        if self.fingerprints is None:
            return False
        key = document.content_hash
        if key not in self.seen:
            self.seen[key] = contamination(document, self.fingerprints) > self.threshold
        return self.seen[key]
