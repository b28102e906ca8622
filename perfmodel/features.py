"""Kernel features for the model: work counts only, never time.

The model predicts time, so nothing that measures time may reach it: durations, cycles,
clocks, rates, throughput percentages and stall cycles of the profiled kernel are all
excluded. Features come from an explicit allow-list of canonical work counts
(docs/model.md lists each with its metric) and from the per-opcode instruction tables.
``tests/test_features.py`` perturbs every time-like metric of a real profile and checks the
features do not move.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field

from keet.canonical import names_in, vocabulary
from keet.profile import Kernel, Profile, SourceRequest
from perfmodel.hardware import SECTOR_BYTES, assumed_isa, isa
from perfmodel.load_chains import LOAD_CHAIN_COLUMNS, load_waits, sass_needed

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
    "l2_read_requests": "l2.read_requests",
    "global_load_wavefronts": "global.load_wavefronts",
    "global_store_wavefronts": "global.store_wavefronts",
    "local_load_wavefronts": "local.load_wavefronts",
    "local_store_wavefronts": "local.store_wavefronts",
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



# Canonical work counts read only where the WORK_COUNTS above are absent (NVIDIA): total DRAM bytes
# when the read/write split is not there, thread-level instructions when warp-level ones are not.
FALLBACK_COUNTS = {"dram_bytes": "dram.bytes", "thread_instructions": "inst.thread_executed"}


def ncu_raw_metrics() -> frozenset[str]:
    """The raw Nsight Compute metric names the WORK_COUNTS (and their FALLBACK_COUNTS) are
    computed from, every alternative the canonical vocabulary tries."""
    wanted = {*WORK_COUNTS.values(), *FALLBACK_COUNTS.values()}
    return frozenset(name for metric in vocabulary() if metric.name in wanted for formula in metric.ncu for name in names_in(formula))


def raw_metrics() -> frozenset[str]:
    """The raw profiler metric names the WORK_COUNTS are computed from: reading only these
    (plus launch and device attributes, always read) is enough to predict. AMD counter names
    (the canonical metrics' rocprof formulas and the counters read by :func:`amd_work`) are
    included for readers that honour the filter."""
    wanted = set(WORK_COUNTS.values())
    amd = {name for metric in vocabulary() if metric.name in wanted for formula in metric.amd for name in names_in(formula)}
    return frozenset(ncu_raw_metrics() | amd | set(AMD_COUNTERS))


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
    # Work counts the model's terms read that the profile lacks, each as "canonical (raw Nsight
    # Compute metric)" or a short phrase naming the fallback taken (NVIDIA: nvidia_gaps). The
    # bounds that need them are left out or take a smaller count: the time is a lower bound.
    missing_counts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.missing_counts = tuple(self.missing_counts)  # a list when read back from JSON

    def as_dict(self) -> dict:
        """The fields as a dict; the AMD-only source fields only where set and missing_counts
        only where some count is missing, so that the features of a complete NVIDIA profile or
        source (profiles/static/zoo_features.json) read as they always have."""
        found = asdict(self)
        for name in ("source_warp_size", "source_arch"):
            if found[name] is None:
                del found[name]
        if not found["missing_counts"]:
            del found["missing_counts"]
        else:
            found["missing_counts"] = list(found["missing_counts"])
        return found


# Asynchronous copies from global memory (cp.async, TMA, bulk copies) are waited for at their
# pipeline's barriers, not per load: DEPBAR (cp.async groups) and the mbarrier phase checks of TMA.
ASYNC_COPIES = ("LDGSTS", "UTMALDG", "UBLKCP")
ASYNC_WAITS = ("DEPBAR", "SYNCS.PHASECHK")


GLOBAL_ATOMICS = ("REDG", "ATOMG", "RED", "ATOM")  # RED/ATOM: generic addresses, global in practice
# Kinds of global atomic operation the L2 executes at different measured rates (microbench/cuda/
# atomic_types.cu): by the operand type of the modifier, and ATOM (the old value returns to the SM).
# A RED/ATOM without a floating-point type modifier is an integer operation (RED.E.ADD is a 32-bit add).
ATOMIC_KINDS = {"f64": re.compile(r"\.F64\b"), "f32": re.compile(r"\.(F32|F16|BF16|F16x2|BF16x2)\b", re.IGNORECASE)}


def global_atomic_ops(thread_table: dict[str, float], warp_modifiers: dict[str, float]) -> dict[str, float]:
    """Thread-level global atomic operations by kind (global_atomic_ops_<kind>: f32, f64, int, and
    return for ATOM of any type), from the thread-level opcode table, split in the proportions of
    the warp-level table with modifiers (the thread table has no modifiers)."""
    out: dict[str, float] = {}
    for base in GLOBAL_ATOMICS:
        threads = thread_table.get(base, 0.0)
        warps = {op: c for op, c in warp_modifiers.items() if op.split(".", 1)[0] == base}
        total = sum(warps.values())
        if not threads:
            continue
        for op, c in (warps.items() if total else [(base, 1.0)]):
            kind = "return" if base.startswith("ATOM") else next((k for k, rx in ATOMIC_KINDS.items() if rx.search(op)), "int")
            share = c / total if total else 1.0
            out[f"global_atomic_ops_{kind}"] = out.get(f"global_atomic_ops_{kind}", 0.0) + threads * share
    return out


def source_request(also: Collection[str] = ()) -> SourceRequest:
    """What :func:`features` reads of each kernel's per-instruction counters (the load chains'
    columns and SASS), with the counters `also` (a caller's own, located: file:line where they
    are non-zero)."""
    return SourceRequest(frozenset({*LOAD_CHAIN_COLUMNS, *also}), sass_needed, frozenset(also) or None)


def prefetch(kernels: Iterable[Kernel], also: Collection[str] = ()) -> None:
    """Let the reader read ahead, in the background where it can, :func:`source_request`'s
    counters of each kernel, in this order."""
    request = source_request(also)
    for kernel in kernels:
        kernel.prefetch_source(request.columns, request.sass_for, request.locate or ())


def _global_load_waits(kernel: Kernel, opcodes: dict[str, float]) -> tuple[float, float] | None:
    """Warp-level waits for global loads, as (all waits, those of asynchronous copies): the
    dependent chains of synchronous loads (perfmodel.load_chains, where the report has
    per-instruction counters and SASS: Nsight Compute's SourceCounters section) plus the waits of
    asynchronous copies at their pipeline barriers (from the opcode table). Without the SASS, a
    kernel with asynchronous copies counts each synchronous load as a wait; one without them has
    no answer (None: the latency term then takes a typical share of the requests as waits)."""
    asynchronous = any(op.startswith(ASYNC_COPIES) for op in opcodes)
    async_waits = sum(c for op, c in opcodes.items() if op.startswith(ASYNC_WAITS)) if asynchronous else 0.0
    source = kernel.source_columns(LOAD_CHAIN_COLUMNS)
    chains = None if source is None else load_waits(source.instructions, source.sass_texts)
    if chains is None:
        if not asynchronous:
            return None
        chains = sum(c for op, c in opcodes.items() if op.split(".", 1)[0] == "LDG")  # not LDGSTS, LDGDEPBAR
    return chains + async_waits, async_waits


def features(profile: Profile, kernel: Kernel) -> KernelFeatures:
    """The model's inputs for one profiled kernel.

    Raises :class:`NotPredicted` (a ValueError) when an NVIDIA profile lacks the work the model
    cannot do without (:func:`nvidia_essentials`); where it lacks less, the features record
    what is missing in ``missing_counts`` (:func:`nvidia_gaps`). Derived once per kernel (the
    report, the diagnosis and the predictions all ask); a copy is returned."""
    found = kernel.derived.get(_DERIVED)
    if found is None:
        try:
            found = _features(profile, kernel)
        except ValueError as exc:
            found = exc
        kernel.derived[_DERIVED] = found
    if isinstance(found, ValueError):
        raise found
    return copy.deepcopy(found)


_DERIVED = "perfmodel.features"


def _features(profile: Profile, kernel: Kernel) -> KernelFeatures:
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
    thread_table = kernel.attributes.get("thread_inst_executed_per_opcode") or {}
    for opcode, count in thread_table.items():
        base = re.split(r"[.\s]", opcode, maxsplit=1)[0]
        if base in _FLOPS_PER_THREAD_INST:
            precision, per = _FLOPS_PER_THREAD_INST[base]
            flops[precision] = flops.get(precision, 0.0) + count * per
    barriers = sum(c for op, c in warp_table.items() if op.split(".")[0] in ("BAR", "BARRIER")) if warp_table else None
    with_modifiers = kernel.attributes.get("inst_executed_per_opcode_with_modifier") or {}
    tensor = {op: c for op, c in with_modifiers.items() if pipe_of(op) == "tensor"}
    fallbacks, covered = _nvidia_fallbacks(counts, values, thread_table)
    if missing := nvidia_essentials(counts, by_pipe):
        raise NotPredicted(_not_predicted_message(missing), missing=tuple(missing), collect=NCU_COLLECT)
    counts.update(global_atomic_ops(thread_table, with_modifiers))
    if counts.get("global_load_requests") and (waits := _global_load_waits(kernel, with_modifiers)) is not None:
        counts["global_load_waits"], asynchronous = waits
        if asynchronous:
            counts["global_load_async_waits"] = asynchronous
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
        missing_counts=(*fallbacks, *nvidia_gaps(counts, by_pipe, tensor, covered)),
    )


# ---------------------------------------------------------------- NVIDIA: missing counters
#
# Which Nsight Compute 2025.3 section collects which of the model's metrics (checked on an H200
# by capturing sgemm_tiled with each section alone, 2026-11-26; tests/data/SOURCES.md):
#   MemoryWorkloadAnalysis_Tables  dram__bytes_{read,write}.sum, lts__t_sectors_srcunit_tex_op_*,
#                                  l1tex__t_{sectors,requests}_pipe_lsu_mem_{global,local}_op_*,
#                                  shared wavefronts and bank conflicts, bytes per sector
#   MemoryWorkloadAnalysis_Chart   dram__bytes_{read,write}.sum, l1tex__m_xbar2l1tex_read_bytes.sum,
#                                  l1tex__m_l1tex2xbar_write_bytes.sum, lts__t_sectors.max
#   InstructionStats               smsp__inst_executed.sum, sass__inst_executed_per_opcode(_with_modifier_all)
#   SourceCounters                 the same plus sass__thread_inst_executed_true_per_opcode (FLOPs)
#   LaunchStats                    registers and shared memory per block (grid and block come with every report)
#   SpeedOfLight, ComputeWorkloadAnalysis, MemoryWorkloadAnalysis: none of the work counts (rates,
#                                  percentages, cycles)
# A `--page details` CSV export of these sections carries section labels, not the work counts
# (only "Executed Instructions"): CSV exports need `--page raw` or `--metrics`.
NCU_SECTIONS = ("LaunchStats", "InstructionStats", "MemoryWorkloadAnalysis_Tables", "MemoryWorkloadAnalysis_Chart", "SourceCounters")
# The essential work alone, for a `--metrics` capture or CSV export.
NCU_ESSENTIAL_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
                         "smsp__inst_executed.sum")
NCU_COLLECT = (f"collect them with ncu {' '.join(f'--section {s}' for s in NCU_SECTIONS)} (or --set full), exported as CSV "
               f"with --page raw, or with ncu --section LaunchStats --metrics {','.join(NCU_ESSENTIAL_METRICS)}")
# The two kinds of work the model cannot do without: a memory-side count and an instruction count.
NCU_MEMORY_WORK = ("dram_bytes_read", "dram_bytes_write", "l2_sectors_read", "l2_sectors_write", "l1_to_l2_read_bytes", "l1_to_l2_write_bytes")
MISSING_MEMORY = ("memory traffic: dram.bytes_read / dram.bytes_write (dram__bytes_read.sum, dram__bytes_write.sum), "
                  "l2.sectors_read / l2.sectors_write (lts__t_sectors_op_read.sum, lts__t_sectors_op_write.sum) or "
                  "l2.bytes_from_l1 (l1tex__m_xbar2l1tex_read_bytes.sum)")
MISSING_INSTRUCTIONS = ("instruction counts: inst.executed (smsp__inst_executed.sum) or the per-opcode table "
                        "(sass__inst_executed_per_opcode)")
NVIDIA_WARP_SIZE = 32
ATOMIC_SHARE = 0.01
# Counts whose absence leaves a term of the model out or smaller: the DRAM and L2 bounds (each
# direction), the L1/shared bound (global, local and shared traffic), the latency bound (load
# requests). The other WORK_COUNTS refine a term (bytes per sector, bank conflicts, L1-to-L2
# bytes for the latency mix) or come with these from the same section.
GAP_COUNTS = ("dram_bytes_read", "dram_bytes_write", "l2_sectors_read", "l2_sectors_write", "global_load_sectors",
              "global_store_sectors", "local_load_sectors", "local_store_sectors", "shared_load_wavefronts",
              "shared_store_wavefronts", "global_load_requests")


class NotPredicted(ValueError):
    """The profile lacks work the model cannot predict without. ``missing`` names it (what the
    message says is missing), ``collect`` how to collect it; str() is the whole sentence."""

    def __init__(self, message: str, missing: tuple[str, ...] = (), collect: str = "") -> None:
        super().__init__(message)
        self.missing = missing
        self.collect = collect


def _raw_name(feature: str) -> str:
    """A work count as "canonical (first Nsight Compute metric)"."""
    canonical = WORK_COUNTS[feature]
    metric = next(m for m in vocabulary() if m.name == canonical)
    first = metric.ncu[0] if metric.ncu else None
    return f"{canonical} ({' + '.join(sorted(names_in(first)))})" if first else canonical


def _nvidia_fallbacks(counts: dict[str, float], values: dict, thread_table: dict[str, float]) -> tuple[list[str], set[str]]:
    """Fill the DRAM bytes and the warp-level instruction count from what the profile has
    instead (updates ``counts``): what each fallback stands in for, and the features it covers."""
    notes, covered = [], set()
    if "dram_bytes_read" not in counts and "dram_bytes_write" not in counts and FALLBACK_COUNTS["dram_bytes"] in values:
        # dram__bytes.sum alone: the bytes are counted, their direction is not. Reads and writes go
        # at their own rates, and across GPUs only reads depend on the L2 size: all count as reads.
        counts["dram_bytes_read"] = values[FALLBACK_COUNTS["dram_bytes"]][0]
        covered.add("dram_bytes_write")
        notes.append("dram read/write split (dram__bytes_read.sum, dram__bytes_write.sum): dram.bytes (dram__bytes.sum) "
                     "counted as reads")
    if "instructions" not in counts:
        source = "smsp__thread_inst_executed.sum" if FALLBACK_COUNTS["thread_instructions"] in values else "sass__thread_inst_executed_true_per_opcode"
        thread = values[FALLBACK_COUNTS["thread_instructions"]][0] if FALLBACK_COUNTS["thread_instructions"] in values else (
            sum(thread_table.values()) if thread_table else None)
        if thread is not None:
            # A warp instruction executes for 1 to 32 threads: thread instructions / 32 is the
            # fewest warp instructions that could have executed them.
            counts["instructions"] = thread / NVIDIA_WARP_SIZE
            notes.append(f"inst.executed (smsp__inst_executed.sum): thread instructions ({source}) / 32 taken, the fewest "
                         "warp instructions they fit in")
    return notes, covered


def nvidia_essentials(counts: dict[str, float], by_pipe: dict[str, float]) -> list[str]:
    """What of the essential work an NVIDIA kernel's counts lack (empty: predictable): a
    memory-side count (DRAM bytes, L2 sectors or L1-to-L2 bytes) and an instruction count
    (warp-level, from smsp__inst_executed.sum, the per-opcode table or the thread-level fallback)."""
    missing = []
    if not any(name in counts for name in NCU_MEMORY_WORK):
        missing.append(MISSING_MEMORY)
    if "instructions" not in counts and not by_pipe:
        missing.append(MISSING_INSTRUCTIONS)
    return missing


def _not_predicted_message(missing: list[str]) -> str:
    if len(missing) == 2:
        return f"the profile has no work counters: it lacks {missing[0]}, and {missing[1]} ({NCU_COLLECT})"
    return f"the profile lacks {missing[0]} ({NCU_COLLECT})"


def nvidia_gaps(counts: dict[str, float], by_pipe: dict[str, float], tensor: dict[str, float], covered: Collection[str] = ()) -> list[str]:
    """The work counts an NVIDIA kernel's profile lacks that one of the model's terms reads
    (GAP_COUNTS; the pipe, tensor and barrier bounds' per-opcode tables; the atomic bounds'
    counts), each named by its canonical and raw metric; ``covered``: features a fallback stands
    in for (its own note says so)."""
    gaps = []
    for feature in GAP_COUNTS:
        if feature not in counts and feature not in covered:
            gaps.append(_raw_name(feature))
    if not by_pipe:
        gaps.append("per-pipe instruction split (sass__inst_executed_per_opcode): the pipe, tensor and barrier bounds are left out")
    elif by_pipe.get("tensor") and not tensor:
        gaps.append("MMA shapes (sass__inst_executed_per_opcode_with_modifier_all): the tensor bound is left out")
    if counts.get("global_atomic_instructions") and "l2_sectors_atomic" not in counts:
        gaps.append(_raw_name("l2_sectors_atomic"))
    # The hot-address bound needs the busiest L2 slice; a few atomics among much other L2 work (a
    # sort's counters, a GEMM's split-K flags) cannot move the time, so only atomics of at least
    # ATOMIC_SHARE of the L2 sectors make its absence a gap.
    atomics = counts.get("l2_sectors_atomic", counts.get("global_atomic_instructions", 0.0))
    l2_total = atomics + counts.get("l2_sectors_read", 0.0) + counts.get("l2_sectors_write", 0.0)
    if atomics and atomics >= ATOMIC_SHARE * l2_total and "l2_sectors_busiest_slice" not in counts:
        gaps.append(_raw_name("l2_sectors_busiest_slice"))
    return gaps


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
