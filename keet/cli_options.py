"""What every console script (`keet`, `perfmodel`, `microbench`) shares in how it is called and
how it prints: one `--format` vocabulary, one `-o/--output` option, the width text is laid
out for, and the progress line long commands show on a terminal.

Click only (no keet readers, no pandas): perfmodel and microbench import this module, and
`--help` must stay fast (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import click

from keet.safe_text import terminal

# The one vocabulary of --format values; each command accepts the subset it can produce.
FORMATS = {
    "text": "readable text for a terminal, laid out for its width",
    "markdown": "a markdown document (CommonMark with GFM tables)",
    "json": "one JSON document (the contract in docs/rules.md)",
    "csv": "comma-separated values with a header row",
}
# Earlier names still accepted: `keet metrics --format table` is in the documented contract.
ALIASES = {"table": "text"}

# Text never runs wider than this even on a wide terminal: longer lines are hard to read.
MAX_TEXT_WIDTH = 100
MIN_TEXT_WIDTH = 40


class FormatChoice(click.Choice):
    """A subset of FORMATS; an alias (``table``) is accepted and turned into its canonical
    name, but only canonical names are listed in --help and in error messages."""

    def __init__(self, choices: tuple[str, ...]) -> None:
        unknown = [c for c in choices if c not in FORMATS]
        if unknown:
            raise ValueError(f"not in keet.cli_options.FORMATS: {unknown}")
        super().__init__(list(choices), case_sensitive=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and ALIASES.get(value.lower()) in self.choices:
            value = ALIASES[value.lower()]
        return super().convert(value, param, ctx)


def format_option(*choices: str, default: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format`` with the given subset of FORMATS (the first is the default unless
    ``default`` says otherwise); the command receives it as ``fmt``."""
    chosen = default or choices[0]
    described = "; ".join(f"{c}: {FORMATS[c]}" for c in choices)
    aliases = [a for a, target in ALIASES.items() if target in choices]
    extra = f" ({', '.join(aliases)}: same as {ALIASES[aliases[0]]})" if aliases else ""
    return click.option("--format", "fmt", type=FormatChoice(choices), default=chosen, show_default=True,
                        help=f"Output format. {described}.{extra}")


def output_option(dest: str = "output", required: bool = False, help: str = "The file to write.",
                  type: click.ParamType | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--output PATH``, the same on every command that writes a file, with ``--out`` (the
    name some commands had first) kept as a hidden alias so existing scripts still run."""
    path_type = type or click.Path(dir_okay=False)
    alias = f"_{dest}_out_alias"

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def merged(*args: Any, **kwargs: Any) -> Any:
            given, old = kwargs.get(dest), kwargs.pop(alias, None)
            if given is not None and old is not None and given != old:
                raise click.UsageError("-o/--output and --out name different files: give one")
            kwargs[dest] = given if given is not None else old
            if required and kwargs[dest] is None:
                raise click.UsageError("Missing option '-o' / '--output'.")
            return command(*args, **kwargs)

        # Neither is required for click, which cannot know that the other one may stand in.
        merged = click.option("--out", alias, type=path_type, hidden=True)(merged)
        suffix = "" if not required else " [required]"
        return click.option("-o", "--output", dest, type=path_type, help=help + suffix)(merged)

    return decorate


def text_width(stream: IO[str] | None = None) -> int:
    """Columns to lay text out for: the terminal's width (COLUMNS wins, as in every POSIX
    tool), 80 when the output is not a terminal, never more than MAX_TEXT_WIDTH."""
    columns = shutil.get_terminal_size((80, 24)).columns
    return max(MIN_TEXT_WIDTH, min(columns, MAX_TEXT_WIDTH))


def wants_progress(stream: IO[str] | None = None) -> bool:
    """Progress is for a person watching a terminal: never in a pipe, a file or CI's log,
    where it would be noise between the real error lines."""
    stream = stream if stream is not None else sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class Progress:
    """One status line on stderr, rewritten in place (``\\r`` and erase-to-end-of-line), and
    erased when the work ends so that the command's output and errors start on a clean line.
    Silent when stderr is not a terminal."""

    def __init__(self, prog: str, stream: IO[str] | None = None) -> None:
        self.prog = prog
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wants_progress(self.stream)
        self.started = time.monotonic()
        self._shown = False

    def __call__(self, message: str) -> None:
        """Show ``message`` (with the seconds since the start) as the status line."""
        if not self.enabled:
            return
        # messages can quote file and kernel names: terminal() keeps their controls inert
        line = f"{self.prog}: {terminal(message)} ({time.monotonic() - self.started:.0f} s)"
        width = shutil.get_terminal_size((80, 24)).columns - 1
        if len(line) > width:  # a wrapped status line cannot be rewritten in place
            line = line[: max(width - 3, 0)] + "..."
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


@contextmanager
def progress(prog: str) -> Iterator[Progress]:
    """``with progress("keet") as show: show("reading x")``: the status line is erased when
    the block ends, normally or by an error (whose one line then prints cleanly)."""
    status = Progress(prog)
    try:
        yield status
    finally:
        status.done()
