"""`perfmodel` command line: thin over perfmodel.hardware, perfmodel.model and perfmodel.validate."""

from __future__ import annotations

import json
import sys
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


SOURCE_SUFFIXES = (".cu", ".cuh")
LAUNCH_OPTIONS = ("grid", "block", "smem", "arg", "buffer", "program_arg")


@cli.command()
@click.argument("path", metavar="PROFILE|SOURCE.cu", type=click.Path(dir_okay=True))
@click.option("--gpu", "gpu_id", required=True, help="Target GPU id (see `perfmodel gpus`).")
@click.option("--kernel", help="Kernel id, exact name, function name or name substring.")
@click.option("--grid", help="SOURCE: grid of the launch, X[,Y[,Z]] (with --block: replaces launch discovery).")
@click.option("--block", help="SOURCE: block of the launch, X[,Y[,Z]].")
@click.option("--smem", help="SOURCE: dynamic shared memory per block, bytes (KiB/MiB suffixes, or K/M for thousands).")
@click.option("--arg", "arg", multiple=True, metavar="NAME=VALUE", help="SOURCE: a scalar kernel argument (repeatable).")
@click.option("--buffer", "buffer", multiple=True, metavar="NAME=BYTES", help="SOURCE: a pointer argument's buffer size (repeatable; zero-filled).")
@click.option("--program-arg", "program_arg", multiple=True, metavar="ARG", help="SOURCE: an argument for the program's main during launch discovery (repeatable).")
@click.option("--explain", is_flag=True, help="SOURCE: show the work counted by interpreting the PTX, and how.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def predict(path: str, gpu_id: str, kernel: str | None, fmt: str, explain: bool, **launch_flags) -> None:
    """Predict each kernel's time on GPU from the work counts in a PROFILE, or from a CUDA
    SOURCE.cu with no GPU: the program's host code runs against a recording CUDA runtime to
    find its launches (or the flags give one), and each kernel's PTX is interpreted on a
    sample of its blocks to count its work."""
    hardware = gpu(gpu_id)
    if Path(path).suffix in SOURCE_SUFFIXES:
        _predict_source(Path(path), hardware, kernel, fmt, explain, launch_flags)
        return
    given = [f"--{name.replace('_', '-')}" for name in LAUNCH_OPTIONS if launch_flags[name]] + (["--explain"] if explain else [])
    if given:
        raise KeetError(f"{path}: {', '.join(given)}: for CUDA sources ({', '.join(SOURCE_SUFFIXES)}) only, not profiles")
    profile = load_profile(path, metrics=raw_metrics())
    kernels = profile.select(kernel)
    if not kernels:
        raise KeetError(f"{profile.source}: no kernel matches {kernel!r}")
    results: list[dict] = []
    for k in kernels:
        try:
            results.append(predict_kernel(hardware, features(profile, k)).as_dict())
        except ValueError as exc:  # the launch cannot run on the target (a block exceeds a limit)
            results.append({"name": k.name, "predicted_ns": None, "error": str(exc)})
    _report(str(profile.source), hardware, results, fmt)


def _predict_source(path: Path, hardware, kernel: str | None, fmt: str, explain: bool, flags: dict) -> None:
    from perfmodel.static.source import StaticError, static_kernels

    def progress(stage: str) -> None:  # on a terminal only: errors stay one line on stderr
        if sys.stderr.isatty():
            click.echo(f"perfmodel: {stage}", err=True)

    counted = static_kernels(path, hardware.id, kernel=kernel, grid=flags["grid"], block=flags["block"], smem=flags["smem"],
                             args=flags["arg"], buffers=flags["buffer"], argv=flags["program_arg"], progress=progress)
    results: list[dict] = []
    for item in counted:
        if isinstance(item, StaticError):
            name = item.launch.name if item.launch else str(path)
            results.append({"name": name, "predicted_ns": None, "error": str(item)})
            continue
        launch = item.launch
        entry = {"grid": list(launch.grid), "block": list(launch.block), "launches": launch.count}
        try:
            entry = predict_kernel(hardware, item.features).as_dict() | entry
        except ValueError as exc:
            entry |= {"name": launch.name, "predicted_ns": None, "error": str(exc)}
        entry["approximations"] = item.approximations
        if explain or fmt == "json":
            entry["static"] = item.summary()
        results.append(entry)
    if not any(r["predicted_ns"] is not None for r in results):
        raise KeetError(next(r["error"] for r in results))
    _report(str(path), hardware, results, fmt, explain)


def _report(source: str, hardware, results: list[dict], fmt: str, explain: bool = False) -> None:
    if fmt == "json":
        click.echo(json.dumps({"gpu": hardware.id, "kernels": results}, indent=1, default=str))
        return
    click.echo(f"{source} -> {hardware.name}")
    for r in results:
        if r["predicted_ns"] is None:
            click.echo(f"  {r['name']}: not predicted: {r['error']}")
            continue
        parts = ", ".join(f"{name} {si(ns, 'ns')}" for name, ns in list(r["breakdown"].items())[:4])
        at_least = ">= " if r["lower_bound"] else ""
        launch = f" <<<{tuple(r['grid'])}, {tuple(r['block'])}>>> x{r['launches']}" if "grid" in r else ""
        click.echo(f"  {r['name']}{launch}: {at_least}{si(r['predicted_ns'], 'ns')} ({r['bound']}-bound; {parts})")
        if explain and "static" in r:
            _explain_static(r["static"])


def _explain_static(static: dict) -> None:
    """The work the interpreter counted, for people checking the prediction's inputs."""
    blocks = ", ".join(str(tuple(b)) for b in static["sampled_blocks"])
    click.echo(f"    interpreted blocks {blocks} ({static['sampled_warps_per_block']} warps each; counts x{static['scale']:,.6g} "
               f"for the grid; {static['interpret_seconds']} s)")
    click.echo(f"    registers {static['registers_per_thread']}, shared {static['shared_bytes_per_block']} B/block, "
               f"L1 hit rate {static['l1_hit_rate']:.0%}, footprint read {si(static['footprint_read_bytes'], 'B')} "
               f"write {si(static['footprint_write_bytes'], 'B')}")
    for name, value in static["counts"].items():
        click.echo(f"    {name:34} {value:>18,.0f}" if value >= 100 else f"    {name:34} {value:>18,.4g}")
    for label in ("warp_instructions_by_pipe", "flops", "tensor_instructions"):
        if static[label]:
            click.echo(f"    {label}: " + ", ".join(f"{k} {v:,.0f}" for k, v in static[label].items()))
    if static["barriers"]:
        click.echo(f"    barriers (warp-level): {static['barriers']:,.0f}")
    for note in static["approximations"]:
        click.echo(f"    approximation: {note}")


@cli.command()
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=MANIFEST, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--recount-static", is_flag=True, help="First re-derive every zoo program's work from its source alone "
              "(minutes: compile, launch discovery, PTX interpretation) into profiles/static/zoo_features.json.")
def validate(manifest: Path, fmt: str, recount_static: bool) -> None:
    """Model error on the measured zoo, per setting, beside the naive roofline (markdown: the
    whole of docs/validation.md)."""
    from perfmodel.validate import (
        STATIC_FEATURES,
        document,
        rows,
        static_zoo_features,
        summary,
        zoo_features,
    )

    if recount_static:
        def progress(gpu_id: str, program: str, result: dict) -> None:
            state = f"{result['seconds']} s" if "seconds" in result else f"not counted: {result['error']}"
            click.echo(f"{gpu_id} {program}: {state}", err=True)

        counted = static_zoo_features(json.loads(manifest.read_text()), manifest.parent, progress=progress)
        target = manifest.parent / STATIC_FEATURES
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(counted, indent=1, sort_keys=True) + "\n")
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
