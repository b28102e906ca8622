"""ncu_overhead_ns: how much longer Nsight Compute reports a launch than CUPTI does.

Nsight Compute's gpu__time_duration of a replayed launch (--cache-control all) is not the CUPTI
kernel duration that kernel_fixed_ns and the corpus times are: a kernel of a few instructions
reads about 2.2 us there against 0.86 us in CUPTI on an H100. The model predicts either (launch
context "ncu" against "isolated-clean"); the difference is this parameter.

It is measured on the same launches both ways: the corpus (profiles/corpus/manifest.json) holds,
for every profiled kernel, its CUPTI duration as an isolated launch and the gpu__time_duration of
its Nsight Compute report, taken on one machine with the same software. Over the dev split's
kernels shorter than SHORT_NS in CUPTI (launch-bound: what they move is too small for the flush
difference between the two to show), the median of (Nsight Compute - CUPTI) is the parameter.
The validation split is not read. The zoo's launch microbenchmark agrees: tiny_kernel (one
32-thread block) reads 2240 ns in profiles/h100/ncu/launch_overhead.ncu-rep.xz, 864 ns +
1320 ns = 2184 ns by this.

    python -m perfmodel.ncu_overhead    # prints each GPU's entry for its hardware file
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

MANIFEST = Path(__file__).resolve().parents[1] / "profiles" / "corpus" / "manifest.json"
SHORT_NS = 3000.0
SPLIT = "dev"
PARAMETER = "ncu_overhead_ns"


def differences(gpu_id: str, manifest: Path = MANIFEST) -> list[float]:
    """(Nsight Compute - CUPTI) ns of each short dev-split kernel profiled on the GPU."""
    found = []
    for kernel in json.loads(manifest.read_text())["kernels"]:
        times = kernel.get("measured", {}).get(gpu_id, {})
        if kernel["split"] == SPLIT and times.get("profiled_ns") and times.get("isolated_ns") and times["isolated_ns"] < SHORT_NS:
            found.append(times["profiled_ns"] - times["isolated_ns"])
    return found


def derive(gpu_id: str, manifest: Path = MANIFEST) -> tuple[float, str]:
    """(ncu_overhead_ns, the note recording how)."""
    found = differences(gpu_id, manifest)
    if not found:
        raise ValueError(f"{manifest}: no {SPLIT}-split kernel under {SHORT_NS:.0f} ns profiled on {gpu_id}")
    value = statistics.median(found)
    low, _, high = statistics.quantiles(found, n=4)
    note = (f"median over the corpus {SPLIT} split's {len(found)} kernels under {SHORT_NS / 1000:g} us (CUPTI isolated) "
            f"of their Nsight Compute gpu__time_duration (--set full, --cache-control all, --clock-control none) less "
            f"their CUPTI duration, the same launches on one machine (quartiles {low:.0f} and {high:.0f} ns); "
            "perfmodel/ncu_overhead.py derives it")
    return value, note


def main() -> int:
    gpus = sorted({gpu_id for kernel in json.loads(MANIFEST.read_text())["kernels"] for gpu_id in kernel.get("measured", {})})
    for gpu_id in gpus:
        value, note = derive(gpu_id)
        print(f"# {gpu_id}\n[params.{PARAMETER}]\nvalue = {value:.0f}\nunit = \"ns\"\nsource = \"derived\"\n"
              f"ref = \"profiles/corpus/manifest.json: median(profiled_ns - isolated_ns), {SPLIT} split, "
              f"isolated_ns < {SHORT_NS:.0f}\"\nnote = \"{note}\"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
