"""Per-SM memory port: one SM draws at most a measured rate from DRAM and from L2 (the loads one
block can keep in flight over the latency, and the SM's link to the L2) and writes at a measured
rate; a kernel on few SMs (a grid of a few blocks, multi-tensor kernels) is bound by them long
before the GPU's DRAM or L2 bandwidth: t = (DRAM reads / r_dram + L2-served reads / r_l2 +
writes / r_write) per SM, spread over the busy SMs (microbench/cupti/sm_bandwidth.py)."""

from __future__ import annotations

from perfmodel.hardware import SECTOR_BYTES
from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("sm_dram_read_bytes_per_clk", "sm_l2_read_bytes_per_clk", "sm_write_bytes_per_clk")


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts, gpu = k.work.counts, k.gpu
    reads = counts.get("l1_to_l2_read_bytes", counts.get("l2_sectors_read", 0.0) * SECTOR_BYTES)
    writes = counts.get("l1_to_l2_write_bytes", counts.get("l2_sectors_write", 0.0) * SECTOR_BYTES)
    if not (reads or writes):
        return out
    rates = {name: gpu.value(name) for name in PARAMETERS}
    if not all(rates.values()):
        # On our GPUs a quarter of the SMs already draw more than the whole DRAM or L2 delivers
        # (H100: 21 SMs at their measured read rate saturate DRAM): the port limit can bind only
        # on fewer, and only there does its absence make the prediction a lower bound.
        if k.busy_sms < k.sms / 4:
            out.missing.append(f"sm_port ({', '.join(n for n, r in rates.items() if not r)})")
        return out
    from_dram = min(reads, counts.get("dram_bytes_read", 0.0))
    cycles = (from_dram / rates["sm_dram_read_bytes_per_clk"] + (reads - from_dram) / rates["sm_l2_read_bytes_per_clk"]
              + writes / rates["sm_write_bytes_per_clk"])
    out.memory["sm_port"] = cycles * k.sm_seconds
    return out
