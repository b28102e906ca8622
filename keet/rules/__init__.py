"""Diagnosis rules: one small module per rule, registered on import (see base.py)."""

from __future__ import annotations

import importlib
import pkgutil

from keet.rules.base import (
    CATEGORIES,
    RULES,
    Evidence,
    Finding,
    KernelView,
    Rule,
    SourceLine,
    rule,
)

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

# AMD rules (amd_*.py) are registered apart, in AMD_RULES
from keet.rules.amd_base import AMD_RULES

__all__ = ["AMD_RULES", "CATEGORIES", "RULES", "Evidence", "Finding", "KernelView", "Rule", "SourceLine", "rule"]
