"""Label-free checks of the diagnosis on the real-world corpus (profiles/corpus/manifest.json),
validation and dev splits apart.

No one's opinion of a corpus kernel's bottleneck is needed: the H200 has 1.43x the H100's
DRAM bandwidth and the same SMs and clocks, so a kernel the diagnosis calls DRAM-bound should
run >= 1.25x faster on the H200, and one it calls compute- or issue-bound <= 1.10x faster. A
kernel with no finding at all is a silence. The before/after pairs give the measured gain a
diagnosis should call recoverable; findings carry no recoverable time yet, so that
check reports the measured gains only.

    python -m keet.accuracy --corpus [--manifest PATH]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from keet.diagnosis import diagnose_kernel
from keet.ingest import load_profile

MEMORY_BOUND = frozenset({"dram_bandwidth"})
COMPUTE_BOUND = frozenset({"fp32_compute", "fp64_compute", "sfu_compute", "int_compute", "tensor_compute", "instruction_issue"})
MEMORY_MIN_SPEEDUP = 1.25  # H100 time / H200 time for a DRAM-bound kernel
COMPUTE_MAX_SPEEDUP = 1.10


@dataclass
class CorpusVerdict:
    kernel: str
    split: str
    top: str | None  # the first finding's category, None when the diagnosis is silent
    h200_speedup: float | None  # H100 isolated time / H200 isolated time

    @property
    def kind(self) -> str:
        if self.top is None:
            return "silent"
        return "memory" if self.top in MEMORY_BOUND else "compute" if self.top in COMPUTE_BOUND else "other"

    @property
    def consistent(self) -> bool | None:
        """Whether the H200 speedup agrees with the verdict (None: the verdict predicts nothing)."""
        if self.h200_speedup is None:
            return None
        if self.kind == "memory":
            return self.h200_speedup >= MEMORY_MIN_SPEEDUP
        if self.kind == "compute":
            return self.h200_speedup <= COMPUTE_MAX_SPEEDUP
        return None


def verdicts(manifest: dict, gpu: str = "h100", progress: Callable[[str], None] | None = None) -> list[CorpusVerdict]:
    """Diagnose every corpus kernel of the manifest (keet.project_data.corpus_manifest) in its
    report from `gpu`."""
    root = Path(manifest["root"])
    out = []
    for report in manifest["gpus"][gpu]["reports"]:
        if progress:
            progress(f"diagnosing {report}")
        profile = load_profile(root / report)
        for entry in manifest["kernels"]:
            measured = entry["measured"].get(gpu)
            if not measured or measured["report"] != report:
                continue
            findings = diagnose_kernel(profile, profile.kernels[measured["report_id"]]).findings
            times = entry["measured"]
            speedup = (times["h100"]["isolated_ns"] / times["h200"]["isolated_ns"]) if {"h100", "h200"} <= times.keys() else None
            out.append(CorpusVerdict(entry["id"], entry["split"], findings[0].category if findings else None, speedup))
    return out


def pair_gains(manifest: dict) -> list[str]:
    lines = []
    for pair in manifest.get("pairs", []):
        gains = ", ".join(f"{g} {s:.2f}x" for g, s in pair["speedup"].items())
        lines.append(f"  {pair['before']} -> {pair['after']} ({pair['lever']}): {gains}")
    return lines


def report(found: list[CorpusVerdict], pairs: list[str]) -> str:
    lines = ["corpus, label-free (H100 reports; speedup = H100 time / H200 time, isolated cold-L2 launches):"]
    for split in ("validation", "dev"):
        chosen = [v for v in found if v.split == split]
        if not chosen:
            continue
        memory = [v for v in chosen if v.kind == "memory" and v.consistent is not None]
        compute = [v for v in chosen if v.kind == "compute" and v.consistent is not None]
        silent = [v for v in chosen if v.kind == "silent"]
        lines.append(f"\n{split} split: {len(chosen)} kernels")
        lines.append(f"  called DRAM-bound: {len(memory)}, of which >= {MEMORY_MIN_SPEEDUP}x faster on H200: "
                     f"{sum(v.consistent for v in memory)}" + (f" ({sum(v.consistent for v in memory) / len(memory):.0%})" if memory else ""))
        lines.append(f"  called compute/issue-bound: {len(compute)}, of which <= {COMPUTE_MAX_SPEEDUP}x faster on H200: "
                     f"{sum(v.consistent for v in compute)}" + (f" ({sum(v.consistent for v in compute) / len(compute):.0%})" if compute else ""))
        lines.append(f"  no finding (silent): {len(silent)} ({len(silent) / len(chosen):.0%})")
    lines.append("\nbefore/after pairs: measured gain (recoverable time per finding: not assessed, the findings carry none yet)")
    lines.extend(pairs)
    return "\n".join(lines)
