"""VALU- and MFMA-bound kernels on AMD, and wave divergence.

rocprof-compute's System Speed-of-Light gives VALU utilization (SQ_ACTIVE_INST_VALU over CU
cycles, canonical ``amd.valu_util_pct``) and MFMA utilization (SQ_VALU_MFMA_BUSY_CYCLES over
4 x CU cycles, canonical ``pipe.tensor_pct``); both need the CU and XCD counts of
sysinfo.csv. A VALU-bound kernel is charged to the FLOP type it mostly executes (fp64, fp32,
else integer work); one doing floating-point work without MFMA instructions is pointed at the
matrix cores.
"""

from __future__ import annotations

from keet.rules.amd_base import amd_rule, pmc, wave_size
from keet.rules.base import Evidence, Finding, KernelView, clamp, num, pct

# Utilization from which a pipe sets the pace (the NVIDIA pipe rules' threshold); 0.9
# confidence from SATURATED_PCT.
BOUND_PCT = 60.0
SATURATED_PCT = 80.0
# A wave whose VALU instructions run with fewer than this share of its lanes active is
# diverged (a quarter of the lanes idle, as the NVIDIA rule's 24 of 32).
ACTIVE_LANE_SHARE = 0.75

VALU_COLLECT = pmc("SQ_ACTIVE_INST_VALU", "GRBM_GUI_ACTIVE", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_FMA_F64", "SQ_INSTS_MFMA")
VALU_NEEDS = ("amd.valu_util_pct", "flop.fp32", "flop.fp64")


def _dominant(k: KernelView) -> str:
    fp32, fp64 = k.metric("flop.fp32"), k.metric("flop.fp64")
    fp16 = k.metric("flop.fp16") or 0.0
    if fp64 > 0 and fp64 >= fp32 + fp16:
        return "fp64_compute"
    if fp32 + fp16 > 0:
        return "fp32_compute"
    return "int_compute"


def _valu(k: KernelView, category: str) -> Finding | None:
    valu = k.metric("amd.valu_util_pct")
    if valu < BOUND_PCT or _dominant(k) != category:
        return None
    evidence = [k.evidence("amd.valu_util_pct", BOUND_PCT, ">="), k.evidence("flop.fp32"), k.evidence("flop.fp64")]
    work = {"fp64_compute": "FP64", "fp32_compute": "FP32", "int_compute": "integer and address"}[category]
    suggestions = []
    mfma = k.raw("SQ_INSTS_MFMA")
    if mfma is not None and category != "int_compute":
        evidence.append(Evidence("SQ_INSTS_MFMA", mfma, "inst"))
        if mfma == 0:
            suggestions.append(
                "The kernel issues no MFMA instruction: if its inner loop is a matrix product or a contraction, move it to the "
                "matrix cores (rocWMMA, __builtin_amdgcn_mfma_f32_32x32x8f16 / _f64_16x16x4f64 intrinsics, or hipBLASLt/rocBLAS), "
                "whose peak is several times the VALU's."
            )
    if category == "fp32_compute":
        suggestions.append(
            "Use packed FP32 (float2 arithmetic the compiler turns into v_pk_fma_f32 / v_pk_mul_f32): CDNA2/CDNA3 execute two "
            "FP32 operations per lane per instruction that way."
        )
    suggestions += [
        "Remove redundant work: hoist loop-invariant arithmetic, precompute per-workgroup values into SGPRs (values uniform across the wave stay scalar), replace divisions by multiplications with a reciprocal.",
        "Check the ISA (hipcc --save-temps or -Rpass-analysis=kernel-resource-usage) for conversions and 64-bit integer index math (v_mad_u64_u32, v_cvt_*) that inflate the VALU count; use 32-bit indices where sizes allow.",
    ]
    return Finding(
        category=category,
        rule=f"amd-valu-{category.split('_')[0]}",
        # impact = VALU utilization / 100 (busy share of the CUs' elapsed cycles)
        impact=clamp(valu / 100),
        confidence=0.9 if valu >= SATURATED_PCT else 0.7,
        evidence=evidence,
        explanation=(
            f"The vector ALUs are busy {pct(valu)} of the CUs' elapsed cycles (bound at {pct(BOUND_PCT)} and above), "
            f"mostly on {work} work ({num(k.metric('flop.fp64'))} FP64 and {num(k.metric('flop.fp32'))} FP32 FLOPs): "
            "the kernel's time is set by VALU instruction throughput."
        ),
        suggestions=suggestions,
    )


@amd_rule("amd-valu-fp64", "fp64_compute", "AMD: VALU busy with FP64 work", needs=VALU_NEEDS, collect=VALU_COLLECT)
def valu_fp64(k: KernelView) -> Finding | None:
    return _valu(k, "fp64_compute")


@amd_rule("amd-valu-fp32", "fp32_compute", "AMD: VALU busy with FP32/FP16 work", needs=VALU_NEEDS, collect=VALU_COLLECT)
def valu_fp32(k: KernelView) -> Finding | None:
    return _valu(k, "fp32_compute")


@amd_rule("amd-valu-int", "int_compute", "AMD: VALU busy with integer/address work", needs=VALU_NEEDS, collect=VALU_COLLECT)
def valu_int(k: KernelView) -> Finding | None:
    return _valu(k, "int_compute")


@amd_rule(
    "amd-mfma",
    "tensor_compute",
    "AMD: matrix cores (MFMA) busy",
    needs=("pipe.tensor_pct",),
    collect=pmc("SQ_VALU_MFMA_BUSY_CYCLES", "GRBM_GUI_ACTIVE", "SQ_INSTS_MFMA"),
)
def mfma(k: KernelView) -> Finding | None:
    busy = k.metric("pipe.tensor_pct")
    if busy < BOUND_PCT:
        return None
    return Finding(
        category="tensor_compute",
        rule="amd-mfma",
        # impact = MFMA utilization / 100
        impact=clamp(busy / 100),
        confidence=0.9 if busy >= SATURATED_PCT else 0.7,
        evidence=[k.evidence("pipe.tensor_pct", BOUND_PCT, ">=")],
        explanation=(
            f"The matrix cores are busy {pct(busy)} of the available MFMA cycles (bound at {pct(BOUND_PCT)} and above): "
            "the kernel runs at the matrix-core roofline of its data type."
        ),
        suggestions=[
            "Use a narrower MFMA type where accuracy allows: bf16/fp16 MFMAs have 4-8x the FP32 MFMA rate, and gfx942 adds fp8 at twice the fp16 rate.",
            "Prefer the larger MFMA shapes (32x32x8 / 16x16x16 for fp16) that do more FLOPs per issued instruction, and keep accumulators in AGPRs so no v_accvgpr moves sit between MFMAs.",
            "If the MFMA pipe is the limit at the right precision, the kernel is at its compute roofline; only less arithmetic (algorithmic change, sparsity) helps.",
        ],
    )


@amd_rule(
    "amd-wave-divergence",
    "warp_divergence",
    "AMD: VALU instructions run with part of the wave64 lanes masked off",
    needs=("warp.active_threads",),
    collect=pmc("SQ_THREAD_CYCLES_VALU", "SQ_ACTIVE_INST_VALU", "SQ_INSTS_VALU", "SQ_INSTS"),
)
def divergence(k: KernelView) -> Finding | None:
    active = k.metric("warp.active_threads")
    wave = wave_size(k)
    if active >= ACTIVE_LANE_SHARE * wave:
        return None
    idle = 1 - active / wave
    evidence = [k.evidence("warp.active_threads", ACTIVE_LANE_SHARE * wave, "<")]
    if k.metric("amd.wave_size") is not None:
        evidence.append(k.evidence("amd.wave_size"))
    valu_insts, insts = k.raw("SQ_INSTS_VALU"), k.raw("SQ_INSTS")
    if k.has("amd.valu_util_pct"):
        # impact = idle lane share x VALU utilization / 100: the VALU time spent on masked lanes
        busy = k.metric("amd.valu_util_pct") / 100
        evidence.append(k.evidence("amd.valu_util_pct"))
        scope, confidence = f"the VALU is busy {pct(busy * 100)} of the elapsed cycles", 0.8
    elif valu_insts is not None and insts:
        # impact = idle lane share x VALU share of issued instructions (upper bound without the
        # VALU utilization, which needs the device's CU count)
        busy = valu_insts / insts
        evidence += [Evidence("SQ_INSTS_VALU", valu_insts, "inst"), Evidence("SQ_INSTS", insts, "inst")]
        scope, confidence = (
            f"{num(valu_insts)} of the kernel's {num(insts)} instructions are VALU instructions (how busy the VALU was "
            "needs the device's CU count, which this profile lacks)"
        ), 0.5
    else:
        busy, scope, confidence = 1.0, "how busy the VALU was is not in this profile", 0.4
    return Finding(
        category="warp_divergence",
        rule="amd-wave-divergence",
        impact=clamp(idle * busy),
        confidence=confidence,
        evidence=evidence,
        explanation=(
            f"On average only {num(active)} of the {num(wave)} lanes of a wave are active per VALU instruction "
            f"(diverged below {num(ACTIVE_LANE_SHARE * wave)}): branches that split a wave run both sides with lanes masked off, "
            f"and partial waves leave lanes empty; {scope}."
        ),
        suggestions=[
            "Make branch conditions uniform across 64 consecutive work-items (sort or bin the work by branch, or assign one wave per case), so whole waves take one side.",
            "Size the workgroup and the loop trip counts as multiples of 64: a wave64 with 32 work-items leaves half the SIMD lanes idle on every instruction.",
            "For OpenMP offload loops, collapse nested loops (collapse(2)) or move the inner loop into the parallel dimension so every lane gets an iteration; serial code inside the target region runs on one lane.",
        ],
    )
