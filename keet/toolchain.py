"""Finding the CUDA compiler: one place for every part that builds CUDA code (microbench's
runner, perfmodel.static's compile, keet.optimize's candidate build).

Standard library only: microbench's runner imports it on a bare GPU machine whose python3 has
none of keet's dependencies.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from keet.errors import KeetError


def wheel_nvcc() -> str | None:
    """nvcc of the PyPI wheel nvidia-cuda-nvcc (site-packages/nvidia/cu<N>/bin/nvcc), if installed."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(loc).glob("cu*/bin/nvcc"), reverse=True)
        if found:
            return str(found[0])
    return None


def nvcc_link_flags(nvcc: str) -> list[str]:
    """The wheel's nvcc.profile looks for the runtime libraries in <top>/lib64, the wheels put
    them in <top>/lib: name that directory (no symlink into site-packages needed)."""
    top = Path(nvcc).resolve().parent.parent
    if (top / "lib" / "libcudart_static.a").is_file() and not (top / "lib64").exists():
        return [f"-L{top / 'lib'}"]
    return []


def nvcc_candidates(explicit: str | None) -> list[tuple[str, str]]:
    """(nvcc, how it was found), in the order of preference: `explicit`, $NVCC, a CUDA
    toolkit ($CUDA_HOME, $CUDA_PATH, nvcc on PATH, /usr/local/cuda), then the PyPI wheel."""
    found = [(explicit, "--nvcc"), (os.environ.get("NVCC"), "$NVCC")]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            found.append((str(Path(os.environ[var]) / "bin" / "nvcc"), f"${var}"))
    found += [(shutil.which("nvcc"), "nvcc on PATH"), ("/usr/local/cuda/bin/nvcc", "/usr/local/cuda"),
              (wheel_nvcc(), "the PyPI wheel nvidia-cuda-nvcc")]
    return [(cand, how) for cand, how in found if cand]


def find_nvcc_how(explicit: str | None) -> tuple[str, str]:
    """The nvcc to use (see nvcc_candidates) and how it was found."""
    for cand, how in nvcc_candidates(explicit):
        if Path(cand).is_file() or shutil.which(cand):
            return cand, how
    if explicit:
        raise KeetError(f"nvcc not found at {explicit}")
    raise KeetError("nvcc not found (install the CUDA toolkit and set CUDA_HOME or put its bin on PATH, set NVCC, "
                    "pass --nvcc, or pip install nvidia-cuda-nvcc)")


def find_nvcc(explicit: str | None) -> str:
    """The nvcc to use: `explicit`, else $NVCC, $CUDA_HOME/bin, PATH, /usr/local/cuda, the PyPI wheel."""
    return find_nvcc_how(explicit)[0]


@dataclass(frozen=True)
class Toolkit:
    """The CUDA compiler in use: where nvcc is, its toolkit folder (nvcc's TOP), its release,
    how it was found, and whether it is the PyPI wheel's."""

    nvcc: str
    root: Path
    release: str  # "13.0", or "" when nvcc did not say
    found_by: str
    pypi: bool

    def describe(self) -> str:
        kind = "PyPI nvidia-cuda-nvcc" if self.pypi else "CUDA toolkit"
        release = f" {self.release}" if self.release else ""
        return f"{kind}{release} at {self.root} ({self.found_by})"

    def include_dirs(self) -> list[Path]:
        """The toolkit's own header folders (those holding cuda_runtime_api.h)."""
        return [d for d in (self.root / "include", self.root / "targets" / "x86_64-linux" / "include",
                            self.root / "targets" / "sbsa-linux" / "include") if (d / "cuda_runtime_api.h").is_file()]


@functools.lru_cache(maxsize=8)
def _probe(nvcc: str) -> tuple[str, str]:
    """(TOP folder, release) from `nvcc -dryrun` and `nvcc --version` (follows wrapper scripts)."""
    out = []
    for args in (["-dryrun", "-x", "cu", "-E", os.devnull], ["--version"]):
        try:
            p = subprocess.run([nvcc, *args], check=False, capture_output=True, text=True, timeout=30)
            out.append(p.stderr + p.stdout)
        except (OSError, subprocess.TimeoutExpired):
            out.append("")
    top = re.search(r"^#\$ TOP=(.*)$", out[0], re.MULTILINE)
    release = re.search(r"release (\d+\.\d+)", out[1])
    return (top.group(1).strip() if top else ""), (release.group(1) if release else "")


def toolkit(explicit: str | None = None) -> Toolkit:
    """The CUDA compiler find_nvcc picks, described (two quick nvcc runs, cached)."""
    nvcc, how = find_nvcc_how(explicit)
    top, release = _probe(nvcc)
    root = Path(top).resolve() if top else Path(nvcc).resolve().parent.parent
    wheel = wheel_nvcc()
    pypi = bool(wheel) and Path(wheel).resolve().parent.parent == root
    return Toolkit(nvcc=nvcc, root=root, release=release, found_by=how, pypi=pypi)


def wheel_include_dirs() -> list[Path]:
    """Header folders of the PyPI CUDA wheels installed beside keet (site-packages/nvidia/*/include:
    cu13 for the toolkit and library wheels such as nvidia-cublas, nvidia-curand, nvidia-cufft,
    nvidia-nvtx; cudnn and nccl for theirs)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    found: list[Path] = []
    for loc in (spec.submodule_search_locations or []) if spec else []:
        found += sorted(d for d in Path(loc).glob("*/include") if d.is_dir())
    return found
