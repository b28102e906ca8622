"""The run folder of `keet optimize`: made fresh for each run, and only ever replaced when keet
made it for the same problem.

keet writes a marker file into every run folder it creates. A later run with the same --out
replaces the folder only when the marker is there and names the same problem; any other
non-empty folder (a user's project with a `reference/` folder, another problem's run, a
folder that holds one of this run's inputs) is refused with one line, and nothing is removed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from keet.errors import KeetError
from keet.outputs import atomic_write_text
from keet.sandbox import read_left_file

MARKER = ".keet-optimize-run"
MARKER_TOOL = "keet optimize"


def _inside(path: Path, folder: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip("/") + "/")


def marked_problem(folder: Path) -> str | None:
    """The problem named by the folder's marker, or None (no marker, or not keet's)."""
    data = read_left_file(folder / MARKER, 1 << 16)
    try:
        marker = json.loads(data) if data is not None else None
    except ValueError:
        return None
    if not isinstance(marker, dict) or marker.get("tool") != MARKER_TOOL:
        return None
    problem = marker.get("problem")
    return problem if isinstance(problem, str) else None


def prepare_run_folder(out: Path, problem: str, inputs: list[Path]) -> None:
    """Make ``out`` an empty run folder for ``problem`` (see the module docstring); KeetError,
    with nothing touched, when it is not keet's to replace."""
    if os.path.lexists(out):
        if out.is_symlink() or not out.is_dir():
            raise KeetError(f"{out}: exists and is not a folder (a file or a link); choose another --out")
        if any(out.iterdir()):
            for source in inputs:
                if _inside(source, out):
                    raise KeetError(f"{out}: holds {source}, an input of this run, and would be replaced; "
                                    "copy the input elsewhere or choose another --out")
            marked = marked_problem(out)
            if marked is None:
                raise KeetError(f"{out}: exists and is not a keet optimize run folder (no {MARKER} marker); "
                                "keet replaces only its own run folders: choose another --out")
            if marked != problem:
                raise KeetError(f"{out}: holds a run of problem {marked!r}, not {problem!r}; choose another --out")
            shutil.rmtree(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KeetError(f"{out}: cannot create the run folder: {exc.strerror or exc}") from None
    atomic_write_text(out / MARKER, json.dumps({"tool": MARKER_TOOL, "problem": problem}) + "\n")
