"""`perfmodel` command line. Commands arrive with the hardware database and the model."""

from __future__ import annotations

import click

from keet.cli import run_cli


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="keet")
def cli() -> None:
    """Predict GPU kernel time from a profile or from source (hardware database + analytical model)."""


def main() -> None:
    run_cli(cli, "perfmodel")


if __name__ == "__main__":
    main()
