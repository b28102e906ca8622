"""Merge zoo.toml (intent) with each GPU's capture (measurements) into manifest.json.

    python profiles/build_manifest.py          # writes profiles/manifest.json

manifest.json is the zoo's ground truth for the rules, the model and the reports: one
entry per kernel with its source, launch, intended category, ptxas resources and, per GPU,
the CUDA-event timing (median of 25 cold-L2 runs at default clocks), the clocks around it,
the per-program Nsight Compute report and the kernel's id in the combined report.
Run it after copying a capture into profiles/<gpu>/ (see device_capture.sh).
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from keet import load_profile

GPUS = ("h100", "h200")


def _mhz(text: str | None) -> float | None:
    match = re.match(r"\s*([\d.]+)\s*MHz", text or "")
    return float(match.group(1)) if match else None


def _gpu_header(gpu: str, capture: dict) -> dict:
    smi = capture["device"]["nvidia_smi"]["values"]
    return {
        "device": smi["name"],
        "driver": smi["driver_version"],
        "max_sm_clock_mhz": _mhz(smi["clocks.max.sm"]),
        "memory_clock_mhz": _mhz(smi["clocks.mem"]),
        "compute_capability": capture["device"]["compute_capability"],
        "nvcc": capture["tools"]["nvcc_version"].splitlines()[-1],
        "ncu": (HERE / gpu / "ncu_version.txt").read_text().strip().splitlines()[-1],
        "nvcc_flags": capture["tools"]["nvcc_flags"],
        "ncu_flags": capture["tools"]["ncu_flags"],
        "captured": capture["started"],
        "combined_report": f"{gpu}/zoo_all.ncu-rep.xz",
    }


def _measurement(gpu: str, program: dict, entry: dict, combined_ids: dict[str, int], report_clock: dict[str, float]) -> dict:
    result = next(r for r in program["results"] if r["kernel"] == entry["kernel"])
    clocks = program["clocks_after"]["values"]
    return {
        "median_ms": result["median_ms"],
        "min_ms": result["min_ms"],
        "max_ms": result["max_ms"],
        "runs": result["runs"],
        "launches_per_timing": result["launches_per_timing"],
        "sm_clock_mhz_after_timing": _mhz(clocks.get("clocks.sm")),
        "memory_clock_mhz_after_timing": _mhz(clocks.get("clocks.mem")),
        "report": f"{gpu}/ncu/{entry['program']}.ncu-rep.xz",
        "profiled_sm_clock_mhz": report_clock.get(entry["kernel"]),  # in the combined report
        "combined_report_id": combined_ids.get(entry["kernel"]),
    }


def build() -> dict:
    intent = tomllib.loads((HERE / "zoo.toml").read_text())["kernel"]
    manifest: dict = {"generated_by": "profiles/build_manifest.py", "gpus": {}, "kernels": []}
    captures, combined_ids, report_clocks = {}, {}, {}
    for gpu in GPUS:
        capture_path = HERE / gpu / "capture.json"
        if not capture_path.exists():
            continue
        captures[gpu] = json.loads(capture_path.read_text())
        manifest["gpus"][gpu] = _gpu_header(gpu, captures[gpu])
        combined = load_profile(HERE / gpu / "zoo_all.ncu-rep.xz")
        combined_ids[gpu] = {}
        for kernel in combined.kernels:  # first launch of each kernel (launch_overhead has 3)
            combined_ids[gpu].setdefault(kernel.function_name, kernel.id)
        report_clocks[gpu] = {k.function_name: round(combined.value(k, "sm_clock") / 1e6, 1) for k in combined.kernels}
    for entry in intent:
        program = entry["program"]
        first = captures[next(iter(captures))]["programs"][program]
        ptxas = first["build"]["kernels"][entry["kernel"]]
        result = next(r for r in first["results"] if r["kernel"] == entry["kernel"])
        manifest["kernels"].append(
            {
                **{key: entry[key] for key in ("program", "kernel", "category", "secondary", "realistic", "args", "description")},
                "source": f"src/{program}.cu",
                "launch": {"grid": result["grid"], "block": result["block"], "dynamic_shared_bytes": result["dyn_smem"]},
                "ptxas": {k: ptxas[k] for k in ("registers", "smem_static", "spill_stores", "spill_loads", "stack_frame")},
                "measured": {
                    gpu: _measurement(gpu, captures[gpu]["programs"][program], entry, combined_ids[gpu], report_clocks[gpu])
                    for gpu in captures
                },
            }
        )
    return manifest


def _pct(profile, kernel, metric: str) -> str:
    value = profile.value(kernel, metric)
    return "–" if value is None else f"{value:.0f}"


def timings_table(manifest: dict) -> str:
    """Markdown table of the measured medians and the H100 profile's headline figures."""
    combined = load_profile(HERE / "h100" / "zoo_all.ncu-rep.xz")
    lines = [
        "| program | kernel | category | H100 median | H200 median | H100 profile: DRAM / L2 / L1 / SM % of peak, achieved occupancy % |",
        "|---|---|---|---|---|---|",
    ]
    for entry in manifest["kernels"]:
        kernel = combined.kernels[entry["measured"]["h100"]["combined_report_id"]]
        medians = [entry["measured"][gpu]["median_ms"] for gpu in ("h100", "h200")]
        unit = "us/launch" if entry["measured"]["h100"]["launches_per_timing"] > 1 else "ms"
        shown = [f"{m * 1000:.2f} us/launch" if unit != "ms" else f"{m:.3f} ms" for m in medians]
        figures = " / ".join(_pct(combined, kernel, m) for m in ("sol.dram_pct", "sol.l2_pct", "sol.l1_pct", "sol.sm_pct"))
        name = entry["program"] + (" (R)" if entry["realistic"] else "")
        lines.append(
            f"| {name} | {entry['kernel']} | {entry['category']} | {shown[0]} | {shown[1]} | "
            f"{figures}, {_pct(combined, kernel, 'occupancy.achieved_pct')} |"
        )
    return "\n".join(lines)


def _replace_marked(text: str, marker: str, body: str) -> str:
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{body}\n{end}{tail}"


if __name__ == "__main__":
    manifest = build()
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    readme = HERE / "README.md"
    readme.write_text(_replace_marked(readme.read_text(), "timings", timings_table(manifest)))
    print(f"wrote {HERE / 'manifest.json'} and the timings table of {readme}")
