"""The model's terms, one module each (docs/model.md has the equations). A term reads the launch on
the target GPU (perfmodel.terms.base.Launch) and the hardware parameters it declares in PARAMETERS,
and returns its bounds and overheads; perfmodel.model combines them. Adding a term is adding a
module and a line here."""

from __future__ import annotations

from types import ModuleType

from perfmodel.terms import (
    atomics,
    barrier,
    dram,
    issue,
    l1_shared,
    l2,
    latency,
    launch,
    pipes,
    sm_port,
    tensor,
)

TERMS: dict[str, ModuleType] = {
    "pipes": pipes,
    "issue": issue,
    "tensor": tensor,
    "l1_shared": l1_shared,
    "barrier": barrier,
    "l2": l2,
    "dram": dram,
    "sm_port": sm_port,
    "atomics": atomics,
    "latency": latency,
    "launch": launch,
}


def parameters() -> dict[str, list[str]]:
    """Hardware parameter -> the terms that read it."""
    used: dict[str, list[str]] = {}
    for name, term in TERMS.items():
        for param in term.PARAMETERS:
            used.setdefault(param, []).append(name)
    return used
