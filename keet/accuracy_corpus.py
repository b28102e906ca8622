"""Label-free checks of the diagnosis on the real-world corpus (profiles/corpus/manifest.json),
validation and dev splits apart, and the recoverable time of the before/after pairs.

No one's opinion of a corpus kernel's bottleneck is needed: the H200 has 1.43x the H100's
DRAM bandwidth and the same SMs and clocks, so a kernel the diagnosis calls memory-bandwidth-bound
(its speed-of-light limiter is DRAM bandwidth, it runs within 25% of it: headroom <= 25% of its
time, and DRAM binds clearly: the model's next limit takes at most 1/1.25 of its time, else the
verdict names both) should run >= 1.25x faster on the H200, and one it calls compute-bound (a
pipe, the tensor cores or issue, likewise) <= 1.10x faster. Whether compute-bound kernels slow with the
SM clock is not checked: no capture changed the lent GPUs' clocks (profiles/corpus/README.md).
A kernel whose verdict is empty is a silence; there must be none.

The pairs (pairs.py) give the gain a diagnosis should call recoverable: for the "before" case,
the best single change: each kernel's most recoverable change (its top finding, or its library
lever where that wins more: Diagnosis.best_change), added up over the kernels it is found on
(channels_last removes every layout conversion of the case, not one), the largest such sum; or
where larger what fusing the case's launches into one kernel wins (keet.diagnosis.fusion: the
case is an NVTX range); as a share of their profiled time, against the measured gain
1 - 1/speedup (isolated cold-L2 CUPTI times, H100). A pair agrees when the two are within 35%
of the measured gain.

    python -m keet.accuracy --corpus [--manifest PATH]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from keet.diagnosis import diagnose_kernel, read_ahead
from keet.diagnosis.fusion import fusions
from keet.diagnosis.speed_of_light import COMPUTE, MEMORY_BANDWIDTH
from keet.diagnosis.verdict import CLEAR_MARGIN
from keet.ingest import load_profile

MEMORY_MIN_SPEEDUP = 1.25  # H100 time / H200 time for a DRAM-bound kernel
COMPUTE_MAX_SPEEDUP = 1.10
BOUND_HEADROOM = 0.25  # a kernel within this share of its time of its speed of light is bound by its limiter
PAIR_TOLERANCE = 0.35  # recoverable share within +-35% of the measured gain
TARGET_SHARE = 0.9  # label-free: consistent verdicts in >= 90% of cases
PAIR_TARGET = 0.75  # pairs: >= 75% agree


@dataclass
class CorpusVerdict:
    kernel: str
    case: str
    split: str
    top: str | None  # the first finding's category, None when the diagnosis has none
    h200_speedup: float | None  # H100 isolated time / H200 isolated time
    limiter: str | None = None  # the speed of light's limiter (the model's term)
    fraction: float | None = None  # attainable / measured
    verdict: str = ""
    recoverable_ns: float | None = None  # the top finding's (or the lever's), H100 profile
    profiled_ns: float | None = None
    margin: float | None = None  # the limiter's time over the model's next limit
    rules_silent: bool = False  # no rule found anything: the speed of light's finding speaks
    fusion_ns: float | None = None  # what fusing its case's launches into one kernel wins (the case's NVTX range)
    change: str | None = None  # what the recoverable time's change is (Diagnosis.best_change): same change, same name

    @property
    def kind(self) -> str:
        if not self.verdict:
            return "silent"
        if self.limiter is None or self.fraction is None or self.fraction < 1 - BOUND_HEADROOM:
            return "other"
        if self.margin is not None and self.margin < CLEAR_MARGIN:
            return "co-limited"
        return "memory" if self.limiter in MEMORY_BANDWIDTH else "compute" if self.limiter in COMPUTE else "other"

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


@dataclass
class PairCheck:
    before: str
    after: str
    lever: str
    measured_gain: float  # 1 - 1/speedup on the H100
    predicted_gain: float | None  # recoverable / profiled time of the before case's kernels
    kernels: list[str] = field(default_factory=list)  # "category: share" per kernel

    @property
    def agrees(self) -> bool:
        if self.predicted_gain is None or self.measured_gain <= 0:
            return False
        return abs(self.predicted_gain / self.measured_gain - 1) <= PAIR_TOLERANCE


def verdicts(manifest: dict, gpu: str = "h100", progress: Callable[[str], None] | None = None) -> list[CorpusVerdict]:
    """Diagnose every corpus kernel of the manifest (keet.project_data.corpus_manifest) in its
    report from `gpu`."""
    root = Path(manifest["root"])
    out = []
    for report in manifest["gpus"][gpu]["reports"]:
        if progress:
            progress(f"diagnosing {report}")
        profile = load_profile(root / report, read_ahead=read_ahead())
        entries = [e for e in manifest["kernels"] if (m := e["measured"].get(gpu)) and m["report"] == report]
        diagnoses = {e["id"]: diagnose_kernel(profile, profile.kernels[e["measured"][gpu]["report_id"]]) for e in entries}
        fused: dict[str, float] = {}  # by range: its best fusion (a range may hold several chains)
        for fusion in fusions(profile, list(diagnoses.values())):
            if fusion.range:
                fused[fusion.range] = max(fused.get(fusion.range, 0.0), fusion.recoverable_ns)
        for entry in entries:
            diagnosis = diagnoses[entry["id"]]
            kernel = diagnosis.kernel
            times = entry["measured"]
            speedup = (times["h100"]["isolated_ns"] / times["h200"]["isolated_ns"]) if {"h100", "h200"} <= times.keys() else None
            sol = diagnosis.speed_of_light
            out.append(CorpusVerdict(entry["id"], entry["case"], entry["split"],
                                     diagnosis.reported()[0][0].category if diagnosis.reported() else None, speedup,
                                     sol.component if sol else None, sol.fraction if sol else None,
                                     diagnosis.verdict.text if diagnosis.verdict else "", diagnosis.recoverable_ns,
                                     kernel.duration_ns, sol.margin if sol else None, not diagnosis.findings,
                                     fused.get(kernel.attributes.get("nvtx")),
                                     best[0] if (best := diagnosis.best_change()) else None))
    return out


def pair_checks(manifest: dict, found: list[CorpusVerdict], gpu: str = "h100") -> list[PairCheck]:
    """Each before/after pair: the before case's recoverable share against the measured gain."""
    by_case: dict[str, list[CorpusVerdict]] = {}
    for v in found:
        by_case.setdefault(v.case, []).append(v)
    checks = []
    for pair in manifest.get("pairs", []):
        if gpu not in pair["speedup"]:
            continue
        kernels = by_case.get(pair["before"], [])
        expected = manifest["cases"].get(pair["before"], {}).get("kernels")
        profiled = sum(v.profiled_ns or 0.0 for v in kernels)
        complete = kernels and (expected is None or len(kernels) == expected) and profiled > 0
        # the best single change: one change over the case's kernels (its time on each launch it
        # applies to: channels_last removes every layout conversion, CUDA graphs every launch's
        # overhead), or fusing the case's launches
        by_change: dict[str, float] = {}
        for v in kernels:
            if v.change is not None:
                by_change[v.change] = by_change.get(v.change, 0.0) + (v.recoverable_ns or 0.0)
        own = max(by_change.values(), default=0.0)
        fusion = max((v.fusion_ns or 0.0 for v in kernels), default=0.0)
        predicted = max(own, fusion) / profiled if complete else None
        shares = [f"{v.change or '-'} {((v.recoverable_ns or 0.0) / v.profiled_ns) if v.profiled_ns else 0:.2f}" for v in kernels]
        if fusion > own:
            shares.insert(0, f"fusion {fusion / profiled:.2f}")
        checks.append(PairCheck(pair["before"], pair["after"], pair["lever"], 1 - 1 / pair["speedup"][gpu], predicted, shares))
    return checks


def pair_gains(manifest: dict) -> list[str]:
    lines = []
    for pair in manifest.get("pairs", []):
        gains = ", ".join(f"{g} {s:.2f}x" for g, s in pair["speedup"].items())
        lines.append(f"  {pair['before']} -> {pair['after']} ({pair['lever']}): {gains}")
    return lines


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"


def report(found: list[CorpusVerdict], pairs: list[PairCheck]) -> str:
    lines = ["corpus, label-free (H100 reports; speedup = H100 time / H200 time, isolated cold-L2 launches;",
             (f"bound = speed-of-light limiter with headroom <= {BOUND_HEADROOM:.0%} of the kernel's time, "
             f"binding by >= {CLEAR_MARGIN}x over the next limit):")]
    for split in ("validation", "dev"):
        chosen = [v for v in found if v.split == split]
        if not chosen:
            continue
        memory = [v for v in chosen if v.kind == "memory" and v.consistent is not None]
        compute = [v for v in chosen if v.kind == "compute" and v.consistent is not None]
        silent = [v for v in chosen if v.kind == "silent"]
        judged = memory + compute
        lines.append(f"\n{split} split: {len(chosen)} kernels")
        lines.append(f"  called DRAM-bandwidth-bound: {len(memory)}, of which >= {MEMORY_MIN_SPEEDUP}x faster on H200: "
                     f"{_share(sum(v.consistent for v in memory), len(memory))}")
        lines.append(f"  called compute-bound: {len(compute)}, of which <= {COMPUTE_MAX_SPEEDUP}x faster on H200: "
                     f"{_share(sum(v.consistent for v in compute), len(compute))}")
        lines.append(f"  consistent, both kinds: {_share(sum(v.consistent for v in judged), len(judged))} (target >= {TARGET_SHARE:.0%})")
        lines.append(f"  co-limited (limiter within {CLEAR_MARGIN}x of the next, not judged): {sum(v.kind == 'co-limited' for v in chosen)}")
        lines.append(f"  empty verdict (silent): {len(silent)}; no finding at all: {sum(v.top is None for v in chosen)}; "
                     f"no rule finding (the speed of light speaks): {sum(v.rules_silent for v in chosen)}")
        misses = [v for v in judged if not v.consistent]
        if misses:
            lines.append("  inconsistent: " + "; ".join(f"{v.kernel} ({v.kind}, {v.h200_speedup:.2f}x)" for v in misses[:8])
                         + (f"; {len(misses) - 8} more" if len(misses) > 8 else ""))
    lines.append("\n(slowing with the SM clock is not checked: no capture changed the lent GPUs' clocks)")
    if pairs:
        agree = sum(p.agrees for p in pairs)
        lines.append(f"\nbefore/after pairs (H100): the best single change's recoverable share vs measured gain 1 - 1/speedup, "
                     f"within +-{PAIR_TOLERANCE:.0%}: {_share(agree, len(pairs))} (target >= {PAIR_TARGET:.0%})")
        for p in pairs:
            predicted = f"{p.predicted_gain:.2f}" if p.predicted_gain is not None else "n/a"
            lines.append(f"  {'ok' if p.agrees else '--'} {p.before} -> {p.after} ({p.lever}): measured {p.measured_gain:.2f}, "
                         f"recoverable {predicted}  [{', '.join(p.kernels[:4])}{', ...' if len(p.kernels) > 4 else ''}]")
    return "\n".join(lines)
