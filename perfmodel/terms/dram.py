"""DRAM: reads and writes at their own measured rates where calibrated (HBM turns the bus around
between them), else both at the achievable (or vendor) bandwidth; plus what the launch context does
to the traffic the profile counted (Nsight Compute counts it with the caches flushed clean):

- the first bytes take the memory pipeline's fill and drain, dram_ramp_ns, measured as the
  intercept of a streaming read's duration against its size; a kernel moving less than the
  pipeline carries in that time (ramp x bandwidth) pays that fraction of it (its few loads are
  the latency term's);
- isolated (caches flushed by writing): every line the kernel brings into L2 (DRAM reads plus
  written lines) first evicts a dirty line of the flush, written back while the kernel runs:
  l2_dirty_writeback_ns_per_byte x min(footprint, L2 size);
- back-to-back: a footprint that fits in L2 is served there on the repeat (no DRAM traffic left);
  a larger one streams through as cold, and the previous launch's written lines are written back
  as in the isolated case."""

from __future__ import annotations

from perfmodel.hardware import SECTOR_BYTES
from perfmodel.terms.base import BACK_TO_BACK, ISOLATED, Contribution, Launch

PARAMETERS = ("dram_read_bytes_per_s", "dram_write_bytes_per_s", "dram_achievable_bytes_per_s", "dram_bandwidth_bytes_per_s",
              "dram_ramp_ns", "l2_dirty_writeback_ns_per_byte", "l2_bytes")


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    gpu, counts = k.gpu, k.work.counts
    read, write = counts.get("dram_bytes_read", 0.0), counts.get("dram_bytes_write", 0.0)
    written = counts.get("l2_sectors_write", 0.0) * SECTOR_BYTES
    footprint = read + max(written, write)  # lines the kernel allocates in L2: fetched, or written whole
    l2_bytes = gpu.value("l2_bytes")
    out.inputs.update({"dram_bytes": read + write, "l2_footprint_bytes": footprint})
    if k.context == BACK_TO_BACK and l2_bytes and footprint <= l2_bytes:
        out.inputs["dram_bytes_served_by_l2"] = read + write
        return out
    any_rate = gpu.value("dram_achievable_bytes_per_s") or gpu.value("dram_bandwidth_bytes_per_s")
    read_rate = gpu.value("dram_read_bytes_per_s") or any_rate
    write_rate = gpu.value("dram_write_bytes_per_s") or any_rate
    if not (read or write):
        return out
    if read_rate and write_rate:
        out.memory["dram"] = read / read_rate + write / write_rate
    else:
        out.missing.append("dram (dram_bandwidth_bytes_per_s)")
    if (ramp := gpu.value("dram_ramp_ns")) is not None and read_rate:
        out.overheads["dram_ramp"] = ramp * 1e-9 * min(1.0, (read + write) / (ramp * 1e-9 * read_rate))
    else:
        out.missing.append("dram_ramp (dram_ramp_ns)")
    dirty = footprint if k.context == ISOLATED else written if k.context == BACK_TO_BACK else 0.0
    if dirty and l2_bytes:
        if (writeback := gpu.value("l2_dirty_writeback_ns_per_byte")) is not None:
            out.overheads["dirty_writeback"] = writeback * min(dirty, l2_bytes) * 1e-9
        else:
            out.missing.append("dirty_writeback (l2_dirty_writeback_ns_per_byte)")
    return out
