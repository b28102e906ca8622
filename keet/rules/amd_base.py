"""What the AMD (CDNA) rules share: which GPU a profile ran on, its ceilings, and how to collect more.

AMD rules have ids starting with ``amd-`` and run only on profiles whose device vendor is
``amd``; the NVIDIA rules run only on the others (``keet.diagnosis.applies``). They read the
canonical metrics of docs/metrics.md (the ``amd`` formulas of keet/data/canonical_metrics.toml)
through :class:`~keet.rules.base.KernelView`, like every rule.

A rule that has its metrics but not the device fact it must compare them with (the HBM peak of
a GPU the profile does not name) returns :class:`Unassessed`; the diagnosis lists it under *not
assessed*, with the command that would provide the fact, instead of guessing a ceiling.

Architecture constants (register files, wave slots, allocation granules) are no business of the
rules: they live in the ISA files (perfmodel/hardware/isa/gfx*.toml, each value with its source)
and the occupancy rules read them through perfmodel.occupancy (:func:`occupancy_isa`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from keet.rules.base import CATEGORIES, Finding, KernelView, Rule
from perfmodel.hardware import ISA, assumed_isa, isa
from perfmodel.occupancy import amd_isa

# The command line for ``./app``; rules name the counters, explain merges them into one line.
APP = "-- ./app"
# Device facts (CU and XCD counts, GPU model) come with a rocprof-compute workload folder
# (sysinfo.csv) or a rocprofv3 run (agent_info.csv beside its CSVs).
DEVICE_COLLECT = "rocprof-compute profile -n NAME -- ./app"
DEVICE_FACT = "the GPU model and CU count (sysinfo.csv or agent_info.csv)"


# The AMD rules, registered apart from the NVIDIA ones (keet.rules.base.RULES) so that a
# category keeps one NVIDIA rule there; keet.diagnosis runs both lists, each on its vendor.
AMD_RULES: list[Rule] = []


def amd_rule(id: str, category: str, description: str, needs: tuple[str, ...] = (), collect: str = "") -> Callable:
    """Register ``apply`` as an AMD rule (id ``amd-*``; ``collect`` is a rocprof command line).
    keet.diagnosis runs AMD rules on AMD profiles only (``applies``), so rules need no vendor check."""
    if category not in CATEGORIES or not id.startswith("amd-"):
        raise ValueError(f"bad AMD rule {id} / {category}")

    def register(apply: Callable[[KernelView], Finding | Unassessed | None]) -> Callable:
        AMD_RULES.append(Rule(id, category, description, apply, needs, collect))
        return apply

    return register


# Evidence that is not a metric of the profile: a parameter of the GPU's hardware file
# (``hardware.<param>``) or the theoretical waves per CU the occupancy rules derive from the
# profile's resources. Everything else a rule cites is the profile's own value.
HARDWARE_PREFIX = "hardware."
DERIVED_EVIDENCE = ("occupancy.theoretical_warps",)


def pmc(*counters: str) -> str:
    """The rocprofv3 command that collects ``counters`` (keet.explain merges several)."""
    return f"rocprofv3 --kernel-trace --pmc {' '.join(counters)} {APP}"


@dataclass
class Unassessed:
    """A rule that had its metrics but not the device fact to judge them against."""

    missing: list[str]
    collect: str = DEVICE_COLLECT


def occupancy_isa(k: KernelView) -> tuple[ISA, bool]:
    """The ISA file whose facts size the kernel's occupancy, and whether it is the profile's own
    arch (else the AMD ISA the hardware database marks as assumed when a profile names no arch
    whose file has them, and the rules say so at lower confidence)."""
    return amd_isa(k.device.arch)


def wave_size(k: KernelView) -> float:
    """Work-items of a wave: the profile's (amd.wave_size, from sysinfo or agent_info), else the
    warp_size of its arch's ISA file, else of the AMD ISA assumed when a profile names none."""
    if k.metric("amd.wave_size"):
        return k.metric("amd.wave_size")
    return (isa(k.device.arch) or assumed_isa("amd")).require("warp_size")


def hardware(k: KernelView):
    """The perfmodel hardware description of the profile's GPU, or None when it names none we have."""
    from perfmodel.hardware import gpu, gpu_id_for_device

    device = k.device
    # by name, else by arch and CU count (the files' [identify]) for profiles naming no product
    cus = device.sm_count or (int(k.metric("launch.sm_count")) if k.metric("launch.sm_count") else None)
    gpu_id = gpu_id_for_device(device.name, device.arch, cus)
    if gpu_id is None or gpu(gpu_id).vendor != "amd":
        return None
    return gpu(gpu_id)


@dataclass
class Ceiling:
    value: float
    source: str  # where the number came from, for the explanation


def hbm_peak(k: KernelView) -> Ceiling | None:
    """Peak HBM bandwidth (byte/s): the hardware file of the GPU, else sysinfo.csv's hbm_bw."""
    hw = hardware(k)
    if hw is not None and hw.value("dram_bandwidth_bytes_per_s"):
        return Ceiling(hw.require("dram_bandwidth_bytes_per_s"), f"the {hw.name} peak (perfmodel/hardware/{hw.id}.toml)")
    sysinfo = k.device.attributes.get("hbm_bw")
    try:
        gbps = float(sysinfo) if sysinfo is not None else None
    except (TypeError, ValueError):
        gbps = None
    if gbps and gbps > 0 and math.isfinite(gbps):
        return Ceiling(gbps * 1e9, "the peak sysinfo.csv gives (hbm_bw)")
    return None


def hbm_unknown(k: KernelView) -> str:
    """What is missing when no HBM peak is known: the GPU itself, or only its peak."""
    device = k.device
    if device.arch or device.sm_count:
        return f"the peak HBM bandwidth of {device.name} (no hardware file; no hbm_bw in sysinfo.csv)"
    return DEVICE_FACT


def cu_count(k: KernelView) -> float | None:
    """CUs of the GPU: the profile's launch.sm_count (sysinfo/agent_info), else the hardware file."""
    if k.metric("launch.sm_count"):
        return k.metric("launch.sm_count")
    hw = hardware(k)
    return hw.value("sm_count") if hw is not None else None


def xcd_count(k: KernelView) -> float | None:
    """XCDs (GCD on MI200): the profile's num_xcd, else the hardware file."""
    if k.raw("num_xcd"):
        return k.raw("num_xcd")
    hw = hardware(k)
    return hw.value("xcd_count") if hw is not None else None
