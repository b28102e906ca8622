"""Retargeting: the work a profile counted on one GPU, re-expressed for another.

Nsight Compute counts work on the GPU it ran on. Most of it does not depend on that GPU
(instructions, FLOPs, the bytes and sectors the kernel requested from global, local and shared
memory); some of it does:

- warp-level counts (instructions per pipe, memory requests, barriers) are counted per 32-thread
  warp; on a 64-lane wavefront GPU the same threads issue half as many instructions when blocks
  fill whole wavefronts. They are converted by the ratio of wavefronts to warps per block.
- DRAM traffic depends on how much of the kernel's working set the last-level cache holds. It is
  re-estimated with a capacity model (:func:`dram_read_bytes`) when the target's last-level
  capacity (L2, plus the Infinity Cache (MALL) on CDNA 3) differs from the source's.
- occupancy, waves and busy SMs depend on the target's limits and SM count; the model recomputes
  them from the launch configuration (:func:`perfmodel.occupancy.for_gpu`), so the features keep
  the launch as it was and the notes say what changes.

docs/model.md, section "Retargeting", states the rules and their assumptions.
"""

from __future__ import annotations

import math
from dataclasses import replace

from keet.errors import KeetError
from perfmodel import occupancy
from perfmodel.features import KernelFeatures
from perfmodel.hardware import GPU, SECTOR_BYTES, Param, gpu, gpu_id_for_device_name

# Warp-level counts: one per warp (wavefront) instruction, whatever its active lanes.
WARP_LEVEL_COUNTS = ("instructions", "global_load_requests", "global_load_waits", "global_load_async_waits", "global_store_requests", "global_atomic_instructions")


def source_gpu(features: KernelFeatures) -> GPU | None:
    """The hardware file of the GPU the features were counted on, from the profile's device name.

    A profile of a GPU the database does not describe (an AMD profile that names no product:
    a pmc_perf.csv without its sysinfo.csv, an MI100 or MI350) but that says how its warp-level
    counts were counted (``source_warp_size``) gets a stand-in with what the profile knows: the
    wave size and, where given, the L2 size. Its counts are then still converted for the target's
    warp size; what needs the source's hardware file (the capacity model without an L2 size,
    the occupancy comparison) is skipped and the notes say so."""
    gpu_id = gpu_id_for_device_name(features.source_gpu)
    if gpu_id:
        return gpu(gpu_id)
    if not features.source_warp_size:
        return None
    origin = "the profile (device not in the hardware database)"
    params = {"warp_size": Param("warp_size", float(features.source_warp_size), "thread", "derived", origin)}
    if features.l2_bytes_of_source_gpu:
        params["l2_bytes"] = Param("l2_bytes", float(features.l2_bytes_of_source_gpu), "byte", "derived", origin)
    label = features.source_arch or "unknown arch"
    return GPU(id=f"{features.source_gpu or 'unnamed GPU'} ({label})", name=features.source_gpu or "unnamed GPU",
               vendor="amd" if features.source_warp_size == 64 or (features.source_arch or "").startswith("gfx") else "",
               arch=features.source_arch or "", compute_capability=None, params=params)


def last_level_bytes(hardware: GPU) -> float | None:
    """Capacity of the last cache level before DRAM: the L2, plus the MALL (Infinity Cache) where
    there is one. None when the file has no L2 size."""
    l2 = hardware.value("l2_bytes")
    if l2 is None:
        return None
    return l2 + (hardware.value("mall_bytes") or 0.0)


def warp_conversion(threads_per_block: int, source_warp: int, target_warp: int) -> float:
    """Target wavefronts per source warp for one block: ceil(T / w_target) / ceil(T / w_source).

    0.5 for full blocks going from 32 to 64 lanes; 1.0 for a 32-thread block (it becomes one
    half-empty wavefront). Assumes the warps paired into one wavefront execute the same
    instruction stream (true unless they diverge from each other).
    """
    if threads_per_block <= 0 or source_warp == target_warp:
        return 1.0
    return math.ceil(threads_per_block / target_warp) / math.ceil(threads_per_block / source_warp)


def reuse_capacity(dram_read: float, capacity: float) -> float:
    """The cache capacity the reuse captured on the source needed: the working set when it fit
    (DRAM reads within the capacity are all first touches, so the working set is the DRAM read
    bytes), else the whole cache (the data streamed through it; the reuse it caught was shorter
    than its capacity)."""
    return min(dram_read, capacity)


def dram_read_bytes(requested: float, dram_read: float, source_capacity: float, target_capacity: float) -> float:
    """DRAM read bytes on a last-level cache of ``target_capacity`` for a kernel that requested
    ``requested`` L2 read bytes and read ``dram_read`` bytes from DRAM through ``source_capacity``.

    The source's cache turned ``requested - dram_read`` bytes into hits. A target cache holding
    at least the capacity that reuse needed (:func:`reuse_capacity`) keeps all of them; a smaller
    one keeps the fraction ``target_capacity / needed`` (it holds that fraction of the reused
    data; reuse spread evenly over it, no reuse-distance information), so the traffic grows
    linearly toward ``requested`` as the capacity goes to 0. For a working set U that fit on the
    source this is U + (requested - U)(1 - C/U), the random-replacement miss count of a working
    set U on a cache of C bytes. A larger target cache never lowers DRAM reads below the
    source's: the counts carry no evidence of reuse longer than the source's cache.
    """
    hits = requested - dram_read
    if hits <= 0:
        return dram_read
    needed = reuse_capacity(dram_read, source_capacity)
    return requested - hits * min(1.0, target_capacity / needed)


def _mb(value: float) -> str:
    return f"{value / 1e6:,.1f} MB"


def retarget(features: KernelFeatures, source: GPU, target: GPU) -> tuple[KernelFeatures, list[str]]:
    """Features counted on ``source`` re-expressed for ``target``, with notes saying what was kept,
    converted and re-estimated, and how. The result names ``target`` as its source GPU, so
    retargeting it again to the same GPU changes nothing."""
    if source.id == target.id:
        return features, [f"profiled on {source.id}: work counts used as measured"]

    notes: list[str] = []
    counts = dict(features.counts)
    pipes = dict(features.warp_instructions_by_pipe)
    barriers = features.barriers

    # 1. Warp size: warp-level counts become wavefront-level counts.
    source_warp, target_warp = int(source.require("warp_size")), int(target.require("warp_size"))
    factor = warp_conversion(features.threads_per_block, source_warp, target_warp)
    if factor != 1.0:
        for name in WARP_LEVEL_COUNTS:
            if name in counts:
                counts[name] *= factor
        pipes = {pipe: count * factor for pipe, count in pipes.items()}
        if barriers is not None:
            barriers *= factor
        if source_warp > target_warp:
            notes.append(
                f"{source_warp}-lane wavefront instructions converted to {target_warp}-thread warps: x{factor:g} "
                f"(ceil({features.threads_per_block}/{target_warp}) warps per ceil({features.threads_per_block}/{source_warp}) "
                "wavefronts of a block; each warp runs the wavefront's instruction stream). FLOPs, MFMA work, "
                "requested bytes/sectors and LDS passes are kept")
        else:
            notes.append(
                f"{source_warp}-thread warp instructions converted to {target_warp}-lane wavefronts: x{factor:g} "
                f"(ceil({features.threads_per_block}/{target_warp}) wavefronts per ceil({features.threads_per_block}/{source_warp}) "
                "warps of a block; assumes paired warps run the same instruction stream). FLOPs, MMA shapes, "
                "requested bytes/sectors and shared-memory wavefront bytes are kept")
    elif source.vendor == "amd" and target.vendor == "amd":
        notes.append(f"{source_warp}-lane wavefront counts kept: {target.id} also runs {target_warp}-lane wavefronts")

    # 2. DRAM reads: capacity model between the source's and the target's last-level cache.
    source_capacity = float(features.l2_bytes_of_source_gpu) if features.l2_bytes_of_source_gpu else source.value("l2_bytes")
    if source_capacity is not None:
        source_capacity += source.value("mall_bytes") or 0.0
    target_capacity = last_level_bytes(target)
    dram_read = counts.get("dram_bytes_read")
    requested = counts.get("l2_sectors_read", 0.0) * SECTOR_BYTES or counts.get("l1_to_l2_read_bytes", 0.0)
    if dram_read is None or not requested:
        notes.append("no DRAM/L2 read counts: DRAM traffic not re-estimated")
    elif source_capacity is None or target_capacity is None:
        missing = source.id if source_capacity is None else target.id
        notes.append(f"no L2 size for {missing}: DRAM traffic kept as measured on {source.id}")
    elif dram_read >= requested:
        notes.append(f"DRAM reads ({_mb(dram_read)}) >= L2 read requests ({_mb(requested)}): no reuse for a cache to "
                     "capture (streaming or DRAM over-fetch); DRAM reads kept")
    else:
        needed = reuse_capacity(dram_read, source_capacity)
        new_read = dram_read_bytes(requested, dram_read, source_capacity, target_capacity)
        counts["dram_bytes_read"] = new_read
        level = "L2 + MALL" if target.value("mall_bytes") else "L2"
        if dram_read <= source_capacity:
            basis = f"working set {_mb(dram_read)} (all DRAM reads are first touches) held by the source's {_mb(source_capacity)}"
        else:
            basis = f"DRAM reads {_mb(dram_read)} exceed the source's {_mb(source_capacity)}: its hits came from reuse within that capacity"
        kept = min(1.0, target_capacity / needed)
        notes.append(
            f"DRAM reads re-estimated for the target's {level} of {_mb(target_capacity)}: {basis}; the target keeps "
            f"{kept:.0%} of the {_mb(requested - dram_read)} of L2 read hits, DRAM reads {_mb(dram_read)} -> {_mb(new_read)}. "
            "DRAM writes kept (write-backs of the written footprint)")
        xcds = target.value("xcd_count") or 1
        if target.value("mall_bytes") and xcds > 1:
            per_xcd = target.require("l2_bytes") / xcds
            beyond_l2 = dram_read_bytes(requested, dram_read, source_capacity, per_xcd)
            counts["mall_bytes_read"] = max(beyond_l2 - new_read, 0.0)
            notes.append(
                f"{target.id}'s L2 is private to each of its {xcds:g} XCDs ({_mb(per_xcd)} each): up to "
                f"{_mb(counts['mall_bytes_read'])} of reads miss it and hit the MALL (counts['mall_bytes_read']; "
                "upper bound, every XCD assumed to touch the whole working set)")

    # 3. Occupancy, waves and busy SMs: recomputed by the model from the launch; say what changes.
    registers, smem = features.registers_per_thread or 0, features.shared_bytes_per_block or 0
    try:
        before = occupancy.for_gpu(source, features.threads_per_block, registers, smem) if "sm_count" in source.params else None
        after = occupancy.for_gpu(target, features.threads_per_block, registers, smem)
    except (KeetError, ValueError) as exc:  # a hardware file without occupancy limits
        notes.append(f"occupancy not compared ({exc})")
    else:
        unit = "CU" if target.vendor == "amd" else "SM"
        on_source = f"{before.theoretical:.0%} on {source.id}" if before else f"not known on {source.id}, which has no hardware file"
        if after.blocks_per_sm == 0:
            notes.append(f"the launch cannot run on {target.id}: a block exceeds a per-{unit} limit ({after.limits})")
        else:
            waves = features.grid_blocks / (after.blocks_per_sm * target.require("sm_count"))
            notes.append(
                f"occupancy recomputed for {target.id}: {after.blocks_per_sm} blocks per {unit} "
                f"({after.theoretical:.0%} theoretical, limited by {after.limiter}; {on_source}), "
                f"{waves:.2f} waves over {target.require('sm_count'):g} {unit}s")
        if target.vendor == "amd" and source.vendor != "amd":
            notes.append("CUDA registers per thread taken as VGPRs per lane; L1 hit rates, local-memory (spill) "
                         "traffic and shared-memory bank-conflict replays kept as on the source")
    if source.vendor == "amd" and target.vendor != "amd":
        notes.append("VGPRs per lane (architected + accumulation) taken as CUDA registers per thread and LDS per "
                     "workgroup as shared memory per block; scalar (SALU/SMEM) instructions kept as uniform-datapath "
                     "instructions; L1 hit behaviour and LDS bank-conflict passes kept as on the source")

    retargeted = replace(
        features, counts=counts, warp_instructions_by_pipe=pipes, barriers=barriers,
        source_gpu=target.name, l2_bytes_of_source_gpu=int(target.value("l2_bytes")) if target.value("l2_bytes") else None,
        source_warp_size=None, source_arch=None)
    return retargeted, notes
