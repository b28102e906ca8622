"""Tensor compute: the tensor-core pipe (HMMA, IMMA, DMMA, GMMA) runs near its peak.

Which instructions feed the pipe decides the advice: a kernel on warp-level mma.sync (HMMA) on
Hopper can move to warpgroup wgmma; one already on HGMMA/QGMMA cannot (checks.matrix_path reads
the per-opcode SASS counts; without them the advice says what to look for).
"""

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
from keet.rules.checks import NO_MMA, WARP_LEVEL, WARPGROUP, matrix_path

# Above this share of peak over active cycles the tensor pipe is the SM's busiest unit: the
# kernel sits within 1.7x of its matrix-instruction roofline, with operand delivery keeping up.
BOUND_PCT = 60.0
# At and above this the pipe is saturated for the instruction shape used.
SATURATED_PCT = 80.0


@rule(
    "tensor-compute",
    "tensor_compute",
    "Tensor-core pipe near its peak: time is matrix instructions over the tensor-core throughput",
    needs=("pipe.tensor_pct",),
    collect="--section ComputeWorkloadAnalysis --section SpeedOfLight",
    checks=(matrix_path,),
)
def apply(k: KernelView) -> Finding | None:
    tensor = k.metric("pipe.tensor_pct")
    if tensor < BOUND_PCT:
        return None
    evidence = [k.evidence("pipe.tensor_pct", BOUND_PCT, ">=")]

    active, idle_note = active_share(k, evidence, "tensor pipe")
    detail = ""
    if k.has("inst.tensor"):
        evidence.append(k.evidence("inst.tensor"))
        detail += f" It executes {num(k.metric('inst.tensor'))} warp-level matrix instructions."
    if k.has("issue.active_pct"):
        evidence.append(k.evidence("issue.active_pct"))
        detail += (
            f" The schedulers issue in only {pct(k.metric('issue.active_pct'))} of the cycles: each matrix instruction "
            "keeps the tensor pipe busy for many cycles, so nothing else is in the way."
        )
    if k.has("stall.math_pipe_throttle", "issue.cycles_per_issue"):
        evidence += [k.evidence("stall.math_pipe_throttle"), k.evidence("issue.cycles_per_issue")]
        detail += (
            f" Warps wait {num(k.metric('stall.math_pipe_throttle'))} of their {num(k.metric('issue.cycles_per_issue'))} "
            "cycles between issues for the busy pipe."
        )

    check = matrix_path(k)
    # impact = tensor pipe utilisation (share of peak over active cycles) x SM active cycles / elapsed cycles
    finding = Finding(
        category="tensor_compute",
        rule="tensor-compute",
        impact=clamp(tensor / 100 * active),
        confidence=0.9 if tensor >= SATURATED_PCT else 0.7,
        evidence=evidence,
        explanation=(
            f"The tensor-core pipe is busy {pct(tensor)} of the active cycles (bound at {pct(BOUND_PCT)} and above): "
            f"operands arrive fast enough and the kernel's time is its matrix-multiply-accumulate work over the tensor "
            f"cores' throughput for the instruction shape and precision it uses.{detail}{idle_note}"
        ),
        suggestions=[
            *instruction_advice(k, check.verdict),
            *precision_advice(check),
            "Exploit structure: 2:4 structured sparsity doubles the effective rate; skip or batch tiles that are known zero or padding.",
            f"At {tensor:.0f}% of peak the pipe is {'saturated: the remaining gains are in instruction choice and precision, not scheduling.' if tensor >= SATURATED_PCT else 'not yet saturated: deeper pipelining of operand loads (more stages, TMA) can still raise it.'}",
        ],
    )
    return cite(finding, check)


def instruction_advice(k: KernelView, verdict: str) -> list[str]:
    """Move to warpgroup MMA only where the kernel is not on it already and the GPU has it."""
    major = (k.device.compute_capability or (0, 0))[0]
    if verdict == WARPGROUP:
        return [
            ("The kernel already issues warpgroup MMA, the fastest tensor-core path of this GPU: what remains is keeping it fed "
            "(TMA loads several stages ahead, producer/consumer warp specialisation, the widest instruction tile the problem allows) "
            "and doing fewer or cheaper multiply-accumulates.")
        ]
    if verdict == WARP_LEVEL and major == 9:
        return ["On Hopper, move from warp-level mma.sync/WMMA to warpgroup wgmma (CUTLASS 3 or cuBLAS) fed by TMA: the synchronous per-warp instructions top out well below the H100/H200 dense peak that wgmma reaches."]
    if verdict == WARP_LEVEL and major >= 10:
        return ["On Blackwell, move from warp-level mma.sync/WMMA to the tcgen05 (UMMA) instructions with tensor memory (CUTLASS 3.8+ or cuBLAS): the per-warp instructions reach a fraction of the dense peak."]
    if verdict not in (WARP_LEVEL, NO_MMA) and major in (9, 10):  # not assessed
        return ["If the kernel's SASS (cuobjdump -sass) shows HMMA but no HGMMA, it runs warp-level mma.sync: move to warpgroup wgmma (CUTLASS 3 or cuBLAS) fed by TMA, which reaches the dense peak that mma.sync does not; if it shows HGMMA it is already there."]
    return []


def precision_advice(check) -> list[str]:
    """A cheaper precision, unless the kernel already runs FP8 (QGMMA)."""
    if any(e.metric.endswith("[QGMMA]") for e in check.evidence):
        return ["The kernel already multiplies in FP8 (QGMMA), the cheapest dense format of this GPU: precision offers no further rate here."]
    mma_sync = "" if check.verdict == WARPGROUP else ", and FP16 accumulation doubles it again on the mma.sync path"
    return [f"Use a cheaper precision where accuracy allows: FP8 (e4m3/e5m2) doubles the dense rate of FP16/BF16 on Hopper{mma_sync}."]
