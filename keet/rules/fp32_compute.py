"""FP32 compute: the FMA pipe (FFMA, FADD, FMUL) runs near its peak, so arithmetic sets the pace."""

from keet.rules.base import Finding, KernelView, active_share, cite, clamp, pct, rule
from keet.rules.checks import NO_MMA, matrix_path

# Above this share of peak over active cycles the FMA pipe is the SM's busiest unit in any
# realistic mix: the kernel sits within 1.7x of its FP32 roofline and only fewer or cheaper
# operations, not better latency hiding, can buy much more.
BOUND_PCT = 60.0
# At and above this the pipe is saturated: dependent chains and scheduling gaps keep sustained
# FFMA issue a few points short of 100%, so 80% leaves almost nothing to gain from overlap.
SATURATED_PCT = 80.0
# Below this share of elapsed cycles with the SMs active, idle SMs (tail, small grid) cost a
# noticeable part of the runtime that the pipe does not explain; the explanation says so.
ACTIVE_NOTE = 0.9


@rule(
    "fp32-compute",
    "fp32_compute",
    "FMA pipe near its peak: time is FP32 operations over the FP32 throughput",
    needs=("pipe.fma_pct",),
    collect="--section ComputeWorkloadAnalysis --section SpeedOfLight --section SpeedOfLight_RooflineChart",
    checks=(matrix_path,),
)
def apply(k: KernelView) -> Finding | None:
    fma = k.metric("pipe.fma_pct")
    if fma < BOUND_PCT:
        return None
    flops = k.metric("flop.fp32")
    if flops is not None and flops <= 0:
        return None  # the FMA pipe is busy with integer IMADs, not FP32: int_compute's case
    evidence = [k.evidence("pipe.fma_pct", BOUND_PCT, ">=")]
    if flops is not None:
        evidence.append(k.evidence("flop.fp32"))

    active, idle_note = active_share(k, evidence, "FP32 pipe")

    # Confidence: saturated, or at least the busiest SM pipe and busier than the memory system.
    others = [name for name in ("pipe.alu_pct", "pipe.fp64_pct", "pipe.xu_pct", "pipe.tensor_pct", "pipe.lsu_pct") if k.has(name)]
    busiest = all(k.metric(name) <= fma for name in others)
    memory = k.metric("sol.memory_pct") if k.has("sol.memory_pct") else None
    if memory is not None:
        evidence.append(k.evidence("sol.memory_pct", fma, "<" if memory < fma else ">="))
    top_unit = busiest and (memory is None or memory < fma)
    confidence = 0.9 if fma >= SATURATED_PCT else (0.75 if top_unit else 0.55)

    issue = ""
    if k.has("issue.active_pct"):
        evidence.append(k.evidence("issue.active_pct"))
        issue = f" and the schedulers issue in {pct(k.metric('issue.active_pct'))} of the cycles"
    work = f" It executes {flops / 1e9:.3g} GFLOP of single-precision work." if flops is not None else ""
    memory_text = f" Memory throughput is {pct(memory)}, below the pipe's load." if memory is not None and memory < fma else ""

    if fma >= SATURATED_PCT:
        headroom = f"The FMA pipe is at {fma:.0f}% of peak over active cycles, already close to the ceiling: the remaining speed-up must come from less work, not better overlap."
    else:
        headroom = f"The FMA pipe is at {fma:.0f}% of peak over active cycles; raising it toward ~90% (more independent FFMA chains per thread, more resident warps) is worth up to {90 / fma:.2g}x before the work itself must shrink."

    check = matrix_path(k)
    if check.verdict == NO_MMA:
        tensor = "If the arithmetic is a matrix product or convolution, move it to tensor cores (TF32, BF16 or FP16 mma/wgmma, or cuBLAS/CUTLASS): they deliver several times the FP32-pipe throughput per SM."
    elif check.assessed:
        tensor = ("The matrix products already run on tensor cores: the FP32 work is what runs beside them (scaling, epilogues, "
                  "softmax or conversions); fuse it into fewer passes or fold constant factors into the matrix operands.")  # fmt: skip
    else:
        tensor = "If the arithmetic is a matrix product or convolution and the SASS shows no HMMA/HGMMA, move it to tensor cores (TF32, BF16 or FP16 mma/wgmma, or cuBLAS/CUTLASS): they deliver several times the FP32-pipe throughput per SM."
    # impact = FMA pipe utilisation (share of peak over active cycles) x SM active cycles / elapsed cycles
    finding = Finding(
        category="fp32_compute",
        rule="fp32-compute",
        impact=clamp(fma / 100 * active),
        confidence=confidence,
        evidence=evidence,
        explanation=(
            f"The FMA pipe, which executes single-precision FFMA, FADD and FMUL, is busy {pct(fma)} of the active cycles "
            f"(compute-bound at {pct(BOUND_PCT)} and above){issue}: the kernel's time is the floating-point operations it "
            f"performs over the SM's FP32 throughput.{work}{memory_text}{idle_note}"
        ),
        suggestions=[
            "Do fewer FP32 operations: hoist loop-invariant products, precompute constants, and let the compiler contract FMUL+FADD pairs into one FFMA (avoid -fmad=false; write a*b+c or fmaf).",
            tensor,
            "Where precision allows, pack pairs of values into half2/bfloat162 and use HFMA2, which does two operations per lane per instruction.",
            headroom,
        ],
    )
    return cite(finding, check)
