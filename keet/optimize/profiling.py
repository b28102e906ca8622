"""Profile a candidate with Nsight Compute and explain it with keet's rules.

The report is read with ncu_report when that module is importable, else through
`ncu --import X.ncu-rep --csv --page raw` (every metric; the details page lacks
the memory tables the rules need) and keet's CSV reader (the GPU machines have
ncu but not the ncu_report Python module).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keet.optimize.harness import write_plan
from keet.optimize.problem import Problem
from keet.sandbox import Isolation, Limits, read_left_file, run_limited, write_fresh

PROFILE_LIMITS = Limits(wall_seconds=300.0, memory_bytes=32 << 30, output_bytes=1 << 30, log_bytes=64 << 20)


@dataclass
class ProfileResult:
    ok: bool
    detail: str
    report: Path | None = None
    explanation: dict[str, Any] | None = None
    text: str = ""
    categories: list[str] = field(default_factory=list)


def find_ncu() -> str | None:
    for candidate in (os.environ.get("NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _isolation(work_dir: Path, ncu: str, inputs_dir: Path | None, sandbox: bool) -> Isolation | None:
    """ncu runs the candidate, so it runs in the candidate's sandbox (its folder writable, the
    inputs and ncu's own folder readable, the GPU's nodes present)."""
    if not sandbox:
        return None
    readable = (Path(ncu).resolve().parent, *((inputs_dir.resolve(),) if inputs_dir else ()))
    return Isolation((work_dir.resolve(),), readable, gpu=True)


def explain_report(report: Path, csv_path: Path, ncu: str | None, sandbox: bool = True) -> tuple[dict[str, Any], str]:
    """keet's explanation document and text for the profile's (one) kernel."""
    from keet.explain import explain, to_text
    from keet.ingest import load_profile

    if importlib.util.find_spec("ncu_report") is not None:
        profile = load_profile(report)
    else:
        if ncu is None:
            raise RuntimeError("neither ncu_report nor ncu is available to read the report")
        exported = run_limited([ncu, "--import", str(report.resolve()), "--csv", "--page", "raw"], csv_path.parent, PROFILE_LIMITS,
                               isolation=_isolation(csv_path.parent, ncu, None, sandbox))
        if not exported.ok:
            raise RuntimeError(f"ncu --import failed: {exported.summary()}: {exported.stderr.strip()[-300:]}")
        write_fresh(csv_path, exported.stdout.encode())
        profile = load_profile(csv_path)
    document = explain(profile)
    return document, to_text(document)


def categories_of(document: dict[str, Any]) -> list[str]:
    """The finding categories of the first (longest) kernel, largest impact first."""
    kernels = document.get("kernels") or []
    return [f["category"] for f in kernels[0]["diagnosis"]] if kernels else []


def profile_candidate(executable: Path, problem: Problem, inputs_dir: Path, work_dir: Path, kernel: str,
                      sandbox: bool = True) -> ProfileResult:
    """One profiled launch at the timing shape (in the candidate's sandbox unless ``sandbox``
    is False), then the explanation."""
    ncu = find_ncu()
    if ncu is None:
        return ProfileResult(False, "ncu not found: not profiled")
    plan = write_plan(problem, inputs_dir, work_dir, mode="profile")
    report = work_dir / "profile.ncu-rep"
    command = [
        ncu, "--set", "full", "--import-source", "yes", "--kernel-name-base", "function", "--kernel-name", f"regex:^{kernel}$",
        "--launch-count", "1", "--force-overwrite", "--export", str(report.resolve()), str(executable.resolve()), str(plan.resolve()),
    ]
    result = run_limited(command, work_dir, PROFILE_LIMITS, isolation=_isolation(work_dir, ncu, inputs_dir, sandbox))
    # the candidate ran in this folder: keep the report only as a regular file, re-written by keet
    data = read_left_file(report, PROFILE_LIMITS.output_bytes) if result.ok else None
    if data is None:
        return ProfileResult(False, f"ncu failed ({result.summary()}): {(result.stdout + result.stderr).strip()[-400:]}")
    write_fresh(report, data)
    try:
        document, text = explain_report(report, work_dir / "profile.csv", ncu, sandbox)
    except Exception as exc:  # noqa: BLE001 - a report keet cannot read is recorded, not fatal to the loop
        return ProfileResult(False, f"profiled, but the explanation failed: {type(exc).__name__}: {exc}", report)
    return ProfileResult(True, "profiled and explained", report, document, text, categories_of(document))


def explain_existing(report: Path) -> ProfileResult:
    """The explanation of a profile recorded earlier (any format keet reads, .xz included)."""
    from keet.diagnosis import read_ahead
    from keet.explain import explain, to_text
    from keet.ingest import load_profile

    try:
        document = explain(load_profile(report, read_ahead=read_ahead()))
    except Exception as exc:  # noqa: BLE001 - recorded in the run, like a failed profile
        return ProfileResult(False, f"the given profile could not be explained: {type(exc).__name__}: {exc}")
    return ProfileResult(True, f"explained the given profile {report}", report, document, to_text(document), categories_of(document))
