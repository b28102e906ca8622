"""`keet` command line: a thin layer over the library API."""

from __future__ import annotations

import json
import os
import re
import sys

import click

from keet.errors import KeetError
from keet.format import dims, si
from keet.ingest import load_profile
from keet.profile import Profile
from keet.summary import device_dict, kernel_summary, kernels_by_duration


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
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
def explain(profile_path: str, kernel: str | None, fmt: str) -> None:
    """Explain each kernel of PROFILE, longest first.

    Until the diagnosis rules land this prints each kernel's summary (launch,
    resources, share of time, speed-of-light and occupancy); "diagnosis" is empty.
    """
    profile = load_profile(profile_path)
    kernels = kernels_by_duration(profile, _selected(profile, kernel))
    summaries = [kernel_summary(profile, k) for k in kernels]
    if fmt == "json":
        document = {
            "source": profile.source,
            "format": profile.format,
            "device": device_dict(profile),
            "kernels": [{**s, "diagnosis": []} for s in summaries],
        }
        click.echo(json.dumps(document, indent=1))
        return
    markdown = fmt == "markdown"
    device = profile.device
    head = f"{device.name} ({device.arch or 'unknown arch'}, {device.sm_count or '?'} SMs)"
    click.echo(f"# {profile.source}\n\n{head}, {len(profile.kernels)} kernel(s)\n" if markdown else f"{profile.source}: {head}, {len(profile.kernels)} kernel(s)")
    for summary in summaries:
        click.echo(_render_summary(summary, markdown))


def _render_summary(summary: dict, markdown: bool) -> str:
    share = f"{summary['share'] * 100:.1f}% of time" if summary["share"] is not None else "share unknown"
    title = f"[{summary['id']}] {summary['name']}"
    lines = [f"\n## {title}\n" if markdown else f"\n{title}"]
    bullet = "- " if markdown else "  "
    lines.append(f"{bullet}duration {si(summary['duration_ns'], 'ns')} ({share}), grid {dims(summary['grid'])} x block {dims(summary['block'])}")
    lines.append(f"{bullet}{summary['registers_per_thread'] if summary['registers_per_thread'] is not None else '?'} registers/thread, "
                 f"{summary['shared_bytes_per_block'] if summary['shared_bytes_per_block'] is not None else '?'} bytes shared memory/block")
    for metric, entry in summary["metrics"].items():
        unit = "%" if metric.endswith("_pct") else ("Hz" if metric == "sm_clock" else "")
        lines.append(f"{bullet}{entry['label']}: {si(entry['value'], unit)}")
    return "\n".join(lines)


def main() -> None:
    run_cli(cli, "keet")


if __name__ == "__main__":
    main()
