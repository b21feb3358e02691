"""The distribution carries its licence and a notice that covers every shipped model."""

from __future__ import annotations

from importlib.metadata import distribution
from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_distribution_carries_the_licence_and_the_notice() -> None:
    installed = distribution("longscan")
    assert installed.metadata["License-Expression"] == "Apache-2.0"
    for name in ("LICENSE", "NOTICE"):
        shipped = installed.locate_file(f"longscan-{installed.version}.dist-info/licenses/{name}")
        assert Path(shipped).read_text(encoding="utf-8") == (ROOT / name).read_text("utf-8")
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")[:200]


def test_the_notice_names_every_shipped_checkpoint_and_data_file() -> None:
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    package = files("longscan")
    shipped = [p.name for p in package.joinpath("checkpoints").iterdir() if p.is_dir()]
    shipped += [p.name for p in package.joinpath("data").iterdir() if p.name.endswith(".txt")]
    assert shipped and all(name in notice for name in shipped), shipped
