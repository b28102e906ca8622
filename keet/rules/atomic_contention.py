"""Atomic contention: global atomics to the same addresses serialise in the L2 while the memory system idles.

Updates to one address are applied one after another by the L2 slice that owns it, so a hot
address shows as one slice handling far more sectors than the others. The mechanism check reads
the busiest slice's sectors against the mean (lts__t_sectors.max vs .sum / slices): atomics
spread over many addresses wait on their round trips, not on one serialising slice.
"""

from keet.rules.base import (
    Check,
    Finding,
    KernelView,
    cite,
    clamp,
    mechanism,
    num,
    pct,
    rule,
)

# Below this memory throughput (the busiest of L1, L2 and DRAM) the memory system has bandwidth
# to spare, so long waits on memory are serialisation or latency, not bandwidth.
MEMORY_IDLE_PCT = 25.0
# Above this share of the warp cycles per issued instruction spent waiting on memory results,
# the memory queue or the stores in flight at exit, memory waits dominate each warp's time.
STALL_SHARE = 0.5
# Atomic and reduction sectors above this share of all L2 sectors make atomics a real part of
# the L2's work rather than a final counter update next to ordinary loads.
ATOMIC_L2_SHARE = 0.1
# The stall reasons of a warp waiting on its atomics: results, queue space, and stores in flight at exit.
MEMORY_STALLS = ("stall.long_scoreboard", "stall.lg_throttle", "stall.drain")
# One slice handling at least this many times the mean slice's sectors is a hot spot: with
# addresses hashed over the slices, even traffic keeps the busiest slice within a few percent.
HOT_SLICE = 4.0
HOT = "hot addresses"
SPREAD = "spread atomics"
WAITS = {
    "stall.long_scoreboard": "waiting for memory results (long scoreboard)",
    "stall.lg_throttle": "waiting for room in the local/global memory queue (LG throttle)",
    "stall.drain": "waiting at exit for their outstanding updates to drain",
}


@mechanism(
    "hot-l2-slice",
    "atomics serialised on a few hot addresses (one busy L2 slice) or atomics spread over many addresses",
    counters=("l2.sectors_busiest_slice", "l2.sectors", "l2.slices"),
    collect="--metrics lts__t_sectors.max,lts__t_sectors.avg,lts__t_sectors.sum",
)
def hot_slice(k: KernelView) -> Check:
    if not k.has("l2.sectors_busiest_slice", "l2.sectors", "l2.slices"):
        missing = [n for n in ("l2.sectors_busiest_slice", "l2.sectors", "l2.slices") if k.metric(n) is None]
        return hot_slice.not_assessed(missing)
    busiest, sectors, slices = (k.metric(n) for n in ("l2.sectors_busiest_slice", "l2.sectors", "l2.slices"))
    evidence = [k.evidence("l2.sectors_busiest_slice"), k.evidence("l2.sectors"), k.evidence("l2.slices")]
    if sectors > 0 and slices > 0 and busiest >= HOT_SLICE * sectors / slices:
        return Check(hot_slice.id, HOT, evidence,
                     f"One of the {num(slices)} L2 slices handled {num(busiest)} of the L2's {num(sectors)} sectors: the updates pile onto the few addresses that slice owns.")  # fmt: skip
    return Check(hot_slice.id, SPREAD, evidence,
                 f"The L2's {num(sectors)} sectors are spread over its {num(slices)} slices (the busiest handled {num(busiest)}): the atomics "
                 "target many addresses, so warps wait on each update's round trip to the L2 rather than on one serialising slice.")  # fmt: skip


@rule(
    "atomic-contention",
    "atomic_contention",
    "Global atomics serialise on contended addresses: warps wait on memory while the memory system idles",
    needs=("global.atomic_instructions", "issue.cycles_per_issue", "stall.long_scoreboard", "sol.memory_pct"),
    collect="--section MemoryWorkloadAnalysis_Chart --section WarpStateStats --section SpeedOfLight",
    checks=(hot_slice,),
    lines=tuple("smsp__pcsamp_warps_issue_stalled_" + name.removeprefix("stall.") for name in WAITS if name != "stall.drain"),
)
def apply(k: KernelView) -> Finding | None:
    atomics = k.metric("global.atomic_instructions")
    cpi = k.metric("issue.cycles_per_issue")
    memory = k.metric("sol.memory_pct")
    if atomics <= 0 or cpi <= 0 or memory >= MEMORY_IDLE_PCT:
        return None
    stalls = [name for name in MEMORY_STALLS if k.has(name)]
    waiting = sum(k.metric(name) for name in stalls)
    if waiting < STALL_SHARE * cpi:
        return None
    atomic_sectors = k.metric("l2.sectors_atomic") if k.has("l2.sectors_atomic", "l2.sectors") else None
    if atomic_sectors is not None and atomic_sectors < ATOMIC_L2_SHARE * k.metric("l2.sectors"):
        return None  # atomics are a small part of the L2's work: the waits are ordinary memory latency
    evidence = [
        k.evidence("global.atomic_instructions", 0.0, ">"),
        k.evidence("sol.memory_pct", MEMORY_IDLE_PCT, "<"),
        k.evidence("issue.cycles_per_issue"),
    ]
    evidence += [k.evidence(name) for name in stalls]
    l2 = ""
    if atomic_sectors is not None:
        evidence += [k.evidence("l2.sectors_atomic", ATOMIC_L2_SHARE * k.metric("l2.sectors"), ">="), k.evidence("l2.sectors")]
        l2 = f" ({num(atomic_sectors)} of the L2's {num(k.metric('l2.sectors'))} sectors are atomic updates)"
    parts = [f"{num(k.metric(name))} {WAITS[name]}" for name in stalls]
    waits = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    lines = []
    for name in sorted(stalls, key=k.metric, reverse=True):
        if name != "stall.drain":  # drain samples land on the exit, not on the atomic
            lines = k.hot_lines("smsp__pcsamp_warps_issue_stalled_" + name.removeprefix("stall."))
            if lines:
                break
    where = ""
    if lines:
        where = " The waits are at " + "; ".join(
            f"{s.file.rsplit('/', 1)[-1]}:{s.line}" + (f" `{s.text.strip()}`" if s.text else "") for s in lines
        ) + "."
    per_instruction = atomic_sectors / atomics if atomic_sectors is not None else None
    check = hot_slice(k)
    if check.verdict == SPREAD:
        cause = "each update is a round trip to the L2 slice that owns its address, and every warp waits for its updates"
    else:
        cause = "updates to the same addresses are serialised by the L2 slice that owns them, and every warp queues behind them"
    spread_hot = [] if check.verdict == SPREAD else [
        "Spread a hot counter over several addresses in different 32-byte sectors (e.g. index by blockIdx.x % 64) and sum the copies at the end, so several L2 slices work in parallel."
    ]  # fmt: skip
    # impact = (long scoreboard + LG throttle + drain stall cycles) / warp cycles per issued instruction
    finding = Finding(
        category="atomic_contention",
        rule="atomic-contention",
        impact=clamp(waiting / cpi),
        confidence=0.9 if atomic_sectors is not None and check.verdict != SPREAD else 0.7,
        evidence=evidence,
        explanation=(
            f"The kernel executes {num(atomics)} warp-level global atomic or reduction instructions{l2}, and its warps "
            f"take {num(cpi)} cycles per issued instruction, of which they spend {waits}, while the "
            f"memory system runs at only {pct(memory)} of its throughput (idle below {pct(MEMORY_IDLE_PCT)}). Bandwidth is "
            f"not the limit: {cause}.{where}"
        ),
        suggestions=[
            "Aggregate before the global atomic: reduce within the warp first (__reduce_add_sync for integers, a __shfl_down_sync tree for floats, or cooperative_groups::reduce) and let one lane issue the atomic"
            + (f"; each atomic instruction here carries about {per_instruction:.0f} lane updates, so that alone divides the L2's serialised updates by as much." if per_instruction and per_instruction > 1.5 else "."),
            "Privatise: accumulate per block in shared memory (shared atomics are resolved in the SM) and issue one global atomic per block at the end, or write per-block partials and reduce them in a second pass.",
            *spread_hot,
            "Prefer integer or fixed-point accumulation where exactness or order matters: integer RED operations are cheaper in the L2 than floating-point ones, and the result no longer depends on the update order.",
        ],
        explains=("memory_latency",),
        source_lines=lines,
    )
    return cite(finding, check)
