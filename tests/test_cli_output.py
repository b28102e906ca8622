"""The command line as a newcomer meets it (issue 26): text fits an 80-column terminal, long
work shows progress on a terminal and nothing in a pipe, markdown renders as meant, and the
options are the same everywhere."""

from __future__ import annotations

import base64
import os
import pty
import re
import select
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
import shared_profiles
from click.testing import CliRunner

from keet.cli import cli as keet_cli
from keet.cli_options import Progress
from perfmodel.cli import cli as perfmodel_cli

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "profiles" / "h100" / "zoo_all.ncu-rep.xz"
NCU = sorted((ROOT / "profiles" / "h100" / "ncu").glob("*.ncu-rep.xz"))
BIN = Path(sys.executable).parent
# A quoted source line under "source lines:" (code is never re-flowed), indented 7 columns:
# "       src/transpose_naive.cu:18 out[...] = ...". Prose is indented 5 and is not exempt.
SOURCE_LINE = re.compile(r"^ {7}[\w./-]+\.(cu|cuh|h|hpp|cpp|c|hip):\d+ ")


@pytest.fixture(autouse=True)
def _shared_zoo_for_explain(monkeypatch: pytest.MonkeyPatch) -> None:
    """`keet explain` of the combined zoo report gets a copy read once (these tests are of the
    output; the seven that explain it had spent 17 s re-reading it)."""
    shared_profiles.share_reads_ahead(monkeypatch, ZOO)


def run80(cli, *args: str) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "80"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def too_wide(text: str, width: int = 80) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width and not SOURCE_LINE.match(line)]


@pytest.mark.parametrize("args", [
    ("explain", ZOO), ("metrics", ZOO), ("metrics", ZOO, "--origin", "raw"),
], ids=["explain-zoo", "metrics-zoo", "metrics-raw"])
def test_keet_text_fits_80_columns(args: tuple) -> None:
    assert too_wide(run80(keet_cli, *args)) == []


@pytest.mark.slow  # 28 s on 2 cores: every zoo profile explained
def test_every_zoo_profile_fits_80_columns() -> None:
    assert len(NCU) >= 30
    for path in NCU:
        assert too_wide(run80(keet_cli, "explain", path)) == [], path.name
        assert too_wide(run80(perfmodel_cli, "predict", path, "--gpu", "h200")) == [], path.name


@pytest.mark.parametrize("gpu", ["h100", "h200", "b200", "a100", "mi300a", "mi300x", "mi250x"])
def test_gpu_parameters_fit_80_columns(gpu: str) -> None:
    out = run80(perfmodel_cli, "gpus", "--show", gpu)
    assert too_wide(out) == []
    # every parameter's provenance is still there, once per distinct reference
    assert re.search(r"^  sm_count +\d+ \w+  \[1\]$", out, re.MULTILINE) and "Where each value comes from:" in out


def test_wider_terminal_gets_wider_text_up_to_100() -> None:
    lines = CliRunner().invoke(keet_cli, ["explain", str(ZOO)], env={"COLUMNS": "200"}).output.splitlines()
    widest = max(len(line) for line in lines if not SOURCE_LINE.match(line))
    assert 80 < widest <= 100


def test_metrics_values_are_written_out_not_as_exponents() -> None:
    out = run80(keet_cli, "metrics", ZOO, "--kernel", "triad_kernel", "--grep", "^global.load_sectors$")
    assert re.search(r"global\.load_sectors +\d{1,3}(,\d{3})+ +sector", out) and "e+" not in out
    assert run80(keet_cli, "metrics", ZOO, "--format", "table", "--kernel", "triad_kernel") == run80(
        keet_cli, "metrics", ZOO, "--kernel", "triad_kernel")


def test_explain_begins_with_a_summary_table_of_every_kernel() -> None:
    out = run80(keet_cli, "explain", ZOO)
    head = out.split("\n\n[", 1)[0].splitlines()
    # diagnosis v2: one row per group of identical launches (the zoo's three tiny_kernel launches
    # are one), ranked by recoverable time
    start = next(i for i, line in enumerate(head) if line.startswith("34 launches in 32 groups"))
    table = head[start:]
    header = next(i for i, line in enumerate(table) if line.split()[:2] == ["#", "kernel"])
    assert table[header].split() == ["#", "kernel", "n", "share", "verdict", "SoL", "recoverable"]
    rows = table[header + 1:]
    assert len(rows) == 32
    first = rows[0].split()
    assert first[1].startswith("occupancy_smem") and first[2] == "x1" and first[3].endswith("%") and first[4] == "occupancy_shared_memory"
    assert any(row.split()[2] == "x3" and row.split()[1].startswith("tiny_kernel") for row in rows)
    assert all(row.split()[-1] != "n/a" for row in rows)  # the model weighs every zoo kernel
    assert "by recoverable time" not in run80(keet_cli, "explain", NCU[0])  # one kernel: no table


def test_markdown_renders_names_and_suggestions() -> None:
    import markdown_it  # the test extra installs it
    out = run80(keet_cli, "explain", ROOT / "profiles/h100/ncu/transpose_smem_conflict.ncu-rep.xz", "--format", "markdown")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(out)
    assert "__shared__" in html and "<strong>shared</strong>" not in html
    items = re.findall(r"<li>(.*?)</li>", html, re.DOTALL)
    assert any(item.startswith("Pad the shared array") for item in items), items
    assert "/home/" not in out and "<code>src/transpose_smem_conflict.cu:29</code>" in html
    table = markdown_it.MarkdownIt("commonmark").enable("table").render(run80(keet_cli, "explain", ZOO, "--format", "markdown"))
    assert table.count("<tr>") == 33 and "<code>occupancy_smem_kernel</code>" in table  # 32 groups of launches


def test_source_paths_are_folder_and_file_not_the_capturing_machine() -> None:
    out = run80(keet_cli, "explain", ROOT / "profiles/h100/ncu/transpose_naive.ncu-rep.xz")
    lines = [line for line in out.splitlines() if SOURCE_LINE.match(line)]
    assert lines and all(line.split()[0] == "src/transpose_naive.cu:18" for line in lines)


def test_output_option_is_the_same_everywhere(tmp_path: Path) -> None:
    profile = ROOT / "profiles/h100/ncu/small_grid.ncu-rep.xz"
    for option in ("-o", "--output", "--out"):
        target = tmp_path / f"r{option.strip('-')}.html"
        result = CliRunner().invoke(keet_cli, ["report", str(profile), option, str(target)])
        assert result.exit_code == 0 and target.is_file(), result.output
    both = CliRunner().invoke(keet_cli, ["report", str(profile), "-o", str(tmp_path / "a.html"), "--out", str(tmp_path / "b.html")])
    assert both.exit_code == 2 and "different files" in both.output
    assert CliRunner().invoke(keet_cli, ["report", str(profile)]).exit_code == 2
    for command in (["report", "--help"], ["optimize", "--help"], ["llm", "eval", "--help"]):
        help_text = CliRunner().invoke(keet_cli, command).output
        assert "-o, --output" in help_text and "--out " not in help_text, command  # the alias works, hidden


def test_comparison_names_each_bar_by_its_own_kernel_and_the_title_tells_profiles_apart() -> None:
    from keet.ingest import load_profile
    from keet.report.assemble import build, distinct_names

    conflict, padded = (load_profile(ROOT / f"profiles/h100/ncu/transpose_smem_{n}.ncu-rep.xz") for n in ("conflict", "padded"))
    report = build([conflict, padded])
    (chart,) = report.comparison_figures.values()
    svg = chart.uri if "base64," not in chart.uri else base64.b64decode(chart.uri.split("base64,", 1)[1]).decode()
    svg = urllib.parse.unquote(svg)
    assert "transpose_smem_padded_kernel [2]" in svg and "transpose_smem_conflict_kernel [1]" in svg
    assert "transpose_smem_conflict_kernel [2]" not in svg
    assert "transpose_smem_padded_kernel in 2:" in chart.alt
    assert distinct_names(["profiles/h100/zoo_all.ncu-rep.xz", "profiles/h200/zoo_all.ncu-rep.xz"]) == [
        "h100/zoo_all.ncu-rep.xz", "h200/zoo_all.ncu-rep.xz"]
    assert distinct_names(["a/x.ncu-rep", "b/y.ncu-rep"]) == ["x.ncu-rep", "y.ncu-rep"]


# ------------------------------------------------------------------------------- progress


def run_with_stderr(command: list[str], tty: bool) -> tuple[int, str, str]:
    """Run ``command`` with stderr on a pseudo-terminal (or a pipe); stdout is a pipe."""
    env = {**os.environ, "COLUMNS": "80"}
    if not tty:
        done = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=600)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, env=env, text=True)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        elif process.poll() is not None:
            break
    stdout = process.stdout.read()
    process.wait(timeout=60)
    os.close(master)
    return process.returncode, stdout, seen.decode(errors="replace")


LONG_COMMANDS = {
    "keet report": lambda tmp: [BIN / "keet", "report", *NCU[:4], "-o", tmp / "r.html"],
    "perfmodel validate": lambda tmp: [BIN / "perfmodel", "validate", "--manifest", shared_profiles.zoo_only_profiles(tmp)],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", LONG_COMMANDS)
def test_long_commands_show_progress_on_a_terminal_only(name: str, tmp_path: Path) -> None:
    command = [str(part) for part in LONG_COMMANDS[name](tmp_path)]
    code, stdout, stderr = run_with_stderr(command, tty=True)
    assert code == 0, stderr
    assert f"\r{name}: " in stderr and stderr.endswith("\r\x1b[K")  # shown, then erased before the output
    code, quiet_stdout, quiet_stderr = run_with_stderr(command, tty=False)
    assert code == 0 and quiet_stderr == ""
    assert quiet_stdout.replace(str(tmp_path), "") == stdout.replace(str(tmp_path), "")


@pytest.mark.toolchain
@pytest.mark.slow
def test_static_prediction_shows_progress_on_a_terminal_only(nvcc: str) -> None:
    command = [str(BIN / "perfmodel"), "predict", str(ROOT / "profiles/src/transpose_smem_conflict.cu"), "--gpu", "h100"]
    os.environ.setdefault("NVCC", nvcc)
    code, _, stderr = run_with_stderr(command, tty=True)
    assert code == 0 and "\rperfmodel predict: " in stderr, stderr
    code, _, stderr = run_with_stderr(command, tty=False)
    assert code == 0 and stderr == ""


def test_microbench_progress_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from microbench import amd, runner

    for module in (runner, amd):
        master, slave = pty.openpty()
        with os.fdopen(slave, "w") as terminal:
            monkeypatch.setattr(sys, "stderr", terminal)
            module._progress("[1/2] dram ...")
        assert os.read(master, 1024).startswith(b"[1/2] dram ...")
        os.close(master)
        read, write = os.pipe()
        with os.fdopen(write, "w") as pipe:
            monkeypatch.setattr(sys, "stderr", pipe)
            module._progress("[1/2] dram ...")
        assert os.read(read, 1024) == b""
        os.close(read)


def test_progress_line_is_silent_off_a_terminal_and_erased_on_one() -> None:
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as terminal:
        status = Progress("keet report", terminal)
        status("reading \x1b]0;evil\x07profile 1/2")
        status.done()
    shown = b""  # what the terminal got, read until nothing more comes (one read may return part of it)
    while select.select([master], [], [], 0.2)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    shown = shown.decode()
    os.close(master)
    assert shown.startswith("\rkeet report: reading \\x1b]0;evil\\x07profile 1/2 (") and shown.endswith("\r\x1b[K")
    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe:
        status = Progress("keet report", pipe)
        status("reading")
        status.done()
    assert os.read(read, 1024) == b""
    os.close(read)
