"""Dependent global loads a warp waits for, from a kernel's SASS and per-instruction execution counts.

A warp that issues several independent loads waits for them once; a load whose address comes from
an earlier load (a pointer chase, an index then the value it indexes) waits again. The latency term
(perfmodel/terms/latency.py) charges one memory latency per wait. Counted per basic block (a run of
consecutive instructions executed the same number of times): each global load's chain depth is one
more than the deepest load its address registers descend from in that block (registers traced
through the block's instructions), and the block costs its deepest chain once per execution. A count
of work (executed instructions and their operands), not a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

# Nsight Compute's per-instruction memory columns: memory_access_type 2 is a load, memory_type 4
# global memory (LDG; 16 shared, 8 local, 20 LDGSTS).
_LOAD, _GLOBAL = 2.0, 4.0
LOAD_CHAIN_COLUMNS = ("inst_executed", "memory_access_type", "memory_type")
_REGISTER = re.compile(r"\bR(\d+)\b")
_WIDE = re.compile(r"\.(64|128|WIDE)\b")
_NO_DESTINATION = ("ST", "RED", "BRA", "BAR", "EXIT", "RET", "CALL", "JMP", "BSYNC", "BSSY", "WARPSYNC", "NOP", "MEMBAR",
                   "ERRBAR", "CCTL", "DEPBAR", "ARRIVES", "SYNCS", "YIELD", "ISETP", "FSETP", "DSETP", "HSETP2", "PLOP3")


def _registers(operand: str, width: int) -> set[int]:
    found = set()
    for match in _REGISTER.finditer(operand):
        first = int(match.group(1))
        found.update(range(first, first + width))
    return found


def _width(opcode: str) -> int:
    """32-bit registers an operand of this instruction spans: LDG.E.128 writes 4, .64 and WIDE 2."""
    match = _WIDE.search(opcode)
    return {"128": 4, "64": 2, "WIDE": 2}[match.group(1)] if match else 1


def _parse(text: str) -> tuple[str, list[str]]:
    """Opcode and operands of one SASS line ("@P0 LDG.E.128 R8, desc[UR4][R8.64] ;")."""
    text = text.strip().rstrip(";").strip()
    if text.startswith("@"):
        text = text.split(None, 1)[1] if " " in text else ""
    opcode, _, rest = text.partition(" ")
    return opcode, [o.strip() for o in rest.split(",")] if rest.strip() else []


def load_waits(instructions: pd.DataFrame, sass_texts: Callable[[list[int]], dict[int, str | None]]) -> float | None:
    """Warp-level count of global-load waits: sum over basic blocks holding global loads of the
    block's executions x its deepest load chain. None when the table lacks the columns or the
    SASS of a load cannot be read. `sass_texts` maps pc offsets to SASS text (one request for
    every instruction the chains need, :func:`sass_needed`: disassembly is slow)."""
    if not {"pc", *LOAD_CHAIN_COLUMNS} <= set(instructions.columns):
        return None
    lone_waits, traced = _blocks(instructions)
    texts = sass_texts(sorted({pc for _, _, span in traced for pc in span})) if traced else {}
    if any(text is None for text in texts.values()):
        return None
    return lone_waits + sum(executions * _deepest_chain(load_pcs, [texts[pc] for pc in span], span)
                            for executions, load_pcs, span in traced)


def sass_needed(instructions: pd.DataFrame) -> list[int]:
    """The pc offsets whose SASS :func:`load_waits` reads (a reader may fetch them ahead)."""
    if not {"pc", *LOAD_CHAIN_COLUMNS} <= set(instructions.columns):
        return []
    return sorted({pc for _, _, span in _blocks(instructions)[1] for pc in span})


def _blocks(instructions: pd.DataFrame) -> tuple[float, list[tuple[float, set[int], list[int]]]]:
    """Waits of blocks with one global load (no SASS needed), and per block with several:
    (executions, load pcs, pcs from its first load to its last)."""
    rows = instructions[instructions["inst_executed"] > 0].sort_values("pc")
    pcs = rows["pc"].to_numpy().astype(int)
    executed = rows["inst_executed"].to_numpy(dtype=float)
    loads = np.flatnonzero((rows["memory_access_type"].to_numpy() == _LOAD) & (rows["memory_type"].to_numpy() == _GLOBAL))
    starts = block_starts(executed)
    block_of_load = np.searchsorted(starts, loads, side="right") - 1
    lone_waits = 0.0
    traced: list[tuple[float, set[int], list[int]]] = []
    for block in np.unique(block_of_load):
        in_block = loads[block_of_load == block]
        executions = float(executed[starts[block]])
        if len(in_block) == 1:  # one load: one wait, whatever its address came from
            lone_waits += executions
            continue
        # from the block's first load to its last: what comes before cannot descend from a load
        traced.append((executions, set(pcs[in_block].tolist()), pcs[in_block[0]:in_block[-1] + 1].tolist()))
    return lone_waits, traced


def block_starts(executed: np.ndarray) -> np.ndarray:
    """Where the basic blocks of a run of executed instructions (in code order) begin: a block is
    a run of consecutive instructions executed the same number of times."""
    return np.flatnonzero(np.r_[True, executed[1:] != executed[:-1]])


def deepest_chain(steps: Iterable[tuple[bool, set, set, set]]) -> int:
    """The longest chain of global loads in a block whose address descends from an earlier load,
    over its instructions in order as (is a global load, registers written, registers of the
    address, registers read): a load is one deeper than its address's deepest chain, any other
    instruction passes on the deepest of what it reads."""
    depth_of: dict = {}  # register -> deepest load chain its value descends from
    deepest = 0
    for is_load, written, address, read in steps:
        if is_load:
            depth = 1 + max((depth_of.get(r, 0) for r in address), default=0)
            deepest = max(deepest, depth)
        else:
            depth = max((depth_of.get(r, 0) for r in read), default=0)
        for r in written:
            depth_of[r] = depth
    return deepest


def _deepest_chain(load_pcs: set[int], texts: list[str], span: list[int]) -> int:
    """:func:`deepest_chain` of a block's SASS."""
    return deepest_chain(step for pc, text in zip(span, texts) if (step := _sass_step(pc in load_pcs, text)) is not None)


def _sass_step(is_load: bool, text: str) -> tuple[bool, set[int], set[int], set[int]] | None:
    """One SASS instruction as :func:`deepest_chain` reads it (None: no operands)."""
    opcode, operands = _parse(text)
    if not operands:
        return None
    width = _width(opcode)
    if is_load:
        return True, _registers(operands[0], width), _registers("".join(o for o in operands[1:] if "[" in o), 2), set()
    if opcode.startswith(_NO_DESTINATION):
        return False, set(), set(), set()
    return False, _registers(operands[0], width), set(), set().union(*(_registers(o, 2) for o in operands[1:]))
