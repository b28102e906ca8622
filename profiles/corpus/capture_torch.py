"""Time and profile the corpus's PyTorch cases on the GPU machine (needs torch; run by
device_capture.sh, not by users of keet).

    python3 capture_torch.py time --out times.json [--part I/N]
        per case: the kernels one call launches (CUPTI, through torch.profiler), each kernel's
        duration as an isolated cold-L2 launch (a 256 MiB buffer written before every call)
        and back-to-back (calls queued without a sync, L2 as the previous call left it), and
        the call's CUDA-event time both ways
    python3 capture_torch.py profile --out cases.json [--part I/N]
        one call of each case between cudaProfilerStart/Stop, inside an NVTX range named by the
        case id, for `ncu --profile-from-start off --nvtx` (warm-up calls stay outside)

Default clocks throughout: nothing here changes the GPU's clocks, and ncu runs with
--clock-control none (the lent GPUs' settings must be left alone).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_cases import cases

ISOLATED_RUNS = 10
BACK_TO_BACK_RUNS = 30
FLUSH_BYTES = 256 << 20  # > 4x the L2 of an H100 (50 MB) or H200 (60 MB)


def select(all_cases, part: str | None):
    if not part:
        return all_cases
    index, count = (int(x) for x in part.split("/"))
    return [c for i, c in enumerate(all_cases) if i % count == index]


def kernel_events(prof) -> list[dict]:
    """Kernel records of a torch.profiler run, in launch order (the Chrome trace keeps CUPTI's
    nanosecond timestamps as fractional microseconds)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    try:
        prof.export_chrome_trace(path)
        trace = json.loads(Path(path).read_text())
    finally:
        os.unlink(path)
    events = [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"]
    events.sort(key=lambda e: float(e["ts"]))
    return [{"name": e["name"], "ns": float(e["dur"]) * 1e3, "grid": e.get("args", {}).get("grid"),
             "block": e.get("args", {}).get("block"), "registers": e.get("args", {}).get("registers per thread"),
             "shared_bytes": e.get("args", {}).get("shared memory")} for e in events]


def time_case(call, flush) -> dict:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    one = kernel_events(prof)
    count = len(one)
    if count == 0:
        return {"error": "no kernel launched"}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(ISOLATED_RUNS):
            flush()
            call()
            torch.cuda.synchronize()
    isolated = kernel_events(prof)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(BACK_TO_BACK_RUNS):
            call()
        torch.cuda.synchronize()
    b2b = kernel_events(prof)
    if len(isolated) != ISOLATED_RUNS * (count + 1) or len(b2b) != BACK_TO_BACK_RUNS * count:
        return {"error": f"kernel count varies between calls ({count} once, {len(isolated)} over {ISOLATED_RUNS} "
                         f"flushed calls, {len(b2b)} over {BACK_TO_BACK_RUNS} queued calls)"}
    kernels = []
    for i, k in enumerate(one):
        iso = [isolated[r * (count + 1) + 1 + i]["ns"] for r in range(ISOLATED_RUNS)]
        queued = [b2b[r * count + i]["ns"] for r in range(BACK_TO_BACK_RUNS)]
        names = {isolated[r * (count + 1) + 1 + i]["name"] for r in range(ISOLATED_RUNS)} | {b2b[r * count + i]["name"] for r in range(BACK_TO_BACK_RUNS)}
        if names != {k["name"]}:
            return {"error": f"kernel {i} differs between calls"}
        kernels.append({**k, "ns": None, "isolated_ns": statistics.median(iso), "isolated_min_ns": min(iso),
                        "isolated_max_ns": max(iso), "back_to_back_ns": statistics.median(queued),
                        "back_to_back_min_ns": min(queued), "back_to_back_max_ns": max(queued)})
        del kernels[-1]["ns"]
    # the call as a whole, with CUDA events
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    iso_call = []
    for _ in range(ISOLATED_RUNS):
        flush()
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        iso_call.append(start.elapsed_time(end) * 1e6)
    start.record()
    for _ in range(BACK_TO_BACK_RUNS):
        call()
    end.record()
    torch.cuda.synchronize()
    return {"kernels": kernels, "call_isolated_event_ns": statistics.median(iso_call),
            "call_back_to_back_event_ns": start.elapsed_time(end) * 1e6 / BACK_TO_BACK_RUNS}


def device_facts() -> dict:
    props = torch.cuda.get_device_properties(0)
    facts = {"device": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
             "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
             "captured": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        import triton
        facts["triton"] = triton.__version__
    except ImportError:
        pass
    try:
        query = "driver_version,clocks.sm,clocks.max.sm,clocks.mem"
        line = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
        facts.update(dict(zip(("driver", "sm_clock_mhz_now", "max_sm_clock_mhz", "memory_clock_mhz"), (v.strip() for v in line.split(",")))))
    except (OSError, subprocess.CalledProcessError, IndexError):
        pass
    return facts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("time", "profile", "list"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--part", help="I/N: every N-th case starting at I")
    parser.add_argument("--cases-file", type=Path, help="only the case ids listed in this file, one a line")
    args = parser.parse_args()
    chosen = select(cases(), args.part)
    if args.cases_file:
        wanted = set(args.cases_file.read_text().split())
        chosen = [c for c in chosen if c.case_id in wanted]
    if args.mode == "list":
        for c in chosen:
            print(c.case_id)
        return 0
    torch.manual_seed(0)
    # the flush buffer only where timed: under ncu it would be memory for every replay to save
    flush = torch.empty(FLUSH_BYTES // 4, device="cuda").zero_ if args.mode == "time" else None
    results: dict[str, dict] = {}
    started = time.time()
    for number, case in enumerate(chosen):
        try:
            call = case.setup()
            for _ in range(3 if args.mode == "time" else 2):  # module load, library handles and heuristics, torch.compile
                call()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - an operator this build lacks: recorded, the run goes on
            results[case.case_id] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            print(f"[{number + 1}/{len(chosen)}] {case.case_id}: {results[case.case_id]['error']}", file=sys.stderr, flush=True)
            continue
        if args.mode == "profile":
            torch.cuda.cudart().cudaProfilerStart()
            torch.cuda.nvtx.range_push(case.case_id)
            call()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            torch.cuda.cudart().cudaProfilerStop()
            print(f"[{number + 1}/{len(chosen)} {time.time() - started:.0f}s] {case.case_id}", file=sys.stderr, flush=True)
        else:
            results[case.case_id] = {"group": case.group, "family": case.family, "notes": case.notes, **time_case(call, flush)}
            summary = results[case.case_id].get("error") or ", ".join(
                f"{k['isolated_ns'] / 1e3:.1f}us" for k in results[case.case_id]["kernels"])
            print(f"[{number + 1}/{len(chosen)} {time.time() - started:.0f}s] {case.case_id}: {summary}", file=sys.stderr, flush=True)
        del call
        torch.cuda.empty_cache()
    if args.mode == "time" and args.out:
        args.out.write_text(json.dumps({"device": device_facts(), "isolated_runs": ISOLATED_RUNS,
                                        "back_to_back_runs": BACK_TO_BACK_RUNS, "flush_bytes": FLUSH_BYTES,
                                        "cases": results}, indent=1))
    if args.mode == "profile" and args.out:
        errors = {k: v["error"] for k, v in results.items()}
        args.out.write_text(json.dumps({"profiled": [c.case_id for c in chosen if c.case_id not in errors], "errors": errors}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
