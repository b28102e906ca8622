"""Occupancy calculators: resident blocks and warps per SM (NVIDIA) or per CU (AMD CDNA).

Both return an :class:`Occupancy` with the block limit of each resource, the binding one,
and the theoretical occupancy, from the launch (threads per block, registers, shared/LDS
memory) and the GPU's hardware file. The NVIDIA calculator follows the CUDA Occupancy
Calculator's rules (register file split between the SM's sub-partitions, registers
allocated per warp in units of `register_alloc_unit_per_warp`, shared memory allocated in
`shared_alloc_unit_bytes` plus `shared_reserved_per_block_bytes` per block) and is tested
against Nsight Compute's launch__occupancy_limit_* values of our zoo reports. The AMD
calculator follows the LLVM AMDGPU backend's rules (AMDGPUBaseInfo.cpp: waves per EU, the
VGPR allocation granule, getMaxWorkGroupsPerCU's 16 barriers, which single-wave workgroups do
not use), with every constant from the hardware files (perfmodel/hardware/isa/gfx*.toml): the
unified VGPR+AGPR file of CDNA2/CDNA3 (AGPRs after the VGPRs aligned to the ACCUM_OFFSET granule,
the sum in allocation granules) or CDNA1's two files, the SGPR and LDS allocation granules.
:func:`for_gpu` picks the calculator from the hardware file's vendor.

Every constant comes from the hardware files; the calculators hold none (a file that lacks one
raises KeetError naming it, rather than a guess standing in for it). The AMD calculator also
takes an ISA file alone (:func:`amd_isa`): a rocprof profile often names its gfx arch but no
product the database has a GPU file of, and occupancy depends on the arch only.

What-if helpers for the rules: :meth:`Occupancy.lifted` (the occupancy if some resources did not
limit) and the budgets that fit one more wave or workgroup (:func:`amd_vgpr_budget`,
:func:`amd_sgpr_budget`, :func:`amd_lds_budget`: "at most N VGPRs for one more wave per SIMD").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from numbers import Real

from perfmodel.hardware import GPU, ISA, assumed_isa, isa, isas

# What the calculators read: a GPU file (whose value/require fall back to its ISA file), or an
# ISA file alone where a profile names an arch but no GPU of the database.
Hardware = GPU | ISA

# The facts amd_cdna and the AMD budgets read: an AMD ISA file holding all of them sizes the
# occupancy of its arch on its own (amd_isa); one without them (gfx950 today) does not.
AMD_OCCUPANCY_FACTS = (
    "warp_size", "schedulers_per_sm", "max_warps_per_sm", "max_blocks_per_sm", "vgprs_per_simd", "max_vgprs_per_wave",
    "register_alloc_unit_per_warp", "agprs_unified", "agpr_offset_granule", "sgprs_per_simd", "sgpr_alloc_granule",
    "shared_per_sm_bytes", "lds_alloc_granule_bytes",
)


@dataclass(frozen=True)
class Occupancy:
    limits: dict[str, int]  # blocks per SM (CU) allowed by each resource
    blocks_per_sm: int
    warps_per_block: int
    max_warps_per_sm: int
    # AMD: waves per SIMD each register file allows ("registers", "agprs", "sgprs"), the
    # starting point of the budgets for one more wave (absent: the kernel allocates none)
    waves_per_simd: dict[str, int] = field(default_factory=dict)

    @property
    def limiter(self) -> str:
        """The binding resource (ties: the first of warps, registers, shared, blocks)."""
        order = ("warps", "registers", "shared", "blocks", "sgprs", "agprs")
        return min((name for name in order if name in self.limits), key=lambda name: (self.limits[name], order.index(name)))

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def theoretical(self) -> float:
        """Resident warps over warp slots, 0..1."""
        return self.warps_per_sm / self.max_warps_per_sm

    def lifted(self, *resources: str) -> Occupancy:
        """What-if: the occupancy if ``resources`` (keys of ``limits``) did not limit, every other
        limit of the launch kept. The warp-slot limit cannot be lifted: it is the SM itself."""
        if "warps" in resources:
            raise ValueError("the warp slots of an SM/CU cannot be lifted")
        limits = {name: value for name, value in self.limits.items() if name not in resources}
        return dataclasses.replace(self, limits=limits, blocks_per_sm=max(0, min(limits.values())))


def _round_up(value: float, unit: float) -> float:
    return math.ceil(value / unit) * unit


def _check_launch(threads_per_block: float, **resources: float) -> None:
    """A ValueError for a launch no GPU runs: no thread in a block, or a negative, infinite or
    NaN resource (which would otherwise surface as a ZeroDivisionError or an OverflowError)."""
    if isinstance(threads_per_block, bool) or not (isinstance(threads_per_block, Real) and math.isfinite(threads_per_block)
                                                   and threads_per_block >= 1):
        raise ValueError(f"a block of {threads_per_block} threads launches nothing")
    for name, value in resources.items():
        if isinstance(value, bool) or not (isinstance(value, Real) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name.replace('_', ' ')} is {value}, not a finite non-negative number")


def nvidia(gpu: Hardware, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int,
           shared_carveout_bytes: int | None = None) -> Occupancy:
    """Blocks per SM on an NVIDIA GPU; ``shared_carveout_bytes`` defaults to the largest carve-out."""
    _check_launch(threads_per_block, registers_per_thread=registers_per_thread, shared_bytes_per_block=shared_bytes_per_block)
    warp = int(gpu.require("warp_size"))
    max_warps = int(gpu.require("max_warps_per_sm"))
    warps_per_block = math.ceil(threads_per_block / warp)
    limits = {"warps": max_warps // warps_per_block, "blocks": int(gpu.require("max_blocks_per_sm"))}

    schedulers = int(gpu.require("schedulers_per_sm"))
    unit = gpu.require("register_alloc_unit_per_warp")
    if registers_per_thread > gpu.require("max_registers_per_thread"):
        limits["registers"] = 0
    elif registers_per_thread > 0:
        per_warp = _round_up(registers_per_thread * warp, unit)
        # Each sub-partition (scheduler) owns an equal slice of the register file.
        warps_per_scheduler = int((gpu.require("registers_per_sm") / schedulers) // per_warp)
        limits["registers"] = (warps_per_scheduler * schedulers) // warps_per_block

    carveout = shared_carveout_bytes if shared_carveout_bytes is not None else gpu.require("shared_per_sm_bytes")
    per_block = _round_up(shared_bytes_per_block + gpu.require("shared_reserved_per_block_bytes"), gpu.require("shared_alloc_unit_bytes"))
    if per_block > 0:
        limits["shared"] = int(carveout // per_block)
    blocks = max(0, min(limits.values()))
    return Occupancy(limits, blocks, warps_per_block, max_warps)


def amd_wave_slots_per_simd(hw: Hardware) -> int:
    """Wave slots of one SIMD: the CU's slots over its SIMDs (LLVM getMaxWavesPerEU); the waves
    per SIMD a register file allows when the kernel allocates none of it."""
    return int(hw.require("max_warps_per_sm") // hw.require("schedulers_per_sm"))


def _amd_register_allocations(hw: Hardware, vgprs_per_thread: float, agprs_per_thread: float) -> dict[str, float]:
    """VGPRs one wave allocates per lane in each register file ("registers", and "agprs" where
    the AGPRs have a file of their own)."""
    granule = hw.require("register_alloc_unit_per_warp")
    if hw.require("agprs_unified"):
        # CDNA2/CDNA3: one file; a wave's AGPRs start at its VGPR count aligned to the ACCUM_OFFSET
        # granule, and the sum is allocated in granules (LLVM AMDGPUBaseInfo.cpp, getNumVGPRBlocks
        # with the unified register file; AMDGPUUsage, compute_pgm_rsrc3 ACCUM_OFFSET).
        aligned = _round_up(vgprs_per_thread, hw.require("agpr_offset_granule")) if agprs_per_thread else vgprs_per_thread
        return {"registers": _round_up(aligned + agprs_per_thread, granule)}
    # CDNA1 (gfx908): separate VGPR and AGPR files of the same size, each allocated on its own.
    return {"registers": _round_up(vgprs_per_thread, granule), "agprs": _round_up(agprs_per_thread, granule)}


def amd_cdna(gpu: Hardware, threads_per_block: int, vgprs_per_thread: int, lds_bytes_per_block: int,
             sgprs_per_wave: int = 0, agprs_per_thread: int = 0) -> Occupancy:
    """Workgroups per CU on CDNA: wave slots, the VGPR+AGPR file(s), SGPRs, LDS. ``gpu`` is a GPU
    file or, for a device the database does not describe, its arch's ISA file (:func:`amd_isa`)."""
    _check_launch(threads_per_block, vgprs_per_thread=vgprs_per_thread, lds_bytes_per_block=lds_bytes_per_block,
                  sgprs_per_wave=sgprs_per_wave, agprs_per_thread=agprs_per_thread)
    wave = int(gpu.require("warp_size"))
    simds = int(gpu.require("schedulers_per_sm"))
    max_waves = int(gpu.require("max_warps_per_sm"))
    slots_per_simd = amd_wave_slots_per_simd(gpu)
    waves_per_block = math.ceil(threads_per_block / wave)
    # Waves of a workgroup are spread over the SIMDs; a CU holds max_waves in total.
    limits = {"warps": max_waves // waves_per_block}
    # Workgroups of more than one wave each hold one of the CU's workgroup barriers
    # (max_blocks_per_sm); single-wave workgroups need none and are limited by wave slots only
    # (LLVM AMDGPU backend, AMDGPUBaseInfo.cpp, getMaxWorkGroupsPerCU).
    limits["blocks"] = int(gpu.require("max_blocks_per_sm")) if waves_per_block > 1 else max_waves

    per_simd: dict[str, int] = {}
    for name, registers in _amd_register_allocations(gpu, vgprs_per_thread, agprs_per_thread).items():
        if registers > gpu.require("max_vgprs_per_wave"):
            per_simd[name] = 0
        elif registers > 0:
            per_simd[name] = min(slots_per_simd, int(gpu.require("vgprs_per_simd") // registers))
    if sgprs_per_wave > 0:
        sgprs = _round_up(sgprs_per_wave, gpu.require("sgpr_alloc_granule"))
        per_simd["sgprs"] = min(slots_per_simd, int(gpu.require("sgprs_per_simd") // sgprs))
    for name, waves in per_simd.items():
        limits[name] = (waves * simds) // waves_per_block
    if lds_bytes_per_block > 0:
        per_block = _round_up(lds_bytes_per_block, gpu.require("lds_alloc_granule_bytes"))
        limits["shared"] = int(gpu.require("shared_per_sm_bytes") // per_block)
    blocks = max(0, min(limits.values()))
    return Occupancy(limits, blocks, waves_per_block, max_waves, per_simd)


def amd_vgpr_budget(hw: Hardware, waves_per_simd: int) -> int:
    """What-if: the most VGPRs per lane one wave may allocate (VGPRs + AGPRs on a unified file;
    either file on its own on CDNA1) for ``waves_per_simd`` waves to fit on one SIMD: the file
    shared out, down to the allocation granule; 0 when a SIMD has fewer wave slots than that."""
    if waves_per_simd < 1:
        raise ValueError(f"{waves_per_simd} waves per SIMD")
    if waves_per_simd > amd_wave_slots_per_simd(hw):
        return 0
    granule = hw.require("register_alloc_unit_per_warp")
    share = min(hw.require("vgprs_per_simd") // waves_per_simd, hw.require("max_vgprs_per_wave"))
    return int(share // granule * granule)


def amd_sgpr_budget(hw: Hardware, waves_per_simd: int) -> int:
    """What-if: the most SGPRs one wave may allocate for ``waves_per_simd`` waves to fit on one
    SIMD (down to the SGPR granule); 0 when a SIMD has fewer wave slots than that."""
    if waves_per_simd < 1:
        raise ValueError(f"{waves_per_simd} waves per SIMD")
    if waves_per_simd > amd_wave_slots_per_simd(hw):
        return 0
    granule = hw.require("sgpr_alloc_granule")
    return int(hw.require("sgprs_per_simd") // waves_per_simd // granule * granule)


def amd_lds_budget(hw: Hardware, workgroups_per_cu: int) -> int:
    """What-if: the most LDS bytes one workgroup may allocate for ``workgroups_per_cu`` of them to
    fit in one CU's LDS (down to the allocation granule)."""
    if workgroups_per_cu < 1:
        raise ValueError(f"{workgroups_per_cu} workgroups per CU")
    granule = hw.require("lds_alloc_granule_bytes")
    return int(hw.require("shared_per_sm_bytes") // workgroups_per_cu // granule * granule)


def amd_occupancy_isas() -> list[str]:
    """The AMD ISA ids whose files hold every fact of the CDNA calculator (AMD_OCCUPANCY_FACTS)."""
    return [facts.id for facts in isas() if facts.vendor == "amd" and all(name in facts.params for name in AMD_OCCUPANCY_FACTS)]


def amd_isa(arch: str | None) -> tuple[ISA, bool]:
    """The ISA file that sizes a CDNA kernel's occupancy for a profile's arch ("gfx90a",
    "gfx942:sramecc+:xnack-", an alias): its own, with True, when that file holds every fact of
    the calculator; else, with False, the AMD ISA file marked assumed_when_unnamed (the rules say
    the limits were assumed and lower their confidence)."""
    named = isa(arch) if arch else None
    if named is not None and named.id in amd_occupancy_isas():
        return named, True
    return assumed_isa("amd"), False


def for_gpu(gpu: Hardware, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int, *,
            shared_carveout_bytes: int | None = None, sgprs_per_wave: int = 0, agprs_per_thread: int = 0) -> Occupancy:
    """Occupancy on any GPU of the database: the NVIDIA calculator or the AMD CDNA one by vendor.

    On AMD, ``registers_per_thread`` is the kernel's architectural VGPR count per lane (a CUDA
    register count carried over from an NVIDIA profile is used as such: both are 32-bit
    registers per thread) and ``shared_bytes_per_block`` its LDS; the NVIDIA-only carve-out is
    ignored there, the AMD-only SGPR/AGPR counts are ignored on NVIDIA.
    """
    if gpu.vendor == "amd":
        return amd_cdna(gpu, threads_per_block, registers_per_thread, shared_bytes_per_block,
                        sgprs_per_wave=sgprs_per_wave, agprs_per_thread=agprs_per_thread)
    if gpu.vendor == "nvidia":
        return nvidia(gpu, threads_per_block, registers_per_thread, shared_bytes_per_block,
                      shared_carveout_bytes=shared_carveout_bytes)
    raise ValueError(f"{gpu.id}: no occupancy calculator for vendor {gpu.vendor!r}")
