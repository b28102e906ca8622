"""L2: read, write and atomic sectors x 32 B over the measured L2 bandwidth. A sector written only
in part (scattered 4-byte stores) costs the L2 a read-modify-write: such sectors go at the measured
scattered-store rate. With b bytes stored per sector on average, a fraction 1 - b/32 of the store
sectors are partial."""

from __future__ import annotations

from perfmodel.hardware import SECTOR_BYTES
from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("l2_bandwidth_bytes_per_clk", "l2_scattered_store_sectors_per_clk", "l2_scattered_load_sectors_per_clk",
              "cache_line_bytes")


def partial_store_sectors(counts: dict[str, float]) -> float:
    per_sector = counts.get("global_store_bytes_per_sector")
    writes = counts.get("l2_sectors_write", 0.0)
    if not per_sector or not writes or per_sector >= SECTOR_BYTES:
        return 0.0
    return min(writes, counts.get("global_store_sectors", writes)) * (1.0 - per_sector / SECTOR_BYTES)


def _request_cycles(k: Launch, counts: dict[str, float], rate: float) -> float:
    """What read requests of fewer sectors than a line cost beyond their sectors' bytes. The L2
    serves a request per cycle slot and its sectors at the streaming rate: from the two measured
    rates (streaming reads, whole 4-sector lines per request: l2_bandwidth_bytes_per_clk; one
    sector per request: l2_scattered_load_sectors_per_clk) a request costs
    b = (1/r_scattered - 1/r_stream) / (1 - 1/4) cycles beyond its sectors, and a kernel's reads
    cost b x (requests - sectors / 4) more than their bytes at the streaming rate."""
    requests, reads = counts.get("l2_read_requests"), counts.get("l2_sectors_read", 0.0)
    scattered = k.gpu.value("l2_scattered_load_sectors_per_clk")
    line = k.gpu.value("cache_line_bytes")  # an L2 request covers at most one line of the L1's request
    if not requests or not reads or not scattered or not line:
        return 0.0
    line_sectors = line / SECTOR_BYTES
    per_request = (1.0 / scattered - SECTOR_BYTES / rate) / (1.0 - 1.0 / line_sectors)
    return max(per_request, 0.0) * max(requests - reads / line_sectors, 0.0)


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts = k.work.counts
    sectors = sum(counts.get(n, 0.0) for n in ("l2_sectors_read", "l2_sectors_write", "l2_sectors_atomic"))
    rate = k.gpu.value("l2_bandwidth_bytes_per_clk")
    out.inputs["l2_sectors"] = sectors
    if sectors and rate:
        scattered = k.gpu.value("l2_scattered_store_sectors_per_clk")
        partial = partial_store_sectors(counts) if scattered else 0.0
        cycles = (sectors - partial) * SECTOR_BYTES / rate + (partial / scattered if partial else 0.0)
        out.memory["l2"] = (cycles + _request_cycles(k, counts, rate)) / k.clock
    elif sectors:
        out.missing.append("l2 (l2_bandwidth_bytes_per_clk)")
    return out
