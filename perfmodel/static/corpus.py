"""The open-source program corpus of `perfmodel predict SOURCE.cu` (issue 22): CUDA programs
written by others, predicted as they are published, with no flags but -I and the program's
arguments.

The manifest (perfmodel/static/corpus.toml) names each program's repository, commit, license
and path, the -I folders (relative to the repository) and arguments it is run with, and the
result of the last run here: "predicts" (every kernel configuration discovered is predicted),
"partial" (some are), or "fails", with the reason (perfmodel's one-line error). The programs'
code is not in this repository: `fetch` or clone each repository at its commit into one folder
(ROOT/<repository name>) and run

    python -m perfmodel.static.corpus --root ROOT [--library-headers DIR] [--only ID ...] [--write]

--library-headers names a folder holding the CUDA library headers (cublas_v2.h, cufft.h, ...)
where neither the CUDA toolkit nor the PyPI wheels provide them (it is passed as one more -I,
where the manifest says "@library-headers"). Every run predicts for the measurement it is compared
with (--context isolated-clean: Nsight Compute's duration after its clean cache flush). --write
records the results in the manifest, each run's predicted configurations in
corpus_predictions.json (what perfmodel/static/measure.py compares with the H100 timings) and
rewrites docs/validation.md's section on the corpus (:func:`section`). Discovered configurations
are the host's launches; kernels launched from the device (dynamic parallelism) are counted
apart and never make a run fail.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from perfmodel.hardware import reference_gpu_id

MANIFEST = Path(__file__).with_name("corpus.toml")
# each run's predicted configurations (kernel, grid, block, predicted_ns), written with the manifest
PREDICTIONS = Path(__file__).with_name("corpus_predictions.json")
# the H100 timings compared with them (perfmodel/static/measure.py --compare --write)
MEASURED = Path(__file__).with_name("corpus_measured.json")
VALIDATION_DOC = Path(__file__).resolve().parents[2] / "docs" / "validation.md"
SECTION_TITLE = "## Open-source CUDA programs, predicted from source"
# The measurement the predictions are for: Nsight Compute's duration of one launch after its
# clean cache flush (ncu --cache-control all), at default clocks: what measure.py records
CONTEXT = "ncu"
LIBRARY_HEADERS = "@library-headers"
TIMEOUT_S = 1800  # wall time of one run on a 2-core machine shared with other work: the tensor-core GEMM samples interpret persistent kernels for minutes
RESULT_KEYS = ("status", "configurations", "predicted", "lower_bounds", "library_calls", "device_configurations",
               "device_predicted", "seconds", "reason")
HEADER = """\
# The open-source program corpus of `perfmodel predict SOURCE.cu` (issue 22); perfmodel/static/corpus.py
# runs it and rewrites this file (--write). Per program: id, repo (a [repos] key), path in the repository,
# include (-I folders relative to the repository; "@library-headers": the CUDA library headers), args
# (the program's arguments), then the last run's result: status (predicts | partial | fails),
# configurations the host launches, predicted, lower_bounds, library_calls (library functions that
# launch kernels), device_configurations and device_predicted (kernels launched from the device),
# seconds (compile, discovery and interpretation, wall time on this project's 2-core machine shared
# with other work) and reason. Each run's predicted configurations are in corpus_predictions.json.
# The programs' code is not in this repository."""


def load(path: Path = MANIFEST) -> dict:
    return tomllib.loads(path.read_text())


def command(entry: dict, repos: dict[str, dict], root: Path, library_headers: Path | None, gpu: str | None = None) -> list[str]:
    """The `perfmodel predict` command line of one corpus entry."""
    repo = root / repos[entry["repo"]]["folder"]
    cmd = ["perfmodel", "predict", str(repo / entry["path"]), "--gpu", gpu or reference_gpu_id(), "--context", CONTEXT]
    for inc in entry.get("include", []):
        if inc == LIBRARY_HEADERS:
            if library_headers is not None:
                cmd += ["-I", str(library_headers)]
            continue
        cmd += ["-I", str(repo / inc)]
    if entry.get("args"):
        cmd += ["--", *entry["args"]]
    return cmd


def _failed(seconds: float, reason: str) -> dict:
    return {"status": "fails", "configurations": 0, "predicted": 0, "lower_bounds": 0, "library_calls": 0,
            "device_configurations": 0, "device_predicted": 0, "seconds": seconds, "reason": reason}


def run(entry: dict, repos: dict[str, dict], root: Path, library_headers: Path | None, gpu: str | None = None) -> dict:
    """Predict one entry (perfmodel predict --format json in a subprocess): its result fields."""
    cmd = command(entry, repos, root, library_headers, gpu)
    exe = str(Path(sys.executable).with_name("perfmodel"))
    start = time.perf_counter()
    try:
        args = cmd[1:]
        at = args.index("--") if "--" in args else len(args)
        p = subprocess.run([exe, *args[:at], "--format", "json", *args[at:]], check=False, capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return _failed(round(time.perf_counter() - start, 1), f"took longer than {TIMEOUT_S} s")
    seconds = round(time.perf_counter() - start, 1)
    if p.returncode != 0:
        line = (p.stderr.strip().splitlines() or ["(no message)"])[-1].removeprefix("perfmodel: error: ")
        return _failed(seconds, line.replace(str(root) + "/", ""))
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return _failed(seconds, f"no JSON from perfmodel predict: {tail}")
    # configurations the host launches; kernels launched from the device (dynamic parallelism)
    # are counted apart: predicted where the interpreter could, never a reason to fail the run
    kernels = [k for k in doc["kernels"] if not k.get("library") and not k.get("launched_by")]
    device = [k for k in doc["kernels"] if k.get("launched_by")]
    predicted = [k for k in kernels if k.get("predicted_ns") is not None]
    errors = [k["error"].replace(str(root) + "/", "") for k in kernels if k.get("predicted_ns") is None]
    bounds = [k for k in predicted if k.get("lower_bound")]
    notes = [f"lower bound: {'; '.join(k.get('not_counted') or k.get('missing_counts') or ['missing work'])}" for k in bounds]
    device_predicted = sum(1 for k in device if k.get("predicted_ns") is not None)
    if device:
        notes.append(f"device-side launches: {device_predicted} of {len(device)} configurations predicted (one level is "
                     "interpreted; deeper ones are listed)")
    # what the H100 measurement is compared with (perfmodel/static/measure.py): every configuration's prediction
    configurations = [{"kernel": k.get("kernel", ""), "name": k["name"], "grid": k.get("grid"), "block": k.get("block"),
                       "launches": k.get("launches", 1), "predicted_ns": k.get("predicted_ns"),
                       **({"launched_by": k["launched_by"]} if k.get("launched_by") else {})}
                      for k in [*kernels, *device] if k.get("grid")]
    return {"status": "predicts" if len(predicted) == len(kernels) else "partial", "configurations": len(kernels),
            "predicted": len(predicted), "lower_bounds": len(bounds),
            "library_calls": sum(1 for k in doc["kernels"] if k.get("library")),
            "device_configurations": len(device), "device_predicted": device_predicted,
            "seconds": seconds, "reason": (errors or notes or [""])[0], "predictions": configurations}


def load_predictions(path: Path = PREDICTIONS) -> dict[str, list[dict]]:
    """Run id -> its predicted configurations ({"kernel" (mangled), "name", "grid", "block",
    "launches", "predicted_ns", ["launched_by"]}), as the last --write recorded them."""
    return json.loads(path.read_text()) if path.is_file() else {}


def _toml_value(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string is a JSON string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def dump(manifest: dict) -> str:
    """The manifest as TOML (HEADER, [repos.*] tables, then [[program]] entries)."""
    lines = HEADER.splitlines()
    for name, repo in manifest["repos"].items():
        lines += ["", f"[repos.{json.dumps(name)}]", *(f"{k} = {_toml_value(v)}" for k, v in repo.items())]
    for entry in manifest["program"]:
        lines += ["", "[[program]]", *(f"{k} = {_toml_value(v)}" for k, v in entry.items())]
    return "\n".join(lines) + "\n"


def summary(manifest: dict) -> dict:
    entries = manifest["program"]
    counts = {s: sum(1 for e in entries if e.get("status") == s) for s in ("predicts", "partial", "fails")}
    predicted_programs = {(e["repo"], e["path"]) for e in entries if e.get("status") in ("predicts", "partial")}
    return {"runs": len(entries), "programs": len({(e["repo"], e["path"]) for e in entries}),
            "programs_predicted": len(predicted_programs), **counts,
            "configurations": sum(e.get("configurations", 0) for e in entries),
            "predicted": sum(e.get("predicted", 0) for e in entries),
            "lower_bounds": sum(e.get("lower_bounds", 0) for e in entries)}


def load_measured(path: Path = MEASURED) -> dict | None:
    """The last --compare --write of perfmodel/static/measure.py, if any."""
    return json.loads(path.read_text()) if path.is_file() else None


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def section(manifest: dict | None = None, measured: dict | None = None) -> list[str]:
    """docs/validation.md's section on the program corpus (with the H100 comparison of
    perfmodel/static/measure.py when one was recorded)."""
    manifest = manifest or load()
    measured = measured if measured is not None else load_measured()
    s = summary(manifest)
    ran = s["predicts"] + s["partial"]
    device = sum(e.get("device_configurations", 0) for e in manifest["program"])
    device_predicted = sum(e.get("device_predicted", 0) for e in manifest["program"])
    runs = (measured or {}).get("runs", {})
    if measured:
        o = measured["overall"]
        rows = [c for r in runs.values() for c in r.get("configurations", [])]
        long = [c for c in rows if c["measured_ns"] >= 5000]
        floor = min((c["measured_ns"] for c in rows), default=None)
        error = (f"Against the H100 ({', '.join(o['gpus']) or 'GPU'}; Nsight Compute's gpu__time_duration of up to "
                 f"5 launches per configuration after a clean cache flush, default clocks: `{o['tool']}`): "
                 f"{o['configurations']} of the {o['predicted']} predicted configurations were measured, in "
                 f"{o['runs_measured']} of {o['runs']} runs; median APE {_percent(o['median_ape'])}, p90 "
                 f"{_percent(o['p90_ape'])}, median signed error {_percent(o['median_signed'])} (per run in the table)"
                 + (f"; on the {len(long)} configurations of 5 us and more: median APE "
                    f"{_percent(statistics.median(c['ape'] for c in long))}, median signed error "
                    f"{_percent(statistics.median(c['signed'] for c in long))}" if long else "")
                 + (f". The shortest measured kernel took {floor:,.0f} ns under ncu; the predictions are for that "
                    "measurement (the ncu context: kernel_fixed_ns + ncu_overhead_ns for an empty kernel). Kernels "
                    "that spin on %clock or wait for the host are not modelled" if floor is not None else "")
                 + ".")
    else:
        error = ("No H100 timings of these programs are recorded yet, so no error is given: "
                 "perfmodel/static/measure.py makes them (below).")
    lines = [
        SECTION_TITLE, "",
        (f"`perfmodel predict PROGRAM.cu --gpu h100 --context {CONTEXT}` on {s['programs']} programs written by others "
         f"({s['runs']} runs: some programs run once per kernel version their arguments select), as published, with no "
         "flags but -I and the program's arguments (perfmodel/static/corpus.toml: repository, commit, license, command; "
         "`python -m perfmodel.static.corpus` reruns it; the context names the measurement the prediction is for). "
         "Selection: every single-file program of NVIDIA/cuda-samples that needs one GPU and no graphics, MPI or second "
         "process, and llm.c's dev/cuda kernel benchmarks, once with no argument and once per other kernel version "
         "their default build accepts."), "",
        (f"Programs with at least one run predicted: {s['programs_predicted']} of {s['programs']}."), "",
        (f"Predicted: {ran} of {s['runs']} runs ({100 * ran / s['runs']:.0f}%): {s['predicts']} with every kernel "
         f"configuration predicted ({100 * s['predicts'] / s['runs']:.0f}%), {s['partial']} with some; "
         f"{s['predicted']} of the {s['configurations']} kernel configurations the host launches "
         f"({s['lower_bounds']} of them lower bounds: work the interpretation cannot count, named in the reason column)"
         + (f", and {device_predicted} of the {device} configurations launched from the device (dynamic parallelism: "
            "one level interpreted, deeper ones listed)" if device else "") + ". " + error), "",
        "| program | repository | args | result | configurations | seconds | H100 APE | reason |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in manifest["program"]:
        reason = e.get("reason", "").replace("|", "\\|")
        m = runs.get(e["id"])
        ape = f"{_percent(m['median_ape'])} ({m['matched']})" if m and m.get("matched") else "-"
        lines.append(f"| {e['id']} | {e['repo']} | {' '.join(e.get('args', [])) or '-'} | {e.get('status', 'not run')} | "
                     f"{e.get('predicted', 0)}/{e.get('configurations', 0)} | {e.get('seconds', '')} | {ape} | {reason[:300]} |")
    lines += ["", "Repositories:", ""]
    for name, repo in manifest["repos"].items():
        lines.append(f"- {name}: commit {repo['commit']}, {repo['license']}")
    lines += ["", ("The H100 timings (perfmodel/static/measure.py): `python -m perfmodel.static.measure --bundle BUNDLE "
                   "--root ROOT` copies what each predicted program needs to build and run (its source, the headers it "
                   "includes, its data files) with a copy of the script; on the GPU machine, `python3 BUNDLE/measure.py "
                   "--measure BUNDLE --out times.json` (standard library only) builds each program for sm_90 and runs it "
                   "under `ncu --metrics gpu__time_duration.sum --cache-control all --clock-control none --filter-mode "
                   "per-launch-config --launch-count 5`; `python -m perfmodel.static.measure --compare times.json --write` "
                   "matches each predicted configuration (kernel, grid, block) with its median and rewrites this section. "
                   "The column H100 APE is a run's median APE (configurations matched)."), ""]
    return lines


def write_section(path: Path = VALIDATION_DOC, manifest: dict | None = None) -> None:
    """Replace docs/validation.md's section on the corpus (its last: everything from its title
    on) with section(), as `perfmodel validate --format markdown` would write it."""
    text = path.read_text()
    at = text.find(SECTION_TITLE)
    if at < 0:
        raise ValueError(f"{path}: no section {SECTION_TITLE!r}")
    path.write_text(text[:at] + "\n".join(section(manifest)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfmodel.static.corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="folder holding each repository (ROOT/<folder>)")
    parser.add_argument("--library-headers", type=Path, help="folder with CUDA library headers, where \"@library-headers\" is asked")
    parser.add_argument("--only", nargs="*", default=[], help="entry ids to run (default: all)")
    parser.add_argument("--gpu", default=None, help="target GPU id (default: the reference GPU of the hardware files)")
    parser.add_argument("--write", action="store_true", help="record the results in the manifest, the predictions in "
                        "corpus_predictions.json and docs/validation.md's section")
    parser.add_argument("--resume", action="store_true", help="only the entries with no result yet")
    parser.add_argument("--shard", default="1/1", help="K/N: run every N-th entry from the K-th (runs of one manifest "
                        "in N processes: --write merges each result into the files as they are then)")
    args = parser.parse_args(argv)
    try:
        shard, shards = (int(x) for x in args.shard.split("/"))
        if not 1 <= shard <= shards:
            raise ValueError
    except ValueError:
        parser.error(f"--shard {args.shard}: not K/N with 1 <= K <= N")
    manifest = load()
    chosen = [e for e in manifest["program"] if (not args.only or e["id"] in args.only) and not (args.resume and "status" in e)]
    for entry in chosen[shard - 1::shards]:
        result = run(entry, manifest["repos"], args.root, args.library_headers, args.gpu)
        configurations = result.pop("predictions", [])
        for key in RESULT_KEYS:
            entry.pop(key, None)
        entry.update(result)
        print(f"{entry['id']}: {result['status']} {result['predicted']}/{result['configurations']} "
              f"({result['seconds']} s){': ' + result['reason'] if result['reason'] else ''}", flush=True)
        if args.write:
            _record(entry, configurations)
    if args.write:
        with _locked():
            write_section(manifest=load())
    print(json.dumps(summary(load() if args.write else manifest)))
    return 0


@contextlib.contextmanager
def _locked():
    """The manifest's lock: shards of one corpus run write their results one at a time."""
    digest = hashlib.sha256(str(MANIFEST.resolve()).encode()).hexdigest()[:12]  # one lock per manifest
    lock = Path(tempfile.gettempdir()) / f"perfmodel-corpus-{digest}.lock"
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _record(entry: dict, configurations: list[dict]) -> None:
    """Merge one run's result into the manifest and its predictions into PREDICTIONS, as the
    files are now (another shard may have written since this one read them)."""
    with _locked():
        manifest = load()
        for current in manifest["program"]:
            if current["id"] == entry["id"]:
                for key in RESULT_KEYS:
                    current.pop(key, None)
                current.update({k: entry[k] for k in RESULT_KEYS if k in entry})
        MANIFEST.write_text(dump(manifest))
        predictions = load_predictions()
        predictions[entry["id"]] = configurations
        PREDICTIONS.write_text(json.dumps(dict(sorted(predictions.items())), indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
