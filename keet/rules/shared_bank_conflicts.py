"""Shared-memory bank conflicts: a warp's shared accesses split into several wavefronts.

Nsight Compute counts the extra wavefronts of shared-memory atomics (ATOMS) as bank conflicts
too: lanes that update the same address, or addresses in one bank, are replayed. With
data-dependent bins (histograms, radix-sort digit counts) that is atomic contention, which
padding the array does not remove. The mechanism check splits the extra wavefronts by
instruction kind (loads, stores, atomics) and this rule judges only those of loads and
stores; shared_atomics.py judges the atomics'.
"""

from keet.rules.base import (
    NOT_ASSESSED,
    OPCODE_COLLECT,
    OPCODE_TABLE,
    Check,
    Evidence,
    Finding,
    KernelView,
    cite,
    clamp,
    locations,
    mechanism,
    num,
    pct,
    rule,
)

# Conflicts that make at least this share of all shared wavefronts are worth removing.
CONFLICT_SHARE = 0.25
# At least this share of the extra wavefronts from atomics makes them atomic contention.
ATOMIC_SHARE = 0.5
LOADS_STORES = "loads and stores"
ATOMICS = "shared atomics"


def atomic_instructions(k: KernelView) -> tuple[float, Evidence] | None:
    """Warp-level shared-memory atomics executed: the counter, else ATOMS in the opcode table."""
    if k.has("shared.atomic_instructions"):
        return k.metric("shared.atomic_instructions"), k.evidence("shared.atomic_instructions")
    table = k.opcodes()
    if table is None:
        return None
    return table.get("ATOMS", 0.0), k.opcode_evidence("ATOMS", table.get("ATOMS", 0.0))


@mechanism(
    "conflicts-or-atomics",
    "bank conflicts of loads and stores or contended shared-memory atomics",
    counters=("shared.bank_conflicts_atomic", "shared.bank_conflicts_load", "shared.bank_conflicts_store", "shared.atomic_instructions", OPCODE_TABLE),
    collect=f"--section MemoryWorkloadAnalysis_Tables {OPCODE_COLLECT}",
)  # fmt: skip
def conflicts_or_atomics(k: KernelView) -> Check:
    """Which instructions the extra shared wavefronts belong to: ATOMS, or LDS/STS."""
    me = conflicts_or_atomics.id
    conflicts = k.metric("shared.bank_conflicts") or 0.0
    atoms = atomic_instructions(k)
    atomic = k.metric("shared.bank_conflicts_atomic")
    if atomic is None:
        if atoms is not None and atoms[0] <= 0:  # no atomics executed: every conflict is a load's or a store's
            return Check(me, LOADS_STORES, [atoms[1]], "The kernel executes no shared-memory atomics (ATOMS: 0), so the conflicts are its loads' and stores'.")
        known = (f"The kernel also executes {num(atoms[0])} shared-memory atomic (ATOMS) instructions, whose same-address "
                 "updates are counted as bank conflicts too. ") if atoms else ""  # fmt: skip
        missing = ["shared.bank_conflicts_atomic (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum)"]
        if atoms is None:
            missing.append(f"shared.atomic_instructions or the {OPCODE_TABLE} table")
        return conflicts_or_atomics.not_assessed(missing, [atoms[1]] if atoms else [], known)
    evidence = [k.evidence("shared.bank_conflicts_atomic")]
    parts = []
    for kind in ("load", "store"):
        if k.has(f"shared.bank_conflicts_{kind}"):
            evidence.append(k.evidence(f"shared.bank_conflicts_{kind}"))
            if k.metric(f"shared.bank_conflicts_{kind}") > 0:
                parts.append(f"{num(k.metric(f'shared.bank_conflicts_{kind}'))} of {kind}s")
    with_atoms = ""
    if atoms is not None:
        evidence.append(atoms[1])
        with_atoms = f" of its {num(atoms[0])} ATOMS instructions"
    if conflicts > 0 and atomic >= ATOMIC_SHARE * conflicts:
        others = f"; {' and '.join(parts)} are conflicts of loads and stores" if parts else ""
        return Check(
            me, ATOMICS, evidence,
            f"{num(atomic)} of the {num(conflicts)} extra wavefronts are replays{with_atoms} (shared-memory atomics whose "
            f"lanes update the same or bank-colliding addresses), not a layout conflict{others}.",
        )  # fmt: skip
    by_kind = f" The conflicts include {' and '.join(parts)}." if parts else ""
    if atomic > 0:
        text = f"Of the {num(conflicts)} extra wavefronts, {num(atomic)} are replays{with_atoms} (shared-memory atomics), the rest conflicts of loads and stores.{by_kind}"
    else:
        text = f"None of the extra wavefronts come from shared-memory atomics (atomic conflicts: {num(atomic)}).{by_kind}"
    return Check(me, LOADS_STORES, evidence, text)


@rule(
    "shared-bank-conflicts",
    "shared_bank_conflicts",
    "Bank conflicts multiply shared-memory wavefronts",
    needs=("shared.bank_conflicts", "shared.wavefronts", "sol.l1_pct"),
    collect="--section MemoryWorkloadAnalysis_Tables --section SourceCounters",
    checks=(conflicts_or_atomics,),
    lines=("memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal"),
)
def apply(k: KernelView) -> Finding | None:
    conflicts, wavefronts, l1 = (k.metric(n) for n in ("shared.bank_conflicts", "shared.wavefronts", "sol.l1_pct"))
    if wavefronts <= 0 or conflicts / wavefronts < CONFLICT_SHARE:
        return None
    check = conflicts_or_atomics(k)
    if check.verdict == ATOMICS:
        return None  # the extra wavefronts are mostly atomics': shared_atomics.py reports them
    layout = conflicts
    if check.assessed and k.has("shared.bank_conflicts_atomic"):
        layout = max(0.0, conflicts - k.metric("shared.bank_conflicts_atomic"))  # padding removes only these
    # impact = load/store conflict share of shared wavefronts x L1/shared throughput share
    share = layout / wavefronts
    evidence = [k.evidence("shared.bank_conflicts"), k.evidence("shared.wavefronts"), k.evidence("sol.l1_pct")]
    ideal_text = ""
    if k.has("shared.ideal_wavefronts") and k.metric("shared.ideal_wavefronts") > 0:
        evidence.append(k.evidence("shared.ideal_wavefronts"))
        ideal_text = f" A conflict-free pattern would need {num(k.metric('shared.ideal_wavefronts'))} wavefronts."
    lines = k.hot_lines("memory_l1_wavefronts_shared", ideal="memory_l1_wavefronts_shared_ideal")
    where = locations(lines)
    suggestions = [
        "Pad the shared array's row by one element (e.g. __shared__ float tile[32][33] instead of [32][32]) so that a column access by a warp touches every bank once: consecutive rows then start one bank apart.",
        "Or swizzle the index (store element (r, c) at column c ^ r) to keep the array dense while spreading a column over all banks.",
        "For 8- and 16-byte elements pad by one vector (8 or 16 bytes), not one word: the bank pattern repeats every 128 bytes.",
        "Re-profile and check shared.bank_conflicts drops toward zero and shared.wavefronts toward shared.ideal_wavefronts.",
    ]
    if check.verdict == NOT_ASSESSED and check.evidence:  # atomics executed, their share of the conflicts unknown
        suggestions.append(
            "If the conflicting accesses are the shared-memory atomics (histogram or counting bins), padding will not help: "
            "aggregate equal bins within the warp first (__match_any_sync) or give each warp its own copy of the bins."
        )
    finding = Finding(
        category="shared_bank_conflicts",
        rule="shared-bank-conflicts",
        impact=clamp(share * min(l1, 100.0) / 100),
        confidence=0.9 if check.assessed else 0.7,
        evidence=evidence,
        explanation=(
            f"{num(conflicts)} of the kernel's {num(wavefronts)} shared-memory wavefronts are bank conflicts: "
            f"threads of a warp hit different addresses in the same bank, so each access is replayed once per "
            f"extra address while the L1/shared data path runs at {pct(l1)} of peak.{ideal_text}{where}"
        ),
        suggestions=suggestions,
        explains=("l1_shared_bandwidth", "instruction_issue", "memory_latency"),
        source_lines=lines,
    )
    return cite(finding, check)
