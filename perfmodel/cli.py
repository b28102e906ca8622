"""`perfmodel` command line: thin over perfmodel.hardware, perfmodel.model and perfmodel.validate."""

from __future__ import annotations

import json
from pathlib import Path

import click

from keet.cli import run_cli
from keet.errors import KeetError
from keet.format import si
from keet.ingest import load_profile
from perfmodel.features import features, raw_metrics
from perfmodel.hardware import gpu, gpu_ids
from perfmodel.model import predict as predict_kernel

MANIFEST = Path(__file__).resolve().parents[1] / "profiles" / "manifest.json"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="keet")
def cli() -> None:
    """Predict GPU kernel time from a profile (hardware database + analytical model)."""


@cli.command()
@click.option("--show", "show", metavar="GPU", help="Print every parameter of one GPU with its unit and provenance.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def gpus(show: str | None, fmt: str) -> None:
    """List the GPUs of the hardware database, or show one."""
    if show is None:
        listing = [{"id": g.id, "name": g.name, "vendor": g.vendor, "arch": g.arch} for g in map(gpu, gpu_ids())]
        if fmt == "json":
            click.echo(json.dumps(listing, indent=1))
        else:
            click.echo("\n".join(f"{e['id']:8} {e['arch']:8} {e['name']}" for e in listing))
        return
    hardware = gpu(show)
    params = [{"name": p.name, "value": p.value, "unit": p.unit, "source": p.source, "ref": p.ref, "note": p.note} for p in hardware.params.values()]
    if fmt == "json":
        click.echo(json.dumps({"id": hardware.id, "name": hardware.name, "vendor": hardware.vendor, "arch": hardware.arch, "params": params}, indent=1))
        return
    click.echo(f"{hardware.id}: {hardware.name} ({hardware.arch})")
    for p in params:
        click.echo(f"  {p['name']:36} {p['value']:>16,.6g} {p['unit']:14} {p['source']:14} {p['ref']}")


@cli.command()
@click.argument("profile_path", metavar="PROFILE", type=click.Path(dir_okay=True))
@click.option("--gpu", "gpu_id", required=True, help="Target GPU id (see `perfmodel gpus`).")
@click.option("--kernel", help="Kernel id, exact name, function name or name substring.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def predict(profile_path: str, gpu_id: str, kernel: str | None, fmt: str) -> None:
    """Predict each kernel's time on GPU from the work counts in PROFILE."""
    hardware = gpu(gpu_id)
    profile = load_profile(profile_path, metrics=raw_metrics())
    kernels = profile.select(kernel)
    if not kernels:
        raise KeetError(f"{profile.source}: no kernel matches {kernel!r}")
    results: list[dict] = []
    for k in kernels:
        try:
            results.append(predict_kernel(hardware, features(profile, k)).as_dict())
        except ValueError as exc:  # the launch cannot run on the target (a block exceeds a limit)
            results.append({"name": k.name, "predicted_ns": None, "error": str(exc)})
    if fmt == "json":
        click.echo(json.dumps({"gpu": hardware.id, "kernels": results}, indent=1))
        return
    click.echo(f"{profile.source} -> {hardware.name}")
    for r in results:
        if r["predicted_ns"] is None:
            click.echo(f"  {r['name']}: not predicted: {r['error']}")
            continue
        parts = ", ".join(f"{name} {si(ns, 'ns')}" for name, ns in list(r["breakdown"].items())[:4])
        at_least = ">= " if r["lower_bound"] else ""
        click.echo(f"  {r['name']}: {at_least}{si(r['predicted_ns'], 'ns')} ({r['bound']}-bound; {parts})")


@cli.command()
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=MANIFEST, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
def validate(manifest: Path, fmt: str) -> None:
    """Model error on the measured zoo, per setting, beside the naive roofline (markdown: the
    whole of docs/validation.md)."""
    from perfmodel.validate import document, rows, summary, zoo_features

    if fmt == "json":
        manifest_data = json.loads(manifest.read_text())
        all_rows = rows(manifest_data, zoo_features(manifest_data, manifest.parent))
        click.echo(json.dumps({"summary": summary(all_rows), "rows": [r.__dict__ for r in all_rows]}, indent=1))
    else:
        click.echo(document(manifest), nl=False)


@cli.command()
@click.argument("calib", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--gpu", "gpu_id", required=True, help="Hardware file to update (see `perfmodel gpus`).")
@click.option("--dry-run", is_flag=True, help="Show what would change without writing.")
def calibrate(calib: Path, gpu_id: str, dry_run: bool) -> None:
    """Write the parameters a `microbench run` calibration file measured into a GPU's hardware file."""
    from microbench.calibrate import calibrate as apply_calibration

    hardware_dir = Path(__file__).resolve().parent / "hardware"
    changes = apply_calibration(calib, gpu(gpu_id).id, hardware_dir, dry_run=dry_run)
    for change in changes:
        old = "unset" if change["old"] is None else f"{change['old']:,.6g}"
        click.echo(f"{'would set' if dry_run else 'set'} {gpu_id}.{change['name']} = {change['new']:,.6g} {change['unit']} (was {old})")


def main() -> None:
    run_cli(cli, "perfmodel")


if __name__ == "__main__":
    main()
