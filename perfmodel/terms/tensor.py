"""Tensor pipe: sum over MMA opcodes of FLOPs / rate. FLOPs from the shape modifier (HMMA.16816 is
m16 n8 k16 for the warp; HGMMA.64x128x16 is m64 n128 k16 for a warpgroup, whose four warps each
count one executed instruction); the rate by instruction kind and precision: mma.sync (HMMA) and
wgmma (HGMMA) run at different measured rates on Hopper; the vendor peak is the fallback."""

from __future__ import annotations

import re

from perfmodel.hardware import GPU
from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("tensor_mma_sync_fp16_flops_per_clk_per_sm", "tensor_mma_sync_bf16_flops_per_clk_per_sm",
              "tensor_tcgen05_fp16_flops_per_clk_per_sm",
              "tensor_wgmma_fp16_flops_per_clk_per_sm", "tensor_wgmma_bf16_flops_per_clk_per_sm",
              "tensor_fp16_flops_per_clk_per_sm", "tensor_bf16_flops_per_clk_per_sm",
              "tensor_fp64_flops_per_clk_per_sm", "tensor_int8_ops_per_clk_per_sm", "tensor_fp8_flops_per_clk_per_sm")
# Vendor peaks of the precisions no microbenchmark of ours measures, by the precision's name.
_VENDOR_ONLY = {"fp64": "tensor_fp64_flops_per_clk_per_sm", "int8": "tensor_int8_ops_per_clk_per_sm",
                "fp8": "tensor_fp8_flops_per_clk_per_sm"}


def tensor_flops_per_instruction(opcode: str) -> float:
    """FLOPs of one warp-level MMA instruction from its shape modifier."""
    if match := re.search(r"\.(\d+)x(\d+)x(\d+)\b", opcode):
        m, n, k = (int(g) for g in match.groups())
        return 2.0 * m * n * k / 4
    if match := re.search(r"\.(\d{1,2})(\d)(\d{1,2})\b", opcode):
        m, n, k = (int(g) for g in match.groups())
        return 2.0 * m * n * k
    return 0.0


def precision_of(opcode: str) -> str:
    """The input precision of an MMA opcode: fp64 (DMMA), int8 (IMMA and kin), fp8 (QGMMA,
    QMMA, UTCQMMA: E4M3 and E5M2 inputs), tf32, bf16, else fp16."""
    if opcode.startswith("DMMA"):
        return "fp64"
    if opcode.startswith(("IMMA", "IGMMA", "UTCIMMA")):
        return "int8"
    if opcode.startswith(("QGMMA", "QMMA", "UTCQMMA")):
        return "fp8"
    return "tf32" if "TF32" in opcode else "bf16" if "BF16" in opcode else "fp16"


def tensor_rate(gpu: GPU, opcode: str) -> float | None:
    """Sustained FLOPs (or integer ops) per clock per SM of an MMA opcode.

    fp16/bf16: our measured rate of the instruction's kind, else the vendor peak; TF32 opcodes
    are rated like them (as this model has always rated them: the corpus's TF32 cuBLAS kernels
    are validated that way; docs/model.md). fp64, int8 and fp8 have vendor peaks only: DMMA is
    Hopper's only FP64 tensor instruction, so its peak is its rate; wgmma (IGMMA, QGMMA) and
    tcgen05 are taken at their peaks, as FP16 wgmma nearly reaches its own (4081 of 4096
    flop/clk/SM measured on H100); INT8 and FP8 mma.sync (IMMA, QMMA) are taken to reach the same fraction of the peak
    as the measured FP16 mma.sync does of its own (2716 of 4096 on H100: the vendor peaks are
    wgmma's)."""
    kind = "tcgen05" if opcode.startswith("UTC") else "wgmma" if opcode.startswith(("HGMMA", "IGMMA", "QGMMA")) else "mma_sync"
    precision = precision_of(opcode)
    if precision in _VENDOR_ONLY:
        peak = gpu.value(_VENDOR_ONLY[precision])
        if not peak or precision == "fp64" or kind != "mma_sync":
            return peak
        measured, vendor = gpu.value("tensor_mma_sync_fp16_flops_per_clk_per_sm"), gpu.value("tensor_fp16_flops_per_clk_per_sm")
        return peak * measured / vendor if measured and vendor else peak
    if precision == "tf32":
        precision = "fp16"
    measured = [f"tensor_{kind}_{precision}_flops_per_clk_per_sm", f"tensor_{kind}_fp16_flops_per_clk_per_sm"]
    if kind == "tcgen05" and precision == "bf16":
        measured = measured[1:]  # one measured tcgen05 rate: the fp16 one (microbench/cuda/sm100)
    return (next((r for name in measured if (r := gpu.value(name))), None)
            or gpu.value(f"tensor_{precision}_flops_per_clk_per_sm") or gpu.value("tensor_fp16_flops_per_clk_per_sm"))


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    flops = {op: count * tensor_flops_per_instruction(op) for op, count in k.work.tensor_instructions.items()}
    clocks = sum(f / rate for op, f in flops.items() if (rate := tensor_rate(k.gpu, op)))
    if clocks:
        out.sm["tensor"] = clocks * k.sm_seconds
    if any(f and not tensor_rate(k.gpu, op) for op, f in flops.items()):
        out.missing.append("tensor (tensor_*_flops_per_clk_per_sm)")
    return out
