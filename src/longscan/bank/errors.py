"""What goes wrong with a bank, each with a message that names the file and what repairs it:
one module that the store, its indexes and its callers all import, below each of them."""

from __future__ import annotations


class BankError(RuntimeError):
    """A bank that cannot be used as it is: missing, damaged or busy. The message names the
    file and what repairs it."""


class BankNotFound(BankError):
    """No bank in the folder, and the caller may not create one."""


class BankBusy(BankError):
    """Another process holds the bank's writer lock longer than the caller would wait."""


class DenseIndexError(BankError):
    """``dense.usearch`` cannot be read; ``MemoryBank.repair`` rebuilds it."""


class BM25IndexError(BankError):
    """The ``bm25/`` index cannot be opened; ``MemoryBank.repair`` rebuilds it."""
