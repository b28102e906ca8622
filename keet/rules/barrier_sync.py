"""Barrier synchronisation: warps spend much of their time waiting at block-wide barriers."""

from keet.rules.base import Finding, KernelView, clamp, num, pct, rule

# Above this share of the warp cycles per issued instruction spent at a barrier, waiting for
# the slowest warp of the block costs more than the latency a barrier normally adds (a few tens
# of cycles per barrier, well under a third of a warp's time in balanced code).
BARRIER_SHARE = 0.3
# Every stall reason, to tell whether the barrier is the largest one.
STALLS = ("stall.long_scoreboard", "stall.short_scoreboard", "stall.barrier", "stall.membar", "stall.mio_throttle",
          "stall.lg_throttle", "stall.math_pipe_throttle", "stall.tex_throttle", "stall.wait", "stall.not_selected",
          "stall.dispatch_stall", "stall.no_instruction", "stall.branch_resolving", "stall.drain", "stall.imc_miss",
          "stall.sleeping", "stall.misc")  # fmt: skip
NAMES = {name: name.removeprefix("stall.").replace("_", " ") for name in STALLS}


@rule(
    "barrier-sync",
    "barrier_sync",
    "Warps stall at block barriers (__syncthreads) for a large share of their time",
    needs=("stall.barrier", "issue.cycles_per_issue"),
    collect="--section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis",
    lines=("smsp__pcsamp_warps_issue_stalled_barrier",),
)
def apply(k: KernelView) -> Finding | None:
    barrier = k.metric("stall.barrier")
    cpi = k.metric("issue.cycles_per_issue")
    if cpi <= 0 or barrier < BARRIER_SHARE * cpi:
        return None
    evidence = [k.evidence("stall.barrier", BARRIER_SHARE * cpi, ">="), k.evidence("issue.cycles_per_issue")]
    others = [name for name in STALLS if name != "stall.barrier" and k.has(name)]
    runner_up = max(others, key=k.metric, default=None)
    top = runner_up is None or k.metric(runner_up) < barrier
    detail = ""
    if runner_up is not None:
        evidence.append(k.evidence(runner_up, barrier, "<" if top else ">="))
        detail += f" The next stall reason, {NAMES[runner_up]}, accounts for {num(k.metric(runner_up))} cycles."
    if k.has("pipe.adu_pct"):
        evidence.append(k.evidence("pipe.adu_pct"))
        detail += f" The ADU pipe, which executes the barrier instructions, is {pct(k.metric('pipe.adu_pct'))} busy."
    block = k.metric("launch.block_size") if k.has("launch.block_size") else None
    if block is not None:
        evidence.append(k.evidence("launch.block_size"))
        detail += f" Each barrier waits for all {num(block)} threads of the block."
    lines = k.hot_lines("smsp__pcsamp_warps_issue_stalled_barrier")
    if lines:
        detail += " Warps wait mostly at " + "; ".join(
            f"{s.file.rsplit('/', 1)[-1]}:{s.line}" + (f" `{s.text.strip()}`" if s.text else "") for s in lines
        ) + "."
    warps = f"{block / 32:.0f} warps" if block is not None else "all warps of the block"
    # impact = barrier stall cycles / warp cycles per issued instruction (share of each warp's time at barriers)
    return Finding(
        category="barrier_sync",
        rule="barrier-sync",
        impact=clamp(barrier / cpi),
        confidence=0.85 if top else 0.6,
        evidence=evidence,
        explanation=(
            f"Warps spend {num(barrier)} of their {num(cpi)} cycles between issued instructions stalled at a block-wide "
            f"barrier (barrier-bound at {num(BARRIER_SHARE * cpi)} cycles and above): too little work separates the "
            f"__syncthreads calls, or the warps reach them unevenly, so most warps sit waiting for the slowest one of "
            f"their block.{detail}"
        ),
        suggestions=[
            "Synchronise less often: do more work per barrier (process several elements per thread between __syncthreads), and use double-buffered shared memory so one barrier per iteration replaces a write-barrier plus a read-barrier.",
            "Keep data exchange inside a warp where possible: __shfl_sync, __reduce_*_sync or cooperative_groups tiles synchronise 32 lanes without a block barrier (arrange the data so partners are in the same warp).",
            f"Smaller blocks wait for fewer warps per barrier and let other resident blocks run while one waits: this kernel's blocks have {warps}; several blocks of 128-256 threads per SM hide barrier waits better than one or two large blocks.",
            "Balance the work before each barrier: divergent or data-dependent loops make every warp wait for the slowest; for producer/consumer patterns use named barriers (bar.sync with a count) or cuda::barrier arrive/wait so only the warps that need the data wait.",
        ],
        source_lines=lines,
    )
