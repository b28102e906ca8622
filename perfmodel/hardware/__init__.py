"""The hardware database: one TOML file per GPU id, every value with its provenance.

    from perfmodel.hardware import gpu, gpu_ids
    h100 = gpu("h100")
    h100.value("dram_bandwidth_bytes_per_s")     # 3.35e12
    h100.params["sm_count"].ref                  # where the number came from
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from keet.errors import KeetError

SOURCES = ("vendor", "microbenchmark", "publication", "derived")


class UnknownGPU(KeetError):
    def __init__(self, gpu_id: str) -> None:
        super().__init__(f"unknown GPU id {gpu_id!r} (known: {', '.join(gpu_ids())})")


@dataclass(frozen=True)
class Param:
    name: str
    value: float
    unit: str
    source: str
    ref: str
    note: str = ""


@dataclass(frozen=True)
class GPU:
    id: str
    name: str
    vendor: str
    arch: str
    compute_capability: str | None
    params: dict[str, Param]

    def value(self, name: str, default: float | None = None) -> float | None:
        param = self.params.get(name)
        return default if param is None else param.value

    def require(self, name: str) -> float:
        param = self.params.get(name)
        if param is None:
            raise KeetError(f"the hardware file of {self.id} has no {name}")
        return param.value


def gpu_ids() -> list[str]:
    return sorted(p.name.removesuffix(".toml") for p in resources.files(__name__).iterdir() if p.name.endswith(".toml"))


@cache
def gpu(gpu_id: str) -> GPU:
    """The hardware description of a GPU id (h100, h200, b200, a100, mi300a, mi300x, mi250x)."""
    key = gpu_id.lower()
    if key not in gpu_ids():
        raise UnknownGPU(gpu_id)
    return parse(resources.files(__name__).joinpath(f"{key}.toml").read_text())


def parse(text: str) -> GPU:
    """A GPU from the text of a hardware file."""
    data = tomllib.loads(text)
    head = data["gpu"]
    params = {
        name: Param(name, float(entry["value"]), entry.get("unit", ""), entry["source"], entry["ref"], entry.get("note", ""))
        for name, entry in data.get("params", {}).items()
    }
    return GPU(head["id"], head["name"], head.get("vendor", ""), head.get("arch", ""), head.get("compute_capability"), params)


# Device names as the profilers report them (Nsight Compute's device__attribute_display_name,
# nvidia-smi, rocprof's agent marketing name) -> hardware id. Only the exact products the files
# describe match: an H100 PCIe / NVL, an A100 40GB or PCIe, a GB200 or an MI250 (not X) differ
# in SM count, clocks or memory and get None rather than a near miss.
_DEVICE_PATTERNS = (
    (r"\bH100\b(?!.*\b(PCIe|NVL)\b)", "h100"),
    (r"\bH200\b(?!.*\bNVL\b)", "h200"),
    (r"(?<![A-Z])B200\b", "b200"),
    (r"\bA100\b.*\b80\s?GB\b(?!.*PCIE)", "a100"),
    (r"\bMI300X\b", "mi300x"),
    (r"\bMI300A\b", "mi300a"),
    (r"\bMI250X\b", "mi250x"),
)


def gpu_id_for_device_name(name: str | None) -> str | None:
    """The hardware id of a profiled device's name ("NVIDIA H100 80GB HBM3" -> "h100"), or None
    when the name is not one of the products the database describes."""
    if not name:
        return None
    for pattern, gpu_id in _DEVICE_PATTERNS:
        if re.search(pattern, name, flags=re.IGNORECASE):
            return gpu_id
    return None
