"""FP64 compute: the double-precision pipe (DFMA, DADD, DMUL) runs near its peak."""

from keet.rules.base import (
    Finding,
    KernelView,
    active_share,
    cite,
    clamp,
    num,
    pct,
    rule,
)
from keet.rules.checks import matrix_path

# Above this share of peak over active cycles the FP64 pipe is the SM's busiest unit: the kernel
# sits within 1.7x of its FP64 roofline, and only fewer or cheaper operations can buy much more.
BOUND_PCT = 60.0
# At and above this the pipe is saturated (dependent DFMA chains keep sustained issue a few points
# short of 100%), so better overlap has almost nothing left to gain.
SATURATED_PCT = 80.0


@rule(
    "fp64-compute",
    "fp64_compute",
    "FP64 pipe near its peak: time is double-precision operations over the FP64 throughput",
    needs=("pipe.fp64_pct",),
    collect="--section ComputeWorkloadAnalysis --section SpeedOfLight --section SpeedOfLight_RooflineChart",
    checks=(matrix_path,),
)
def apply(k: KernelView) -> Finding | None:
    fp64 = k.metric("pipe.fp64_pct")
    if fp64 < BOUND_PCT:
        return None
    evidence = [k.evidence("pipe.fp64_pct", BOUND_PCT, ">=")]
    work = ""
    if k.has("flop.fp64"):
        evidence.append(k.evidence("flop.fp64"))
        work = f" It executes {k.metric('flop.fp64') / 1e9:.3g} GFLOP of double-precision work."

    active, idle_note = active_share(k, evidence, "FP64 pipe")
    throttle = ""
    if k.has("stall.math_pipe_throttle", "issue.cycles_per_issue"):
        evidence += [k.evidence("stall.math_pipe_throttle"), k.evidence("issue.cycles_per_issue")]
        throttle = (
            f" Warps wait {num(k.metric('stall.math_pipe_throttle'))} of their {num(k.metric('issue.cycles_per_issue'))} "
            "cycles between issues for the busy math pipe."
        )

    check = matrix_path(k)
    if any(e.metric.endswith("[DMMA]") for e in check.evidence):
        tensor = "The matrix products already run on the FP64 tensor cores (DMMA): the FP64 pipe's load is the double-precision work beside them; move more of it into the matrix operations or out of FP64."
    elif check.assessed:
        tensor = "If the FP64 work is a matrix product, use the FP64 tensor cores (DMMA via cuBLAS/CUTLASS, mma.sync m8n8k4.f64): on H100 they deliver twice the FP64 vector-pipe rate."
    else:
        tensor = "If the FP64 work is a matrix product and the SASS shows no DMMA, use the FP64 tensor cores (DMMA via cuBLAS/CUTLASS, mma.sync m8n8k4.f64): on H100 they deliver twice the FP64 vector-pipe rate."
    # impact = FP64 pipe utilisation (share of peak over active cycles) x SM active cycles / elapsed cycles
    finding = Finding(
        category="fp64_compute",
        rule="fp64-compute",
        impact=clamp(fp64 / 100 * active),
        confidence=0.9 if fp64 >= SATURATED_PCT else 0.7,
        evidence=evidence,
        explanation=(
            f"The double-precision pipe is busy {pct(fp64)} of the active cycles (compute-bound at {pct(BOUND_PCT)} "
            f"and above): the kernel's time is its FP64 operations over the SM's FP64 throughput, which is half the "
            f"FP32 rate on an H100/H200 SXM and far lower on most other GPUs.{work}{throttle}{idle_note}"
        ),
        suggestions=[
            "Check which values really need double precision: accumulate in FP64 but compute the bulk in FP32 (twice the throughput on H100/H200, 32-64x on consumer and many workstation GPUs), or use mixed-precision iterative refinement.",
            tensor,
            "Remove FP64 operations the compiler keeps by accident: double literals (write 1.0f), math functions without the f suffix (sin vs sinf) and implicit promotions in mixed float/double expressions all run on the FP64 pipe.",
            f"At {fp64:.0f}% of the FP64 pipe's peak, {'the pipe is saturated: only fewer operations help.' if fp64 >= SATURATED_PCT else f'more independent DFMA chains per thread could still gain up to {90 / fp64:.2g}x.'}",
        ],
    )
    return cite(finding, check)
