"""Memory banks: many documents with stable ids, persistent indexes, two-stage search."""

from __future__ import annotations

from longscan.bank.records import BankDocument
from longscan.bank.search import BankHit, first_stage, search
from longscan.bank.store import MemoryBank

__all__ = ["BankDocument", "BankHit", "MemoryBank", "first_stage", "search"]
