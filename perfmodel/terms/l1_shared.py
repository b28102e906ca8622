"""L1/shared data path: shared wavefronts x 128 B + global and local sectors x 32 B over the
measured shared-memory bandwidth per SM."""

from __future__ import annotations

from perfmodel.hardware import SECTOR_BYTES, SHARED_WAVEFRONT_BYTES
from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("shared_bandwidth_bytes_per_clk_per_sm",)
SECTORS = ("global_load_sectors", "global_store_sectors", "local_load_sectors", "local_store_sectors")


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts = k.work.counts
    wavefronts = counts.get("shared_load_wavefronts", 0.0) + counts.get("shared_store_wavefronts", 0.0)
    data = wavefronts * SHARED_WAVEFRONT_BYTES + sum(counts.get(n, 0.0) for n in SECTORS) * SECTOR_BYTES
    rate = k.gpu.value("shared_bandwidth_bytes_per_clk_per_sm")
    if data and rate:
        out.sm["l1_shared"] = data / (rate * k.per_sm)
    elif data:
        out.missing.append("l1_shared (shared_bandwidth_bytes_per_clk_per_sm)")
    return out
