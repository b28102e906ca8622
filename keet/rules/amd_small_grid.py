"""Small grid per XCD on AMD: fewer workgroups than CUs, spread over the XCDs.

The command processor hands workgroups to the XCDs round-robin (MI300X: 8 XCDs of 38 CUs;
MI250X: one GCD per device), and a workgroup runs on one CU: with W workgroups on X XCDs of
C / X CUs, each XCD has about W / X workgroups for its C / X CUs and the rest of its CUs idle
for the whole kernel.
"""

from __future__ import annotations

import math

from keet.rules.amd_base import (
    DEVICE_FACT,
    Unassessed,
    amd_rule,
    cu_count,
    xcd_count,
)
from keet.rules.base import Evidence, Finding, KernelView, clamp, num

# Below this idle CU share the loss is within workgroup-scheduling noise (as the NVIDIA rule).
MIN_IDLE_SHARE = 0.1
# A kernel shorter than this is dominated by launch cost rather than by idle CUs: ROCm kernel
# launches take several microseconds and the hardware files have no measured AMD figure, so
# we use 10 us (our choice, conservative).
MIN_DURATION_NS = 10_000.0


@amd_rule(
    "amd-small-grid",
    "small_grid",
    "AMD: fewer workgroups than CUs, per XCD",
    needs=("launch.grid_size", "duration"),
    collect="rocprofv3 --kernel-trace -- ./app",
)
def apply(k: KernelView) -> Finding | Unassessed | None:
    grid, duration = k.metric("launch.grid_size"), k.metric("duration")
    cus, xcds = cu_count(k), xcd_count(k) or 1.0
    if not cus:
        return Unassessed([DEVICE_FACT])
    per_xcd_cus = cus / xcds
    per_xcd_wgs = math.ceil(grid / xcds)
    busy = min(per_xcd_wgs, per_xcd_cus) * xcds if grid >= xcds else grid
    idle = 1 - busy / cus
    if idle < MIN_IDLE_SHARE or duration <= MIN_DURATION_NS:
        return None
    evidence = [Evidence("launch.grid_size", grid, "block", cus, "< CUs"), k.evidence("duration", MIN_DURATION_NS, ">")]
    # the CU and XCD counts: the profile's (sysinfo/agent_info) or the hardware file's
    if k.metric("launch.sm_count"):
        evidence.append(k.evidence("launch.sm_count"))
    else:
        evidence.append(Evidence("hardware.sm_count", cus, "CU"))
    name = "num_xcd" if k.raw("num_xcd") else "hardware.xcd_count"
    evidence.append(Evidence(name, xcds, "XCD", per_xcd_cus, "CUs per XCD"))
    return Finding(
        category="small_grid",
        rule="amd-small-grid",
        # impact = idle CU share (workgroups per XCD against CUs per XCD)
        impact=clamp(idle),
        confidence=0.8,
        evidence=evidence,
        explanation=(
            f"The grid has only {num(grid)} workgroups for the GPU's {num(cus)} CUs on {num(xcds)} XCDs of {num(per_xcd_cus)} CUs: "
            f"workgroups go to the XCDs in turn and one runs on one CU, so CUs without a workgroup sit idle for the kernel's "
            f"whole {num(duration / 1000)} us."
        ),
        suggestions=[
            f"Launch at least {cus:.0f} workgroups (one per CU), better a multiple of it: several per CU hide latency.",
            "Split the work finer: smaller workgroups (256 instead of 1024 work-items gives four times the workgroups), or split a long loop or reduction dimension over workgroups (split-K, partial results combined afterwards).",
            f"Keep the workgroup count a multiple of the {xcds:.0f} XCDs so each XCD gets the same share, and let workgroups that share data land on the same XCD (its L2 is not shared with the others).",
        ],
        explains=("memory_latency",),
    )
