"""usearch's ``Index``, loaded in the one order that does not crash the process.

usearch's Linux wheels (2.26.6 among them) carry their own static copy of libstdc++ (GCC 14)
inside the extension module and export it, GNU-unique symbols included: the ids that number
the facets of a ``std::locale``. The dynamic loader keeps one definition of a unique symbol
per process, whichever library loads first, so a copy of libstdc++ loaded later shares those
ids while counting with its own counter. When usearch's copy sets up its locale first, the
system's libstdc++ (which onnxruntime links) files its facets under numbers that belong to
other facets, and onnxruntime's import calls ``std::codecvt<char16_t>`` through the wrong
object: a segmentation fault (``import usearch; import onnxruntime`` is enough). When the
system's library sets up its locale first, usearch's copy takes the ids as given and both
work. Importing onnxruntime does that (loading libstdc++ alone does not: its locale is set
up on first use), and the bank's encoder runs on onnxruntime anyway.

Every use of usearch in longscan goes through ``usearch_index``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from usearch.index import Index


def usearch_index() -> type[Index]:
    """usearch's ``Index`` class, with onnxruntime (the system's libstdc++) loaded first."""
    import onnxruntime  # noqa: F401  # before usearch: see the module's docstring
    import usearch.index

    return usearch.index.Index
