"""H100 timings of the open-source program corpus (perfmodel/static/corpus.toml), for issue 22's
error figure: the kernel configurations `perfmodel predict` discovered and predicted with no GPU,
timed by Nsight Compute on a GPU machine. Three steps, on two machines:

    here:        python -m perfmodel.static.measure --bundle BUNDLE --root ROOT
    GPU machine: python3 BUNDLE/measure.py --measure BUNDLE --out times.json
    here:        python -m perfmodel.static.measure --compare times.json [--write]

--bundle copies, from the repositories checked out under ROOT (as for perfmodel.static.corpus),
only what each predicted program needs to build and run there: its .cu, the headers it includes
from its own folder and its -I folders (found by following #include lines, so headers a
conditional leaves out may come too), and its folder's data files (documentation left out). The
bundle holds a copy of this file and bundle.json: per program its folder, include folders,
whether its host code uses OpenMP, and per run its arguments and the configurations predicted.

--measure runs on the GPU machine with the standard library only (no project install, no
network): it compiles every program for sm_90 with the toolkit's nvcc (-O3 -std=c++17, its -I
folders, -Xcompiler -fopenmp where its host code uses OpenMP, -rdc=true when nvcc asks for it,
the CUDA libraries linked), on every core at once, and runs each run in its program's folder
under

    ncu --metrics gpu__time_duration.sum --csv --page details --print-units base
        --print-kernel-base mangled --cache-control all --clock-control none
        --filter-mode per-launch-config --launch-count 5

(Nsight Compute's own duration of each profiled launch, caches flushed before each, the clocks
left as they are; at most 5 launches per grid/block/shared-memory configuration, so that timing
loops of thousands of launches stay short). A configuration predicted but not profiled (ncu
counts per configuration, not per kernel: another kernel of the same shape may have used up its
5) is profiled in a second pass of that run, filtered to its kernel. Each run has a time limit
(--run-timeout, 90 s: llm.c's CPU references take most of it), after which its program is
stopped and what ncu profiled until then is kept, and the whole measurement a deadline
(--deadline, 450 s) after which the runs left are recorded as skipped: --resume with the same
--out does them (and the failed ones) in another call. Runs go one at a time per GPU, on every
GPU nvidia-smi lists (CUDA_VISIBLE_DEVICES per worker): timings of runs sharing a GPU would
disturb each other. times.json holds, per run, the median duration of each kernel (mangled
name), grid and block, with every sample.

--compare matches each predicted configuration (perfmodel/static/corpus_predictions.json, written
by `python -m perfmodel.static.corpus --write`) with the measured median of the same kernel, grid
and block, and prints the absolute percentage error per run and over all configurations;
--write records the comparison (perfmodel/static/corpus_measured.json) and rewrites
docs/validation.md's section on the corpus.

Only this module's --measure part may run where the project is not installed: everything above
main()'s --measure branch uses the standard library, and the project is imported where needed.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BUNDLE_FILE = "bundle.json"
SCRIPT = "measure.py"
NCU_METRIC = "gpu__time_duration.sum"
LAUNCHES_PER_CONFIGURATION = 5
COMPILE_TIMEOUT_S = 600
RUN_TIMEOUT_S = 90  # one program run under ncu (its own host work included: llm.c's CPU references)
GRACE_S = 20  # for ncu to print what it profiled once the program it runs is stopped
DEADLINE_S = 450  # the whole --measure, compile included: 7.5 of the 8 minutes one GPU call allows
LIBRARIES = ["-lcublas", "-lcublasLt", "-lcurand", "-lcufft", "-lcusparse"]
RDC_NEEDED = ("separate compilation mode", "relocatable device code")
# documentation and build files of a program's folder, not copied into the bundle
_DOCUMENTATION = re.compile(r"(?i)\.(pdf|docx?|vsd|pptx?|md|txt\.in|sln|vcxproj(\.filters)?|cmake)$|^(CMakeLists\.txt|Makefile|NsightEclipse\.xml)$")
_UNITS_NS = {"ns": 1.0, "nsecond": 1.0, "nanosecond": 1.0, "us": 1e3, "usecond": 1e3, "microsecond": 1e3,
             "ms": 1e6, "msecond": 1e6, "millisecond": 1e6, "s": 1e9, "second": 1e9}


class MeasureError(Exception):
    """Bad input to a step (a missing bundle, a file that is not what it should be): one line."""


# ---------------------------------------------------------------------------------------------
# --measure: the GPU machine (standard library only)
# ---------------------------------------------------------------------------------------------
def parse_ncu_csv(text: str, metric: str = NCU_METRIC) -> list[dict]:
    """The launches of an `ncu --csv --page details` output (application output before and
    between the table lines is skipped): [{"id", "kernel", "grid", "block", "value"}] for the
    rows of METRIC, value in ns when its unit is a time (else as printed, thousands separators
    removed). One line of error for a table without the columns this needs."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(line for line in lines[start:] if line.startswith('"')))))
    header = rows[0]
    need = ["ID", "Kernel Name", "Block Size", "Grid Size", "Metric Name", "Metric Unit", "Metric Value"]
    missing = [name for name in need if name not in header]
    if missing:
        raise MeasureError(f"ncu CSV: no {', '.join(missing)} column (expected the details page of ncu --csv)")
    col = {name: header.index(name) for name in need}
    out = []
    for row in rows[1:]:
        if len(row) <= max(col.values()) or row[col["Metric Name"]] != metric or row == header:
            continue
        raw = row[col["Metric Value"]].replace(",", "")
        try:
            value = float(raw)
        except ValueError:
            continue  # "n/a": not collected for this launch
        unit = row[col["Metric Unit"]].strip().lower()
        out.append({"id": int(row[col["ID"]]), "kernel": row[col["Kernel Name"]], "grid": _dims(row[col["Grid Size"]]),
                    "block": _dims(row[col["Block Size"]]), "value": value * _UNITS_NS.get(unit, 1.0)})
    return out


def _dims(text: str) -> list[int]:
    """ncu's "(256, 1, 1)" -> [256, 1, 1]."""
    numbers = [int(x) for x in re.findall(r"\d+", text)]
    return (numbers + [1, 1, 1])[:3]


def medians(launches: list[dict]) -> list[dict]:
    """Per kernel, grid and block (in order of first launch): every sample and the median."""
    groups: dict[tuple, list[float]] = {}
    for launch in launches:
        groups.setdefault((launch["kernel"], tuple(launch["grid"]), tuple(launch["block"])), []).append(launch["value"])
    return [{"kernel": kernel, "grid": list(grid), "block": list(block), "samples_ns": samples,
             "median_ns": statistics.median(samples)} for (kernel, grid, block), samples in groups.items()]


def find_tool(name: str) -> str:
    """NAME on PATH, else in /usr/local/cuda/bin (where a CUDA toolkit puts nvcc and ncu)."""
    found = shutil.which(name) or next((str(p) for p in (Path("/usr/local/cuda/bin") / name,) if p.is_file()), None)
    if not found:
        raise MeasureError(f"{name} not found on PATH or in /usr/local/cuda/bin")
    return found


def ncu_command(ncu: str, executable: str, args: list[str], kernel: str | None = None,
                count: int = LAUNCHES_PER_CONFIGURATION) -> list[str]:
    """The ncu command line of one run (or of its second pass for one kernel's mangled name)."""
    cmd = [ncu, "--metrics", NCU_METRIC, "--csv", "--page", "details", "--print-units", "base", "--print-kernel-base",
           "mangled", "--cache-control", "all", "--clock-control", "none", "--target-processes", "all",
           "--filter-mode", "per-launch-config", "--launch-count", str(count)]
    if kernel is not None:
        cmd += ["--kernel-name-base", "mangled", "--kernel-name", f"regex:^{re.escape(kernel)}$"]
    return [*cmd, executable, *args]


def compile_program(nvcc: str, bundle: Path, program: dict, out: Path) -> tuple[bool, str, float]:
    """Build one program for sm_90 as its own build would: (built, last lines of the log, seconds)."""
    folder = bundle / program["folder"]
    cmd = [nvcc, "-O3", "-std=c++17", "-arch=sm_90", *(["-Xcompiler", "-fopenmp"] if program.get("openmp") else []),
           *[f"-I{bundle / inc}" for inc in program["include"]], str(bundle / program["source"]), "-o", str(out), *LIBRARIES]
    start = time.monotonic()
    log = ""
    for attempt in (cmd, [*cmd[:-len(LIBRARIES)], "-rdc=true", *LIBRARIES, "-lcudadevrt"]):
        try:
            p = subprocess.run(attempt, cwd=folder, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return False, f"nvcc took longer than {COMPILE_TIMEOUT_S} s", time.monotonic() - start
        log = (p.stderr + p.stdout).strip()
        if p.returncode == 0:
            return True, "", time.monotonic() - start
        if not any(text in log for text in RDC_NEEDED):  # only a device-side launch asks for -rdc=true
            break
    return False, " | ".join(log.splitlines()[-3:])[:600], time.monotonic() - start


def _group_members(group: int) -> list[int]:
    """The processes of a process group but its leader (Linux /proc)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == group:
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after "(comm)": state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(group):
            members.append(int(entry))
    return members


def _run(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> tuple[str, str]:
    """(stdout, problem): problem is "" when the command finished, else why it did not. A run
    past its time has the program ncu runs stopped first (SIGTERM to every process of its
    group but ncu), so that ncu prints what it profiled until then; whatever is left after
    GRACE_S is killed with the whole group (a program left behind would hold the GPU)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for pid in _group_members(p.pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        try:
            out, _ = p.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)  # anything the program left running
        return out or "", f"stopped after {timeout:g} s"
    problem = "" if p.returncode == 0 else f"exit status {p.returncode}: {' | '.join((err or out).strip().splitlines()[-2:])[:300]}"
    return out, problem


def measure_run(ncu: str, bundle: Path, program: dict, run: dict, executable: Path, timeout: float,
                env: dict[str, str]) -> dict:
    """One run under ncu (and a second pass for predicted kernels it did not profile)."""
    start = time.monotonic()
    folder = bundle / program["folder"]
    stdout, problem = _run(ncu_command(ncu, str(executable), run["args"]), folder, timeout, env)
    try:
        launches = parse_ncu_csv(stdout)
    except MeasureError as exc:
        launches, problem = [], str(exc)
    seen = {launch["kernel"] for launch in launches}
    for kernel in sorted({e["kernel"] for e in run.get("expect", []) if e.get("kernel")} - seen):
        left = timeout - (time.monotonic() - start)
        if left < 5:
            break
        more, _ = _run(ncu_command(ncu, str(executable), run["args"], kernel), folder, left, env)
        try:
            launches += [launch for launch in parse_ncu_csv(more) if launch["kernel"] == kernel]
        except MeasureError:
            continue
    # the program's own failure after its launches (a result check) still leaves their timings
    status = "measured" if launches else "failed"
    return {"status": status, "seconds": round(time.monotonic() - start, 1), "problem": problem,
            "kernels": medians(launches)}


def gpu_names() -> list[str]:
    """The GPUs nvidia-smi lists (one worker each), [] when it cannot tell."""
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split(":", 1)[1].split("(UUID")[0].strip() for line in p.stdout.splitlines() if line.startswith("GPU ")]


def measure(bundle: Path, out: Path, deadline_s: float = DEADLINE_S, run_timeout_s: float = RUN_TIMEOUT_S,
            only: list[str] | None = None, resume: bool = False, jobs: int | None = None) -> dict:
    """Compile every program of the bundle (all cores), then time its runs under ncu, one GPU
    per worker, until the deadline; write and return times.json."""
    manifest_path = bundle / BUNDLE_FILE
    if not manifest_path.is_file():
        raise MeasureError(f"{bundle}: no {BUNDLE_FILE} (make the bundle with --bundle)")
    manifest = json.loads(manifest_path.read_text())
    nvcc, ncu = find_tool("nvcc"), find_tool("ncu")
    begin = time.monotonic()
    done = json.loads(out.read_text())["runs"] if resume and out.is_file() else {}
    todo = [(program, run) for program in manifest["programs"] for run in program["runs"]
            if (not only or run["id"] in only) and done.get(run["id"], {}).get("status") != "measured"]
    # runs never tried before those that failed (a failure is often a run that hits its time limit again)
    todo.sort(key=lambda entry: done.get(entry[1]["id"], {}).get("status") in ("failed", "compile failed"))
    programs = {id(program): program for program, _ in todo}
    # the executables go to a scratch folder, not beside times.json (which is carried back)
    build = Path(tempfile.mkdtemp(prefix="corpus-build-"))
    gpus = gpu_names() or ["GPU"]
    results: dict[str, dict] = dict(done)
    lock = threading.Lock()

    def save() -> None:
        doc = {"tool": "ncu " + " ".join(ncu_command("ncu", "PROGRAM", [])[1:-1]), "gpus": gpus,
               "seconds": round(time.monotonic() - begin, 1), "runs": results}
        out.write_text(json.dumps(doc, indent=1) + "\n")

    # every core but two compiles; the two are for the program being timed (llm.c's CPU references)
    with ThreadPoolExecutor(jobs or max(1, (os.cpu_count() or 4) - 2)) as compilers:
        builds = {key: compilers.submit(compile_program, nvcc, bundle, program, build / f"program{index}")
                  for index, (key, program) in enumerate(programs.items())}
        queue = list(todo)

        def worker(device: int) -> None:
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(device))
            while True:
                with lock:
                    if not queue:
                        return
                    program, run = queue.pop(0)
                built, log, seconds = builds[id(program)].result()
                left = deadline_s - (time.monotonic() - begin)
                if not built:
                    result = {"status": "compile failed", "seconds": round(seconds, 1), "problem": log, "kernels": []}
                elif left < 10:
                    result = {"status": "skipped", "seconds": 0.0, "problem": f"the {deadline_s:g} s deadline passed",
                              "kernels": []}
                else:
                    index = list(programs).index(id(program))
                    result = measure_run(ncu, bundle, program, run, build / f"program{index}", min(run_timeout_s, left), env)
                with lock:
                    results[run["id"]] = result
                    save()
                print(f"{run['id']}: {result['status']} ({result['seconds']} s, {len(result['kernels'])} configurations)"
                      f"{': ' + result['problem'] if result['problem'] else ''}", flush=True)

        threads = [threading.Thread(target=worker, args=(device,)) for device in range(len(gpus))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    with lock:
        save()
    shutil.rmtree(build, ignore_errors=True)
    return json.loads(out.read_text())


# ---------------------------------------------------------------------------------------------
# --bundle and --compare: this machine (the project installed)
# ---------------------------------------------------------------------------------------------
def included_files(source: Path, include_dirs: list[Path], inside: Path) -> list[Path]:
    """The files SOURCE includes, transitively, that lie under INSIDE (its repository): each
    #include resolved against the including file's folder (quoted form) and the -I folders."""
    from perfmodel.static.launches import include_closure

    return sorted({path for path, _ in include_closure(source, include_dirs, angled=True, inside=inside)} - {source.resolve()})


def data_files(folder: Path) -> list[Path]:
    """The files of a program's folder a run may read (its data), documentation left out."""
    out = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or path.is_symlink() or any(part.startswith(".") or part == "doc" for part in rel.parts):
            continue
        if not _DOCUMENTATION.search(path.name):
            out.append(path)
    return out


def bundle(out: Path, root: Path, manifest: dict | None = None, predictions: dict | None = None) -> dict:
    """Copy what each predicted corpus program needs into OUT (see the module docstring);
    returns bundle.json's content, with its "bytes"."""
    from perfmodel.static import corpus
    from perfmodel.static.launches import uses_openmp

    manifest = manifest or corpus.load()
    predictions = corpus.load_predictions() if predictions is None else predictions
    if out.exists() and any(out.iterdir()):
        raise MeasureError(f"{out}: not empty (the bundle goes into a new folder)")
    programs: dict[tuple[str, str], dict] = {}
    copied: set[Path] = set()
    for entry in manifest["program"]:
        if entry.get("status") not in ("predicts", "partial") or not predictions.get(entry["id"]):
            continue
        repo = manifest["repos"][entry["repo"]]
        top = (root / repo["folder"]).resolve()
        source = top / entry["path"]
        if not source.is_file():
            raise MeasureError(f"{source}: no such file (check out {entry['repo']} at {repo['commit']} into {top})")
        includes = [top / inc for inc in entry.get("include", []) if inc != corpus.LIBRARY_HEADERS]
        key = (entry["repo"], entry["path"])
        if key not in programs:
            for path in [source, *included_files(source, includes, top), *data_files(source.parent)]:
                target = out / repo["folder"] / path.relative_to(top)
                if target not in copied:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
                    copied.add(target)
            programs[key] = {"source": f"{repo['folder']}/{entry['path']}",
                             "folder": f"{repo['folder']}/{Path(entry['path']).parent}",
                             "include": [f"{repo['folder']}/{inc}" for inc in entry.get("include", [])
                                         if inc != corpus.LIBRARY_HEADERS],
                             "openmp": uses_openmp(source), "runs": []}
        expect = [{"kernel": p["kernel"], "grid": p["grid"], "block": p["block"]}
                  for p in predictions[entry["id"]] if p.get("predicted_ns") is not None and not p.get("launched_by")]
        programs[key]["runs"].append({"id": entry["id"], "args": entry.get("args", []), "expect": expect})
    shutil.copyfile(Path(__file__), out / SCRIPT)
    doc = {"made_by": "python -m perfmodel.static.measure --bundle", "repos": manifest["repos"],
           "programs": list(programs.values())}
    (out / BUNDLE_FILE).write_text(json.dumps(doc, indent=1) + "\n")
    doc["bytes"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return doc


def compare(times: dict, predictions: dict[str, list[dict]]) -> dict:
    """Each predicted configuration with its measured median (same mangled kernel, grid and
    block): {"runs": {id: {"matched", "unmeasured", "median_ape", "configurations": [...]}},
    "overall": {"configurations", "median_ape", "p90_ape", "median_signed", ...}}."""
    runs_out: dict[str, dict] = {}
    errors: list[float] = []
    signed: list[float] = []
    for run_id, measured in sorted(times.get("runs", {}).items()):
        predicted = [p for p in predictions.get(run_id, []) if p.get("predicted_ns") is not None]
        by_key = {(k["kernel"], tuple(k["grid"]), tuple(k["block"])): k for k in measured.get("kernels", [])}
        rows = []
        for p in predicted:
            hit = by_key.get((p["kernel"], tuple(p["grid"]), tuple(p["block"])))
            if hit is None:
                continue
            error = (p["predicted_ns"] - hit["median_ns"]) / hit["median_ns"]
            rows.append({"name": p["name"], "grid": p["grid"], "block": p["block"], "predicted_ns": p["predicted_ns"],
                         "measured_ns": hit["median_ns"], "samples": len(hit["samples_ns"]), "ape": abs(error),
                         "signed": error, **({"launched_by": p["launched_by"]} if p.get("launched_by") else {})})
            errors.append(abs(error))
            signed.append(error)
        runs_out[run_id] = {"status": measured.get("status"), "predicted": len(predicted), "matched": len(rows),
                            "median_ape": statistics.median([r["ape"] for r in rows]) if rows else None,
                            "problem": measured.get("problem", ""), "configurations": rows}
    ranked = sorted(errors)
    overall = {"runs_measured": sum(1 for r in runs_out.values() if r["matched"]), "runs": len(runs_out),
               "configurations": len(errors),
               "predicted": sum(r["predicted"] for r in runs_out.values()),
               "median_ape": statistics.median(errors) if errors else None,
               "p90_ape": ranked[min(len(ranked) - 1, int(0.9 * len(ranked)))] if ranked else None,
               "median_signed": statistics.median(signed) if signed else None,
               "gpus": times.get("gpus", []), "tool": times.get("tool", "")}
    return {"overall": overall, "runs": runs_out}


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def report(comparison: dict) -> list[str]:
    """Text lines: per run its matched configurations and median APE, then the overall figure."""
    lines = []
    for run_id, r in comparison["runs"].items():
        lines.append(f"{run_id}: {r['matched']}/{r['predicted']} configurations measured, median APE "
                     f"{_percent(r['median_ape'])}{' (' + r['problem'] + ')' if r['problem'] and not r['matched'] else ''}")
    o = comparison["overall"]
    lines.append(f"overall: {o['configurations']} of {o['predicted']} predicted configurations measured in "
                 f"{o['runs_measured']} runs: median APE {_percent(o['median_ape'])}, p90 {_percent(o['p90_ape'])}, "
                 f"median signed error {_percent(o['median_signed'])}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfmodel.static.measure", description=__doc__.split("\n\n")[0])
    step = parser.add_mutually_exclusive_group(required=True)
    step.add_argument("--bundle", type=Path, metavar="OUT_DIR", help="copy the predicted programs' files into OUT_DIR")
    step.add_argument("--measure", type=Path, metavar="BUNDLE", help="on the GPU machine: build and time every run")
    step.add_argument("--compare", type=Path, metavar="TIMES", help="compare times.json with the predictions")
    parser.add_argument("--root", type=Path, help="--bundle: folder holding each repository (as for perfmodel.static.corpus)")
    parser.add_argument("--out", type=Path, help="--measure: the times.json to write")
    parser.add_argument("--deadline", type=float, default=DEADLINE_S, help="--measure: seconds for the whole measurement")
    parser.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT_S, help="--measure: seconds per run")
    parser.add_argument("--only", nargs="*", default=[], help="--measure: run ids to time (default: all)")
    parser.add_argument("--resume", action="store_true", help="--measure: keep the runs --out already has measured")
    parser.add_argument("--write", action="store_true", help="--compare: record it and rewrite docs/validation.md's section")
    args = parser.parse_args(argv)
    try:
        if args.measure:
            if args.out is None:
                raise MeasureError("--measure needs --out times.json")
            doc = measure(args.measure, args.out, args.deadline, args.run_timeout, args.only, args.resume)
            measured = sum(1 for r in doc["runs"].values() if r["status"] == "measured")
            print(f"{measured} of {len(doc['runs'])} runs measured in {doc['seconds']} s -> {args.out}")
            return 0
        if args.bundle:
            if args.root is None:
                raise MeasureError("--bundle needs --root (the folder holding the checked-out repositories)")
            doc = bundle(args.bundle, args.root)
            runs = sum(len(p["runs"]) for p in doc["programs"])
            print(f"{args.bundle}: {len(doc['programs'])} programs, {runs} runs, {doc['bytes'] / 2**20:.1f} MiB")
            return 0
        try:
            times = json.loads(args.compare.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise MeasureError(f"{args.compare}: not a times.json of --measure ({exc})") from None
        if not isinstance(times, dict) or not isinstance(times.get("runs"), dict):
            raise MeasureError(f"{args.compare}: not a times.json of --measure (no \"runs\" object)")
        from perfmodel.static import corpus

        comparison = compare(times, corpus.load_predictions())
        print("\n".join(report(comparison)))
        if args.write:
            corpus.MEASURED.write_text(json.dumps(comparison, indent=1) + "\n")
            corpus.write_section()
            print(f"recorded in {corpus.MEASURED} and {corpus.VALIDATION_DOC}")
        return 0
    except MeasureError as exc:
        sys.stderr.write(f"measure: error: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
