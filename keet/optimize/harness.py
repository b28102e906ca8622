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
from keet.sandbox import (
    Isolation,
    Limits,
    SandboxResult,
    read_left_file,
    run_limited,
    write_fresh,
)

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


def after_path(out_dir: Path, shape: Shape, name: str) -> Path:
    """Where the harness writes input ``name`` back after the check runs (beside the outputs:
    the shared inputs are read-only to the candidate)."""
    return out_dir / f"{shape.label}.input.{name}.after"


def _case_lines(problem: Problem, shape: Shape, mode: str, input_paths: list[Path], out_dir: Path,
                alternate_paths: list[Path] | None = None) -> list[str]:
    lines = [f"case {shape.label} {mode}", "dims " + " ".join(str(v) for v in problem.dim_values(shape))]
    for index, (spec, path) in enumerate(zip(problem.inputs, input_paths)):
        lines.append(f"in {spec.itemsize} {problem.count(spec, shape)} {path.resolve()}")
        if mode == "check":
            lines.append(f"after {after_path(out_dir, shape, spec.name).resolve()}")
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
    write_fresh(plan, ("\n".join(lines) + "\n").encode())
    return plan


def _read_bytes(path: Path, size: int) -> np.ndarray | None:
    """A file the candidate's process wrote, when it is a regular file of exactly ``size``
    bytes (anything else -- missing, short, a link, a FIFO -- reads as not written)."""
    if path.parent.is_symlink():
        return None
    data = read_left_file(path, size)
    return np.frombuffer(data, dtype=np.uint8).copy() if data is not None and len(data) == size else None


def _output_size(problem: Problem, spec, shape: Shape) -> int:
    return problem.count(spec, shape) * spec.itemsize + 2 * GUARD_BYTES


def read_case(problem: Problem, shape: Shape, inputs_dir: Path, out_dir: Path) -> CaseOutput:
    inputs = [np.fromfile(inputs_dir / shape.label / f"{s.name}.bin", dtype=DTYPES[s.dtype]) for s in problem.inputs]
    after = []
    for spec in problem.inputs:
        raw = _read_bytes(after_path(out_dir, shape, spec.name), problem.count(spec, shape) * spec.itemsize)
        after.append(raw.view(DTYPES[spec.dtype]) if raw is not None else None)
    case = CaseOutput(shape.label, dict(shape.dims), inputs, after)
    for run in ("run1", "run2"):
        raws = [_read_bytes(out_dir / f"{shape.label}.{spec.name}.{run}", _output_size(problem, spec, shape)) for spec in problem.outputs]
        if all(r is not None for r in raws):
            case.runs.append(raws)
    return case


def parse_times(stdout: str) -> list[float]:
    match = re.search(r"^KEET_TIMES \S+ (.*)$", stdout, re.MULTILINE)
    return [float(v) for v in match.group(1).split()] if match else []


def run_harness(executable: Path, problem: Problem, inputs_dir: Path, work_dir: Path, mode: str = "full",
                sandbox: bool = True) -> HarnessRun:
    """Run ``executable`` on the problem's plan (in the sandbox unless ``sandbox`` is False: the
    candidate may write only its work folder, and reads the shared inputs) and collect what
    it wrote."""
    plan = write_plan(problem, inputs_dir, work_dir, mode)
    isolation = Isolation((work_dir.resolve(),), (inputs_dir.resolve(),), gpu=True) if sandbox else None
    process = run_limited([str(executable.resolve()), str(plan.resolve())], work_dir, RUN_LIMITS, isolation=isolation)
    completed = re.findall(r"^KEET_CASE_DONE (\S+)$", process.stdout, re.MULTILINE)
    finished = "KEET_HARNESS_DONE" in process.stdout
    out_dir = work_dir / "outputs"
    cases = [read_case(problem, s, inputs_dir, out_dir) for s in problem.shapes if s.label in completed] if mode == "full" else []
    timed, guard_writes = [], []
    for spec in problem.outputs:
        raw = _read_bytes(out_dir / f"{problem.timing.label}.{spec.name}.timed", _output_size(problem, spec, problem.timing))
        if raw is not None:
            timed.append(raw[GUARD_BYTES : len(raw) - GUARD_BYTES].view(DTYPES[spec.dtype]))
            guards = np.concatenate([raw[:GUARD_BYTES], raw[len(raw) - GUARD_BYTES :]])
            guard_writes.append(int(np.count_nonzero(guards != FILL_BYTE)))
    return HarnessRun(process, cases, parse_times(process.stdout), timed, completed, finished, guard_writes)
