"""`perfmodel` command line: thin over perfmodel.hardware, perfmodel.model and perfmodel.validate."""

from __future__ import annotations

import json
from pathlib import Path

import click

from keet.cli_options import format_option, progress, text_width
from keet.cli_runner import run_cli
from keet.errors import KeetError
from keet.format import json_text, si
from keet.ingest import load_profile
from keet.project_data import manifest_path, writable_source_dir
from keet.safe_text import terminal  # kernel names come from the profile
from perfmodel.hardware import gpu, gpu_ids
from perfmodel.terms.base import CONTEXTS as LAUNCH_CONTEXTS

# perfmodel.features and perfmodel.model (numpy, pandas through keet.profile) are imported by
# the commands that predict: `perfmodel gpus` and --help stay fast (docs/benchmarks.md).


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="keet")
def cli() -> None:
    """Predict GPU kernel time from a profile (hardware database + analytical model)."""


@cli.command()
@click.option("--show", "show", metavar="GPU", help="Print every parameter of one GPU with its unit and provenance.")
@format_option("text", "json")
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
    click.echo("\n".join(_gpu_text(hardware, params, text_width())))


def _gpu_text(hardware, params: list[dict], width: int) -> list[str]:
    """One GPU's parameters as a table that fits ``width``: name, value with its unit, and a
    note number; the notes (where each value comes from: a sentence of up to hundreds of
    characters, shared by many parameters) follow once each, numbered and wrapped."""
    import textwrap

    from keet.format import number

    notes: dict[str, int] = {}
    rows = []
    for p in params:
        origin = f"{p['source']}: " if p["source"] else ""
        ref = origin + "; ".join(part for part in (p["ref"], p["note"]) if part)
        mark = f"[{notes.setdefault(ref, len(notes) + 1)}]" if ref else ""
        # large values with an SI prefix (1.98 GHz, 3.35 TB/s), small ones in full
        value = si(p["value"], p["unit"] or "", 4) if abs(p["value"]) >= 1e6 else f"{number(p['value'])} {p['unit'] or ''}".rstrip()
        rows.append((p["name"], value, mark))
    heads = ("parameter", "value", "note")
    sizes = [max(len(h), *(len(r[c]) for r in rows)) for c, h in enumerate(heads)]
    line = lambda r: f"  {r[0]:<{sizes[0]}}  {r[1]:>{sizes[1]}}  {r[2]}".rstrip()
    lines = textwrap.wrap(f"{hardware.id}: {hardware.name} ({hardware.arch})", width, subsequent_indent="  ")
    lines += [line(heads), *map(line, rows), "", "Where each value comes from:"]
    for ref, index in notes.items():
        lines += textwrap.wrap(ref, width, initial_indent=f"  [{index}] ".ljust(7), subsequent_indent=" " * 7, break_on_hyphens=False)
    return lines


SOURCE_SUFFIXES = (".cu", ".cuh")
LAUNCH_OPTIONS = ("grid", "block", "smem", "arg", "buffer", "program_arg")
# nvcc-style build options of a SOURCE (click name -> the flag as users write it)
BUILD_OPTIONS = {"include_dirs": "-I", "defines": "-D", "std": "-std", "pre_includes": "--include"}


def build_options(command):
    """-I DIR, -D NAME[=VALUE], -std=STD and --include FILE, as nvcc takes them (-Idir, -DX=1 too)."""
    for option in reversed((
        click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="SOURCE: an include folder, as nvcc -I (repeatable)."),
        click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="SOURCE: a macro, as nvcc -D (repeatable)."),
        click.option("-std", "--std", "std", metavar="STD", help="SOURCE: the C++ standard, as nvcc -std= (default c++17)."),
        click.option("--include", "-include", "--pre-include", "pre_includes", multiple=True, metavar="FILE",
                     help="SOURCE: a header included before the source, as nvcc --pre-include (repeatable)."),
    )):
        command = option(command)
    return command


@cli.command()
@click.argument("path", metavar="PROFILE|SOURCE.cu", type=click.Path(dir_okay=True))
@click.argument("program_args", nargs=-1, metavar="[-- PROGRAM_ARG...]")
@click.option("--gpu", "gpu_id", required=True, help="Target GPU id (see `perfmodel gpus`).")
@click.option("--kernel", help="Kernel id, exact name, function name or name substring.")
@click.option("--grid", help="SOURCE: grid of the launch, X[,Y[,Z]] (with --block: replaces launch discovery).")
@click.option("--block", help="SOURCE: block of the launch, X[,Y[,Z]].")
@click.option("--smem", help="SOURCE: dynamic shared memory per block, bytes (KiB/MiB suffixes, or K/M for thousands).")
@click.option("--arg", "arg", multiple=True, metavar="NAME=VALUE", help="SOURCE: a scalar kernel argument (repeatable).")
@click.option("--buffer", "buffer", multiple=True, metavar="NAME=BYTES", help="SOURCE: a pointer argument's buffer size (repeatable; zero-filled).")
@click.option("--program-arg", "program_arg", multiple=True, metavar="ARG", help="SOURCE: an argument for the program's main during launch discovery (repeatable).")
@click.option("--explain", is_flag=True, help="SOURCE: show the work counted by interpreting the PTX, and how.")
@click.option("--require-sandbox", "require_sandbox", is_flag=True,
              help="SOURCE: refuse to run the file's host code (launch discovery) outside keet's bubblewrap sandbox.")
@click.option("--context", type=click.Choice(list(LAUNCH_CONTEXTS)), default="isolated", show_default=True,
              help="The measurement to predict: " + "; ".join(f"{name}: {what}" for name, what in LAUNCH_CONTEXTS.items()) + ".")
@build_options
@format_option("text", "json")
def predict(path: str, gpu_id: str, kernel: str | None, fmt: str, explain: bool, context: str, **launch_flags) -> None:
    """Predict each kernel's time on GPU from the work counts in a PROFILE, or from a CUDA
    SOURCE.cu with no GPU: the program's host code runs against a recording CUDA runtime to
    find its launches (or the flags give one), and each kernel's PTX is interpreted on a
    sample of its blocks to count its work."""
    from perfmodel.features import features, prefetch, raw_metrics, source_request
    from perfmodel.model import predict as predict_kernel

    hardware = gpu(gpu_id)
    if Path(path).suffix in SOURCE_SUFFIXES:
        _predict_source(Path(path), hardware, kernel, fmt, explain, launch_flags, context)
        return
    given = [f"--{name.replace('_', '-')}" for name in LAUNCH_OPTIONS if launch_flags[name]] + (["--explain"] if explain else [])
    given += [flag for name, flag in BUILD_OPTIONS.items() if launch_flags[name]] + (["PROGRAM_ARG"] if launch_flags["program_args"] else [])
    if given:
        raise KeetError(f"{path}: {', '.join(given)}: for CUDA sources ({', '.join(SOURCE_SUFFIXES)}) only, not profiles")
    # Every kernel's load chains are read (unless one is chosen): with its metrics, in one pass.
    profile = load_profile(path, metrics=raw_metrics(), read_ahead=source_request() if kernel is None else None)
    kernels = profile.select(kernel)
    if not kernels:
        raise KeetError(f"{profile.source}: no kernel matches {kernel!r}")
    results: list[dict] = []
    prefetch(kernels)
    for k in kernels:
        try:
            work = features(profile, k)  # NotPredicted (a ValueError) when the profile lacks essential work
            entry = predict_kernel(hardware, work, context).as_dict()
            if work.missing_counts:  # work the profile lacks: the prediction is a lower bound
                entry["missing_counts"] = list(work.missing_counts)
            results.append(entry)
        except ValueError as exc:  # the launch cannot run on the target (a block exceeds a limit)
            results.append({"name": k.name, "predicted_ns": None, "error": str(exc)})
    _report(str(profile.source), hardware, results, fmt, context)


def _predict_source(path: Path, hardware, kernel: str | None, fmt: str, explain: bool, flags: dict, context: str) -> None:
    from perfmodel.model import predict as predict_kernel
    from perfmodel.static.compile import BuildOptions
    from perfmodel.static.source import StaticError, static_kernels

    options = BuildOptions.parse(*(flags[name] for name in BUILD_OPTIONS))
    # compile, launch discovery and PTX interpretation take up to tens of seconds: a status
    # line on a terminal (keet.cli_options.progress), nothing in a pipe or a log
    with progress("perfmodel predict") as show:
        counted = static_kernels(path, hardware.id, kernel=kernel, grid=flags["grid"], block=flags["block"], smem=flags["smem"],
                                 args=flags["arg"], buffers=flags["buffer"], argv=flags["program_arg"] + flags["program_args"], progress=show,
                                 host_sandbox="require" if flags["require_sandbox"] else "auto", options=options)
    results: list[dict] = []
    for item in counted:
        if isinstance(item, StaticError):
            name = item.launch.name if item.launch else str(path)
            failed = {"name": name, "predicted_ns": None, "error": str(item)}
            if item.launch:
                failed |= {"kernel": item.launch.kernel, "grid": list(item.launch.grid), "block": list(item.launch.block),
                           "launches": item.launch.count}
            if item.launched_by:  # a device-side launch (dynamic parallelism) the interpreter did not count
                failed["launched_by"] = item.launched_by
            results.append(failed)
            continue
        launch = item.launch
        # "kernel": the mangled name, which profilers print too (ncu --print-kernel-base mangled)
        entry = {"kernel": launch.kernel, "grid": list(launch.grid), "block": list(launch.block), "launches": launch.count}
        if item.launched_by:
            entry["launched_by"] = item.launched_by
        try:
            entry = predict_kernel(hardware, item.features, context).as_dict() | entry
        except ValueError as exc:
            entry |= {"name": launch.name, "predicted_ns": None, "error": str(exc)}
        entry["approximations"] = item.approximations
        if item.features.missing_counts:  # work the interpretation could not count: a lower bound
            entry["not_counted"] = list(item.features.missing_counts)
        if explain or fmt == "json":
            entry["static"] = item.summary()
        results.append(entry)
    library = [c for c in counted.library_calls if c.launches_kernels]  # cuBLAS, cuDNN, ...: kernels not in the program
    for call in library:
        results.append({"name": call.name, "library": call.library, "launches": call.count, "predicted_ns": None,
                        "error": f"library call {call.name} ({call.library}): its kernels are not in the program's "
                                 "source (profile the program to predict them)"})
    if not any(r["predicted_ns"] is not None for r in results):
        if library and len(results) == len(library):
            calls = ", ".join(f"{c.name} x{c.count}" for c in library[:4])
            raise KeetError(f"{path}: launches no kernel of its own, only CUDA library calls ({calls}): not predicted; "
                            "profile the program to predict the library's kernels")
        raise KeetError(next((r["error"] for r in results), f"{path}: launches no kernel"))
    setup = [{"name": c.name, "library": c.library, "calls": c.count} for c in counted.library_calls if not c.launches_kernels]
    _report(str(path), hardware, results, fmt, context, explain, {"toolkit": counted.toolkit, "library_setup_calls": setup,
                                                                  "runtime_calls_not_modelled": counted.runtime_stubs})


def _report(source: str, hardware, results: list[dict], fmt: str, context: str, explain: bool = False,
            build: dict | None = None) -> None:
    """build (SOURCE only): the CUDA compiler used ("toolkit") and the library calls that launch no kernel."""
    build = build or {}
    if fmt == "json":
        click.echo(json_text({"gpu": hardware.id, "context": context, **build, "kernels": results}, indent=1, default=str))
        return
    import textwrap

    width = text_width()
    fill = lambda text: "\n".join(textwrap.wrap(text, width, subsequent_indent="      ", break_on_hyphens=False))
    click.echo(fill(f"{terminal(source)} -> {hardware.name}, {context}: {LAUNCH_CONTEXTS[context]}"))
    if build.get("toolkit"):
        click.echo(fill(f"  compiled with {build['toolkit']}"))
    for r in results:
        device = f" (launched from the device by {terminal(r['launched_by'])})" if r.get("launched_by") else ""
        if r["predicted_ns"] is None:
            times = f" x{r['launches']}" if r.get("library") or r.get("launched_by") else ""
            click.echo(fill(f"  {terminal(r['name'])}{times}{device}: not predicted: {terminal(r['error'])}"))
            continue
        parts = ", ".join(f"{name} {si(ns, 'ns')}" for name, ns in list(r["breakdown"].items())[:4])
        at_least = ">= " if r["lower_bound"] else ""
        launch = f" <<<{tuple(r['grid'])}, {tuple(r['block'])}>>> x{r['launches']}{device}" if "grid" in r else ""
        click.echo(fill(f"  {terminal(r['name'])}{launch}: {at_least}{si(r['predicted_ns'], 'ns')} ({r['bound']}-bound; {parts})"))
        if r.get("missing_counts"):
            click.echo(fill(f"    lower bound: the profile lacks {'; '.join(r['missing_counts'])}"))
        if r.get("not_counted"):
            click.echo(fill(f"    lower bound: not counted: {'; '.join(r['not_counted'])}"))
        for caveat in r.get("caveats") or ():
            click.echo(fill(f"    caveat: {caveat}"))
        if explain and "static" in r:
            _explain_static(r["static"])
    if build.get("library_setup_calls"):
        calls = ", ".join(f"{terminal(c['name'])} x{c['calls']}" for c in build["library_setup_calls"][:6])
        more = len(build["library_setup_calls"]) - 6
        click.echo(fill(f"  library set-up calls (no kernels): {calls}" + (f" and {more} more" if more > 0 else "")))
    if build.get("runtime_calls_not_modelled"):
        calls = ", ".join(f"{terminal(name)} x{n}" for name, n in build["runtime_calls_not_modelled"].items())
        click.echo(fill(f"  CUDA runtime calls done as nothing (the launch recorder does not model them; launches or data "
                        f"they would make are missing): {calls}"))


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
@click.option("--manifest", "manifest_option", type=click.Path(dir_okay=False, path_type=Path),
              help="The zoo's manifest.json (default: profiles/manifest.json in the working directory or a parent, "
                   "else in the source checkout).")
@format_option("text", "markdown", "json")
@click.option("--recount-static", is_flag=True, help="First re-derive every zoo program's work from its source alone "
              "(minutes: compile, launch discovery, PTX interpretation) into profiles/static/zoo_features.json.")
def validate(manifest_option: Path | None, fmt: str, recount_static: bool) -> None:
    """Model error on the real-world corpus (validation split: the headline; dev split) and the
    zoo, per setting, beside the naive roofline (text: the summary; markdown: the whole of
    docs/validation.md, with the static and other-GPU sections)."""
    # resolved here, not at import: after `pip install .` the zoo is not in the package
    manifest = manifest_path(manifest_option)
    from perfmodel.validate import (
        STATIC_FEATURES,
        document,
        rows,
        static_zoo_features,
        summary,
        zoo_features,
    )

    if recount_static:
        def counted_one(gpu_id: str, program: str, result: dict) -> None:
            state = f"{result['seconds']} s" if "seconds" in result else f"not counted: {result['error']}"
            click.echo(f"{gpu_id} {program}: {state}", err=True)

        counted = static_zoo_features(json.loads(manifest.read_text()), manifest.parent, progress=counted_one)
        target = manifest.parent / STATIC_FEATURES
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(counted, indent=1, sort_keys=True) + "\n")
    if fmt == "markdown":
        with progress("perfmodel validate") as show:
            text = document(manifest, progress=lambda *stage: show(" ".join(map(str, stage))))
        click.echo(text, nl=False)
        return
    from keet.project_data import corpus_manifest
    from perfmodel import validate_corpus

    with progress("perfmodel validate") as show:
        show("reading the zoo's profiles")
        manifest_data = json.loads(manifest.read_text())
        all_rows = rows(manifest_data, zoo_features(manifest_data, manifest.parent))
        corpus = corpus_manifest(manifest)
        corpus_rows = []
        if corpus is not None:
            work = validate_corpus.corpus_features(corpus, progress=show)
            corpus_rows = validate_corpus.corpus_rows(corpus, work)
    corpus_summary = validate_corpus.corpus_summary(corpus_rows)
    if fmt == "json":
        click.echo(json.dumps({"summary": summary(all_rows), "rows": [r.__dict__ for r in all_rows],
                               "corpus": {"summary": corpus_summary, "rows": [r.__dict__ for r in corpus_rows]}}, indent=1))
    else:
        click.echo("\n".join(_validation_text(corpus_summary, summary(all_rows), text_width())))


def _validation_text(corpus: list[dict], zoo: list[dict], width: int) -> list[str]:
    """The error summary for a terminal: the corpus's validation split (the headline), its dev
    split and the zoo (development), one row per setting, the model's errors beside the naive
    roofline's; then the zoo's targets and where the whole document is."""
    import textwrap

    from perfmodel.validate import targets_status

    labelled = [(f"{s['split']}{' >=5us' if s['size'] != 'all' else ''}", s) for s in corpus]
    labelled += [("zoo (devel.)", s) for s in zoo]
    heads = ("set", "setting", "kernels", "median", "p90", "signed", "naive")
    rows = [(label, f"{s['source']}->{s['target']}", str(s["kernels"]), f"{s['median_ape']:.1%}", f"{s['p90_ape']:.1%}",
             f"{s['median_signed']:+.1%}", f"{s['naive_median_ape']:.1%}") for label, s in labelled]
    sizes = [max(len(h), *(len(r[c]) for r in rows)) for c, h in enumerate(heads)]
    line = lambda r: "  " + "  ".join(f"{v:<{sizes[c]}}" if c < 2 else f"{v:>{sizes[c]}}" for c, v in enumerate(r))
    lines = textwrap.wrap("Model error (absolute percentage error |predicted - measured| / measured; median, p90; median "
                          "signed error, < 0: too fast) beside the naive roofline's median. The corpus's validation split "
                          "(PyTorch and library kernels nothing was tuned on) is the headline; its dev split and the zoo "
                          "are development sets.", width)
    lines += ["", line(heads), *map(line, rows), "", "Zoo targets:"]
    for target in targets_status(zoo):
        lines += textwrap.wrap(target.removeprefix("- "), width, initial_indent="  - ", subsequent_indent="    ")
    lines += [""] + textwrap.wrap("The whole document (by library, prediction from source, other GPUs, published "
                                  "measurements): perfmodel validate --format markdown (docs/validation.md).", width)
    return lines


@cli.command()
@click.argument("calib", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--gpu", "gpu_id", required=True, help="Hardware file to update (see `perfmodel gpus`).")
@click.option("--hardware-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the hardware file to write, <GPU>.toml; the installed file is copied there first if it has "
                   "none (default: perfmodel/hardware of the source checkout, when perfmodel runs from a writable one).")
@click.option("--dry-run", is_flag=True, help="Show what would change without writing.")
def calibrate(calib: Path, gpu_id: str, hardware_dir: Path | None, dry_run: bool) -> None:
    """Write the parameters a `microbench run` calibration file measured into a GPU's hardware file."""
    from perfmodel.calibrate import calibrate as apply_calibration

    hardware = gpu(gpu_id)
    hardware_dir = _calibration_target(hardware.id, hardware_dir, dry_run)
    changes = apply_calibration(calib, hardware.id, hardware_dir, dry_run=dry_run)
    for change in changes:
        old = "unset" if change["old"] is None else f"{change['old']:,.6g}"
        click.echo(f"{'would set' if dry_run else 'set'} {gpu_id}.{change['name']} = {change['new']:,.6g} {change['unit']} (was {old})")
    if not dry_run:
        click.echo(f"wrote {hardware_dir / f'{hardware.id}.toml'}")


def _calibration_target(gpu_id: str, hardware_dir: Path | None, dry_run: bool) -> Path:
    """The folder calibrate writes <gpu_id>.toml into. Never the installed package: after
    `pip install .` it is site-packages, which pip owns (and the next install overwrites)."""
    installed = Path(__file__).resolve().parent / "hardware"
    if hardware_dir is None:
        checkout = writable_source_dir("perfmodel", "hardware")
        if checkout is not None:
            return checkout
        if dry_run:  # reads only: the installed file is the one perfmodel predicts with
            return installed
        raise KeetError("perfmodel is not running from a writable source checkout, so there is no perfmodel/hardware to "
                        "update: pass --hardware-dir DIR (the calibrated file goes there; copy it into a checkout's "
                        "perfmodel/hardware to predict with it)")
    target = hardware_dir / f"{gpu_id}.toml"
    if not target.exists():
        if dry_run:  # compare against the installed file without creating anything
            return installed
        try:
            hardware_dir.mkdir(parents=True, exist_ok=True)
            target.write_text((installed / f"{gpu_id}.toml").read_text())
        except OSError as exc:
            raise KeetError(f"{target}: cannot write: {exc.strerror}") from None
    return hardware_dir


def main() -> None:
    run_cli(cli, "perfmodel")


if __name__ == "__main__":
    main()
