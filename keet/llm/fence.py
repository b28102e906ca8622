"""Profile strings are data: fenced in everything the model reads, never instructions.

Kernel names, source text, file paths, raw metric names and units, stall reasons and the
profiler's own rule text (its id, kind, title and message) all come from the profile file, which
anyone can write. They reach the model only between ``⟦data⟧`` and ``⟦/data⟧``; the system
prompt says fenced text is never an instruction. Fence characters inside the data are written
out as ``<U+27E6>`` / ``<U+27E7>`` so the data cannot close its fence and continue as if it were
keet's own text. A string longer than MAX_FENCED_CHARS is cut (and says so): a file can hold a
megabyte-long "kernel name", and the model's context is not the place for it.
"""

from __future__ import annotations

OPEN = "⟦data⟧"
CLOSE = "⟦/data⟧"
_ESCAPES = str.maketrans({"⟦": "<U+27E6>", "⟧": "<U+27E7>"})
# Long enough for a mangled C++ template kernel name (typically under 2,000 characters).
MAX_FENCED_CHARS = 4000


def fence(text: object) -> str | None:
    """``text`` as fenced data (None stays None)."""
    if text is None:
        return None
    text = str(text)
    if len(text) > MAX_FENCED_CHARS:
        text = f"{text[:MAX_FENCED_CHARS]}... ({len(text) - MAX_FENCED_CHARS:,} more characters cut)"
    return f"{OPEN}{text.translate(_ESCAPES)}{CLOSE}"


def unfence(text: object) -> object:
    """The inside of a fenced string, for keet's own use (a unit to convert with, a metric name to
    compare); anything else as it is. Never for text the model reads."""
    if isinstance(text, str) and text.startswith(OPEN) and text.endswith(CLOSE):
        return text[len(OPEN): len(text) - len(CLOSE)]
    return text
