"""Finding the CUDA compiler: one place for every part that builds CUDA code (microbench's
runner, perfmodel.static's compile, keet.optimize's candidate build).

Standard library only: microbench's runner imports it on a bare GPU machine whose python3 has
none of keet's dependencies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
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


def find_nvcc(explicit: str | None) -> str:
    """The nvcc to use: `explicit`, else $NVCC, PATH, /usr/local/cuda, the PyPI wheel."""
    for cand in (explicit, os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc", wheel_nvcc()):
        if cand and (Path(cand).is_file() or shutil.which(cand)):
            return cand
    if explicit:
        raise KeetError(f"nvcc not found at {explicit}")
    raise KeetError("nvcc not found (put it on PATH, set NVCC, pass --nvcc, or pip install nvidia-cuda-nvcc)")
