"""keet: explain GPU kernel profiles.

Library API (the CLI is a thin layer over it)::

    from keet import load_profile
    profile = load_profile("profiles/h100/dram_triad.ncu-rep")
    profile.kernel_table()
    profile.metrics.query("origin == 'canonical'")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it, imported on first access (PEP 562). Importing the
# package itself loads nothing else: perfmodel, microbench's runner (on a GPU machine's bare
# python3) and every rule import keet.errors, and must not pay for pandas and the readers.
_EXPORTS = {
    "KeetError": "keet.errors",
    "ProfileError": "keet.errors",
    "detect": "keet.ingest",
    "load_profile": "keet.ingest",
    "Device": "keet.profile",
    "Kernel": "keet.profile",
    "Profile": "keet.profile",
    "RuleResult": "keet.profile",
    "SourceCounters": "keet.profile",
}

if TYPE_CHECKING:
    from keet.errors import KeetError, ProfileError
    from keet.ingest import detect, load_profile
    from keet.profile import Device, Kernel, Profile, RuleResult, SourceCounters


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'keet' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = ["Device", "KeetError", "Kernel", "Profile", "ProfileError", "RuleResult", "SourceCounters", "detect", "load_profile"]
