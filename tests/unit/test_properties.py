"""Properties of the reading, segmenting and retrieving path over hostile text.

Every stage either answers with exact offsets or refuses with a clear error: a
``DocumentError`` or a plain ``ValueError`` whose message says what to change. Any other
exception (a ``UnicodeError``, an ``IndexError``, a ``TypeError`` from a tokenizer...) is a
crash. ``benchmarks/fuzz.py`` drives the same checks over 100,000 generated inputs; the
regression tests at the end pin what it found.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import longscan
from longscan.documents import Document, DocumentError, Evidence
from longscan.readers.files import read_file
from longscan.retrievers import BM25Retriever, RandomRetriever, get_retriever
from longscan.retrievers.base import MAX_QUERY_CHARS
from longscan.segment import SEGMENTERS, segment
from longscan.selection import select

PACKAGE = Path(longscan.__file__).resolve().parent
FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
MODEL = settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# -------------------------------------------------------------------------- strategies

HOSTILE = [
    "\ufeff",  # byte-order mark
    "\x00",  # NUL
    "\ud800",  # lone high surrogate
    "\udfff",  # lone low surrogate
    "\U0001f600",  # astral: emoji
    "\U0001d518",  # astral: mathematical fraktur
    "\U00020000",  # astral: CJK extension B
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u200f",  # right-to-left mark
    "\u2028",  # line separator
    "\u2029",  # paragraph separator
    "\u200b",  # zero-width space
    "e\u0301",  # combining accent
    "\x1b[2J",  # terminal escape
    "\r\n",
    "\n\n",
    "\t",
    "\x85",
    "\xa0",
    "\ufffd",
]
WORDS = ["The", "key", "is", "under", "blue", "pot", "Dr.", "Mr.", "Lisbon", "it", "a.b"]
PUNCTUATION = [". ", "! ", "? ", "... ", "\u3002", "\u061f", " "]

hostile_text = st.lists(
    st.one_of(
        st.sampled_from(HOSTILE),
        st.sampled_from(WORDS),
        st.sampled_from(PUNCTUATION),
        st.text(max_size=8),  # any code point, surrogates included
    ),
    max_size=60,
).map("".join)

# A word without punctuation repeated past max_chars, or a run with no white space.
runs = st.builds(
    lambda word, count, sep: sep.join([word] * count),
    st.sampled_from(["lorem", "x", "\U0001f600", "\u202eab", "\x00"]),
    st.integers(50, 600),
    st.sampled_from([" ", "", "\u200b", "\n"]),
)

queries = st.one_of(
    st.sampled_from(["", " ", "\n\t", "key", "Where is the blue key?", "\ud800", "the"]),
    hostile_text,
    st.integers(MAX_QUERY_CHARS - 2, MAX_QUERY_CHARS + 2).map(lambda n: "q" * n),
)

ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "latin-1", "cp1252"]


def is_clear(error: BaseException) -> bool:
    """The errors longscan raises on purpose for bad input: a DocumentError or a plain
    ValueError raised by longscan's own code (one from inside a library, such as pysbd's
    int(), is a crash); everything else is a crash."""
    if not (isinstance(error, DocumentError) or type(error) is ValueError):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and Path(frames[-1].filename).is_relative_to(PACKAGE)


def check_evidence(evidence: list[Evidence], documents: list[Document]) -> None:
    texts = {document.id: document.text for document in documents}
    assert isinstance(evidence, list)
    for item in evidence:
        assert isinstance(item, Evidence)
        assert 0 <= item.start < item.end <= len(texts[item.doc_id])
        assert texts[item.doc_id][item.start : item.end] == item.text
        assert np.isfinite(item.score)
    scores = [item.score for item in evidence]
    assert scores == sorted(scores, reverse=True)


def check_segmentation(text: str, max_chars: int, segmenter: str) -> None:
    sentences, paragraphs, owner = segment(text, segmenter, max_chars)
    assert sentences.dtype == np.int64 and sentences.shape[1:] == (2,)
    assert len(owner) == len(sentences)
    for spans in (sentences, paragraphs):
        previous_end = 0
        for start, end in spans.tolist():
            assert previous_end <= start < end <= len(text)  # ordered, non-overlapping
            unit = text[start:end]
            assert not unit[0].isspace() and not unit[-1].isspace()
            previous_end = end
    lengths = sentences[:, 1] - sentences[:, 0]
    assert (lengths <= max_chars).all()
    for (start, end), index in zip(sentences.tolist(), owner.tolist(), strict=True):
        p_start, p_end = paragraphs[index].tolist()
        assert p_start <= start and end <= p_end
    covered = np.zeros(len(text), dtype=bool)
    for start, end in sentences.tolist():
        covered[start:end] = True
    lost = [c for c, seen in zip(text, covered.tolist(), strict=True) if not seen]
    assert all(c.isspace() for c in lost)  # only white space falls between units


# ----------------------------------------------------------------------------- reading


BOMS = (  # longest first: UTF-32-LE's mark starts with UTF-16-LE's
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def own_decoding(raw: bytes) -> tuple[str, str]:
    """The documented convention, worked out independently of the reader: UTF-8 with U+FFFD
    for bad bytes, or the UTF-16/32 a byte-order mark names; the mark is not text."""
    codec = next((name for bom, name in BOMS if raw.startswith(bom)), "utf-8")
    return raw.decode(codec, "replace"), codec


@FAST
@given(
    text=hostile_text,
    encoding=st.sampled_from([*ENCODINGS, "utf-32"]),
    junk=st.binary(max_size=8),
    junk_first=st.booleans(),
)
def test_read_file_gives_the_files_own_decoding_or_a_clear_error(
    tmp_path: Path, text: str, encoding: str, junk: bytes, junk_first: bool
) -> None:
    # Lone surrogates go through as their code units: invalid UTF-8/16/32 to be replaced.
    raw = text.encode(encoding, "surrogatepass" if encoding.startswith("utf") else "replace")
    raw = junk + raw if junk_first else raw + junk
    path = tmp_path / "input.txt"
    path.write_bytes(raw)
    try:
        document = read_file(path)
    except Exception as error:  # noqa: BLE001 - the property is about the error's type
        assert is_clear(error), f"{type(error).__name__}: {error}"
        return
    expected, codec = own_decoding(raw)
    assert document.text == expected
    assert document.metadata["encoding"] == codec
    assert "\x00" not in document.text  # NUL means binary, wherever it is


@FAST
@given(text=hostile_text)
def test_read_file_keeps_every_character_of_valid_utf8(tmp_path: Path, text: str) -> None:
    clean = "".join(c for c in text if c != "\x00" and not 0xD800 <= ord(c) <= 0xDFFF)
    assume(clean.removeprefix("\ufeff").strip())
    path = tmp_path / "input.txt"
    path.write_bytes(clean.encode("utf-8"))
    assert read_file(path).text == clean.removeprefix("\ufeff")  # one mark, not the text


# -------------------------------------------------------------------------- segmenting


@FAST
@given(
    text=st.one_of(hostile_text, runs),
    max_chars=st.sampled_from([2, 7, 50, 1000]),
    segmenter=st.sampled_from(SEGMENTERS),
)
def test_segmentation_is_exact_ordered_bounded_and_loses_no_text(
    text: str, max_chars: int, segmenter: str
) -> None:
    check_segmentation(text, max_chars, segmenter)


# -------------------------------------------------------------------------- retrieving

collections = st.lists(st.one_of(hostile_text, runs), min_size=1, max_size=3).map(
    lambda texts: [Document(f"d{i}", text) for i, text in enumerate(texts)]
)
top_ks = st.one_of(st.none(), st.integers(-2, 20))


def retrieve_or_refuse(retriever, query: str, documents: list[Document], top_k) -> None:  # noqa: ANN001
    try:
        evidence = retriever.retrieve(query, documents, top_k=top_k)
    except Exception as error:  # noqa: BLE001 - the property is about the error's type
        assert is_clear(error), f"{type(error).__name__}: {error}"
        return
    check_evidence(evidence, documents)
    if top_k is not None:
        assert len(evidence) <= top_k


@FAST
@given(
    query=queries, documents=collections, top_k=top_ks, unit=st.sampled_from(["sentence", "chunk"])
)
def test_lexical_and_random_retrievers_give_exact_evidence_or_a_clear_error(
    query: str, documents: list[Document], top_k: int | None, unit: str
) -> None:
    for retriever in (BM25Retriever(unit), RandomRetriever(unit)):
        retrieve_or_refuse(retriever, query, documents, top_k)


small_collections = st.lists(hostile_text, min_size=1, max_size=2).map(
    lambda texts: [Document(f"d{i}", text) for i, text in enumerate(texts)]
)


@pytest.mark.parametrize("name", ["dense-sentence", "hybrid-chunk", "scanner"])
def test_model_backed_retrievers_give_exact_evidence_or_a_clear_error(name: str) -> None:
    retriever = get_retriever(name)

    @MODEL
    @given(query=queries, documents=small_collections, top_k=top_ks)
    def check(query: str, documents: list[Document], top_k: int | None) -> None:
        retrieve_or_refuse(retriever, query, documents, top_k)

    check()


@FAST
@given(
    query=st.sampled_from(["key", "blue pot", "Lisbon"]),
    documents=collections,
    top_k=st.integers(1, 5),
    neighbours=st.integers(0, 2),
    paragraph=st.booleans(),
    budget=st.one_of(st.none(), st.integers(1, 200)),
)
def test_selection_keeps_offsets_exact(
    query: str,
    documents: list[Document],
    top_k: int,
    neighbours: int,
    paragraph: bool,
    budget: int | None,
) -> None:
    try:
        evidence = BM25Retriever().retrieve(query, documents, top_k=top_k)
    except ValueError as error:
        assert is_clear(error)
        return
    chosen = select(
        evidence, documents, neighbours=neighbours, paragraph=paragraph, budget_words=budget
    )
    check_evidence(sorted(chosen, key=lambda e: -e.score), documents)


# --------------------------------------------------------- regressions the fuzzer found


def test_blingfire_segments_text_holding_lone_surrogates() -> None:
    text = "The key is blue. It is \ud800 under the pot."  # was a UnicodeEncodeError
    sentences, _, _ = segment(text, "blingfire")
    assert [text[s:e] for s, e in sentences.tolist()] == [
        "The key is blue.",
        "It is \ud800 under the pot.",
    ]


def test_pysbd_segments_many_short_lines_in_linear_time() -> None:
    started = time.perf_counter()
    sentences, _, _ = segment("a\n" * 20_000, "pysbd")  # pysbd's own spans took minutes
    assert len(sentences) == 20_000
    assert time.perf_counter() - started < 10


def test_pysbd_never_reads_more_than_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    from longscan import segment as segment_module

    pysbd = segment_module._pysbd_segmenter()
    lengths: list[int] = []
    processor = pysbd.processor

    def recording(text: str):  # noqa: ANN202 - pysbd's type
        lengths.append(len(text))
        return processor(text)

    monkeypatch.setattr(pysbd, "processor", recording)
    text = "Mr. " * 5_000  # 20 KB: pysbd's abbreviation pass is quadratic (100 KB took 148 s)
    sentences, _, _ = segment(text, "pysbd", max_chars=1_000)
    assert max(lengths) <= segment_module._PYSBD_WINDOW < len(text)
    check_segmentation(text, 1_000, "pysbd")
    assert len(sentences) == 20


@pytest.mark.parametrize("separator", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_pysbd_segments_a_list_number_after_an_information_separator(separator: str) -> None:
    text = f"Take the key{separator}5. Open the door."  # pysbd's int() raised ValueError
    check_segmentation(text, 1_000, "pysbd")


def test_pysbd_spans_match_its_sentences() -> None:
    text = "  Mr. Smith went to Washington.  He arrived!\nDid he? Yes. "
    sentences, _, _ = segment(text, "pysbd")
    assert [text[s:e] for s, e in sentences.tolist()] == [
        "Mr. Smith went to Washington.",
        "He arrived!",
        "Did he?",
        "Yes.",
    ]


@pytest.mark.parametrize("name", ["bm25-sentence", "random", "dense-sentence"])
@pytest.mark.parametrize("query", ["\ud800", "where is the \udfff key"])
def test_a_query_holding_a_lone_surrogate_is_a_clear_error(name: str, query: str) -> None:
    with pytest.raises(ValueError, match="lone surrogate") as raised:
        get_retriever(name).retrieve(query, [Document("d", "The key is blue.")])
    assert type(raised.value) is ValueError  # was UnicodeEncodeError or a tokenizer TypeError


@pytest.mark.parametrize("name", ["bm25-chunk", "random"])
def test_a_document_holding_a_lone_surrogate_is_a_clear_error(name: str) -> None:
    document = Document("d", "The key is blue.\ud800 It is here.")
    with pytest.raises(ValueError, match=r"'d' holds a lone surrogate \(U\+D800 at offset 16\)"):
        get_retriever(name).retrieve("key", [document])


@pytest.mark.parametrize("top_k", [0, -1, 2.5, True])
def test_top_k_must_be_a_positive_integer(top_k: object) -> None:
    document = Document("d", "One. Two. Three.")
    with pytest.raises(ValueError, match="top_k"):
        BM25Retriever().retrieve("two", [document], top_k=top_k)  # -1 dropped the last unit


def test_top_k_may_be_a_numpy_integer() -> None:
    document = Document("d", "One. Two. Three.")
    assert len(BM25Retriever().retrieve("two", [document], top_k=np.int64(2))) == 2


def test_select_refuses_evidence_it_cannot_trace() -> None:
    document = Document("d", "One. Two.")
    with pytest.raises(ValueError, match="'other', which was not given"):
        select([Evidence("other", 0, 4, "One.", 1.0)], [document])  # was a KeyError
    with pytest.raises(ValueError, match="outside document 'd'"):
        select([Evidence("d", 5, 40, "Two.", 1.0)], [document])


def test_select_widens_nothing_in_a_document_without_sentences() -> None:
    document = Document("d", " \n\n ")
    hit = Evidence("d", 0, 1, " ", 1.0)
    assert select([hit], [document], neighbours=1) == [hit]  # was an IndexError
