"""python -m keet.optimize ...: the `keet optimize` command without the keet group."""

from keet.cli_runner import run_cli
from keet.optimize.cli import optimize

if __name__ == "__main__":
    run_cli(optimize, "keet optimize")
