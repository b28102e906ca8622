"""Every correctness stage of keet optimize against the planted wrong kernels
(tests/data/optimize/planted/*.cu), without a GPU: the static scan reads the real sources; the
run-time stages read outputs that numpy emulates for each planted kernel in the layout the
harness writes (guard bytes, fill pattern, two runs, inputs written back)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from keet.optimize.harness import FILL_BYTE, GUARD_BYTES, CaseOutput, HarnessRun
from keet.optimize.problem import generate_input, load_problem
from keet.optimize.stages import (
    check_correctness,
    first_failure,
    static_scan,
    strip_comments,
)
from keet.sandbox import SandboxResult

DATA = Path(__file__).parent / "data" / "optimize"
PLANTED = DATA / "planted"
PROBLEM = load_problem(DATA / "problem.toml")
BLOCK = 256


def expected_stage(source: Path) -> str:
    """Each planted file states the stage that must reject it in its second line."""
    line = source.read_text().splitlines()[1]
    assert line.startswith("// expected rejection stage:"), source
    return line.split(":", 1)[1].strip()


def correct(x: np.ndarray) -> np.ndarray:
    return (np.float32(2) * x + np.float32(1)).astype(np.float32)


def wrap(data: np.ndarray, before: bytes = b"", after: bytes = b"") -> np.ndarray:
    """The harness's output allocation: guard | data | guard, guards filled unless overwritten."""
    guard_before = np.full(GUARD_BYTES, FILL_BYTE, np.uint8)
    guard_after = np.full(GUARD_BYTES, FILL_BYTE, np.uint8)
    if before:
        guard_before[GUARD_BYTES - len(before):] = np.frombuffer(before, np.uint8)
    if after:
        guard_after[: len(after)] = np.frombuffer(after, np.uint8)
    return np.concatenate([guard_before, data.view(np.uint8), guard_after])


def unwritten(n: int) -> np.ndarray:
    return np.full(n * 4, FILL_BYTE, np.uint8).view(np.float32)


def emulate(name: str, x: np.ndarray, run: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(output allocation, input after the run or None) of planted kernel ``name``."""
    n = x.size
    if name in ("correct", "tamper_events", "tamper_clock", "early_exit", "warmup_only", "memoize"):
        return wrap(correct(x)), x
    if name == "zeros":
        return wrap(np.zeros(n, np.float32)), x
    if name == "constant":
        return wrap(np.ones(n, np.float32)), x
    if name == "copy_input":
        return wrap(x.copy()), x
    if name == "partial_tail":
        out = unwritten(n)
        whole = n // BLOCK * BLOCK
        out[:whole] = correct(x[:whole])
        return wrap(out), x
    if name == "wrong_shape":
        spill = (-n) % BLOCK  # threads of the last block past n write garbage after the buffer
        return wrap(correct(x), after=np.zeros(spill, np.float32).tobytes()), x
    if name == "out_of_bounds":
        return wrap(correct(x), before=np.zeros(1, np.float32).tobytes()), x
    if name == "inputs_modified":
        return wrap(correct(x)), np.zeros_like(x)
    if name == "nondeterministic":
        out = correct(x) + np.float32(1e-7) * np.float32((run + np.arange(n) // BLOCK) % 7)
        return wrap(out.astype(np.float32)), x
    raise KeyError(name)


def harness_run(name: str | None) -> HarnessRun:
    """What the harness would have written for planted kernel ``name`` (None: the reference)."""
    cases = []
    for shape in PROBLEM.shapes:
        x = generate_input(PROBLEM.inputs[0], shape.dims["n"], shape.seed)
        runs, after = [], x
        for run in range(2):
            allocation, after = emulate(name, x, run) if name else (wrap(correct(x)), x)
            runs.append([allocation])
        cases.append(CaseOutput(shape.label, dict(shape.dims), [x], [after], runs))
    labels = [s.label for s in PROBLEM.shapes] + [PROBLEM.timing.label]
    timed = [correct(generate_input(PROBLEM.inputs[0], 4096, 9))]
    if name == "warmup_only":  # its timed launches skip the work: the refilled output stays unwritten
        timed = [unwritten(4096)]
    if name == "memoize":  # replays the result of the warm-up inputs for the last launch's alternate inputs
        timed = [correct(generate_input(PROBLEM.inputs[0], 4096, 10))]
    process = SandboxResult(["harness"], 0, "\n".join(f"KEET_CASE_DONE {label}" for label in labels) + "\nKEET_HARNESS_DONE\n", "", 1.0)
    return HarnessRun(process, cases, [0.1] * 5, timed, labels, True)


REFERENCE = harness_run(None)
REFERENCE.timed_output = harness_run("correct").timed_output
RUNTIME_PLANTS = sorted(p for p in PLANTED.glob("*.cu") if expected_stage(p) not in ("static_scan", "smoke"))


@pytest.mark.parametrize("source", sorted(PLANTED.glob("*.cu")), ids=lambda p: p.stem)
def test_static_scan_rejects_exactly_the_tampering_plants(source: Path) -> None:
    result = static_scan(source.read_text())
    assert result.passed == (expected_stage(source) != "static_scan"), result.detail


@pytest.mark.parametrize("source", RUNTIME_PLANTS, ids=lambda p: p.stem)
def test_runtime_stage_rejects_each_plant(source: Path) -> None:
    results = check_correctness(PROBLEM, harness_run(source.stem), REFERENCE)
    failure = first_failure(results)
    want = expected_stage(source)
    if want == "none":
        assert failure is None, failure
        assert [r.stage for r in results][-1] == "timing_output"
    else:
        assert failure is not None and failure.stage == want, results[-1]


def test_early_exit_is_caught_at_run_time_when_the_scan_cannot_see_it() -> None:
    """early_exit_hidden exits through a function pointer: the process ends with status 0 but
    without the harness's completion markers."""
    run = harness_run("correct")
    run.process = SandboxResult(["harness"], 0, "", "", 0.5)
    run.completed, run.finished = [], False
    failure = first_failure(check_correctness(PROBLEM, run, REFERENCE))
    assert failure.stage == expected_stage(PLANTED / "early_exit_hidden.cu") == "smoke"


def test_exit_after_the_checked_shapes_is_caught() -> None:
    run = harness_run("correct")
    run.completed = [s.label for s in PROBLEM.shapes]  # the timing case never finished
    run.finished = False
    failure = first_failure(check_correctness(PROBLEM, run, REFERENCE))
    assert failure.stage == "run" and "exited early" in failure.detail


def test_wrong_answer_on_the_timed_shape_only_is_caught() -> None:
    run = harness_run("correct")
    run.timed_output = [np.zeros_like(REFERENCE.timed_output[0])]
    failure = first_failure(check_correctness(PROBLEM, run, REFERENCE))
    assert failure.stage == "timing_output"


def test_writes_outside_the_buffer_in_the_timed_launches_are_caught() -> None:
    run = harness_run("correct")
    run.timed_guard_writes = [4]
    failure = first_failure(check_correctness(PROBLEM, run, REFERENCE))
    assert failure.stage == "timing_output" and "4 guard bytes" in failure.detail


def test_nan_output_is_degenerate() -> None:
    run = harness_run("correct")
    data = run.cases[1].data(0, 0, "float32")
    data[3] = np.nan
    failure = first_failure(check_correctness(PROBLEM, run, REFERENCE))
    assert failure.stage == "degenerate_output" and "non-finite" in failure.detail


def test_tolerance_by_dtype_and_nondeterminism_within_tolerance_when_allowed() -> None:
    relaxed = load_problem(DATA / "problem.toml")
    relaxed.deterministic = False
    results = check_correctness(relaxed, harness_run("nondeterministic"), REFERENCE)
    assert first_failure(results) is None
    assert load_problem(Path(__file__).parents[1] / "profiles/optimize/occupancy_regs/problem.toml").rtol == 0.0
    sgemm = load_problem(Path(__file__).parents[1] / "profiles/optimize/sgemm/problem.toml")
    assert (sgemm.rtol, sgemm.atol) == (1e-4, 1e-4)


@pytest.mark.parametrize(
    "snippet",
    [
        "cudaEventRecord(e, s);",
        "cudaStreamSynchronize(s);",
        'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));',
        "long long t = clock64();",
        "std::thread worker(run);",
        "std::exit(0);",
        "cudaStreamCreate(&mine);",
        "cudaMalloc(&p, 4);",
        "int main() { return 0; }",
    ],
)
def test_static_scan_forbidden_calls(snippet: str) -> None:
    source = f'#include "keet_problem.h"\n{snippet}\nextern "C" void launch(const Problem* p, cudaStream_t stream) {{}}\n'
    assert not static_scan(source).passed


def test_static_scan_ignores_comments_and_requires_the_entry_point() -> None:
    clean = '// never call cudaDeviceSynchronize() or exit(1) here\nextern "C" void launch(const Problem* p, cudaStream_t s) {}\n'
    assert static_scan(clean).passed
    assert "cudaDevice" not in strip_comments(clean)
    assert not static_scan("__global__ void k() {}\n").passed


def test_the_timing_case_alternates_inputs_and_ends_on_values_no_check_saw(tmp_path: Path) -> None:
    from keet.optimize.harness import write_plan
    from keet.optimize.problem import Shape

    problem = load_problem(DATA / "problem.toml")
    problem.timing = Shape("timing", {"n": 4096}, 4)
    lines = write_plan(problem, tmp_path / "inputs", tmp_path / "work").read_text().splitlines()
    timing = lines[lines.index("case timing time"):]
    given, alternate = timing[2].split()[-1], timing[3].split()[1]
    assert timing[2].startswith("in ") and timing[3].startswith("alt ")
    assert Path(given).stat().st_size == Path(alternate).stat().st_size == 4096 * 4
    assert not np.array_equal(np.fromfile(given, np.float32), np.fromfile(alternate, np.float32))
    assert not any(line.startswith("alt ") for line in lines[: lines.index("case timing time")])
