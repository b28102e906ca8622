"""Profile strings are data: fenced in everything the model reads, never instructions.

Kernel names, source text, file paths, raw metric names and the profiler's own rule text all
come from the profile file, which anyone can write. They reach the model only between
``⟦data⟧`` and ``⟦/data⟧``; the system prompt says fenced text is never an instruction.
Fence characters inside the data are written out as ``<U+27E6>`` / ``<U+27E7>`` so the data
cannot close its fence and continue as if it were keet's own text.
"""

from __future__ import annotations

OPEN = "⟦data⟧"
CLOSE = "⟦/data⟧"
_ESCAPES = str.maketrans({"⟦": "<U+27E6>", "⟧": "<U+27E7>"})


def fence(text: object) -> str | None:
    """``text`` as fenced data (None stays None)."""
    if text is None:
        return None
    return f"{OPEN}{str(text).translate(_ESCAPES)}{CLOSE}"
