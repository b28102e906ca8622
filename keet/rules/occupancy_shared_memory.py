"""Shared-memory-limited occupancy: shared memory per block caps the resident warps of a latency-bound kernel.

Fires under the same conditions as the register rule (latency-bound, the limit uniquely
binding, see :mod:`keet.rules.occupancy_registers`), with shared memory as the limit: the
bytes a block claims (static + dynamic + the driver's reserve) divide the SM's shared memory
into too few blocks. ncu's shared-memory limit is judged at the largest carve-out the SM
offers, since the driver picks the carve-out that the other limits need.
"""

from __future__ import annotations

import math

from keet.rules.base import Finding, KernelView, num, rule
from keet.rules.occupancy_registers import (
    OCCUPANCY_COLLECT,
    OCCUPANCY_NEEDS,
    assess,
    confidence,
    latency_text,
    next_text,
    occupancy_text,
)


def bytes_text(value: float) -> str:
    """Bytes with their KiB size for readability in suggestions."""
    return f"{value:,.0f} B ({value / 1024:.3g} KiB)"


@rule(
    "occupancy-shared-memory",
    "occupancy_shared_memory",
    "Shared memory per block limits the resident warps of a latency-bound kernel",
    needs=OCCUPANCY_NEEDS,
    collect=OCCUPANCY_COLLECT,
)
def apply(k: KernelView) -> Finding | None:
    h = assess(k, "shared")
    if h is None:
        return None
    evidence = list(h.evidence)
    parts = []
    for name, label in (("launch.shared_dynamic", "dynamic"), ("launch.shared_static", "static")):
        if k.metric(name) is not None and k.metric(name) > 0:
            evidence.append(k.evidence(name))
            parts.append(f"{num(k.metric(name))} bytes of {label}")
    driver = k.metric("launch.shared_driver")
    if driver is not None:
        evidence.append(k.evidence("launch.shared_driver"))
        parts.append(f"{num(driver)} reserved by the driver")
    used = (k.metric("launch.shared_static") or 0.0) + (k.metric("launch.shared_dynamic") or 0.0)
    if parts and driver is not None and len(parts) > 1:
        claim = f"Each block claims {' plus '.join(parts[:-1])} shared memory plus {parts[-1]}"
    elif parts:
        claim = f"Each block claims {' plus '.join(parts)} shared memory"
    else:
        claim = "Shared memory per block"

    suggestions = []
    per_sm = k.attribute("max_shared_memory_per_multiprocessor")
    reserve = driver if driver is not None else (k.attribute("reserved_shared_memory_per_block") or 0.0)
    if per_sm is not None and used > 0:
        targets = [h.blocks + 1] + ([h.next_blocks] if h.next_blocks > h.blocks + 1 else [])
        steps = []
        for blocks in targets:
            allowed = math.floor(per_sm / blocks) - reserve
            if allowed > 0:
                steps.append(
                    f"{blocks:.0f} blocks ({blocks * h.warps_per_block:.0f} warps) per SM need at most {bytes_text(allowed)} "
                    f"per block, i.e. saving {bytes_text(used - allowed)}"
                )
        if steps:
            suggestions.append(
                f"Shrink the block's shared memory (now {bytes_text(used)} of the SM's {bytes_text(per_sm)}): " + "; ".join(steps) + "."
            )
        fits = math.floor(per_sm / (used + reserve))
        if fits > k.metric("occupancy.limit_shared"):
            suggestions.append(
                f"The SM could hold {fits} such blocks at its largest carve-out but the launch got "
                f"{k.metric('occupancy.limit_shared'):.0f}: request it with cudaFuncSetAttribute(kernel, "
                "cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared)."
            )
    else:
        suggestions.append("Shrink the block's shared memory until one more block fits in the SM's shared memory.")
    suggestions += [
        (
            "Use smaller tiles or fewer pipeline stages, store staged data in narrower types (half/bf16), and reuse one "
            "buffer for phases that do not overlap instead of separate arrays."
        ),
        (
            "Leave read-only tables in global memory and let L1/L2 cache them (const __restrict__ / __ldg) if they are too big "
            "to share the SM, or split the table across a thread-block cluster's distributed shared memory."
        ),
        (
            "Alternatively hide latency within the warps you have: several independent loads in flight per thread, "
            "prefetching the next data while working on the current."
        ),
    ]
    return Finding(
        category="occupancy_shared_memory",
        rule="occupancy-shared-memory",
        impact=h.impact,
        confidence=confidence(k),
        evidence=evidence,
        explanation=(f"{claim}, so shared memory allows only {occupancy_text(k, h)}, {next_text(h)}. {latency_text(h)}"),
        suggestions=suggestions,
        explains=("memory_latency",),
    )
