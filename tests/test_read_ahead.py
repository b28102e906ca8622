"""Reading a report's per-instruction counters with its metrics (``load_profile(path,
read_ahead=...)``, keet/ingest/ncu_rep.py): the same answers as reading them later, in one pass
per action, with the SASS read once per code and no file:line sought where a code has none."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import shared_profiles

from keet import load_profile
from keet.diagnosis import read_ahead
from keet.explain import explain, to_json
from keet.ingest import ncu_rep, ncu_rep_native
from perfmodel.load_chains import LOAD_CHAIN_COLUMNS, sass_needed

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "profiles" / "h100" / "zoo_all.ncu-rep.xz"  # 34 launches of 32 functions, built with -lineinfo


@pytest.fixture(scope="module")
def zoo_read_ahead():
    return shared_profiles.zoo("h100")  # loaded with read_ahead()


@pytest.mark.slow  # reads and explains the combined zoo report a second way (4 s); the next tests keep read-ahead in the default tier
def test_read_ahead_explains_as_reading_later(zoo_read_ahead):
    assert to_json(explain(zoo_read_ahead)) == to_json(explain(load_profile(ZOO)))


def test_read_ahead_leaves_no_source_read_for_later(zoo_read_ahead, monkeypatch):
    native = zoo_read_ahead.releaser.__self__
    asked: list[str] = []
    submit = native.submit
    monkeypatch.setattr(native, "submit", lambda slot, function, *args: asked.append(function.__name__) or submit(slot, function, *args))
    explain(zoo_read_ahead)
    assert not asked, asked
    # the SASS of every function whose load chains need it was read ahead (in one worker), of no other
    needing = {native.code[k.attributes["ncu_range"], k.attributes["ncu_action"]] for k in zoo_read_ahead.kernels
               if (s := k.source_columns(LOAD_CHAIN_COLUMNS)) is not None and sass_needed(s.instructions)}
    assert needing and set(native._sass_read) == needing and set(native._sass_read.values()) == {0}


def _read_ahead_of(path: Path, unlocated: frozenset = frozenset(), launch: int = 2) -> list:
    """One launch read ahead (the zoo's third: the triad, whose two loads need their SASS)."""
    profile = load_profile(path)
    native = profile.releaser.__self__
    positions = native.call(0, ncu_rep._positions)
    return native.call(0, ncu_rep._read_actions, positions[launch:launch + 1], None, read_ahead(), unlocated)


def test_a_code_without_file_line_is_learnt_and_not_located_again():
    request = read_ahead()
    (lined,) = _read_ahead_of(ZOO)
    (source, _), errors = lined.ahead
    assert not errors and source[0]["file"].notna().any()
    native, unlocated = _Native(), set()
    ncu_rep._learn(lined, request, native, unlocated)
    assert not unlocated  # a kernel built with -lineinfo is located
    assert [code for _, code, _ in native.sass] == [ncu_rep._code_of(lined)]  # and its SASS read ahead
    (first,) = _read_ahead_of(ZOO, launch=0)  # an atomic kernel: no two loads in a block, no SASS to read
    ncu_rep._learn(first, request, empty := _Native(), set())
    assert empty.sass == []

    # the same counters as a library built without -lineinfo gives them: no file:line anywhere
    frame, _, base = source
    lineless = dataclasses.replace(lined, ahead=(((frame.assign(file=None, line=None), {}, base), {}), None))
    ncu_rep._learn(lineless, request, _Native(), unlocated)
    assert unlocated == {ncu_rep._code_of(lined)}

    (told,) = _read_ahead_of(ZOO, frozenset({ncu_rep._code_of(lined)}))
    (source, _), _ = told.ahead
    assert source[0]["file"].isna().all() and source[0].drop(columns=["file", "line"]).equals(lined.ahead[0][0][0].drop(columns=["file", "line"]))


class _Native:
    """Records the SASS reads _learn starts (a stand-in for NativeReport.read_sass_ahead)."""

    def __init__(self) -> None:
        self.sass: list = []

    def read_sass_ahead(self, position, code, addresses) -> None:
        self.sass.append((position, code, addresses))


def test_a_worker_reads_one_code_through_its_first_launch(zoo_read_ahead):
    native = zoo_read_ahead.releaser.__self__
    launches: dict = {}
    for position, code in native.code.items():
        launches.setdefault(code, []).append(position)
    code, repeated = next((code, positions) for code, positions in launches.items() if len(positions) > 1)
    later_first = list(reversed(repeated))
    assert native.call(0, _code_read_through, later_first, code) == (later_first[0], True)


def _code_read_through(report: str, positions: list[tuple[int, int]], code) -> tuple[tuple[int, int], bool]:
    """In a worker: the launch through which it reads the code of these launches, asked in this
    order, and whether all of them were read through that one action."""
    ncu_rep_native._CODE.pop((report, code), None)
    actions = [ncu_rep_native.code_action(report, position, code) for position in positions]
    return ncu_rep_native._CODE[report, code], all(action is actions[0] for action in actions)


def test_the_sass_worker_starts_its_disassembler_first(monkeypatch):
    """Read ahead on two or more workers, slot 0's first task only starts the disassembler
    (~0.4 s) while the others read the actions, and every SASS read goes there. (Whether it then
    reads actions too depends on whether it was asked for SASS by the time it is free.)"""
    asked: list[tuple[int, str]] = []
    submit = ncu_rep_native.NativeReport.submit

    def recording(self, slot, function, *args):
        asked.append((slot, function.__name__))
        return submit(self, slot, function, *args)

    monkeypatch.setattr(ncu_rep_native.NativeReport, "submit", recording)
    profile = load_profile(ZOO, read_ahead=read_ahead())
    if len(profile.releaser.__self__._pools) < 2:
        pytest.skip("one worker reads both the actions and the SASS")
    assert next(name for slot, name in asked if slot == 0 and name != "_positions") == "_start_disassembler"
    assert {slot for slot, name in asked if name == "_sass_in_worker"} == {0}
    assert any(slot != 0 and name == "_read_actions" for slot, name in asked)
