"""Every microbenchmark program compiles, on a machine with no GPU:

- microbench/cuda/**/*.cu with nvcc, exactly as microbench/runner.py builds them, for sm_90a;
  files for Blackwell (under a folder named sm100*, or with sm100 in their name) for sm_100a;
- microbench/hip/*.hip, as microbench/amd.py builds them, for gfx90a (CDNA2, MI250X) and
  gfx942 (CDNA3, MI300A/X).

Sources are globbed, so new programs are covered without touching this file. All programs of a
toolchain are compiled in parallel (one worker per core) by a module fixture; each program is
one test that reports its compiler output on failure.

Toolchains: nvcc from $NVCC, else the PyPI wheel nvidia-cuda-nvcc (in the `test` extra),
else PATH; HIP: amd.find_compiler (ROCm, or Debian's hipcc for gfx90a and clang++-19 with the
ROCm device libraries for gfx942; .ci/run installs them). Where a toolchain is missing the tests
skip and say why; with MICROBENCH_REQUIRE_TOOLCHAINS=1 (set by .ci/run) they fail instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from keet.errors import KeetError
from microbench import amd, runner

ROOT = Path(__file__).resolve().parents[1]
CUDA_DIR = ROOT / "microbench" / "cuda"
HIP_DIR = ROOT / "microbench" / "hip"
CUDA_SOURCES = sorted(CUDA_DIR.rglob("*.cu"))
HIP_SOURCES = sorted(HIP_DIR.glob("*.hip"))
HIP_ARCHS = ("gfx90a", "gfx942")
WORKERS = max(1, os.cpu_count() or 1)


def cuda_arch(src: Path) -> str:
    """sm_100a for Blackwell-only programs (a folder named sm100*, or sm100 in the name), else sm_90a."""
    rel = src.relative_to(CUDA_DIR)
    blackwell = any(part.startswith("sm100") for part in rel.parts[:-1]) or "sm100" in src.stem
    return "sm_100a" if blackwell else "sm_90a"


def _compile(cmd: list[str], env: dict | None = None) -> dict:
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=900, check=False, env=env)
        rc, out = p.returncode, (p.stdout + p.stderr)
    except (OSError, subprocess.TimeoutExpired) as exc:
        rc, out = -1, f"{type(exc).__name__}: {exc}"
    return {"rc": rc, "output": out[-6000:], "cmd": " ".join(cmd), "seconds": round(time.monotonic() - t0, 1)}


def _report(result: dict) -> str:
    return f"$ {result['cmd']}\n(exit {result['rc']} after {result['seconds']} s)\n{result['output']}"


# ---------------------------------------------------------------------------------------
# CUDA
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cuda_builds(tmp_path_factory) -> dict:
    try:
        nvcc = runner.find_nvcc(None)
    except KeetError as exc:
        return {"missing": str(exc)}
    out = tmp_path_factory.mktemp("cuda")

    def one(src: Path) -> dict:
        exe = out / str(src.relative_to(CUDA_DIR).with_suffix("")).replace("/", "_")
        cmd = [nvcc, *runner.nvcc_flags(cuda_arch(src)), *runner.nvcc_link_flags(nvcc), "-o", str(exe), str(src)]
        return dict(_compile(cmd), exe=exe)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return {"nvcc": nvcc, **dict(zip(CUDA_SOURCES, pool.map(one, CUDA_SOURCES)))}


def test_there_are_cuda_programs():
    assert len(CUDA_SOURCES) >= 5
    assert all(cuda_arch(s) == "sm_90a" for s in CUDA_SOURCES if s.parent == CUDA_DIR and "sm100" not in s.stem)


@pytest.mark.toolchain
@pytest.mark.parametrize("src", CUDA_SOURCES, ids=[str(s.relative_to(CUDA_DIR)) for s in CUDA_SOURCES])
def test_cuda_program_compiles(src: Path, cuda_builds: dict, missing_toolchain):
    if "missing" in cuda_builds:
        missing_toolchain(cuda_builds["missing"])
    result = cuda_builds[src]
    assert result["rc"] == 0, _report(result)
    assert result["exe"].is_file() and result["exe"].stat().st_size > 0


# ---------------------------------------------------------------------------------------
# HIP
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hip_builds(tmp_path_factory) -> dict:
    """{arch: {"compiler": Compiler, src: result}} or {arch: {"missing": reason}}."""
    found, jobs = {}, []
    for arch in HIP_ARCHS:
        work = tmp_path_factory.mktemp(f"hip-{arch}")
        try:
            comp, _ = amd.find_compiler(arch, work=work)  # work/ holds any device-library shim
        except KeetError as exc:
            found[arch] = {"missing": str(exc)}
            continue
        found[arch] = {"compiler": comp}
        jobs += [(arch, comp, src, work / f"{src.stem}-{arch}") for src in HIP_SOURCES]

    def one(job) -> tuple:
        arch, comp, src, exe = job
        return arch, src, dict(_compile(comp.command(src, exe), env=comp.env), exe=exe)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for arch, src, result in pool.map(one, jobs):
            found[arch][src] = result
    return found


def test_there_are_hip_programs_and_each_is_a_suite():
    assert sorted(s.stem for s in HIP_SOURCES) == sorted(amd.PROGRAMS.values())
    assert (HIP_DIR / "mb_hip.h").is_file()


@pytest.mark.toolchain
@pytest.mark.parametrize("arch", HIP_ARCHS)
@pytest.mark.parametrize("src", HIP_SOURCES, ids=[s.name for s in HIP_SOURCES])
def test_hip_program_compiles(src: Path, arch: str, hip_builds: dict, missing_toolchain):
    entry = hip_builds[arch]
    if "missing" in entry:
        missing_toolchain(entry["missing"])
    result = entry[src]
    assert result["rc"] == 0, _report(result)
    assert result["exe"].is_file() and result["exe"].stat().st_size > 0


@pytest.mark.toolchain
@pytest.mark.parametrize("arch", HIP_ARCHS)
def test_hip_build_only_run_end_to_end(arch: str, tmp_path: Path, hip_builds: dict, missing_toolchain):
    """`microbench run --build-only --backend hip --arch ...` as a user runs it (one small program)."""
    if "missing" in hip_builds[arch]:
        missing_toolchain(hip_builds[arch]["missing"])
    out = tmp_path / "build.json"
    p = subprocess.run([sys.executable, "-m", "microbench.runner", "--backend", "hip", "--build-only", "--arch", arch,
                        "--suite", "launch", "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT,
                       check=False)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["backend"] == "hip" and doc["arch"] == arch and doc["build_only"]
    assert set(doc["builds"]) == {"launch"} and f"--offload-arch={arch}" in doc["builds"]["launch"]["cmd"]
    assert doc["compiler"]["path"] and doc["compiler"]["version"]
