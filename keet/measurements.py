"""The measurement records of a calibration file: what microbench writes (one dict per
measurement, with its benchmark and its statistics) and what perfmodel.fit reads. Standard
library only, and shared so that perfmodel need not import microbench (which only measures)."""

from __future__ import annotations


def accepted(results: list[dict], bench: str) -> list[dict]:
    """The measurements of one benchmark that were not rejected."""
    return [r for r in results if r.get("bench") == bench and not r["stats"]["rejected"]]
