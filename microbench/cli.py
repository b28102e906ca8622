"""`microbench` command line. Commands arrive with the benchmark suites."""

from __future__ import annotations

import click

from keet.cli import run_cli


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="keet")
def cli() -> None:
    """Run CUDA/HIP microbenchmarks and emit calibration data for perfmodel."""


def main() -> None:
    run_cli(cli, "microbench")


if __name__ == "__main__":
    main()
