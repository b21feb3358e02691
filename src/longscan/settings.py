"""Settings read from the environment (``LONGSCAN_*``) with pydantic-settings, and the
platform's folders (platformdirs) where nothing is set: one place resolves them, so the
CLI, the library and the service agree."""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

APP = "longscan"


class Folders(BaseSettings):
    """Where longscan keeps its files: ``LONGSCAN_CACHE_DIR`` (vectors, model exports,
    extracted documents), ``LONGSCAN_DATA_DIR`` (the default memory bank) and
    ``LONGSCAN_CONFIG_DIR`` (``llm.toml``), else the platform's user folders (on Linux
    ``~/.cache/longscan``, ``~/.local/share/longscan``, ``~/.config/longscan``, each
    following its ``XDG_*`` variable). The benchmarks' data is not among them: see
    ``BenchData``."""

    model_config = SettingsConfigDict(env_prefix="LONGSCAN_", extra="ignore")

    cache_dir: Path = Field(default_factory=lambda: platformdirs.user_cache_path(APP))
    data_dir: Path = Field(default_factory=lambda: platformdirs.user_data_path(APP))
    config_dir: Path = Field(default_factory=lambda: platformdirs.user_config_path(APP))


class BenchData(BaseSettings):
    """``LONGSCAN_BENCH_DATA``: the folder of the reference QA datasets (``squad/``,
    ``hotpotqa/``, ...) that benchmarks, evaluation and training read. It is shared
    read-only, apart from longscan's own folders; unset (or empty), ``longscan.bench.datasets``
    looks beside the source checkout."""

    model_config = SettingsConfigDict(env_prefix="LONGSCAN_", extra="ignore", env_ignore_empty=True)

    bench_data: Path | None = None


class LLMEnvironment(BaseSettings):
    """The LLM settings the environment gives: ``LONGSCAN_LLM_URL``, ``LONGSCAN_LLM_MODEL``
    and ``LONGSCAN_LLM_CONFIG`` (a TOML file other than ``<config dir>/llm.toml``)."""

    model_config = SettingsConfigDict(env_prefix="LONGSCAN_LLM_", extra="ignore")

    url: str | None = None
    model: str | None = None
    config: Path | None = None
