"""Lexical ranking below every retriever and the scanner: BM25, and rank fusion."""
