"""Predict from CUDA source with no GPU: compile, discover (or take) the launches, interpret
a sample of each launch's blocks and hand the counted work to the same model as a profile.

    from perfmodel.static.source import static_kernels
    for k in static_kernels("prog.cu", "h100"):
        print(k.launch.name, k.features.counts["global_load_sectors"], k.seconds)

AMD targets are counted on the H100 build (sm_90a) and retargeted by the model like an H100
profile would be (perfmodel/retarget.py).
"""

from __future__ import annotations

import functools
import re
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from keet.errors import KeetError
from perfmodel import occupancy
from perfmodel.features import KernelFeatures
from perfmodel.hardware import gpu, reference_gpu_id
from perfmodel.static import traffic
from perfmodel.static.compile import (
    BuildOptions,
    Compiled,
    arch_for,
    compile_cu,
    cuda_archs,
    ptx_location,
)
from perfmodel.static.interpreter import (
    DeviceLaunch,
    InterpreterError,
    Memory,
    MemoryFault,
    Pointer,
    UnsupportedInstruction,
    count_work,
)
from perfmodel.static.launch_spec import launch_from_spec
from perfmodel.static.launches import (
    Launch,
    LibraryCall,
    build_program,
    discover_launches,
)
from perfmodel.static.ptx import Module, parse

# Lanes interpreted together: enough blocks to represent the grid, few enough to stay fast.
MAX_SAMPLED_LANES = 1024
MIN_SAMPLED_BLOCKS, MAX_SAMPLED_BLOCKS = 3, 8


MAX_DEVICE_CONFIGURATIONS = 8  # device-side launch configurations interpreted per host-launched kernel


class StaticError(KeetError):
    """A launch could not be interpreted (unsupported PTX, a fault, missing data); launched_by:
    the kernel that launched it from the device (dynamic parallelism), if so."""

    def __init__(self, message: str, launch: Launch | None = None, launched_by: str | None = None):
        super().__init__(message)
        self.launch = launch
        self.launched_by = launched_by


@dataclass
class StaticKernel:
    launch: Launch
    compiled: Compiled
    features: KernelFeatures
    work: dict  # count_work's result (whole grid)
    traffic: traffic.Traffic
    written_buffers: set[int] = field(default_factory=set)
    approximations: list[str] = field(default_factory=list)
    seconds: float = 0.0  # time spent interpreting
    launched_by: str | None = None  # launched from the device by this kernel (dynamic parallelism)
    device_launches: list[DeviceLaunch] = field(default_factory=list)  # made by its sampled blocks
    memory: Memory | None = field(default=None, repr=False)  # global memory as its sampled blocks left it

    def summary(self) -> dict:
        """The counted features and how they were obtained, for --explain and JSON."""
        w = self.work
        return {
            "kernel": self.launch.name, "grid": list(self.launch.grid), "block": list(self.launch.block),
            "dynamic_shared_bytes": self.launch.dynamic_shared_bytes, "launches": self.launch.count,
            "registers_per_thread": self.features.registers_per_thread, "shared_bytes_per_block": self.features.shared_bytes_per_block,
            "counts": self.features.counts, "warp_instructions_by_pipe": self.features.warp_instructions_by_pipe,
            "flops": self.features.flops, "barriers": self.features.barriers, "tensor_instructions": self.features.tensor_instructions,
            "l1_hit_rate": self.traffic.l1_hit_rate, "footprint_read_bytes": self.traffic.footprint_read_bytes,
            "footprint_write_bytes": self.traffic.footprint_write_bytes,
            "sampled_blocks": [list(b) for b in w["sampled_blocks"]], "sampled_warps_per_block": len(w["sampled_warps"]),
            "scale": w["scale"], "approximations": self.approximations, "interpret_seconds": round(self.seconds, 3),
        }


def sample_size(grid_blocks: int, threads_per_block: int) -> int:
    """Blocks to interpret: 3 to 8, as many as fit MAX_SAMPLED_LANES (all when the grid is
    smaller). The cost of a step grows little up to about a thousand lanes."""
    warps = -(-threads_per_block // 32)
    fit = MAX_SAMPLED_LANES // (warps * 32)
    return min(grid_blocks, max(MIN_SAMPLED_BLOCKS, min(MAX_SAMPLED_BLOCKS, fit)))


def _inputs(launch: Launch) -> tuple[Memory, list, list[int], list[str]]:
    """Interpreter memory (with the buffer id of each of its buffers) and arguments for a
    recorded launch: each buffer as the host wrote it, pointer arguments (also those inside
    structs) rewritten to the interpreter's addresses."""
    notes: list[str] = []
    arrays: dict[str, np.ndarray] = {}
    names: dict[int, str] = {}
    for buf in launch.buffers.values():
        if buf.content == "file" and buf.path is not None and buf.size > 0:
            data = np.memmap(buf.path, dtype=np.uint8, mode="c")  # copy-on-write: only touched pages are read
        elif buf.size == 0:
            data = np.zeros(0, np.uint8)
        elif buf.content == "skipped":
            notes.append(f"buffer {buf.id} ({buf.size} bytes) was not saved ({buf.reason}): read as zeros")
            data = np.zeros(buf.size, np.uint8)
        else:
            data = buf.read()
        names[buf.id] = buf.name if buf.kind == "symbol" and buf.name else f"buffer{buf.id}"  # a __device__ variable keeps its name
        arrays[names[buf.id]] = data
    memory = Memory(arrays)
    for buf in launch.buffers.values():  # pointers stored in buffers (arrays of pointers, structs): the interpreter's addresses
        data = arrays[names[buf.id]]
        moved = [(ptr.at, memory.address(Pointer(names[ptr.buffer], ptr.offset))) for ptr in buf.pointers
                 if ptr.buffer in names and data is not None and ptr.at + 8 <= len(data)]
        if moved:
            at = np.array([a for a, _ in moved], dtype=np.int64)
            data[at[:, None] + np.arange(8)] = np.array([v for _, v in moved], dtype="<u8").view(np.uint8).reshape(-1, 8)
    args: list = []
    for arg in launch.args:
        raw = bytearray(arg.raw)
        for ptr in arg.pointers:
            if ptr.buffer in names:
                address = memory.address(Pointer(names[ptr.buffer], ptr.offset))
                raw[ptr.at:ptr.at + 8] = address.to_bytes(8, "little")
        args.append(bytes(raw))
    return memory, args, list(launch.buffers), notes


UNSUPPORTED_ADVICE = ("perfmodel's PTX interpreter lacks it: predict this kernel from a profile of the program "
                      "(perfmodel predict PROFILE.ncu-rep), or give the launch a kernel without it")
FAULT_ADVICE = ("the kernel reads or writes outside its buffers with the values the host wrote (data a previous kernel "
                "or a library would have produced on the GPU reads as zeros here): check the program's arguments "
                "(-- PROGRAM_ARG...), or give the launch with --kernel/--grid/--block/--arg/--buffer")


def _where(compiled: Compiled, message: str) -> str:
    """file:line in the CUDA source of the PTX line a message names ("line N"), else the file."""
    m = re.search(r"\bline (\d+)\b", message)
    found = ptx_location(compiled.ptx, int(m.group(1)), compiled.source) if m else None
    return found or str(compiled.source)


def _interpreter_problem(compiled: Compiled, launch: Launch, exc: InterpreterError) -> str:
    """One line: the source line, the kernel, the construct, and what to do."""
    where = _where(compiled, str(exc))
    if isinstance(exc, UnsupportedInstruction):
        what = f"PTX instruction {exc.instruction!r} (PTX line {exc.line}) is not supported"
        return f"{where}: {launch.name}: {what}{f' ({exc.why})' if exc.why else ''}; {UNSUPPORTED_ADVICE}"
    problem = re.sub(r"^line (\d+):", r"PTX line \1:", str(exc))
    if isinstance(exc, MemoryFault):
        return f"{where}: {launch.name}: {problem}; {FAULT_ADVICE}"
    return f"{where}: {launch.name}: {problem}; predict it from a profile of the program (perfmodel predict PROFILE.ncu-rep)"


def _buffers_touched(keys: np.ndarray | None, ids: list[int]) -> set[int]:
    """Buffer ids of footprint keys (block << 48 | sector)."""
    if keys is None or not len(keys):
        return set()
    return {ids[i] for i in np.unique(traffic.buffer_index(keys & traffic.SECTOR_MASK)).tolist() if i < len(ids)}


def _module(compiled: Compiled, launch: Launch) -> Module:
    try:
        module = _parsed(compiled.ptx)
    except KeetError as exc:  # PTX this parser does not read
        raise StaticError(f"{_where(compiled, str(exc))}: {launch.name}: PTX the interpreter does not read: {exc}; "
                          f"{UNSUPPORTED_ADVICE}", launch) from None
    if launch.kernel not in module.kernels:
        raise StaticError(f"{compiled.source}: no PTX for kernel {launch.name}", launch)
    if launch.error:  # the runtime refuses it (an empty grid, too many threads): it runs nothing on the GPU
        raise StaticError(f"{compiled.source}: {launch.name} <<<{launch.grid}, {launch.block}>>>: the CUDA runtime refuses "
                          f"this launch ({launch.error}), so it does no work; check the program's arguments and the "
                          "data it reads (-- PROGRAM_ARG...)", launch)
    return module


def count_launch(compiled: Compiled, launch: Launch, *, earlier: dict[int, str] | None = None,
                 sample: int | None = None) -> StaticKernel:
    """Interpret one launch and turn its counts into the model's features, for the GPU it was
    compiled for (the model retargets them to any other)."""
    start = time.perf_counter()
    module = _module(compiled, launch)
    memory, args, ids, notes = _inputs(launch)
    return _counted(compiled, module, launch, memory, args, ids, notes, earlier, sample, start)


def _counted(compiled: Compiled, module: Module, launch: Launch, memory: Memory, args: list, ids: list[int], notes: list[str],
             earlier: dict[int, str] | None, sample: int | None, start: float) -> StaticKernel:
    """count_launch's interpretation and features, on MEMORY with ARGS (the interpreter's
    addresses); ids: the buffer id of each of MEMORY's first buffers."""
    counting = gpu(compiled.gpu_id)
    resources = compiled.kernels.get(launch.kernel)
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    try:
        work = count_work(module.kernels[launch.kernel], launch.grid, launch.block, args, memory,
                          dynamic_shared_bytes=launch.dynamic_shared_bytes, sample=sample or sample_size(blocks, threads),
                          functions=tuple(module.kernels))
    except InterpreterError as exc:
        raise StaticError(_interpreter_problem(compiled, launch, exc), launch) from None
    written = _buffers_touched(work["footprint"].get("store"), ids)
    loaded = _buffers_touched(np.concatenate([work["footprint"].get(k, np.zeros(0, np.uint64)) for k in ("load", "load_l2")]), ids)
    for buffer_id in sorted(b for b in loaded if launch.buffers[b].content == "uninitialized"):
        notes.append(f"reads buffer {buffer_id}, which the host never wrote: read as zeros")
    for buffer_id in sorted(loaded & set(earlier or {})):
        notes.append(f"reads buffer {buffer_id}, which {earlier[buffer_id]} writes on the GPU before this launch: the "
                     "interpreter reads what the host last wrote there instead")
    if resources and resources.spill_bytes:
        notes.append(f"ptxas spills registers ({resources.spill_store_bytes} B stores, {resources.spill_load_bytes} B loads per "
                     "thread in the code): spill code is made after PTX, so its local-memory traffic is not counted and the "
                     "time is likely low")
    shared = (resources.shared_bytes if resources else 0) + launch.dynamic_shared_bytes
    registers = resources.registers if resources else None
    occ = occupancy.for_gpu(counting, threads, registers or 0, shared)
    counts = dict(work["counts"])
    sampled = len(work["sampled_blocks"])
    # the grid in sampled-block equivalents: an empty remainder block adds no footprint
    moved = traffic.estimate(work["footprint"], sampled_blocks=sampled, grid_blocks=work["block_scale"] * sampled, warp_scale=work["warp_scale"],
                             buffer_bytes=work["buffer_bytes"], load_sectors=counts["global_load_sectors"],
                             bypass_sectors=work["global_load_sectors_l1_bypass"],
                             store_sectors=counts["global_store_sectors"], gpu=counting, blocks_per_sm=occ.blocks_per_sm,
                             shared_bytes_per_block=shared)
    counts.update(l2_sectors_read=moved.l2_sectors_read, l2_sectors_write=moved.l2_sectors_write,
                  l1_to_l2_read_bytes=moved.l2_sectors_read * traffic.SECTOR_BYTES,
                  dram_bytes_read=moved.dram_bytes_read, dram_bytes_write=moved.dram_bytes_write)
    for kind in ("load", "store"):
        if counts[f"global_{kind}_sectors"]:
            counts[f"global_{kind}_bytes_per_sector"] = work[f"global_{kind}_bytes"] / counts[f"global_{kind}_sectors"]
    if work["max_atomics_per_address"] > 1:
        counts["l2_sectors_busiest_slice"] = work["max_atomics_per_address"]
    features = KernelFeatures(
        missing_counts=tuple(work.get("missing", ())),
        name=launch.name, grid_blocks=blocks, threads_per_block=threads, registers_per_thread=registers,
        shared_bytes_per_block=shared, counts=counts, warp_instructions_by_pipe=work["warp_instructions_by_pipe"],
        flops=work["flops"], barriers=work["barriers"], tensor_instructions=work["tensor_instructions"],
        source_gpu=counting.name, l2_bytes_of_source_gpu=int(counting.value("l2_bytes") or 0) or None)
    return StaticKernel(launch=launch, compiled=compiled, features=features, work=work, traffic=moved, written_buffers=written,
                        approximations=notes + work["approximations"] + list(moved.notes), seconds=time.perf_counter() - start,
                        device_launches=work["device_launches"], memory=memory if work["device_launches"] else None)


def _by_device_configuration(launches: list[DeviceLaunch]) -> list[tuple[DeviceLaunch, int]]:
    """(first launch, launches) per kernel, grid, block and dynamic shared memory, in order."""
    groups: dict[tuple, list[DeviceLaunch]] = {}
    for dl in launches:
        groups.setdefault((dl.kernel, dl.grid, dl.block, dl.dynamic_shared_bytes), []).append(dl)
    return [(group[0], len(group)) for group in groups.values()]


def device_side(compiled: Compiled, parent: StaticKernel) -> list[StaticKernel | StaticError]:
    """The kernels PARENT (launched by the host) launches from the device (dynamic parallelism):
    one entry per configuration its sampled blocks launched, with their number extrapolated
    to PARENT's grid and launches; each interpreted on the global memory as PARENT's sampled
    blocks left it, with the arguments they wrote. What those kernels launch in turn (a deeper
    level: recursion) is listed, not predicted."""
    if not parent.device_launches:
        return []
    module = _parsed(compiled.ptx)
    scale = parent.work["scale"] * parent.launch.count
    out: list[StaticKernel | StaticError] = []
    groups = _by_device_configuration(parent.device_launches)
    for first, sampled in groups[:MAX_DEVICE_CONFIGURATIONS]:
        resources = compiled.kernels.get(first.kernel)
        name = resources.demangled if resources else first.kernel
        empty = not all(first.grid) or not all(first.block)
        launch = Launch(kernel=first.kernel, name=name, grid=first.grid, block=first.block,
                        dynamic_shared_bytes=first.dynamic_shared_bytes, buffers=parent.launch.buffers, seq=parent.launch.seq,
                        count=max(1, round(sampled * scale)),
                        error="a grid or block dimension is 0" if empty else None)
        start = time.perf_counter()
        try:
            kernel = _module(compiled, launch).kernels[first.kernel]
            args = [first.params[p.offset:p.offset + p.size] for p in kernel.params]
            if parent.memory is None:  # the parent's memory was let go: nothing to interpret the child on
                raise StaticError(f"{compiled.source}: {name}: not predicted: device-side launch", launch)
            child = _counted(compiled, module, launch, parent.memory, args, list(launch.buffers), [], None, None, start)
        except StaticError as exc:
            exc.launched_by = parent.launch.name
            out.append(exc)
            continue
        child.launched_by = parent.launch.name
        child.approximations.insert(0, f"launched from the device by {parent.launch.name}: {launch.count} launches, "
                                       f"{sampled} of them by its {len(parent.work['sampled_blocks'])} interpreted blocks "
                                       "(scaled to its grid); the first one's arguments are interpreted for all")
        out.append(child)
        for deeper, count in _by_device_configuration(child.device_launches):
            res = compiled.kernels.get(deeper.kernel)
            again = Launch(kernel=deeper.kernel, name=res.demangled if res else deeper.kernel, grid=deeper.grid,
                           block=deeper.block, dynamic_shared_bytes=deeper.dynamic_shared_bytes,
                           count=max(1, round(count * child.work["scale"] * launch.count)))
            out.append(StaticError(f"{compiled.source}: {again.name} <<<{again.grid}, {again.block}>>>: not predicted: "
                                   f"device-side launch by {name}, itself launched from the device (one level of "
                                   "device-side launches is interpreted)", again, launched_by=name))
    for first, sampled in groups[MAX_DEVICE_CONFIGURATIONS:]:
        resources = compiled.kernels.get(first.kernel)
        launch = Launch(kernel=first.kernel, name=resources.demangled if resources else first.kernel, grid=first.grid,
                        block=first.block, dynamic_shared_bytes=first.dynamic_shared_bytes, count=max(1, round(sampled * scale)))
        out.append(StaticError(f"{compiled.source}: {launch.name} <<<{launch.grid}, {launch.block}>>>: not predicted: "
                               f"device-side launch (more than {MAX_DEVICE_CONFIGURATIONS} configurations launched by "
                               f"{parent.launch.name})", launch, launched_by=parent.launch.name))
    return out


@functools.lru_cache(maxsize=4)
def _parsed(ptx: str) -> Module:
    return parse(ptx)


def counting_gpu(target_id: str) -> str:
    """The GPU whose build is interpreted: the target itself when it has a CUDA architecture."""
    return target_id.lower() if target_id.lower() in cuda_archs() else reference_gpu_id()


def launches_of(path: str | Path, compiled: Compiled, *, kernel: str | None = None, grid: str | None = None,
                block: str | None = None, smem: str | None = None, args: tuple[str, ...] = (), buffers: tuple[str, ...] = (),
                argv: tuple[str, ...] = (), program: Future | None = None, host_sandbox: str = "auto",
                library_calls: list[LibraryCall] | None = None, runtime_stubs: dict[str, int] | None = None) -> list[Launch]:
    """The launches to predict: discovered by running the program's host code, or given by the
    flags (which replace discovery when --grid and --block are both given, else override
    values of the discovered launches of --kernel). program: the host program being built
    (build_program) while the caller compiled the device code; library_calls: receives the
    program's calls into CUDA libraries (discovery without --kernel only); runtime_stubs: the
    CUDA runtime functions it called that the recorder does not model."""
    flags = {"kernel": kernel, "grid": grid, "block": block, "smem": smem, "args": args, "buffers": buffers}
    if grid is not None and block is not None:
        return [launch_from_spec(compiled, **flags)]
    found = discover_launches(path, compiled.gpu_id, compiled=compiled, argv=argv, program=program.result() if program else None,
                              host_sandbox=host_sandbox, options=compiled.options)
    calls = found.library_calls
    if runtime_stubs is not None:
        runtime_stubs.update(found.runtime_stubs)
    if kernel is not None:
        wanted = compiled.kernel(kernel).name
        found = [launch for launch in found if launch.kernel == wanted]
        calls = []
        if not found:
            raise KeetError(f"{path}: the program never launches {kernel}")
    if library_calls is not None:
        library_calls.extend(calls)
    if any(v for v in (grid, block, smem, args, buffers)):
        found = [launch_from_spec(compiled, base=launch, **flags) for launch in found]
    return list(found)


MAX_ARGUMENT_SETS = 8  # distinct work of one kernel configuration counted apart; beyond, the first stands for all


def _work_key(launch: Launch) -> tuple:
    """What of a launch's arguments shapes its work: scalar bytes, and for each pointer the
    size of its buffer and the offset into it (ping-pong buffers of one size are the same work)."""
    out = []
    for arg in launch.args:
        raw = bytearray(arg.raw)
        where = []
        for ptr in arg.pointers:
            raw[ptr.at:ptr.at + 8] = bytes(8)
            buf = launch.buffers.get(ptr.buffer)
            where.append((ptr.at, buf.size if buf else None, ptr.offset))
        out.append((bytes(raw), tuple(where)))
    return tuple(out)


def _by_configuration(launches: list[Launch]) -> list[tuple[Launch, int, int]]:
    """(first launch, launches, distinct argument sets) per kernel configuration (kernel, grid,
    block, dynamic shared memory) and argument work (_work_key), in program order. A
    configuration launched with more than MAX_ARGUMENT_SETS argument works (a loop that passes
    its counter) is one entry, its first launch standing for all."""
    groups: dict[tuple, list[Launch]] = {}
    for launch in launches:
        groups.setdefault(launch.key()[:4], []).append(launch)
    out: list[tuple[Launch, int, int]] = []
    for group in groups.values():
        works: dict[tuple, list[Launch]] = {}
        for launch in group:
            works.setdefault(_work_key(launch), []).append(launch)
        parts = list(works.values()) if len(works) <= MAX_ARGUMENT_SETS else [group]
        out += [(g[0], sum(x.count for x in g), len(g)) for g in parts]
    return sorted(out, key=lambda entry: entry[0].seq)


class StaticResult(list):
    """static_kernels' entries, with the CUDA compiler that built the program (``toolkit``,
    keet.toolchain.Toolkit.describe) and the program's calls into CUDA libraries
    (``library_calls``: not predicted, their kernels are not in the program)."""

    def __init__(self, entries=()):
        super().__init__(entries)
        self.toolkit = ""
        self.library_calls: list[LibraryCall] = []
        self.runtime_stubs: dict[str, int] = {}  # CUDA runtime functions done as nothing -> calls


def static_kernels(path: str | Path, target_id: str, progress: Callable[[str], None] | None = None,
                   options: BuildOptions | None = None, **launch_flags) -> StaticResult:
    """One entry per kernel configuration the program at PATH launches (see launches_of for
    the flags), counted for TARGET_ID; a configuration that cannot be interpreted gives its
    StaticError instead. Of several argument sets of one configuration the first is counted.
    progress, when given, is told each stage as it starts; options: the program's build
    options (-I, -D, -std, --include)."""
    say = progress or (lambda stage: None)
    target = gpu(target_id)
    arch_gpu = counting_gpu(target.id)
    discover = not (launch_flags.get("grid") and launch_flags.get("block"))
    if not Path(path).is_file():
        raise KeetError(f"{path}: no such file")
    with tempfile.TemporaryDirectory(prefix="perfmodel-program-") as tmp, ThreadPoolExecutor(1) as pool:
        # the host build and the device compile are separate nvcc runs: overlap them
        program = pool.submit(build_program, Path(path), arch_gpu, Path(tmp) / "program", options=options) if discover else None
        say(f"compiling {path} for {arch_for(arch_gpu)}" + (" (and its host code with the launch recorder)" if discover else ""))
        compiled = compile_cu(path, arch_gpu, options=options)
        if discover:
            say("running the host code to record its launches")
        calls: list[LibraryCall] = []
        stubs: dict[str, int] = {}
        found = launches_of(path, compiled, program=program, library_calls=calls, runtime_stubs=stubs, **launch_flags)
    out = StaticResult()
    out.toolkit, out.library_calls, out.runtime_stubs = compiled.toolkit, calls, stubs
    written: dict[int, str] = {}
    for launch, launches, variants in _by_configuration(found):
        say(f"interpreting {launch.name} <<<{launch.grid}, {launch.block}>>>")
        try:
            counted = count_launch(compiled, replace(launch, count=launches), earlier=written)
        except StaticError as exc:
            out.append(exc)
            continue
        if variants > 1:
            counted.approximations.insert(0, f"launched {launches} times with {variants} different argument sets: "
                                             "the first is interpreted for all")
        out.append(counted)
        for buffer_id in counted.written_buffers:
            written.setdefault(buffer_id, f"{launch.name} (launch {launch.seq})")
        if counted.device_launches:
            say(f"interpreting the kernels {launch.name} launches from the device")
            out.extend(device_side(compiled, counted))
            counted.memory = None  # the children are counted: let the interpreter's memory go
    return out
