"""The optimize loop's keep/reject decisions, on the candidate results recorded on the H100
(profiles/optimize/h100/*: stages and every timed repetition of each candidate) and on
constructed cases at the edges of the rule (noise, ties, incorrect but fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keet.optimize.loop import Candidate, decide_round
from keet.optimize.stages import StageResult
from keet.optimize.timing import Timing, is_faster, summarize

RUNS = Path(__file__).resolve().parents[1] / "profiles" / "optimize" / "h100"
RECORDED = sorted(p.parent for p in RUNS.glob("*/run.json") if (p.parent / "candidates").is_dir())


def recorded_candidate(folder: Path) -> tuple[Candidate, dict]:
    """A candidate rebuilt from what the run recorded, its decision reset."""
    result = json.loads((folder / "result.json").read_text())
    times = folder / "times.json"
    timing = summarize(json.loads(times.read_text())["times_ms"]) if times.is_file() else None
    candidate = Candidate(result["id"], result["round"], result["label"], result["rationale"], None, result["knobs"],
                          result["defines"], [StageResult(**s) for s in result["stages"]], timing)
    return candidate, result


def test_recorded_runs_are_present() -> None:
    assert {p.name for p in RECORDED} >= {"transpose", "gather", "sgemm", "small_grid", "occupancy_regs"}


@pytest.mark.parametrize("run", RECORDED, ids=lambda p: p.name)
def test_replaying_the_recorded_rounds_gives_the_recorded_decisions(run: Path) -> None:
    summary = json.loads((run / "run.json").read_text())
    rebuilt = [recorded_candidate(run / "candidates" / c["id"]) for c in summary["candidates"]]
    best, baseline_record = rebuilt[0]
    assert baseline_record["status"] == "baseline"
    for round_number in sorted({c.round for c, _ in rebuilt if c.round > 0}):
        round_candidates = [(c, r) for c, r in rebuilt if c.round == round_number]
        winner = decide_round(best, [c for c, _ in round_candidates])
        for candidate, record in round_candidates:
            assert (candidate.status, candidate.reason) == (record["status"], record["reason"]), candidate.id
        best = winner or best
    assert best.id == summary["best"]["id"]
    assert best.timing.median_ms == pytest.approx(summary["best"]["median_ms"], rel=1e-6)


def timed(median: float, spread: float = 0.0, reps: int = 30) -> Timing:
    half = median * spread / 2
    return Timing(median, median - half, median + half, median - half, median + half, reps)


def passing() -> list[StageResult]:
    return [StageResult("static_scan", True), StageResult("build", True), StageResult("mismatch", True)]


def candidate(name: str, timing: Timing | None, stages: list[StageResult] | None = None) -> Candidate:
    return Candidate(name, 1, name, "", None, stages=passing() if stages is None else stages, timing=timing)


BEST = candidate("best", timed(1.0))


def test_fastest_correct_candidate_beyond_noise_is_kept_and_the_others_say_why() -> None:
    fast, faster, same = candidate("fast", timed(0.9)), candidate("faster", timed(0.5)), candidate("same", timed(0.99))
    assert decide_round(BEST, [fast, faster, same]) is faster
    assert faster.status == "kept" and faster.reason.startswith("correct and faster")
    assert fast.status == "rejected" and "faster still" in fast.reason
    assert same.status == "rejected" and same.reason.startswith("not faster beyond noise")


def test_incorrect_candidate_is_rejected_at_its_first_failed_stage_however_fast() -> None:
    wrong = candidate("wrong", timed(0.01), passing()[:2] + [StageResult("partial_work", False, "12 of 1000 elements never written"),
                                                              StageResult("mismatch", False, "later failure")])
    assert decide_round(BEST, [wrong]) is None
    assert wrong.status == "rejected" and wrong.reason == "incorrect: partial_work: 12 of 1000 elements never written"


def test_a_gain_inside_the_measured_noise_does_not_count() -> None:
    # 5% faster, but both timings spread by 8% (interquartile range over median)
    noisy_best = candidate("best", timed(1.0, spread=0.08))
    challenger = candidate("c", timed(0.95, spread=0.08))
    assert decide_round(noisy_best, [challenger]) is None
    assert "needs > 8.0%" in challenger.reason
    # the same gain over a quiet best counts
    assert decide_round(BEST, [candidate("c", timed(0.95, spread=0.01))]) is not None


def test_a_noisy_timing_is_not_trusted_even_when_much_faster() -> None:
    jittery = candidate("jittery", timed(0.5, spread=0.2))
    assert decide_round(BEST, [jittery]) is None
    assert jittery.status == "rejected" and jittery.reason.startswith("timing too noisy")


def test_the_two_percent_floor() -> None:
    assert not is_faster(timed(0.981), timed(1.0))[0]
    assert is_faster(timed(0.979), timed(1.0))[0]


def test_unverified_candidates_are_left_alone() -> None:
    built_only = candidate("built", None)
    built_only.status = "unverified"
    assert decide_round(BEST, [built_only]) is None
    assert built_only.status == "unverified"


def recorded_sources(run: Path) -> dict[str, str]:
    return {p.parent.name: p.read_text() for p in (run / "candidates").glob("*/source.cu")}


def test_run_report_shows_each_gain_with_its_diff() -> None:
    from keet.optimize.report import render_run

    run = RUNS / "sgemm"
    summary = json.loads((run / "run.json").read_text())
    page = render_run(summary, recorded_sources(run), {})
    kept = [c for c in summary["candidates"] if c["status"] == "kept"]
    assert len(kept) == 3
    for candidate in kept:  # each gain's diff names the knob line that changed
        assert f"{candidate['parent']}/source.cu" in page and f"{candidate['id']}/source.cu" in page
    assert "#define TILE 64" in page and "#define THREAD_M 8" in page


def test_run_report_escapes_what_the_candidates_and_models_wrote() -> None:
    from keet.optimize.report import render_run

    run = RUNS / "transpose"
    summary = json.loads((run / "run.json").read_text())
    hostile = '<script>alert("x")</script>'
    summary["candidates"][1]["label"] = hostile
    summary["candidates"][1]["reason"] = hostile
    sources = recorded_sources(run)
    sources["c001"] += f"// {hostile}\n"
    page = render_run(summary, sources, {"c000": hostile})
    assert "<script>" not in page and "&lt;script&gt;" in page
