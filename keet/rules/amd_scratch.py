"""Scratch (private segment) on AMD: the compiler keeps part of a work-item's state in memory.

rocprof records the scratch bytes each work-item was given (Scratch_Per_Workitem /
Scratch_Size, canonical ``amd.scratch_per_work_item``). Scratch holds register spills and
private arrays the compiler could not keep in VGPRs (dynamically indexed local arrays); both
turn register accesses into memory accesses through the vector L1.
"""

from __future__ import annotations

from keet.rules.amd_base import amd_rule
from keet.rules.base import Finding, KernelView, clamp, num

# Any scratch is reported: AMD's tuning guides treat a non-zero ScratchSize as the first thing
# to remove (ROCm "MI300X workload optimization": check -Rpass-analysis=kernel-resource-usage
# for "ScratchSize [bytes/lane]" and spills).
MIN_BYTES = 1
# Without scratch traffic counters the cost is estimated from the share of the work-item's
# state that lives in scratch (4-byte dwords against its VGPRs), halved because spills are
# usually L1/L2 hits: impact = 0.5 x scratch dwords / (scratch dwords + VGPRs).
HIT_DISCOUNT = 0.5


@amd_rule(
    "amd-scratch",
    "register_spills",
    "AMD: work-items use scratch (private memory): register spills or private arrays",
    needs=("amd.scratch_per_work_item", "launch.registers_per_thread"),
    collect="rocprofv3 --kernel-trace -- ./app",
)
def apply(k: KernelView) -> Finding | None:
    scratch, vgprs = k.metric("amd.scratch_per_work_item"), k.metric("launch.registers_per_thread")
    if scratch < MIN_BYTES:
        return None
    dwords = scratch / 4
    share = dwords / (dwords + max(vgprs, 1.0))
    return Finding(
        category="register_spills",
        rule="amd-scratch",
        impact=clamp(HIT_DISCOUNT * share),
        confidence=0.5,
        evidence=[k.evidence("amd.scratch_per_work_item", float(MIN_BYTES), ">="), k.evidence("launch.registers_per_thread")],
        explanation=(
            f"Each work-item has {num(scratch)} bytes of scratch beside its {num(vgprs)} VGPRs: register spills or a private "
            "array the compiler could not keep in registers, so those values travel through the vector L1 and L2 instead of "
            "the register file. The profile has no scratch traffic counters, so the cost is estimated from the share of "
            "state in scratch."
        ),
        suggestions=[
            "Find the cause with -Rpass-analysis=kernel-resource-usage (ScratchSize, VGPR/AGPR counts, 'spill' remarks) or hipcc --save-temps (scratch_store/scratch_load or buffer_store ... offen in the ISA).",
            "Private arrays indexed by a runtime value always go to scratch: index them with compile-time constants (fully unrolled loops) or move them to LDS.",
            "If it is spills: a tight __launch_bounds__ or amdgpu_waves_per_eu forces them; relax it, or reduce live values (less unrolling, recompute cheap values, 16-bit types).",
        ],
        explains=("dram_bandwidth", "l2_bandwidth", "memory_latency"),
    )
