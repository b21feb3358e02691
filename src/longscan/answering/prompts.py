"""Every prompt longscan sends, in one place, each with a version.

The prompts are written from the seed papers' descriptions (SPScanner's yes/no judge with
separate free-form and multiple-choice prompts, Loong's 1-100 ``[[score]]`` judge, EMB-S's
0-5 judge and ``[DocID=n]`` localisation). A prompt's text is part of the LLM cache key, so
editing one re-asks the LLM; bump its version so reports say which wording produced them.
"""

from __future__ import annotations

from dataclasses import dataclass

Message = dict[str, str]


@dataclass(frozen=True)
class Prompt:
    name: str
    version: int
    system: str
    user: str

    def messages(self, **fields: str) -> list[Message]:
        return [
            {"role": "system", "content": self.system.format(**fields)},
            {"role": "user", "content": self.user.format(**fields)},
        ]

    @property
    def tag(self) -> str:
        return f"{self.name}@v{self.version}"


ANSWER_WITH_EVIDENCE = Prompt(
    "answer-with-evidence",
    4,
    "You answer questions about long documents using only the numbered evidence given. "
    "Reply with the answer itself, as short as it can be (a name, a number, a date, yes or "
    "no), followed by the numbers of the evidence it comes from in square brackets, e.g. "
    "[3] or [2][5]. A table row is followed by its table's title, column header and row "
    "group in braces.",
    "Evidence (in document order):\n{evidence}\n\nQuestion: {question}\n\nAnswer:",
)

ANSWER_FROM_CITED = Prompt(
    "answer-from-cited",
    1,
    "You answer a question from the passage given, in the passage's own words. Reply with "
    "the answer itself as a short phrase (a name, a number, a date, yes or no), with no "
    "explanation.",
    "Passage:\n{evidence}\n\nQuestion: {question}\n\nAnswer:",
)

ANSWER_CLOSED_BOOK = Prompt(
    "answer-closed-book",
    1,
    "You answer questions from what you know. Give the answer itself as a short phrase, "
    "with no explanation.",
    "Question: {question}\n\nAnswer (a short phrase):",
)

ANSWER_WINDOW = Prompt(
    "answer-window",
    1,
    "You read one part of a long text and answer a question from it alone. If this part "
    "does not contain the answer, reply exactly: NOT FOUND.",
    "Part {part} of {parts} of the text:\n{text}\n\nQuestion: {question}\n\nAnswer briefly.",
)

MERGE_WINDOW_ANSWERS = Prompt(
    "merge-window-answers",
    1,
    "Several readers each saw one part of a long text and answered the same question. "
    "Combine their answers into one final answer; ignore parts that say NOT FOUND.",
    "Question: {question}\n\nAnswers from each part:\n{answers}\n\nFinal answer:",
)

JUDGE_FREE_FORM = Prompt(
    "judge-yes-no-free-form",
    1,
    "You grade answers to questions about long documents. Compare the model's answer with "
    "the reference answer. Say yes if the model's answer conveys the same information as "
    "the reference (wording may differ), no otherwise. Reply with one word: yes or no.",
    "Question: {question}\nReference answer: {reference}\nModel answer: {answer}\n\n"
    "Is the model answer correct? (yes/no)",
)

JUDGE_MULTIPLE_CHOICE = Prompt(
    "judge-yes-no-multiple-choice",
    1,
    "You grade answers to multiple-choice questions. The model's answer is correct if it "
    "picks the same option(s) as the reference, whether it gives the letter, the option's "
    "text or both. Reply with one word: yes or no.",
    "Question and options: {question}\nReference option(s): {reference}\n"
    "Model answer: {answer}\n\nDid the model pick the reference option(s)? (yes/no)",
)

JUDGE_LOONG = Prompt(
    "judge-loong",
    1,
    "You are an impartial judge of answers to questions over several long documents. "
    "Compare the assistant's answer with the gold answer for accuracy and completeness; "
    "every item of the gold answer matters. Explain briefly, then give a score from 1 to "
    "100 in double square brackets, e.g. [[75]]; give [[100]] only to a fully correct "
    "answer.",
    "[Question]\n{question}\n\n[Gold answer]\n{reference}\n\n[Assistant's answer]\n"
    "{answer}\n\nYour judgement and score:",
)

JUDGE_EMBS = Prompt(
    "judge-embs",
    1,
    "You grade an answer against a reference on a 0-5 scale: 5 fully correct and complete, "
    "4 correct with small omissions, 3 partly correct, 2 mostly incorrect but related, "
    "1 incorrect, 0 no answer or irrelevant. Reply with 'Score: N' and one sentence why.",
    "Question: {question}\nReference answer: {reference}\nAnswer: {answer}",
)

LOCALIZE_DOCUMENTS = Prompt(
    "localize-documents",
    1,
    "You find the documents that hold the evidence for a question. Each document starts "
    "with [DocID=n]. Reply with the ids of the evidence documents, most relevant first, as "
    "a comma-separated list of integers, and nothing else.",
    "{corpus}\n\nQuestion: {question}\n\nList the ids of at most {k} evidence documents:",
)

SYNTH_CHUNK = Prompt(
    "synth-chunk",
    1,
    "You write training data for a system that finds evidence in long documents. Given "
    "numbered sentences from a document, write one specific question that these sentences "
    "answer, and list the numbers of every sentence needed to answer it. Reply in JSON: "
    '{{"question": "...", "relevant": [numbers]}}.',
    "Sentences:\n{chunk}\n\nJSON:",
)

SYNTH_TABLE = Prompt(
    "synth-table",
    1,
    "You write training data for a system that finds evidence in long documents. Given "
    "numbered lines of a table from a report (after a row, its table's title, column header "
    "and row group are shown in braces), write one specific question that figures in these "
    "rows answer, naming the item and the period or column as a reader of the report would, "
    "and list the numbers of every row needed to answer it. Reply in JSON: "
    '{{"question": "...", "relevant": [numbers]}}.',
    "Lines:\n{chunk}\n\nJSON:",
)

REWORD_QUESTION = Prompt(
    "reword-question",
    1,
    "You reword questions about documents the way a person asks who has not read them. "
    "Rewrite the question without the words to replace: say what they mean in everyday "
    "words or synonyms. Keep the company or party, every year, quarter, date and number, and "
    "what is asked. Reply with the new question alone.",
    "Question: {question}\nWords to replace: {words}\n\nThe question in other words:",
)

CONTRACT_QUESTION = Prompt(
    "contract-question",
    1,
    "You write test questions about contracts, as a lawyer or a business reader reviewing "
    "the contract asks them. Given numbered sentences of a contract, write one question "
    "that one sentence answers with a short phrase: a date, a period, an amount, a "
    "percentage, a number of days, a place, a governing law or a named standard. Not a "
    "party's name: the contract names its parties everywhere. Reply in exactly three "
    "lines:\nQuestion: the question, ending with a question mark\nAnswer: the short "
    "phrase, copied exactly from the sentence\nSentence: the sentence's number",
    "Contract: {title}\n\nSentences:\n{sentences}\n\nThe question, its answer and the sentence:",
)

SYNTH_LINKS = Prompt(
    "synth-find-links",
    2,
    "You read a passage of a long document, split into numbered chunks. Chunk {anchor} is "
    "the starting chunk. Find the other chunk with the strongest real connection to it: the "
    "same entity, event, figure, cause or consequence, or a reference between them. Reply in "
    'JSON: {{"chunk": number, "connection": "what connects them"}}.',
    "{window}\n\nThe chunk most connected to chunk {anchor}, as JSON:",
)

SYNTH_TWO_CHUNKS = Prompt(
    "synth-two-chunks",
    1,
    "You write training data for a system that finds evidence in long documents. Given two "
    "passages of one document ({relation}), write one question that can only be answered "
    "with information from both passages, then list the numbers of every sentence needed, "
    'in each passage. Reply in JSON: {{"question": "...", "relevant_a": [numbers], '
    '"relevant_b": [numbers]}}.',
    "Passage A:\n{chunk_a}\n\nPassage B:\n{chunk_b}\n\nJSON:",
)

ALL_PROMPTS = (
    ANSWER_WITH_EVIDENCE,
    ANSWER_FROM_CITED,
    ANSWER_CLOSED_BOOK,
    ANSWER_WINDOW,
    MERGE_WINDOW_ANSWERS,
    JUDGE_FREE_FORM,
    JUDGE_MULTIPLE_CHOICE,
    JUDGE_LOONG,
    JUDGE_EMBS,
    LOCALIZE_DOCUMENTS,
    SYNTH_CHUNK,
    SYNTH_TABLE,
    SYNTH_LINKS,
    SYNTH_TWO_CHUNKS,
    REWORD_QUESTION,
    CONTRACT_QUESTION,
)


def versions() -> dict[str, int]:
    """Name → version of every prompt, recorded in each benchmark report."""
    return {prompt.name: prompt.version for prompt in ALL_PROMPTS}
