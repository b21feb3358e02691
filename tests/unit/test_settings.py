"""Settings resolve in one place: LONGSCAN_* variables, else the platform's user folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.answering.llm import resolve_config
from longscan.cli import app
from longscan.documents import Document
from longscan.files import default_cache_dir
from longscan.settings import Folders


def test_folders_follow_longscan_then_xdg_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LONGSCAN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    assert default_cache_dir() == tmp_path / "xdg-cache" / "longscan"
    assert Folders().config_dir == tmp_path / "xdg-config" / "longscan"
    monkeypatch.setenv("LONGSCAN_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"


def test_the_llm_config_file_sits_in_the_config_folder_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LONGSCAN_LLM_URL", "LONGSCAN_LLM_MODEL", "LONGSCAN_LLM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LONGSCAN_CONFIG_DIR", str(tmp_path))
    assert resolve_config() is None
    (tmp_path / "llm.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "a"\n')
    assert (resolve_config().base_url, resolve_config().model) == ("http://127.0.0.1:9/v1", "a")
    monkeypatch.setenv("LONGSCAN_LLM_MODEL", "b")
    assert resolve_config().model == "b"
    assert resolve_config(model="c").model == "c"


def test_the_default_bank_lives_in_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from longscan.bank import MemoryBank

    monkeypatch.setenv("LONGSCAN_DATA_DIR", str(tmp_path))
    bank = MemoryBank(tmp_path / "bank")
    bank.add([Document("a.txt", "The key is under the stone.")])
    bank.sync(progress=False)
    stats = CliRunner().invoke(app, ["bank", "stats"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.stdout)["documents"] == 1


def test_settings_is_the_only_module_that_reads_or_writes_the_environment() -> None:
    """Every setting goes through ``longscan.settings``; nothing else touches
    ``os.environ`` or process-wide allocator settings (the command line chooses those)."""
    import re

    import longscan

    package = Path(longscan.__file__).parent
    touches = re.compile(r"os\.environ|os\.getenv|os\.putenv|envvar=|mallopt")
    found = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if touches.search(path.read_text(encoding="utf-8"))
    }
    assert found == {"settings.py", "devices.py"}, found
    devices = (package / "devices.py").read_text(encoding="utf-8")
    assert not re.search(r"os\.environ|os\.getenv|envvar=", devices)  # its mallopt only


def test_an_override_wins_over_the_environment_and_reaches_ray_workers_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from longscan.settings import clear_overrides, override, runtime, worker_environment

    monkeypatch.setenv("LONGSCAN_PRECISION", "float32")
    monkeypatch.delenv("LONGSCAN_DEVICE", raising=False)
    try:
        assert runtime().precision == "float32" and worker_environment() == {}
        override(precision="bfloat16")
        assert runtime().precision == "bfloat16"
        assert os.environ["LONGSCAN_PRECISION"] == "float32"
        assert worker_environment() == {"LONGSCAN_PRECISION": "bfloat16"}
        with pytest.raises(ValueError, match="no runtime setting named colour"):
            override(colour="blue")
    finally:
        clear_overrides()
    assert runtime().precision == "float32"
