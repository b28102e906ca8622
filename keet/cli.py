"""`keet` command line: a thin layer over the library API."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import click

from keet.cli_options import format_option, output_option, progress, text_width
from keet.cli_runner import run_cli
from keet.errors import KeetError
from keet.llm.cli import explain_output, llm_group, llm_options
from keet.optimize.cli import optimize as optimize_command

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
    """Explain what bounds each kernel of PROFILE, longest first, with evidence and fixes."""
    from keet.explain import explain as explain_profile
    from keet.explain import to_json, to_text
    from keet.ingest import load_profile

    profile = load_profile(profile_path)
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
@click.argument("profile_paths", metavar="PROFILE...", nargs=-1, required=True, type=click.Path(dir_okay=True))
@output_option(required=True, help="The HTML file to write.")
@click.option("--title", help="Page title (default: the profiles' file names).")
def report(profile_paths: tuple[str, ...], output: str, title: str | None) -> None:
    """Write one self-contained HTML report of one or more profiles: per kernel a summary, the
    diagnosis, roofline, memory chart, warp states, instruction mix, source hotspots and the
    model's predictions; with several profiles, the same kernels compared with the first."""
    from keet.report import write_report

    with progress("keet report") as show:
        written = write_report(list(profile_paths), output, title, progress=show)
    kernels = sum(len(p.kernels) for p in written.profiles)
    click.echo(f"wrote {output}: {kernels} kernel{'s' if kernels != 1 else ''} from {len(written.profiles)} profile"
               f"{'s' if len(written.profiles) != 1 else ''}")


cli.add_command(optimize_command)
cli.add_command(llm_group)


def main() -> None:
    run_cli(cli, "keet")


if __name__ == "__main__":
    main()
