"""The packaged instruct model in this process: the system turn it keeps between questions
changes no answer and no token count, and a new system turn is read afresh."""

from __future__ import annotations

import pytest

from longscan.answering.inprocess import InProcessChat
from longscan.answering.prompts import ANSWER_CLOSED_BOOK, ANSWER_WITH_EVIDENCE

pytest.importorskip("gpt4all", reason="the local answerer's runtime (extra [answerer])")

EVIDENCE = {
    "What is the capital of France?": "[1] Paris is the capital of France.\n"
    "[2] Berlin is the capital of Germany.",
    "When was the lamp lit?": "[1] The keeper was named Oswin Tarrow.\n"
    "[2] He lit the lamp at six o'clock every evening.",
}


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
