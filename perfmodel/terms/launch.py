"""Launch: what every kernel pays besides its work. A kernel's CUPTI duration starts and ends with
a fixed cost (kernel_fixed_ns: an empty one-block kernel's duration); blocks start at a measured
rate (block_dispatch_ns per block: a kernel of many short blocks is bound by it); CUDA events around
one launch add the launch latency (event_overhead_ns) to what they read; Nsight Compute's
gpu__time_duration of a launch spans a fixed stretch more than its CUPTI duration
(ncu_overhead_ns: about 1.3 us on an H100, more than half of a tiny kernel's reported time)."""

from __future__ import annotations

from perfmodel.terms.base import EVENT, NCU, Contribution, Launch

PARAMETERS = ("kernel_fixed_ns", "block_dispatch_ns", "event_overhead_ns", "ncu_overhead_ns")


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    gpu = k.gpu
    if (fixed := gpu.value("kernel_fixed_ns")) is not None:
        out.overheads["kernel_fixed"] = fixed * 1e-9
    else:
        out.missing.append("launch (kernel_fixed_ns)")
    if (per_block := gpu.value("block_dispatch_ns")) is not None:
        out.alone["block_dispatch"] = k.work.grid_blocks * per_block * 1e-9
    else:
        out.missing.append("block_dispatch (block_dispatch_ns)")
    if k.context == EVENT:
        if (event := gpu.value("event_overhead_ns")) is not None:
            out.overheads["event"] = event * 1e-9
        else:
            out.missing.append("event (event_overhead_ns)")
    if k.context == NCU:
        if (ncu := gpu.value("ncu_overhead_ns")) is not None:
            out.overheads["ncu"] = ncu * 1e-9
        else:
            out.missing.append("ncu (ncu_overhead_ns)")
    return out
