"""Per-kernel summary: what ran, how it was launched, and its headline measurements."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from keet.profile import Kernel, Profile

# Canonical metrics shown in the summary, with the label a person reads.
HEADLINE = [
    ("sm_clock", "SM clock"),
    ("sol.sm_pct", "Compute (SM) throughput"),
    ("sol.memory_pct", "Memory throughput"),
    ("sol.dram_pct", "DRAM throughput"),
    ("sol.l2_pct", "L2 throughput"),
    ("sol.l1_pct", "L1/shared throughput"),
    ("occupancy.theoretical_pct", "Theoretical occupancy"),
    ("occupancy.achieved_pct", "Achieved occupancy"),
    ("launch.waves_per_sm", "Waves per SM"),
]


def kernels_by_duration(profile: Profile, kernels: list[Kernel] | None = None) -> list[Kernel]:
    """Kernels longest first (kernels without a duration last, in profile order)."""
    chosen = profile.kernels if kernels is None else kernels
    return sorted(chosen, key=lambda k: (k.duration_ns is None, -(k.duration_ns or 0.0), k.id))


def device_dict(profile: Profile) -> dict[str, Any]:
    device = asdict(profile.device)
    device.pop("attributes")
    return device


def kernel_summary(profile: Profile, kernel: Kernel) -> dict[str, Any]:
    """Identity, launch, resources, duration share and headline metrics of one kernel."""
    total = profile.total_duration_ns()
    share = (kernel.duration_ns * kernel.invocations / total) if (kernel.duration_ns and total) else None
    headline = {}
    for metric, label in HEADLINE:
        value = profile.value(kernel, metric)
        if value is not None:
            headline[metric] = {"label": label, "value": value}
    return {
        "id": kernel.id,
        "name": kernel.name,
        "function_name": kernel.function_name,
        "duration_ns": kernel.duration_ns,
        "invocations": kernel.invocations,
        "share": share,
        "grid": list(kernel.grid) if kernel.grid else None,
        "block": list(kernel.block) if kernel.block else None,
        "registers_per_thread": kernel.registers_per_thread,
        "shared_bytes_per_block": kernel.shared_bytes_per_block,
        "metrics": headline,
    }
