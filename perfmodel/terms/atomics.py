"""Atomics are executed by the L2 slice that owns the address, at measured rates
(microbench/cuda/atomic_types.cu, every thread on its own address): per operation by kind (float
add RED, integer RED, double RED, and ATOM, whose old value returns to the SM), and per 32-byte
sector (scattered atomics, one per sector, are bound by the sectors, not the adds):
t = max(sum over kinds of operations / rate, atomic sectors / atomic_sectors_per_clk).
Without the per-kind operation counts (no opcode tables), the sectors alone. When one slice
carries most of them (its sector count, l2.sectors_busiest_slice, is more than half of all atomic
sectors, which a few addresses alone can cause on an L2 of tens of slices) they are serialised on
a hot address and go at the measured same-address rate."""

from __future__ import annotations

from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("atomic_ops_per_clk", "atomic_int_ops_per_clk", "atomic_f64_ops_per_clk", "atomic_return_ops_per_clk",
              "atomic_sectors_per_clk", "atomic_same_address_ops_per_clk")
# operation kind (features: global_atomic_ops_<kind>) -> its rate; a kind not measured goes at the float add's
RATES = {"f32": "atomic_ops_per_clk", "int": "atomic_int_ops_per_clk", "f64": "atomic_f64_ops_per_clk",
         "return": "atomic_return_ops_per_clk"}


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts, gpu = k.work.counts, k.gpu
    sectors = counts.get("l2_sectors_atomic", 0.0)
    if not sectors:
        return out
    float_rate = gpu.value("atomic_ops_per_clk")
    cycles = []
    ops = {kind: counts[f"global_atomic_ops_{kind}"] for kind in RATES if counts.get(f"global_atomic_ops_{kind}")}
    if ops and float_rate:
        cycles.append(sum(n / (gpu.value(RATES[kind]) or float_rate) for kind, n in ops.items()))
        out.inputs["atomic_operations"] = sum(ops.values())
    if sector_rate := gpu.value("atomic_sectors_per_clk"):
        cycles.append(sectors / sector_rate)
    elif not ops and float_rate:
        cycles.append(sectors / float_rate)  # one operation per sector: the older calibration's unit
    if cycles:
        out.memory["atomics"] = max(cycles) / k.clock
    else:
        out.missing.append("atomics (atomic_ops_per_clk)")
    busiest = counts.get("l2_sectors_busiest_slice", 0.0)
    same_address = gpu.value("atomic_same_address_ops_per_clk")
    if same_address and busiest > sectors / 2:
        out.memory["atomics_hot_address"] = min(sectors, busiest) / (same_address * k.clock)
    return out
