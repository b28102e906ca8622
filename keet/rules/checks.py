"""Mechanism checks that several rules cite (no rule is registered here).

``matrix_path``: which tensor-core instructions a kernel runs, from the per-opcode SASS counts.
Rules that would suggest tensor cores (fp32, fp64, L1/shared bandwidth) or a move to Hopper's
warpgroup MMA (tensor compute) cite it, so that no kernel is told to adopt what it already uses.
"""

from __future__ import annotations

from keet.rules.base import (
    OPCODE_COLLECT,
    OPCODE_TABLE,
    WARPGROUP_MMA,
    Check,
    KernelView,
    matrix_instructions,
    mechanism,
    num,
)

WARPGROUP = "warpgroup MMA"
WARP_LEVEL = "warp-level MMA"
NO_MMA = "no MMA"


def main_shape(k: KernelView, opcode: str) -> str:
    """The most executed modifier form of an opcode (e.g. HGMMA.64x128x16.F32.BF16), quoted."""
    table = k.kernel.attributes.get("inst_executed_per_opcode_with_modifier")
    if not isinstance(table, dict):
        return ""
    forms = {str(name): count for name, count in table.items() if str(name).split(".", 1)[0] == opcode and isinstance(count, (int, float))}
    return f" (mostly `{max(forms, key=forms.get)}`)" if forms else ""


@mechanism(
    "matrix-path",
    "a kernel already on tensor cores, and on which instructions (warpgroup HGMMA or warp-level HMMA)",
    counters=(OPCODE_TABLE, "sass__inst_executed_per_opcode_with_modifier_all"),
    collect=OPCODE_COLLECT,
)
def matrix_path(k: KernelView) -> Check:
    found = matrix_instructions(k)
    if found is None:
        return matrix_path.not_assessed([f"the {OPCODE_TABLE} table (SASS instructions per opcode)"])
    evidence = [k.opcode_evidence(op, count) for op, count in found.items()]
    if not found:
        return Check(matrix_path.id, NO_MMA, evidence, "It runs no tensor-core instructions (no HMMA, HGMMA or other MMA in its SASS).")
    main = max(found, key=found.get)
    listed = ", ".join(f"{num(count)} {op}" for op, count in found.items())
    if any(op in WARPGROUP_MMA or op.startswith("UTC") for op in found):
        return Check(matrix_path.id, WARPGROUP, evidence,
                     f"Its tensor-core work already runs as warpgroup (asynchronous) MMA: {listed} instructions{main_shape(k, main)}.")  # fmt: skip
    return Check(matrix_path.id, WARP_LEVEL, evidence,
                 f"Its tensor-core work runs as warp-level mma.sync: {listed} instructions{main_shape(k, main)}, and no warpgroup MMA (HGMMA).")  # fmt: skip
