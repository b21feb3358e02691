"""Runners of the seed papers' protocols: development sets, long-document builders, length
ladders and the QA benchmarks."""
