"""Integer compute: the ALU pipe (integer add, logic, shifts, compares) runs near its peak."""

from keet.rules.base import Finding, KernelView, active_share, clamp, num, pct, rule

# Above this share of peak over active cycles the ALU pipe (half the FMA pipe's lanes) is the
# SM's busiest unit: the kernel sits within 1.7x of its integer-instruction roofline.
BOUND_PCT = 60.0
# At and above this the pipe is saturated: only fewer or rebalanced instructions help.
SATURATED_PCT = 80.0


@rule(
    "int-compute",
    "int_compute",
    "Integer ALU pipe near its peak (or the FMA pipe full of IMADs): time is integer instructions over their throughput",
    needs=("pipe.alu_pct",),
    collect="--section ComputeWorkloadAnalysis --section SpeedOfLight --section SpeedOfLight_RooflineChart",
)
def apply(k: KernelView) -> Finding | None:
    alu = k.metric("pipe.alu_pct")
    # With no FP32 operations at all, whatever keeps the FMA pipe busy is integer (IMAD, IADD3 on the
    # FMA datapath), so that pipe counts as integer compute too.
    fma = k.metric("pipe.fma_pct")
    integer_fma = fma is not None and k.has("flop.fp32") and k.metric("flop.fp32") <= 0
    top = max(alu, fma) if integer_fma else alu
    if top < BOUND_PCT:
        return None
    evidence = [k.evidence("pipe.alu_pct", BOUND_PCT, ">=" if alu >= BOUND_PCT else "<")]
    if integer_fma:
        evidence += [k.evidence("pipe.fma_pct", BOUND_PCT, ">=" if fma >= BOUND_PCT else "<"), k.evidence("flop.fp32")]
        pipes = (
            f"The ALU pipe is busy {pct(alu)} and the FMA pipe {pct(fma)} of the active cycles; with "
            f"{num(k.metric('flop.fp32'))} floating-point operations in the kernel, the FMA pipe's work is integer "
            "multiply-adds (IMAD) as well"
        )
    else:
        pipes = (
            f"The ALU pipe, which executes integer adds, logic, shifts and compares at half the FMA pipe's rate, is busy "
            f"{pct(alu)} of the active cycles"
        )

    active, idle_note = active_share(k, evidence, "integer pipe")
    balance = ""
    if not integer_fma and fma is not None:
        evidence.append(k.evidence("pipe.fma_pct"))
        if fma < alu:
            balance = f" The FMA pipe, which can also execute integer multiply-adds, is only {pct(fma)} busy."

    # impact = busiest integer pipe's utilisation (share of peak over active cycles) x SM active cycles / elapsed cycles
    return Finding(
        category="int_compute",
        rule="int-compute",
        impact=clamp(top / 100 * active),
        confidence=0.9 if top >= SATURATED_PCT else 0.7,
        evidence=evidence,
        explanation=(
            f"{pipes}. At {pct(BOUND_PCT)} of its peak and above an integer pipe sets the pace: the kernel's time is its "
            f"integer instructions over the SM's integer throughput.{balance}{idle_note}"
        ),
        suggestions=[
            "Fewer integer instructions: hoist index and address arithmetic out of inner loops, use strength reduction (pointer increments instead of recomputed i*stride+j), and let the compiler fuse logic into LOP3 (three-input) and shifts into funnel shifts (__funnelshift_l for rotates).",
            "Rebalance toward the FMA pipe, which executes integer multiply-adds (IMAD) next to the ALU: where a shift-and-add or shift-and-xor step can be written as a multiply or multiply-add (x*9 instead of x+(x<<3)), it moves off the ALU pipe, so the two pipes share the load.",
            "Use narrower or packed operations where they fit: byte permutes (__byte_perm), __vadd4/__vsub4 SIMD-in-a-word and __popc/__clz replace several shifts and masks each.",
            "Avoid 64-bit integer arithmetic in hot loops (each op is two or more 32-bit instructions); keep indices 32-bit where the range allows.",
        ],
    )
