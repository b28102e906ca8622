"""Compile a .cu file for a target GPU with no GPU present: PTX, cubin and per-kernel resources.

nvcc is found by ``keet.toolchain.find_nvcc``: ``$NVCC``, a CUDA toolkit (``$CUDA_HOME``,
nvcc on PATH, /usr/local/cuda), else the PyPI wheel ``nvidia-cuda-nvcc``
(site-packages/nvidia/cu*/bin/nvcc); ``Compiled.toolkit`` says which. Headers come from the
user's ``-I`` folders, then the toolkit's, then the PyPI CUDA wheels' (``-isystem``, searched
last: the library wheels nvidia-cublas, -curand, -cufft, -nvtx, cudnn, nccl ship theirs there).
``BuildOptions`` carries the nvcc-style options of ``perfmodel predict`` (-I, -D, -std,
--include). The source is compiled once to PTX (``nvcc -ptx``), and that PTX is assembled
with the ptxas next to nvcc (``ptxas -v``), whose report gives registers, static shared memory,
stack frame and spill bytes per kernel (the wheels ship no cuobjdump, so ptxas's report is the
one source of resources). Flags follow the zoo's build (profiles/capture.py): -O3 -lineinfo
-std=c++17, so the resources match profiles/manifest.json's ``ptxas`` records. A file nvcc
refuses in whole-program mode because it launches kernels from device code (dynamic
parallelism) is compiled again with -rdc=true, as its own build must be, and assembled with
``ptxas -c`` (``Compiled.relocatable``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from keet import toolchain
from keet.errors import KeetError
from keet.names import function_base_name
from perfmodel.hardware import gpu, gpu_ids
from perfmodel.static.libraries import library_of_header


def cuda_archs() -> dict[str, str]:
    """GPU id -> the CUDA architecture its code is compiled for (the hardware files' build_target)."""
    return {gpu_id: gpu(gpu_id).build_target for gpu_id in gpu_ids() if gpu(gpu_id).vendor == "nvidia" and gpu(gpu_id).build_target}
NVCC_FLAGS = ["-O3", "-lineinfo", "-std=c++17"]
TIMEOUT_S = 300.0
CXX_STANDARDS = ("c++03", "c++11", "c++14", "c++17", "c++20")
_DEFINE = re.compile(r"^[A-Za-z_]\w*(\(.*\))?(=.*)?$", re.DOTALL)


@dataclass(frozen=True)
class BuildOptions:
    """nvcc-style options for compiling a program as its own build does: include folders
    (-I), macros (-D NAME[=VALUE]), the C++ standard (-std=, default c++17) and headers
    included before the source (--include). Paths are made absolute (nvcc runs elsewhere)."""

    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    std: str | None = None
    pre_includes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, include_dirs=(), defines=(), std: str | None = None, pre_includes=()) -> BuildOptions:
        """Checked options: a one-line KeetError naming the option otherwise."""
        dirs = []
        for d in include_dirs:
            if not Path(d).is_dir():
                raise KeetError(f"-I {d}: no such folder")
            dirs.append(str(Path(d).resolve()))
        for d in defines:
            if not _DEFINE.match(d):
                raise KeetError(f"-D {d}: not NAME or NAME=VALUE (NAME a C identifier)")
        if std is not None:
            std = std.lower().removeprefix("gnu++").removeprefix("c++")
            std = f"c++{std}" if std else ""
            if std not in CXX_STANDARDS:
                raise KeetError(f"-std: {std or 'empty'}: nvcc takes {', '.join(CXX_STANDARDS)}")
        files = []
        for f in pre_includes:
            if not Path(f).is_file():
                raise KeetError(f"--include {f}: no such file")
            files.append(str(Path(f).resolve()))
        return cls(tuple(dirs), tuple(defines), std, tuple(files))

    def nvcc_flags(self) -> list[str]:
        out = [f"-std={self.std}"] if self.std else []
        for d in self.include_dirs:
            out += ["-I", d]
        for d in self.defines:
            out += [f"-D{d}"]
        for f in self.pre_includes:
            out += ["--pre-include", f]
        return out

    def describe(self) -> str:
        return " ".join(self.nvcc_flags())


def base_flags(options: BuildOptions | None) -> list[str]:
    """NVCC_FLAGS with the program's C++ standard."""
    std = options.std if options and options.std else None
    return [f"-std={std}" if std and f.startswith("-std=") else f for f in NVCC_FLAGS]


def include_flags(source: Path, options: BuildOptions | None, tk: toolchain.Toolkit) -> list[str]:
    """The program's own options, its folder, then the PyPI wheels' headers as a fallback
    (-isystem: after the toolkit's own folders)."""
    flags = [f for f in (options.nvcc_flags() if options else []) if not f.startswith("-std=")]
    flags += ["-I", str(source.resolve().parent)]
    own = {d.resolve() for d in tk.include_dirs()}
    for d in toolchain.wheel_include_dirs():
        if d.resolve() not in own:
            flags += ["-isystem", str(d)]
    return flags


class CompileError(KeetError):
    """The source does not compile; the message is one line: file:line: the first error."""


@dataclass(frozen=True)
class KernelResources:
    name: str  # mangled, as in the PTX .entry and the ptxas report
    demangled: str
    arch: str
    registers: int
    shared_bytes: int  # static shared memory
    local_bytes: int  # stack frame (local memory per thread)
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int = 0
    constant_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


@dataclass(frozen=True)
class Compiled:
    source: Path
    gpu_id: str
    arch: str
    ptx: str
    cubin: bytes
    kernels: dict[str, KernelResources]  # mangled name -> resources
    log: str
    toolkit: str = ""  # which CUDA compiler (keet.toolchain.Toolkit.describe)
    options: BuildOptions | None = None
    relocatable: bool = False  # built with -rdc=true: the file launches kernels from device code

    def kernel(self, name: str) -> KernelResources:
        """By mangled name, demangled name, function name (without return type, namespaces, template arguments and parameters) or
        unique substring."""
        if name in self.kernels:
            return self.kernels[name]
        for k in self.kernels.values():
            if name in (k.demangled, function_base_name(k.demangled)):
                return k
        hits = [k for k in self.kernels.values() if name in k.demangled]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(sorted(k.demangled for k in self.kernels.values()))
        raise KeetError(f"{self.source}: no kernel {name!r} (kernels: {known})")


def arch_for(gpu_id: str) -> str:
    archs = cuda_archs()
    try:
        return archs[gpu_id.lower()]
    except KeyError:
        raise KeetError(f"no CUDA target for GPU {gpu_id!r} (static analysis supports {', '.join(archs)})") from None


def find_nvcc() -> str:
    """$NVCC, a CUDA toolkit ($CUDA_HOME, PATH, /usr/local/cuda), else the PyPI wheel's (keet.toolchain)."""
    return toolchain.find_nvcc(None)


def tool_next_to(nvcc: str, name: str) -> str:
    for cand in (Path(nvcc).resolve().parent / name, Path(nvcc).parent / name):
        if cand.is_file():
            return str(cand)
    found = shutil.which(name)
    if found:
        return found
    raise KeetError(f"{name} not found next to {nvcc}")


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> demangled (c++filt when available; names are returned unchanged otherwise)."""
    out = {n: n for n in names}
    mangled = [n for n in names if n.startswith("_Z")]
    filt = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if mangled and filt:
        try:
            p = subprocess.run([filt], check=False, input="\n".join(mangled) + "\n", capture_output=True, text=True, timeout=30)
            lines = p.stdout.splitlines()
            if p.returncode == 0 and len(lines) == len(mangled):
                out.update(zip(mangled, lines))
        except (OSError, subprocess.TimeoutExpired):
            pass
    return out


_ERROR_LINE = re.compile(r"^(?P<file>[^\n:]+?)\((?P<line>\d+)\): (?:catastrophic )?error:?\s*(?P<msg>.*)$")
_GCC_ERROR = re.compile(r"^(?P<file>[^\n:]+?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")
_PTXAS_ERROR = re.compile(r"^ptxas\s+(?:fatal|error)\s*:\s*(?P<msg>.*)$", re.IGNORECASE)


def first_error(log: str, source: Path) -> str:
    """One line naming file:line and the first error message of a compiler log."""
    for line in log.splitlines():
        line = line.strip()
        for pattern in (_ERROR_LINE, _GCC_ERROR):
            m = pattern.match(line)
            if m:
                return f"{m['file']}:{m['line']}: {m['msg'].strip()}"
    for line in log.splitlines():
        m = _PTXAS_ERROR.match(line.strip())
        if m:
            return f"{source}: ptxas: {m['msg'].strip()}"
    for line in log.splitlines():
        if "error" in line.lower():
            return f"{source}: {line.strip()}"
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return f"{source}: {lines[0] if lines else 'compilation failed'}"


_MISSING_HEADER = re.compile(r'cannot open source file "([^"]+)"|^([^\s:]+(?:/[^\s:]+)*): No such file or directory')


def compile_problem(log: str, source: Path, tk: toolchain.Toolkit | None = None) -> str:
    """first_error, with what to do: for a missing header, where its library's headers come
    from; else the build options that a program's own build passes."""
    message = first_error(log, source)
    m = _MISSING_HEADER.search(message.split(": ", 1)[-1])
    used = f" (compiled with {tk.describe()})" if tk else ""
    if m:
        header = m.group(1) or m.group(2)
        lib = library_of_header(header)
        if lib:
            return (f"{message}{used}: the {lib.name} headers are missing: install a CUDA toolkit that has them (and "
                    f"set CUDA_HOME or put its nvcc on PATH), or pip install {lib.package}, or pass -I DIR with the "
                    f"folder holding {header}")
        return f"{message}{used}: pass -I DIR with the folder holding {header} (as the program's own build does)"
    return f"{message}{used}; the program's own build options go to -I DIR, -D NAME[=VALUE], -std=STD, --include FILE"


# nvcc's refusal of a device-side launch (dynamic parallelism) in whole-program mode: such a file
# is built as its own build must build it, with relocatable device code (-rdc=true)
_NEEDS_RDC = ("separate compilation mode", "relocatable device code")
RDC_FLAG = "-rdc=true"


def needs_relocatable(message: str) -> bool:
    """Whether a compile error says the file launches kernels from device code, which only a
    relocatable-device-code build (nvcc -rdc=true, then a device link) accepts."""
    return any(text in message for text in _NEEDS_RDC)


def run_tool(cmd: list[str], source: Path, cwd: Path, timeout: float, tk: toolchain.Toolkit | None = None) -> str:
    try:
        p = subprocess.run(cmd, check=False, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CompileError(f"{source}: {Path(cmd[0]).name} took longer than {timeout:g} s") from None
    except OSError as exc:
        raise KeetError(f"{source}: cannot run {cmd[0]}: {exc.strerror or exc}") from None
    log = p.stderr + p.stdout
    if p.returncode != 0:
        raise CompileError(compile_problem(log, source, tk))
    return log


_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_USED = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_RE_BARS = re.compile(r"used (\d+) barriers")


def parse_ptxas(log: str) -> dict[str, dict]:
    """ptxas -v report -> {mangled entry name: resources}; device functions are left out."""
    found: dict[str, dict] = {}
    entries: set[str] = set()
    cur: str | None = None
    for line in log.splitlines():
        m = _RE_ENTRY.search(line)
        if m:
            cur = m.group(1)
            entries.add(cur)
            found.setdefault(cur, {})["arch"] = m.group(2)
            continue
        m = _RE_PROPS.search(line)
        if m:
            cur = m.group(1)
            found.setdefault(cur, {})
            continue
        if cur is None:
            continue
        k = found[cur]
        m = _RE_STACK.search(line)
        if m:
            k["local_bytes"], k["spill_store_bytes"], k["spill_load_bytes"] = map(int, m.groups())
        m = _RE_USED.search(line)
        if m:
            k["registers"] = int(m.group(1))
            ms = _RE_SMEM.search(line)
            k["shared_bytes"] = int(ms.group(1)) if ms else 0
            k["constant_bytes"] = {f"cmem[{b}]": int(n) for n, b in _RE_CMEM.findall(line)}
            mb = _RE_BARS.search(line)
            k["barriers"] = int(mb.group(1)) if mb else 0
    return {name: k for name, k in found.items() if name in entries}


def compile_cu(source: str | Path, gpu_id: str, *, extra_flags: list[str] | tuple[str, ...] = (),
               timeout: float = TIMEOUT_S, options: BuildOptions | None = None) -> Compiled:
    """Compile SOURCE for GPU_ID's architecture to PTX and cubin, with per-kernel resources."""
    source = Path(source)
    if not source.is_file():
        raise KeetError(f"{source}: no such file")
    arch = arch_for(gpu_id)
    tk = toolchain.toolkit()
    nvcc = tk.nvcc
    ptxas = tool_next_to(nvcc, "ptxas")
    with tempfile.TemporaryDirectory(prefix="perfmodel-compile-") as tmp:
        work = Path(tmp)
        ptx_path, cubin_path = work / "kernel.ptx", work / "kernel.cubin"
        cmd = [nvcc, *base_flags(options), f"-arch={arch.replace('sm_', 'compute_')}", "-ptx", *extra_flags,
               *include_flags(source, options, tk), "-o", str(ptx_path), str(source.resolve())]
        relocatable = RDC_FLAG in extra_flags
        try:
            log = run_tool(cmd, source, work, timeout, tk)
        except CompileError as exc:
            if relocatable or not needs_relocatable(str(exc)):
                raise
            relocatable = True  # kernels launched from device code: the build the program's own must be
            log = run_tool([*cmd[:-3], RDC_FLAG, *cmd[-3:]], source, work, timeout, tk)
        ptx = ptx_path.read_text()
        # relocatable PTX calls the device runtime (cudadevrt), linked later: assemble without linking (-c)
        assemble = [ptxas, "-v", *(["-c"] if relocatable else []), f"-arch={arch}", "-lineinfo", "-o", str(cubin_path), str(ptx_path)]
        log += run_tool(assemble, source, work, timeout, tk)
        cubin = cubin_path.read_bytes()
    resources = parse_ptxas(log)
    names = demangle(list(resources))
    kernels = {
        name: KernelResources(name=name, demangled=names[name], arch=r.get("arch", arch), registers=r.get("registers", 0),
                              shared_bytes=r.get("shared_bytes", 0), local_bytes=r.get("local_bytes", 0),
                              spill_store_bytes=r.get("spill_store_bytes", 0), spill_load_bytes=r.get("spill_load_bytes", 0),
                              barriers=r.get("barriers", 0), constant_bytes=r.get("constant_bytes", {}))
        for name, r in resources.items()
    }
    return Compiled(source=source, gpu_id=gpu_id.lower(), arch=arch, ptx=ptx, cubin=cubin, kernels=kernels, log=log,
                    toolkit=tk.describe(), options=options, relocatable=relocatable)


_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:.*?inlined_at\s+(\d+)\s+(\d+)\s+\d+)?")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')


def ptx_location(ptx: str, line: int, source: Path | None = None) -> str | None:
    """The CUDA source file:line that PTX line LINE (1-based) comes from, by the .loc directives
    of -lineinfo. Code inlined from a header (cuda_fp16.hpp's inline assembly, cooperative
    groups) is placed at the line of SOURCE that called it (its inlined_at, else the nearest
    earlier line of SOURCE in the function), the header's line in parentheses. None where the
    PTX does not say."""
    lines = ptx.splitlines()
    files = {int(m.group(1)): m.group(2) for m in map(_FILE.match, lines) if m}
    main = str(source.resolve()) if source else None
    first = None  # the instruction's own location
    for text in reversed(lines[:max(0, line - 1)]):
        if text.lstrip().startswith((".entry", ".func", ".visible")):
            break
        m = _LOC.match(text)
        if not m or int(m.group(1)) not in files or not int(m.group(2)):
            continue
        f, ln = int(m.group(1)), int(m.group(2))
        if first is None:
            first = f"{files[f]}:{ln}"
        if main is None or files[f] == main:
            return first if first == f"{files[f]}:{ln}" else f"{files[f]}:{ln} ({first})"
        if m.group(3) and int(m.group(3)) in files and files[int(m.group(3))] == main:
            return f"{main}:{m.group(4)} ({first})"
    return first


# ---------------------------------------------------------------------------------------------
# PTX .entry signatures (parameter names, sizes and alignments), used by launch discovery.
# ---------------------------------------------------------------------------------------------
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\((.*?)\)", re.DOTALL)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.(?:global|shared|const|local)\s+)?(?:\.align\s+\d+\s+)?)?([\w$]+)(?:\[(\d+)\])?")
_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4, "s32": 4,
               "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    size: int
    align: int


def entry_params(ptx: str) -> dict[str, list[Param]]:
    """{mangled kernel name: its parameters in order} from the PTX .entry signatures."""
    out: dict[str, list[Param]] = {}
    for m in _ENTRY.finditer(ptx):
        params = []
        for p in _PARAM.finditer(m.group(2)):
            align, ptype, name, count = p.groups()
            elem = _TYPE_BYTES.get(ptype)
            if elem is None:
                raise KeetError(f"unsupported PTX parameter type .{ptype} of {m.group(1)}")
            params.append(Param(name=name, type=ptype, size=elem * (int(count) if count else 1), align=int(align) if align else elem))
        out[m.group(1)] = params
    return out
