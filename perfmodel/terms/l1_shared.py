"""L1/shared data path: one wavefront (128 B) per clock per SM at the measured shared-memory
bandwidth. Shared accesses count their wavefronts (bank conflicts add some); global and local
accesses their L1 tag-stage wavefronts, one per cache line a request touches, so a request
scattered over many lines serialises in L1 however few bytes it moves; where the profile lacks
those counts, their sectors x 32 B."""

from __future__ import annotations

from perfmodel.hardware import SECTOR_BYTES, SHARED_WAVEFRONT_BYTES
from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("shared_bandwidth_bytes_per_clk_per_sm",)
# (wavefronts, sectors) of each global and local access kind
ACCESSES = (("global_load_wavefronts", "global_load_sectors"), ("global_store_wavefronts", "global_store_sectors"),
            ("local_load_wavefronts", "local_load_sectors"), ("local_store_wavefronts", "local_store_sectors"))


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    counts = k.work.counts
    wavefronts = counts.get("shared_load_wavefronts", 0.0) + counts.get("shared_store_wavefronts", 0.0)
    data = wavefronts * SHARED_WAVEFRONT_BYTES
    for lines, sectors in ACCESSES:
        data += counts[lines] * SHARED_WAVEFRONT_BYTES if lines in counts else counts.get(sectors, 0.0) * SECTOR_BYTES
    rate = k.gpu.value("shared_bandwidth_bytes_per_clk_per_sm")
    if data and rate:
        out.sm["l1_shared"] = data / (rate * k.per_sm)
    elif data:
        out.missing.append("l1_shared (shared_bandwidth_bytes_per_clk_per_sm)")
    return out
