"""How every console script of the distribution (`keet`, `perfmodel`, `microbench`, `python -m
keet.optimize`) runs its click group: user errors as one line and exit status 2, never a
traceback. A module of its own so that perfmodel and microbench need not import keet's CLI
(and with it keet's readers, LLM and optimize commands)."""

from __future__ import annotations

import os
import sys

import click

from keet.errors import KeetError
from keet.safe_text import terminal


def run_cli(group: click.Command, prog: str) -> None:
    """Run a click group so that user errors are one line and exit status 2.

    Set KEET_DEBUG=1 to see the traceback of an unexpected error.
    """
    try:
        group.main(prog_name=prog, standalone_mode=False)
    except KeetError as exc:
        click.echo(f"{prog}: error: {terminal(exc)}", err=True)  # messages quote file names and contents
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
        click.echo(f"{prog}: internal error: {type(exc).__name__}: {terminal(exc)} (KEET_DEBUG=1 shows the traceback)", err=True)
        sys.exit(1)
