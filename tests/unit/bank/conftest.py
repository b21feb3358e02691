"""Bank fixtures: real HotpotQA paragraphs, and one Ray session shared by the whole run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from longscan.bench.builders import build_multihop
from longscan.documents import Document


@pytest.fixture(scope="session")
def paragraphs() -> list[Document]:
    """Real HotpotQA paragraphs, one document each, with stable keys."""
    items = build_multihop("hotpotqa", "dev", 3_000, max_items=6, mode="collection")
    unique = {d.id: d for item in items for d in item.documents}
    return list(unique.values())


@pytest.fixture(scope="session")
def ray_workers() -> Iterator[None]:
    """Ray embedded with two workers, started once (seconds) and shut down at the end."""
    from longscan.parallel import ray_session

    with ray_session(num_cpus=2):
        yield
