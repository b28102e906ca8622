"""Atomics are executed by the L2 slice that owns the address. Spread over the slices they go at
the measured distinct-address rate; when one slice carries most of them (its sector count,
l2.sectors_busiest_slice, is more than half of all atomic sectors, which a few addresses alone can
cause on an L2 of tens of slices) they are serialised on a hot address and go at the measured
same-address rate."""

from __future__ import annotations

from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("atomic_ops_per_clk", "atomic_same_address_ops_per_clk")


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts = k.work.counts
    atomics = counts.get("l2_sectors_atomic", 0.0)
    if not atomics:
        return out
    if rate := k.gpu.value("atomic_ops_per_clk"):
        out.memory["atomics"] = atomics / (rate * k.clock)
    else:
        out.missing.append("atomics (atomic_ops_per_clk)")
    busiest = counts.get("l2_sectors_busiest_slice", 0.0)
    same_address = k.gpu.value("atomic_same_address_ops_per_clk")
    if same_address and busiest > atomics / 2:
        out.memory["atomics_hot_address"] = min(atomics, busiest) / (same_address * k.clock)
    return out
