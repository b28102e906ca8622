"""Occupancy from resources on AMD: VGPRs/AGPRs, SGPRs or LDS cap the resident waves per CU.

Computed from the kernel's resources alone (rocprof writes them with every dispatch, so this
works on kernel traces too) by the CDNA occupancy calculator, :func:`perfmodel.occupancy.amd_cdna`,
with the facts of the profile's arch (perfmodel/hardware/isa/gfx*.toml, each with its source):

* VGPRs: gfx90a/gfx942 have one file per SIMD lane shared by arch VGPRs and AGPRs; a wave
  gets its VGPRs aligned to the ACCUM_OFFSET granule plus its AGPRs, rounded up to the
  allocation granule. gfx908 has arch VGPRs and AGPRs in separate files of the same size.
  Waves per SIMD = min(wave slots, file // allocation).
* SGPRs and LDS: a file per SIMD (CU), allocated in granules.
* A workgroup's waves are spread over the SIMDs of one CU, so a CU holds
  floor(SIMDs x waves per SIMD / waves per workgroup) workgroups by each register limit, and
  at most as many multi-wave workgroups as it has barriers.

The resources the rules name group the calculator's limits: "vgpr" the register file(s), "sgpr",
"lds", and "slots" (wave slots and barriers: no resource of the kernel's to change). The budgets
the suggestions give (VGPRs or LDS bytes that fit one more wave or workgroup) are the
calculator's what-if helpers.

Occupancy matters only when waves wait on latency; with a unit near its peak more waves do
not help. The impact is therefore discounted by the busiest unit the profile measured, and
without any utilization the finding is an upper bound at low confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from keet.rules.amd_base import amd_rule, hbm_peak, occupancy_isa
from keet.rules.base import Evidence, Finding, KernelView, clamp, num
from perfmodel.hardware import ISA
from perfmodel.occupancy import (
    Occupancy,
    amd_cdna,
    amd_lds_budget,
    amd_occupancy_isas,
    amd_sgpr_budget,
    amd_vgpr_budget,
    amd_wave_slots_per_simd,
)

# Fewer than half of the CU's wave slots resident: too few waves to hide memory latency
# (a CDNA SIMD issues one instruction per wave per 4 cycles and a load waits hundreds of
# cycles; the MI250X hardware file's measured HBM latency is 647 cycles).
LOW_SHARE = 0.5
NEEDS = ("amd.arch_vgpr", "amd.accum_vgpr", "amd.sgpr", "launch.block_size", "launch.shared_static")
COLLECT = "rocprofv3 --kernel-trace -- ./app"
# Derived (not profile) evidence these rules add: theoretical waves per CU from the resources.
DERIVED = "occupancy.theoretical_warps"
# The resources the rules name -> the calculator's limits they group (perfmodel.occupancy.amd_cdna):
# VGPRs and AGPRs are one resource to the kernel's author (both are vector registers the
# compiler allocates), "slots" is the CU itself.
RESOURCES = {"vgpr": ("registers", "agprs"), "sgpr": ("sgprs",), "lds": ("shared",), "slots": ("warps", "blocks")}


@dataclass
class Limits:
    isa: ISA  # the facts the occupancy was computed with
    known: bool  # the profile's own arch (else the assumed one)
    occupancy: Occupancy
    by: dict[str, float]  # workgroups per CU allowed by each resource of RESOURCES (inf: it does not limit)
    vgpr_cap: int  # most VGPRs per work-item that fit one more wave per SIMD (0 if none)
    sgpr_cap: int
    lds_cap: int  # most LDS bytes per workgroup that fit one more workgroup per CU

    @property
    def max_waves(self) -> int:
        return self.occupancy.max_warps_per_sm

    def waves(self, excluding: str | None = None) -> float:
        """Resident waves per CU, or what they would be were resource ``excluding`` lifted."""
        occupancy = self.occupancy.lifted(*RESOURCES[excluding]) if excluding else self.occupancy
        return occupancy.warps_per_sm


def limits(k: KernelView) -> Limits:
    """The kernel's occupancy from its resources and what-if budgets for each resource."""
    facts, known = occupancy_isa(k)
    arch_vgpr, accum, sgpr = k.metric("amd.arch_vgpr"), k.metric("amd.accum_vgpr"), k.metric("amd.sgpr")
    occ = amd_cdna(facts, k.metric("launch.block_size"), arch_vgpr, k.metric("launch.shared_static"),
                   sgprs_per_wave=sgpr, agprs_per_thread=accum)
    by = {resource: min((occ.limits[name] for name in names if name in occ.limits), default=math.inf)
          for resource, names in RESOURCES.items()}
    # the budgets start from the waves per SIMD each file allows now (a file the kernel does not
    # use allows every slot, and no budget is given for it)
    slots = amd_wave_slots_per_simd(facts)
    vgpr_simd = min((occ.waves_per_simd[name] for name in RESOURCES["vgpr"] if name in occ.waves_per_simd), default=slots)
    sgpr_simd = occ.waves_per_simd.get("sgprs", slots)
    vgpr_cap = amd_vgpr_budget(facts, vgpr_simd + 1)
    sgpr_cap = amd_sgpr_budget(facts, sgpr_simd + 1)
    lds_cap = amd_lds_budget(facts, occ.limits["shared"] + 1) if "shared" in occ.limits else 0
    return Limits(facts, known, occ, by, vgpr_cap, sgpr_cap, lds_cap)


def _busiest(k: KernelView) -> tuple[float | None, list[Evidence]]:
    """The busiest unit's utilization (%) the profile measured, with its evidence."""
    found: list[tuple[float, Evidence]] = []
    for name in ("amd.valu_util_pct", "pipe.tensor_pct"):
        if k.metric(name) is not None:
            found.append((k.metric(name), k.evidence(name)))
    peak = hbm_peak(k) if k.metric("dram.throughput") is not None else None
    if peak is not None:
        rate = k.metric("dram.throughput")
        found.append((100 * rate / peak.value, Evidence("dram.throughput", rate, "byte/second", peak.value, "of peak")))
    if not found:
        return None, []
    value, evidence = max(found, key=lambda item: item[0])
    return value, [evidence]


def _assess(k: KernelView, resources: tuple[str, ...]) -> tuple[Limits, str, float, float] | None:
    """(limits, binding resource, waves now, waves with it lifted) when one of ``resources`` alone limits."""
    try:
        lim = limits(k)
    except ValueError:  # resources no launch has (an empty workgroup, negative registers): nothing to assess
        return None
    now = lim.waves()
    if now >= LOW_SHARE * lim.max_waves:
        return None
    binding = [name for name, v in lim.by.items() if v == min(lim.by.values())]
    if len(binding) != 1 or binding[0] not in resources:
        return None
    lifted = lim.waves(excluding=binding[0])
    if lifted <= now:
        return None
    return lim, binding[0], now, lifted


def _finding(k: KernelView, category: str, rule_id: str, lim: Limits, now: float, lifted: float,
             evidence: list[Evidence], what: str, suggestions: list[str]) -> Finding:
    evidence.append(Evidence(DERIVED, now, "wave", float(lim.max_waves), "of (per CU, from resources)"))
    gain = 1 - now / lifted
    busiest, busy_evidence = _busiest(k)
    evidence += busy_evidence
    assumed = "" if lim.known else (f" The profile names no arch whose occupancy limits the hardware database has "
                                    f"({', '.join(amd_occupancy_isas())}); the {lim.isa.id} limits are assumed.")
    if busiest is None:
        # impact = 1 - waves now / waves with the limit lifted: an upper bound, as nothing
        # in the profile says whether the kernel waits on latency
        impact, confidence = gain, 0.3
        latency = " Whether more waves would help cannot be told from this profile (no unit utilization): the impact is an upper bound."
    else:
        # impact = min(1 - waves now / waves lifted, 1 - busiest unit / 100)
        impact, confidence = min(gain, 1 - busiest / 100), 0.6 if lim.known else 0.5
        latency = " The busiest unit the profile measured is far from its peak, so the few waves leave latency exposed."
        if busiest >= 60:
            impact = 0.0  # a unit near its peak: more waves would not help
    return Finding(
        category=category,
        rule=rule_id,
        impact=clamp(impact),
        confidence=confidence,
        evidence=evidence,
        explanation=f"{what}, so a CU holds only {num(now)} of its {num(lim.max_waves)} wave slots.{latency}{assumed}",
        suggestions=suggestions,
        explains=("memory_latency",),
    )


@amd_rule("amd-occupancy-registers", "occupancy_registers",
      "AMD: VGPRs/AGPRs or SGPRs per wave limit the resident waves", needs=NEEDS, collect=COLLECT)
def registers(k: KernelView) -> Finding | None:
    found = _assess(k, ("vgpr", "sgpr"))
    if found is None:
        return None
    lim, binding, now, lifted = found
    block = k.metric("launch.block_size")
    if binding == "vgpr":
        arch_vgpr, accum = k.metric("amd.arch_vgpr"), k.metric("amd.accum_vgpr")
        # one file for VGPRs and AGPRs (CDNA2/3): the budget covers both
        relation = "> (VGPRs + AGPRs for one more wave per SIMD)" if lim.isa.require("agprs_unified") else "> (for one more wave per SIMD)"
        evidence = [k.evidence("amd.arch_vgpr", float(lim.vgpr_cap), relation), k.evidence("amd.accum_vgpr"),
                    k.evidence("launch.block_size")]
        what = f"Each work-item holds {num(arch_vgpr)} arch VGPRs and {num(accum)} AGPRs"
        cap = lim.vgpr_cap
        suggestions = [
            (
                f"Cap the registers: __launch_bounds__({block:.0f}, N) or __attribute__((amdgpu_waves_per_eu(N))) with N one "
                f"more wave per SIMD than now makes the compiler fit {cap} VGPRs or fewer (AGPRs included on gfx90a/gfx942); "
                "check the result with -Rpass-analysis=kernel-resource-usage (VGPRs, AGPRs, ScratchSize)."
            ),
            "Reduce live state: fewer values kept across loop iterations, less unrolling of loops that hold arrays, 16-bit types (packed half2/bf16 math) where precision allows.",
            "Watch for scratch: forcing VGPRs down makes the compiler spill to scratch (private memory), which costs more than the occupancy gained if the spills are in the hot loop.",
        ]
    else:
        evidence = [k.evidence("amd.sgpr", float(lim.sgpr_cap), "> (for one more wave)"), k.evidence("launch.block_size")]
        what = f"Each wave holds {num(k.metric('amd.sgpr'))} SGPRs"
        suggestions = [
            "Reduce scalar state: fewer kernel arguments and wave-uniform values kept live across the kernel; amdgpu_waves_per_eu also bounds SGPRs.",
        ]
    return _finding(k, "occupancy_registers", "amd-occupancy-registers", lim, now, lifted, evidence, what, suggestions)


@amd_rule("amd-occupancy-lds", "occupancy_shared_memory",
      "AMD: LDS per workgroup limits the resident workgroups", needs=NEEDS, collect=COLLECT)
def lds(k: KernelView) -> Finding | None:
    found = _assess(k, ("lds",))
    if found is None:
        return None
    lim, _, now, lifted = found
    evidence = [k.evidence("launch.shared_static", float(lim.lds_cap), "> (for one more workgroup per CU)"),
                k.evidence("launch.block_size")]
    what = f"Each workgroup allocates {num(k.metric('launch.shared_static'))} bytes of the CU's LDS"
    suggestions = [
        f"Use at most {lim.lds_cap} bytes of LDS per workgroup (smaller tiles, or fp16/bf16 tiles) to fit one more workgroup per CU.",
        "Or give each workgroup more work-items for the same LDS tile, so the waves resident per CU rise even if workgroups do not.",
        "Release LDS early: stage through registers for data used once, and reuse one LDS buffer for phases that do not overlap.",
    ]
    return _finding(k, "occupancy_shared_memory", "amd-occupancy-lds", lim, now, lifted, evidence, what, suggestions)
