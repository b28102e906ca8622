"""Memory bandwidth one SM can draw, against the number of SMs in use (CUPTI durations, our Triton
kernels), for the model's per-SM memory port term (docs/model.md, "Per-SM memory port").

    python3 microbench/cupti/sm_bandwidth.py --out sm_bandwidth_h100.json

A persistent read (and copy) kernel of one 1024-thread block per SM streams its own contiguous
chunk, 4096 fp32 per loop iteration: the most loads in flight a block can keep. Grids of 1 to all
SMs, over a 16 MiB buffer read back to back (served by L2) and a 1 GiB buffer after a clean flush
(served by DRAM). Bytes / duration / blocks is one SM's rate while the others are idle; where the
whole GPU's L2 or DRAM rate is reached the per-SM rate falls, which is the other terms' limit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl
from kernel_duration import (  # sibling script, run from this folder
    FLUSH_BYTES,
    device_facts,
    kernel_durations,
)
from torch.profiler import ProfilerActivity, profile

CHUNK = 4096
WARPS = 32
RUNS = 20
GRIDS = (1, 2, 4, 8, 16, 33, 66, 132)
SIZES = {"l2": 16 << 20, "dram": 1 << 30}


@triton.jit
def persistent_read(src, out, per_block, CHUNK: tl.constexpr):
    base = tl.program_id(0) * per_block
    acc = tl.zeros((CHUNK,), dtype=tl.float32)
    for start in range(0, per_block, CHUNK):
        acc += tl.load(src + base + start + tl.arange(0, CHUNK))
    tl.store(out + tl.program_id(0), tl.sum(acc, axis=0))


@triton.jit
def persistent_copy(src, dst, per_block, CHUNK: tl.constexpr):
    base = tl.program_id(0) * per_block
    for start in range(0, per_block, CHUNK):
        offs = base + start + tl.arange(0, CHUNK)
        tl.store(dst + offs, tl.load(src + offs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    flush = torch.empty(FLUSH_BYTES // 4, device="cuda")
    src = torch.rand(SIZES["dram"] // 4, device="cuda")
    dst = torch.empty_like(src)
    sums = torch.empty(1024, device="cuda")
    results = []
    started = time.time()
    for level, nbytes in SIZES.items():
        for grid in GRIDS:
            per_block = (nbytes // 4 // grid) // CHUNK * CHUNK
            for kernel, launch, moved in (
                    ("read", lambda g=grid, n=per_block: persistent_read[(g,)](src, sums, n, CHUNK=CHUNK, num_warps=WARPS), 4),
                    ("copy", lambda g=grid, n=per_block: persistent_copy[(g,)](src, dst, n, CHUNK=CHUNK, num_warps=WARPS), 8)):
                launch()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(RUNS):
                        if level == "dram":
                            flush.zero_()
                            flush.sum()  # a read after the write: the L2 holds clean lines of the flush
                        launch()
                        if level == "dram":
                            torch.cuda.synchronize()
                    torch.cuda.synchronize()
                times = [ns for name, ns in kernel_durations(prof) if name.startswith(f"persistent_{kernel}")]
                if len(times) != RUNS:
                    raise RuntimeError(f"{kernel} grid {grid}: {len(times)} records, expected {RUNS}")
                bytes_moved = moved * per_block * grid
                results.append({"kernel": kernel, "level": level, "grid": grid, "block": 32 * WARPS, "bytes": bytes_moved,
                                "median_ns": statistics.median(times), "min_ns": min(times), "max_ns": max(times), "n": len(times),
                                "bytes_per_ns_per_block": bytes_moved / statistics.median(times) / grid})
            print(f"[{time.time() - started:.0f}s] {level} grid {grid}: read {results[-2]['bytes_per_ns_per_block']:.1f} "
                  f"copy {results[-1]['bytes_per_ns_per_block']:.1f} B/ns per SM", file=sys.stderr, flush=True)
    document = {"suite": "sm_bandwidth", "version": 1, "device": device_facts(), "chunk_elements": CHUNK, "warps_per_block": WARPS,
                "runs": RUNS, "results": results}
    Path(args.out).write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
