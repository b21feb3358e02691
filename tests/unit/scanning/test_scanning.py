from __future__ import annotations

import numpy as np
import pytest

from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.minilm import get_encoder
from longscan.items import instructed_query
from longscan.retrievers.scanner import ScannerRetriever
from longscan.scanning import Scanner, SlidingWindow
from longscan.scanning.features import FEATURE_NAMES, PARTS, LexicalFeatures, TokenMatch
from longscan.scanning.features import paragraphs as paragraphs_module
from longscan.scanning.features.feedback import capitalised_names
from longscan.scanning.features.paragraphs import window_dense_rank
from longscan.scanning.features.query_parts import MAX_QUERY_PARTS, query_parts
from longscan.scanning.features.token_match import max_sim
from longscan.scanning.first_stage import FirstStage, SentenceIndex, rank_feature
from longscan.scanning.scanner import moved_below


def test_streaming_equals_one_full_pass(tiny_scanner: Scanner, novel: Document) -> None:
    query = "What time is it always at the Hatter's tea party?"
    tiny_scanner.window_sentences = 100_000
    full = tiny_scanner.score(query, [novel])
    tiny_scanner.window_sentences = 37
    streamed = tiny_scanner.score(query, [novel])
    assert len(full) == len(novel.sentences)
    np.testing.assert_allclose(streamed, full, atol=1e-4)


def test_sentence_vectors_are_cached_and_invalidated(tiny_scanner: Scanner, tmp_path) -> None:
    document = Document("d", "The cat sat.\n\nThe dog ran. It was fast.")
    encoder = tiny_scanner.encoder
    tiny_scanner.score("Who ran?", [document])
    assert encoder.encoded_sentences == 3
    tiny_scanner.score("Who sat?", [document])  # a second query: no encoding
    assert encoder.encoded_sentences == 3
    fresh_cache = EmbeddingCache(tiny_scanner.cache.directory)  # next process: from disk
    assert fresh_cache.get(encoder.cache_key(document)) is not None
    changed = Document("d", "The cat sat.\n\nThe dog ran. It was slow.")
    tiny_scanner.score("Who ran?", [changed])
    assert encoder.encoded_sentences == 6  # a changed text is a new key


def test_corrupt_cache_file_is_a_miss(tiny_scanner: Scanner) -> None:
    document = Document("d", "Alpha. Beta.")
    tiny_scanner.score("alpha", [document])
    path = tiny_scanner.cache.directory / f"{tiny_scanner.encoder.cache_key(document)}.safetensors"
    path.write_bytes(b"garbage")
    tiny_scanner.cache = EmbeddingCache(tiny_scanner.cache.directory)
    tiny_scanner.score("alpha", [document])
    assert tiny_scanner.encoder.encoded_sentences == 4


def _cached_file(scanner: Scanner, document: Document):
    return scanner.cache.directory / f"{scanner.encoder.cache_key(document)}.safetensors"


def test_flipped_bytes_in_a_cached_file_are_encoded_again(tiny_scanner: Scanner, caplog) -> None:
    document = Document("d", "The tower was built in 1889. Its designer was Gustave Eiffel.")
    before = tiny_scanner.score("Who designed the tower?", [document])
    path = _cached_file(tiny_scanner, document)
    data = bytearray(path.read_bytes())
    data[-16:] = bytes(255 - b for b in data[-16:])  # 16 bytes of the vectors, still parseable
    path.write_bytes(bytes(data))
    tiny_scanner.cache = EmbeddingCache(tiny_scanner.cache.directory)
    with caplog.at_level("WARNING", logger="longscan.encoders.cache"):
        after = tiny_scanner.score("Who designed the tower?", [document])
    assert "digest" in caplog.text
    assert tiny_scanner.encoder.encoded_sentences == 4  # encoded again, not read
    np.testing.assert_allclose(after, before, atol=1e-5)


def test_non_finite_cached_vectors_are_encoded_again(tiny_scanner: Scanner) -> None:
    from safetensors.numpy import save_file

    from longscan.encoders.cache import array_digest

    document = Document("d", "Alpha. Beta.")
    before = tiny_scanner.score("alpha", [document])
    path = _cached_file(tiny_scanner, document)
    key = tiny_scanner.encoder.cache_key(document)
    vectors = EmbeddingCache(tiny_scanner.cache.directory).get(key).copy()
    vectors[0, :] = np.nan  # consistent with its digest: only the values are wrong
    save_file({"array": vectors}, str(path), metadata={"key": key, "digest": array_digest(vectors)})
    tiny_scanner.cache = EmbeddingCache(tiny_scanner.cache.directory)
    after = tiny_scanner.score("alpha", [document])
    assert np.isfinite(after).all()
    np.testing.assert_allclose(after, before, atol=1e-5)


def test_sliding_windows_cover_everything_and_overlap() -> None:
    windows = SlidingWindow(100, 50).windows(np.full(30, 10.0))  # 300 tokens
    assert windows[0] == (0, 10) and windows[-1][1] == 30
    covered = np.zeros(30)
    for start, stop in windows:
        covered[start:stop] += 1
    assert covered.min() >= 1 and covered.max() == 2


def test_sliding_mode_equals_stream_when_one_window_fits(tiny_scanner: Scanner) -> None:
    document = Document("d", "One fish. Two fish.\n\nRed fish. Blue fish.")
    stream = tiny_scanner.score("red", [document])
    tiny_scanner.mode = "sliding"
    np.testing.assert_allclose(tiny_scanner.score("red", [document]), stream, atol=1e-6)


def test_scanner_retriever_offsets_are_exact(tiny_scanner: Scanner, novel: Document) -> None:
    evidence = ScannerRetriever(tiny_scanner).retrieve("pack of cards", [novel], top_k=20)
    assert len(evidence) == 20
    for item in evidence:
        assert novel.text[item.start : item.end] == item.text


def test_lexical_features_mark_matching_sentences() -> None:
    document = Document("d", "Paris is the capital of France.\n\nBerlin is in Germany. It is big.")
    vectors = np.eye(3, 8, dtype=np.float32)
    read = range(FEATURE_NAMES.index("token_match"))  # no encoder: no token match
    features = LexicalFeatures().for_scan(
        "capital of France", [document], vectors, vectors[1], read
    )
    assert features.shape == (3, len(FEATURE_NAMES))
    assert features[0, 0] == pytest.approx(1.0) and features[1:, 0].max() == 0
    assert features[0, 2] == pytest.approx(1.0)
    assert list(features[:, 3]) == [1, 1, 0]  # paragraph starts


def test_paragraph_features_spread_the_best_match_over_the_paragraph() -> None:
    document = Document(
        "d", "The cat sat on the mat. It purred.\n\nDogs bark. The moon is bright.\n\nRain."
    )
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(document.sentences), 8)).astype(np.float32)
    query = "where did the cat sit"
    features = LexicalFeatures(get_encoder()).for_scan(query, [document], vectors, vectors[2])
    column = {name: features[:, i] for i, name in enumerate(FEATURE_NAMES)}
    assert list(column["paragraph_bm25"]) == [1, 1, 0, 0, 0]  # "It purred." shares the match
    dense = column["paragraph_dense_rank"]
    assert dense[2] == dense[3] == dense.max()  # the paragraph holding the query's vector
    assert dense[0] == dense[1] and dense[4] != dense[0]


def bridge_columns() -> dict[str, np.ndarray]:
    """Every feature column of a two-hop document: the question never names Shirley Temple,
    the first hop does, and the second hop's paragraph is about her."""
    document = Document(
        "d",
        "Kiss and Tell is a 1945 film starring Shirley Temple as Corliss Archer.\n\n"
        "Ships sail from harbours at dawn. Sailors mend nets.\n\n"
        "Shirley Temple Black was an actress and diplomat. She served as Chief of Protocol.",
    )
    n = len(document.sentences)
    vectors = np.eye(n, 8, dtype=np.float32)  # orthogonal: dense ranks only the query's own
    query = "What post did the woman who portrayed Corliss Archer in Kiss and Tell hold?"
    features = LexicalFeatures(get_encoder()).for_scan(query, [document], vectors, vectors[0])
    return {name: features[:, i] for i, name in enumerate(FEATURE_NAMES)}


def test_feedback_features_follow_the_bridge_entity() -> None:
    """The best first-pass sentence names Shirley Temple, so the feedback column finds her
    paragraph, and sentences sharing no fed-back term get 0."""
    column = bridge_columns()
    assert column["bm25_over_max"][3] == 0  # no question word in "Shirley Temple Black ..."
    assert column["feedback_bm25"][3] > 0  # but the first hop's new words are
    assert column["feedback_bm25"][4] == 0  # "She served as Chief of Protocol." shares none
    assert column["feedback_dense_rank"][0] == column["feedback_dense_rank"].max()


def test_name_features_follow_the_bridge_name_through_its_paragraph() -> None:
    """The second hop's paragraph ("Shirley Temple Black ...") mentions the first hop's name
    and gets the bridge columns, its pronoun-only sentence through the paragraph column; the
    query's own names mark their paragraph."""
    column = bridge_columns()
    bridge, paragraph = column["bridge_name"], column["bridge_name_paragraph"]
    assert bridge[3] > 0 and bridge[4] == 0  # "She served ..." names no one fed back
    assert paragraph[3] == paragraph[4] == bridge[3]
    assert bridge[1] == bridge[2] == 0  # "Ships" opens a sentence: grammar, not a name
    in_query = column["query_name_paragraph"]
    assert in_query[0] > 0 and in_query[1:].max() == 0  # "Corliss Archer" is only in the first


def test_capitalised_names() -> None:
    text = 'Who is older, Annie Morton or Terry Richardson? He met "Tom" at The Bank of England.'
    assert capitalised_names(text) == ["Annie Morton", "Terry Richardson", "Tom", "Bank of England"]
    assert capitalised_names("Did Alice Smith win?\nShips sail.") == ["Alice Smith"]
    assert capitalised_names("") == [] and capitalised_names("no names here") == []


def test_names_weigh_by_rarity() -> None:
    """A name every paragraph mentions counts for little against one only one mentions."""
    document = Document(
        "d", "Alice Smith met Bob Jones.\n\nAlice Smith left.\n\nAlice Smith returned home."
    )
    vectors = np.eye(len(document.sentences), 8, dtype=np.float32)
    query = "Did Alice Smith meet Bob Jones?"
    features = LexicalFeatures(get_encoder()).for_scan(query, [document], vectors, vectors[0])
    in_query = features[:, FEATURE_NAMES.index("query_name_paragraph")]
    assert in_query[0] == pytest.approx(1.0)  # Bob Jones: one paragraph of three
    assert 0 < in_query[1] == in_query[2] < 0.25  # Alice Smith: all three


def test_token_match_scores_first_pass_candidates_word_by_word() -> None:
    """The sentence whose words answer the question's words one by one outscores one that
    only shares a name; sentences outside the first pass's candidates get 0."""
    filler = " ".join(f"Filler sentence {i} talks about weather." for i in range(30))
    document = Document(
        "d",
        "The Normans invaded England in 1066.\n\nThe Normans liked bread.\n\n" + filler,
    )
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(document.sentences), 8)).astype(np.float32)
    features = LexicalFeatures(get_encoder()).for_scan(
        "When did the Normans invade England?", [document], vectors, vectors[5]
    )
    match = features[:, FEATURE_NAMES.index("token_match")]
    match_rank = features[:, FEATURE_NAMES.index("token_match_rank")]
    assert match[0] > match[1] > 0
    assert match_rank[0] == match_rank.max() == pytest.approx(1.0)
    assert (match > 0).sum() == TokenMatch().candidates < len(document.sentences)


def test_token_match_reads_a_question_after_a_long_instruction() -> None:
    """A prompt's question often follows an instruction longer than a sentence's 32 word
    pieces; the query's tokens are not cut there, or the question would never be matched
    (checkpoints written before record the cut they were trained with)."""
    instruction = (
        "Please read all of the documents provided above very carefully, and then answer the "
        "question that follows using only the information that they state, citing each of "
        "the passages you relied on and ignoring anything that they do not mention at all."
    )
    query = instructed_query(instruction, "When did the Normans invade England?")
    filler = " ".join(f"Filler sentence {i} talks about weather." for i in range(30))
    document = Document(
        "d", "The Normans invaded England in 1066.\n\nThe Normans liked bread.\n\n" + filler
    )
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(document.sentences), 8)).astype(np.float32)
    encoder = get_encoder()
    assert len(encoder.tokenizer.pieces([instruction], 256)[0]) > TokenMatch().max_tokens
    column = FEATURE_NAMES.index("token_match")
    read = range(FEATURE_NAMES.index("token_match_rank") + 1)  # the vectors are not MiniLM's

    def token_match(text: str, settings: TokenMatch) -> np.ndarray:
        features = LexicalFeatures(encoder, token_match=settings)
        features.query_vector(text)  # inference: the query's tokens from its own pass
        return features.for_scan(text, [document], vectors, vectors[5], read)[:, column]

    whole = token_match(query, TokenMatch())
    cut = token_match(query, TokenMatch(query_tokens=32))
    instruction_only, answer = encoder.token_vectors(
        [instruction, document.sentence_texts()[0]], 32
    )
    assert cut[0] == pytest.approx(max_sim(instruction_only, answer))  # never saw the question
    assert whole[0] > cut[0]
    assert whole[0] == whole.max()
    trained = LexicalFeatures(encoder).for_scan(query, [document], vectors, vectors[5], read)
    assert trained[:, column] == pytest.approx(whole)  # training encodes it on its own


def test_query_parts_score_a_question_apart_from_its_instruction() -> None:
    """After a long instruction, the question's evidence ranks below boilerplate that
    matches the instruction when the query is scored as one text; read sentence by
    sentence, it is as high as the question it answers."""
    instruction = (
        "Review the financial statements of the companies provided above and answer the "
        "following questions based solely on the information in the financial statements."
    )
    question = "What was the revenue of Acme Widgets in 2023?"
    query = instructed_query(instruction, question)
    document = Document(
        "d",
        "The financial statements of the companies provided above are based on information "
        "in the financial statements.\n\nAcme Widgets reported revenue of $12 million in "
        "2023.\n\nThe weather was mild.",
    )
    encoder = get_encoder()
    vectors = encoder.encode(document.sentence_texts())
    features = LexicalFeatures(encoder).for_scan(
        query, [document], vectors, encoder.encode([query])[0]
    )
    column = {name: features[:, FEATURE_NAMES.index(name)] for name in FEATURE_NAMES}
    assert column["bm25_over_max"][1] < column["bm25_over_max"][0] == 1.0
    assert column["query_part_bm25"][1] == column["query_part_bm25"][0] == 1.0
    assert column["query_part_dense_rank"][1] == pytest.approx(1.0)
    assert column["query_part_dense_rank"][2] < column["query_part_dense_rank"][1]
    alone = LexicalFeatures(encoder).for_scan(
        question, [document], vectors, encoder.encode([question])[0]
    )
    for part, whole in (
        ("query_part_bm25", "bm25_over_max"),
        ("query_part_dense_rank", "dense_rank"),
    ):
        part_column = alone[:, FEATURE_NAMES.index(part)]
        assert part_column == pytest.approx(alone[:, FEATURE_NAMES.index(whole)]), part


def test_query_parts_cover_a_huge_query_in_a_few_runs() -> None:
    sentences = [f"Sentence number {i} says something." for i in range(100)]
    parts = query_parts(" ".join(sentences))
    assert len(parts) == MAX_QUERY_PARTS
    assert " ".join(parts) == " ".join(sentences)
    assert query_parts("One question only?") == ["One question only?"]


COSTLY = ("token_match", "query_part")  # the columns that run the encoder


def test_token_match_needs_the_encoder_only_when_read() -> None:
    document = Document("d", "Paris is the capital of France. Berlin is in Germany.")
    vectors = np.eye(2, 8, dtype=np.float32)
    query = "capital of France"
    with pytest.raises(ValueError, match="sentence encoder"):
        LexicalFeatures().for_scan(query, [document], vectors, vectors[0])
    read = [i for i, name in enumerate(FEATURE_NAMES) if not name.startswith(COSTLY)]
    features = LexicalFeatures().for_scan(query, [document], vectors, vectors[0], read)
    costly = [i for i, name in enumerate(FEATURE_NAMES) if name.startswith(COSTLY)]
    assert features[:, costly].max() == 0
    assert features[:, FEATURE_NAMES.index("window_dense_rank")].max() > 0  # read, and cheap


def test_max_sim() -> None:
    query = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert max_sim(query, np.array([[1.0, 0.0]])) == pytest.approx(0.5)
    assert max_sim(query, query) == pytest.approx(1.0)
    assert max_sim(query, np.zeros((0, 2))) == 0.0


def reference_windows(vectors: np.ndarray, query: np.ndarray, reach: int, bounds) -> np.ndarray:
    """The cosine of each unit's neighbourhood, unit by unit: the units at most ``reach``
    positions away in its own document (equal-length units)."""
    cosines = []
    for i in range(len(vectors)):
        document = np.searchsorted(bounds, i, side="right") - 1
        low, high = max(i - reach, bounds[document]), min(i + reach + 1, bounds[document + 1])
        mean = vectors[low:high].sum(axis=0)
        cosines.append(mean @ query / np.linalg.norm(mean))
    return rank_feature(np.array(cosines))


def test_window_rank_reads_a_units_neighbours_in_its_own_document(monkeypatch) -> None:
    """A terse unit whose own vector is off the question ranks first when its neighbours
    are on it; the next document's units, however close, are not its neighbours."""
    axes = np.eye(4, dtype=np.float32)
    # unit 2 (the "row") is off the query's axis, its two neighbours on it; document 2
    # begins on the axis, right after document 1's last unit
    vectors = axes[[2, 0, 1, 0, 2, 2, 0, 3, 3, 3]]
    bounds = np.array([0, 6, 10])
    words = np.full(10, 10)  # a 20-word window: the unit either side
    ranks = window_dense_rank(vectors, axes[0], words, bounds, width=20)
    assert ranks == pytest.approx(reference_windows(vectors, axes[0], 1, bounds))
    assert ranks[2] == ranks.max()
    as_one = window_dense_rank(vectors, axes[0], words, np.array([0, 10]), width=20)
    assert as_one[5] > ranks[5]  # read as one document, unit 6 would lift unit 5
    monkeypatch.setattr(paragraphs_module, "WINDOW_BLOCK", 3)  # block edges change nothing
    assert window_dense_rank(vectors, axes[0], words, bounds, width=20) == pytest.approx(ranks)


def test_window_rank_of_a_filing_ignores_the_documents_beside_it(filing_path) -> None:
    """Apple's 10-Q read after another report: its units keep their window order exactly,
    and the column is filled for every unit of both."""
    encoder = get_encoder()
    filing = Document("aapl", filing_path.read_text(encoding="utf-8"))
    other = Document("other", "Revenue rose. " * 40 + "\n\nBasic earnings per share were $ 2.")
    query = "What was Apple's basic earnings per share?"
    column = FEATURE_NAMES.index("window_dense_rank")
    read = [column]  # the cheap columns only: no token match

    def windows(documents: list[Document]) -> np.ndarray:
        vectors = np.concatenate([encoder.encode(d.sentence_texts()) for d in documents])
        features = LexicalFeatures(encoder).for_scan(
            query, documents, vectors, encoder.encode([query])[0], read
        )
        return features[:, column]

    alone = windows([filing])
    together = windows([other, filing])
    after = together[len(other.sentences) :]
    assert (alone > 0).all() and (together > 0).all()
    assert (np.argsort(-alone, kind="stable") == np.argsort(-after, kind="stable")).all()


def test_every_column_is_computed_by_exactly_one_registered_part() -> None:
    """The layout and the registry agree: a column no part fills, or two parts fill, would
    be a silent 0 or a silent overwrite."""
    filled = [name for part in PARTS for name in part.columns]
    assert sorted(filled) == sorted(FEATURE_NAMES) and len(filled) == len(set(filled))
    names = [part.name for part in PARTS]
    assert len(names) == len(set(names)) and all(part.reads for part in PARTS)


def test_lines_of_the_questions_words_alone_and_repeated_lines_are_redundant(
    data_dir,
) -> None:
    """In a real Loong report asked about by its filer's name, the name's own lines and the
    repeated statement subtitle are redundant (the best-scored copy of a repeat excepted);
    the balance-sheet row and a short sentence that says something are not."""
    path = data_dir / "loong" / "doc" / "financial" / "2024-AIM ImmunoTech Inc.-j.txt"
    report = Document("aim", path.read_text(encoding="utf-8"))
    said = Document("lrb", "The London Review of Books. It is published fortnightly.")
    documents = [report, said]
    index = SentenceIndex(documents)
    texts = [" ".join(t.split()) for d in documents for t in d.sentence_texts()]
    query = "What is the Total Assets of AIM ImmunoTech Inc., published fortnightly?"
    first = FirstStage.run(query, index, np.zeros((index.size, 4), np.float32), np.ones(4))
    scores = np.linspace(1.0, 0.0, index.size)  # the document order, best first
    redundant = first.redundant(scores)
    names = [i for i, t in enumerate(texts) if t == "AIM IMMUNOTECH INC."]
    subtitles = [i for i, t in enumerate(texts) if t == "AND SUBSIDIARIES"]
    assert len(names) > 1 and len(subtitles) > 1
    assert redundant[names].all()
    assert not redundant[subtitles[0]] and redundant[subtitles[1:]].all()
    row = next(i for i, t in enumerate(texts) if t.startswith("Total assets $ 16,189"))
    assert not redundant[row] and not redundant[texts.index("It is published fortnightly.")]
    # a later copy that scores best is the one kept
    scores[subtitles[-1]] = 2.0
    assert not first.redundant(scores)[subtitles[-1]] and first.redundant(scores)[subtitles[0]]
    moved = moved_below(scores, redundant)
    assert moved[redundant].max() < moved[~redundant].min()
    kept = np.argsort(-moved[~redundant], kind="stable")
    assert (kept == np.argsort(-scores[~redundant], kind="stable")).all()


def test_a_tables_title_ranked_high_lifts_its_row_with_the_questions_words(data_dir) -> None:
    """In AIM's real Loong report read after a prose document, the balance sheet's title
    ranked first brings up the "Total assets" row (the first pass's best: here its BM25
    rank) to just above it; no line but a row moves, a row already above its title is not
    lowered, and a sequence with no table comes back as it was."""
    from longscan.tables import row_context

    path = data_dir / "loong" / "doc" / "financial" / "2024-AIM ImmunoTech Inc.-j.txt"
    prose = Document("prose", "The keeper was named Oswin Tarrow. He lit the lamp at six.")
    report = Document("aim", path.read_text(encoding="utf-8"))
    documents = [prose, report]
    texts = [" ".join(t.split()) for d in documents for t in d.sentence_texts()]
    query = "What is the Total assets of AIM ImmunoTech Inc.?"

    def first_stage(index: SentenceIndex) -> FirstStage:
        bm25 = index.lexical(query)
        no_dense = np.zeros(index.size, np.float32)
        return FirstStage(query, index, bm25, rank_feature(bm25), no_dense)

    first = first_stage(SentenceIndex(documents))
    title = texts.index("Condensed Consolidated Balance Sheets")
    row = next(i for i, t in enumerate(texts) if t.startswith("Total assets $ 16,189"))
    scores = np.linspace(0.0, -1.0, first.index.size)
    scores[title] = 5.0
    lifted = first.rows_lifted(scores)
    order = np.argsort(-lifted, kind="stable")
    assert order[:2].tolist() == [row, title]
    # what moves is a row, to just above one of its context lines, and only up
    before = len(prose.sentences)
    context = {before + r: [before + c for c in cs] for r, cs in row_context(report).items()}
    for moved in np.flatnonzero(lifted != scores).tolist():
        assert moved in context and lifted[moved] > scores[moved]
        assert lifted[moved] in np.nextafter(scores[context[moved]], np.inf)
    # the row's own place, when better than its title's, stands
    scores[row] = 9.0
    assert first.rows_lifted(scores)[row] == 9.0
    plain = np.linspace(1.0, 0.0, len(prose.sentences))
    assert first_stage(SentenceIndex([prose])).rows_lifted(plain) is plain
