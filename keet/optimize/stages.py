"""Correctness stages: static scan of the source, then checks of what the harness wrote.

Every check here works on numpy arrays (CaseOutput) and source text, so each one is tested
without a GPU on recorded or emulated outputs. Order: static_scan and build (in the loop),
smoke and run (check_process), OUTPUT_CHECKS each over every shape, then timing_output; the
first that fails names why the candidate was rejected.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import numpy as np

from keet.optimize.harness import FILL_BYTE, CaseOutput, HarnessRun
from keet.optimize.problem import Problem

# What a candidate may not do, and why: the harness owns allocation, synchronization and
# timing; a candidate that touches them can fake its time or hide work from the events.
FORBIDDEN = (
    (r"\bcudaEvent\w*", "creates or records CUDA events (the harness times)"),
    (r"\bcuda(Device|Stream|Event|Thread)Synchronize\b", "synchronizes (the harness times and synchronizes)"),
    (r"\bcudaStreamCreate\w*|\bcuStreamCreate\w*", "creates a stream (work could escape the timed stream)"),
    (r"\bcudaGraph\w*", "uses CUDA graphs (work could be captured and replayed outside the timed region)"),
    (r"\bclock64\s*\(|\bclock\s*\(|%globaltimer|%clock64|%clock\b|__nanosleep", "reads or waits on a clock"),
    (r"\bstd::thread\b|\bpthread_\w+|\bstd::async\b|\bfork\s*\(", "starts host threads or processes"),
    (r"\b(std::)?(_?exit|quick_exit|abort|_Exit)\s*\(", "exits the process"),
    (r"\bcuda(Malloc|Free|Memcpy|Memset|HostAlloc|MallocManaged)\w*", "allocates or copies memory (the harness owns buffers)"),
    (r"\bcudaDeviceReset\b|\bcudaSetDevice\b|\bcudaDeviceSetLimit\b", "changes the device state"),
    (r"\bsystem\s*\(|\bpopen\s*\(|\bexec[lv]p?e?\s*\(", "runs other programs"),
    (r"\b(int|void)\s+main\s*\(", "defines main (the harness is the program)"),
    (r"\bfopen\s*\(|\bstd::ofstream\b|\bstd::ifstream\b", "opens files"),
    (r"\bgetenv\s*\(", "reads the environment"),
)
LAUNCH_ENTRY = re.compile(r'extern\s+"C"\s+void\s+launch\s*\(\s*const\s+Problem\s*\*')


@dataclass
class StageResult:
    stage: str
    passed: bool
    detail: str = ""
    shape: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def strip_comments(source: str) -> str:
    """Source without // and /* */ comments (a forbidden word in a comment is harmless).
    String literals are kept: inline PTX such as "mov.u64 %0, %%globaltimer;" lives in one."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.DOTALL)
    return pattern.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", source)


def static_scan(source: str) -> StageResult:
    """Reject sources that could tamper with timing or escape the harness; require the entry."""
    code = strip_comments(source)
    found = []
    for pattern, why in FORBIDDEN:
        match = re.search(pattern, code)
        if match:
            line = code.count("\n", 0, match.start()) + 1
            found.append(f"line {line}: {match.group(0).strip()} ({why})")
    if not LAUNCH_ENTRY.search(code):
        found.append('no `extern "C" void launch(const Problem* p, cudaStream_t stream)` entry point')
    return StageResult("static_scan", not found, "; ".join(found) or "no forbidden calls")


def check_process(run: HarnessRun, problem: Problem) -> list[StageResult]:
    """Smoke (the first shape ran to completion) and run (every case did, the process exited 0)."""
    first = problem.shapes[0].label
    tail = (run.process.stdout + run.process.stderr).strip().splitlines()[-3:]
    why = f"{run.process.summary()}; last output: {' | '.join(tail) or 'none'}"
    if first not in run.completed:
        return [StageResult("smoke", False, f"the first shape did not complete ({why})", first)]
    results = [StageResult("smoke", True, "first shape completed", first)]
    expected = [s.label for s in problem.shapes] + [problem.timing.label]
    missing = [label for label in expected if label not in run.completed]
    if missing or not run.finished or not run.process.ok:
        early = "exited early" if run.process.ok and not run.finished else "failed"
        results.append(StageResult("run", False, f"harness {early}: cases not completed: {', '.join(missing) or 'none'} ({why})"))
    else:
        results.append(StageResult("run", True, "every case completed"))
    return results


def _element_is_fill(raw: np.ndarray, itemsize: int) -> np.ndarray:
    return np.all(raw.reshape(-1, itemsize) == FILL_BYTE, axis=1)


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if got.dtype.kind != "f":
        return got == want
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.abs(g - w) <= atol + rtol * np.abs(w)


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _degenerate(got: np.ndarray, want: np.ndarray, inputs: list[np.ndarray]) -> str | None:
    """Why ``got`` is a degenerate output that the reference is not, or None."""
    if got.size == 0:
        return None
    if got.dtype.kind == "f" and not np.all(np.isfinite(got)) and np.all(np.isfinite(want)):
        bad = ~np.isfinite(got)
        return f"{int(bad.sum())} non-finite values (NaN/inf), first at index {_first(bad)}"
    if not np.any(got) and np.any(want):
        return "every output element is zero"
    if got.size > 1 and np.all(got == got[0]) and not np.all(want == want[0]):
        return f"every output element is the same value ({got[0].item()!r})"
    for index, values in enumerate(inputs):
        copied = values.dtype == got.dtype and values.size >= got.size and got.size > 1 and np.array_equal(got, values[: got.size])
        if copied and not np.array_equal(want, values[: want.size]):
            return f"the output is a copy of input {index}"
    return None


def _describe(case: CaseOutput) -> str:
    return f"{case.label} ({', '.join(f'{k}={v}' for k, v in case.dims.items())})"


def check_guards(problem: Problem, case: CaseOutput, reference: CaseOutput, index: int) -> tuple[str, str | None]:
    for run in range(len(case.runs)):
        for side, guard in zip(("before", "after"), case.guards(run, index)):
            touched = guard != FILL_BYTE
            if np.any(touched):
                return "out_of_bounds", f"run {run + 1} wrote {int(touched.sum())} guard bytes {side} the buffer (first at guard byte {_first(touched)})"
    return "out_of_bounds", None


def check_inputs(problem: Problem, case: CaseOutput, reference: CaseOutput, index: int) -> tuple[str, str | None]:
    for spec, given, after in zip(problem.inputs, case.inputs, case.inputs_after):
        if after is not None and not np.array_equal(given.view(np.uint8), after.view(np.uint8)):
            return "inputs_modified", f"input {spec.name} was changed by the candidate"
    return "inputs_modified", None


def check_written(problem: Problem, case: CaseOutput, reference: CaseOutput, index: int) -> tuple[str, str | None]:
    spec = problem.outputs[index]
    got, want = case.data(0, index, spec.dtype), reference.data(0, index, spec.dtype)
    unwritten = _element_is_fill(got.view(np.uint8), spec.itemsize) & ~_element_is_fill(want.view(np.uint8), spec.itemsize)
    if np.any(unwritten):
        return "partial_work", f"{int(unwritten.sum())} of {got.size} elements never written (first at index {_first(unwritten)})"
    return "partial_work", None


def check_degenerate(problem: Problem, case: CaseOutput, reference: CaseOutput, index: int) -> tuple[str, str | None]:
    spec = problem.outputs[index]
    return "degenerate_output", _degenerate(case.data(0, index, spec.dtype), reference.data(0, index, spec.dtype), case.inputs)


def check_values(problem: Problem, case: CaseOutput, reference: CaseOutput, index: int) -> tuple[str, str | None]:
    spec = problem.outputs[index]
    got, want = case.data(0, index, spec.dtype), reference.data(0, index, spec.dtype)
    close = _close(got, want, problem.rtol, problem.atol)
    if np.all(close):
        return "mismatch", None
    first = _first(~close)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64)))
    return "mismatch", (f"{int((~close).sum())} of {got.size} elements outside rtol {problem.rtol:g} atol {problem.atol:g}; "
                        f"first at index {first}: got {got[first].item()!r}, expected {want[first].item()!r}; max abs error {error:.3g}")


def check_repeatable(problem: Problem, case: CaseOutput, reference: CaseOutput, index: int) -> tuple[str, str | None]:
    spec = problem.outputs[index]
    if len(case.runs) < 2:
        return "nondeterministic", "the second run wrote no output"
    first, second = case.data(0, index, spec.dtype), case.data(1, index, spec.dtype)
    differ = np.any(first.view(np.uint8).reshape(-1, spec.itemsize) != second.view(np.uint8).reshape(-1, spec.itemsize), axis=1)
    if problem.deterministic and np.any(differ):
        return "nondeterministic", f"two runs on the same inputs differ in {int(differ.sum())} elements (bitwise equality required)"
    if not np.all(_close(second, reference.data(0, index, spec.dtype), problem.rtol, problem.atol)):
        return "nondeterministic", "the second run on the same inputs is outside the tolerance"
    return "nondeterministic", None


# Run-time checks in stage order; each runs over every shape before the next starts, so a
# constant output is named degenerate even if a one-element shape would only show a mismatch.
OUTPUT_CHECKS = (check_guards, check_inputs, check_written, check_degenerate, check_values, check_repeatable)


def check_timed_output(problem: Problem, candidate: list[np.ndarray], reference: list[np.ndarray], guard_writes: list[int]) -> StageResult:
    """The last timed launch must have computed the right answer by itself (the harness refills
    the outputs before every timed launch): no fast path for big shapes, no work done only in
    warm-up, no writes outside the buffers."""
    if len(candidate) != len(problem.outputs) or len(reference) != len(problem.outputs):
        return StageResult("timing_output", False, "the timing case wrote no output")
    for spec, touched in zip(problem.outputs, guard_writes):
        if touched:
            return StageResult("timing_output", False, f"{spec.name}: the timed launches wrote {touched} guard bytes outside the buffer", problem.timing.label)
    for spec, got, want in zip(problem.outputs, candidate, reference):
        close = _close(got, want, problem.rtol, problem.atol)
        if not np.all(close):
            return StageResult("timing_output", False, f"{spec.name}: {int((~close).sum())} of {got.size} elements of the timed shape are wrong (first at {_first(~close)})", problem.timing.label)
    return StageResult("timing_output", True, "timed shape's output matches the reference", problem.timing.label)


def check_correctness(problem: Problem, run: HarnessRun, reference: HarnessRun) -> list[StageResult]:
    """All run-time stages of one candidate, stage by stage over every shape and output;
    stops at the first failure (the last entry then)."""
    results = check_process(run, problem)
    if not all(r.passed for r in results):
        return results
    reference_cases = {c.label: c for c in reference.cases}
    for check in OUTPUT_CHECKS:
        stage = None
        for case in run.cases:
            for index, spec in enumerate(problem.outputs):
                stage, failure = check(problem, case, reference_cases[case.label], index)
                if failure:
                    results.append(StageResult(stage, False, f"{spec.name}: {failure}", _describe(case)))
                    return results
        results.append(StageResult(stage or check.__name__, True, f"{len(run.cases)} shapes passed"))
    results.append(check_timed_output(problem, run.timed_output, reference.timed_output, run.timed_guard_writes))
    return results


def first_failure(results: list[StageResult]) -> StageResult | None:
    return next((r for r in results if not r.passed), None)
