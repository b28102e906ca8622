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
where the manifest says "@library-headers"). --write records the results in the manifest.
docs/validation.md's section on it is :func:`section`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from perfmodel.hardware import reference_gpu_id

MANIFEST = Path(__file__).with_name("corpus.toml")
LIBRARY_HEADERS = "@library-headers"
TIMEOUT_S = 600
RESULT_KEYS = ("status", "configurations", "predicted", "lower_bounds", "library_calls", "seconds", "reason")
HEADER = """\
# The open-source program corpus of `perfmodel predict SOURCE.cu` (issue 22); perfmodel/static/corpus.py
# runs it and rewrites this file (--write). Per program: id, repo (a [repos] key), path in the repository,
# include (-I folders relative to the repository; "@library-headers": the CUDA library headers), args
# (the program's arguments), then the last run's result: status (predicts | partial | fails),
# configurations discovered, predicted, library_calls (library functions that launch kernels),
# seconds (compile, discovery and interpretation, on this project's 2-core machine) and reason.
# The programs' code is not in this repository."""


def load(path: Path = MANIFEST) -> dict:
    return tomllib.loads(path.read_text())


def command(entry: dict, repos: dict[str, dict], root: Path, library_headers: Path | None, gpu: str | None = None) -> list[str]:
    """The `perfmodel predict` command line of one corpus entry."""
    repo = root / repos[entry["repo"]]["folder"]
    cmd = ["perfmodel", "predict", str(repo / entry["path"]), "--gpu", gpu or reference_gpu_id()]
    for inc in entry.get("include", []):
        if inc == LIBRARY_HEADERS:
            if library_headers is not None:
                cmd += ["-I", str(library_headers)]
            continue
        cmd += ["-I", str(repo / inc)]
    if entry.get("args"):
        cmd += ["--", *entry["args"]]
    return cmd


def measure_command(entry: dict, repos: dict[str, dict], root: Path, library_headers: Path | None) -> str:
    """The shell commands that would time one entry's kernels on an H100 (CUPTI kernel
    durations through Nsight Systems, default clocks): the program's own build, then its run."""
    repo = root / repos[entry["repo"]]["folder"]
    name = entry["id"].replace("/", "_").replace(" ", "_")
    includes = " ".join(f"-I {repo / inc if inc != LIBRARY_HEADERS else library_headers or '$CUDA_HOME/include'}"
                        for inc in entry.get("include", []))
    args = " ".join(entry.get("args", []))
    return (f"nvcc -O3 -std=c++17 -arch=sm_90a {includes} {repo / entry['path']} -o {name} "
            f"-lcublas -lcublasLt -lcurand -lcufft -lcusparse && "
            f"nsys profile -o {name} --force-overwrite true ./{name} {args} && "
            f"nsys stats --report cuda_gpu_kern_sum --format csv {name}.nsys-rep").replace("  ", " ")


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
        return {"status": "fails", "configurations": 0, "predicted": 0, "lower_bounds": 0, "library_calls": 0,
                "seconds": round(time.perf_counter() - start, 1), "reason": f"took longer than {TIMEOUT_S} s"}
    seconds = round(time.perf_counter() - start, 1)
    if p.returncode != 0:
        line = (p.stderr.strip().splitlines() or ["(no message)"])[-1].removeprefix("perfmodel: error: ")
        return {"status": "fails", "configurations": 0, "predicted": 0, "lower_bounds": 0, "library_calls": 0,
                "seconds": seconds, "reason": line.replace(str(root) + "/", "")}
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"status": "fails", "configurations": 0, "predicted": 0, "lower_bounds": 0, "library_calls": 0,
                "seconds": seconds, "reason": f"no JSON from perfmodel predict: {tail}"}
    kernels = [k for k in doc["kernels"] if not k.get("library")]
    predicted = [k for k in kernels if k.get("predicted_ns") is not None]
    errors = [k["error"].replace(str(root) + "/", "") for k in kernels if k.get("predicted_ns") is None]
    bounds = [k for k in predicted if k.get("lower_bound")]
    notes = [f"lower bound: {'; '.join(k.get('not_counted') or k.get('missing_counts') or ['missing work'])}" for k in bounds]
    return {"status": "predicts" if len(predicted) == len(kernels) else "partial", "configurations": len(kernels),
            "predicted": len(predicted), "lower_bounds": len(bounds),
            "library_calls": sum(1 for k in doc["kernels"] if k.get("library")),
            "seconds": seconds, "reason": (errors or notes or [""])[0]}


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


def section(manifest: dict | None = None) -> list[str]:
    """docs/validation.md's section on the program corpus."""
    manifest = manifest or load()
    s = summary(manifest)
    ran = s["predicts"] + s["partial"]
    lines = [
        "## Open-source CUDA programs, predicted from source", "",
        (f"`perfmodel predict PROGRAM.cu --gpu h100` on {s['programs']} programs written by others ({s['runs']} runs: some "
         "programs run once per kernel version their arguments select), as published, with no flags but -I and the "
         "program's arguments (perfmodel/static/corpus.toml: repository, commit, license, command; "
         "`python -m perfmodel.static.corpus` reruns it). Selection: every single-file program of NVIDIA/cuda-samples "
         "that needs one GPU and no graphics, MPI or second process, and llm.c's dev/cuda kernel benchmarks, once "
         "with no argument and once per other kernel version their default build accepts."), "",
        (f"Programs with at least one run predicted: {s['programs_predicted']} of {s['programs']}."), "",
        (f"Predicted: {ran} of {s['runs']} runs ({100 * ran / s['runs']:.0f}%): {s['predicts']} with every kernel "
         f"configuration predicted, {s['partial']} with some; {s['predicted']} of the {s['configurations']} kernel "
         f"configurations discovered ({s['lower_bounds']} of them lower bounds: work the interpretation cannot count, "
         "named in the reason column). No H100 timings of these programs exist yet (no GPU was lent for this work), so "
         "no error is given: the commands that would measure them are under the table."), "",
        "| program | repository | args | result | configurations | seconds | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in manifest["program"]:
        reason = e.get("reason", "").replace("|", "\\|")
        lines.append(f"| {e['id']} | {e['repo']} | {' '.join(e.get('args', [])) or '-'} | {e.get('status', 'not run')} | "
                     f"{e.get('predicted', 0)}/{e.get('configurations', 0)} | {e.get('seconds', '')} | {reason[:300]} |")
    lines += ["", "Repositories:", ""]
    for name, repo in manifest["repos"].items():
        lines.append(f"- {name}: commit {repo['commit']}, {repo['license']}")
    lines += ["", ("To time them on an H100 (CUPTI kernel durations at default clocks; each timing loop runs its "
                   "kernels back to back, so compare with `--context back-to-back`): "
                   "`python -m perfmodel.static.corpus --root ROOT --measure-commands` prints, per run, the program's "
                   "build (`nvcc -O3 -arch=sm_90a -I ... PROGRAM.cu -lcublas ...`), its run under `nsys profile` and "
                   "`nsys stats --report cuda_gpu_kern_sum`, whose median kernel durations are the measured times."), ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfmodel.static.corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="folder holding each repository (ROOT/<folder>)")
    parser.add_argument("--library-headers", type=Path, help="folder with CUDA library headers, where \"@library-headers\" is asked")
    parser.add_argument("--only", nargs="*", default=[], help="entry ids to run (default: all)")
    parser.add_argument("--gpu", default=None, help="target GPU id (default: the reference GPU of the hardware files)")
    parser.add_argument("--write", action="store_true", help="record the results in the manifest")
    parser.add_argument("--resume", action="store_true", help="only the entries with no result yet")
    parser.add_argument("--measure-commands", action="store_true",
                        help="print the commands that would time each entry on an H100 (build, nsys), run nothing")
    args = parser.parse_args(argv)
    manifest = load()
    if args.measure_commands:
        for entry in manifest["program"]:
            if not args.only or entry["id"] in args.only:
                print(measure_command(entry, manifest["repos"], args.root, args.library_headers))
        return 0
    for entry in manifest["program"]:
        if (args.only and entry["id"] not in args.only) or (args.resume and "status" in entry):
            continue
        result = run(entry, manifest["repos"], args.root, args.library_headers, args.gpu)
        for key in RESULT_KEYS:
            entry.pop(key, None)
        entry.update(result)
        print(f"{entry['id']}: {result['status']} {result['predicted']}/{result['configurations']} "
              f"({result['seconds']} s){': ' + result['reason'] if result['reason'] else ''}", flush=True)
        if args.write:
            MANIFEST.write_text(dump(manifest))
    print(json.dumps(summary(manifest)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
