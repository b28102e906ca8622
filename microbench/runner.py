#!/usr/bin/env python3
"""Build and run the CUDA microbenchmark suite (microbench/cuda/*.cu); derive the hardware
parameters the analytical model needs and that vendors do not publish.

    python3 -m microbench.runner --out FILE.json [--suite dram,l2,latency,atomics,launch]
                                 [--nvcc PATH] [--build-only]

(`microbench run` is the same through the click CLI.) Standard library only, so that it runs
on the GPU machine's bare python3. Each program prints `MB_DEVICE {json}` then one
`MB_RESULT {json}` line per measurement; this module computes robust statistics, rejects
noisy measurements and derives the parameters (see derive()).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:  # the GPU machine has no keet dependencies (pandas, ...): fall back to a local class
    from keet.errors import KeetError
except ImportError:  # pragma: no cover - exercised only without keet's dependencies
    class KeetError(Exception):  # type: ignore[no-redef]
        """An error the CLI reports as one line with exit status 2."""


SUITE_VERSION = "1"
CUDA_DIR = Path(__file__).resolve().parent / "cuda"
# suite name -> program (microbench/cuda/<program>.cu), in run order
PROGRAMS = {
    "dram": "dram_bandwidth",
    "l2": "l2_bandwidth",
    "latency": "pointer_chase",
    "atomics": "atomics",
    "launch": "launch_overhead",
}
BASE_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]
DEFAULT_ARCH = "sm_90a"
MAX_REL_SPREAD = 0.10  # (p90 - p10) / median above this: the measurement is rejected
L1_BYTES = 256 * 1024  # L1/shared capacity per SM of Hopper (the largest L1 carve-out)
RUN_TIMEOUT_S = 300
SMI_FIELDS = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem"


# --------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------
def percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation percentile (q in [0, 1]) of an already sorted list."""
    if not sorted_values:
        raise ValueError("percentile of an empty list")
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def robust_stats(values: list[float], max_rel_spread: float = MAX_REL_SPREAD) -> dict:
    """median/min/max/p10/p90, MAD-based relative spread, and the rejection verdict."""
    vals = sorted(float(v) for v in values)
    if not vals:
        return {"n": 0, "rejected": True, "reason": "no samples"}
    med = statistics.median(vals)
    mad = statistics.median(abs(v - med) for v in vals)
    p10, p90 = percentile(vals, 0.10), percentile(vals, 0.90)
    out = {
        "n": len(vals), "median": med, "min": vals[0], "max": vals[-1], "p10": p10, "p90": p90,
        "mad": mad,
        "rel_mad": (1.4826 * mad / med) if med > 0 else None,
        "rel_spread": ((p90 - p10) / med) if med > 0 else None,
        "rejected": False,
    }
    if med <= 0 or any(math.isnan(v) for v in vals):
        out.update(rejected=True, reason=f"non-positive or NaN median ({med})")
    elif len(vals) < 3:
        out.update(rejected=True, reason=f"only {len(vals)} sample(s)")
    elif out["rel_spread"] > max_rel_spread:
        out.update(rejected=True, reason=f"relative spread (p90-p10)/median = {out['rel_spread']:.3f} > {max_rel_spread}")
    return out


def summarize(result: dict) -> dict:
    """Attach statistics to one parsed MB_RESULT: over times_ms, and for latency results over
    cycles_per_load (which decides the rejection) and ns_per_load."""
    result = dict(result)
    # A program may declare a looser tolerance for a host-bound measurement (launch overhead:
    # the CPU's launch path varies by +-7% batch to batch); it is recorded with the stats.
    limit = float(result.get("max_rel_spread", MAX_REL_SPREAD))
    result["stats"] = dict(robust_stats(result.get("times_ms", []), limit), max_rel_spread=limit)
    if "cycles_per_load" in result:
        result["cycles_stats"] = robust_stats(result["cycles_per_load"], limit)
        result["ns_stats"] = robust_stats(result.get("ns_per_load", []))
        result["stats"] = dict(result["stats"], rejected=result["cycles_stats"]["rejected"],
                               reason=result["cycles_stats"].get("reason"))
    st = result["stats"]
    if not st["rejected"]:
        if "bytes" in result:
            result["bytes_per_s"] = result["bytes"] / (st["median"] * 1e-3)
        if "ops" in result:
            result["ops_per_s"] = result["ops"] / (st["median"] * 1e-3)
            result["ns_per_op"] = st["median"] * 1e6 / result["ops"]
    return result


def parse_output(text: str) -> tuple[dict | None, list[dict]]:
    """MB_DEVICE and MB_RESULT lines of one program's stdout."""
    device, results = None, []
    for line in text.splitlines():
        if line.startswith("MB_DEVICE "):
            device = json.loads(line[len("MB_DEVICE "):])
        elif line.startswith("MB_RESULT "):
            results.append(json.loads(line[len("MB_RESULT "):]))
    return device, results


# --------------------------------------------------------------------------------------
# parameter derivation
# --------------------------------------------------------------------------------------
def _ok(results: list[dict], bench: str) -> list[dict]:
    return [r for r in results if r.get("bench") == bench and not r["stats"]["rejected"]]


def _clock(r: dict, fallback: float | None) -> float | None:
    hz = r.get("sm_clock_hz") or 0
    return hz if hz > 1e8 else fallback


def derive(results: list[dict], device: dict | None) -> tuple[dict, dict]:
    """(parameters, missing): parameters as {name: {value, unit, from}}; missing as
    {name: why not derived}. Rejected measurements are never used."""
    params: dict[str, dict] = {}
    missing: dict[str, str] = {}
    l2_bytes = (device or {}).get("l2_bytes") or 0

    def put(name, value, unit, src):
        params[name] = {"value": value, "unit": unit, "from": src}

    # SM clock from the pointer chase (clock64 vs %globaltimer), default-load variant
    lat = _ok(results, "latency")
    clocks = [r["sm_clock_hz"] for r in lat if r.get("variant") == "ca" and (r.get("sm_clock_hz") or 0) > 1e8]
    sm_hz = statistics.median(clocks) if clocks else None
    if sm_hz:
        put("sm_clock_measured_hz", sm_hz, "Hz",
            f"pointer_chase: median over {len(clocks)} footprints of clock64() delta / %globaltimer delta (one thread, ld.global.ca)")
    else:
        missing["sm_clock_measured_hz"] = "no accepted pointer_chase measurement with a clock"

    # DRAM
    dram = {r["name"]: r for r in _ok(results, "dram") if r["name"] in ("read", "copy", "triad")}
    if dram:
        best = max(dram.values(), key=lambda r: r["bytes_per_s"])
        put("dram_achievable_bytes_per_s", best["bytes_per_s"], "B/s",
            f"dram_bandwidth: max over accepted read/copy/triad of bytes per run / median time; best = {best['name']} "
            f"({best['bytes'] / 2**30:.0f} GiB per run incl. read+write bytes, median of {best['stats']['n']} runs)"
            f"; others: " + ", ".join(f"{k} {v['bytes_per_s'] / 1e12:.3f} TB/s" for k, v in sorted(dram.items())))
    else:
        missing["dram_achievable_bytes_per_s"] = "no accepted dram read/copy/triad measurement"

    # L2 bandwidth
    if l2_bytes:
        plateau = [r for r in _ok(results, "l2") if r["footprint_bytes"] <= l2_bytes / 2]
        if plateau:
            per_clk = [r["bytes_per_s"] / hz for r in plateau if (hz := _clock(r, sm_hz))]
            if per_clk:
                put("l2_bandwidth_bytes_per_clk", statistics.median(per_clk), "B/clk",
                    f"l2_bandwidth: median over {len(per_clk)} footprints <= L2/2 ({l2_bytes // 2**20 // 2} MiB) of "
                    "median bandwidth (__ldcg reads, whole grid) / SM clock measured in the same run (clock64 vs %globaltimer)")
            else:
                missing["l2_bandwidth_bytes_per_clk"] = "no SM clock measured"
        else:
            missing["l2_bandwidth_bytes_per_clk"] = "no accepted l2 measurement at footprints <= L2/2"
    else:
        missing["l2_bandwidth_bytes_per_clk"] = "L2 size unknown (no MB_DEVICE line)"

    # latencies
    def lat_param(name, variant, pred, what):
        pts = [r for r in lat if r.get("variant") == variant and pred(r["footprint_bytes"])]
        if pts:
            meds = [r["cycles_stats"]["median"] for r in pts]
            fps = ", ".join(_fmt_bytes(r["footprint_bytes"]) for r in pts)
            put(name, statistics.median(meds), "cycle",
                f"pointer_chase ({variant}): median over footprints {fps} ({what}) of the median cycles per dependent load "
                "(one thread, 128 B-strided Sattolo cycle, clock64)")
        else:
            missing[name] = f"no accepted pointer_chase ({variant}) measurement {what}"

    lat_param("l1_latency_cycles", "ca", lambda f: f <= 32 * 1024, "<= 32 KiB")
    if l2_bytes:
        lat_param("l2_latency_cycles", "cg", lambda f: 4 * L1_BYTES <= f <= l2_bytes / 4,
                  f"between 4x L1 ({4 * L1_BYTES // 1024} KiB) and L2/4, __ldcg")
        lat_param("dram_latency_cycles", "ca", lambda f: f >= 8 * l2_bytes, ">= 8x L2")
    else:
        missing["l2_latency_cycles"] = missing["dram_latency_cycles"] = "L2 size unknown (no MB_DEVICE line)"

    # atomics
    atom = {r["name"]: r for r in _ok(results, "atomics")}
    for pname, rname in (("atomic_ops_per_clk", "distinct"), ("atomic_same_address_ops_per_clk", "same_address")):
        r = atom.get(rname)
        hz = _clock(r, sm_hz) if r else None
        if r and hz:
            put(pname, r["ops_per_s"] / hz, "op/clk",
                f"atomics ({rname}): atomicAdd(float) operations per run / median time ({r['stats']['n']} runs) / "
                "SM clock measured in the same run")
        else:
            missing[pname] = f"no accepted atomics {rname} measurement" if not r else "no SM clock measured"

    # launch overhead
    launch = {r["name"]: r for r in _ok(results, "launch")}
    for pname, rname, how in (("launch_overhead_ns", "stream_back_to_back", "10,000 back-to-back launches on a stream"),
                              ("graph_launch_overhead_ns", "graph", "10,000 launches captured in one CUDA graph")):
        r = launch.get(rname)
        if r:
            put(pname, r["ns_per_op"], "ns",
                f"launch_overhead ({rname}): median over {r['stats']['n']} batches of (batch time / 10,000), "
                f"empty kernel <<<1,32>>>, {how}, cudaEvents around the batch")
        else:
            missing[pname] = f"no accepted launch {rname} measurement"
    return params, missing


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


# --------------------------------------------------------------------------------------
# tools and device
# --------------------------------------------------------------------------------------
def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace", check=False)


def find_nvcc(explicit: str | None) -> str:
    for cand in (explicit, os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and (Path(cand).is_file() or shutil.which(cand)):
            return cand
    if explicit:
        raise KeetError(f"nvcc not found at {explicit}")
    raise KeetError("nvcc not found (put it on PATH, set NVCC, or pass --nvcc)")


def smi(fields: str) -> list[str]:
    try:
        p = _run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"], 60)
    except (OSError, subprocess.TimeoutExpired):
        raise KeetError("no NVIDIA GPU found (nvidia-smi failed)") from None
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode != 0 or not lines:
        raise KeetError("no NVIDIA GPU found (nvidia-smi failed)")
    return [v.strip() for v in lines[0].split(",")]  # GPU 0: the programs use device 0


def smi_snapshot() -> dict:
    vals = smi(SMI_FIELDS)
    out = dict(zip(SMI_FIELDS.split(","), vals))
    for key in ("clocks.sm", "clocks.max.sm", "clocks.mem"):
        try:
            out[key + "_mhz"] = float(out.pop(key))
        except (KeyError, ValueError):
            pass
    return out


def arch_for(compute_cap: str) -> str:
    """'9.0' -> sm_90a, '10.0' -> sm_100a (arch-specific features), else sm_XY."""
    m = re.fullmatch(r"(\d+)\.(\d+)", compute_cap.strip())
    if not m:
        raise KeetError(f"cannot parse the compute capability {compute_cap!r} reported by nvidia-smi")
    xy = m.group(1) + m.group(2)
    return f"sm_{xy}a" if compute_cap.strip() in ("9.0", "10.0") else f"sm_{xy}"


def nvcc_flags(arch: str) -> list[str]:
    num = arch.removeprefix("sm_")
    return BASE_FLAGS + [f"-gencode=arch=compute_{num},code=sm_{num}"]


def build(program: str, nvcc: str, arch: str, build_dir: Path) -> dict:
    src = CUDA_DIR / f"{program}.cu"
    exe = build_dir / program
    cmd = [nvcc, *nvcc_flags(arch), "-o", str(exe), str(src)]
    t0 = time.monotonic()
    try:
        p = _run(cmd, 600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KeetError(f"building {program}.cu failed: {type(exc).__name__}: {exc}") from None
    if p.returncode != 0:
        lines = (p.stderr + p.stdout).strip().splitlines()
        first = next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "no output")
        raise KeetError(f"building {program}.cu failed (nvcc exit {p.returncode}): {first.strip()}")
    return {"program": program, "cmd": cmd, "seconds": round(time.monotonic() - t0, 2), "exe": str(exe)}


# --------------------------------------------------------------------------------------
# the suite
# --------------------------------------------------------------------------------------
def write_json_atomic(path: Path, document: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(document, handle, indent=1)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parse_suite(suite: str | None) -> list[str]:
    if not suite:
        return list(PROGRAMS)
    names = [s.strip() for s in suite.split(",") if s.strip()]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        raise KeetError(f"unknown suite name(s) {', '.join(unknown)} (known: {', '.join(PROGRAMS)})")
    return [n for n in PROGRAMS if n in names]


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_suite(out: str | Path, suite: str | None = None, nvcc: str | None = None, build_only: bool = False) -> dict:
    selected = parse_suite(suite)
    nvcc_path = find_nvcc(nvcc)
    try:
        nvcc_version = _run([nvcc_path, "--version"], 60).stdout.strip().splitlines()[-1:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KeetError(f"cannot run nvcc {nvcc_path}: {exc}") from None
    doc: dict = {
        "suite_version": SUITE_VERSION,
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": socket.gethostname(),
        "nvcc": {"path": nvcc_path, "version": nvcc_version[0] if nvcc_version else ""},
        "suites": selected,
        "build_only": build_only,
    }
    if build_only:
        arch = DEFAULT_ARCH
    else:
        compute_cap = smi("compute_cap")[0]
        arch = arch_for(compute_cap)
        doc["device"] = {"compute_cap": compute_cap, "before": smi_snapshot()}
    doc["nvcc"]["flags"] = nvcc_flags(arch)

    with tempfile.TemporaryDirectory(prefix="microbench-") as tmp:
        builds = {}
        for i, name in enumerate(selected, 1):
            _progress(f"[{i}/{len(selected)}] building {PROGRAMS[name]}.cu ({arch})")
            builds[name] = build(PROGRAMS[name], nvcc_path, arch, Path(tmp))
        doc["builds"] = {k: {"cmd": " ".join(v["cmd"]), "seconds": v["seconds"]} for k, v in builds.items()}
        if build_only:
            write_json_atomic(Path(out), doc)
            return doc

        runs, results, failures = {}, [], []
        device_line = None
        for i, name in enumerate(selected, 1):
            _progress(f"[{i}/{len(selected)}] {name} ...")
            t0 = time.monotonic()
            entry: dict = {"program": PROGRAMS[name]}
            try:
                p = _run([builds[name]["exe"]], RUN_TIMEOUT_S)
                entry.update(rc=p.returncode, stderr=p.stderr[-3000:])
                dev, res = parse_output(p.stdout)
                if p.returncode != 0:
                    entry["error"] = f"exit status {p.returncode}: " + (p.stderr.strip().splitlines() or
                                                                         p.stdout.strip().splitlines() or ["no output"])[-1]
            except subprocess.TimeoutExpired as exc:
                dev, res = parse_output(exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or ""))
                entry["error"] = f"timed out after {RUN_TIMEOUT_S} s"
            except json.JSONDecodeError as exc:
                dev, res = None, []
                entry["error"] = f"unparsable MB_ line: {exc}"
            entry["seconds"] = round(time.monotonic() - t0, 2)
            entry["device"] = dev
            device_line = device_line or dev
            entry["clocks_after"] = _safe_snapshot()
            runs[name] = entry
            results.extend(summarize(dict(r, program=PROGRAMS[name])) for r in res)
            if "error" in entry:
                failures.append(f"{name}: {entry['error']}")
                _progress(f"[{i}/{len(selected)}] {name} ... FAILED in {entry['seconds']:.1f} s: {entry['error']}")
            else:
                _progress(f"[{i}/{len(selected)}] {name} ... done in {entry['seconds']:.1f} s")
            doc["runs"], doc["results"] = runs, results
            write_json_atomic(Path(out), doc)  # a killed run keeps what it has

    doc["device"]["after"] = _safe_snapshot()
    doc["device"]["cuda"] = device_line
    if device_line:
        doc["device"]["name"] = device_line.get("name")
    doc["device"]["nvidia_smi_name"] = doc["device"]["before"].get("name")
    doc["device"]["driver"] = doc["device"]["before"].get("driver_version")
    doc["rejected"] = [{"bench": r["bench"], "name": r["name"], "reason": r["stats"].get("reason")}
                       for r in results if r["stats"]["rejected"]]
    doc["parameters"], doc["parameters_missing"] = derive(results, device_line)
    write_json_atomic(Path(out), doc)
    if failures:
        raise KeetError(f"{len(failures)} program(s) failed ({'; '.join(failures)}); partial results in {out}")
    return doc


def _safe_snapshot() -> dict:
    try:
        return smi_snapshot()
    except KeetError as exc:
        return {"error": str(exc)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="microbench run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output JSON file")
    ap.add_argument("--suite", default=None, help=f"comma-separated subset of {','.join(PROGRAMS)}")
    ap.add_argument("--nvcc", default=None, help="nvcc to use (default: $NVCC, PATH, /usr/local/cuda/bin/nvcc)")
    ap.add_argument("--build-only", action="store_true", help="only compile (no GPU needed; targets sm_90a)")
    args = ap.parse_args(argv)
    try:
        doc = run_suite(args.out, args.suite, args.nvcc, args.build_only)
    except KeetError as exc:
        print(f"microbench: error: {exc}", file=sys.stderr)
        return 2
    _print_summary(doc)
    return 0


def _print_summary(doc: dict) -> None:
    if doc.get("build_only"):
        _progress(f"built {len(doc['builds'])} program(s): {', '.join(doc['builds'])}")
        return
    for name, p in doc.get("parameters", {}).items():
        _progress(f"  {name:34s} {p['value']:.6g} {p['unit']}")
    for name, why in doc.get("parameters_missing", {}).items():
        _progress(f"  {name:34s} not derived: {why}")
    if doc.get("rejected"):
        _progress(f"  {len(doc['rejected'])} measurement(s) rejected (see 'rejected' in the JSON)")


if __name__ == "__main__":
    sys.exit(main())
