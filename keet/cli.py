"""`keet` command line: a thin layer over the library API."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from keet.cli_options import format_option, output_option, progress, text_width
from keet.cli_runner import run_cli
from keet.errors import KeetError
from keet.llm.cli import explain_output, llm_group, llm_options
from keet.optimize.cli import optimize as optimize_command
from keet.outputs import check_output_path

if TYPE_CHECKING:
    from keet.profile import Kernel, Profile

# The readers (pandas), the rules and the explainer are imported inside the commands that use
# them: `keet --help` and `keet optimize` must not pay for them (docs/benchmarks.md).


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="keet")
def cli() -> None:
    """Explain GPU kernel profiles (Nsight Compute, rocprof): what bounds each kernel."""


def _selected(profile: Profile, kernel: str | None) -> list[Kernel]:
    kernels = profile.select(kernel)
    if not kernels:
        raise KeetError(f"{profile.source}: no kernel matches {kernel!r}")
    return kernels


@cli.command()
@click.argument("profile_path", metavar="PROFILE", type=click.Path(dir_okay=True))
@click.option("--kernel", help="Kernel id, exact name, function name or name substring.")
@click.option("--grep", "pattern", help="Only metrics whose name matches this regular expression (case-insensitive).")
@click.option("--origin", type=click.Choice(["all", "canonical", "raw"]), default="all", show_default=True,
              help="Canonical vocabulary, the vendor's raw names, or both.")
@format_option("text", "json", "csv")
def metrics(profile_path: str, kernel: str | None, pattern: str | None, origin: str, fmt: str) -> None:
    """List the metrics of PROFILE, per kernel, in canonical and raw names."""
    from keet.ingest import load_profile

    try:
        regex = re.compile(pattern, re.IGNORECASE) if pattern else None
    except re.error as exc:
        raise click.BadParameter(f"not a regular expression: {exc}", param_hint="--grep") from None
    profile = load_profile(profile_path)
    ids = {k.id for k in _selected(profile, kernel)}
    table = profile.metrics[profile.metrics["kernel"].isin(ids)]
    if origin != "all":
        table = table[table["origin"] == origin]
    if regex is not None:
        table = table[table["metric"].map(lambda name: bool(regex.search(name)))]
    names = {k.id: k.function_name or k.name for k in profile.kernels}
    table = table.assign(kernel_name=table["kernel"].map(names))[["kernel", "kernel_name", "metric", "value", "unit", "origin"]]
    if fmt == "json":
        from keet.format import json_text

        click.echo(json_text({"source": profile.source, "format": profile.format, "metrics": table.to_dict(orient="records")}, indent=1))
    elif fmt == "csv":
        click.echo(table.to_csv(index=False), nl=False)
    elif table.empty:
        click.echo("no metrics match")
    else:
        click.echo("\n".join(_metrics_text(table.to_dict(orient="records"), text_width())))


def _metrics_text(rows: list[dict], width: int) -> list[str]:
    """Metrics grouped under their kernel, canonical names first then the vendor's raw names,
    one per line: name, value in full (no exponent), unit. A name too long for the width gets
    a line of its own with its value below; a raw name longer than a line breaks after dots."""
    import textwrap

    from keet.format import number
    from keet.safe_text import terminal

    order = {"canonical": 0, "raw": 1}
    rows = sorted(rows, key=lambda r: order.get(r["origin"], 2))  # stable: the kernels' order stays
    rows = sorted(rows, key=lambda r: r["kernel"])
    lines: list[str] = []
    values = [number(r["value"]) for r in rows]
    value_width = max(len("value"), *map(len, values))
    unit_width = max(len("unit"), *(len(terminal(r["unit"] or "")) for r in rows))
    name_width = max(12, width - 2 - value_width - unit_width - 4)
    group = None
    for row, value in zip(rows, values):
        if (row["kernel"], row["origin"]) != group:
            if group is None or group[0] != row["kernel"]:
                # Names come from the file: no control sequence of theirs reaches the terminal.
                lines += [""] if lines else []
                lines += textwrap.wrap(f"[{row['kernel']}] {terminal(row['kernel_name'])}", width, subsequent_indent="    ")
            group = (row["kernel"], row["origin"])
            heading = {"canonical": "metric (canonical)", "raw": "metric (vendor's name)"}.get(row["origin"], "metric")
            lines.append(f"  {heading:<{name_width}}  {'value':>{value_width}}  unit".rstrip())
        name = terminal(row["metric"])
        figures = f"{value:>{value_width}}  {terminal(row['unit'] or '')}".rstrip()
        if len(name) <= name_width:
            lines.append(f"  {name:<{name_width}}  {figures}")
        else:
            lines += _break_at_dots(name, width)
            lines.append(f"  {'':<{name_width}}  {figures}")
    return lines


def _break_at_dots(name: str, width: int) -> list[str]:
    """A metric name on lines of at most ``width`` columns, broken after its dots (a
    continuation is indented further); a piece with no dot that is still too long stays whole."""
    lines, line = [], "  "
    for piece in re.split(r"(?<=\.)", name):
        if len(line) + len(piece) > width and line.strip():
            lines.append(line)
            line = "    "
        line += piece
    return [*lines, line]


@cli.command()
@click.argument("profile_path", metavar="PROFILE", type=click.Path(dir_okay=True))
@click.option("--kernel", help="Kernel id, exact name, function name or name substring.")
@click.option("--top", type=click.IntRange(min=1), help="Show at most this many findings per kernel.")
@format_option("text", "markdown", "json")
@llm_options
def explain(profile_path: str, kernel: str | None, top: int | None, fmt: str, llm_args: dict) -> None:
    """Explain what bounds each kernel of PROFILE, longest first, with evidence and fixes.
    With --baseline (and no --llm): PROFILE compared with the baseline, as `keet compare
    BASELINE PROFILE` shows it, for the chosen kernels."""
    from keet.diagnosis import read_ahead
    from keet.explain import explain as explain_profile
    from keet.explain import to_json, to_text
    from keet.ingest import load_profile

    # Every kernel is diagnosed: its per-instruction counters are read with its metrics.
    profile = load_profile(profile_path, read_ahead=read_ahead() if kernel is None else None)
    if llm_args["baseline"] and not llm_args["llm"]:
        from keet.compare import compare_loaded, render

        baseline = load_profile(llm_args["baseline"], read_ahead=read_ahead() if kernel is None else None)
        with progress("keet explain") as show:
            result = compare_loaded(baseline, profile, _selected(profile, kernel) if kernel else None, top, progress=show)
        click.echo(render(result, fmt, text_width()), nl=False)
        return
    if llm_args["llm"]:
        output = explain_output(profile, _selected(profile, kernel), top, fmt, llm_args)
        if fmt != "json":  # the model's text quotes the profile's strings: no control sequence of theirs is printed
            from keet.safe_text import terminal

            output = terminal(output, newlines=True)
        click.echo(output)
        return
    document = explain_profile(profile, _selected(profile, kernel), top)
    click.echo(to_json(document) if fmt == "json" else to_text(document, markdown=fmt == "markdown", width=text_width()),
               nl=fmt == "json")


@cli.command()
@click.argument("profile_paths", metavar="PROFILE...|DIR...", nargs=-1, required=True, type=click.Path(dir_okay=True))
@output_option(required=True, help="The HTML file to write; with folders of profiles, the site's folder.", type=click.Path())
@click.option("--title", help="Page title (default: the profiles' file names).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Folders: local worker processes that build the pages.")
@click.option("--scheduler", metavar="ADDRESS", help="Folders: build the pages on the workers of this Dask scheduler (dask.distributed).")
@click.option("--baseline", metavar="DIR", type=click.Path(file_okay=False),
              help="Folders: compare each profile with the profile of the same path under DIR.")
def report(profile_paths: tuple[str, ...], output: str, title: str | None, jobs: int, scheduler: str | None,
           baseline: str | None) -> None:
    """Write one self-contained HTML report of one or more profiles: per kernel a summary, the
    diagnosis, roofline, memory chart, warp states, instruction mix, source hotspots and the
    model's predictions; with several profiles, the same kernels compared with the first.

    Given folders of profiles, write a static site into the folder OUTPUT: a report per profile,
    a comparison per profile found under several top-level folders, and index.html, a sortable
    table of every kernel (time, verdict, speed of light, change against its baseline). Pages
    whose profiles and keet are unchanged are not rebuilt (docs/report.md)."""
    if not any(Path(path).is_dir() for path in profile_paths):  # one page: a bad output path fails before the
        check_output_path(output, profile_paths)  # report's ~0.8 s of imports (plotting, templates)
    from keet.report import write_report
    from keet.report.batch import build_site, echo_site_result, folder_inputs

    if folder_inputs(profile_paths):
        if title is not None:
            raise click.UsageError("--title names one report; the pages of a site are named by their profiles' paths")
        if scheduler is not None and jobs > 1:
            raise click.UsageError("--jobs and --scheduler: give one (the scheduler's workers build the pages)")
        with progress("keet report") as show:
            site = build_site(profile_paths, output, jobs=jobs, scheduler=scheduler, baseline=baseline, progress=show)
        echo_site_result(site)
        return
    if jobs > 1 or scheduler is not None or baseline is not None:
        raise click.UsageError("--jobs, --scheduler and --baseline apply to folders of profiles (a site)")
    with progress("keet report") as show:
        written = write_report(list(profile_paths), output, title, progress=show)
    kernels = sum(len(p.kernels) for p in written.profiles)
    click.echo(f"wrote {output}: {kernels} kernel{'s' if kernels != 1 else ''} from {len(written.profiles)} profile"
               f"{'s' if len(written.profiles) != 1 else ''}")


class Fraction(click.ParamType):
    """A share written as a percentage (5%) or a fraction (0.05). A bare number of 1 or more is
    refused: "5" could mean 5% or 500%."""

    name = "FRACTION"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"{value!r} is not a percentage (5%) or a fraction (0.05)", param, ctx)
        if not 0 <= number < 100:  # NaN and infinities fail this too
            self.fail(f"{value!r} is out of range", param, ctx)
        if not text.endswith("%") and number >= 1:
            self.fail(f"{value!r} is ambiguous: write {text}% or {number / 100:g}", param, ctx)
        return number


@cli.command()
@click.argument("base", metavar="BASE", type=click.Path(dir_okay=True))
@click.argument("new", metavar="NEW", type=click.Path(dir_okay=True))
@click.option("--threshold", type=Fraction(), default="5%", show_default=True,
              help="A kernel (or NVTX range) slower than this, beyond the noise, is a regression: exit status 1.")
@click.option("--noise", type=Fraction(), default="2%", show_default=True,
              help="The noise of a kernel measured once; repeated measurements (identical launches, timings files) "
                   "give their own spread.")
@click.option("--range", "ranges", multiple=True, metavar="RANGE[=NEW_RANGE]",
              help="Compare only the launches of this NVTX range (repeatable); BASE's RANGE with NEW's NEW_RANGE "
                   "where the range was renamed (a before/after pair of different operations).")
@click.option("--base-timings", type=click.Path(dir_okay=False),
              help="Repeated timings of BASE's NVTX-named cases (the corpus's times_GPU.json; docs/compare.md).")
@click.option("--new-timings", type=click.Path(dir_okay=False), help="The same for NEW.")
@click.option("--top", type=click.IntRange(min=1), help="At most this many findings per changed kernel.")
@format_option("text", "markdown", "json")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False),
              help="Also write JUnit XML: one test case per matched kernel, a failure per regression.")
@output_option(help="Write the comparison here instead of standard output.")
def compare(base: str, new: str, threshold: float, noise: float, ranges: tuple[str, ...], base_timings: str | None,
            new_timings: str | None, top: int | None, fmt: str, junit_path: str | None, output: str | None) -> None:
    """Compare NEW with BASE, two profiles or two folders of profiles (paired by file name):
    kernels matched by name, launch configuration and NVTX range, time changes beyond the noise
    flagged, each explained by the rules' evidence and the model. Exit status 1 when a kernel is
    slower than --threshold beyond the noise, 0 otherwise, 2 on bad input."""
    import sys

    from keet.compare import compare_paths, parse_ranges, render, summary_line, to_junit
    from keet.outputs import atomic_write_text, check_output_path

    inputs = [p for p in (base, new, base_timings, new_timings) if p]
    targets = [check_output_path(p, inputs) for p in (output, junit_path) if p]
    if len(targets) == 2 and targets[0].resolve() == targets[1].resolve():
        raise click.UsageError("--output and --junit name the same file")
    with progress("keet compare") as show:
        result = compare_paths(base, new, threshold=threshold, noise=noise, ranges=parse_ranges(ranges),
                               base_timings=base_timings, new_timings=new_timings, top=top, progress=show)
    # the profiles found in folders are inputs too: never written over
    sources = [str(side.source) for pair in result.profiles for side in (pair.base, pair.new)]
    for target in targets:
        check_output_path(target, sources)
    # everything is rendered before anything is written: an error leaves no file behind
    text = render(result, fmt, text_width())
    junit = to_junit(result) if junit_path else None
    if junit_path and junit is not None:  # written first: a CI server reads it even when the job fails
        atomic_write_text(junit_path, junit)
    if output:
        atomic_write_text(output, text)
        click.echo(f"wrote {output}: {summary_line(result)}")
    else:
        click.echo(text, nl=False)
    if result.exit_status:
        sys.exit(result.exit_status)


cli.add_command(optimize_command)
cli.add_command(llm_group)


def main() -> None:
    run_cli(cli, "keet")


if __name__ == "__main__":
    main()
