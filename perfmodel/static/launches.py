"""Launch discovery: run a self-contained CUDA program's host code with no GPU and record its launches.

The program (kernels + main) is built with ``nvcc -cudart none`` against a recording stand-in
for the CUDA runtime (``recorder/recorder.cpp``, compiled with the host compiler and cached):
device memory is host memory, copies and memsets are done on the host, kernels never run, and
each launch is recorded -- kernel, grid, block, dynamic shared memory, stream and argument
values (raw bytes by the sizes of the PTX .entry signature; pointer arguments resolved to the
buffer they point into + offset) -- with a snapshot of each buffer it points into as the host
wrote it (cudaMemcpy / cudaMemset). Since device code never runs, results a program checks on
the host are wrong; the record is flushed at every launch, so a program that then fails its
check (exit 1, abort) still yields every launch made until then. The device the program sees
(cudaGetDeviceProperties, cudaDeviceGetAttribute, occupancy queries) is the target GPU of the
hardware database; cudaEventElapsedTime always answers 1.0 ms. The program runs in a copy of
its source folder (its data files, read by relative paths, are there), built with OpenMP when
its host code uses it and with relocatable device code when it launches kernels from device
code, for TIMEOUT_S in all and AFTER_FIRST_LAUNCH_S after its first launch.

Identical launches (same kernel, grid, block, dynamic shared memory and argument bytes) are
merged by default, keeping the first one's buffer snapshots and counting the repeats
(``Launch.count``): buffers only change through host writes, and a timing loop relaunches the
same kernel on the same buffers.

Running the host code means running the file's own code: it runs in keet's bubblewrap sandbox
(keet/sandbox.py: no environment, no network, nothing writable but the record folder, nothing of
the caller's processes visible, limits on the whole process tree) whenever this machine has one.
Without it, ``host_sandbox="auto"`` runs the program directly with a minimal environment and
prints a one-line warning; ``"require"`` refuses; ``"off"`` runs it directly without a word
(trusted programs, such as the zoo's).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from keet import toolchain
from keet.errors import KeetError
from keet.sandbox import (
    Isolation,
    Limits,
    SandboxUnavailable,
    read_left_file,
    run_limited,
    sandbox_problem,
)
from perfmodel.hardware import gpu
from perfmodel.static.compile import (
    RDC_FLAG,
    BuildOptions,
    Compiled,
    CompileError,
    arch_for,
    base_flags,
    compile_cu,
    compile_problem,
    entry_params,
    first_error,
    include_flags,
    needs_relocatable,
)
from perfmodel.static.libraries import (
    OPENMP,
    is_runtime_function,
    launches_kernels,
    library_of_symbol,
    stub_source,
)

RECORDER_SRC = Path(__file__).resolve().parent / "recorder" / "recorder.cpp"
# Time limits of the program's run. A program may compute on the host for minutes before its
# first launch (llm.c's CPU references of a GEMM) -- work its own run on a GPU does too, and that
# discovery cannot skip -- so the run gets TIMEOUT_S in all; once it has launched, what follows
# (timing loops, checks of results that are wrong here) adds little, and the recorder ends the
# program AFTER_FIRST_LAUNCH_S after its first launch, keeping every launch made until then.
TIMEOUT_S = 300.0
AFTER_FIRST_LAUNCH_S = 60.0
# The program runs where its own folder's files are (cuda-samples' sdkFindFilePath tries "./data/"
# first): its source folder is copied into its working folder, when it is small enough.
COPY_MAX_BYTES = 256 << 20
COPY_MAX_FILES = 4096
MAX_OPENMP_THREADS = 16  # below the sandbox's process limit (threads count as processes)
MEMORY_LIMIT_BYTES = 16 << 30  # address space of the program (device buffers are reserved lazily)
SNAPSHOT_CAP_BYTES = 1 << 30  # total bytes of buffer snapshots written per program
RECORD_MARGIN_BYTES = 64 << 20  # the launch record itself, beyond the snapshots
HOST_SANDBOX = ("auto", "require", "off")


class DiscoveryError(KeetError):
    """The program could not be built or run for launch discovery, or launched nothing."""


@dataclass
class Buffer:
    """A device (or managed / pinned host / __device__ symbol) allocation as a launch saw it.

    content: "file" (``path`` holds the bytes the host wrote), "fill" (every byte is ``fill``),
    "uninitialized" (never written by the host; reads as zeros here) or "skipped" (not saved:
    ``reason``)."""

    id: int
    size: int
    kind: str
    content: str
    path: Path | None = None
    fill: int | None = None
    name: str | None = None
    reason: str | None = None
    pointers: tuple[Pointer, ...] = ()  # words of the snapshot that point into buffers (at: offset in this one)
    _keep: object = field(default=None, repr=False, compare=False)  # keeps the scratch folder alive

    def read(self) -> np.ndarray | None:
        """The bytes as a uint8 array (zeros when uninitialized), or None when skipped (or when
        the program left something else than a regular file of the recorded size there)."""
        if self.content == "file" and self.path is not None:
            data = read_left_file(self.path, self.size)
            return np.frombuffer(data, dtype=np.uint8).copy() if data is not None and len(data) == self.size else None
        if self.content == "fill":
            return np.full(self.size, self.fill or 0, dtype=np.uint8)
        if self.content == "uninitialized":
            return np.zeros(self.size, dtype=np.uint8)
        return None


@dataclass(frozen=True)
class Pointer:
    at: int  # byte offset inside the argument
    buffer: int  # Buffer.id
    offset: int  # byte offset inside the buffer


@dataclass(frozen=True)
class Arg:
    name: str  # PTX parameter name
    size: int
    raw: bytes
    pointers: tuple[Pointer, ...] = ()

    @property
    def value(self) -> int | None:
        """The argument as an unsigned little-endian integer (sizes 1, 2, 4, 8)."""
        return int.from_bytes(self.raw, "little") if self.size in (1, 2, 4, 8) and len(self.raw) == self.size else None

    @property
    def buffer(self) -> int | None:
        """The buffer a pointer argument points into (None for scalars)."""
        return self.pointers[0].buffer if self.size == 8 and self.pointers and self.pointers[0].at == 0 else None

    @property
    def offset(self) -> int | None:
        return self.pointers[0].offset if self.buffer is not None else None

    def as_float(self) -> float:
        return float(np.frombuffer(self.raw, dtype={4: np.float32, 8: np.float64, 2: np.float16}[self.size])[0])


@dataclass
class Launch:
    kernel: str  # mangled name (the PTX .entry name)
    name: str  # demangled
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int = 0
    args: list[Arg] = field(default_factory=list)
    buffers: dict[int, Buffer] = field(default_factory=dict)
    stream: int = 0
    seq: int = 0  # position among the program's launches
    count: int = 1  # identical launches merged into this one
    error: str | None = None  # the runtime would have refused this launch (why)

    @property
    def threads(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2] * self.block[0] * self.block[1] * self.block[2]

    def key(self) -> tuple:
        return (self.kernel, self.grid, self.block, self.dynamic_shared_bytes, tuple(a.raw for a in self.args))


@dataclass
class LibraryCall:
    """Calls of one CUDA library function (cuBLAS, cuDNN, ...) the program made: its kernels
    are the library's, not in the program's PTX, so they are listed, not predicted."""

    library: str
    name: str
    count: int = 1
    seq: int = 0  # position of the first call among the program's launches and calls

    @property
    def launches_kernels(self) -> bool:
        """A call that does the library's work on the GPU (not a handle, plan or descriptor set-up)."""
        return launches_kernels(self.library, self.name)


class Launches(list):
    """The list of launches, with how the program ended: ``exit_status`` (None: killed at the
    timeout), ``completed`` (it reached exit() or the end of main; False after an abort or a
    crash), ``output`` (the tail of its stdout and stderr) and ``library_calls`` (calls into
    CUDA libraries, one entry per function, in the order of their first call)."""

    def __init__(self, launches=()):
        super().__init__(launches)
        self.exit_status: int | None = None
        self.completed = False
        self.output = ""
        self.library_calls: list[LibraryCall] = []
        self.runtime_stubs: dict[str, int] = {}  # CUDA runtime functions called that the recorder does not model -> calls
        self.stopped_after_s: float | None = None  # the recorder ended the program this long after its first launch


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------
def cuda_include(nvcc: str) -> Path:
    top = Path(nvcc).resolve().parent.parent
    for cand in (*toolchain.toolkit(nvcc).include_dirs(), top / "include", top / "targets" / "x86_64-linux" / "include", Path("/usr/local/cuda/include")):
        if (cand / "cuda_runtime_api.h").is_file():
            return cand
    raise DiscoveryError(f"cuda_runtime_api.h not found next to {nvcc} (pip install nvidia-cuda-runtime)")


def host_compiler() -> str:
    for cand in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if cand and shutil.which(cand):
            return shutil.which(cand)
    raise DiscoveryError("no host C++ compiler found (g++, c++ or clang++; or set CXX)")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfmodel"


def recorder_object(nvcc: str, timeout: float = 120.0) -> Path:
    """The compiled recorder (cached by the hash of its source, headers folder and compiler)."""
    include = cuda_include(nvcc)
    cxx = host_compiler()
    digest = hashlib.sha256(RECORDER_SRC.read_bytes() + str(include).encode() + cxx.encode()).hexdigest()[:16]
    for cache in (_cache_dir(), Path(tempfile.gettempdir()) / f"perfmodel-{os.getuid()}"):
        target = cache / f"recorder-{digest}.o"
        if target.is_file():
            return target
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        tmp = cache / f".recorder-{digest}-{os.getpid()}.o"
        cmd = [cxx, "-O2", "-std=c++17", "-fPIC", "-I", str(include), "-c", str(RECORDER_SRC), "-o", str(tmp)]
        try:
            p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise DiscoveryError(f"{RECORDER_SRC}: the host compiler took longer than {timeout:g} s") from None
        if p.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise DiscoveryError(f"launch recorder does not build: {first_error(p.stderr + p.stdout, RECORDER_SRC)}")
        os.replace(tmp, target)
        return target
    raise DiscoveryError("no writable cache folder for the launch recorder")


_UNDEFINED = re.compile(r"undefined (?:reference to|symbol:?)\s*[`'\u2018\"]?(.+?)[`'\u2019\"]?\s*$")


def undefined_symbols(log: str) -> list[str]:
    """The symbols a linker log says are undefined (GNU ld, gold and lld wordings), in order."""
    found: dict[str, None] = {}
    for line in log.splitlines():
        m = _UNDEFINED.search(line.strip())
        if m:
            found.setdefault(m.group(1).strip(" `'\u2018\u2019\""))
    return list(found)


def _link_problem(cu_path: Path, missing: list[str]) -> DiscoveryError:
    """One line for symbols that neither the recorder nor the library stubs define."""
    if "main" in missing:
        return DiscoveryError(f"{cu_path}: no main() to discover launches from; give the launch with --kernel/--grid/--block")
    runtime = [m for m in missing if m.startswith("__cuda")]
    driver = [m for m in missing if re.match(r"^cu[A-Z]\w*$", m)]
    other = [m for m in missing if m not in runtime and m not in driver]
    if runtime:
        what = f"uses CUDA runtime entry points the launch recorder lacks: {', '.join(runtime[:6])}"
    elif driver:
        what = f"uses the CUDA driver API ({', '.join(driver[:6])}), which the launch recorder does not provide"
    else:
        what = (f"refers to functions defined nowhere in this file: {', '.join(other[:6])} (perfmodel builds the one .cu "
                "file it is given: a program of several files needs them in one)")
    return DiscoveryError(f"{cu_path}: {what}; give the launch with --kernel/--grid/--block instead")


_OPENMP_USE = re.compile(r"^\s*#\s*(?:pragma\s+omp\b|include\s*[<\"]omp\.h[>\"])", re.MULTILINE)
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*(")([^"]+)"', re.MULTILINE)
_ANY_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)
MAX_SCANNED_HEADERS = 64


def include_closure(source: Path, include_dirs: Sequence[Path] = (), angled: bool = False, inside: Path | None = None,
                    limit: int | None = None) -> Iterator[tuple[Path, str]]:
    """SOURCE and the files it includes, transitively, each once with its text: a quoted
    #include resolved against the including file's folder, then the -I folders; an angled one
    (with `angled`) against the -I folders only. With `inside`, only files under that folder are
    followed; with `limit`, at most that many files are read."""
    pattern = _ANY_INCLUDE if angled else _QUOTED_INCLUDE
    seen: set[Path] = set()
    todo = [source.resolve()]
    while todo and (limit is None or len(seen) < limit):
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        yield path, text
        for form, name in pattern.findall(text):
            where = ([path.parent] if form == '"' else []) + [Path(d) for d in include_dirs]
            hit = next((c.resolve() for c in (d / name for d in where) if c.is_file()), None)
            if hit is not None and hit not in seen and (inside is None or hit.is_relative_to(inside)):
                todo.append(hit)


def uses_openmp(cu_path: Path, options: BuildOptions | None = None) -> bool:
    """Whether the program's host code uses OpenMP (#pragma omp, omp.h) in the file or in the
    headers it includes with quotes (found next to the including file or in its -I folders).
    Such a program's own build passes -fopenmp (llm.c's dev/cuda: -Xcompiler -fopenmp); without
    it a parallel CPU reference runs on one thread, and discovery waits for it."""
    folders = options.include_dirs if options else ()
    return any(_OPENMP_USE.search(text) for _, text in include_closure(cu_path, folders, limit=MAX_SCANNED_HEADERS))


def build_program(cu_path: Path, gpu_id: str, out: Path, timeout: float = 300.0, options: BuildOptions | None = None) -> Path:
    """The program's host code linked against the recorder (device code embedded as PTX only).
    Calls into CUDA libraries (perfmodel/static/libraries.py) link against recording stubs made
    for exactly the functions the program references. As the program's own build would: with
    OpenMP when its host code uses it (uses_openmp), and with relocatable device code and a
    device link (nvcc -rdc=true, -dlink, the device runtime library) when it launches kernels
    from device code (nvcc refuses it otherwise)."""
    tk = toolchain.toolkit()
    nvcc = tk.nvcc
    recorder = recorder_object(nvcc)
    cxx = host_compiler()
    virt = arch_for(gpu_id).replace("sm_", "compute_")
    obj = out.with_suffix(".o")
    openmp = ["-Xcompiler", "-fopenmp"] if uses_openmp(cu_path, options) else []
    cmd = [nvcc, *["-O2" if f == "-O3" else f for f in base_flags(options) if f != "-lineinfo"],
           f"-gencode=arch={virt},code={virt}", "-ccbin", cxx, *openmp, *include_flags(cu_path, options, tk),
           "-c", "-o", str(obj), str(cu_path.resolve())]
    device_link: list[str] = []
    try:
        _run_build(cmd, cu_path, out.parent, timeout, tk=tk)
    except CompileError as exc:
        if not needs_relocatable(str(exc)):
            raise
        _run_build([*cmd[:-4], RDC_FLAG, *cmd[-4:]], cu_path, out.parent, timeout, tk=tk)
        linked = out.with_name(out.name + "_dlink.o")
        # the device link makes the registration code of the relocatable module (kernel names
        # for the recorder); the final link then needs the device runtime's host part
        _run_build([nvcc, "-dlink", f"-gencode=arch={virt},code={virt}", "-ccbin", cxx, "-o", str(linked), str(obj)],
                   cu_path, out.parent, timeout, tk=tk)
        device_link = [str(linked), "-lcudadevrt"]
    # -lpthread: the recorder's watchdog thread (part of libc from glibc 2.34 on)
    link = [nvcc, "-cudart", "none", "-ccbin", cxx, *openmp, "-o", str(out), str(obj), *device_link[:1], str(recorder),
            *device_link[1:], "-lpthread"]
    p = _run_build(link, cu_path, out.parent, timeout, check=False)
    if p.returncode != 0:
        log = p.stderr + p.stdout
        missing = undefined_symbols(log)
        if not missing:
            raise CompileError(first_error(log, cu_path))
        calls = [m for m in missing if library_of_symbol(m)]
        runtime = [m for m in missing if is_runtime_function(m)]
        openmp = [m for m in missing if m in OPENMP]
        if len(calls) + len(runtime) + len(openmp) < len(missing):
            raise _link_problem(cu_path, [m for m in missing if m not in calls and m not in runtime and m not in openmp])
        stubs = out.parent / "library_stubs.cpp"
        stubs.write_text(stub_source(calls, runtime, openmp))
        _run_build([cxx, "-O0", "-fPIC", "-c", "-o", str(stubs.with_suffix(".o")), str(stubs)], cu_path, out.parent, timeout)
        p = _run_build([*link, str(stubs.with_suffix(".o"))], cu_path, out.parent, timeout, check=False)
        if p.returncode != 0:
            log = p.stderr + p.stdout
            missing = undefined_symbols(log)
            raise _link_problem(cu_path, missing) if missing else CompileError(first_error(log, cu_path))
    return out


def _run_build(cmd: list[str], cu_path: Path, cwd: Path, timeout: float, check: bool = True,
               tk: toolchain.Toolkit | None = None) -> subprocess.CompletedProcess:
    try:
        p = subprocess.run(cmd, check=False, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CompileError(f"{cu_path}: {Path(cmd[0]).name} took longer than {timeout:g} s") from None
    except OSError as exc:
        raise DiscoveryError(f"{cu_path}: cannot run {cmd[0]}: {exc.strerror or exc}") from None
    if check and p.returncode != 0:
        raise CompileError(compile_problem(p.stderr + p.stdout, cu_path, tk))
    return p


def spec_text(compiled: Compiled, gpu_id: str) -> str:
    """The recorder's kernel table (parameter sizes from the PTX) and target description."""
    lines = []
    for name, params in entry_params(compiled.ptx).items():
        res = compiled.kernels.get(name)
        regs, smem, local = (res.registers, res.shared_bytes, res.local_bytes) if res else (0, 0, 0)
        lines.append(f"K {name} {regs} {smem} {local} {len(params)} " + " ".join(str(p.size) for p in params))
    hw = gpu(gpu_id)
    major, _, minor = (hw.compute_capability or "9.0").partition(".")
    lines += [f"D name {hw.name}", f"D cc_major {major}", f"D cc_minor {minor or 0}"]
    for key in ("sm_count", "warp_size", "registers_per_sm", "max_threads_per_block", "max_threads_per_sm",
                "max_warps_per_sm", "max_blocks_per_sm", "shared_per_sm_bytes", "shared_alloc_unit_bytes",
                "shared_reserved_per_block_bytes", "register_alloc_unit_per_warp", "schedulers_per_sm", "l2_bytes",
                "max_registers_per_thread",
                "dram_bytes"):
        value = hw.value(key)
        if value is not None:
            lines.append(f"D {key} {int(value)}")
    optin = hw.value("max_shared_per_block_bytes")
    if optin is not None:
        lines.append(f"D max_shared_per_block_optin {int(optin)}")
    if hw.value("clock_boost_hz"):
        lines.append(f"D clock_khz {int(hw.value('clock_boost_hz') / 1000)}")
    if hw.value("clock_memory_hz"):
        lines.append(f"D memory_clock_khz {int(hw.value('clock_memory_hz') / 1000)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
def run_program(exe: Path, env: dict[str, str], cwd: Path, argv: list[str], timeout: float, memory_bytes: int,
                output_bytes: int, readable: tuple[Path, ...] = (), sandboxed: bool = True,
                writable: Path | None = None) -> tuple[int | None, str]:
    """Run the program under keet.sandbox's limits (time, memory and processes of its whole
    tree, total bytes written), isolated when ``sandboxed`` (writable: ``writable``, by default
    ``cwd``, which must be inside it; readable: ``readable``); (exit status or None on timeout,
    output tail)."""
    limits = Limits(wall_seconds=timeout, memory_bytes=memory_bytes, output_bytes=output_bytes, log_bytes=64 << 10, processes=64)
    isolation = Isolation((writable or cwd,), readable) if sandboxed else None
    result = run_limited([str(exe), *argv], cwd, limits, env=env, isolation=isolation)
    tail = (result.stdout + result.stderr)[-4000:]
    if result.killed == "time":
        return None, tail
    status = result.returncode if result.returncode is not None else -1
    if result.killed:
        tail = (tail + f"\n{result.summary()}").strip()
    return status, tail


def _host_run_mode(cu_path: Path, host_sandbox: str) -> bool:
    """Whether the host code runs sandboxed; warns (one line) or refuses when it cannot."""
    if host_sandbox not in HOST_SANDBOX:
        raise ValueError(f"host_sandbox must be one of {', '.join(HOST_SANDBOX)}, not {host_sandbox!r}")
    if host_sandbox == "off":
        return False
    problem = sandbox_problem()
    if problem is None:
        return True
    if host_sandbox == "require":
        raise SandboxUnavailable(f"{cu_path}: launch discovery runs the file's host code, and it cannot be sandboxed here: {problem}")
    sys.stderr.write(f"perfmodel: warning: {cu_path}: running the file's host code without a sandbox ({problem}); "
                     "--require-sandbox refuses instead\n")
    return False


def parse_record(path: Path, params: dict[str, list], folder: Path, keep: object, cap: int = SNAPSHOT_CAP_BYTES,
                 library_calls: list[LibraryCall] | None = None,
                 runtime_stubs: dict[str, int] | None = None, events: dict[str, float] | None = None) -> tuple[list[Launch], bool]:
    """The recorder's JSON lines -> launches (all of them, in order) and whether the program reached exit;
    calls into CUDA libraries are appended to ``library_calls`` (merged by function) when given;
    ``events`` receives "stopped_after_s" when the recorder ended the program after its first launch.
    The program wrote the file: it is read only as a regular file of at most ``cap`` bytes."""
    data = read_left_file(path, cap)
    text = data.decode(errors="replace") if data is not None else ""
    launches: list[Launch] = []
    exited = False
    snapshots: dict[tuple, Buffer] = {}
    calls: dict[tuple[str, str], LibraryCall] = {}
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a crash
            continue
        if not isinstance(ev, dict):
            continue
        if ev.get("ev") == "exit":
            exited = True
        if ev.get("ev") == "stopped" and events is not None and isinstance(ev.get("after_first_launch_s"), (int, float)):
            events["stopped_after_s"] = float(ev["after_first_launch_s"])
        if ev.get("ev") == "runtime_stub" and isinstance(ev.get("name"), str):
            if runtime_stubs is not None:
                runtime_stubs[ev["name"]] = runtime_stubs.get(ev["name"], 0) + 1
            continue
        if ev.get("ev") == "library" and isinstance(ev.get("name"), str) and isinstance(ev.get("library"), str):
            key = (ev["library"], ev["name"])
            if key in calls:
                calls[key].count += 1
            else:
                calls[key] = LibraryCall(library=ev["library"], name=ev["name"], seq=int(ev.get("seq", 0)))
            continue
        if ev.get("ev") != "launch" or not ev.get("kernel"):
            continue
        names = [p.name for p in params.get(ev["kernel"], [])]
        args = [Arg(name=names[i] if i < len(names) else f"param_{i}", size=a["size"], raw=bytes.fromhex(a["hex"]),
                    pointers=tuple(Pointer(*p) for p in a["pointers"])) for i, a in enumerate(ev.get("args", []))]
        buffers = {}
        for b in ev.get("buffers", []):
            name = b.get("file")
            if name is not None and (not isinstance(name, str) or os.path.basename(name) != name or name.startswith(".")):
                continue  # the program wrote the record: a snapshot is a plain file in the record folder, nothing else
            key = (b["id"], b["content"], name, b.get("fill"), b.get("reason"))
            if key not in snapshots:
                inside = tuple(Pointer(*ptr) for ptr in b.get("pointers", ()) if isinstance(ptr, list) and len(ptr) == 3
                               and all(isinstance(x, int) for x in ptr) and 0 <= ptr[0] <= b["size"] - 8)
                snapshots[key] = Buffer(id=b["id"], size=b["size"], kind=b["kind"], content=b["content"],
                                        path=folder / b["file"] if b.get("file") else None, fill=b.get("fill"),
                                        name=b.get("name"), reason=b.get("reason"), pointers=inside, _keep=keep)
            buffers[b["id"]] = snapshots[key]
        launches.append(Launch(kernel=ev["kernel"], name=ev.get("demangled", ev["kernel"]), grid=tuple(ev["grid"]),
                               block=tuple(ev["block"]), dynamic_shared_bytes=ev.get("smem", 0), args=args, buffers=buffers,
                               stream=ev.get("stream", 0), seq=ev["seq"], error=ev.get("error")))
    if library_calls is not None:
        library_calls.extend(calls.values())
    return launches, exited


def _signal_name(status: int) -> str | None:
    """The signal that ended a program, from its exit status (-N, or 128 + N from a shell)."""
    import signal

    number = -status if status < 0 else status - 128 if 128 < status < 160 else None
    try:
        return f"killed by {signal.Signals(number).name}" if number else None
    except ValueError:
        return None


def copy_program_folder(source: Path, into: Path, max_bytes: int = COPY_MAX_BYTES, max_files: int = COPY_MAX_FILES) -> str | None:
    """Copy the regular files of the folder SOURCE (and its subfolders, hidden ones and links
    left out) into INTO, so that a program reading its data by a path relative to where it is
    run ("data/teapot512.pgm") finds it, and what it writes stays in the scratch folder. None
    when copied, else why not (the folder is larger than max_bytes or max_files)."""
    files: list[tuple[Path, int]] = []
    total = 0
    target = into.resolve()
    for folder, subfolders, names in os.walk(source):
        # not the copy itself (a scratch folder the caller put inside the source folder)
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and not os.path.islink(os.path.join(folder, d))
                               and not target.is_relative_to(Path(folder, d).resolve()))
        for name in sorted(names):
            path = Path(folder) / name
            if name.startswith(".") or path.is_symlink() or not path.is_file():
                continue
            total += path.stat().st_size
            files.append((path, total))
            if total > max_bytes or len(files) > max_files:
                return (f"its folder {source} (over {max_bytes >> 20} MiB or {max_files} files) was not copied into the "
                        "scratch folder it runs in")
    for path, _ in files:
        target = into / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return None


_ASSERTION = re.compile(r"Assertion [`'](.{1,160}?)' failed")


def _failure_hint(tail: str, copied: str | None) -> str:
    """What a failed run before any launch most likely means, from its output."""
    m = _ASSERTION.search(tail)
    if m:
        return (f"; the program's own assertion ({m.group(1)}) failed with the target GPU's properties or the "
                "arguments given; kernels never run here, so results it checks are wrong")
    where = copied or "its files are copied from its source folder"
    return (f"; it runs in a scratch folder ({where}), where input files it opens by other paths are not, and "
            "kernels never run, so results it checks are wrong")


def merge_identical(launches: list[Launch], by: str = "args") -> list[Launch]:
    """Merge repeats, keeping the first launch and counting the others: by "args" (same kernel,
    grid, block, dynamic shared memory and argument bytes) or by "config" (same kernel, grid,
    block and dynamic shared memory, whatever the arguments: for programs that pass a loop
    counter, like the zoo's launch_overhead)."""
    out: dict[tuple, Launch] = {}
    for launch in launches:
        key = launch.key() if by == "args" else launch.key()[:4]
        first = out.setdefault(key, launch)
        if first is not launch:
            first.count += launch.count
    return list(out.values())


def discover_launches(cu_path: str | Path, gpu_id: str, *, compiled: Compiled | None = None, argv: list[str] | tuple[str, ...] = (),
                      workdir: str | Path | None = None, unique: bool | str = True, timeout: float = TIMEOUT_S,
                      after_first_launch: float = AFTER_FIRST_LAUNCH_S,
                      memory_bytes: int = MEMORY_LIMIT_BYTES, snapshot_cap_bytes: int = SNAPSHOT_CAP_BYTES,
                      program: Path | None = None, host_sandbox: str = "auto", options: BuildOptions | None = None) -> Launches:
    """The kernel launches of the self-contained program CU_PATH, recorded with no GPU for GPU_ID.

    compiled: the program compiled for GPU_ID (compile_cu), to reuse its PTX; argv: the
    program's arguments; workdir: where buffer snapshots are kept (default: a temporary folder
    removed once no returned Buffer refers to it); unique: True or "args" merges identical
    launches, "config" merges launches of the same kernel and configuration whatever their
    arguments, False returns every launch; timeout: the run's wall-time limit (seconds);
    after_first_launch: the program is ended this long after its first launch (the recorder
    does it, keeping the record); program: the program already built by build_program;
    host_sandbox: "auto", "require" or "off" (module docstring); options: the program's
    build options (-I, -D, -std, --include). A program that makes no launch but calls CUDA
    libraries returns no launch and its ``library_calls``."""
    if unique not in (True, False, "args", "config"):
        raise ValueError(f"unique must be True, False, 'args' or 'config', not {unique!r}")
    cu_path = Path(cu_path)
    if not cu_path.is_file():
        raise KeetError(f"{cu_path}: no such file")
    sandboxed = _host_run_mode(cu_path, host_sandbox)
    compiled = compiled or compile_cu(cu_path, gpu_id, options=options)
    if compiled.arch != arch_for(gpu_id):
        raise KeetError(f"{cu_path}: compiled for {compiled.arch}, not for {gpu_id} ({arch_for(gpu_id)})")
    params = entry_params(compiled.ptx)  # none: the program may still call CUDA libraries
    keep: object = None
    if workdir is None:
        keep = tempfile.TemporaryDirectory(prefix="perfmodel-launches-")
        folder = Path(keep.name)
    else:
        folder = Path(workdir)
        folder.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="perfmodel-build-"))
    try:
        exe = program or build_program(cu_path, gpu_id, build / "program", options=options)
        spec = build / "kernels.spec"
        spec.write_text(spec_text(compiled, gpu_id))
        folder = Path(os.path.abspath(folder))
        record = folder / "launches.jsonl"
        record.unlink(missing_ok=True)
        # the program runs in a copy of its own folder, inside the record folder (the only writable one)
        cwd = folder / "run"
        shutil.rmtree(cwd, ignore_errors=True)
        cwd.mkdir()
        not_copied = copy_program_folder(cu_path.resolve().parent, cwd)
        # the program's whole environment: where to record, and PATH (never the caller's keys)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PERFMODEL_RECORD_OUT": str(record), "PERFMODEL_RECORD_DIR": str(folder),
               "PERFMODEL_RECORD_SPEC": str(spec.resolve()), "PERFMODEL_RECORD_MAX_BYTES": str(int(snapshot_cap_bytes)),
               "PERFMODEL_RECORD_AFTER_FIRST_LAUNCH_S": f"{after_first_launch:g}",
               "OMP_NUM_THREADS": str(max(1, min(MAX_OPENMP_THREADS, len(os.sched_getaffinity(0)))))}
        exe = Path(os.path.abspath(exe))
        status, tail = run_program(exe, env, cwd, list(argv), timeout, memory_bytes, snapshot_cap_bytes + RECORD_MARGIN_BYTES,
                                   (exe.parent, build.resolve()), sandboxed, writable=folder)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    record_cap = snapshot_cap_bytes + RECORD_MARGIN_BYTES
    calls: list[LibraryCall] = []
    stubs: dict[str, int] = {}
    events: dict[str, float] = {}
    launches, completed = (parse_record(record, params, folder, keep, record_cap, calls, stubs, events) if record.is_file()
                           else ([], False))
    if not launches and not any(call.launches_kernels for call in calls):  # set-up calls only: nothing ran on the GPU
        if not params and not calls:
            raise DiscoveryError(f"{cu_path}: no __global__ kernel in this file")
        if status is None:
            why = f"ran longer than {timeout:g} s before its first launch"
        else:
            last = [ln for ln in tail.splitlines() if ln.strip()]
            signal = _signal_name(status)
            why = f"launched no kernel (exit status {status}{f', {signal}' if signal else ''}{': ' + last[-1][:200] if last else ''})"
        if stubs:
            why += (f" after CUDA runtime calls the launch recorder does not model and did as nothing "
                    f"({', '.join(sorted(stubs)[:6])})")
        elif status:
            why += _failure_hint(tail, not_copied)
        raise DiscoveryError(f"{cu_path}: {why}; give the launch with --kernel/--grid/--block")
    result = Launches(merge_identical(launches, "config" if unique == "config" else "args") if unique else launches)
    result.exit_status, result.completed, result.output = status, completed, tail
    result.stopped_after_s = events.get("stopped_after_s")
    result.library_calls, result.runtime_stubs = calls, stubs
    return result
