"""Reports for every profile under a folder, as CI makes them:

    python -m keet.report.batch profiles reports

One report per profile file (or profiler workload folder), at the same relative path under
the output folder; one comparison report for each set of profiles that share a relative path
under different top-level folders (profiles/h100/ncu/x.ncu-rep.xz with profiles/h200/ncu/
x.ncu-rep.xz: the same kernels on two GPUs); an index.html linking them all. Every report is
checked with keet.report.check: the command fails (status 1) when a report lacks a section
its profile can fill.

One bad profile does not stop the batch: each failure (an unreadable or hostile file, a FIFO
or device where a profile file is expected, any error while building its report) is one line
on stderr, the other reports and the index are still written, and the status is 1 at the end.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from keet.cli_runner import run_cli
from keet.errors import KeetError, ProfileError
from keet.ingest import detect, limits
from keet.report.assemble import write_report
from keet.report.check import missing_sections
from keet.report.page import render_index
from keet.safe_text import terminal

PROFILE_SUFFIXES = (".xz", ".gz", ".ncu-rep", ".csv", ".db", ".json", ".sqlite")


def find_profiles(root: Path, refused: list[str] | None = None) -> list[Path]:
    """Profile files and workload folders under root, in path order (formats are recognised
    by content; other files are skipped).

    A path named like a profile that is no regular file (a FIFO, whose open would block; a
    device) or is beyond keet's size bound is not opened: it is added to ``refused`` as the
    one-line error that says so.
    """
    found: list[Path] = []
    for path in sorted(root.rglob("*")):
        if any(parent in found for parent in path.parents):
            continue  # inside a workload folder already taken whole
        if path.is_dir() or path.name.endswith(PROFILE_SUFFIXES):
            try:
                if not path.is_dir():
                    limits.regular_file(path)
            except ProfileError as exc:
                if refused is not None:
                    refused.append(str(exc))
                continue
            try:
                detect(path)
            except ProfileError:
                continue
            found.append(path)
    return found


def report_name(relative: Path) -> Path:
    """x/y/z.ncu-rep.xz -> x/y/z.html"""
    name = relative.name
    for suffix in PROFILE_SUFFIXES:
        name = name.removesuffix(suffix)
    return relative.with_name(name + ".html")


def comparison_sets(root: Path, profiles: list[Path]) -> dict[Path, list[Path]]:
    """Profiles sharing a path below their top-level folder: {shared path: [profiles]}."""
    groups: dict[Path, list[Path]] = {}
    for path in profiles:
        parts = path.relative_to(root).parts
        if len(parts) > 1:
            groups.setdefault(Path(*parts[1:]), []).append(path)
    return {shared: paths for shared, paths in groups.items() if len(paths) > 1}


def _write(paths: list[Path], out: Path, title: str) -> tuple[list[str], int]:
    report = write_report(paths, out, title)
    profiles = [p.profile for p in report.profiles]
    return missing_sections(profiles, out.read_text(encoding="utf-8")), sum(len(p.kernels) for p in profiles)


@click.command()
@click.argument("root", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
def main(root: Path, out: Path) -> None:
    """Write a report for every profile under ROOT (and a comparison for profiles of the same
    name under different top-level folders) into OUT, check them, and write OUT/index.html."""
    problems: list[str] = []
    profiles = find_profiles(root, refused=problems)
    if not profiles:
        raise click.ClickException(" ".join([f"no profiles under {root}", *problems]))
    jobs = [([p], out / report_name(p.relative_to(root)), str(p.relative_to(root))) for p in profiles]
    for shared, paths in sorted(comparison_sets(root, profiles).items()):
        tops = [p.relative_to(root).parts[0] for p in paths]
        jobs.append((paths, out / "compare" / report_name(shared).with_name(f"{report_name(shared).stem}_{'_vs_'.join(tops)}.html"),
                     f"{shared}: {' vs '.join(tops)}"))
    out.mkdir(parents=True, exist_ok=True)
    written: list[tuple[str, str, int]] = []
    start = time.monotonic()
    for number, (paths, target, title) in enumerate(jobs, 1):
        began = time.monotonic()
        try:
            missing, kernels = _write(paths, target, title)
        except KeetError as exc:
            problems.append(f"{title}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - one profile's bug must not cost the other reports
            problems.append(f"{title}: internal error: {type(exc).__name__}: {exc}")
            continue
        problems += missing
        written.append((title, str(target.relative_to(out)), kernels))
        click.echo(f"[{number}/{len(jobs)}] {terminal(target.relative_to(out))}: {kernels} kernel{'s' if kernels != 1 else ''}, {time.monotonic() - began:.1f} s"
                   + (f", {len(missing)} missing sections" if missing else ""))
    (out / "index.html").write_text(render_index(written), encoding="utf-8")
    click.echo(f"{len(written)} reports in {out} ({time.monotonic() - start:.0f} s); index: {out / 'index.html'}")
    if problems:
        click.echo("\n".join(map(terminal, problems)), err=True)  # one line each; they quote file names
        sys.exit(1)


if __name__ == "__main__":
    run_cli(main, "python -m keet.report.batch")
