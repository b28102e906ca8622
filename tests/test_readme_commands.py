"""The README's "Use" commands work after the README's own install, `pip install .` (issue 26).

An editable install hides a class of bugs: data found relative to ``__file__`` (the zoo's
manifest, the LLM questions) is there in a checkout and missing from site-packages, and a
command may write into the installed package. The slow tests build a wheel of the project,
install it into a fresh venv (no system site-packages) and run every README command that needs
no GPU and no LLM server from a folder outside the source tree. The fast tests check the same
behaviours in the development install: where the zoo is looked for, the calibration target,
the plot script over the whole calib folder, and the one-line hint for a missing extra.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import shared_profiles
from click.testing import CliRunner

from keet import project_data
from keet.errors import KeetError

ROOT = Path(__file__).resolve().parents[1]
CALIB = sorted((ROOT / "microbench" / "calib").glob("*.json"))
H100_CALIB = ROOT / "microbench" / "calib" / "h100_2026-11-21.json"
FIGURES = ("bandwidth", "latency", "tlb", "bank_conflicts", "barrier", "mix", "dram_occupancy")
README = (ROOT / "README.md").read_text()


def use_lines() -> list[str]:
    """The command synopses of the README's "Use" block."""
    section = README.split("## Use", 1)[1]
    return [line for line in re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1).splitlines() if line.strip()]


def command_key(line: str) -> str:
    """'keet llm serve', 'perfmodel predict SOURCE.cu', 'keet explain --llm': what a synopsis runs."""
    if line.startswith("python -m "):
        return " ".join(line.split()[:3])
    words = []
    for word in line.split():
        if word.startswith(("-", "[")) or word.isupper() or "." in word:
            break
        words.append(word)
    key = " ".join(words)
    if "--llm" in line:
        key += " --llm"
    if re.search(r"\bSOURCE\.cu\b", line):
        key += " SOURCE.cu"
    return key


# Every synopsis of the Use block is either run by the wheel tests below or named here with why
# not: a new README command must be placed in one or the other.
RUN_FROM_THE_WHEEL = {"keet explain", "keet metrics", "keet report", "keet compare", "keet explain --llm", "keet llm serve", "keet llm eval",
                      "perfmodel gpus", "perfmodel predict", "perfmodel predict SOURCE.cu", "perfmodel validate",
                      "perfmodel calibrate", "python -m microbench.plots"}
NOT_RUN = {
    "keet optimize": "builds and times kernels on a GPU",
    "microbench run": "runs the microbenchmarks on a GPU",
}


def test_every_use_command_is_run_or_has_a_reason() -> None:
    keys = {command_key(line) for line in use_lines()}
    assert keys == RUN_FROM_THE_WHEEL | NOT_RUN.keys(), keys ^ (RUN_FROM_THE_WHEEL | NOT_RUN.keys())


# ---------------------------------------------------------------------------------------
# fast: the development install
# ---------------------------------------------------------------------------------------
def _no_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behave as a wheel install does: no source checkout behind the package."""
    monkeypatch.setattr(project_data, "source_checkout", lambda: None)


def test_the_zoo_is_found_from_a_subfolder_of_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_checkout(monkeypatch)
    (tmp_path / "profiles").mkdir()
    shutil.copy(ROOT / "profiles" / "manifest.json", tmp_path / "profiles" / "manifest.json")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert project_data.manifest_path() == tmp_path.resolve() / "profiles" / "manifest.json"
    assert project_data.profiles_dir() == tmp_path.resolve() / "profiles"


def test_a_foreign_manifest_is_not_the_zoo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_checkout(monkeypatch)
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "manifest.json").write_text('{"name": "another project"}')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(project_data.ProjectDataNotFound, match=r"pass --manifest PATH$"):
        project_data.manifest_path()
    with pytest.raises(project_data.ProjectDataNotFound, match=r"pass --profiles DIR$"):
        project_data.profiles_dir()
    with pytest.raises(KeetError, match="not a kernel-zoo manifest"):
        project_data.manifest_path(tmp_path / "profiles" / "manifest.json")


def test_the_editable_install_finds_its_checkout_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert project_data.source_checkout() == ROOT
    assert project_data.manifest_path() == ROOT / "profiles" / "manifest.json"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_calibrate_outside_a_checkout_needs_a_folder_and_leaves_the_package_alone(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import perfmodel.cli

    monkeypatch.setattr(perfmodel.cli, "writable_source_dir", lambda *parts: None)
    installed = ROOT / "perfmodel" / "hardware" / "h100.toml"
    before = _sha(installed)
    runner = CliRunner()
    refused = runner.invoke(perfmodel.cli.cli, ["calibrate", str(H100_CALIB), "--gpu", "h100"])
    assert isinstance(refused.exception, KeetError) and "--hardware-dir DIR" in str(refused.exception)
    dry = runner.invoke(perfmodel.cli.cli, ["calibrate", str(H100_CALIB), "--gpu", "h100", "--dry-run"])
    assert dry.exit_code == 0 and "would set h100." in dry.output
    target = tmp_path / "hw"
    wrote = runner.invoke(perfmodel.cli.cli, ["calibrate", str(H100_CALIB), "--gpu", "h100", "--hardware-dir", str(target)])
    assert wrote.exit_code == 0, wrote.output
    assert f"wrote {target / 'h100.toml'}" in wrote.output and 'source = "microbenchmark"' in (target / "h100.toml").read_text()
    assert _sha(installed) == before


def _plots(args: list[str], cwd: Path, python: str = sys.executable, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "microbench.plots", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300, check=False)


def test_plots_over_the_whole_calib_folder(tmp_path: Path) -> None:
    """The README line over microbench/calib/*.json: the L2 fetch-granularity files (one number
    each, another layout) are skipped with a note; the figures are docs/img's, byte for byte."""
    assert any("l2_fetch_granularity" in p.name for p in CALIB)  # the files that used to crash it
    result = _plots([*map(str, CALIB), "--out", str(tmp_path / "img")], tmp_path)
    assert result.returncode == 0, result.stderr
    notes = result.stderr.strip().splitlines()
    # one number each; CUPTI suites' files; a run of suites no figure draws
    other_layouts = ("l2_fetch_granularity", "kernel_duration", "sm_bandwidth", "atomic_types")
    assert len(notes) == sum(any(kind in p.name for kind in other_layouts) for p in CALIB)
    assert all(n.startswith("microbench.plots: skipped ") and any(kind in n for kind in other_layouts) for n in notes)
    for name in FIGURES:
        assert (tmp_path / "img" / f"microbench_{name}.svg").read_bytes() == (ROOT / "docs" / "img" / f"microbench_{name}.svg").read_bytes(), name


def test_plots_with_no_calibration_file_is_one_error_line(tmp_path: Path) -> None:
    other = [str(p) for p in CALIB if "l2_fetch_granularity" in p.name]
    result = _plots([*other, "--out", str(tmp_path / "img")], tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == "microbench.plots: error: no `microbench run` calibration file among the inputs"


BLOCK = "import sys; [sys.modules.__setitem__(m, None) for m in {modules!r}]; sys.argv = ['keet', *sys.argv[1:]]; " \
        "from keet.cli import main; main()"
PROFILE = ROOT / "profiles" / "h100" / "ncu" / "sgemm_tiled.ncu-rep.xz"


@pytest.mark.parametrize("args, hidden, install", [
    (["llm", "serve"], ("llama_cpp",), "pip install -c constraints.txt -e '.[llm,llm-local]'"),
    (["llm", "eval", "--model", "m"], ("langchain", "httpx"), "pip install -c constraints.txt -e '.[llm]'"),
    (["explain", str(PROFILE), "--llm", "--model", "m"], ("langchain_openai",), "pip install -c constraints.txt -e '.[llm]'"),
])
def test_a_missing_extra_is_one_line_with_the_readmes_install_command(args: list[str], hidden: tuple[str, ...], install: str) -> None:
    result = subprocess.run([sys.executable, "-c", BLOCK.format(modules=hidden), *args], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert install in line and all(name in line for name in hidden)
    assert install in README  # the same command the README gives


# ---------------------------------------------------------------------------------------
# slow: a wheel in a fresh venv, commands run outside the source tree
# ---------------------------------------------------------------------------------------
class Venv:
    """A fresh venv with the project's wheel installed, and a folder outside the source tree
    holding a copy of profiles/ (as a user who copied the zoo, or cloned the repository for it)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "venv" / "bin"
        self.work = root / "work"
        self.bare = root / "bare"  # neither profiles/ in it or above it
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "KEET_DEBUG", "PYTHONHOME")}
        self.env["PATH"] = f"{self.bin}{os.pathsep}{self.env.get('PATH', '')}"

    def run(self, *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd or self.work,
                              env={**self.env, **(env or {})}, timeout=300, check=False)

    def ok(self, *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
        result = self.run(*args, cwd=cwd, env=env)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
        return result.stdout

    def one_error_line(self, *args: str | Path, cwd: Path | None = None) -> str:
        result = self.run(*args, cwd=cwd)
        assert result.returncode == 2 and "Traceback" not in result.stderr, (args, result.stderr)
        (line,) = result.stderr.strip().splitlines()
        return line


def _step(args: list[str | Path], cwd: Path) -> None:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=600, check=False)
    assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-4000:])


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    root = tmp_path_factory.mktemp("readme_wheel")
    # Build from a copy: building in the checkout would leave build/ and egg-info there.
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in ("keet", "perfmodel", "microbench"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    _step([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", root / "dist", src], root)
    (wheel,) = (root / "dist").glob("keet-*.whl")
    _step([sys.executable, "-m", "venv", root / "venv"], root)  # no --system-site-packages: only what the wheel pulls in
    # The README's first command installs the same way. Its dependencies come from the package
    # index (ncu-report is on PyPI only), so this needs the network or pip's cache.
    _step([root / "venv" / "bin" / "python", "-m", "pip", "install", "-q", "-c", ROOT / "constraints.txt", wheel], root)
    env = Venv(root)
    env.work.mkdir()
    env.bare.mkdir()
    shutil.copytree(ROOT / "profiles", env.work / "profiles", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "examples", env.work / "examples")
    return env


@pytest.mark.slow
def test_the_wheel_is_what_runs(venv: Venv) -> None:
    out = venv.ok(venv.bin / "python", "-c", "import keet, perfmodel, microbench; print(keet.__file__, perfmodel.__file__, microbench.__file__)")
    assert all(str(venv.root / "venv") in path and str(ROOT) not in path for path in out.split())
    # what made the editable install's defaults work is absent here
    assert venv.ok(venv.bin / "python", "-c", "import keet.project_data as p; print(p.source_checkout())").strip() == "None"


@pytest.mark.slow
def test_explain_metrics_and_report(venv: Venv) -> None:
    first = re.search(r"keet explain (\S+)", README.split("## Set up", 1)[1]).group(1)
    assert "shared_bank_conflicts" in venv.ok("keet", "explain", first)
    document = json.loads(venv.ok("keet", "explain", first, "--format", "json", "--top", "2"))
    assert document["kernels"][0]["diagnosis"][0]["category"] == "shared_bank_conflicts"
    assert "shared." in venv.ok("keet", "metrics", "profiles/h100/zoo_all.ncu-rep.xz", "--kernel", "bank_conflict_kernel", "--grep", r"^shared\.")
    reports = re.findall(r"^keet report profiles/.*$", README, re.MULTILINE)  # the examples, not the synopsis
    assert len(reports) == 2
    for command in reports:
        args = command.split()
        assert venv.ok(*args).startswith(f"wrote {args[-1]}")
        assert (venv.work / args[-1]).read_text().lstrip().lower().startswith("<!doctype html")


@pytest.mark.slow
def test_compare(venv: Venv) -> None:
    """The README's `keet compare` examples: the H100 -> H200 zoo passes, the transpose's fix
    undone fails (exit status 1) with a JUnit file."""
    examples = re.findall(r"^keet compare profiles/.*$", README, re.MULTILINE)  # the examples, not the synopsis
    assert len(examples) == 2
    assert venv.ok(*examples[0].split()).rstrip().endswith("exit status 0.")
    result = venv.run(*examples[1].split())
    assert result.returncode == 1 and "Newly found: shared_bank_conflicts" in result.stdout, result.stderr
    assert '<failure type="regression"' in (venv.work / "compare.xml").read_text()


@pytest.mark.slow
def test_perfmodel_gpus_and_predict_from_a_profile(venv: Venv) -> None:
    assert {g["id"] for g in json.loads(venv.ok("perfmodel", "gpus", "--format", "json"))} >= {"h100", "h200", "b200", "mi300x"}
    assert "sm_count" in venv.ok("perfmodel", "gpus", "--show", "h100")
    predicted = json.loads(venv.ok("perfmodel", "predict", "profiles/h100/ncu/dram_triad.ncu-rep.xz", "--gpu", "h200", "--format", "json"))
    assert predicted["gpu"] == "h200" and predicted["kernels"][0]["predicted_ns"] > 0


@pytest.mark.toolchain
@pytest.mark.slow
def test_predict_from_source(venv: Venv, nvcc: str) -> None:
    """The README's example; nvcc is the test extra's (or the machine's): the wheel's venv has none."""
    command = re.search(r"^perfmodel predict profiles/src/\S+\.cu .*$", README, re.MULTILINE).group(0)
    out = venv.ok(*command.split(), env={"NVCC": nvcc})
    assert "transpose_smem_conflict_kernel" in out and "approximation" in out
    # the example with the launch on the command line: its file is shipped in examples/
    command = re.search(r"^perfmodel predict examples/saxpy\.cu .*$", README, re.MULTILINE).group(0)
    out = venv.ok(*command.split(), env={"NVCC": nvcc})
    assert "saxpy <<<(4096, 1, 1), (256, 1, 1)>>>" in out


@pytest.mark.slow
def test_validate_finds_the_zoo_from_the_working_directory(venv: Venv, tmp_path: Path) -> None:
    sub = venv.work / "profiles" / "h100"  # deep inside: the search goes up to work/
    markdown = venv.ok("perfmodel", "validate", "--format", "markdown", cwd=sub)
    # the one check that docs/validation.md is generated (the corpus takes a minute to read)
    assert markdown == (ROOT / "docs" / "validation.md").read_text(), "regenerate: perfmodel validate --format markdown > docs/validation.md"
    # elsewhere, named by --manifest (a mirror without the corpus: its minute was spent above)
    by_option = json.loads(venv.ok("perfmodel", "validate", "--format", "json", "--manifest",
                                   shared_profiles.zoo_only_profiles(tmp_path), cwd=venv.bare))
    assert [s["setting"] for s in by_option["summary"]][:2] == ["h100 profile -> h100", "h200 profile -> h200"]
    line = venv.one_error_line("perfmodel", "validate", cwd=venv.bare)
    assert line.startswith("perfmodel: error: no profiles/manifest.json") and line.endswith("pass --manifest PATH")
    assert venv.one_error_line(venv.bin / "python", "-m", "keet.accuracy", cwd=venv.bare).endswith("pass --manifest PATH")


@pytest.mark.slow
def test_calibrate_never_writes_into_the_installed_package(venv: Venv) -> None:
    installed = Path(venv.ok(venv.bin / "python", "-c", "import perfmodel; print(perfmodel.__file__)").strip()).parent / "hardware" / "h100.toml"
    before = _sha(installed)
    assert "would set h100." in venv.ok("perfmodel", "calibrate", H100_CALIB, "--gpu", "h100", "--dry-run")
    assert "--hardware-dir DIR" in venv.one_error_line("perfmodel", "calibrate", H100_CALIB, "--gpu", "h100")
    out = venv.ok("perfmodel", "calibrate", H100_CALIB, "--gpu", "h100", "--hardware-dir", "hw")
    assert out.splitlines()[-1] == f"wrote {Path('hw') / 'h100.toml'}" and (venv.work / "hw" / "h100.toml").is_file()
    assert _sha(installed) == before


@pytest.mark.slow
def test_plots_readme_line(venv: Venv, tmp_path: Path) -> None:
    result = _plots([*map(str, CALIB), "--out", str(tmp_path)], venv.work, python=str(venv.bin / "python"), env=venv.env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.glob("*.svg")) == sorted(f"microbench_{n}.svg" for n in FIGURES)


@pytest.mark.slow
@pytest.mark.parametrize("args, install", [
    (["keet", "llm", "serve"], "pip install -c constraints.txt -e '.[llm,llm-local]'"),
    (["keet", "llm", "eval", "--model", "m"], "pip install -c constraints.txt -e '.[llm]'"),
    (["keet", "explain", "profiles/h100/ncu/sgemm_tiled.ncu-rep.xz", "--llm", "--model", "m"], "pip install -c constraints.txt -e '.[llm]'"),
])
def test_llm_commands_without_the_extras(venv: Venv, args: list[str], install: str) -> None:
    line = venv.one_error_line(*args)
    assert line.startswith("keet: error: ") and install in line


@pytest.mark.slow
def test_the_readme_python_snippet(venv: Venv) -> None:
    snippet = re.search(r"```python\n(.*?)```", README, re.DOTALL).group(1)
    venv.ok(venv.bin / "python", "-c", snippet)
