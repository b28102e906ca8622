"""Pipes: t_p = warp instructions on pipe p x 32 lanes / (lanes of p per clock per SM), spread over
the busy SMs. The FMA pipe executes FP32 arithmetic and integer multiply-adds (IMAD); the ALU the
other integer and logic operations; the LSU bound is optional (the L1/shared bound covers the
same data path)."""

from __future__ import annotations

from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("fp32_flops_per_clk_per_sm", "fp64_flops_per_clk_per_sm", "int32_ops_per_clk_per_sm", "sfu_ops_per_clk_per_sm",
              "lsu_ops_per_clk_per_sm")


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    pipes, gpu = k.work.warp_instructions_by_pipe, k.gpu
    for name, instructions, lanes, param in (
            ("fma", pipes.get("fp32", 0.0) + pipes.get("int_fma", 0.0), (gpu.value("fp32_flops_per_clk_per_sm") or 0) / 2,
             "fp32_flops_per_clk_per_sm"),
            ("fp64", pipes.get("fp64", 0.0), (gpu.value("fp64_flops_per_clk_per_sm") or 0) / 2, "fp64_flops_per_clk_per_sm"),
            ("alu", pipes.get("alu", 0.0), gpu.value("int32_ops_per_clk_per_sm"), "int32_ops_per_clk_per_sm"),
            ("sfu", pipes.get("xu", 0.0), gpu.value("sfu_ops_per_clk_per_sm"), "sfu_ops_per_clk_per_sm")):
        if instructions and lanes:
            out.sm[name] = instructions * k.warp / (lanes * k.per_sm)
        elif instructions:
            out.missing.append(f"{name} ({param})")
    if (lsu := gpu.value("lsu_ops_per_clk_per_sm")) and pipes.get("lsu"):
        out.sm["lsu"] = pipes["lsu"] * k.warp / (lsu * k.per_sm)
    return out
