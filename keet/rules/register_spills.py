"""Register spills: values that do not fit the registers go to local memory, and back, through L1/L2.

Local memory is per-thread stack in device memory, cached in L1 and L2. Spill loads and
stores travel the same LSU/L1 path as global accesses: when they are a large part of the
kernel's memory traffic they fill the local/global queue (lg_throttle stalls) and keep warps
waiting for their results (long-scoreboard stalls), and overflowing the L1 they become L2
(and DRAM) traffic, which then looks like an L2 or DRAM bandwidth problem.
"""

from __future__ import annotations

from keet.rules.base import Finding, KernelView, clamp, num, pct, rule
from keet.rules.occupancy_registers import registers_for_blocks

# Local sectors must be at least this share of all L1 load/store sectors (local + global)
# before spills shape the kernel's memory behaviour; below it they are a minor client.
MIN_LOCAL_SHARE = 0.1
# Per-PC source counter of L2 sectors for local accesses (SourceCounters), used for hot lines.
LOCAL_LINE_COUNTER = "memory_l2_theoretical_sectors_local"


@rule(
    "register-spills",
    "register_spills",
    "Local-memory (spill) traffic is a large part of the kernel's memory traffic and stalls",
    needs=(
        "local.load_sectors", "local.store_sectors", "global.load_sectors", "global.store_sectors",
        "stall.lg_throttle", "stall.long_scoreboard", "issue.cycles_per_issue",
    ),
    collect="--section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SourceCounters",
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
    where = " The source lines that spill most are listed with the finding." if lines else ""

    suggestions = []
    if lines:
        suggestions.append(
            "Start with the lines that spill most: "
            + "; ".join(f"{s.file.rsplit('/', 1)[-1]}:{s.line} ({s.share:.0%} of local-memory sectors)" for s in lines)
            + ". Arrays indexed by runtime values, or too many values live across a loop there, are what ptxas cannot keep in registers."
        )
    threads, theoretical = k.metric("launch.block_size"), k.metric("occupancy.theoretical_warps")
    if registers is not None and threads and theoretical:
        per_block = -(-threads // 32)
        blocks = theoretical / per_block
        options = []
        for fewer in (blocks / 2, blocks / 4):
            if fewer >= 1 and fewer == int(fewer):
                cap = registers_for_blocks(k, fewer, per_block)
                if cap is not None and cap > registers:
                    options.append(
                        f"__launch_bounds__({threads:.0f}, {fewer:.0f}) allows {cap} registers ({fewer * per_block:.0f} warps per SM)"
                    )
        if options:
            suggestions.append(
                f"Give the compiler more registers than the {registers:.0f} it has now if a launch bound or -maxrregcount "
                f"caps them: {'; '.join(options)}. Fewer resident warps cost less than spill traffic when the spills miss L1."
            )
        else:
            suggestions.append(
                f"Raise the register cap ({registers:.0f} now) if __launch_bounds__ or -maxrregcount sets it, trading some occupancy for no spills."
            )
    suggestions += [
        "Check `nvcc -Xptxas -v`: it prints the spill stores/loads and stack frame per kernel; aim for 0 bytes spill.",
        (
            "Keep indexing into per-thread arrays compile-time constant (fully unrolled loops) so the array lives in "
            "registers, or move large per-thread arrays to shared memory where a block can index them cheaply."
        ),
        "Reduce live values: shorter live ranges, recomputation of cheap values, narrower types (half2/bf16x2 packing).",
    ]
    return Finding(
        category="register_spills",
        rule="register-spills",
        impact=impact,
        confidence=0.9 if share >= 0.5 else 0.7,
        evidence=evidence,
        explanation=(
            f"The kernel moves {num(k.metric('local.load_sectors'))} local-memory load sectors and "
            f"{num(k.metric('local.store_sectors'))} store sectors (register spills and stack) against "
            f"{num(k.metric('global.load_sectors'))} global load and {num(k.metric('global.store_sectors'))} global store sectors, "
            f"so spills are {'most' if share >= 0.5 else 'a large part'} of its memory traffic. They queue on the local/global path: {num(throttle)} of the "
            f"{num(cpi)} cycles between two issues of a warp are lg-throttle stalls and {num(scoreboard)} long-scoreboard "
            f"stalls.{register_text}{l2_text}{where}"
        ),
        suggestions=suggestions,
        explains=("l2_bandwidth", "dram_bandwidth", "l1_shared_bandwidth", "memory_latency"),
        source_lines=lines,
    )
