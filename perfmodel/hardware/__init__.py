"""The hardware database: one TOML file per GPU id, every value with its provenance.

    from perfmodel.hardware import gpu, gpu_ids
    h100 = gpu("h100")
    h100.value("dram_bandwidth_bytes_per_s")     # 3.35e12
    h100.params["sm_count"].ref                  # where the number came from

Every hardware fact lives here, as data: the GPU files (<id>.toml: parameters, how a profile's
device is recognised, the build target), and the instruction-set files (isa/<arch>.toml: sector
and line sizes, register and LDS allocation granules... shared by the GPUs of one arch). A GPU's
``value``/``require`` fall back to its ISA's parameters. Adding a GPU is adding its TOML file;
the folders named in $PERFMODEL_HARDWARE_PATH (os.pathsep-separated; each may hold an isa/
folder too) are read after the built-in one, so a GPU can be added without editing the package.

Every parameter is declared in parameters.toml (perfmodel.hardware.schema): a file whose
parameter is undeclared, or has another unit or a source the declaration does not allow, is
refused (HardwareFileError, naming the file and the parameter); ``value``/``require`` of an
undeclared name raise UnknownParameter (a typo in the code), while a declared parameter a
file lacks is None / the default as ever.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from keet.errors import KeetError
from perfmodel.hardware.schema import (
    SCHEMA_FILE_NAME,
    HardwareFileError,
    UnknownParameter,
    check_param,
    declared_names,
)

# The declared parameter names (parameters.toml, parsed once): value/require refuse any other.
_DECLARED: frozenset[str] = declared_names()
# Folders of extra hardware files, read after the package's own.
HARDWARE_PATH_ENV = "PERFMODEL_HARDWARE_PATH"
BUILTIN_DIR = Path(__file__).parent


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
class ISA:
    """Facts of one instruction-set architecture (sm_90, gfx942), shared by its GPUs."""

    id: str
    vendor: str
    aliases: tuple[str, ...]
    assumed_when_unnamed: bool  # the vendor's ISA a rule assumes when a profile names none
    params: dict[str, Param]

    def value(self, name: str, default: float | None = None) -> float | None:
        if name not in _DECLARED:
            raise UnknownParameter(name)
        param = self.params.get(name)
        return default if param is None else param.value

    def require(self, name: str) -> float:
        if name not in _DECLARED:
            raise UnknownParameter(name)
        param = self.params.get(name)
        if param is None:
            raise KeetError(f"the ISA file of {self.id} has no {name}")
        return param.value


@dataclass(frozen=True)
class GPU:
    id: str
    name: str
    vendor: str
    arch: str
    compute_capability: str | None
    params: dict[str, Param]  # the GPU file's own (its ISA's are reached through value/require)
    build_target: str = ""  # nvcc -gencode sm_XX(a) or hipcc --offload-arch gfxNNN
    listing_order: int = 0
    device_patterns: tuple[str, ...] = ()
    match_arch_and_sm_count: bool = False
    reference: bool = False  # the GPU of the zoo's reference profiles
    isa: ISA | None = field(default=None, compare=False)

    def value(self, name: str, default: float | None = None) -> float | None:
        if name not in _DECLARED:
            raise UnknownParameter(name)
        param = self.params.get(name)
        if param is None and self.isa is not None:
            param = self.isa.params.get(name)
        return default if param is None else param.value

    def require(self, name: str) -> float:
        value = self.value(name)
        if value is None:
            raise KeetError(f"the hardware file of {self.id} has no {name}")
        return value


def hardware_dirs() -> list[Path]:
    """The built-in hardware folder, then those of $PERFMODEL_HARDWARE_PATH."""
    extra = [Path(p) for p in os.environ.get(HARDWARE_PATH_ENV, "").split(os.pathsep) if p.strip()]
    return [BUILTIN_DIR, *extra]


def _gpu_files() -> dict[str, Path]:
    """GPU id -> its file; a later folder's file of the same id replaces an earlier one."""
    found: dict[str, Path] = {}
    for folder in hardware_dirs():
        if folder.is_dir():
            found.update({p.stem.lower(): p for p in sorted(folder.glob("*.toml")) if p.name != SCHEMA_FILE_NAME})
    return found


def _isa_files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in hardware_dirs():
        if (folder / "isa").is_dir():
            found.update({p.stem.lower(): p for p in sorted((folder / "isa").glob("*.toml"))})
    return found


def gpu_ids() -> list[str]:
    """Every GPU id of the database, sorted."""
    return sorted(_gpu_files())


def gpu_ids_in_listing_order() -> list[str]:
    """Every GPU id in the order of tables and lists (the files' listing_order, then id)."""
    return sorted(_gpu_files(), key=lambda gpu_id: (gpu(gpu_id).listing_order, gpu_id))


def isa_ids() -> list[str]:
    return sorted(_isa_files())


def isas() -> list[ISA]:
    """Every ISA file of the database, by id, from one listing of the folders (isa_ids() then
    isa() of each would list them once per id)."""
    return [_parse_isa(path, path.stat().st_mtime_ns) for _isa_id, path in sorted(_isa_files().items())]


def isa(name: str | None) -> ISA | None:
    """The ISA file of an arch name ("sm_90", "gfx942:sramecc+:xnack-", an alias such as "gfx940"), or None."""
    key = (name or "").split(":")[0].strip().lower()
    for isa_id, path in _isa_files().items():
        parsed = _parse_isa(path, path.stat().st_mtime_ns)
        if key == isa_id or key in parsed.aliases:
            return parsed
    return None


def assumed_isa(vendor: str) -> ISA:
    """The ISA a rule assumes for a profile of ``vendor`` that names no known arch."""
    for found in isas():
        if found.vendor == vendor and found.assumed_when_unnamed:
            return found
    raise KeetError(f"no ISA file of vendor {vendor!r} is marked assumed_when_unnamed")


def _params(data: dict, origin: str | Path, vendor: str) -> dict[str, Param]:
    """The [params] of a GPU or ISA file, each checked against the schema (parameters.toml)."""
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise HardwareFileError(origin, "params", "[params] must be a table of [params.NAME] tables")
    for name, entry in params.items():
        check_param(origin, vendor, name, entry)
    return {
        name: Param(name, float(entry["value"]), entry["unit"], entry["source"], entry["ref"], entry.get("note", ""))
        for name, entry in params.items()
    }


# Parsed files are cached by path and modification time, so a rewritten file (perfmodel
# calibrate) is re-read.
@cache
def _parse_isa(path: Path, mtime_ns: int) -> ISA:
    data = tomllib.loads(path.read_text())
    head = data["isa"]
    return ISA(head["id"], head["vendor"], tuple(head.get("aliases", ())), bool(head.get("assumed_when_unnamed", False)),
               _params(data, path, head["vendor"]))


def gpu(gpu_id: str) -> GPU:
    """The hardware description of a GPU id (``gpu_ids()`` lists them)."""
    path = _gpu_files().get(gpu_id.lower())
    if path is None:
        raise UnknownGPU(gpu_id)
    return _parse_gpu_file(path, path.stat().st_mtime_ns)


@cache
def _parse_gpu_file(path: Path, mtime_ns: int) -> GPU:
    return _parse_gpu(tomllib.loads(path.read_text()), path)


def parse(text: str, origin: str | Path = "<hardware file text>") -> GPU:
    """A GPU from the text of a hardware file (``origin``: the file it is, for errors)."""
    return _parse_gpu(tomllib.loads(text), origin)


def _parse_gpu(data: dict, origin: str | Path) -> GPU:
    head, identify = data["gpu"], data.get("identify", {})
    arch, vendor = head.get("arch", ""), head.get("vendor", "")
    return GPU(head["id"], head["name"], vendor, arch, head.get("compute_capability"), _params(data, origin, vendor),
               build_target=head.get("build_target", ""), listing_order=int(head.get("listing_order", 0)),
               device_patterns=tuple(identify.get("device_patterns", ())),
               match_arch_and_sm_count=bool(identify.get("match_arch_and_sm_count", False)),
               reference=bool(head.get("reference", False)), isa=isa(arch))


def sector_bytes() -> int:
    """Bytes of the sector in which keet's canonical *_sectors counts are kept: the NVIDIA
    L1/L2 sector, the same on every NVIDIA ISA file (AMD request counts are converted to it)."""
    sizes = {isa(i).require("sector_bytes") for i in isa_ids() if isa(i).vendor == "nvidia"}
    if len(sizes) != 1:
        raise KeetError(f"the NVIDIA ISA files disagree on sector_bytes: {sorted(sizes)}")
    return int(sizes.pop())


def shared_wavefront_bytes() -> int:
    """Bytes of one shared-memory wavefront, the unit of the canonical shared wavefront counts."""
    sizes = {isa(i).require("shared_wavefront_bytes") for i in isa_ids() if isa(i).vendor == "nvidia"}
    if len(sizes) != 1:
        raise KeetError(f"the NVIDIA ISA files disagree on shared_wavefront_bytes: {sorted(sizes)}")
    return int(sizes.pop())


def gpu_id_for_device_name(name: str | None) -> str | None:
    """The hardware id of a profiled device's name ("NVIDIA H100 80GB HBM3" -> "h100"), or None
    when the name is not one of the products the database describes ([identify] device_patterns)."""
    if not name:
        return None
    for gpu_id in gpu_ids():
        if any(re.search(pattern, name, flags=re.IGNORECASE) for pattern in gpu(gpu_id).device_patterns):
            return gpu_id
    return None


def gpu_id_for_device(name: str | None, arch: str | None = None, sm_count: float | None = None) -> str | None:
    """The hardware id of a profiled device: by its name, else (for files that allow it) by its
    arch and SM/CU count together, for profiles that name the arch but not the product."""
    found = gpu_id_for_device_name(name)
    if found is not None or not arch or not sm_count:
        return found
    key = arch.split(":")[0].lower()
    for gpu_id in gpu_ids():
        g = gpu(gpu_id)
        if g.match_arch_and_sm_count and g.arch == key and g.value("sm_count") == sm_count:
            return gpu_id
    return None


def reference_gpu_id() -> str:
    """The GPU of the zoo's reference profiles (the one file with [gpu] reference = true)."""
    found = [gpu_id for gpu_id in gpu_ids() if gpu(gpu_id).reference]
    if len(found) != 1:
        raise KeetError(f"exactly one hardware file must say reference = true, not {found}")
    return found[0]


def gpu_id_for_build_target(target: str) -> list[str]:
    """The GPU ids built for ``target`` (sm_90a -> h100, h200)."""
    return [gpu_id for gpu_id in gpu_ids() if gpu(gpu_id).build_target == target]


# The units of the canonical counts, read once from the ISA files.
SECTOR_BYTES: int = sector_bytes()
SHARED_WAVEFRONT_BYTES: int = shared_wavefront_bytes()
