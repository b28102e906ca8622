"""Issue 19, data loss: keet never removes or replaces what it did not create.

`keet optimize --out DIR` replaces a folder only when keet's marker says it made it for the same
problem; problem names are plain names; `keet report -o` refuses its own input, links, devices,
FIFOs and folders; a failed write (file-size limit, full disk) leaves neither a partial file nor
a temporary one. Every case runs the real command in a subprocess (exit status and stderr as a
user sees them); the optimize cases that must refuse do so before anything is built, with
--no-sandbox so that they test the run folder whatever the machine's bubblewrap.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from keet.errors import KeetError
from keet.optimize.runfolder import MARKER, prepare_run_folder
from keet.outputs import atomic_write_text, check_output_path

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "tests" / "data" / "ncu" / "h100_details_metrics_with_stdout.csv"
TRANSPOSE = ROOT / "profiles" / "optimize" / "transpose"


def command(module: str, *args: str, cwd: Path, prelude: str = "") -> subprocess.CompletedProcess:
    """A console script as a user runs it (``prelude``: Python run first, e.g. an rlimit)."""
    code = f"{prelude}\nfrom {module} import main\nmain()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def one_line_error(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and all(w in lines[0] for w in words), lines[0]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ------------------------------------------------------------------ keet report -o
def test_report_refuses_to_write_over_its_input(tmp_path: Path) -> None:
    profile = tmp_path / "in.csv"
    shutil.copyfile(PROFILE, profile)
    before = profile.read_bytes()
    one_line_error(command("keet.cli", "report", profile, "-o", profile, cwd=tmp_path), "is an input")
    os.link(profile, tmp_path / "alias.html")  # the same file under another name
    one_line_error(command("keet.cli", "report", profile, "-o", tmp_path / "alias.html", cwd=tmp_path), "is an input")
    one_line_error(command("keet.cli", "report", "in.csv", "-o", "./sub/../in.csv", cwd=tmp_path), "is an input")
    assert profile.read_bytes() == before and leftovers(tmp_path) == []


def test_report_refuses_a_link_a_fifo_and_a_device(tmp_path: Path) -> None:
    target = tmp_path / "target.html"
    target.write_text("keep me")
    (tmp_path / "link.html").symlink_to(target)
    os.mkfifo(tmp_path / "fifo.html")
    outputs = {"link.html": "a symbolic link", "fifo.html": "a FIFO"}
    try:  # a device node of our own, never the system's /dev/null
        os.mknod(tmp_path / "null.html", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        outputs["null.html"] = "a character device"
    except PermissionError:
        pass
    for name, kind in outputs.items():
        one_line_error(command("keet.cli", "report", PROFILE, "-o", tmp_path / name, cwd=tmp_path), kind)
    assert (tmp_path / "link.html").is_symlink() and target.read_text() == "keep me"
    assert stat.S_ISFIFO((tmp_path / "fifo.html").lstat().st_mode)
    if "null.html" in outputs:
        assert stat.S_ISCHR((tmp_path / "null.html").lstat().st_mode)
    assert leftovers(tmp_path) == []


def test_report_over_the_file_size_limit_leaves_nothing_behind(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("the previous report")
    # Python ignores SIGXFSZ, so the write fails with EFBIG: the command must say so and clean up
    limit = "import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))"
    done = command("keet.cli", "report", PROFILE, "-o", out, cwd=tmp_path, prelude=limit)
    one_line_error(done, str(out), "cannot write", "too large")
    assert out.read_text() == "the previous report" and leftovers(tmp_path) == []
    fresh = tmp_path / "new.html"
    one_line_error(command("keet.cli", "report", PROFILE, "-o", fresh, cwd=tmp_path, prelude=limit), "cannot write")
    assert not fresh.exists() and leftovers(tmp_path) == []


def test_report_writes_the_file_whole(tmp_path: Path) -> None:
    done = command("keet.cli", "report", PROFILE, "-o", tmp_path / "report.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report.html").read_text().rstrip().endswith("</html>") and leftovers(tmp_path) == []


def test_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.json"
    out.write_text("old")

    def full(fd: int) -> None:  # the disk fills while the data is flushed
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("keet.outputs.os.fsync", full)
    with pytest.raises(KeetError, match="out.json: cannot write: No space left on device"):
        atomic_write_text(out, "new" * 1000)
    assert out.read_text() == "old" and leftovers(tmp_path) == []


def test_check_output_path_allows_new_and_regular_files(tmp_path: Path) -> None:
    (tmp_path / "old.html").write_text("x")
    assert check_output_path(tmp_path / "new.html", [PROFILE]) == tmp_path / "new.html"
    assert check_output_path(tmp_path / "old.html", [PROFILE]) == tmp_path / "old.html"


# ------------------------------------------------------------------ keet optimize --out
def optimize(*args: str | Path, cwd: Path, problem: Path | None = None, kernel: Path = TRANSPOSE / "kernel.cu") -> subprocess.CompletedProcess:
    extra = ["--problem", problem] if problem else []
    return command("keet.cli", "optimize", kernel, "--kernel", "transpose_kernel",
                   "--reference", TRANSPOSE / "reference.cu", *extra, "--rounds", "0", "--no-gpu", "--no-profile", *args, cwd=cwd)


@pytest.mark.parametrize("planted", ["reference", "candidates", "run.json"])
def test_optimize_never_removes_a_folder_keet_did_not_make(tmp_path: Path, planted: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    notes = project / "run.json"  # a file named like keet's...
    if planted != "run.json":  # ...or a folder named like keet's, holding the user's files
        (project / planted).mkdir()
        notes = project / planted / "notes.txt"
    notes.write_text("a user's work")
    (project / "main.cu").write_text("int main() {}\n")
    one_line_error(optimize("--out", project, "--no-sandbox", cwd=tmp_path), "not a keet optimize run folder")
    assert notes.read_text() == "a user's work" and (project / "main.cu").is_file()


def test_optimize_refuses_another_problems_run_and_a_run_holding_an_input(tmp_path: Path) -> None:
    run = tmp_path / "run"
    prepare_run_folder(run, "gather", [])  # keet's own run folder, of another problem
    one_line_error(optimize("--out", run, "--no-sandbox", cwd=tmp_path), "holds a run of problem 'gather'")
    assert (run / MARKER).is_file()
    run = tmp_path / "transpose-run"
    prepare_run_folder(run, "transpose", [])
    kept = run / "candidates" / "c004" / "source.cu"  # a best kernel of that run, optimized again
    kept.parent.mkdir(parents=True)
    shutil.copyfile(TRANSPOSE / "kernel.cu", kept)
    one_line_error(optimize("--out", run, "--no-sandbox", cwd=tmp_path, kernel=kept, problem=TRANSPOSE / "problem.toml"),
                   "an input of this run")
    assert kept.read_text() == (TRANSPOSE / "kernel.cu").read_text()


def test_optimize_refuses_a_link_as_the_run_folder(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    one_line_error(optimize("--out", tmp_path / "link", "--no-sandbox", cwd=tmp_path), "not a folder")
    assert (tmp_path / "elsewhere" / "file").read_text() == "x"


@pytest.mark.parametrize("name", ["../../x", "/abs/x", "a/b", "..", ""])
def test_problem_names_are_plain_names(tmp_path: Path, name: str) -> None:
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    problem = cwd / "problem.toml"
    problem.write_text((TRANSPOSE / "problem.toml").read_text().replace('name = "transpose"', f"name = {name!r}", 1))
    one_line_error(optimize("--no-sandbox", cwd=cwd, problem=problem), "is not a plain name")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "problem.toml"]


@pytest.mark.slow
@pytest.mark.toolchain
def test_optimize_with_the_default_relative_out_builds_and_replaces_its_own_run(tmp_path: Path, nvcc: str,
                                                                                 sandbox_required: None) -> None:
    """The default --out is relative (optimize-runs/<problem>-tune): builds run in other
    folders and once all failed with "the reference does not build". A second run replaces the
    first's folder (keet's marker, same problem)."""
    first = optimize(cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "optimize-runs" / "transpose-tune"
    assert (run / "run.json").is_file() and (run / MARKER).is_file()
    assert "(exit status 0)" in (run / "reference" / "build.log").read_text()
    (run / "stale.txt").write_text("from the first run")
    second = optimize(cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert not (run / "stale.txt").exists() and (run / "run.json").is_file()
