"""Loading the packaged MiniLM as a cross-encoder is quiet: sentence-transformers' message
that it converts the model (which is the intent) is dropped at its logger, for that load
only, and a warning of any other kind still reaches the log."""

from __future__ import annotations

import logging

import pytest

from longscan.rerankers.cross_encoder import base_cross_encoder

LOGGER = "sentence_transformers.base.model"


def test_the_expected_conversion_is_not_logged_and_other_warnings_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        base_cross_encoder(64)
    assert not [r for r in caplog.records if "Converting" in r.getMessage()]
    assert logging.getLogger(LOGGER).filters == []  # nothing left behind
    logging.getLogger(LOGGER).warning("a real problem")
    assert "a real problem" in caplog.text
