from __future__ import annotations

import numpy as np
import pytest

from longscan.bench.items import instructed_query
from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.minilm import get_encoder
from longscan.retrievers.scanner import ScannerRetriever
from longscan.scanning import Scanner, SlidingWindow
from longscan.scanning.features import (
    FEATURE_NAMES,
    MAX_QUERY_PARTS,
    LexicalFeatures,
    TokenMatch,
    capitalised_names,
    max_sim,
    query_parts,
)


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
    columns = FEATURE_NAMES.index("token_match")
    features = LexicalFeatures().for_scan(
        "capital of France", [document], vectors, vectors[1], columns
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
    columns = FEATURE_NAMES.index("token_match_rank") + 1  # the vectors here are not MiniLM's

    def token_match(text: str, settings: TokenMatch) -> np.ndarray:
        features = LexicalFeatures(encoder, token_match=settings)
        features.query_vector(text)  # inference: the query's tokens from its own pass
        return features.for_scan(text, [document], vectors, vectors[5], columns)[:, column]

    whole = token_match(query, TokenMatch())
    cut = token_match(query, TokenMatch(query_tokens=32))
    instruction_only, answer = encoder.token_vectors(
        [instruction, document.sentence_texts()[0]], 32
    )
    assert cut[0] == pytest.approx(max_sim(instruction_only, answer))  # never saw the question
    assert whole[0] > cut[0]
    assert whole[0] == whole.max()
    trained = LexicalFeatures(encoder).for_scan(query, [document], vectors, vectors[5], columns)
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


def test_token_match_needs_the_encoder_only_when_read() -> None:
    document = Document("d", "Paris is the capital of France. Berlin is in Germany.")
    vectors = np.eye(2, 8, dtype=np.float32)
    query = "capital of France"
    with pytest.raises(ValueError, match="sentence encoder"):
        LexicalFeatures().for_scan(query, [document], vectors, vectors[0])
    columns = FEATURE_NAMES.index("token_match")
    features = LexicalFeatures().for_scan(query, [document], vectors, vectors[0], columns)
    assert features[:, columns:].max() == 0


def test_max_sim() -> None:
    query = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert max_sim(query, np.array([[1.0, 0.0]])) == pytest.approx(0.5)
    assert max_sim(query, query) == pytest.approx(1.0)
    assert max_sim(query, np.zeros((0, 2))) == 0.0
