"""Kernel durations as CUPTI reports them (the clock of profilers, torch.profiler and the corpus),
for the launch-context and short-kernel terms of the model (docs/model.md, "Launch context").

Run on the GPU machine (PyTorch and Triton there):

    python3 microbench/cupti/kernel_duration.py --out kernel_duration_h100.json

Our own Triton kernels, each timed in four contexts:

- ``isolated``: one launch after a 256 MiB buffer was written (``zero_``): cold caches whose L2
  lines are dirty, the convention of triton.testing.do_bench and of the corpus capture;
- ``isolated_clean``: one launch after the 256 MiB buffer was written, then read: cold caches whose
  L2 lines are clean (Nsight Compute's ``--cache-control all`` and the zoo harness);
- ``back_to_back``: 30 launches queued on one stream: warm caches;
- ``event``: CUDA events around one launch after the clean flush (what an event-timed harness
  reads: launch latency included).

Kernels: an empty kernel over grids of 1 to 52,800 blocks of 128 threads (fixed cost of a
kernel and of dispatching blocks); streaming copy (1 read, 1 write), read (sum per block) and add
(2 reads, 1 write) of fp32 arrays of 64 KiB to 1 GiB, 1024 elements per 128-thread block (the
ATen elementwise shape), so that time against bytes gives each context's intercept (ramp and
drain) and slope (bandwidth). ``perfmodel.calibrate_duration`` derives the parameters.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton
import triton.language as tl
from torch.profiler import ProfilerActivity, profile

FLUSH_BYTES = 256 << 20
ISOLATED_RUNS = 10
BACK_TO_BACK_RUNS = 30
BLOCK = 1024
WARPS = 4
EMPTY_GRIDS = (1, 132, 528, 1320, 5280, 13200, 52800)
STREAM_ELEMENTS = tuple(1 << k for k in range(14, 29))  # 64 KiB .. 1 GiB of fp32 per array


@triton.jit
def empty_kernel(x_ptr):
    pass


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@triton.jit
def read_kernel(src, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + tl.program_id(0), tl.sum(tl.load(src + offs, mask=offs < n, other=0.0), axis=0))


@triton.jit
def flush_read_kernel(src, out, BLOCK: tl.constexpr):
    # the clean flush's read: a name of its own, so that its records are not the measured kernel's
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + tl.program_id(0), tl.sum(tl.load(src + offs), axis=0))


@triton.jit
def add_kernel(a, b, c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


def kernel_durations(prof) -> list[tuple[str, float]]:
    """(name, CUPTI duration ns) of every kernel of a torch.profiler run, in launch order."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    try:
        prof.export_chrome_trace(path)
        trace = json.loads(Path(path).read_text())
    finally:
        os.unlink(path)
    events = sorted((e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"), key=lambda e: float(e["ts"]))
    return [(e["name"], float(e["dur"]) * 1e3) for e in events]


def measure(launch, name: str, flush_dirty, flush_clean) -> dict:
    """Durations (ns) of one launch in the four contexts; `name` picks its records out of the
    flush kernels' in the trace."""
    launch()
    torch.cuda.synchronize()
    out: dict[str, list[float]] = {}
    for context, flush in (("isolated", flush_dirty), ("isolated_clean", flush_clean)):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(ISOLATED_RUNS):
                flush()
                launch()
                torch.cuda.synchronize()
        out[context] = [ns for n, ns in kernel_durations(prof) if n.startswith(name)]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(BACK_TO_BACK_RUNS):
            launch()
        torch.cuda.synchronize()
    out["back_to_back"] = [ns for n, ns in kernel_durations(prof) if n.startswith(name)]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    events = []
    for _ in range(ISOLATED_RUNS):
        flush_clean()
        start.record()
        launch()
        end.record()
        torch.cuda.synchronize()
        events.append(start.elapsed_time(end) * 1e6)
    out["event"] = events
    expected = {"isolated": ISOLATED_RUNS, "isolated_clean": ISOLATED_RUNS, "back_to_back": BACK_TO_BACK_RUNS, "event": ISOLATED_RUNS}
    for context, runs in expected.items():
        if len(out[context]) != runs:
            raise RuntimeError(f"{name}: {len(out[context])} {context} records, expected {runs}")
    return {context: {"median_ns": statistics.median(v), "min_ns": min(v), "max_ns": max(v), "n": len(v)} for context, v in out.items()}


def device_facts() -> dict:
    props = torch.cuda.get_device_properties(0)
    facts = {"device": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
             "l2_bytes": getattr(props, "L2_cache_size", None), "torch": torch.__version__,
             "cuda": torch.version.cuda, "triton": triton.__version__, "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    query = "driver_version,clocks.sm,clocks.max.sm,clocks.mem"
    try:
        line = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"], check=False,
                              capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        facts.update(zip(("driver", "sm_clock_mhz_now", "max_sm_clock_mhz", "memory_clock_mhz"), (s.strip() for s in line.split(","))))
    except (OSError, IndexError, subprocess.TimeoutExpired):
        pass
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    flush_buffer = torch.empty(FLUSH_BYTES // 4, device="cuda")
    flush_sums = torch.empty(FLUSH_BYTES // 4 // BLOCK, device="cuda")

    def flush_dirty() -> None:
        flush_buffer.zero_()

    def flush_clean() -> None:
        flush_buffer.zero_()
        flush_read_kernel[(FLUSH_BYTES // 4 // BLOCK,)](flush_buffer, flush_sums, BLOCK=BLOCK, num_warps=WARPS)

    results = []
    started = time.time()
    for grid in EMPTY_GRIDS:
        results.append({"kernel": "empty", "grid": grid, "block": 32 * WARPS, "bytes": 0,
                        **measure(lambda g=grid: empty_kernel[(g,)](flush_sums, num_warps=WARPS), "empty_kernel", flush_dirty, flush_clean)})
        print(f"[{time.time() - started:.0f}s] empty grid {grid}", file=sys.stderr, flush=True)
    largest = STREAM_ELEMENTS[-1]
    a, b, c = (torch.rand(largest, device="cuda") for _ in range(3))
    sums = torch.empty(largest // BLOCK, device="cuda")
    for n in STREAM_ELEMENTS:
        grid = (n // BLOCK,)
        for kernel, launch, moved in (
                ("copy", lambda n=n, grid=grid: copy_kernel[grid](a, c, n, BLOCK=BLOCK, num_warps=WARPS), 8 * n),
                ("read", lambda n=n, grid=grid: read_kernel[grid](a, sums, n, BLOCK=BLOCK, num_warps=WARPS), 4 * n),
                ("add", lambda n=n, grid=grid: add_kernel[grid](a, b, c, n, BLOCK=BLOCK, num_warps=WARPS), 12 * n)):
            results.append({"kernel": kernel, "grid": grid[0], "block": 32 * WARPS, "elements": n, "bytes": moved,
                            **measure(launch, f"{kernel}_kernel", flush_dirty, flush_clean)})
        print(f"[{time.time() - started:.0f}s] streaming {4 * n} B per array", file=sys.stderr, flush=True)
    document = {"suite": "kernel_duration", "version": 1, "device": device_facts(), "flush_bytes": FLUSH_BYTES,
                "isolated_runs": ISOLATED_RUNS, "back_to_back_runs": BACK_TO_BACK_RUNS, "block_elements": BLOCK,
                "warps_per_block": WARPS, "results": results}
    Path(args.out).write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {args.out} ({len(results)} kernels, {time.time() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
