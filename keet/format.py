"""Number formatting shared by the text and markdown renderers, and JSON that is valid JSON."""

from __future__ import annotations

import json
import math
from typing import Any


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


def metric_value(value: float, unit: str) -> str:
    """A metric's value with its unit as the rules' evidence shows it: 87.3%, 1.2 GB, 4,096 sector."""
    if unit == "%":
        return f"{value:.1f}%"
    if unit in ("byte", "byte/second", "hz"):
        return si(value, {"byte": "B", "byte/second": "B/s", "hz": "Hz"}[unit])
    return f"{value:,.4g} {unit}".rstrip() if abs(value) < 1e4 else f"{value:,.0f} {unit}".rstrip()


def dims(value: tuple[int, ...] | list[int] | None) -> str:
    return "n/a" if not value else "(" + ", ".join(str(v) for v in value) + ")"


def finite(value: Any) -> Any:
    """``value`` with every infinite or NaN float (nested in dicts, lists, tuples) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def json_text(document: Any, **options: Any) -> str:
    """``document`` as JSON: non-finite numbers become null, since json.dumps would otherwise
    write Infinity and NaN, which no JSON parser but Python's accepts."""
    return json.dumps(finite(document), allow_nan=False, **options)


def number(value: float | None) -> str:
    """A measured value in full for tables: 138,453,760 rather than 1.38454e+08 (counts are
    exact integers; exponents are hard to compare down a column), small values to 6 digits."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a" if value is None else str(value)
    if abs(value) >= 1e5 or (float(value).is_integer() and abs(value) < 1e18):
        return f"{value:,.0f}"
    return f"{value:,.6g}"


def source_path(path: str) -> str:
    """A source file as shown to a person: its folder and name (/home/alice/zoo/src/k.cu ->
    src/k.cu), not the absolute path of the machine that captured the profile, which means
    nothing on the reader's. The same in every text, markdown and HTML output; JSON keeps the
    path exactly as the profile recorded it."""
    parts = [part for part in str(path).replace("\\", "/").split("/") if part]
    return "/".join(parts[-2:]) if parts else str(path)
