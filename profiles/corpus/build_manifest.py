"""Merge the corpus captures into profiles/corpus/manifest.json (run on this machine, no GPU).

    python profiles/corpus/build_manifest.py CAPTURE_DIR...

Each CAPTURE_DIR holds what device_capture.sh wrote on one GPU: times_GPU.json and
GPU_partI.{json,ncu-rep.xz}. The reports are copied to profiles/corpus/GPU/, and every kernel
of every profiled case becomes one manifest entry with its identity, its split (from
split.json, fixed before any model or rule work looked at the corpus), its launch
configuration, its CUPTI times on each GPU, and where its report is (file and kernel index).
A report's kernels are matched to the timed kernels by order within each case's NVTX range
and checked by name and launch configuration; a mismatch stops the build.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from keet.diagnosis.libraries import library_of as keet_library_of
from keet.ingest import load_profile
from profiles.corpus.split import split_of

GPUS = ("h100", "h200")


def _grid(value) -> list[int] | None:
    return [int(v) for v in value] if value else None


def _comparable(name: str) -> str:
    """CUPTI and Nsight Compute demangle template arguments differently ("<4," vs "<(int)4,",
    "3ul" vs "(unsigned long)3", parameter types vs T2): compare the qualified name up to the
    template arguments (the launch configuration is compared too)."""
    return re.split(r"[<(]", name, maxsplit=1)[0].strip()


def _check_match(timed: dict, kernel, where: str) -> None:
    if _comparable(timed["name"]) != _comparable(kernel.name):
        raise SystemExit(f"{where}: report kernel {kernel.name[:80]!r} is not the timed {timed['name'][:80]!r}")
    if _grid(timed["grid"]) != list(kernel.grid) or _grid(timed["block"]) != list(kernel.block):
        raise SystemExit(f"{where}: launch differs: timed {timed['grid']}x{timed['block']}, report {kernel.grid}x{kernel.block}")


def _times(kernel: dict) -> dict:
    return {key: kernel[key] for key in ("isolated_ns", "isolated_min_ns", "isolated_max_ns",
                                         "back_to_back_ns", "back_to_back_min_ns", "back_to_back_max_ns")}


def _as_launched(timed: dict, report_name: str | None, entry: dict) -> dict:
    """What this GPU launched where it differs from the entry's first GPU: libraries pick their
    kernel and grid per GPU (cuBLAS heuristics, split counts), so the same call can run another
    configuration on the H200."""
    out = {}
    launch = {"grid": _grid(timed["grid"]), "block": _grid(timed["block"]),
              "registers": timed["registers"], "shared_bytes": timed["shared_bytes"]}
    if launch != entry["launch"]:
        out["launch"] = launch
    if timed["name"] != entry["cupti_name"]:
        out["cupti_name"] = timed["name"]
        if report_name:
            out["name"] = report_name
    return out


def build(capture_dirs: list[Path]) -> dict:
    timings = {}
    for directory in capture_dirs:
        (times_file,) = directory.glob("times_*.json")
        timings[times_file.stem.removeprefix("times_")] = (directory, json.loads(times_file.read_text()))
    # every case timed on every GPU, with its call times
    cases: dict[str, dict] = {}
    for gpu, (_, times) in timings.items():
        for case_id, timed_case in times["cases"].items():
            if "kernels" not in timed_case:
                continue
            case = cases.setdefault(case_id, {"group": timed_case["group"], "family": timed_case["family"],
                                              "notes": timed_case.get("notes", ""), "kernels": len(timed_case["kernels"]),
                                              "measured": {}})
            case["measured"][gpu] = {"call_isolated_event_ns": timed_case["call_isolated_event_ns"],
                                     "call_back_to_back_event_ns": timed_case["call_back_to_back_event_ns"],
                                     "kernels_isolated_ns": sum(k["isolated_ns"] for k in timed_case["kernels"])}
    kernels: dict[str, dict] = {}
    gpus: dict[str, dict] = {}
    for gpu, (directory, times) in timings.items():
        out_dir = HERE / gpu
        out_dir.mkdir(exist_ok=True)
        # every case's per-kernel times, the unprofiled ones too: what the GPU measured is kept
        shutil.copyfile(directory / f"times_{gpu}.json", out_dir / f"times_{gpu}.json")
        reports = []
        for cases_file in sorted(directory.glob(f"{gpu}_part*.json")):
            report = cases_file.with_suffix(".ncu-rep.xz")
            shutil.copyfile(report, out_dir / report.name)
            relative = f"{gpu}/{report.name}"
            reports.append(relative)
            profile = load_profile(report)
            position = 0
            for case_id in json.loads(cases_file.read_text())["profiled"]:
                timed_case = times["cases"][case_id]
                for ordinal, timed in enumerate(timed_case["kernels"]):
                    kernel = profile.kernels[position]
                    _check_match(timed, kernel, f"{relative} kernel {position} ({case_id} #{ordinal})")
                    identity, library = f"{case_id}#{ordinal}", library_of(timed["name"])
                    entry = kernels.setdefault(identity, {
                        "id": identity, "case": case_id, "ordinal": ordinal, "group": timed_case["group"],
                        "family": timed_case["family"], "split": split_of(timed_case["group"]),
                        "name": kernel.name, "cupti_name": timed["name"], "function": kernel.function_name,
                        "library": library, "origin": f"PyTorch {times['device']['torch']} ({library})",
                        "launch": {"grid": _grid(timed["grid"]), "block": _grid(timed["block"]),
                                   "registers": timed["registers"], "shared_bytes": timed["shared_bytes"]},
                        "measured": {}})
                    entry["measured"].setdefault(gpu, _times(timed))
                    entry["measured"][gpu] |= {"report": relative, "report_id": position, "profiled_ns": kernel.duration_ns,
                                               **_as_launched(timed, kernel.name, entry)}
                    position += 1
            if position != len(profile.kernels):
                raise SystemExit(f"{relative}: {len(profile.kernels)} kernels, {position} matched to timed cases")
        version = directory / "ncu_version.txt"
        gpus[gpu] = {**times["device"], "isolated_runs": times["isolated_runs"], "back_to_back_runs": times["back_to_back_runs"],
                     "flush_bytes": times["flush_bytes"], "ncu": version.read_text().strip() if version.exists() else None,
                     "ncu_sections": "full" if gpu == "h100" else "model", "reports": reports,
                     "not_timed": {c: v["error"] for c, v in times["cases"].items() if "error" in v}}
    # a kernel profiled on one GPU takes its times on the other from that GPU's timing of the
    # same case (same kernel by ordinal, checked by name and launch)
    for entry in kernels.values():
        for gpu, (_, times) in timings.items():
            if gpu in entry["measured"]:
                continue
            timed_case = times["cases"].get(entry["case"], {})
            timed = (timed_case.get("kernels") or [])[entry["ordinal"]:entry["ordinal"] + 1]
            if timed and _comparable(timed[0]["name"]) == _comparable(entry["cupti_name"]):
                entry["measured"][gpu] = _times(timed[0]) | _as_launched(timed[0], None, entry)
    # a case timed on one GPU only was dropped from the case table between captures
    cases = {c: v for c, v in cases.items() if v["measured"].keys() == timings.keys()}
    return {"generated_by": "profiles/corpus/build_manifest.py", "gpus": gpus, "cases": cases,
            "kernels": sorted(kernels.values(), key=lambda k: k["id"])}


def library_of(name: str) -> str:
    """The library that made a kernel: keet's classification (keet/data/libraries.toml, the same
    patterns the diagnosis uses); a corpus kernel no pattern matches is the PyTorch build's own
    (ATen)."""
    return keet_library_of(name, default="aten")


def pairs(manifest: dict) -> list[dict]:
    from profiles.corpus.pairs import PAIRS
    out = []
    for pair in PAIRS:
        before, after = manifest["cases"].get(pair["before"]), manifest["cases"].get(pair["after"])
        if not before or not after:
            continue
        row = dict(pair)
        row["speedup"] = {g: before["measured"][g]["kernels_isolated_ns"] / after["measured"][g]["kernels_isolated_ns"]
                          for g in GPUS if g in before["measured"] and g in after["measured"]}
        out.append(row)
    return out


def main() -> int:
    manifest = build([Path(p) for p in sys.argv[1:]])
    manifest["pairs"] = pairs(manifest)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    n = len(manifest["kernels"])
    print(f"{n} kernels, {len(manifest['cases'])} cases, {len(manifest['pairs'])} pairs; "
          f"validation {sum(k['split'] == 'validation' for k in manifest['kernels'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
