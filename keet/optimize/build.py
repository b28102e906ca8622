"""Build a candidate (or the reference) with the harness into one executable, in the sandbox."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from keet.sandbox import Isolation, Limits, SandboxResult, run_limited, write_fresh
from keet.toolchain import find_nvcc, nvcc_link_flags
from perfmodel.hardware import gpu, reference_gpu_id


def default_arch() -> str:
    """What candidates are built for by default: the reference GPU's build target (its hardware file)."""
    return gpu(reference_gpu_id()).build_target

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
BUILD_LIMITS = Limits(wall_seconds=180.0, memory_bytes=8 << 30, output_bytes=512 << 20)
NVCC_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]


@dataclass
class BuildResult:
    ok: bool
    executable: Path | None
    log: str
    seconds: float
    command: list[str]


def nvcc_command(nvcc: str, arch: str, source: Path, executable: Path) -> list[str]:
    """One nvcc call: harness + candidate -> executable (the candidate sees keet_problem.h)."""
    number = arch.removeprefix("sm_")
    return [
        nvcc, *NVCC_FLAGS, f"-gencode=arch=compute_{number},code=sm_{number}", *nvcc_link_flags(nvcc),
        f"-I{HARNESS_DIR}", "-o", str(executable), str(HARNESS_DIR / "harness.cu"), str(source),
    ]


def toolkit_root(nvcc: str) -> Path:
    """The CUDA toolkit nvcc belongs to (bin/nvcc's grandparent): what a sandboxed build reads."""
    return Path(nvcc).resolve().parent.parent


def build_candidate(source: Path, work_dir: Path, arch: str, nvcc: str | None = None, sandbox: bool = True) -> BuildResult:
    """Compile ``source`` with the harness in ``work_dir`` (in the sandbox unless ``sandbox``
    is False: the build reads the toolkit and the harness and writes only ``work_dir``, where
    the source is copied); the log is what nvcc printed. Paths are absolute: nvcc runs in
    ``work_dir``, so a relative one would name another file."""
    found = find_nvcc(nvcc)
    compiler = shutil.which(found) or os.path.abspath(found)
    work_dir = Path(os.path.abspath(work_dir))
    work_dir.mkdir(parents=True, exist_ok=True)
    copy = work_dir / "source.cu"
    write_fresh(copy, Path(source).read_bytes())
    executable = work_dir / "candidate"
    command = nvcc_command(compiler, arch, copy, executable)
    isolation = Isolation((work_dir,), (HARNESS_DIR, toolkit_root(compiler))) if sandbox else None
    result: SandboxResult = run_limited(command, work_dir, BUILD_LIMITS, isolation=isolation)
    log = f"$ {' '.join(command)}\n{result.stdout}{result.stderr}".rstrip() + f"\n({result.summary()})\n"
    ok = result.ok and executable.is_file()
    return BuildResult(ok, executable if ok else None, log, result.seconds, command)


def has_gpu() -> bool:
    """An NVIDIA GPU answers nvidia-smi -L."""
    import subprocess

    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout
