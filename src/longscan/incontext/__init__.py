"""In-context retrieval: a causal LM reads the whole text in its own context and points at the
evidence (CFIC, SEEDS.md §5), run in process through ``transformers`` for raw logits and the
KV cache. Every output maps back to exact character offsets of the user's text."""
