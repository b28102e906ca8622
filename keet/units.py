"""Convert profiler units to the base units the canonical vocabulary uses.

Nsight Compute prints scaled units in CSV exports unless ``--print-units base`` was
given ("Kbyte", "usecond", "Ghz", "Mbyte/second", "cycle/nsecond"); its prefixes are
decimal (1 Kbyte = 1000 bytes). Reports (.ncu-rep) already store base units, but name
some of them differently ("ns" rather than "nsecond").
"""

from __future__ import annotations

import re
from functools import cache

_PREFIX = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}

# Base quantity names, with the factor that turns one of them into the base unit.
_BASE = {
    "second": ("ns", 1e9),
    "sec": ("ns", 1e9),
    "s": ("ns", 1e9),
    "byte": ("byte", 1.0),
    "hz": ("hz", 1.0),
    "cycle": ("cycle", 1.0),
    "inst": ("inst", 1.0),
    "sector": ("sector", 1.0),
    "request": ("request", 1.0),
    "warp": ("warp", 1.0),
    "thread": ("thread", 1.0),
    "block": ("block", 1.0),
    "register": ("register", 1.0),
    "pass": ("pass", 1.0),
    "wavefront": ("wavefront", 1.0),
}

_TOKEN = re.compile(r"^(n|u|m|K|k|M|G|T|P)?(second|sec|byte|hz|cycle|inst|sector|request|warp|thread|block|register|pass|wavefront|s)$", re.IGNORECASE)


@cache
def _parse_token(token: str) -> tuple[str, float] | None:
    if token in ("ns", "nsecond"):
        return "ns", 1.0
    if token in ("us", "usecond"):
        return "ns", 1e3
    if token in ("ms", "msecond"):
        return "ns", 1e6
    match = _TOKEN.match(token)
    if not match:
        return None
    prefix, base = match.group(1) or "", match.group(2).lower()
    if base == "hz" and prefix.lower() in ("k", "m", "g"):
        prefix = prefix.upper()
    if prefix == "m" and base != "second":
        return None  # "mbyte" etc. are never milli; treat as unknown rather than guess
    unit, factor = _BASE[base]
    return unit, factor * _PREFIX[prefix if prefix != "k" else "K"]


def to_base(value: float, unit: str | None) -> tuple[float, str]:
    """Return (value, unit) in base units; unknown units pass through unchanged.

    A rate ``X/Y`` becomes ``base(X)/second`` where Y is time (bytes per second stay
    per second, not per nanosecond) and ``base(X)/base(Y)`` otherwise.
    """
    if not unit:
        return value, unit or ""
    unit = unit.strip()
    if "/" in unit:
        num, _, den = unit.partition("/")
        top = _parse_token(num.strip())
        bottom = _parse_token(den.strip())
        if top is None or bottom is None:
            return value, unit
        (u_num, f_num), (u_den, f_den) = top, bottom
        if u_den == "ns":  # express rates per second
            return value * f_num / (f_den * 1e-9), f"{u_num}/second"
        return value * f_num / f_den, f"{u_num}/{u_den}"
    parsed = _parse_token(unit)
    if parsed is None:
        return value, unit
    base, factor = parsed
    return value * factor, base
