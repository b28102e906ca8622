"""Above one kernel: identical launches grouped, NVTX ranges with their kernels, the run's caveats,
and where the most time can be won.

- A group is the launches of one kernel with the same grid, block, resources and work (the exact
  work counts: instructions executed, global sectors, shared wavefronts): a count, the total time,
  and one verdict, the representative's (the launch of median duration), so that identical
  launches never get different verdicts from run-to-run noise in their counters.
- NVTX ranges (ncu --nvtx; keet.ingest keeps each launch's open ranges as the kernel attribute
  "nvtx") list their launches, time and recoverable time.
- Fusion (keet.diagnosis.fusion): chains of launches one kernel could do (an NVTX range's, or
  consecutive ATen launches), with the intermediates that would stay on chip and the time won.
- Caveats: a clock below the GPU's boost (Nsight Compute's default --clock-control base locks it;
  durations then read longer than at default clocks), and launches of a few microseconds (Nsight
  Compute flushes the caches and serialises each launch: such durations read over 2x what CUPTI
  measures back to back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keet.diagnosis import Diagnosis
from keet.diagnosis.fusion import Fusion, fusions
from keet.diagnosis.speed_of_light import own_gpu, profiled_clock
from keet.format import si
from keet.profile import Kernel, Profile

# Work counts that make two launches the same work (exact counts, no times), rounded to this many
# significant digits so that a count's nondeterminism (atomics order) does not split a group.
WORK_KEYS = ("inst.executed", "global.load_sectors", "global.store_sectors", "shared.wavefronts", "dram.bytes_read")
WORK_DIGITS = 3
# A clock this far below the GPU's boost clock is called out (the profiled clock, ncu's base lock).
CLOCK_CAVEAT_SHARE = 0.05
# Launches shorter than this read longer under Nsight Compute than under CUPTI.
TINY_NS = 10_000.0
# Groups listed under "where the most time can be won".
TOP_GROUPS = 5


@dataclass
class Group:
    id: int
    name: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    launches: list[int]  # kernel ids, profile order
    total_ns: float
    representative: int  # kernel id whose diagnosis stands for the group
    diagnosis: Diagnosis
    nvtx: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.launches)

    @property
    def recoverable_ns(self) -> float | None:
        """The representative's recoverable share of its time applied to the group's total."""
        found, duration = self.diagnosis.recoverable_ns, self.diagnosis.kernel.duration_ns
        if found is None or not duration:
            return None
        return found / duration * self.total_ns

    def as_dict(self) -> dict[str, Any]:
        d = self.diagnosis
        top = d.reported()[0][0] if d.reported() else None
        return {"id": self.id, "name": self.name, "function": self.diagnosis.kernel.function_name, "grid": list(self.grid) if self.grid else None,
                "block": list(self.block) if self.block else None, "count": self.count, "launches": self.launches,
                "total_ns": self.total_ns, "mean_ns": self.total_ns / self.count if self.count else None,
                "representative": self.representative, "recoverable_ns": self.recoverable_ns,
                "top_category": top.category if top else None,
                "verdict": d.verdict.as_dict() if d.verdict else None,
                "speed_of_light": d.speed_of_light.as_dict() if d.speed_of_light else None,
                "library": d.library.library.id if d.library else None, "nvtx": self.nvtx}


@dataclass
class Run:
    groups: list[Group]  # by recoverable time, then total time
    nvtx: list[dict[str, Any]]
    caveats: list[dict[str, str]]
    total_ns: float
    fusions: list[Fusion] = field(default_factory=list)  # by recoverable time

    def where_to_win(self, top: int = TOP_GROUPS) -> list[dict[str, Any]]:
        """The groups and the fusions with the most recoverable time, each with its share of the run."""
        out = []
        for group in self.groups[:top]:
            found = group.recoverable_ns
            if not found or found <= 0:
                break
            d = group.diagnosis
            reported = d.reported()
            best = max((r for r in (*(r for _, r in reported[:1]), d.lever) if r is not None), key=lambda r: r.ns, default=None)
            out.append({"group": group.id, "representative": group.representative, "name": group.name, "function": d.kernel.function_name, "count": group.count, "recoverable_ns": found,
                        "share_of_run": found / self.total_ns if self.total_ns else None,
                        "category": reported[0][0].category if reported else None, "how": best.how if best else None})
        for index, fusion in enumerate(self.fusions[:top]):
            first, last = fusion.launches[0], fusion.launches[-1]
            out.append({"fusion": index, "representative": first, "name": fusion.range or f"launches {first}-{last}", "function": None,
                        "count": len(fusion.launches), "recoverable_ns": fusion.recoverable_ns,
                        "share_of_run": fusion.recoverable_ns / self.total_ns if self.total_ns else None,
                        "category": "fusion", "how": fusion.how})
        out.sort(key=lambda item: -item["recoverable_ns"])
        return out[:top]

    def as_dict(self) -> dict[str, Any]:
        return {"groups": [g.as_dict() for g in self.groups], "nvtx": self.nvtx, "caveats": self.caveats,
                "total_ns": self.total_ns, "fusions": [f.as_dict() for f in self.fusions], "where_to_win": self.where_to_win()}


def work_key(profile: Profile, kernel: Kernel) -> tuple:
    counts = []
    for name in WORK_KEYS:
        value = profile.value(kernel, name)
        counts.append(None if value is None else float(f"{value:.{WORK_DIGITS}g}"))
    return (kernel.name, kernel.grid, kernel.block, kernel.registers_per_thread, kernel.shared_bytes_per_block, tuple(counts))


def group_launches(profile: Profile, diagnoses: list[Diagnosis]) -> list[Group]:
    """Identical launches together; each group's verdict is its median launch's, given to all."""
    buckets: dict[tuple, list[Diagnosis]] = {}
    for d in diagnoses:
        buckets.setdefault(work_key(profile, d.kernel), []).append(d)
    groups = []
    for members in buckets.values():
        timed = sorted(members, key=lambda d: (d.kernel.duration_ns or 0.0, d.kernel.id))
        representative = timed[(len(timed) - 1) // 2]
        for d in members:  # identical launches, identical verdicts
            d.verdict = representative.verdict
        first = members[0].kernel
        nvtx = sorted({r for d in members if (r := d.kernel.attributes.get("nvtx"))})
        groups.append(Group(0, first.name, first.grid, first.block, sorted(d.kernel.id for d in members),
                            sum((d.kernel.duration_ns or 0.0) * d.kernel.invocations for d in members),
                            representative.kernel.id, representative, nvtx))
    groups.sort(key=lambda g: (-(g.recoverable_ns or 0.0), -g.total_ns, g.launches[0]))
    for index, group in enumerate(groups):
        group.id = index
    return groups


def nvtx_ranges(groups: list[Group], diagnoses: list[Diagnosis]) -> list[dict[str, Any]]:
    """Each NVTX range with its launches, the groups they belong to, total and recoverable time."""
    group_of = {kid: g for g in groups for kid in g.launches}
    ranges: dict[str, dict[str, Any]] = {}
    for d in diagnoses:
        name = d.kernel.attributes.get("nvtx")
        if not name:
            continue
        entry = ranges.setdefault(name, {"range": name, "launches": [], "groups": [], "total_ns": 0.0, "recoverable_ns": 0.0})
        entry["launches"].append(d.kernel.id)
        group = group_of.get(d.kernel.id)
        if group is not None and group.id not in entry["groups"]:
            entry["groups"].append(group.id)
        duration = (d.kernel.duration_ns or 0.0) * d.kernel.invocations
        entry["total_ns"] += duration
        if group is not None and group.recoverable_ns and group.total_ns:
            entry["recoverable_ns"] += group.recoverable_ns * duration / group.total_ns
    return sorted(ranges.values(), key=lambda r: (-r["total_ns"], r["range"]))


def caveats(profile: Profile, diagnoses: list[Diagnosis]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    locked = []
    for d in diagnoses:
        hardware = own_gpu(profile, d.kernel)
        clock = profiled_clock(profile, d.kernel)
        boost = hardware.value("clock_boost_hz") if hardware else profile.device.max_sm_clock_hz
        if clock and boost and clock < boost * (1 - CLOCK_CAVEAT_SHARE):
            locked.append((d.kernel.id, clock, boost))
    if locked:
        low = min(c for _, c, _ in locked)
        boost = locked[0][2]
        found.append({"id": "locked_clock", "text": (
            f"{len(locked)} of {len(diagnoses)} launches ran with the SM clock below the GPU's {si(boost, 'Hz')} boost (down to "
            f"{si(low, 'Hz')}): Nsight Compute locks it to base by default (--clock-control base), or the GPU lowered it under "
            "load, so their durations read longer than at the application's clocks. Their speed of light is computed at the "
            "clock they ran at; --clock-control none measures at the application's clocks.")})
    tiny = [d for d in diagnoses if d.kernel.duration_ns is not None and d.kernel.duration_ns < TINY_NS]
    if tiny:
        found.append({"id": "tiny_kernels", "text": (
            f"{len(tiny)} of {len(diagnoses)} launches last under {si(TINY_NS, 'ns')}: Nsight Compute flushes the caches and "
            "serialises every launch, so durations of a few microseconds read over 2x what CUPTI (torch.profiler, nsys) "
            "measures back to back. For such kernels the launch count, not the kernel, is the cost: CUDA graphs or fusion.")})
    return found


def summarize(profile: Profile, diagnoses: list[Diagnosis]) -> Run:
    groups = group_launches(profile, diagnoses)
    total = sum((d.kernel.duration_ns or 0.0) * d.kernel.invocations for d in diagnoses)
    fused = fusions(profile, diagnoses)
    ranges = nvtx_ranges(groups, diagnoses)
    for entry in ranges:  # a range's best single change: its kernels' own, or fusing its launches
        for index, fusion in enumerate(fused):
            if fusion.range == entry["range"] and fusion.recoverable_ns > entry["recoverable_ns"]:
                entry.update(recoverable_ns=fusion.recoverable_ns, fusion=index)
    return Run(groups, ranges, caveats(profile, diagnoses), total, fused)
