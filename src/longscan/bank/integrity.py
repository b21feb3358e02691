"""A bank's integrity: where the table and its two indexes disagree (``check``), and making
them agree again (``repair``). The table holds the documents; the indexes are derived from it,
so repair always makes the indexes follow the table."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from longscan.bank.errors import BM25IndexError, DenseIndexError

if TYPE_CHECKING:
    from longscan.bank.store import MemoryBank


@dataclass
class CheckReport:
    """Where the table and the indexes disagree (ids), from ``MemoryBank.check``.

    ``pending``: documents not indexed yet (an interrupted ``add`` or ``repair`` leaves
    them; ``repair`` indexes them); ``missing``: flagged indexed in the table, absent from
    the index; ``orphans``: in the index, not in the table; ``duplicates``: more than once in
    the BM25 index; ``unreadable``: index files that cannot be read (all their documents are
    missing); ``entries``: the documents each readable index holds. A bank is ``ok`` only
    when every document is in both indexes, once: searches see the whole bank.
    """

    documents: int = 0
    pending: int = 0
    missing: dict[str, list[int]] = field(default_factory=dict)
    orphans: dict[str, list[int]] = field(default_factory=dict)
    duplicates: list[int] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)  # file -> why
    entries: dict[str, int] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        """What keeps the bank from being whole, one line each; none when it is."""
        found = [f"{file} cannot be read" for file in self.unreadable]
        if self.pending:
            found.append(f"{self.pending} of {self.documents} documents are not indexed")
        for name, count in self.entries.items():
            if count < self.documents:
                found.append(f"the {name} index holds {count} of {self.documents} documents")
        for name, ids in self.missing.items():
            if ids:
                found.append(f"{len(ids)} documents flagged indexed are not in the {name} index")
        for name, ids in self.orphans.items():
            if ids:
                found.append(f"the {name} index holds {len(ids)} deleted documents")
        if self.duplicates:
            found.append(f"{len(self.duplicates)} documents are in the bm25 index more than once")
        return found

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": self.problems,
            "documents": self.documents,
            "pending": self.pending,
            "entries": self.entries,
            "missing": self.missing,
            "orphans": self.orphans,
            "duplicates": self.duplicates,
            "unreadable": self.unreadable,
        }


def check(bank: MemoryBank) -> CheckReport:
    """Compare the table with the BM25 and dense indexes, id by id (reads every id of the
    three: seconds per million documents)."""
    report = CheckReport()
    table = dict(bank.db.execute("SELECT id, indexed FROM documents").fetchall())
    report.documents = len(table)
    report.pending = sum(1 for flag in table.values() if not flag)
    indexed = {doc_id for doc_id, flag in table.items() if flag}
    entries: dict[str, Counter[int]] = {}
    try:
        entries["bm25"] = bank.indexes.bm25_ids()
    except BM25IndexError as error:
        report.unreadable["bm25"] = str(error)
    try:
        entries["dense"] = Counter(int(key) for key in bank.indexes.dense().keys)
    except DenseIndexError as error:
        report.unreadable["dense.usearch"] = str(error)
    for name in ("bm25", "dense"):
        found = entries.get(name, Counter())
        if name in entries:
            report.entries[name] = len(set(found) & set(table))
        report.missing[name] = sorted(indexed - set(found))
        report.orphans[name] = sorted(set(found) - set(table))
    report.duplicates = sorted(i for i, n in entries.get("bm25", Counter()).items() if n > 1)
    return report


def repair(bank: MemoryBank, progress: bool = True) -> CheckReport:
    """Make both indexes agree with the table: rebuild an unreadable index, drop entries of
    deleted documents, and index again every document missing from an index (with those
    never indexed). Returns what ``check`` found before."""
    with bank.writing():
        report = check(bank)
        if "bm25" in report.unreadable:
            bank.indexes.drop_bm25()  # rebuilt by the sync below
        if "dense.usearch" in report.unreadable:
            bank.indexes.drop_dense()
        orphans = sorted({i for ids in report.orphans.values() for i in ids})
        if orphans:
            bank._unindex(orphans)
        redo = {i for ids in report.missing.values() for i in ids} | set(report.duplicates)
        bank._flag(sorted(redo), indexed=False)
        bank.sync(progress=progress)
    return report
