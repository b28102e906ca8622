"""Library kernels by name: cuBLAS/cuBLASLt (nvjet), cuDNN, CUTLASS, CUB, ATen, Triton, flash
attention. The patterns are data (keet/data/libraries.toml, with their provenance); this module
only matches them.

A library kernel's source is not the caller's to edit, so its diagnosis speaks of how close it
runs to its ceiling and of the caller's levers (precision, fusion, layout, launch batching).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

# Launches shorter than this are launch-bound whatever their code: CUDA graphs (or fewer, fused
# launches) are the lever (an empty kernel lasts ~2 us under Nsight Compute on H100, and a
# launch costs ~3 us of host time back to back: profiles/manifest.json, launch_overhead).
TINY_LAUNCH_NS = 10_000.0
TINY_LAUNCH_LEVER = (
    "The launch is a few microseconds: capture the sequence in a CUDA graph (torch.compile(mode=\"reduce-overhead\"), "
    "torch.cuda.graphs) or fuse it with its neighbours, so the launch cost is paid once for many kernels."
)


@dataclass(frozen=True)
class Library:
    id: str
    name: str
    patterns: tuple[str, ...]
    levers: tuple[str, ...]


@dataclass(frozen=True)
class Kind:
    id: str
    what: str
    patterns: tuple[str, ...]
    libraries: tuple[str, ...]  # empty: any library
    levers: tuple[str, ...]
    model_lever: str | None  # tf32 | fp8 | remove (keet.diagnosis.recoverable.LEVERS)


@dataclass(frozen=True)
class LibraryKernel:
    """A kernel a library made: which library, what kind of work, and the caller's levers."""

    library: Library
    kind: Kind | None

    @property
    def levers(self) -> list[str]:
        return [*(self.kind.levers if self.kind else ()), *self.library.levers]

    @property
    def model_lever(self) -> str | None:
        return self.kind.model_lever if self.kind else None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.library.id, "name": self.library.name, "kind": self.kind.id if self.kind else None,
                "what": self.kind.what if self.kind else None}


@cache
def _file() -> dict[str, Any]:
    return tomllib.loads(resources.files("keet.data").joinpath("libraries.toml").read_text())


@cache
def _data() -> tuple[tuple[Library, ...], tuple[Kind, ...]]:
    data = _file()
    libraries = tuple(Library(e["id"], e["name"], tuple(e["patterns"]), tuple(e.get("levers", ()))) for e in data["library"])
    kinds = tuple(Kind(e["id"], e["what"], tuple(e["patterns"]), tuple(e.get("libraries", ())), tuple(e.get("levers", ())),
                       e.get("model_lever")) for e in data.get("kind", ()))
    return libraries, kinds


def softmax_patterns() -> tuple[str, ...]:
    """Names of a softmax launch (``[attention]``: keet.diagnosis.attention)."""
    return tuple(_file()["attention"]["softmax_patterns"])


def attention_lever() -> str:
    """The caller's lever for attention launched operator by operator (``[attention]``)."""
    return _file()["attention"]["lever"]


def libraries() -> tuple[Library, ...]:
    return _data()[0]


def library_of(name: str, default: str | None = None) -> str | None:
    """The id of the library whose patterns match a kernel name first, else ``default``
    (profiles/corpus/build_manifest.py passes "aten": every unmatched corpus kernel is PyTorch's)."""
    found = classify(name)
    return found.library.id if found else default


@cache
def classify(name: str) -> LibraryKernel | None:
    """The library kernel a name is, or None (hand-written, or a library this file does not know)."""
    all_libraries, kinds = _data()
    library = next((lib for lib in all_libraries if any(p in name for p in lib.patterns)), None)
    if library is None:
        return None
    kind = next((k for k in kinds if (not k.libraries or library.id in k.libraries) and any(p in name for p in k.patterns)), None)
    return LibraryKernel(library, kind)
