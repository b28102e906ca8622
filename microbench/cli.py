"""`microbench` command line. Commands arrive with the benchmark suites."""

from __future__ import annotations

import click

from keet.cli_options import output_option
from keet.cli_runner import run_cli
from microbench import runner


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="keet")
def cli() -> None:
    """Run CUDA/HIP microbenchmarks and emit calibration data for perfmodel."""


@cli.command()
@output_option("out", required=True, help="Output JSON file (written atomically).")
@click.option("--suite", default=None, metavar="LIST",
              help=f"Comma-separated subset of {','.join(runner.PROGRAMS)} (default: all).")
@click.option("--nvcc", default=None, metavar="PATH", help="nvcc to use (default: $NVCC, PATH, /usr/local/cuda/bin/nvcc).")
@click.option("--build-only", is_flag=True, help="Only compile the programs (no GPU needed; targets sm_90a, or --arch).")
@click.option("--backend", type=click.Choice(["auto", "cuda", "hip"]), default="auto", show_default=True,
              help="cuda, hip (AMD), or auto: NVIDIA if nvidia-smi works, else AMD.")
@click.option("--arch", default=None, metavar="GFX", help="HIP target of a --build-only run: gfx90a or gfx942.")
@click.option("--hipcc", default=None, metavar="PATH", help="HIP compiler, hipcc or clang++ (default: $HIPCC, /opt/rocm, PATH).")
def run(out: str, suite: str | None, nvcc: str | None, build_only: bool, backend: str, arch: str | None,
        hipcc: str | None) -> None:
    """Build and run the CUDA (NVIDIA) or HIP (AMD) microbenchmarks on GPU 0; write measurements and
    derived parameters to the -o/--output file. Progress (build, each program) shows on stderr
    when it is a terminal.

    Same as `python3 -m microbench.runner` (standard library only, for bare GPU machines).
    """
    doc = runner.run_any(out, suite, nvcc, build_only, backend, arch, hipcc)
    runner._print_summary(doc)


def main() -> None:
    run_cli(cli, "microbench")


if __name__ == "__main__":
    main()
