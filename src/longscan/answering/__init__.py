"""From evidence to an answer: LLM clients, prompts, token budgets, the extractive reader and
the local instruct model, and the citation checks."""
