"""Number formatting shared by the text and markdown renderers."""

from __future__ import annotations


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """A value with an SI prefix: 1.23 GHz, 2.97 TB/s, 14.1 us."""
    if value is None:
        return "n/a"
    if unit == "ns":
        for scale, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
            if abs(value) >= scale:
                return f"{value / scale:.{digits}g} {name}"
        return f"{value:.{digits}g} ns"
    if unit == "%":
        return f"{value:.1f}%"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}".rstrip()
    return f"{value:.{digits}g} {unit}".rstrip()


def dims(value: tuple[int, ...] | list[int] | None) -> str:
    return "n/a" if not value else "(" + ", ".join(str(v) for v in value) + ")"
