"""AMD backend of the microbenchmark runner: build and run the HIP suite (microbench/hip/*.hip)
on a CDNA2 (gfx90a: MI250X, one GCD) or CDNA3 (gfx942: MI300A, MI300X) GPU and derive the
parameters of perfmodel/hardware/{mi250x,mi300a,mi300x}.toml.

    python3 -m microbench.runner --backend hip --out FILE.json [--suite ...] [--hipcc PATH]
    python3 -m microbench.runner --backend hip --build-only --arch gfx90a|gfx942 --out FILE.json

Standard library only (the GPU machine has a bare python3); the statistics, the rejection rule,
the MB_ line parsing and the JSON writing are runner.py's, shared with the CUDA suite.

Compilers, in order: --hipcc PATH, $HIPCC, ROCm's hipcc (/opt/rocm/bin/hipcc, PATH), ROCm's
clang++ (/opt/rocm/llvm/bin/clang++), Debian's clang++-NN. Each is asked once, with a tiny
program, whether it compiles for the target (Debian's hipcc 5.2 sits on clang 15, which knows
gfx90a but not gfx942). hipcc runs with HIP_PLATFORM=amd and --offload-arch; a plain clang++
with -x hip --offload-arch. When the ROCm device libraries found lack the target's
oclc_isa_version_<gfx>.bc (Debian's rocm-device-libs 5.2 stops at gfx940), a private copy of
the library directory is made in the build directory with that one-constant file added
(clang compiles it from one line of OpenCL C); nothing is written outside the build directory.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from microbench import runner
from microbench.runner import KeetError

HIP_DIR = Path(__file__).resolve().parent / "hip"
# suite name -> program (microbench/hip/<program>.hip), in run order
PROGRAMS = {
    "dram": "hbm_bandwidth",
    "cache": "cache_sweep",
    "latency": "pointer_chase",
    "lds": "lds_bandwidth",
    "occupancy": "vgpr_occupancy",
    "mfma": "mfma_throughput",
    "atomics": "atomics",
    "launch": "launch_overhead",
}
BASE_FLAGS = ["-O3", "-std=c++17"]
KiB, MiB, GiB = 2**10, 2**20, 2**30
# What the programs cannot query: per-CU L1 (vL1D), the Infinity Cache (MALL), the XCD layout,
# and which pointer_chase variant measures the L2 latency: the agent-scope ('cg') loads skip
# the L1 and hit the one L2 of a CDNA2 GCD; on CDNA3 the L2 is private to each XCD and an
# agent-scope load may have to look past it for coherence, so the ordinary ('ca') loads are
# used there, at footprints of 8x the L1 and more (at most 1/8 of the loads hit the L1).
ARCHS = {
    "gfx90a": {"family": "CDNA2", "l1_bytes": 16 * KiB, "mall_bytes": 0, "cus_per_xcd": None, "gpus": ["mi250x"],
               "l2_latency": ("cg", 4)},
    "gfx942": {"family": "CDNA3", "l1_bytes": 32 * KiB, "mall_bytes": 256 * MiB, "cus_per_xcd": 38,
               "gpus": ["mi300a", "mi300x"], "l2_latency": ("ca", 8)},
}
DEFAULT_ARCH = "gfx942"
# MFMA precision -> parameter names (as in the AMD hardware files) and unit
MFMA_PARAMS = {
    "fp64": (["mfma_fp64_flops_per_clk_per_cu", "tensor_fp64_flops_per_clk_per_sm"], "flop/clk/CU"),
    "fp32": (["mfma_fp32_flops_per_clk_per_cu"], "flop/clk/CU"),
    "fp16": (["mfma_fp16_flops_per_clk_per_cu", "tensor_fp16_flops_per_clk_per_sm"], "flop/clk/CU"),
    "bf16": (["mfma_bf16_flops_per_clk_per_cu", "tensor_bf16_flops_per_clk_per_sm"], "flop/clk/CU"),
    "int8": (["tensor_int8_ops_per_clk_per_sm"], "op/clk/CU"),
    "xf32": (["tensor_tf32_flops_per_clk_per_sm"], "flop/clk/CU"),
    "fp8": (["mfma_fp8_flops_per_clk_per_cu", "tensor_fp8_flops_per_clk_per_sm"], "flop/clk/CU"),
}
_PROBE_SRC = "#include <hip/hip_runtime.h>\n__global__ void mb_probe(int* p) { p[threadIdx.x] = 1; }\nint main() { return 0; }\n"
_ISA_SRC = "const __constant int __oclc_ISA_version = {version};\n"


# --------------------------------------------------------------------------------------
# detection
# --------------------------------------------------------------------------------------
def _num(text: str | None) -> float | None:
    m = re.search(r"[-+]?\d+(?:\.\d+)?", text or "")
    return float(m.group(0)) if m else None


def parse_rocminfo(text: str) -> list[dict]:
    """The GPU agents of `rocminfo` output, in order: name (marketing), arch (gfx...), cus,
    max_clock_mhz, l1/l2/l3 bytes (Cache Info, in KB), wavefront size, simds per CU."""
    agents = []
    for block in re.split(r"\n\*{5,}\s*\n\s*Agent \d+\s*\n\*{5,}|\*{5,}\s*Agent \d+\s*\*{5,}", text)[1:]:
        fields: dict[str, str] = {}
        cache: dict[str, str] = {}
        in_cache = False
        for line in block.splitlines():
            m = re.match(r"^(\s*)([^:]+?):\s*(.*?)\s*$", line)
            if not m:
                continue
            indent, key, value = len(m.group(1)), m.group(2).strip(), m.group(3)
            if key == "Cache Info":
                in_cache = True
                continue
            if in_cache and indent > 2 and re.fullmatch(r"L\d", key):
                cache[key] = value
                continue
            in_cache = False
            if indent <= 2 and key not in fields:
                fields[key] = value
        if fields.get("Device Type", "").upper() != "GPU":
            continue
        arch = fields.get("Name", "")
        agent = {"arch": arch, "name": fields.get("Marketing Name") or arch,
                 "cus": int(_num(fields.get("Compute Unit")) or 0) or None,
                 "max_clock_mhz": _num(fields.get("Max Clock Freq. (MHz)")),
                 "wavefront_size": int(_num(fields.get("Wavefront Size")) or 0) or None,
                 "simds_per_cu": int(_num(fields.get("SIMDs per CU")) or 0) or None}
        for level, value in cache.items():
            kb = _num(value)
            if kb is not None:
                agent[f"{level.lower()}_bytes"] = int(kb * 1024)
        agents.append(agent)
    return agents


def _walk(obj, path=()):
    """(path, value) of every leaf of a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, path + (str(k),))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, path + (str(i),))
    else:
        yield path, obj


def _mhz(value) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    return _num(str(value)) if value is not None else None


def parse_rocm_smi_json(text: str) -> dict:
    """`rocm-smi --showproductname --showdriverversion --showclocks --json`: card 0's product
    name, gfx version, sclk/mclk (MHz) and the driver version."""
    doc = json.loads(text)
    out: dict = {}
    cards = sorted(k for k in doc if re.fullmatch(r"card\d+", k))
    card = doc.get(cards[0], {}) if cards else {}
    for key, value in card.items():
        low = key.lower()
        if low in ("card series", "card model") and "name" not in out and not str(value).startswith("0x"):
            out["name"] = str(value)
        elif low.startswith("gfx version"):
            out["arch"] = str(value)
        elif low.startswith("sclk clock speed"):
            out["sclk_mhz"] = _mhz(value)
        elif low.startswith("mclk clock speed"):
            out["mclk_mhz"] = _mhz(value)
    for key, value in (doc.get("system") or {}).items():
        if "driver version" in key.lower():
            out["driver_version"] = str(value)
    return out


def parse_amd_smi_json(static_text: str | None, clock_text: str | None) -> dict:
    """`amd-smi static --asic --driver --json` and `amd-smi metric --clock --json` of GPU 0:
    market name, target graphics version, driver version, current gfx and memory clocks (MHz)."""
    out: dict = {}
    if static_text:
        doc = json.loads(static_text)
        gpu0 = doc[0] if isinstance(doc, list) and doc else doc
        for path, value in _walk(gpu0):
            key = path[-1].lower() if path else ""
            if key == "market_name" and "name" not in out:
                out["name"] = str(value)
            elif key == "target_graphics_version" and "arch" not in out:
                out["arch"] = str(value)
            elif key == "version" and len(path) >= 2 and path[-2].lower() == "driver":
                out["driver_version"] = str(value)
    if clock_text:
        doc = json.loads(clock_text)
        gpu0 = doc[0] if isinstance(doc, list) and doc else doc
        for path, value in _walk(gpu0):
            low = [p.lower() for p in path]
            # ... "clock": {"gfx_0": {"clk": {"value": 2100, "unit": "MHz"}}, "mem_0": {"clk": ...}}
            if len(low) >= 3 and low[-2] == "clk" and low[-1] == "value":
                domain = low[-3]
                if domain.startswith("gfx") and "sclk_mhz" not in out:
                    out["sclk_mhz"] = _mhz(value)
                elif domain.startswith("mem") and "mclk_mhz" not in out:
                    out["mclk_mhz"] = _mhz(value)
    return out


def _tool_json(cmd: list[str], run) -> str | None:
    try:
        p = run(cmd, 60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0 or not p.stdout.strip():
        return None
    text = p.stdout
    start = min([i for i in (text.find("{"), text.find("[")) if i >= 0], default=-1)
    return text[start:] if start >= 0 else None  # some versions print a banner first


def smi_snapshot(run=None) -> dict:
    """Driver and current clocks of GPU 0 from amd-smi, else rocm-smi; {'error': ...} if neither works."""
    run = run or runner._run
    static = _tool_json(["amd-smi", "static", "--asic", "--driver", "--gpu", "0", "--json"], run)
    clocks = _tool_json(["amd-smi", "metric", "--clock", "--gpu", "0", "--json"], run)
    if static or clocks:
        try:
            return dict(parse_amd_smi_json(static, clocks), tool="amd-smi")
        except (ValueError, TypeError, IndexError):
            pass
    text = _tool_json(["rocm-smi", "-d", "0", "--showproductname", "--showdriverversion", "--showclocks", "--json"], run)
    if text:
        try:
            return dict(parse_rocm_smi_json(text), tool="rocm-smi")
        except (ValueError, TypeError, AttributeError):
            pass
    return {"error": "neither amd-smi nor rocm-smi answered"}


def detect_gpu(run=None) -> dict:
    """The first AMD GPU agent (what HIP calls device 0), from rocminfo; amd-smi / rocm-smi
    fill in what rocminfo lacks. Raises KeetError when no AMD GPU is found."""
    run = run or runner._run
    agents: list[dict] = []
    try:
        p = run(["rocminfo"], 120)
        if p.returncode == 0:
            agents = parse_rocminfo(p.stdout)
    except (OSError, subprocess.TimeoutExpired):
        pass
    snap = smi_snapshot(run)
    if agents:
        gpu = dict(agents[0], source="rocminfo", gpu_count=len(agents))
    elif "error" not in snap and snap.get("arch"):
        gpu = {"arch": snap["arch"], "name": snap.get("name") or snap["arch"], "source": snap["tool"]}
    else:
        raise KeetError("no AMD GPU found (rocminfo lists no GPU agent; amd-smi and rocm-smi failed)")
    gpu["arch"] = base_arch(gpu["arch"])
    gpu["smi"] = snap
    return gpu


def base_arch(arch: str) -> str:
    """'gfx90a:sramecc+:xnack-' or 'amdgcn-amd-amdhsa--gfx942:sramecc+' -> 'gfx90a' / 'gfx942'."""
    m = re.search(r"gfx[0-9a-f]+", arch or "")
    if not m:
        raise KeetError(f"cannot read a gfx target from {arch!r}")
    return m.group(0)


def gpu_id_for(arch: str, name: str = "", cus: int | None = None) -> str | None:
    """perfmodel GPU id of a detected device: gfx90a -> mi250x; gfx942 -> mi300a / mi300x by
    name (or CU count: 228 / 304)."""
    arch = base_arch(arch)
    upper = (name or "").upper()
    if arch == "gfx90a":
        return "mi250x" if "MI210" not in upper else None
    if arch == "gfx942":
        if "MI300A" in upper or cus == 228:
            return "mi300a"
        if "MI300X" in upper or cus == 304:
            return "mi300x"
    return None


def nvidia_present(run=None) -> bool:
    run = run or runner._run
    try:
        p = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], 60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and bool(p.stdout.strip())


def pick_backend(backend: str | None, build_only: bool, run=None, arch: str | None = None) -> str:
    """'cuda' or 'hip': as asked; else NVIDIA when nvidia-smi works, AMD when rocminfo /
    amd-smi / rocm-smi find a GPU. A build-only run without --backend builds the CUDA suite,
    or the HIP suite when --arch names a gfx target."""
    if backend in ("cuda", "hip"):
        return backend
    if backend not in (None, "", "auto"):
        raise KeetError(f"unknown backend {backend!r} (cuda, hip or auto)")
    if build_only:
        return "hip" if arch and arch.startswith("gfx") else "cuda"
    if nvidia_present(run):
        return "cuda"
    try:
        detect_gpu(run)
    except KeetError:
        raise KeetError("no GPU found: nvidia-smi failed, and rocminfo, amd-smi and rocm-smi found no AMD GPU") from None
    return "hip"


# --------------------------------------------------------------------------------------
# compilers
# --------------------------------------------------------------------------------------
def isa_version(arch: str) -> int:
    """__oclc_ISA_version of a gfx9 target: gfx942 -> 9402, gfx90a -> 9010 (major, minor, stepping)."""
    m = re.fullmatch(r"gfx(\d+)([0-9a-f])([0-9a-f])", base_arch(arch))
    if not m:
        raise KeetError(f"cannot derive the ISA version of {arch}")
    return int(m.group(1)) * 1000 + int(m.group(2), 16) * 100 + int(m.group(3), 16)


def device_lib_dirs(clang: str) -> list[Path]:
    """Directories that may hold the ROCm device libraries (ockl.bc, ocml.bc, oclc_*.bc)."""
    cands = [os.environ.get("ROCM_DEVICE_LIB_PATH"), os.environ.get("HIP_DEVICE_LIB_PATH")]
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            cands += [f"{root}/amdgcn/bitcode", f"{root}/lib/llvm/lib/clang/*/lib/amdgcn/bitcode",
                      f"{root}/llvm/lib/clang/*/lib/amdgcn/bitcode"]
    top = Path(clang).resolve().parent.parent
    cands += [str(top / "amdgcn" / "bitcode"), str(top / "lib" / "clang" / "*" / "lib" / "amdgcn" / "bitcode"),
              "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/usr/lib/aarch64-linux-gnu/amdgcn/bitcode",
              "/usr/lib/amdgcn/bitcode", "/usr/share/amdgcn/bitcode"]
    out: list[Path] = []
    for c in cands:
        if not c:
            continue
        for p in sorted(Path("/").glob(c.lstrip("/"))) if "*" in c else [Path(c)]:
            if (p / "ockl.bc").is_file() and p not in out:
                out.append(p)
    return out


def device_lib_shim(clang: str, arch: str, libdir: Path, work: Path, run=None) -> Path:
    """A copy of libdir (symlinks) with oclc_isa_version_<gfx>.bc added, compiled by clang from
    one line of OpenCL C; in work/, never in libdir."""
    run = run or runner._run
    gfx = base_arch(arch).removeprefix("gfx")
    shim = work / f"device-libs-{base_arch(arch)}"
    shim.mkdir(parents=True, exist_ok=True)
    for bc in libdir.glob("*.bc"):
        link = shim / bc.name
        if not link.exists():
            link.symlink_to(bc)
    target = shim / f"oclc_isa_version_{gfx}.bc"
    if not target.exists():
        src = work / f"isa_version_{gfx}.cl"
        src.write_text(_ISA_SRC.format(version=isa_version(arch)))
        cmd = [clang, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={base_arch(arch)}",
               "-nogpulib", "-emit-llvm", "-c", "-o", str(target), str(src)]
        p = run(cmd, 120)
        if p.returncode != 0:
            raise KeetError(f"cannot build {target.name} with {clang}: {(p.stderr or p.stdout).strip()[-300:]}")
    return shim


class Compiler:
    """A HIP compiler able to build for one gfx target: hipcc or a clang++ driven with -x hip."""

    def __init__(self, path: str, kind: str, arch: str, extra: list[str] | None = None):
        self.path, self.kind, self.arch, self.extra = path, kind, base_arch(arch), list(extra or [])

    @property
    def env(self) -> dict:
        env = dict(os.environ)
        if self.kind == "hipcc":
            env["HIP_PLATFORM"] = "amd"
        return env

    def flags(self) -> list[str]:
        lang = ["-x", "hip"] if self.kind == "clang" else []
        return [*lang, f"--offload-arch={self.arch}", *BASE_FLAGS, *self.extra]

    def command(self, src: Path, out: Path, compile_only: bool = False) -> list[str]:
        return [self.path, *self.flags(), *(["-c"] if compile_only else []), "-o", str(out), str(src)]

    def compile(self, src: Path, out: Path, compile_only: bool = False, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(src, out, compile_only), capture_output=True, text=True, timeout=timeout,
                              errors="replace", check=False, env=self.env)

    def version(self) -> str:
        try:
            p = subprocess.run([self.path, "--version"], capture_output=True, text=True, timeout=60, errors="replace",
                               check=False, env=self.env)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        lines = [ln.strip() for ln in p.stdout.splitlines() if ln.strip()]
        keep = [ln for ln in lines if re.search(r"HIP version|clang version", ln)]
        return "; ".join(keep or lines[:1])

    def describe(self) -> dict:
        return {"path": self.path, "kind": self.kind, "version": self.version(), "flags": self.flags(),
                **({"env": {"HIP_PLATFORM": "amd"}} if self.kind == "hipcc" else {})}


def _candidates(explicit: str | None) -> list[tuple[str, str]]:
    """(path, kind) in the order tried."""
    def kind_of(path: str) -> str:
        return "hipcc" if "hipcc" in Path(path).name else "clang"

    out: list[tuple[str, str]] = []
    if explicit:
        return [(explicit, kind_of(explicit))]
    if os.environ.get("HIPCC"):
        out.append((os.environ["HIPCC"], kind_of(os.environ["HIPCC"])))
    rocm = os.environ.get("ROCM_PATH") or "/opt/rocm"
    for cand, kind in ((f"{rocm}/bin/hipcc", "hipcc"), (shutil.which("hipcc"), "hipcc"),
                       (f"{rocm}/llvm/bin/clang++", "clang"), (f"{rocm}/lib/llvm/bin/clang++", "clang")):
        if cand and Path(cand).is_file():
            out.append((cand, kind))
    for ver in range(22, 16, -1):  # Debian / Ubuntu versioned clang (gfx942 needs LLVM >= 17)
        cand = shutil.which(f"clang++-{ver}")
        if cand:
            out.append((cand, "clang"))
    seen, uniq = set(), []
    for path, kind in out:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            uniq.append((path, kind))
    return uniq


def find_compiler(arch: str, explicit: str | None = None, work: Path | None = None) -> tuple[Compiler, list[str]]:
    """The first compiler that builds a tiny HIP program for arch, and what was tried (for the
    error message). work: a directory for probes and any device-library shim (its lifetime
    must cover the builds)."""
    arch = base_arch(arch)
    work = Path(work or tempfile.mkdtemp(prefix="microbench-hip-"))
    work.mkdir(parents=True, exist_ok=True)
    probe = work / "probe.hip"
    probe.write_text(_PROBE_SRC)
    tried: list[str] = []
    for path, kind in _candidates(explicit):
        options: list[list[str]] = [[]]
        if kind == "clang":
            options = [[]]
            for libdir in device_lib_dirs(path):
                if (libdir / f"oclc_isa_version_{arch.removeprefix('gfx')}.bc").is_file():
                    options.append([f"--rocm-device-lib-path={libdir}"])
                else:
                    try:
                        shim = device_lib_shim(path, arch, libdir, work)
                    except (KeetError, OSError, subprocess.TimeoutExpired) as exc:
                        tried.append(f"{path}: device-library shim failed: {exc}")
                        continue
                    options.append([f"--rocm-device-lib-path={shim}"])
        for extra in options:
            comp = Compiler(path, kind, arch, extra)
            try:
                p = comp.compile(probe, work / f"probe-{arch}.o", compile_only=True, timeout=300)
            except (OSError, subprocess.TimeoutExpired) as exc:
                tried.append(f"{path}: {type(exc).__name__}")
                break
            if p.returncode == 0:
                return comp, tried
            msg = next((ln.strip() for ln in (p.stderr + p.stdout).splitlines() if "error" in ln.lower()), "failed")
            tried.append(f"{path}{' ' + ' '.join(extra) if extra else ''}: {msg[:200]}")
    if explicit:
        raise KeetError(f"{explicit} cannot compile HIP for {arch}: " + ("; ".join(tried) or "not found"))
    raise KeetError(f"no HIP compiler for {arch} (tried: {'; '.join(tried) or 'none found'}); install ROCm "
                    "(hipcc), or Debian's hipcc (gfx90a) / clang-19 + lld-19 + clang-tools-19 + rocm-device-libs "
                    "(gfx942), or pass --hipcc")


def build(program: str, comp: Compiler, build_dir: Path) -> dict:
    src = HIP_DIR / f"{program}.hip"
    exe = build_dir / f"{program}-{comp.arch}"
    t0 = time.monotonic()
    try:
        p = comp.compile(src, exe)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KeetError(f"building {program}.hip failed: {type(exc).__name__}: {exc}") from None
    if p.returncode != 0:
        lines = (p.stderr + p.stdout).strip().splitlines()
        first = next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "no output")
        raise KeetError(f"building {program}.hip for {comp.arch} failed ({Path(comp.path).name} exit {p.returncode}): "
                        f"{first.strip()}")
    return {"program": program, "cmd": comp.command(src, exe), "seconds": round(time.monotonic() - t0, 2), "exe": str(exe)}


# --------------------------------------------------------------------------------------
# clocks and parameter derivation
# --------------------------------------------------------------------------------------
def counter_is_cycles(device: dict | None) -> bool:
    """Whether clock64() (s_memtime) counted core cycles when the program calibrated it: a rate
    of a plausible core clock, not the constant-rate counter's."""
    dev = device or {}
    c, w = dev.get("counter_hz") or 0, dev.get("wall_clock_hz") or 0
    return 3e8 < c < 4e9 and (w <= 0 or abs(c - w) / w > 0.2)


def fallback_clock_hz(device: dict | None, gpu: dict | None = None) -> float | None:
    """Peak engine clock (MB_DEVICE max_sclk_khz, else rocminfo's Max Clock Freq.)."""
    khz = (device or {}).get("max_sclk_khz") or 0
    if khz > 1e5:
        return khz * 1e3
    mhz = (gpu or {}).get("max_clock_mhz") or 0
    return mhz * 1e6 if mhz > 100 else None


def normalize(result: dict, device: dict | None, fallback_hz: float | None) -> dict:
    """When clock64() is not a cycle counter on this GPU, express cycles as ns x the peak engine
    clock and say so; otherwise a result without its own clock gets the fallback."""
    r = dict(result)
    if counter_is_cycles(device):
        return r
    if fallback_hz:
        r["sm_clock_hz"] = fallback_hz
        r["clock_source"] = "peak engine clock (clock64 is not a cycle counter on this GPU)"
        if "ns_per_load" in r:
            r["cycles_per_load"] = [ns * 1e-9 * fallback_hz for ns in r["ns_per_load"]]
    else:
        r.pop("sm_clock_hz", None)
        r.pop("cycles_per_load", None)
    return r


def _clock(r: dict, fallback: float | None) -> float | None:
    hz = r.get("sm_clock_hz") or 0
    return hz if 3e8 < hz < 4e9 else fallback


def hierarchy(device: dict | None, gpu: dict | None, arch: str | None) -> dict:
    """Cache sizes the thresholds use: l1 (per CU), l2 (one XCD's, as hipDeviceProp reports;
    a CU reaches only its own XCD's L2), l2_total (all XCDs), mall (0 on CDNA2), the XCD count
    and the pointer_chase variant and L1 multiple of the L2 latency."""
    dev, gpu = device or {}, gpu or {}
    arch = base_arch(arch or dev.get("arch") or gpu.get("arch") or DEFAULT_ARCH)
    info = ARCHS.get(arch, {})
    l1 = gpu.get("l1_bytes") or info.get("l1_bytes") or 16 * KiB
    l2 = dev.get("l2_bytes") or gpu.get("l2_bytes") or 0
    mall = gpu.get("l3_bytes") or info.get("mall_bytes") or 0
    cus = dev.get("cu_count") or gpu.get("cus") or 0
    per_xcd = info.get("cus_per_xcd")
    xcds = max(1, round(cus / per_xcd)) if per_xcd and cus else 1
    variant, l1_mult = info.get("l2_latency", ("ca", 8))
    return {"arch": arch, "l1": l1, "l2": l2, "l2_total": l2 * xcds, "mall": mall, "xcds": xcds, "cus": cus,
            "l2_latency_variant": variant, "l2_latency_l1_mult": l1_mult}


def derive(results: list[dict], device: dict | None, gpu: dict | None = None, arch: str | None = None
           ) -> tuple[dict, dict, dict]:
    """(parameters, missing, observations) of an AMD run; parameter names as in
    perfmodel/hardware/mi*.toml. Rejected measurements are never used."""
    params: dict[str, dict] = {}
    missing: dict[str, str] = {}
    obs: dict[str, object] = {}
    h = hierarchy(device, gpu, arch)
    cus = h["cus"]
    fallback = fallback_clock_hz(device, gpu)
    cycles_ok = counter_is_cycles(device)
    clock_how = ("core clock measured in the same run (clock64 = s_memtime vs wall_clock64 = s_memrealtime)"
                 if cycles_ok else
                 f"peak engine clock {fallback / 1e6:.0f} MHz (clock64 did not count core cycles on this GPU)"
                 if fallback else "no clock")

    def put(name, value, unit, src):
        params[name] = {"value": value, "unit": unit, "from": src}

    lat = runner.accepted(results, "latency")
    clocks = [r["sm_clock_hz"] for r in lat if r.get("variant") == "ca" and 3e8 < (r.get("sm_clock_hz") or 0) < 4e9]
    sm_hz = statistics.median(clocks) if clocks and cycles_ok else None
    if sm_hz:
        put("sm_clock_measured_hz", sm_hz, "Hz",
            f"pointer_chase (HIP): median over {len(clocks)} footprints of clock64() (s_memtime) delta / "
            "wall_clock64() (s_memrealtime) delta, one lane, ordinary loads")
    else:
        missing["sm_clock_measured_hz"] = ("no accepted pointer_chase measurement with a clock" if cycles_ok else
                                           "clock64() did not count core cycles on this GPU (see device.counter_hz)")
    clock_fallback = sm_hz or fallback

    # HBM
    dram = {r["name"]: r for r in runner.accepted(results, "dram") if r["name"] in ("read", "copy", "triad")}
    if dram:
        best = max(dram.values(), key=lambda r: r["bytes_per_s"])
        put("dram_achievable_bytes_per_s", best["bytes_per_s"], "B/s",
            f"hbm_bandwidth (HIP): max over accepted read/copy/triad of bytes per run / median time; best = {best['name']} "
            f"({best['bytes'] / 2**30:.0f} GiB per run incl. read+write bytes, median of {best['stats']['n']} runs); "
            "others: " + ", ".join(f"{k} {v['bytes_per_s'] / 1e12:.3f} TB/s" for k, v in sorted(dram.items())))
    else:
        missing["dram_achievable_bytes_per_s"] = "no accepted hbm read/copy/triad measurement"

    # L2 and Infinity Cache bandwidth
    cache = sorted(runner.accepted(results, "cache"), key=lambda r: r["footprint_bytes"])
    obs["cache_sweep_tb_per_s"] = {runner._fmt_bytes(r["footprint_bytes"]): round(r["bytes_per_s"] / 1e12, 3)
                                   for r in cache}
    if h["l2"]:
        plateau = [r for r in cache if 256 * KiB <= r["footprint_bytes"] <= h["l2"] / 2]
        per_clk = [r["bytes_per_s"] / hz for r in plateau if (hz := _clock(r, clock_fallback))]
        if per_clk:
            put("l2_bandwidth_bytes_per_clk", statistics.median(per_clk), "B/clk",
                f"cache_sweep (HIP): median over {len(per_clk)} footprints from 256 KiB to L2/2 "
                f"({runner._fmt_bytes(int(h['l2'] // 2))}, L2 as hipDeviceProp reports it"
                f"{', one XCD: every XCD caches the footprint, so this is the whole chip' if h['xcds'] > 1 else ''}) "
                f"of median bandwidth (float4 loads, whole grid) / {clock_how}")
        else:
            missing["l2_bandwidth_bytes_per_clk"] = "no accepted cache measurement at 256 KiB .. L2/2, or no clock"
    else:
        missing["l2_bandwidth_bytes_per_clk"] = "L2 size unknown (no MB_DEVICE line)"
    if h["mall"]:
        # every XCD reads the whole footprint, so it leaves the XCD-private L2s beyond one L2
        lo, hi = 4 * h["l2"], h["mall"] / 2
        pts = [r for r in cache if lo <= r["footprint_bytes"] <= hi] if h["l2"] else []
        if pts:
            put("mall_bandwidth_bytes_per_s", statistics.median(r["bytes_per_s"] for r in pts), "B/s",
                f"cache_sweep (HIP): median over footprints {', '.join(runner._fmt_bytes(r['footprint_bytes']) for r in pts)} "
                f"(from 4x one XCD's L2, which every XCD then misses, to half the {h['mall'] // MiB} MiB Infinity "
                "Cache) of median bandwidth, float4 loads, whole grid")
        else:
            missing["mall_bandwidth_bytes_per_s"] = "no accepted cache measurement between 4x L2 and MALL/2"

    # latencies
    def lat_param(name, variant, lo, hi, what):
        pts = [r for r in lat if r.get("variant") == variant and lo <= r["footprint_bytes"] <= hi
               and "cycles_stats" in r and not r["cycles_stats"]["rejected"]]
        if pts:
            meds = [r["cycles_stats"]["median"] for r in pts]
            fps = ", ".join(runner._fmt_bytes(r["footprint_bytes"]) for r in pts)
            put(name, statistics.median(meds), "cycle",
                f"pointer_chase (HIP, {variant}): median over footprints {fps} ({what}) of the median cycles per "
                f"dependent load (one lane, 128 B-strided Sattolo cycle; cycles = {clock_how})")
        else:
            missing[name] = f"no accepted pointer_chase ({variant}) measurement {what}"

    lat_param("l1_latency_cycles", "ca", 0, h["l1"] / 2, f"<= L1/2 = {runner._fmt_bytes(h['l1'] // 2)}")
    if h["l2"]:
        variant, mult = h["l2_latency_variant"], h["l2_latency_l1_mult"]
        lat_param("l2_latency_cycles", variant, mult * h["l1"], h["l2"] / 4,
                  f"between {mult}x L1 and L2/4, " + ("agent-scope loads that skip the L1" if variant == "cg"
                                                      else "ordinary loads"))
        last = h["mall"] or h["l2_total"]
        if h["mall"]:
            lat_param("mall_latency_cycles", "ca", 4 * h["l2"], h["mall"] / 2, "between 4x L2 and MALL/2")
        lat_param("dram_latency_cycles", "ca", 8 * last, float("inf"),
                  f">= 8x the last cache level ({runner._fmt_bytes(int(8 * last))})")
    else:
        missing["l2_latency_cycles"] = missing["dram_latency_cycles"] = "L2 size unknown (no MB_DEVICE line)"

    # LDS
    lds = {r["name"]: r for r in runner.accepted(results, "lds")}
    best = max((lds[k] for k in ("b128", "b32_stride1") if k in lds), key=lambda r: r["bytes_per_s"], default=None)
    hz = _clock(best, clock_fallback) if best else None
    if best and hz and cus:
        put("shared_bandwidth_bytes_per_clk_per_sm", best["bytes_per_s"] / hz / cus, "B/clk/CU",
            f"lds_bandwidth (HIP, {best['name']}): LDS bytes read per run / median time / {cus} CUs / {clock_how}")
    else:
        missing["shared_bandwidth_bytes_per_clk_per_sm"] = "no accepted lds b128/b32_stride1 measurement, clock or CU count"
    if "b32_stride1" in lds:
        base = lds["b32_stride1"]["bytes_per_s"]
        obs["lds_slowdown_vs_stride1"] = {k: round(base / r["bytes_per_s"], 2) for k, r in sorted(lds.items())
                                          if k.startswith("b32_stride")}

    # occupancy (an observation: the API's waves per SIMD and the throughput they bought)
    occ = sorted(runner.accepted(results, "occupancy"), key=lambda r: r.get("vgprs_forced", 0))
    if occ:
        top = max(r["ops_per_s"] for r in occ)
        obs["vgpr_occupancy"] = [{"vgprs": r.get("vgprs_forced"), "waves_per_simd": r.get("waves_per_simd"),
                                  "relative_throughput": round(r["ops_per_s"] / top, 3)} for r in occ]

    # MFMA
    mfma = {r["name"]: r for r in runner.accepted(results, "mfma")}
    for prec, (names, unit) in MFMA_PARAMS.items():
        r = mfma.get(prec)
        hz = _clock(r, clock_fallback) if r else None
        if r and hz and cus:
            for name in names:
                put(name, r["ops_per_s"] / hz / cus, unit,
                    f"mfma_throughput (HIP, {prec}, {r.get('flops_per_instruction', 0):.0f} ops per instruction, 4 "
                    f"independent accumulators per wave, 8 waves per CU): operations per run / median time / {cus} CUs "
                    f"/ {clock_how}")
        elif prec in ("xf32", "fp8") and h["arch"] == "gfx90a":
            continue  # CDNA2 has no such instruction
        else:
            for name in names:
                missing[name] = f"no accepted mfma {prec} measurement" if not r else "no clock or CU count"

    # atomics
    atom = {r["name"]: r for r in runner.accepted(results, "atomics")}
    for pname, rname in (("atomic_ops_per_clk", "distinct"), ("atomic_same_address_ops_per_clk", "same_address")):
        r = atom.get(rname)
        hz = _clock(r, clock_fallback) if r else None
        if r and hz:
            put(pname, r["ops_per_s"] / hz, "op/clk",
                f"atomics (HIP, {rname}): unsafeAtomicAdd(float) (global_atomic_add_f32, no return) operations per run "
                f"/ median time ({r['stats']['n']} runs) / {clock_how}")
        else:
            missing[pname] = f"no accepted atomics {rname} measurement" if not r else "no clock"

    runner.derive_launch(results, put, missing, "one-wave kernel <<<1,64>>>", "hipGraph", "hipEvents", label="HIP, ")
    return params, missing, obs


# --------------------------------------------------------------------------------------
# the suite
# --------------------------------------------------------------------------------------
def parse_suite(suite: str | None) -> list[str]:
    if not suite:
        return list(PROGRAMS)
    names = [s.strip() for s in suite.split(",") if s.strip()]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        raise KeetError(f"unknown HIP suite name(s) {', '.join(unknown)} (known: {', '.join(PROGRAMS)})")
    return [n for n in PROGRAMS if n in names]


def run_suite(out: str | Path, suite: str | None = None, hipcc: str | None = None, build_only: bool = False,
              arch: str | None = None, run=None) -> dict:
    """Build (and unless build_only, run) the HIP suite; write the document to out."""
    run = run or runner._run
    selected = parse_suite(suite)
    doc: dict = {
        "suite_version": runner.SUITE_VERSION,
        "backend": "hip",
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": socket.gethostname(),
        "suites": selected,
        "build_only": build_only,
    }
    gpu = None
    if build_only:
        arch = base_arch(arch or DEFAULT_ARCH)
    else:
        gpu = detect_gpu(run)
        if arch and base_arch(arch) != gpu["arch"]:
            raise KeetError(f"--arch {arch} does not match the GPU found ({gpu['name']}, {gpu['arch']})")
        arch = gpu["arch"]
        doc["device"] = {"gpu": gpu, "before": gpu.get("smi", {}), "gpu_id": gpu_id_for(arch, gpu["name"], gpu.get("cus"))}
    if arch not in ARCHS:
        print(f"warning: {arch} is neither gfx90a nor gfx942; thresholds use gfx942's cache sizes", file=sys.stderr, flush=True)
    doc["arch"] = arch

    with tempfile.TemporaryDirectory(prefix="microbench-hip-") as tmp:
        comp, tried = find_compiler(arch, hipcc, Path(tmp) / "probe")
        doc["compiler"] = dict(comp.describe(), rejected_candidates=tried)
        _progress(f"building {len(selected)} program(s) for {arch} with {comp.path}: "
                  + ", ".join(f"{PROGRAMS[n]}.hip" for n in selected))
        with ThreadPoolExecutor(max_workers=max(1, min(len(selected), os.cpu_count() or 1))) as pool:
            futures = {name: pool.submit(build, PROGRAMS[name], comp, Path(tmp)) for name in selected}
            builds = {name: f.result() for name, f in futures.items()}
        doc["builds"] = {k: {"cmd": " ".join(v["cmd"]), "seconds": v["seconds"]} for k, v in builds.items()}
        if build_only:
            runner.write_json_atomic(Path(out), doc)
            return doc

        runs, raw, failures = {}, [], []
        device_line = None
        for i, name in enumerate(selected, 1):
            _progress(f"[{i}/{len(selected)}] {name} ...")
            t0 = time.monotonic()
            entry: dict = {"program": PROGRAMS[name]}
            try:
                p = run([builds[name]["exe"]], runner.RUN_TIMEOUT_S)
                entry.update(rc=p.returncode, stderr=p.stderr[-3000:])
                dev, res = runner.parse_output(p.stdout)
                if p.returncode != 0:
                    check = [ln for ln in p.stdout.splitlines() if ln.startswith("CHECK_FAIL")]
                    entry["error"] = f"exit status {p.returncode}: " + (check or p.stderr.strip().splitlines() or
                                                                         p.stdout.strip().splitlines() or ["no output"])[-1]
            except subprocess.TimeoutExpired as exc:
                dev, res = runner.parse_output(exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes)
                                               else (exc.stdout or ""))
                entry["error"] = f"timed out after {runner.RUN_TIMEOUT_S} s"
            except json.JSONDecodeError as exc:
                dev, res = None, []
                entry["error"] = f"unparsable MB_ line: {exc}"
            entry["seconds"] = round(time.monotonic() - t0, 2)
            entry["device"] = dev
            device_line = device_line or dev
            entry["clocks_after"] = smi_snapshot(run)
            runs[name] = entry
            raw.extend(dict(r, program=PROGRAMS[name]) for r in res)
            if "error" in entry:
                failures.append(f"{name}: {entry['error']}")
                _progress(f"[{i}/{len(selected)}] {name} ... FAILED in {entry['seconds']:.1f} s: {entry['error']}")
            else:
                _progress(f"[{i}/{len(selected)}] {name} ... done in {entry['seconds']:.1f} s")
            doc["runs"] = runs
            runner.write_json_atomic(Path(out), doc)  # a killed run keeps what it has

    fallback = fallback_clock_hz(device_line, gpu)
    results = [runner.summarize(normalize(r, device_line, fallback)) for r in raw]
    doc["results"] = results
    dev_doc = doc["device"]
    dev_doc["after"] = smi_snapshot(run)
    dev_doc["hip"] = device_line
    dev_doc["name"] = gpu["name"] if gpu["name"] and gpu["name"] != gpu["arch"] else (device_line or {}).get("name")
    dev_doc["driver"] = (gpu.get("smi") or {}).get("driver_version") or (device_line or {}).get("driver_version")
    dev_doc["counter_is_cycles"] = counter_is_cycles(device_line)
    doc["rejected"] = [{"bench": r["bench"], "name": r["name"], "reason": r["stats"].get("reason")}
                       for r in results if r["stats"]["rejected"]]
    doc["parameters"], doc["parameters_missing"], doc["observations"] = derive(results, device_line, gpu, arch)
    runner.write_json_atomic(Path(out), doc)
    if failures:
        raise KeetError(f"{len(failures)} program(s) failed ({'; '.join(failures)}); partial results in {out}")
    return doc


def _progress(msg: str) -> None:
    """Progress on a terminal only, as microbench.runner's."""
    if sys.stderr.isatty():
        print(msg, file=sys.stderr, flush=True)
