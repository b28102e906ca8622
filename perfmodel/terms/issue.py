"""Issue: the instruction scheduler, and (AMD CDNA) the matrix cores by precision.

NVIDIA: each SM sub-partition's scheduler issues one warp instruction per clock:
t_issue = warp instructions / schedulers_per_sm, spread over the busy SMs.

AMD CDNA (wave64): the CU's scheduler serves one of its SIMDs per cycle, round-robin, so a SIMD
gets an issue opportunity every issue_interval_cycles (4: a wave64 VALU instruction occupies a
16-lane SIMD as long). One opportunity issues at most one instruction per wave and at most one per
category, each from a different wave: VALU (MFMA instructions issue through it), VMEM, SALU/SMEM
(the scalar path), LDS and branch, so up to issue_categories_per_cycle (5) instructions
(rocprofiler-compute, 'Pipeline descriptions', Scheduler). Per CU, with S SIMDs, interval c,
categories k and W resident waves per SIMD:

    cycles = c x max( max over categories of I_cat / S ,  I / (S x min(k, W)) )

the first term is one category's own issue slots (the VALU's is the pipes bound at 4 cycles per
wave64 instruction), the second the multi-issue limit: several categories issue together only from
different waves, so one wave per SIMD issues one instruction per opportunity. Without the two ISA
parameters (NVIDIA files) c = k = 1 and the bound is the NVIDIA one above.

MFMA by precision: an MFMA of precision p keeps its SIMD's matrix core busy for its FLOPs over the
per-CU rate of p (mfma_<p>_flops_per_clk_per_cu; INT8 tensor_int8_ops_per_clk_per_sm), VALU work
co-executing in its shadow. The tensor term rates FP16/BF16 MMA work (the hardware file's tensor
rates are the same figures); this term adds the FP32, FP64, INT8 and FP8 MFMAs it leaves out:
t_mfma = sum over p of FLOPs_p / rate_p, spread over the busy CUs.
"""

from __future__ import annotations

from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("schedulers_per_sm", "issue_interval_cycles", "issue_categories_per_cycle", "mfma_fp32_flops_per_clk_per_cu",
              "mfma_fp64_flops_per_clk_per_cu", "mfma_fp8_flops_per_clk_per_cu", "tensor_int8_ops_per_clk_per_sm")

# Pipes of keet's per-pipe instruction counts (NVIDIA SASS pipes, and the AMD SQ_INSTS_* mapping of
# perfmodel.features.amd_work) by the CDNA issue category that issues them. The "lsu" pipe holds
# both vector-memory and LDS instructions; they are told apart by the global request counts.
VALU_PIPES = ("fp16", "fp32", "fp64", "alu", "int_fma", "xu", "tensor", "other")
SCALAR_PIPES = ("uniform",)
BRANCH_PIPES = ("branch", "special", "barrier")
VMEM_COUNTS = ("global_load_requests", "global_store_requests", "global_atomic_instructions")

# MFMA FLOPs (perfmodel.features: flops["mfma_<type>"]) the tensor term leaves out, by the
# hardware parameter of their per-CU rate.
MFMA_RATES = {"mfma_f32": "mfma_fp32_flops_per_clk_per_cu", "mfma_f64": "mfma_fp64_flops_per_clk_per_cu",
              "mfma_f8": "mfma_fp8_flops_per_clk_per_cu", "mfma_i8": "tensor_int8_ops_per_clk_per_sm"}
MFMA_LEFT_TO_TENSOR = ("mfma_f16", "mfma_bf16")


def categories(k: Launch) -> dict[str, float]:
    """Warp (wave) instructions by issue category: VALU, VMEM, LDS, SALU, branch; what no
    category claims is counted by the total only."""
    pipes, counts = k.work.warp_instructions_by_pipe, k.work.counts
    vmem_requests = sum(counts.get(name, 0.0) for name in VMEM_COUNTS)
    lsu = pipes.get("lsu", 0.0)
    vmem = min(lsu, vmem_requests) if lsu else vmem_requests
    return {"valu": sum(pipes.get(p, 0.0) for p in VALU_PIPES), "vmem": vmem, "lds": max(lsu - vmem, 0.0),
            "salu": sum(pipes.get(p, 0.0) for p in SCALAR_PIPES), "branch": sum(pipes.get(p, 0.0) for p in BRANCH_PIPES)}


def issue_cycles(k: Launch) -> float:
    """Issue cycles of the whole kernel per SM (CU), before spreading over the busy SMs."""
    gpu = k.gpu
    schedulers = gpu.require("schedulers_per_sm")
    interval = gpu.value("issue_interval_cycles") or 1.0
    per_slot = gpu.value("issue_categories_per_cycle") or 1.0
    if per_slot <= 1:
        return interval * k.instructions / schedulers
    # Waves resident on one SIMD: the occupancy, or fewer when the grid does not fill the CUs.
    resident = min(k.occ.warps_per_sm, k.work.grid_blocks * k.occ.warps_per_block / max(k.busy_sms, 1))
    waves_per_scheduler = max(1.0, resident / schedulers)
    by_category = max(categories(k).values(), default=0.0)
    return interval * max(by_category, k.instructions / min(per_slot, waves_per_scheduler)) / schedulers


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    if k.instructions:
        out.sm["issue"] = issue_cycles(k) * k.sm_seconds
    mfma = {p: f for p, f in k.work.flops.items() if p.startswith("mfma_") and p not in MFMA_LEFT_TO_TENSOR and f}
    cycles = 0.0
    for precision, flops in mfma.items():
        param = MFMA_RATES.get(precision)
        rate = k.gpu.value(param) if param else None
        if rate:
            cycles += flops / rate
        else:
            out.missing.append(f"mfma ({param or precision + ' rate'})")
    if cycles:
        out.sm["mfma"] = cycles * k.sm_seconds
        out.inputs["mfma_flops_other_precisions"] = sum(mfma.values())
    return out
