"""Shared-memory bank conflicts: a warp's shared accesses split into several wavefronts."""

from keet.rules.base import Finding, KernelView, clamp, locations, num, pct, rule

# Conflicts that make at least this share of all shared wavefronts are worth removing.
CONFLICT_SHARE = 0.25


@rule(
    "shared-bank-conflicts",
    "shared_bank_conflicts",
    "Bank conflicts multiply shared-memory wavefronts",
    needs=("shared.bank_conflicts", "shared.wavefronts", "sol.l1_pct"),
    collect="--section MemoryWorkloadAnalysis_Tables --section SourceCounters",
)
def apply(k: KernelView) -> Finding | None:
    conflicts, wavefronts, l1 = (k.metric(n) for n in ("shared.bank_conflicts", "shared.wavefronts", "sol.l1_pct"))
    if wavefronts <= 0 or conflicts / wavefronts < CONFLICT_SHARE:
        return None
    share = conflicts / wavefronts
    evidence = [k.evidence("shared.bank_conflicts"), k.evidence("shared.wavefronts"), k.evidence("sol.l1_pct")]
    ideal_text = ""
    if k.has("shared.ideal_wavefronts") and k.metric("shared.ideal_wavefronts") > 0:
        evidence.append(k.evidence("shared.ideal_wavefronts"))
        ideal_text = f" A conflict-free pattern would need {num(k.metric('shared.ideal_wavefronts'))} wavefronts."
    lines = k.hot_lines("memory_l1_wavefronts_shared", ideal="memory_l1_wavefronts_shared_ideal")
    where = locations(lines)
    return Finding(
        category="shared_bank_conflicts",
        rule="shared-bank-conflicts",
        impact=clamp(share * min(l1, 100.0) / 100),
        confidence=0.9,
        evidence=evidence,
        explanation=(
            f"{num(conflicts)} of the kernel's {num(wavefronts)} shared-memory wavefronts are bank conflicts: "
            f"threads of a warp hit different addresses in the same bank, so each access is replayed once per "
            f"extra address while the L1/shared data path runs at {pct(l1)} of peak.{ideal_text}{where}"
        ),
        suggestions=[
            "Pad the shared array's row by one element (e.g. __shared__ float tile[32][33] instead of [32][32]) so that a column access by a warp touches every bank once: consecutive rows then start one bank apart.",
            "Or swizzle the index (store element (r, c) at column c ^ r) to keep the array dense while spreading a column over all banks.",
            "For 8- and 16-byte elements pad by one vector (8 or 16 bytes), not one word: the bank pattern repeats every 128 bytes.",
            "Re-profile and check shared.bank_conflicts drops toward zero and shared.wavefronts toward shared.ideal_wavefronts.",
        ],
        explains=("l1_shared_bandwidth", "instruction_issue", "memory_latency"),
        source_lines=lines,
    )
