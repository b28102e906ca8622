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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from perfmodel.hardware import GPU


@dataclass(frozen=True)
class Occupancy:
    limits: dict[str, int]  # blocks per SM (CU) allowed by each resource
    blocks_per_sm: int
    warps_per_block: int
    max_warps_per_sm: int

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


def nvidia(gpu: GPU, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int,
           shared_carveout_bytes: int | None = None) -> Occupancy:
    """Blocks per SM on an NVIDIA GPU; ``shared_carveout_bytes`` defaults to the largest carve-out."""
    _check_launch(threads_per_block, registers_per_thread=registers_per_thread, shared_bytes_per_block=shared_bytes_per_block)
    warp = int(gpu.require("warp_size"))
    max_warps = int(gpu.require("max_warps_per_sm"))
    warps_per_block = math.ceil(threads_per_block / warp)
    limits = {"warps": max_warps // warps_per_block, "blocks": int(gpu.require("max_blocks_per_sm"))}

    schedulers = int(gpu.value("schedulers_per_sm", 4))
    unit = gpu.require("register_alloc_unit_per_warp")
    if registers_per_thread > gpu.require("max_registers_per_thread"):
        limits["registers"] = 0
    elif registers_per_thread > 0:
        per_warp = _round_up(registers_per_thread * warp, unit)
        # Each sub-partition (scheduler) owns an equal slice of the register file.
        warps_per_scheduler = int((gpu.require("registers_per_sm") / schedulers) // per_warp)
        limits["registers"] = (warps_per_scheduler * schedulers) // warps_per_block

    carveout = shared_carveout_bytes if shared_carveout_bytes is not None else gpu.require("shared_per_sm_bytes")
    per_block = _round_up(shared_bytes_per_block + gpu.value("shared_reserved_per_block_bytes", 0), gpu.value("shared_alloc_unit_bytes", 128))
    if per_block > 0:
        limits["shared"] = int(carveout // per_block)
    blocks = max(0, min(limits.values()))
    return Occupancy(limits, blocks, warps_per_block, max_warps)


def amd_cdna(gpu: GPU, threads_per_block: int, vgprs_per_thread: int, lds_bytes_per_block: int,
             sgprs_per_wave: int = 0, agprs_per_thread: int = 0) -> Occupancy:
    """Workgroups per CU on CDNA2/CDNA3: wave slots, the unified VGPR+AGPR file, SGPRs, LDS."""
    _check_launch(threads_per_block, vgprs_per_thread=vgprs_per_thread, lds_bytes_per_block=lds_bytes_per_block,
                  sgprs_per_wave=sgprs_per_wave, agprs_per_thread=agprs_per_thread)
    wave = int(gpu.require("warp_size"))
    simds = int(gpu.require("schedulers_per_sm"))
    max_waves = int(gpu.require("max_warps_per_sm"))
    waves_per_block = math.ceil(threads_per_block / wave)
    # Waves of a workgroup are spread over the SIMDs; a CU holds max_waves in total.
    limits = {"warps": max_waves // waves_per_block}
    # Workgroups of more than one wave each hold one of the CU's workgroup barriers
    # (max_blocks_per_sm); single-wave workgroups need none and are limited by wave slots only
    # (LLVM AMDGPU backend, AMDGPUBaseInfo.cpp, getMaxWorkGroupsPerCU).
    limits["blocks"] = int(gpu.require("max_blocks_per_sm")) if waves_per_block > 1 else max_waves

    granule = gpu.require("register_alloc_unit_per_warp")
    if gpu.value("agprs_unified", 1):
        # CDNA2/CDNA3: one file; a wave's AGPRs start at its VGPR count aligned to the ACCUM_OFFSET
        # granule, and the sum is allocated in granules (LLVM AMDGPUBaseInfo.cpp, getNumVGPRBlocks
        # with the unified register file; AMDGPUUsage, compute_pgm_rsrc3 ACCUM_OFFSET).
        aligned = _round_up(vgprs_per_thread, gpu.value("agpr_offset_granule", 1)) if agprs_per_thread else vgprs_per_thread
        files = {"registers": _round_up(aligned + agprs_per_thread, granule)}
    else:
        # CDNA1 (gfx908): separate VGPR and AGPR files of the same size, each allocated on its own.
        files = {"registers": _round_up(vgprs_per_thread, granule), "agprs": _round_up(agprs_per_thread, granule)}
    for name, registers in files.items():
        if registers > gpu.require("max_vgprs_per_wave"):
            limits[name] = 0
        elif registers > 0:
            waves_per_simd = min(max_waves // simds, int(gpu.require("vgprs_per_simd") // registers))
            limits[name] = (waves_per_simd * simds) // waves_per_block
    if sgprs_per_wave > 0 and gpu.value("sgprs_per_simd"):
        sgprs = _round_up(sgprs_per_wave, gpu.value("sgpr_alloc_granule", 16))
        waves_per_simd = min(max_waves // simds, int(gpu.require("sgprs_per_simd") // sgprs))
        limits["sgprs"] = (waves_per_simd * simds) // waves_per_block
    if lds_bytes_per_block > 0:
        per_block = _round_up(lds_bytes_per_block, gpu.value("lds_alloc_granule_bytes") or gpu.value("shared_alloc_unit_bytes", 512))
        limits["shared"] = int(gpu.require("shared_per_sm_bytes") // per_block)
    blocks = max(0, min(limits.values()))
    return Occupancy(limits, blocks, waves_per_block, max_waves)


def for_gpu(gpu: GPU, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int, *,
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
