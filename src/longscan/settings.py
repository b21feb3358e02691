"""Settings read from the environment (``LONGSCAN_*``) with pydantic-settings, and the
platform's folders (platformdirs) where nothing is set: one place resolves them, so the
CLI, the library and the service agree.

This module is the only reader of the environment in longscan, and nothing in longscan
writes to it: a command-line option that overrides a setting (``--device``) goes through
``override`` here, and Ray workers receive the overrides through ``worker_environment``.
"""

from __future__ import annotations

import os
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


class CommandDefaults(BaseSettings):
    """Defaults the environment gives commands: ``LONGSCAN_ANSWERER`` (who answers) and
    ``LONGSCAN_API_KEY`` (the key a service requires)."""

    model_config = SettingsConfigDict(env_prefix="LONGSCAN_", extra="ignore", env_ignore_empty=True)

    answerer: str = "auto"
    api_key: str | None = None


class Runtime(BaseSettings):
    """Where and how the models run: ``LONGSCAN_DEVICE`` (``cpu``, ``cuda``, ``cuda:1``,
    ``mps``...), ``LONGSCAN_PRECISION`` (``float32`` or ``bfloat16``) and
    ``LONGSCAN_RUNTIME`` (``onnx`` or ``torch`` for float32 MiniLM); unset, each is chosen
    from the hardware (``longscan.devices``, ``longscan.encoders.bert``)."""

    model_config = SettingsConfigDict(env_prefix="LONGSCAN_", extra="ignore", env_ignore_empty=True)

    device: str | None = None
    precision: str | None = None
    runtime: str | None = None


_overrides: dict[str, str] = {}  # runtime settings a command-line option gave this process


def runtime() -> Runtime:
    """The runtime settings: an ``override`` wins over the environment."""
    return Runtime(**_overrides)


def override(**values: str) -> None:
    """Set runtime settings for this process (and the Ray workers it starts), as a
    command-line option does, without touching the environment."""
    unknown = set(values) - set(Runtime.model_fields)
    if unknown:
        raise ValueError(f"no runtime setting named {', '.join(sorted(unknown))}")
    _overrides.update(values)


def clear_overrides() -> None:
    """Forget every ``override`` (tests and long-lived hosts that change their mind)."""
    _overrides.clear()


def worker_environment() -> dict[str, str]:
    """The variables a Ray worker needs to see this process's overrides."""
    return {f"LONGSCAN_{name.upper()}": value for name, value in _overrides.items()}


def variable(name: str) -> str | None:
    """One environment variable the user names in a setting (an API key's variable)."""
    return os.environ.get(name) or None


def omp_threads() -> int | None:
    """``$OMP_NUM_THREADS`` when it is a positive whole number, else ``None``."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def temp_root() -> str:
    """Where Ray puts its files unless told: ``$RAY_TMPDIR``, ``$TMPDIR``, else ``/tmp``."""
    return os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
