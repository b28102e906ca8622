"""Kernel features for the model: work counts only, never time.

The model predicts time, so nothing that measures time may reach it: durations, cycles,
clocks, rates, throughput percentages and stall cycles of the profiled kernel are all
excluded. Features come from an explicit allow-list of canonical work counts
(docs/model.md lists each with its metric) and from the per-opcode instruction tables.
``tests/test_features.py`` perturbs every time-like metric of a real profile and checks the
features do not move.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from keet.canonical import names_in, vocabulary
from keet.profile import Kernel, Profile

# Canonical work counts the model may read (feature name -> canonical metric).
WORK_COUNTS = {
    "dram_bytes_read": "dram.bytes_read",
    "dram_bytes_write": "dram.bytes_write",
    "l2_sectors_read": "l2.sectors_read",
    "l2_sectors_write": "l2.sectors_write",
    "l2_sectors_atomic": "l2.sectors_atomic",
    "l2_sectors_busiest_slice": "l2.sectors_busiest_slice",
    "l1_to_l2_read_bytes": "l2.bytes_from_l1",
    "l1_to_l2_write_bytes": "l2.bytes_to_l1",
    "global_load_requests": "global.load_requests",
    "global_load_sectors": "global.load_sectors",
    "global_store_requests": "global.store_requests",
    "global_store_sectors": "global.store_sectors",
    "global_load_bytes_per_sector": "global.load_bytes_per_sector",
    "global_store_bytes_per_sector": "global.store_bytes_per_sector",
    "global_atomic_instructions": "global.atomic_instructions",
    "local_load_sectors": "local.load_sectors",
    "local_store_sectors": "local.store_sectors",
    "shared_load_wavefronts": "shared.load_wavefronts",
    "shared_store_wavefronts": "shared.store_wavefronts",
    "shared_bank_conflicts": "shared.bank_conflicts",
    "instructions": "inst.executed",
}



def raw_metrics() -> frozenset[str]:
    """The raw profiler metric names the WORK_COUNTS are computed from: reading only these
    (plus launch and device attributes, always read) is enough to predict."""
    wanted = set(WORK_COUNTS.values())
    return frozenset(name for metric in vocabulary() if metric.name in wanted for formula in metric.ncu for name in names_in(formula))


# SASS opcode (before the first ".") -> the pipe that executes it (sm_80 / sm_90).
PIPES = {
    "fp32": {"FFMA", "FADD", "FMUL", "FFMA2", "FADD2", "FMUL2", "FSWZADD"},
    "fp64": {"DFMA", "DADD", "DMUL", "DSETP", "DMNMX"},
    "fp16": {"HFMA2", "HADD2", "HMUL2", "HSETP2", "HMNMX2"},
    "int_fma": {"IMAD", "IMADSP", "IMUL", "IDP", "IDP4A"},
    "alu": {"IADD3", "IADD", "LOP3", "LOP", "ISETP", "SHF", "SHL", "SHR", "LEA", "SEL", "FSEL", "IABS", "IMNMX", "FMNMX",
            "FSETP", "FCHK", "PRMT", "BMSK", "BREV", "FLO", "POPC", "PLOP3", "P2R", "R2P", "VIADD", "VIMNMX", "ISCADD", "MOV"},
    "xu": {"MUFU", "I2F", "F2I", "F2F", "I2I", "FRND", "F2FP", "I2FP", "F2IP"},
    "tensor": {"HMMA", "HGMMA", "IMMA", "IGMMA", "DMMA", "QGMMA", "BMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCMMA"},
    "lsu": {"LDG", "STG", "LD", "ST", "LDS", "STS", "LDL", "STL", "ATOM", "ATOMG", "ATOMS", "RED", "LDSM", "STSM", "LDGSTS",
            "LDGDEPBAR", "MATCH", "SHFL", "CCTL", "LDC", "ULDC", "REDG", "REDUX", "DEPBAR"},
    "special": {"S2R", "S2UR", "CS2R", "NOP", "VOTE", "VOTEU", "B2R", "R2B"},
    "barrier": {"BAR", "BARRIER", "SYNCS", "MEMBAR", "WARPSYNC", "BSYNC", "BSSY"},
    "branch": {"BRA", "BRX", "JMP", "CALL", "RET", "EXIT", "BPT", "YIELD", "NANOSLEEP"},
}
_PIPE_OF = {opcode: pipe for pipe, opcodes in PIPES.items() for opcode in opcodes}
_FLOPS_PER_THREAD_INST = {"FFMA": ("fp32", 2), "FADD": ("fp32", 1), "FMUL": ("fp32", 1),
                          "DFMA": ("fp64", 2), "DADD": ("fp64", 1), "DMUL": ("fp64", 1),
                          "HFMA2": ("fp16", 4), "HADD2": ("fp16", 2), "HMUL2": ("fp16", 2)}


def pipe_of(opcode: str) -> str:
    """The pipe of a SASS opcode ("other" when unknown); uniform-datapath U* ops are "uniform"."""
    base = re.split(r"[.\s]", opcode, maxsplit=1)[0]
    if base in _PIPE_OF:
        return _PIPE_OF[base]
    if base.startswith("U") and base[1:] in _PIPE_OF:
        return "uniform"
    return "other"


@dataclass
class KernelFeatures:
    """Work and launch configuration of one kernel: what it does, not how long it took."""

    name: str
    grid_blocks: int
    threads_per_block: int
    registers_per_thread: int | None
    shared_bytes_per_block: int | None
    counts: dict[str, float] = field(default_factory=dict)  # WORK_COUNTS present in the profile
    warp_instructions_by_pipe: dict[str, float] = field(default_factory=dict)
    flops: dict[str, float] = field(default_factory=dict)  # thread-level, per precision
    barriers: float | None = None  # warp-level BAR instructions
    tensor_instructions: dict[str, float] = field(default_factory=dict)  # MMA opcodes with their shape modifiers
    source_gpu: str | None = None  # device the work was counted on (for retargeting)
    l2_bytes_of_source_gpu: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def features(profile: Profile, kernel: Kernel) -> KernelFeatures:
    """The model's inputs for one profiled kernel."""
    if kernel.grid is None or kernel.block is None:
        raise ValueError(f"{kernel.name}: the profile has no launch configuration")
    values = profile.values(kernel)
    counts = {feature: values[metric][0] for feature, metric in WORK_COUNTS.items() if metric in values}
    by_pipe: dict[str, float] = {}
    warp_table = kernel.attributes.get("inst_executed_per_opcode") or {}
    for opcode, count in warp_table.items():
        pipe = pipe_of(opcode)
        by_pipe[pipe] = by_pipe.get(pipe, 0.0) + count
    flops: dict[str, float] = {}
    for opcode, count in (kernel.attributes.get("thread_inst_executed_per_opcode") or {}).items():
        base = re.split(r"[.\s]", opcode, maxsplit=1)[0]
        if base in _FLOPS_PER_THREAD_INST:
            precision, per = _FLOPS_PER_THREAD_INST[base]
            flops[precision] = flops.get(precision, 0.0) + count * per
    barriers = sum(c for op, c in warp_table.items() if op.split(".")[0] in ("BAR", "BARRIER")) if warp_table else None
    with_modifiers = kernel.attributes.get("inst_executed_per_opcode_with_modifier") or {}
    tensor = {op: c for op, c in with_modifiers.items() if pipe_of(op) == "tensor"}
    return KernelFeatures(
        name=kernel.name,
        grid_blocks=kernel.blocks,
        threads_per_block=kernel.threads_per_block,
        registers_per_thread=kernel.registers_per_thread,
        shared_bytes_per_block=kernel.shared_bytes_per_block,
        counts=counts,
        warp_instructions_by_pipe=by_pipe,
        flops=flops,
        barriers=barriers,
        tensor_instructions=tensor,
        source_gpu=profile.device.name,
        l2_bytes_of_source_gpu=profile.device.l2_bytes,
    )
