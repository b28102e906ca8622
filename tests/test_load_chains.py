"""Dependent global-load waits from the SASS (perfmodel.load_chains), on the zoo's real H100 report."""

from __future__ import annotations

import pandas as pd
import pytest
import shared_profiles

from perfmodel.features import features
from perfmodel.load_chains import load_waits


@pytest.fixture(scope="module")
def zoo():
    profile = shared_profiles.zoo("h100")
    return {k.name: features(profile, k) for k in profile.kernels if k.name != "tiny_kernel"}


def test_a_pointer_chase_waits_for_every_load(zoo):
    chase = zoo["pointer_chase_kernel"].counts
    assert chase["global_load_waits"] == chase["global_load_requests"]  # each address comes from the load before


def test_independent_loads_of_a_block_are_waited_for_once(zoo):
    saxpy, triad = zoo["small_grid_saxpy_kernel"].counts, zoo["triad_kernel"].counts
    assert saxpy["global_load_waits"] == saxpy["global_load_requests"] / 2  # x[i] and y[i] together
    assert triad["global_load_waits"] == triad["global_load_requests"] / 2
    naive = zoo["sgemm_naive_kernel"].counts  # the unrolled k loop's A and B loads issue together
    assert naive["global_load_waits"] < naive["global_load_requests"] / 8


def sass_table(lines: list[str], executed: float = 10.0) -> tuple[pd.DataFrame, dict[int, str]]:
    pcs = [16 * i for i in range(len(lines))]
    loads = [line.split()[0].startswith("LDG") for line in lines]
    frame = pd.DataFrame({"pc": pcs, "inst_executed": executed, "memory_access_type": [2.0 if x else 0.0 for x in loads],
                          "memory_type": [4.0 if x else 0.0 for x in loads]})
    return frame, dict(zip(pcs, lines))


def test_a_chain_through_arithmetic_counts_as_dependent():
    frame, sass = sass_table(["LDG.E R2, desc[UR4][R4.64] ;", "IMAD.WIDE R6, R2, 0x4, R8 ;", "LDG.E R10, desc[UR4][R6.64] ;",
                              "LDG.E R11, desc[UR4][R12.64] ;"])
    assert load_waits(frame, lambda pcs: {pc: sass[pc] for pc in pcs}) == 10.0 * 2  # the index, then the value it indexes; R12's load is independent


def test_without_the_sass_there_is_no_answer():
    frame, _ = sass_table(["LDG.E R2, desc[UR4][R4.64] ;", "LDG.E R3, desc[UR4][R2.64] ;"])
    assert load_waits(frame, dict.fromkeys) is None
    one, _ = sass_table(["LDG.E R2, desc[UR4][R4.64] ;"])
    assert load_waits(one, dict.fromkeys) == 10.0  # a lone load is one wait: nothing to trace
    assert load_waits(frame.drop(columns=["memory_type"]), dict.fromkeys) is None
