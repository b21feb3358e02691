"""Every retriever behind one interface: ``retrieve(query, documents) -> list[Evidence]``."""

from longscan.retrievers.base import Retriever, Units, validate_query
from longscan.retrievers.bm25 import BM25Retriever
from longscan.retrievers.dense import DenseRetriever
from longscan.retrievers.hybrid import HybridRetriever
from longscan.retrievers.registry import BASELINES, available, get_retriever, register
from longscan.retrievers.simple import OracleRetriever, RandomRetriever

__all__ = [
    "BASELINES",
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "OracleRetriever",
    "RandomRetriever",
    "Retriever",
    "Units",
    "available",
    "get_retriever",
    "register",
    "validate_query",
]
