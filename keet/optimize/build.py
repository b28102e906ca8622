"""Build a candidate (or the reference) with the harness into one executable, in the sandbox."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from keet.optimize.sandbox import Limits, SandboxResult, run_limited
from microbench.runner import find_nvcc, nvcc_link_flags

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


def build_candidate(source: Path, work_dir: Path, arch: str, nvcc: str | None = None) -> BuildResult:
    """Compile ``source`` with the harness in ``work_dir``; the log is what nvcc printed."""
    compiler = find_nvcc(nvcc)
    executable = work_dir / "candidate"
    command = nvcc_command(compiler, arch, source.resolve(), executable)
    result: SandboxResult = run_limited(command, work_dir, BUILD_LIMITS)
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
