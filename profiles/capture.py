#!/usr/bin/env python3
"""Build, time and profile the kernel zoo (profiles/src/*.cu) on a GPU machine.

    python3 profiles/capture.py --out DIR [--only prog1,prog2] [--no-ncu] [--jobs N]
                                [--build-only] [--timeout S] [--ncu-timeout S]

Steps (each failure is recorded in DIR/capture.json and the script goes on):
  1. record the device (nvidia-smi), nvcc and ncu versions;
  2. build every program in parallel with
       nvcc -O3 -lineinfo -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v
     and parse the ptxas report (registers, smem, spills, stack frame, cmem per kernel);
  3. run each binary in timing mode, ONE AT A TIME, collecting its ZOO_RESULT lines and
     the SM/memory clocks right after it;
  4. unless --no-ncu, profile each binary (`--profile`: one launch per kernel) with
       ncu --set full --import-source yes --clock-control none --target-processes all
     again one at a time, with a per-program timeout;
  5. write DIR/capture.json (rewritten after every step, so a killed run keeps what it
     has) and print a summary table.

Only the standard library is used. Set NVCC=/path/to/nvcc to pick a compiler (e.g. the
PyPI nvidia-cuda-nvcc one on a machine without a GPU, together with --build-only).
ncu runs with --clock-control none on purpose: the lent GPUs' clocks must not be
changed, so profiled kernels run at the default boost behaviour (recorded per report).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
MANIFEST = HERE / "zoo.toml"
NVCC_FLAGS = [
    "-O3",
    "-lineinfo",
    "-std=c++17",
    "-gencode=arch=compute_90a,code=sm_90a",
    "-Xptxas",
    "-v",
]
NCU_FLAGS = [
    "--set", "full",
    "--import-source", "yes",
    "--clock-control", "none",
    "--target-processes", "all",
    "-f",
]
SMI_DEVICE_QUERY = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total,power.limit"
SMI_CLOCK_QUERY = "clocks.sm,clocks.mem"


# --------------------------------------------------------------------------------------
# subprocess helper
# --------------------------------------------------------------------------------------
def run(cmd: list[str], timeout: float, cwd: Path | None = None) -> dict:
    """Run a command; never raises. Returns rc/stdout/stderr/seconds/timed_out/error."""
    t0 = time.monotonic()
    res = {"cmd": cmd, "rc": None, "stdout": "", "stderr": "", "seconds": 0.0,
           "timed_out": False, "error": None}
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                           errors="replace")
        res.update(rc=p.returncode, stdout=p.stdout, stderr=p.stderr)
    except subprocess.TimeoutExpired as e:
        res.update(timed_out=True, error=f"timed out after {timeout} s",
                   stdout=_text(e.stdout), stderr=_text(e.stderr))
    except OSError as e:  # binary missing, not executable, ...
        res.update(error=f"{type(e).__name__}: {e}")
    res["seconds"] = round(time.monotonic() - t0, 3)
    return res


def _text(b) -> str:
    if b is None:
        return ""
    return b.decode(errors="replace") if isinstance(b, bytes) else b


def tail(s: str, n: int = 3000) -> str:
    return s[-n:] if s else ""


# --------------------------------------------------------------------------------------
# device / tools
# --------------------------------------------------------------------------------------
def find_nvcc() -> str:
    if os.environ.get("NVCC"):
        return os.environ["NVCC"]
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).exists():
            return cand
    return "nvcc"


def find_ncu() -> str:
    if os.environ.get("NCU"):
        return os.environ["NCU"]
    return shutil.which("ncu") or "ncu"


def smi_query(fields: str) -> dict:
    r = run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], timeout=30)
    out = {"raw": r["stdout"].strip(), "ok": r["rc"] == 0}
    if r["rc"] == 0 and r["stdout"].strip():
        first = r["stdout"].strip().splitlines()[0]  # GPU 0 (the zoo uses device 0)
        vals = [v.strip() for v in first.split(",")]
        out["values"] = dict(zip(fields.split(","), vals))
    else:
        out["error"] = r["error"] or tail(r["stderr"], 500)
    return out


def record_device() -> dict:
    dev = {"nvidia_smi": smi_query(SMI_DEVICE_QUERY)}
    cc = smi_query("compute_cap")
    dev["compute_capability"] = cc.get("values", {}).get("compute_cap")
    r = run(["nvidia-smi"], timeout=30)
    dev["nvidia_smi_text"] = r["stdout"] if r["rc"] == 0 else (r["error"] or tail(r["stderr"], 500))
    return dev


def record_tools(nvcc: str, ncu: str) -> dict:
    tools = {"nvcc_path": nvcc, "ncu_path": ncu, "python": sys.version.split()[0]}
    r = run([nvcc, "--version"], timeout=60)
    tools["nvcc_version"] = r["stdout"].strip() if r["rc"] == 0 else (r["error"] or r["stderr"])
    r = run([ncu, "--version"], timeout=60)
    tools["ncu_version"] = r["stdout"].strip() if r["rc"] == 0 else (r["error"] or r["stderr"])
    tools["nvcc_flags"] = NVCC_FLAGS
    tools["ncu_flags"] = NCU_FLAGS
    return tools


# --------------------------------------------------------------------------------------
# manifest (zoo.toml) -- optional, used for categories in the summary
# --------------------------------------------------------------------------------------
def load_manifest() -> dict[str, list[dict]]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover
        return {}
    try:
        data = tomllib.loads(MANIFEST.read_text())
    except (OSError, ValueError) as e:
        print(f"warning: cannot read {MANIFEST}: {e}", file=sys.stderr)
        return {}
    by_prog: dict[str, list[dict]] = {}
    for k in data.get("kernel", []):
        by_prog.setdefault(k.get("program", ""), []).append(k)
    return by_prog


# --------------------------------------------------------------------------------------
# ptxas report parsing
# --------------------------------------------------------------------------------------
_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_STACK = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_USED = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_RE_BARS = re.compile(r"used (\d+) barriers")
_RE_CUMSTACK = re.compile(r"(\d+) bytes cumulative stack size")


def parse_ptxas(text: str) -> dict[str, dict]:
    """Per kernel (mangled name as ptxas prints it) -> resources. Device functions that
    are not entries also get 'Function properties' blocks; those are kept with
    entry=False."""
    kernels: dict[str, dict] = {}
    entries: set[str] = set()
    cur = None
    for line in text.splitlines():
        m = _RE_ENTRY.search(line)
        if m:
            cur = m.group(1)
            entries.add(cur)
            kernels.setdefault(cur, {})["arch"] = m.group(2)
            continue
        m = _RE_PROPS.search(line)
        if m:
            cur = m.group(1)
            kernels.setdefault(cur, {})
            continue
        if cur is None:
            continue
        k = kernels[cur]
        m = _RE_STACK.search(line)
        if m:
            k["stack_frame"], k["spill_stores"], k["spill_loads"] = map(int, m.groups())
        m = _RE_USED.search(line)
        if m:
            k["registers"] = int(m.group(1))
            ms = _RE_SMEM.search(line)
            k["smem_static"] = int(ms.group(1)) if ms else 0
            k["cmem"] = {f"cmem[{b}]": int(n) for n, b in _RE_CMEM.findall(line)}
            mb = _RE_BARS.search(line)
            k["barriers"] = int(mb.group(1)) if mb else 0
            mc = _RE_CUMSTACK.search(line)
            if mc:
                k["cumulative_stack"] = int(mc.group(1))
    out = {}
    for name, k in kernels.items():
        k.setdefault("registers", None)
        k.setdefault("smem_static", 0)
        k.setdefault("spill_stores", 0)
        k.setdefault("spill_loads", 0)
        k.setdefault("stack_frame", 0)
        k.setdefault("cmem", {})
        k["entry"] = name in entries
        out[name] = k
    return out


def build_one(prog: str, nvcc: str, build_dir: Path, timeout: float) -> dict:
    exe = build_dir / prog
    cmd = [nvcc, *NVCC_FLAGS, "-o", str(exe), str(SRC / f"{prog}.cu")]
    r = run(cmd, timeout=timeout)
    log = r["stdout"] + r["stderr"]
    (build_dir / f"{prog}.log").write_text(" ".join(cmd) + "\n" + log)
    ok = r["rc"] == 0 and exe.exists()
    res = {
        "ok": ok,
        "seconds": r["seconds"],
        "command": " ".join(cmd),
        "binary": str(exe) if ok else None,
        "kernels": parse_ptxas(log),
    }
    if not ok:
        res["error"] = r["error"] or f"nvcc exit status {r['rc']}"
        res["log_tail"] = tail(log)
    warnings = [l for l in log.splitlines() if "warning" in l.lower()]
    if warnings:
        res["warnings"] = warnings[:50]
    return res


# --------------------------------------------------------------------------------------
# timing and profiling
# --------------------------------------------------------------------------------------
def parse_program_output(stdout: str) -> dict:
    results, device, fails = [], None, []
    check_ok = False
    for line in stdout.splitlines():
        if line.startswith("ZOO_RESULT "):
            try:
                results.append(json.loads(line[len("ZOO_RESULT "):]))
            except json.JSONDecodeError as e:
                fails.append(f"bad ZOO_RESULT line ({e}): {line[:200]}")
        elif line.startswith("ZOO_DEVICE "):
            try:
                device = json.loads(line[len("ZOO_DEVICE "):])
            except json.JSONDecodeError:
                device = {"raw": line}
        elif line.startswith("CHECK_FAIL"):
            fails.append(line)
        elif line.startswith("CHECK_OK"):
            check_ok = True
    return {"results": results, "device": device, "check_fail": fails, "check_ok": check_ok}


def time_one(prog: str, exe: str, timeout: float) -> dict:
    r = run([exe], timeout=timeout)
    parsed = parse_program_output(r["stdout"])
    return {
        "ok": r["rc"] == 0 and bool(parsed["results"]) and not parsed["check_fail"],
        "rc": r["rc"],
        "seconds": r["seconds"],
        "error": r["error"],
        "results": parsed["results"],
        "device_line": parsed["device"],
        "check": "ok" if parsed["check_ok"] else ("fail" if parsed["check_fail"] else "none"),
        "check_fail": parsed["check_fail"],
        "stdout_tail": tail(r["stdout"], 2000),
        "stderr_tail": tail(r["stderr"], 2000),
    }


def profile_one(prog: str, exe: str, ncu: str, out_dir: Path, timeout: float) -> dict:
    ncu_dir = out_dir / "ncu"
    ncu_dir.mkdir(parents=True, exist_ok=True)
    base = ncu_dir / prog
    cmd = [ncu, *NCU_FLAGS, "-o", str(base), exe, "--profile"]
    r = run(cmd, timeout=timeout)
    report = base.with_suffix(".ncu-rep")
    ok = r["rc"] == 0 and report.exists()
    (ncu_dir / f"{prog}.log").write_text(" ".join(cmd) + "\n" + r["stdout"] + r["stderr"])
    res = {
        "ok": ok,
        "seconds": r["seconds"],
        "report": str(report.relative_to(out_dir)) if report.exists() else None,
        "rc": r["rc"],
        "command": " ".join(cmd),
        "stderr_tail": tail(r["stderr"], 2000),
        "stdout_tail": tail(r["stdout"], 1500),
    }
    if r["error"]:
        res["error"] = r["error"]
    return res


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--only", default="", help="comma-separated program names (file stems)")
    ap.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute profiling")
    ap.add_argument("--build-only", action="store_true", help="build and parse ptxas only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel builds")
    ap.add_argument("--timeout", type=float, default=180, help="per-program timing timeout (s)")
    ap.add_argument("--ncu-timeout", type=float, default=300, help="per-program ncu timeout (s)")
    ap.add_argument("--build-timeout", type=float, default=600, help="per-program build timeout (s)")
    args = ap.parse_args(argv)

    out_dir = Path(args.out).resolve()
    build_dir = out_dir / "build"

    all_progs = sorted(p.stem for p in SRC.glob("*.cu"))
    if args.only:
        wanted = [p.strip().removesuffix(".cu") for p in args.only.split(",") if p.strip()]
        unknown = [p for p in wanted if p not in all_progs]
        if unknown:
            print(f"error: unknown program(s): {', '.join(unknown)}; known: "
                  f"{', '.join(all_progs)}", file=sys.stderr)
            return 2
        progs = wanted
    else:
        progs = all_progs
    n = len(progs)
    build_dir.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest()
    nvcc, ncu = find_nvcc(), find_ncu()

    cap: dict = {
        "started": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "host": os.uname().nodename,
        "args": vars(args),
        "device": {},
        "tools": {},
        "programs": {p: {"category": [k.get("category") for k in manifest.get(p, [])]}
                     for p in progs},
    }
    cap_path = out_dir / "capture.json"

    def save() -> None:
        tmp = cap_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(cap, indent=2, sort_keys=False))
        tmp.replace(cap_path)

    # 1. device and tools --------------------------------------------------------------
    print(f"== zoo capture: {n} programs -> {out_dir}", flush=True)
    cap["tools"] = record_tools(nvcc, ncu)
    if not args.build_only:
        cap["device"] = record_device()
        smi = cap["device"]["nvidia_smi"]
        print(f"device: {smi.get('raw') or smi.get('error')}  cc={cap['device']['compute_capability']}",
              flush=True)
    print(f"nvcc: {nvcc}  ({cap['tools']['nvcc_version'].splitlines()[-1] if cap['tools']['nvcc_version'] else '?'})",
          flush=True)
    save()

    # 2. parallel builds ----------------------------------------------------------------
    t0 = time.monotonic()
    done = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = {pool.submit(build_one, p, nvcc, build_dir, args.build_timeout): p for p in progs}
        for fut in concurrent.futures.as_completed(futs):
            p = futs[fut]
            done += 1
            try:
                b = fut.result()
            except Exception as e:  # noqa: BLE001 - defensive: never let one build stop the run
                b = {"ok": False, "error": f"{type(e).__name__}: {e}", "kernels": {}}
            cap["programs"][p]["build"] = b
            ents = {k: v for k, v in b.get("kernels", {}).items()
                    if v.get("entry") and "zoo_l2_flush" not in k}
            desc = ", ".join(
                f"{k}: {v.get('registers')} regs"
                + (f", {v['smem_static']} B smem" if v.get("smem_static") else "")
                + (f", spill {v['spill_stores']}/{v['spill_loads']} B" if v.get("spill_stores") or v.get("spill_loads") else "")
                for k, v in ents.items())
            status = "ok" if b["ok"] else f"FAILED ({b.get('error')})"
            print(f"[{done}/{n}] build {p} {status}  {desc}", flush=True)
    print(f"builds done in {time.monotonic() - t0:.1f} s", flush=True)
    save()

    if not args.build_only:
        # 3. timing, strictly one program at a time --------------------------------------
        for i, p in enumerate(progs, 1):
            b = cap["programs"][p].get("build", {})
            if not b.get("ok"):
                cap["programs"][p]["timing"] = {"ok": False, "error": "not built"}
                print(f"[{i}/{n}] timing {p} skipped (not built)", flush=True)
                continue
            print(f"[{i}/{n}] timing {p} ...", end=" ", flush=True)
            t = time_one(p, b["binary"], args.timeout)
            cap["programs"][p]["timing"] = {k: v for k, v in t.items() if k != "results"}
            cap["programs"][p]["results"] = t["results"]
            cap["programs"][p]["clocks_after"] = smi_query(SMI_CLOCK_QUERY)
            if t["results"]:
                ms = ", ".join(f"{r['kernel']} {r['median_ms']:.4f} ms" for r in t["results"])
            else:
                ms = "no results"
            flag = "" if t["ok"] else f"  FAILED rc={t['rc']} {t['error'] or ''} {t['check_fail'][:1]}"
            print(f"{ms}  check={t['check']}{flag}", flush=True)
            save()

        # 4. ncu, one program at a time ----------------------------------------------------
        if not args.no_ncu:
            for i, p in enumerate(progs, 1):
                b = cap["programs"][p].get("build", {})
                if not b.get("ok"):
                    cap["programs"][p]["ncu"] = {"ok": False, "error": "not built"}
                    continue
                print(f"[{i}/{n}] ncu {p} ...", end=" ", flush=True)
                r = profile_one(p, b["binary"], ncu, out_dir, args.ncu_timeout)
                cap["programs"][p]["ncu"] = r
                print(f"{'ok' if r['ok'] else 'FAILED'} in {r['seconds']:.1f} s"
                      + ("" if r["ok"] else f" ({r.get('error') or 'rc=' + str(r['rc'])})"),
                      flush=True)
                save()

    cap["finished"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    save()

    # 5. summary ----------------------------------------------------------------------
    print()
    hdr = f"{'program':26} {'category':24} {'build':5} {'regs':>5} {'spill':>9} {'check':5} {'median_ms':>10} {'ncu':4}"
    print(hdr)
    print("-" * len(hdr))
    n_fail = 0
    for p in progs:
        e = cap["programs"][p]
        b = e.get("build", {})
        ents = [v for k, v in b.get("kernels", {}).items()
                if v.get("entry") and "zoo_l2_flush" not in k]
        regs = "/".join(str(v.get("registers")) for v in ents) or "-"
        spill = "/".join(f"{v.get('spill_stores', 0)}:{v.get('spill_loads', 0)}" for v in ents) or "-"
        cat = ",".join(c for c in e.get("category", []) if c) or "?"
        t = e.get("timing", {})
        med = "/".join(f"{r['median_ms']:.4f}" for r in e.get("results", [])) or "-"
        nc = e.get("ncu", {})
        ncs = "-" if not nc else ("ok" if nc.get("ok") else "FAIL")
        chk = t.get("check", "-") if t else "-"
        if not b.get("ok") or (t and not t.get("ok")) or (nc and not nc.get("ok")):
            n_fail += 1
        print(f"{p:26} {cat[:24]:24} {'ok' if b.get('ok') else 'FAIL':5} {regs:>5} {spill:>9} "
              f"{chk:5} {med:>10} {ncs:4}")
    print(f"\n{n - n_fail}/{n} programs fully ok; capture written to {cap_path}")
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
