"""Instruction issue: the schedulers issue almost every cycle while no single pipe is saturated."""

from keet.rules.base import Finding, KernelView, clamp, num, pct, rule

# A scheduler issues at most one instruction per cycle; above this share of issue slots busy
# the instruction stream itself is the limit (dependencies and stalls leave the last ~10% idle).
ISSUE_BOUND_PCT = 80.0
# A pipe at or above this share of its peak is saturated and is the limiter in its own right
# (the per-pipe rules report it); issue-bound means every pipe stays below it.
PIPE_SATURATED_PCT = 80.0
# Above this the issue slots are all but full.
ISSUE_SATURATED_PCT = 90.0
# The execution pipes whose utilisation Nsight Compute reports (any may be absent from a profile).
PIPES = ("pipe.fma_pct", "pipe.alu_pct", "pipe.fp64_pct", "pipe.fp16_pct", "pipe.xu_pct", "pipe.tensor_pct",
         "pipe.lsu_pct", "pipe.adu_pct", "pipe.uniform_pct")  # fmt: skip
NAMES = {"pipe.fma_pct": "FMA", "pipe.alu_pct": "ALU", "pipe.fp64_pct": "FP64", "pipe.fp16_pct": "FP16", "pipe.xu_pct": "XU",
         "pipe.tensor_pct": "tensor", "pipe.lsu_pct": "LSU", "pipe.adu_pct": "ADU", "pipe.uniform_pct": "uniform"}  # fmt: skip


@rule(
    "instruction-issue",
    "instruction_issue",
    "Issue slots saturated with no pipe saturated: time is the number of instructions issued",
    needs=("issue.active_pct", "pipe.fma_pct", "pipe.alu_pct"),
    collect="--section ComputeWorkloadAnalysis --section InstructionStats",
)
def apply(k: KernelView) -> Finding | None:
    issue = k.metric("issue.active_pct")
    if issue < ISSUE_BOUND_PCT:
        return None
    pipes = [name for name in PIPES if k.has(name)]
    busiest = max(pipes, key=k.metric)
    if k.metric(busiest) >= PIPE_SATURATED_PCT:
        return None  # a saturated pipe, not issue bandwidth, is the limit
    evidence = [k.evidence("issue.active_pct", ISSUE_BOUND_PCT, ">="), k.evidence(busiest, PIPE_SATURATED_PCT, "<")]
    runner_up = max((name for name in pipes if name != busiest), key=k.metric, default=None)
    spread = ""
    if runner_up is not None:
        evidence.append(k.evidence(runner_up, PIPE_SATURATED_PCT, "<"))
        spread = (
            f"; the next is the {NAMES[runner_up]} pipe at {pct(k.metric(runner_up))}, so the instructions are spread over "
            "several pipes that each have spare throughput"
        )
    count = ""
    if k.has("inst.executed"):
        evidence.append(k.evidence("inst.executed"))
        count = f" The kernel executes {num(k.metric('inst.executed'))} warp-level instructions."

    # impact = issue-slot utilisation (share of the elapsed cycles in which a scheduler issued)
    return Finding(
        category="instruction_issue",
        rule="instruction-issue",
        impact=clamp(issue / 100),
        confidence=0.85 if issue >= ISSUE_SATURATED_PCT else 0.7,
        evidence=evidence,
        explanation=(
            f"The warp schedulers issue an instruction in {pct(issue)} of the cycles (issue-bound at {pct(ISSUE_BOUND_PCT)} "
            f"and above), yet the busiest pipe, {NAMES[busiest]}, is only {pct(k.metric(busiest))} busy (saturated at "
            f"{pct(PIPE_SATURATED_PCT)}){spread}. Each scheduler issues at most one instruction per cycle, so the kernel's "
            f"time is the number of instructions it issues, not any one unit's throughput.{count}"
        ),
        suggestions=[
            "Issue fewer instructions for the same work: vectorise memory accesses (float4, 16-byte loads) so one instruction moves four values, and use packed types (half2/bfloat162, __vadd4) that do two or four operations per lane.",
            "Fuse operations: FMUL+FADD into FFMA, three-input logic into LOP3, shift+add into LEA/IMAD; check the SASS for MOVs, conversions and predicate shuffles that a restructured expression avoids.",
            "Remove per-iteration overhead: unroll inner loops (#pragma unroll) so induction-variable updates and branches are amortised, and hoist warp-uniform address and index arithmetic out of loops (it then runs once, or on the uniform datapath).",
            f"Rebalancing between pipes will not help here (busiest pipe {k.metric(busiest):.0f}%): only a shorter instruction stream, or a cheaper algorithm, shortens the kernel.",
        ],
    )
