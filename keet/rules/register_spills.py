"""Register spills: values that do not fit the registers go to local memory, and back, through L1/L2.

Local memory is per-thread stack in device memory, cached in L1 and L2. Spill loads and
stores travel the same LSU/L1 path as global accesses: when they are a large part of the
kernel's memory traffic they fill the local/global queue (lg_throttle stalls) and keep warps
waiting for their results (long-scoreboard stalls), and overflowing the L1 they become L2
(and DRAM) traffic, which then looks like an L2 or DRAM bandwidth problem.

Local memory also holds per-thread arrays the compiler cannot keep in registers (indexed with
values known only at run time), whatever the register budget. The mechanism check tells the two
apart with ptxas's own marking of spill instructions (sass__inst_executed_register_spilling):
only spills are helped by more registers; a local array needs constant indices or shared memory.
"""

from __future__ import annotations

from keet.rules.base import (
    NOT_ASSESSED,
    OPCODE_TABLE,
    Check,
    Evidence,
    Finding,
    KernelView,
    cite,
    clamp,
    mechanism,
    num,
    pct,
    rule,
)
from keet.rules.occupancy_registers import registers_for_blocks

# Local sectors must be at least this share of all L1 load/store sectors (local + global)
# before spills shape the kernel's memory behaviour; below it they are a minor client.
MIN_LOCAL_SHARE = 0.1
# Per-PC source counter of L2 sectors for local accesses (SourceCounters), used for hot lines.
LOCAL_LINE_COUNTER = "memory_l2_theoretical_sectors_local"
# At least this share of the local-memory instructions marked as spills by ptxas makes the
# traffic register spills; below it most of it is a per-thread array placed in local memory.
SPILL_SHARE = 0.5
SPILLS = "register spills"
LOCAL_ARRAY = "local array"


def local_instructions(k: KernelView) -> tuple[float, float, list[Evidence]] | None:
    """Warp-level local loads and stores executed (LDL, STL) with their evidence: the canonical
    counters, else the per-opcode table; None when the profile has neither."""
    if k.has("local.load_instructions", "local.store_instructions"):
        return (k.metric("local.load_instructions"), k.metric("local.store_instructions"),
                [k.evidence("local.load_instructions"), k.evidence("local.store_instructions")])  # fmt: skip
    table = k.opcodes()
    if table is None:
        return None
    loads, stores = table.get("LDL", 0.0), table.get("STL", 0.0)
    return loads, stores, [k.opcode_evidence("LDL", loads), k.opcode_evidence("STL", stores)]


@mechanism(
    "spills-or-local-array",
    "register spills or a per-thread array in local memory",
    counters=("local.spill_instructions", "local.load_instructions", "local.store_instructions", OPCODE_TABLE),
    collect="--metrics sass__inst_executed_register_spilling,sass__inst_executed_local_loads,sass__inst_executed_local_stores",
)
def spills_or_local_array(k: KernelView) -> Check:
    """ptxas marks the LDL/STL it emits as spills; a local array's LDL/STL are not marked."""
    local = local_instructions(k)
    spills = k.metric("local.spill_instructions")
    if spills is None or local is None:
        missing = (["local.spill_instructions (sass__inst_executed_register_spilling)"] if spills is None else []) + (
            ["local.load_instructions / local.store_instructions"] if local is None else [])  # fmt: skip
        return spills_or_local_array.not_assessed(missing)
    loads, stores, evidence = local
    total = loads + stores
    evidence = [k.evidence("local.spill_instructions"), *evidence]
    counts = f"{num(loads)} LDL and {num(stores)} STL"
    if total <= 0:
        return Check(spills_or_local_array.id, "no local memory", evidence, f"The kernel executes no local-memory instructions ({counts}).")
    if spills >= SPILL_SHARE * total:
        rest = "" if spills >= total else " The others access a per-thread array in local memory."
        return Check(spills_or_local_array.id, SPILLS, evidence,
                     f"ptxas marked {num(spills)} of its {counts} instructions as register spills and fills.{rest}")  # fmt: skip
    marked = "None" if spills <= 0 else f"Only {num(spills)}"
    return Check(
        spills_or_local_array.id, LOCAL_ARRAY, evidence,
        f"{marked} of its {counts} instructions are register spills (spill instructions: {num(spills)}): the traffic is a "
        "per-thread array the compiler placed in local memory because it is indexed with values known only at run time, "
        "so more registers would not remove it.",
    )  # fmt: skip


@rule(
    "register-spills",
    "register_spills",
    "Local-memory (spill) traffic is a large part of the kernel's memory traffic and stalls",
    needs=(
        "local.load_sectors", "local.store_sectors", "global.load_sectors", "global.store_sectors",
        "stall.lg_throttle", "stall.long_scoreboard", "issue.cycles_per_issue",
    ),
    collect="--section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SourceCounters",
    checks=(spills_or_local_array,),
    lines=(LOCAL_LINE_COUNTER,),
)  # fmt: skip
def apply(k: KernelView) -> Finding | None:
    local = k.metric("local.load_sectors") + k.metric("local.store_sectors")
    total = local + k.metric("global.load_sectors") + k.metric("global.store_sectors")
    cpi = k.metric("issue.cycles_per_issue")
    if local <= 0 or total <= 0 or cpi <= 0:
        return None
    share = local / total
    if share < MIN_LOCAL_SHARE:
        return None
    throttle, scoreboard = k.metric("stall.lg_throttle"), k.metric("stall.long_scoreboard")
    stalled = clamp((throttle + scoreboard) / cpi)
    # impact = local share of L1 sectors x (lg_throttle + long_scoreboard) / cycles per issue:
    # the memory-stall part of each warp's time, in proportion to the traffic spills cause.
    impact = clamp(share * stalled)
    evidence = [
        k.evidence("local.load_sectors"),
        k.evidence("local.store_sectors"),
        k.evidence("global.load_sectors"),
        k.evidence("global.store_sectors"),
        k.evidence("stall.lg_throttle"),
        k.evidence("stall.long_scoreboard"),
        k.evidence("issue.cycles_per_issue"),
    ]
    registers = k.metric("launch.registers_per_thread")
    register_text = ""
    if registers is not None:
        evidence.append(k.evidence("launch.registers_per_thread"))
        register_text = f" The kernel is compiled to {num(registers)} registers per thread."
    l2_text = ""
    if k.has("sol.l2_pct"):
        evidence.append(k.evidence("sol.l2_pct"))
        l2_text = f" The L2 runs at {pct(k.metric('sol.l2_pct'))} of peak with this traffic."
    lines = k.hot_lines(LOCAL_LINE_COUNTER)
    check = spills_or_local_array(k)
    array = check.verdict == LOCAL_ARRAY
    spilling = check.verdict == SPILLS
    what = {SPILLS: "register spills", LOCAL_ARRAY: "a per-thread array"}.get(check.verdict, "register spills or a per-thread array")
    where = f" The source lines that {'spill' if spilling else 'access local memory'} most are listed with the finding." if lines else ""

    suggestions = []
    if lines:
        suggestions.append(
            f"Start with the lines that {'spill' if spilling else 'access local memory'} most: "
            + "; ".join(f"{s.file.rsplit('/', 1)[-1]}:{s.line} ({s.share:.0%} of local-memory sectors)" for s in lines)
            + ". Arrays indexed by runtime values, or too many values live across a loop there, are what ptxas cannot keep in registers."
        )
    array_advice = [
        (
            "Keep indexing into per-thread arrays compile-time constant (fully unrolled loops, #pragma unroll) so the array lives in "
            "registers, or select the element with a switch or a chain of conditional moves instead of a runtime subscript."
        ),
        (
            "If the index must stay data-dependent, move the array to shared memory (laid out [element][threadIdx.x] so that a "
            "warp's lanes fall in different banks), or spread it over the lanes of a warp and fetch elements with __shfl_sync."
        ),
    ]
    if array:
        suggestions += array_advice + [
            (f"Do not raise the register cap for this: with {'no' if check.evidence[0].value <= 0 else 'few'} spill instructions the array stays "
            "in local memory whatever the register budget, and fewer resident warps would only slow the kernel."),
            "Check `nvcc -Xptxas -v`: a stack frame with 0 bytes spill stores and loads confirms a local array rather than spills.",
        ]
    else:
        suggestions += register_cap_advice(k, registers, conditional=check.verdict == NOT_ASSESSED)
        suggestions += [
            "Check `nvcc -Xptxas -v`: it prints the spill stores/loads and stack frame per kernel; aim for 0 bytes spill.",
            array_advice[0],
            "Reduce live values: shorter live ranges, recomputation of cheap values, narrower types (half2/bf16x2 packing).",
        ]
    confidence = 0.9 if share >= 0.5 else 0.7
    if not check.assessed:
        confidence = min(confidence, 0.7)
    finding = Finding(
        category="register_spills",
        rule="register-spills",
        impact=impact,
        confidence=confidence,
        evidence=evidence,
        explanation=(
            f"The kernel moves {num(k.metric('local.load_sectors'))} local-memory load sectors and "
            f"{num(k.metric('local.store_sectors'))} store sectors ({what}) against "
            f"{num(k.metric('global.load_sectors'))} global load and {num(k.metric('global.store_sectors'))} global store sectors, "
            f"so local memory is {'most' if share >= 0.5 else 'a large part'} of its memory traffic. It queues on the local/global path: {num(throttle)} of the "
            f"{num(cpi)} cycles between two issues of a warp are lg-throttle stalls and {num(scoreboard)} long-scoreboard "
            f"stalls.{register_text}{l2_text}{where}"
        ),
        suggestions=suggestions,
        explains=("l2_bandwidth", "dram_bandwidth", "l1_shared_bandwidth", "memory_latency"),
        source_lines=lines,
    )
    return cite(finding, check)


def register_cap_advice(k: KernelView, registers: float | None, conditional: bool) -> list[str]:
    """Give the compiler more registers: the launch bounds that would, or why none can."""
    when = "If `nvcc -Xptxas -v` reports spill stores, give" if conditional else "Give"
    threads, theoretical = k.metric("launch.block_size"), k.metric("occupancy.theoretical_warps")
    if registers is None or not threads or not theoretical:
        return []
    ceiling = k.attribute("max_registers_per_thread")
    if ceiling is not None and registers >= ceiling:
        return [
            (f"{'If these are spills: the' if conditional else 'The'} kernel already has {registers:.0f} registers per thread, the most a thread can have: no launch bound or "
            "-maxrregcount can remove these spills; only fewer live values can (split the kernel, or keep part of the state in shared memory).")
        ]
    per_block = -(-threads // 32)
    blocks = theoretical / per_block
    options = []
    for fewer in (blocks / 2, blocks / 4):
        if fewer >= 1 and fewer == int(fewer):
            cap = registers_for_blocks(k, fewer, per_block)
            if cap is not None and cap > registers:
                options.append(f"__launch_bounds__({threads:.0f}, {fewer:.0f}) allows {cap} registers ({fewer * per_block:.0f} warps per SM)")
    if options:
        return [
            (f"{when} the compiler more registers than the {registers:.0f} it has now if a launch bound or -maxrregcount "
            f"caps them: {'; '.join(options)}. Fewer resident warps cost less than spill traffic when the spills miss L1.")
        ]
    return [(f"{'If `nvcc -Xptxas -v` reports spill stores, raise' if conditional else 'Raise'} the register cap ({registers:.0f} now) "
            "if __launch_bounds__ or -maxrregcount sets it, trading some occupancy for no spills.")]  # fmt: skip
