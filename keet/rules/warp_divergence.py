"""Warp divergence: the lanes of a warp take different paths, so instructions run with few lanes active.

Few active lanes have two mechanisms: branches that split a warp (divergent branch targets), or
lanes that are not running at all (threads that returned at a bounds check, or a block size that
is not a multiple of 32), with no branch splitting anything. The mechanism check tells them apart
with smsp__branch_targets_threads_divergent and the block size: the remedies differ.
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

# Lanes per warp on every NVIDIA GPU: a warp instruction costs the same issue slot and pipe
# cycles whether one lane or all of them are active.
WARP_LANES = 32
# Below this average of active threads per warp instruction (three quarters of a warp) at least
# a quarter of the SM's compute throughput is spent on idle lanes.
DIVERGENT_THREADS = 24.0
# Under this fraction of the runtime at stake (idle lanes x SM busy share) the idle lanes do not
# matter: the SM has spare throughput anyway (memory-bound, tiny or idle kernels).
MIN_IMPACT = 0.05


DIVERGENT = "divergent branches"
IDLE_LANES = "idle lanes"


@mechanism(
    "divergent-branches",
    "branches splitting warps or lanes that are not running (early exits, partial warps)",
    counters=("branch.divergent_targets", "launch.block_size"),
    collect="--section SourceCounters --section LaunchStats",
)
def divergent_branches(k: KernelView) -> Check:
    if not k.has("branch.divergent_targets"):
        return divergent_branches.not_assessed(["branch.divergent_targets (smsp__branch_targets_threads_divergent)"])
    targets = k.metric("branch.divergent_targets")
    evidence = [k.evidence("branch.divergent_targets")]
    if targets > 0:
        return Check(divergent_branches.id, DIVERGENT, evidence, f"{num(targets)} branch targets split a warp.")
    partial = ""
    threads = k.metric("launch.block_size")
    if threads is not None:
        evidence.append(k.evidence("launch.block_size"))
        if threads % 32:
            partial = f" The block of {num(threads)} threads is not a whole number of warps, so its last warp always runs partly empty."
    return Check(
        divergent_branches.id, IDLE_LANES, evidence,
        f"No branch split a warp (divergent branch targets: {num(targets)}): the idle lanes belong to threads that are not running, "
        f"those that returned early at a bounds check (partial tiles at the edges of the data) or lanes a block does not fill.{partial}",
    )  # fmt: skip


@rule(
    "warp-divergence",
    "warp_divergence",
    "Few active threads per warp instruction: divergent lanes waste issue slots and pipe throughput",
    needs=("warp.active_threads", "sol.sm_pct"),
    collect="--section WarpStateStats --section SpeedOfLight --section SourceCounters",
    checks=(divergent_branches,),
    lines=("smsp__branch_targets_threads_divergent",),
)
def apply(k: KernelView) -> Finding | None:
    threads = k.metric("warp.active_threads")
    sm = k.metric("sol.sm_pct")
    if threads >= DIVERGENT_THREADS:
        return None
    idle = clamp(1 - threads / WARP_LANES)
    # impact = share of lanes idle (1 - active threads / warp size) x SM throughput share (sol.sm_pct / 100)
    impact = clamp(idle * sm / 100)
    if impact < MIN_IMPACT:
        return None
    evidence = [k.evidence("warp.active_threads", DIVERGENT_THREADS, "<"), k.evidence("sol.sm_pct")]
    detail = ""
    if k.has("warp.predicated_on_threads") and k.metric("warp.predicated_on_threads") < threads - 0.5:
        evidence.append(k.evidence("warp.predicated_on_threads"))
        detail += f" Predication leaves only {num(k.metric('warp.predicated_on_threads'))} of them doing work."
    check = divergent_branches(k)
    branched = check.verdict == DIVERGENT
    idle_lanes = check.verdict == IDLE_LANES
    lines = k.hot_lines("smsp__branch_targets_threads_divergent")
    if lines:
        detail += " The divergent branches are at " + "; ".join(
            f"{s.file.rsplit('/', 1)[-1]}:{s.line}" + (f" `{s.text.strip()}`" if s.text else "") for s in lines
        ) + "."
    if idle_lanes:
        mechanism_text = "lanes of its warps are idle"
        suggestions = [
            "Give every warp a full set of work items: map threads so that bounds checks fail only in a few warps (tile sizes that divide the data, or a grid-stride loop over whole warps), instead of leaving idle lanes in every edge tile.",
            "Use a block size that is a multiple of 32, and for 2-D tiles make threadIdx.x span a multiple of 32 elements of the fastest dimension.",
            "Where the data's shape leaves many partial tiles (narrow or odd dimensions), process several small rows per warp (one row per lane group) so that the lanes stay busy.",
            f"With {threads:.3g} of {WARP_LANES} lanes active, full warps would need up to {WARP_LANES / max(threads, 1):.2g}x fewer warp instructions for the same work.",
        ]
    else:
        mechanism_text = "the lanes of a warp take different paths, and each path runs for the whole warp with the other lanes masked off"
        suggestions = [
            "Make the branch condition uniform per warp: pick the path from the warp index (threadIdx.x / 32) or from data sorted or binned by path, instead of from the lane index or unsorted data, so that all lanes of a warp agree.",
            "Reorganise data-dependent work: compact or sort the items by the branch they take (a prefix-sum partition, or warp-level __ballot_sync + __popc queues) and process each group with full warps.",
            "Where the paths are short and similar, replace the branch with arithmetic selects or a table of coefficients, so every lane executes the same instructions on different data.",
            f"With {threads:.3g} of {WARP_LANES} lanes active, converged warps would need up to {WARP_LANES / max(threads, 1):.2g}x fewer warp instructions for the same work.",
        ]
    finding = Finding(
        category="warp_divergence",
        rule="warp-divergence",
        impact=impact,
        confidence=0.9 if branched else 0.7,
        evidence=evidence,
        explanation=(
            f"Warp instructions execute with only {num(threads)} active threads on average (divergent below "
            f"{num(DIVERGENT_THREADS)}, out of a full warp): {mechanism_text}. With the SMs at {pct(sm)} of their compute throughput, "
            f"the issue slots and pipe cycles spent on idle lanes are runtime, and any busy pipe is busy doing a fraction "
            f"of useful work.{detail}"
        ),
        suggestions=suggestions,
        explains=("fp32_compute", "fp64_compute", "int_compute", "sfu_compute", "instruction_issue"),
        source_lines=lines,
    )
    return cite(finding, check)
