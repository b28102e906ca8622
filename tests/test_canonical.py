"""Units and the canonical vocabulary: conversion, formulas, and the generated docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from keet import canonical
from keet.units import to_base

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "value, unit, expected",
    [
        (1.5, "Kbyte", (1500.0, "byte")),
        (2.0, "Mbyte", (2e6, "byte")),
        (3.0, "usecond", (3000.0, "ns")),
        (4.0, "msecond", (4e6, "ns")),
        (1.98, "Ghz", (1.98e9, "hz")),
        (2.97, "Tbyte/second", (2.97e12, "byte/second")),
        (1.2, "cycle/nsecond", (1.2e9, "cycle/second")),
        (7.0, "ns", (7.0, "ns")),
        (50.0, "%", (50.0, "%")),
        (32.0, "register/thread", (32.0, "register/thread")),
        (3.0, "Msector", (3e6, "sector")),
    ],
)
def test_units_to_base(value, unit, expected):
    converted = to_base(value, unit)
    assert converted[1] == expected[1]
    assert converted[0] == pytest.approx(expected[0])


def test_unknown_units_pass_through():
    assert to_base(5.0, "mbyte") == (5.0, "mbyte")  # never read a lower-case m as milli-byte
    assert to_base(5.0, "furlong") == (5.0, "furlong")


def test_vocabulary_names_unique_and_documented():
    names = [m.name for m in canonical.vocabulary()]
    assert len(names) == len(set(names))
    assert all(m.meaning and (m.ncu or m.ncu_labels) for m in canonical.vocabulary())


def test_docs_metrics_md_is_generated_from_the_vocabulary():
    assert (ROOT / "docs" / "metrics.md").read_text() == canonical.markdown()


def test_derive_prefers_first_alternative_and_converts_units():
    raw = {
        "gpu__time_duration.sum": (12.5, "usecond"),
        "dram__bytes_read.sum": (1.0, "Mbyte"),
        "dram__bytes_write.sum": (500.0, "Kbyte"),
        "smsp__cycles_elapsed.avg.per_second": (1.755, "Ghz"),
        "sm__cycles_elapsed.avg.per_second": (9.0, "Ghz"),
    }
    derived = {name: (value, unit) for name, value, unit in canonical.derive(raw)}
    assert derived["duration"] == (12500.0, "ns")
    assert derived["dram.bytes"][0] == pytest.approx(1.5e6)
    assert derived["sm_clock"][0] == pytest.approx(1.755e9)


def test_derive_from_details_labels():
    raw = {"GPU Speed Of Light Throughput / Duration": (21.06, "msecond"), "Occupancy / Achieved Occupancy": (96.26, "%")}
    derived = {name: value for name, value, _ in canonical.derive(raw)}
    assert derived["duration"] == pytest.approx(21.06e6)
    assert derived["occupancy.achieved_pct"] == pytest.approx(96.26)


def test_ratio_with_zero_denominator_is_absent():
    raw = {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": (0.0, "sector"), "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": (0.0, "request")}
    derived = {name for name, _, _ in canonical.derive(raw)}
    assert "global.load_sectors_per_request" not in derived
    assert "global.load_sectors" in derived


def test_flop_formula_counts_fma_twice():
    raw = {
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": (10.0, "inst"),
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": (20.0, "inst"),
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": (30.0, "inst"),
    }
    derived = {name: value for name, value, _ in canonical.derive(raw)}
    assert derived["flop.fp32"] == 90.0
