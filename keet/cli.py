"""`keet` command line: a thin layer over the library API."""

from __future__ import annotations

import json
import os
import re
import sys

import click

from keet.errors import KeetError
from keet.explain import explain as explain_profile
from keet.explain import to_json, to_text
from keet.ingest import load_profile
from keet.llm.cli import explain_output, llm_group, llm_options
from keet.optimize.cli import optimize as optimize_command
from keet.profile import Profile


def run_cli(group: click.Group, prog: str) -> None:
    """Run a click group so that user errors are one line and exit status 2.

    Set KEET_DEBUG=1 to see the traceback of an unexpected error.
    """
    try:
        group.main(prog_name=prog, standalone_mode=False)
    except KeetError as exc:
        click.echo(f"{prog}: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo(f"{prog}: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(130)
    except Exception as exc:  # last resort: never a traceback for the user
        if os.environ.get("KEET_DEBUG"):
            raise
        click.echo(f"{prog}: internal error: {type(exc).__name__}: {exc} (KEET_DEBUG=1 shows the traceback)", err=True)
        sys.exit(1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="keet")
def cli() -> None:
    """Explain GPU kernel profiles (Nsight Compute, rocprof): what bounds each kernel."""


def _selected(profile: Profile, kernel: str | None):
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
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
def metrics(profile_path: str, kernel: str | None, pattern: str | None, origin: str, fmt: str) -> None:
    """List the metrics of PROFILE, per kernel, in canonical and raw names."""
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
        click.echo(json.dumps({"source": profile.source, "format": profile.format, "metrics": table.to_dict(orient="records")}, indent=1))
    elif fmt == "csv":
        click.echo(table.to_csv(index=False), nl=False)
    elif table.empty:
        click.echo("no metrics match")
    else:
        click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.6g}"))


@cli.command()
@click.argument("profile_path", metavar="PROFILE", type=click.Path(dir_okay=True))
@click.option("--kernel", help="Kernel id, exact name, function name or name substring.")
@click.option("--top", type=click.IntRange(min=1), help="Show at most this many findings per kernel.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@llm_options
def explain(profile_path: str, kernel: str | None, top: int | None, fmt: str, llm_args: dict) -> None:
    """Explain what bounds each kernel of PROFILE, longest first, with evidence and fixes."""
    profile = load_profile(profile_path)
    if llm_args["llm"]:
        click.echo(explain_output(profile, _selected(profile, kernel), top, fmt, llm_args))
        return
    document = explain_profile(profile, _selected(profile, kernel), top)
    click.echo(to_json(document) if fmt == "json" else to_text(document, markdown=fmt == "markdown"), nl=fmt == "json")


@cli.command()
@click.argument("profile_paths", metavar="PROFILE...", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False), help="The HTML file to write.")
@click.option("--title", help="Page title (default: the profiles' file names).")
def report(profile_paths: tuple[str, ...], output: str, title: str | None) -> None:
    """Write one self-contained HTML report of one or more profiles: per kernel a summary, the
    diagnosis, roofline, memory chart, warp states, instruction mix, source hotspots and the
    model's predictions; with several profiles, the same kernels compared with the first."""
    from keet.report import write_report

    written = write_report(list(profile_paths), output, title)
    kernels = sum(len(p.kernels) for p in written.profiles)
    click.echo(f"wrote {output}: {kernels} kernel{'s' if kernels != 1 else ''} from {len(written.profiles)} profile"
               f"{'s' if len(written.profiles) != 1 else ''}")


cli.add_command(optimize_command)
cli.add_command(llm_group)


def main() -> None:
    run_cli(cli, "keet")


if __name__ == "__main__":
    main()
