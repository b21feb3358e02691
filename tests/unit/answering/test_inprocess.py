"""The packaged instruct model in this process: the system turns it keeps between questions
change no answer and no token count, and a new system turn is read afresh."""

from __future__ import annotations

import pytest

from longscan.answering.inprocess import InProcessChat, turns
from longscan.answering.prompts import (
    ANSWER_CLOSED_BOOK,
    ANSWER_FROM_CITED,
    ANSWER_WITH_EVIDENCE,
)

pytest.importorskip("gpt4all", reason="the local answerer's runtime (extra [answerer])")

EVIDENCE = {
    "What is the capital of France?": "[1] Paris is the capital of France.\n"
    "[2] Berlin is the capital of Germany.",
    "When was the lamp lit?": "[1] The keeper was named Oswin Tarrow.\n"
    "[2] He lit the lamp at six o'clock every evening.",
}
TWO_TURNS = (ANSWER_WITH_EVIDENCE, ANSWER_FROM_CITED)  # an answer, and its question asked again


@pytest.fixture(scope="module")
def chat() -> InProcessChat:
    return InProcessChat(max_tokens=12)


def test_a_kept_system_turn_gives_the_answers_and_counts_of_a_fresh_read(
    chat: InProcessChat,
) -> None:
    asked = [
        ANSWER_WITH_EVIDENCE.messages(evidence=evidence, question=question)
        for question, evidence in EVIDENCE.items()
    ]
    fresh = [InProcessChat(max_tokens=12).chat(messages) for messages in asked]  # read whole
    kept = [chat.chat(messages) for messages in [*asked, *asked]]
    assert [c.text for c in kept] == [c.text for c in fresh] * 2
    assert [c.prompt_tokens for c in kept] == [c.prompt_tokens for c in fresh] * 2
    assert "Paris" in kept[0].text and "o'clock" in kept[1].text


def test_another_system_turn_is_read_in_its_place(chat: InProcessChat) -> None:
    closed = ANSWER_CLOSED_BOOK.messages(question="What is the capital of Italy?")
    first = chat.chat(closed)
    assert "Rome" in first.text
    question, evidence = next(iter(EVIDENCE.items()))
    after = chat.chat(ANSWER_WITH_EVIDENCE.messages(evidence=evidence, question=question))
    assert "Paris" in after.text
    assert chat.chat(closed).text == first.text


def test_two_system_turns_stay_read_and_a_third_reads_over_the_older(chat: InProcessChat) -> None:
    kept = [turns(p.messages(evidence="", question="")[:1]) for p in TWO_TURNS]
    for prompt in TWO_TURNS:
        chat.read_ahead(prompt.system)
    contexts = {c.kept_text: c for c in chat._contexts}
    assert set(contexts) == set(kept)
    tokens = {text: list(c.kept_tokens) for text, c in contexts.items()}
    question, evidence = next(iter(EVIDENCE.items()))
    for prompt in TWO_TURNS:  # each asks in its own context and leaves the other as it was
        chat.chat(prompt.messages(evidence=evidence, question=question))
        assert {c.kept_text: c.kept_tokens for c in chat._contexts} == tokens
    chat.chat(ANSWER_CLOSED_BOOK.messages(question=question))
    assert [c.kept_text for c in chat._contexts][0] == kept[1]  # the answer prompt's went
