"""Shared by the tests that check every number of an explanation is evidence."""

from __future__ import annotations

import re

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
SCALES = (1.0, 1e-3, 1e-6, 1e-9, 1e-12, 1e3, 100.0)


def grounded(token: str, candidates: list[float]) -> bool:
    """A printed number matches a candidate value at some power-of-1000 scale, within its rounding."""
    text = token.replace(",", "")
    printed = float(text)
    decimals = len(text.split(".")[1]) if "." in text else 0
    digits = len(text.lstrip("-").replace(".", "").lstrip("0")) or 1
    for value in candidates:
        for scale in SCALES:
            scaled = value * scale
            tolerance = max(0.5 * 10**-decimals, abs(scaled) * 0.5 * 10 ** (1 - digits))
            if abs(scaled - printed) <= tolerance * 1.0001:
                return True
    return False


def explanation_numbers(explanation: str) -> list[str]:
    """The numbers of an explanation, leaving out file:line locations and quoted source text."""
    text = re.sub(r"\S+\.(cu|cuh|h|cpp):\d+", "", explanation)
    text = re.sub(r"`[^`]*`", "", text)
    return NUMBER.findall(text)
