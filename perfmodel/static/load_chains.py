"""Dependent global loads a warp waits for, from interpreted PTX: perfmodel/load_chains.py's count
(the same rule) where no report has the SASS, on the instructions the interpreter ran.

Per basic block (a run of consecutive executed instructions run the same number of times) holding
synchronous global loads: each load's chain depth is one more than the deepest load its address
registers descend from in the block (PTX virtual registers traced through the block's
instructions), and the block costs its deepest chain once per execution. Asynchronous copies
(cp.async, cp.async.bulk) are waited for at their waits (cp.async.wait_group / wait_all,
cp.async.bulk.wait_group, mbarrier test_wait / try_wait), once per execution, as the SASS count
takes DEPBAR and SYNCS.PHASECHK. A count of work, not a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from perfmodel.load_chains import block_starts, deepest_chain
from perfmodel.static.ptx import Addr, Instruction, Raw, Reg, Vec

# Instructions whose first operand is not a register they write.
_NO_DESTINATION = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "membar", "fence", "prefetch", "prefetchu", "cp",
                   "trap", "brkpt", "nanosleep", "griddepcontrol", "discard", "applypriority", "createpolicy", "sust", "sured"}
_REGISTER = re.compile(r"%[\w.$]+")


def _registers(operand) -> set[str]:
    """Register names an operand reads or writes."""
    if isinstance(operand, Reg):
        return {operand.name}
    if isinstance(operand, Addr):
        return {operand.base.name} if isinstance(operand.base, Reg) else set()
    if isinstance(operand, Vec):
        return set().union(*(_registers(item) for item in operand.items))
    if isinstance(operand, Raw):
        return set(_REGISTER.findall(operand.text))
    return set()


def is_async_wait(inst: Instruction) -> bool:
    """An asynchronous copy's wait: cp.async[.bulk].wait_group / wait_all, mbarrier test_wait / try_wait."""
    if inst.opcode == "cp":
        return any(m in ("wait_group", "wait_all") for m in inst.mods)
    return inst.opcode == "mbarrier" and any(m in ("test_wait", "try_wait") for m in inst.mods)


def is_async_copy(inst: Instruction) -> bool:
    """cp.async and cp.async.bulk copies (not their commits and waits)."""
    return inst.opcode == "cp" and "async" in inst.mods and not any(
        m in ("wait_group", "wait_all", "commit_group") for m in inst.mods)


def load_waits(instructions: list[Instruction], executions: np.ndarray, load_pcs: Iterable[int]) -> tuple[float, float]:
    """Warp-level waits as (all waits, those at asynchronous copies' waits): the deepest chain of
    each basic block holding synchronous global loads (`load_pcs`, the instructions that read
    global memory) times its executions (`executions`: warp-level, per instruction index), plus
    every execution of an asynchronous copy's wait where the kernel ran asynchronous copies."""
    loads = set(load_pcs)
    ran = np.flatnonzero(executions > 0)
    asynchronous = any(is_async_copy(instructions[pc]) for pc in ran)
    async_waits = float(sum(executions[pc] for pc in ran if is_async_wait(instructions[pc]))) if asynchronous else 0.0
    chains = 0.0
    for block in np.split(ran, block_starts(executions[ran])[1:]):
        if loads.intersection(block.tolist()):
            chains += float(executions[block[0]]) * deepest_chain(_ptx_step(instructions[pc], pc in loads) for pc in block)
    return chains + async_waits, async_waits


def _ptx_step(inst: Instruction, is_load: bool) -> tuple[bool, set[str], set[str], set[str]]:
    """One PTX instruction as perfmodel.load_chains.deepest_chain reads it."""
    writes = bool(inst.operands) and inst.opcode not in _NO_DESTINATION
    sources = inst.operands[1:] if writes else inst.operands
    read = set().union(*(_registers(o) for o in sources))
    address = set().union(*(_registers(o) for o in sources if isinstance(o, Addr))) if is_load else set()
    return is_load, _registers(inst.operands[0]) if writes else set(), address, read
