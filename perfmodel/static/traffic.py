"""Cache traffic of an interpreted launch: L1 hits, L2 sectors and DRAM bytes from the 32-byte
sectors its sampled blocks touched (docs/ptx_interpreter.md, "Cache traffic").

The interpreter gives, per sampled block, the distinct global sectors it loaded and stored,
and the sectors its warps requested. From those:

* L1: a block that requests a sector again finds it in its SM's L1 when the blocks resident
  on the SM fit their distinct sectors in the L1 left beside shared memory; beyond that the
  hits shrink in proportion (capacity / footprint). Reuse between blocks in L1 is not
  modelled (which blocks share an SM is the scheduler's choice).
* L2: loads that miss L1 and every stored sector (L1 is write-through).
* Grid footprint: the sectors the whole grid touches, per buffer: the union of the sampled
  blocks' sectors plus, for each unsampled block, the sectors a sampled block touched that no
  other sampled block did; at most the buffer's size.
* DRAM: first touches of the read footprint (the L2 starts cold: the zoo's harness flushes it
  before each timed run, and a large earlier kernel does the same) plus, when read and written
  footprints exceed the L2, the share 1 - capacity / footprint of the re-references; writes
  are the written footprint, written back once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.hardware import GPU, SECTOR_BYTES
from perfmodel.static.interpreter import GLOBAL_BASE, GLOBAL_STRIDE, distinct

SECTOR_MASK = np.uint64((1 << 48) - 1)


@dataclass(frozen=True)
class Traffic:
    l2_sectors_read: float
    l2_sectors_write: float
    dram_bytes_read: float
    dram_bytes_write: float
    l1_hit_rate: float
    footprint_read_bytes: float
    footprint_write_bytes: float
    notes: tuple[str, ...]


def buffer_index(sectors: np.ndarray) -> np.ndarray:
    """Which interpreter buffer (its index in Memory) each global sector lies in."""
    return ((sectors << np.uint64(5)) - np.uint64(GLOBAL_BASE)) // np.uint64(GLOBAL_STRIDE)


@dataclass(frozen=True)
class _Sample:
    """The sampled blocks' sectors: which are touched by one block only ("own") and which by
    several (data every block reads, like a table or a broadcast operand)."""
    sectors: np.ndarray  # per key
    distinct: np.ndarray
    seen_by: np.ndarray  # sampled blocks touching each distinct sector

    @classmethod
    def of(cls, keys: np.ndarray) -> _Sample:
        sectors = keys & SECTOR_MASK
        ordered = np.sort(sectors)  # np.unique hashes (numpy >= 2.3): slower than a sort here
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))) if len(ordered) else np.zeros(0, int)
        return cls(sectors, ordered[starts], np.diff(np.append(starts, len(ordered))))

    def own_keys(self) -> np.ndarray:
        return self.sectors[np.isin(self.sectors, self.distinct[self.seen_by == 1])]

    def common(self) -> np.ndarray:
        return self.distinct[self.seen_by > 1]


def _grid_footprint(sample: _Sample, sampled_blocks: int, grid_blocks: float, warp_scale: float,
                    buffer_sectors: list[int]) -> tuple[float, float]:
    """Sectors the whole grid touches: per buffer, the sampled blocks' union plus each
    unsampled block's share of sectors only one sampled block touched, at most the buffer.
    Returns (sectors touched, sectors of the buffers touched)."""
    if len(sample.distinct) == 0:
        return 0.0, 0.0
    buffer_of, own_buffer = buffer_index(sample.distinct), buffer_index(sample.own_keys())
    unsampled = max(grid_blocks - sampled_blocks, 0)
    total = spanned = 0.0
    for b in np.unique(buffer_of):
        union = float(np.count_nonzero(buffer_of == b)) * warp_scale
        own = float(np.count_nonzero(own_buffer == b)) * warp_scale / sampled_blocks
        cap = buffer_sectors[int(b)] if int(b) < len(buffer_sectors) else union + unsampled * own
        total += min(union + unsampled * own, cap)
        spanned += cap
    return total, spanned


def _distinct_keys(footprint: dict[str, np.ndarray], kinds: tuple[str, ...]) -> np.ndarray:
    return distinct(np.concatenate([footprint.get(kind, np.zeros(0, np.uint64)) for kind in kinds]))


def estimate(footprint: dict[str, np.ndarray], *, sampled_blocks: int, grid_blocks: float, warp_scale: float, buffer_bytes: list[int],
             load_sectors: float, bypass_sectors: float, store_sectors: float, gpu: GPU, blocks_per_sm: int, shared_bytes_per_block: int) -> Traffic:
    """L2 and DRAM traffic of the whole grid. load_sectors and store_sectors are the grid's
    sectors requested by warps, bypass_sectors those of the loads among them that skip L1;
    warp_scale = warps per block / warps interpreted per block; grid_blocks may be fractional:
    the grid's work in sampled blocks' worth (an empty remainder block counts for nothing)."""
    notes: list[str] = []
    buffer_sectors = [-(-size // SECTOR_BYTES) for size in buffer_bytes]
    loads = _Sample.of(_distinct_keys(footprint, ("load",)))
    load_sectors -= bypass_sectors  # .cg / volatile loads skip L1: all their sectors go to the L2
    stores = _Sample.of(_distinct_keys(footprint, ("store",)))

    # L1 misses: each block's own sectors once per block; sectors several sampled blocks read
    # once per SM (they stay in its L1 for the blocks it runs after), when they fit.
    sms = gpu.value("sm_count") or 1.0
    own_per_block = len(loads.own_keys()) * warp_scale / max(sampled_blocks, 1)
    common = len(loads.common()) * warp_scale
    per_block = len(loads.sectors) * warp_scale / max(sampled_blocks, 1)
    l1_bytes = gpu.value("l1_bytes_per_sm") or 0.0
    room = l1_bytes - min(gpu.value("shared_per_sm_bytes") or 0.0, shared_bytes_per_block * blocks_per_sm)
    if common and common * SECTOR_BYTES <= room:
        compulsory = own_per_block * grid_blocks + common * min(grid_blocks, sms)
    else:
        compulsory = per_block * grid_blocks
    compulsory = min(load_sectors, compulsory)
    hits = load_sectors - compulsory
    resident = per_block * SECTOR_BYTES * max(blocks_per_sm, 1)
    if hits and resident > room > 0:
        hits *= room / resident
        notes.append(f"L1 hits scaled by {room / resident:.2f}: the resident blocks' {resident / 1024:.0f} KiB of distinct "
                     f"sectors exceed the {room / 1024:.0f} KiB of L1 beside shared memory")
    l2_read = load_sectors - hits + bypass_sectors
    hit_rate = hits / (load_sectors + bypass_sectors) if load_sectors + bypass_sectors else 0.0

    every_load = _distinct_keys(footprint, ("load", "load_l2"))
    read_sectors, read_span = _grid_footprint(_Sample.of(every_load), sampled_blocks, grid_blocks, warp_scale, buffer_sectors)
    read_footprint = read_sectors * SECTOR_BYTES
    write_footprint = _grid_footprint(stores, sampled_blocks, grid_blocks, warp_scale, buffer_sectors)[0] * SECTOR_BYTES
    dram_read = min(read_footprint, l2_read * SECTOR_BYTES)
    capacity = gpu.value("l2_bytes") or float("inf")
    both = read_footprint + write_footprint
    dram_write = 0.0
    if both > capacity:
        rereads = max(l2_read * SECTOR_BYTES - read_footprint, 0.0)
        dram_read += rereads * (1 - capacity / both)
        # dirty lines left in the L2 at the end are not written back during the kernel
        dram_write = write_footprint * (1 - capacity / both)
        notes.append(f"footprint {both / 2**20:.0f} MiB exceeds the {capacity / 2**20:.0f} MiB L2: {1 - capacity / both:.0%} of "
                     "the written footprint is written back during the kernel"
                     + (f", and as much of the {rereads / 2**20:.0f} MiB of re-reads come from DRAM" if rereads else ""))
    # A miss fetches a whole L2 fetch granule (64 B: two sectors). An isolated sector (the
    # block reads neither neighbour: scattered access) brings in the rest of its granule, which
    # is wasted unless another block reads it while it is still in the L2: likely in proportion
    # to how densely the grid covers the buffers it reads, unless the footprint overflows the L2.
    granule = gpu.value("l2_fetch_granularity_bytes")
    if granule and granule > SECTOR_BYTES and len(every_load) and read_span:
        one = np.uint64(1)
        isolated = int(np.count_nonzero(~np.isin(every_load - one, every_load) & ~np.isin(every_load + one, every_load)))
        wasted = max(1 - read_sectors / read_span, 1 - capacity / both if both > capacity else 0.0)
        overfetch = 1.0 + isolated / len(every_load) * (granule / SECTOR_BYTES - 1) * wasted
        if overfetch > 1.005:
            dram_read *= overfetch
            notes.append(f"DRAM reads x{overfetch:.2f}: {isolated:,} of the {len(every_load):,} sectors the sampled blocks read "
                         f"are isolated, each fetching a {granule:g}-byte L2 granule; {wasted:.0%} of the rest of such a granule "
                         "is taken as unused (the grid's read footprint covers the rest of its buffers, or the L2 overflows)")
    return Traffic(l2_sectors_read=l2_read, l2_sectors_write=store_sectors, dram_bytes_read=dram_read,
                   dram_bytes_write=dram_write, l1_hit_rate=hit_rate, footprint_read_bytes=read_footprint,
                   footprint_write_bytes=write_footprint, notes=tuple(notes))
