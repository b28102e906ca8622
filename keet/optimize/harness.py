"""Talk to the compiled harness: write its plan and inputs, run it, read back what it wrote.

The plan format and the layout of the files the harness writes are described at the top of
harness/harness.cu. One harness process runs every checked shape (two launches each) and then
the timing case, so a candidate costs one CUDA start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from keet.optimize.problem import DTYPES, Problem, Shape, generate_input
from keet.optimize.sandbox import Limits, SandboxResult, run_limited

GUARD_BYTES = 4096  # harness.cu kGuard
FILL_BYTE = 0x7F  # harness.cu kFill
RUN_LIMITS = Limits(wall_seconds=120.0, memory_bytes=16 << 30, output_bytes=2 << 30)
TIMING_WARMUP = 5
TIMING_REPS = 30
ALTERNATE_SEED_OFFSET = 1_000_003  # the timing shape's alternate inputs: another seed, same distribution


@dataclass
class CaseOutput:
    """What one shape produced: raw output allocations (guards included) per run."""

    label: str
    dims: dict[str, int]
    inputs: list[np.ndarray]
    inputs_after: list[np.ndarray]
    runs: list[list[np.ndarray]] = field(default_factory=list)  # runs[run][output] -> uint8 bytes

    def data(self, run: int, output: int, dtype: str) -> np.ndarray:
        raw = self.runs[run][output]
        return raw[GUARD_BYTES : len(raw) - GUARD_BYTES].view(DTYPES[dtype])

    def guards(self, run: int, output: int) -> tuple[np.ndarray, np.ndarray]:
        raw = self.runs[run][output]
        return raw[:GUARD_BYTES], raw[len(raw) - GUARD_BYTES :]


@dataclass
class HarnessRun:
    process: SandboxResult
    cases: list[CaseOutput]
    times_ms: list[float]
    timed_output: list[np.ndarray]  # timing shape's last output (data only)
    completed: list[str]
    finished: bool
    timed_guard_writes: list[int] = field(default_factory=list)  # per output: guard bytes the timed launches changed


def write_inputs(problem: Problem, shape: Shape, folder: Path) -> list[Path]:
    """Generate this shape's inputs once (they are shared by the reference and all candidates)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in problem.inputs:
        path = folder / f"{spec.name}.bin"
        if not path.exists():
            generate_input(spec, problem.count(spec, shape), shape.seed).tofile(path)
        paths.append(path)
    return paths


def alternate(shape: Shape) -> Shape:
    """The timing shape with other input values: its last timed launch runs on them."""
    return replace(shape, label=f"{shape.label}.alt", seed=shape.seed + ALTERNATE_SEED_OFFSET)


def _case_lines(problem: Problem, shape: Shape, mode: str, input_paths: list[Path], out_dir: Path,
                alternate_paths: list[Path] | None = None) -> list[str]:
    lines = [f"case {shape.label} {mode}", "dims " + " ".join(str(v) for v in problem.dim_values(shape))]
    for index, (spec, path) in enumerate(zip(problem.inputs, input_paths)):
        lines.append(f"in {spec.itemsize} {problem.count(spec, shape)} {path.resolve()}")
        if alternate_paths:
            lines.append(f"alt {alternate_paths[index].resolve()}")
    for spec in problem.outputs:
        lines.append(f"out {spec.itemsize} {problem.count(spec, shape)} {(out_dir / f'{shape.label}.{spec.name}').resolve()}")
    if mode == "time":
        lines.append(f"timing {TIMING_WARMUP} {TIMING_REPS}")
    lines.append("end")
    return lines


def write_plan(problem: Problem, inputs_dir: Path, work_dir: Path, mode: str = "full") -> Path:
    """Plan for a full evaluation (every shape checked, then timed) or a profile launch."""
    out_dir = work_dir / "outputs"
    out_dir.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    if mode == "full":
        for shape in problem.shapes:
            lines += _case_lines(problem, shape, "check", write_inputs(problem, shape, inputs_dir / shape.label), out_dir)
    timing_inputs = write_inputs(problem, problem.timing, inputs_dir / problem.timing.label)
    if mode == "full":
        alternates = write_inputs(problem, alternate(problem.timing), inputs_dir / f"{problem.timing.label}.alt")
        lines += _case_lines(problem, problem.timing, "time", timing_inputs, out_dir, alternates)
    else:
        lines += _case_lines(problem, problem.timing, "profile", timing_inputs, out_dir)
    plan = work_dir / f"plan.{mode}.txt"
    plan.write_text("\n".join(lines) + "\n")
    return plan


def _read_bytes(path: Path) -> np.ndarray | None:
    return np.fromfile(path, dtype=np.uint8) if path.is_file() else None


def read_case(problem: Problem, shape: Shape, inputs_dir: Path, out_dir: Path) -> CaseOutput:
    inputs = [np.fromfile(inputs_dir / shape.label / f"{s.name}.bin", dtype=DTYPES[s.dtype]) for s in problem.inputs]
    after = []
    for spec in problem.inputs:
        raw = _read_bytes(inputs_dir / shape.label / f"{spec.name}.bin.after")
        after.append(raw.view(DTYPES[spec.dtype]) if raw is not None else None)
    case = CaseOutput(shape.label, dict(shape.dims), inputs, after)
    for run in ("run1", "run2"):
        raws = [_read_bytes(out_dir / f"{shape.label}.{spec.name}.{run}") for spec in problem.outputs]
        if all(r is not None for r in raws):
            case.runs.append(raws)
    return case


def parse_times(stdout: str) -> list[float]:
    match = re.search(r"^KEET_TIMES \S+ (.*)$", stdout, re.MULTILINE)
    return [float(v) for v in match.group(1).split()] if match else []


def run_harness(executable: Path, problem: Problem, inputs_dir: Path, work_dir: Path, mode: str = "full") -> HarnessRun:
    """Run ``executable`` on the problem's plan in the sandbox and collect what it wrote."""
    plan = write_plan(problem, inputs_dir, work_dir, mode)
    # the harness writes inputs back next to the shared inputs; keep them per candidate
    for shape in problem.shapes:
        for spec in problem.inputs:
            (inputs_dir / shape.label / f"{spec.name}.bin.after").unlink(missing_ok=True)
    process = run_limited([str(executable.resolve()), str(plan.resolve())], work_dir, RUN_LIMITS)
    completed = re.findall(r"^KEET_CASE_DONE (\S+)$", process.stdout, re.MULTILINE)
    finished = "KEET_HARNESS_DONE" in process.stdout
    out_dir = work_dir / "outputs"
    cases = [read_case(problem, s, inputs_dir, out_dir) for s in problem.shapes if s.label in completed] if mode == "full" else []
    timed, guard_writes = [], []
    for spec in problem.outputs:
        raw = _read_bytes(out_dir / f"{problem.timing.label}.{spec.name}.timed")
        if raw is not None:
            timed.append(raw[GUARD_BYTES : len(raw) - GUARD_BYTES].view(DTYPES[spec.dtype]))
            guards = np.concatenate([raw[:GUARD_BYTES], raw[len(raw) - GUARD_BYTES :]])
            guard_writes.append(int(np.count_nonzero(guards != FILL_BYTE)))
    return HarnessRun(process, cases, parse_times(process.stdout), timed, completed, finished, guard_writes)
