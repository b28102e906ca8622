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
from perfmodel.hardware import SECTOR_BYTES, assumed_isa, isa

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
    (plus launch and device attributes, always read) is enough to predict. AMD counter names
    (the canonical metrics' rocprof formulas and the counters read by :func:`amd_work`) are
    included for readers that honour the filter."""
    wanted = set(WORK_COUNTS.values())
    ncu = {name for metric in vocabulary() if metric.name in wanted for formula in metric.ncu for name in names_in(formula)}
    amd = {name for metric in vocabulary() if metric.name in wanted for formula in metric.amd for name in names_in(formula)}
    return frozenset(ncu | amd | set(AMD_COUNTERS))


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
    # Set for profiles whose device is not one of the hardware files' products (AMD GPUs whose
    # product the profile does not name): the counting unit of the warp-level counts (64-lane
    # wavefronts on CDNA) and the gfx arch, so that retargeting can still convert them.
    source_warp_size: int | None = None
    source_arch: str | None = None

    def as_dict(self) -> dict:
        """The fields as a dict; the AMD-only source fields only where set, so that the features of
        an NVIDIA profile or source (profiles/static/zoo_features.json) read as they always have."""
        found = asdict(self)
        for name in ("source_warp_size", "source_arch"):
            if found[name] is None:
                del found[name]
        return found


def features(profile: Profile, kernel: Kernel) -> KernelFeatures:
    """The model's inputs for one profiled kernel."""
    if profile.device.vendor == "amd":
        return amd_features(profile, kernel)
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


# ---------------------------------------------------------------- AMD (rocprof counters)
#
# rocprof counts per dispatch (the readers keep the mean over a kernel's dispatches). SQ_INSTS_*
# count wavefront instructions: one per 64-lane wavefront, the unit of NVIDIA's warp-level counts
# on a 64-wide machine; retargeting converts them (perfmodel/retarget.py). docs/model.md, section
# "AMD profiles as input", lists every conversion with its source.

# Bytes of one L2 (TCC) read request, one vector-L1 (TCP) to L2 read request and one write
# request come from the gfx arch's ISA file (perfmodel/hardware/isa/gfx*.toml: gfx908 (MI100)
# moves 64 B lines; gfx90a (MI200) has a 64 B vL1D line and 128 B L2 lines; gfx94x/gfx950 128 B
# lines in both; writes go as 64 B requests). Checked on the vecCopy workloads of
# tests/data/rocprof: 8 MiB read = TCP_TCC_READ_REQ x line = TCC_READ x request.
# An LDS instruction of a full wavefront at 4 bytes per lane moves 256 B: two 128 B passes of the
# 32-bank LDS, the unit of the model's shared-memory wavefronts (128 B).
AMD_LDS_PASSES_PER_INSTRUCTION = 2
# rocprof-compute's MFMA FLOPs: 512 x SQ_INSTS_VALU_MFMA_MOPS_<type> (panel 0200/1100).
MFMA_FLOPS_PER_MOP = 512
# The model turns an MMA opcode's shape into FLOPs (perfmodel.model.tensor_flops_per_instruction:
# m x n x k x 2 / 4 for the "MxNxK" form): 16x8x8 is 512 FLOPs, one MFMA MOP.
_MFMA_MOP_SHAPE = "16x8x8"
_FP = ("F16", "F32", "F64")
_MFMA_TYPES = ("F16", "BF16", "F32", "F64", "I8", "F8", "F6F4")

# Counters amd_work reads besides the canonical metrics' own formulas.
AMD_COUNTERS = (
    "SQ_INSTS_VALU", "SQ_INSTS_SALU", "SQ_INSTS_SMEM", "SQ_INSTS_VMEM", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR",
    "SQ_INSTS_LDS", "SQ_INSTS_BRANCH", "SQ_INSTS_SENDMSG", "SQ_INSTS_GDS", "SQ_INSTS_MFMA", "SQ_LDS_BANK_CONFLICT",
    *(f"SQ_INSTS_VALU_{op}_{p}" for op in ("ADD", "MUL", "FMA", "TRANS") for p in _FP),
    *(f"SQ_INSTS_VALU_MFMA_{t}" for t in _MFMA_TYPES), *(f"SQ_INSTS_VALU_MFMA_MOPS_{t}" for t in _MFMA_TYPES),
    "TA_FLAT_READ_WAVEFRONTS_sum", "TA_FLAT_WRITE_WAVEFRONTS_sum", "TA_FLAT_ATOMIC_WAVEFRONTS_sum",
    "TA_BUFFER_READ_WAVEFRONTS_sum", "TA_BUFFER_WRITE_WAVEFRONTS_sum", "TA_BUFFER_ATOMIC_WAVEFRONTS_sum",
    "TCC_READ_sum", "TCC_WRITE_sum", "TCC_ATOMIC_sum", "TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum",
    "TCC_EA_RDREQ_sum", "TCC_EA0_RDREQ_sum", "SQ_INSTS_VALU_INT32", "Wave_Size",
    "TCP_TOTAL_CACHE_ACCESSES_sum", "TCP_TOTAL_READ_sum", "TCP_TOTAL_WRITE_sum",
)

COLLECT = ("collect them with rocprofv3 --pmc SQ_INSTS SQ_INSTS_VALU SQ_INSTS_SALU SQ_INSTS_VMEM_RD SQ_INSTS_VMEM_WR "
           "SQ_INSTS_LDS, --pmc TCC_READ_sum TCC_WRITE_sum TCC_EA0_RDREQ_sum TCC_EA0_WRREQ_sum (TCC_EA_* before MI300), "
           "one pass per --pmc, or with rocprof-compute profile")
NO_COUNTERS = f"the profile has no work counters, only the kernel trace ({COLLECT})"
# Work the model cannot do without: DRAM or L2 traffic, or instruction counts.
ESSENTIAL = ("dram_bytes_read", "dram_bytes_write", "l2_sectors_read", "l2_sectors_write", "l1_to_l2_read_bytes",
             "l1_to_l2_write_bytes", "instructions")
ESSENTIAL_PIPES = ("fp32", "fp64", "alu", "lsu", "tensor", "other")
_HARDWARE_COUNTER = re.compile(r"^(SQ|SQC|TCC|TCP|TA|TD|GRBM|SPI|CPC|CPF|GDS|MALL|TCA|UTCL\d)_|^(FETCH_SIZE|WRITE_SIZE)$")


def amd_arch(profile: Profile, kernel: Kernel, raw: dict[str, tuple[float, str]]) -> str | None:
    """The gfx arch of an AMD profile: the device's where the file says (sysinfo.csv,
    agent_info.csv), else recognised from the counters only one generation has: TCC_EA0_* and
    TCC_BUBBLE (gfx942; gfx950 adds the F6F4 MFMA counters), TCC_EA_* with the VALU type
    breakdown (gfx90a) or without it (gfx908). None when the counters do not tell."""
    device = profile.devices.get(kernel.device_id, profile.device)
    if device.arch:
        return device.arch
    if "TCC_EA0_RDREQ_sum" in raw or "TCC_BUBBLE_sum" in raw:
        return "gfx950" if "SQ_INSTS_VALU_MFMA_MOPS_F6F4" in raw else "gfx942"
    if "TCC_EA_RDREQ_sum" in raw:
        return "gfx90a" if "SQ_INSTS_VALU_INT32" in raw else "gfx908"
    return None


def amd_work(raw: dict[str, tuple[float, str]], arch: str | None) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, float]]:
    """Work counts, wavefront instructions per pipe, FLOPs and MFMA work of one AMD kernel from
    its rocprof counters (absent counters give absent entries): (counts, by_pipe, flops, tensor)."""

    def get(name: str) -> float | None:
        cell = raw.get(name)
        return None if cell is None else float(cell[0])

    def total(*names: str) -> float | None:
        found = [v for v in map(get, names) if v is not None]
        return sum(found) if found else None

    counts: dict[str, float] = {}
    facts = isa(arch)
    read_request = facts.value("l2_read_request_bytes") if facts is not None else None
    line = facts.value("l1_line_bytes") if facts is not None else None
    # writes go as 64 B requests on every CDNA arch; an unnamed arch takes the assumed one's
    write_request = (facts if facts is not None and facts.value("write_request_bytes") else assumed_isa("amd")).require("write_request_bytes")
    if read_request and (reads := get("TCC_READ_sum")) is not None:
        counts["l2_sectors_read"] = reads * read_request / SECTOR_BYTES
    if (writes := get("TCC_WRITE_sum")) is not None:
        counts["l2_sectors_write"] = writes * write_request / SECTOR_BYTES
    if (atomics := get("TCC_ATOMIC_sum")) is not None:
        counts["l2_sectors_atomic"] = atomics
    if line and (reads := get("TCP_TCC_READ_REQ_sum")) is not None:
        counts["l1_to_l2_read_bytes"] = reads * line
    if (writes := get("TCP_TCC_WRITE_REQ_sum")) is not None:
        counts["l1_to_l2_write_bytes"] = writes * write_request
    for feature, instructions, wavefronts in (
            ("global_load_requests", "SQ_INSTS_VMEM_RD", ("TA_FLAT_READ_WAVEFRONTS_sum", "TA_BUFFER_READ_WAVEFRONTS_sum")),
            ("global_store_requests", "SQ_INSTS_VMEM_WR", ("TA_FLAT_WRITE_WAVEFRONTS_sum", "TA_BUFFER_WRITE_WAVEFRONTS_sum")),
            ("global_atomic_instructions", None, ("TA_FLAT_ATOMIC_WAVEFRONTS_sum", "TA_BUFFER_ATOMIC_WAVEFRONTS_sum"))):
        value = (get(instructions) if instructions else None)
        value = total(*wavefronts) if value is None else value
        if value is not None:
            counts[feature] = value
    # vL1D accesses: TCP_TOTAL_CACHE_ACCESSES counts 32 B units (16 MiB of vecCopy reads + writes =
    # 524288 on gfx908, gfx90a, gfx942 and gfx950); split into loads and stores by the lanes'
    # read and write accesses (TCP_TOTAL_READ / TCP_TOTAL_WRITE count per lane).
    accesses, lane_reads, lane_writes = get("TCP_TOTAL_CACHE_ACCESSES_sum"), get("TCP_TOTAL_READ_sum"), get("TCP_TOTAL_WRITE_sum")
    if accesses is not None and lane_reads is not None and lane_writes is not None and lane_reads + lane_writes > 0:
        counts["global_load_sectors"] = accesses * lane_reads / (lane_reads + lane_writes)
        counts["global_store_sectors"] = accesses * lane_writes / (lane_reads + lane_writes)
    if (lds := get("SQ_INSTS_LDS")) is not None:
        counts["shared_load_wavefronts"] = lds * AMD_LDS_PASSES_PER_INSTRUCTION + (get("SQ_LDS_BANK_CONFLICT") or 0.0)

    by_pipe: dict[str, float] = {}

    def add(pipe: str, value: float | None) -> None:
        if value:
            by_pipe[pipe] = by_pipe.get(pipe, 0.0) + value

    arithmetic = {p: total(*(f"SQ_INSTS_VALU_{op}_{p}" for op in ("ADD", "MUL", "FMA"))) for p in _FP}
    trans = total(*(f"SQ_INSTS_VALU_TRANS_{p}" for p in _FP))
    mfma = get("SQ_INSTS_MFMA")
    mfma = total(*(f"SQ_INSTS_VALU_MFMA_{t}" for t in _MFMA_TYPES)) if mfma is None else mfma
    valu = get("SQ_INSTS_VALU")
    add("fp16", arithmetic["F16"])
    add("fp32", arithmetic["F32"])
    add("fp64", arithmetic["F64"])
    add("xu", trans)
    add("tensor", mfma)
    if valu is not None:
        typed = sum(v for v in (*arithmetic.values(), trans, mfma) if v is not None)
        # The rest of the VALU (integer, conversion, logic, moves, compares) runs on the ALU; without
        # the type breakdown (gfx908) the VALU instructions are counted, on no particular pipe.
        add("alu" if arithmetic["F32"] is not None else "other", max(valu - typed, 0.0))
    add("uniform", total("SQ_INSTS_SALU", "SQ_INSTS_SMEM"))
    vmem = get("SQ_INSTS_VMEM")
    add("lsu", total("SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR") if vmem is None else vmem)
    add("lsu", get("SQ_INSTS_LDS"))
    add("branch", get("SQ_INSTS_BRANCH"))
    add("special", total("SQ_INSTS_SENDMSG", "SQ_INSTS_GDS"))

    # FLOPs, thread-level: rocprof-compute's VALU FLOPs (64 lanes per instruction, FMA 2, TRANS
    # 1) as the canonical flop.* metrics; MFMA FLOPs 512 per MOP.
    flops: dict[str, float] = {}
    for precision, p in (("fp16", "F16"), ("fp32", "F32"), ("fp64", "F64")):
        parts = [get(f"SQ_INSTS_VALU_{op}_{p}") for op in ("ADD", "MUL", "TRANS")]
        fma = get(f"SQ_INSTS_VALU_FMA_{p}")
        if fma is not None or any(v is not None for v in parts):
            flops[precision] = 64 * (sum(v or 0.0 for v in parts) + 2 * (fma or 0.0))
    tensor: dict[str, float] = {}
    for t in _MFMA_TYPES:
        mops = get(f"SQ_INSTS_VALU_MFMA_MOPS_{t}")
        if mops:
            flops[f"mfma_{t.lower()}"] = mops * MFMA_FLOPS_PER_MOP
            # The model rates MMA work by 16-bit precision only; F32/F64/INT8/FP8 MFMA stay out of
            # the tensor bound (their FLOPs are in flops, their instructions on the tensor pipe).
            if t in ("F16", "BF16"):
                tensor[f"MFMA_MOPS.{t}.{_MFMA_MOP_SHAPE}"] = mops
    return counts, by_pipe, flops, tensor


def amd_features(profile: Profile, kernel: Kernel) -> KernelFeatures:
    """The model's inputs for one kernel of a rocprof / rocprof-compute profile: the canonical
    work counts with AMD formulas (DRAM bytes, SQ_INSTS, LDS bank conflicts) plus what
    :func:`amd_work` converts from the raw counters. Counts are wavefront-level; the features
    record the wave size and arch so that retargeting converts them for 32-thread warps."""
    raw = profile.values(kernel, origin="raw")
    values = profile.values(kernel)
    arch = amd_arch(profile, kernel, raw)
    counts = {feature: values[metric][0] for feature, metric in WORK_COUNTS.items() if metric in values}
    amd_counts, by_pipe, flops, tensor = amd_work(raw, arch)
    counts.update(amd_counts)
    if not any(name in counts for name in ESSENTIAL) and not any(name in by_pipe for name in ESSENTIAL_PIPES):
        collected = sorted(name for name in raw if _HARDWARE_COUNTER.match(name))
        if not collected:
            raise ValueError(NO_COUNTERS)
        shown = ", ".join(collected[:6]) + (f" and {len(collected) - 6} more" if len(collected) > 6 else "")
        raise ValueError(f"the profile's counters ({shown}) include none of the work the model needs: DRAM bytes, L2 "
                         f"requests or instruction counts ({COLLECT})")
    if kernel.grid is None or kernel.block is None:
        raise ValueError(f"{kernel.name}: the profile has no launch configuration")
    wave = kernel.attributes.get("wave_size") or (raw.get("Wave_Size") or (None,))[0]
    if not isinstance(wave, (int, float)) or not 0 < wave <= 1024:  # a damaged cell: CDNA's 64 below
        wave = None
    device = profile.devices.get(kernel.device_id, profile.device)
    return KernelFeatures(
        name=kernel.name,
        grid_blocks=kernel.blocks,
        threads_per_block=kernel.threads_per_block,
        registers_per_thread=kernel.registers_per_thread,
        shared_bytes_per_block=kernel.shared_bytes_per_block,
        counts=counts,
        warp_instructions_by_pipe=by_pipe,
        flops=flops,
        barriers=None,  # no rocprof counter counts s_barrier
        tensor_instructions=tensor,
        source_gpu=device.name,
        l2_bytes_of_source_gpu=device.l2_bytes,
        source_warp_size=int(float(wave)) if wave else 64,  # CDNA: 64-lane wavefronts
        source_arch=arch,
    )
