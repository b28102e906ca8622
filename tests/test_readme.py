"""The README's set-up commands are the ones CI runs, point at files that exist, and name the
test tiers pyproject.toml defines."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_PACKAGES = ".ci/install-system-packages"


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```(?:bash|sh)\n(.*?)```", section, flags=re.DOTALL)]


def pytest_options() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]


def test_three_setup_commands():
    install, fast, full = readme_commands()
    assert "keet explain" in install and "pip install" in install
    assert "pytest" in fast and "pip install" in fast and "llm-local" not in fast and SYSTEM_PACKAGES not in fast
    assert "pytest" in full and "llm-local" in full and full.startswith(f"bash {SYSTEM_PACKAGES} && ")


def test_fast_command_runs_the_default_tier_and_the_full_one_every_tier():
    _, fast, full = readme_commands()
    fast_options = shlex.split(fast.rsplit("&&", 1)[1].split("pytest", 1)[1])
    full_options = shlex.split(full.rsplit("&&", 1)[1].split("pytest", 1)[1])
    assert "-m" not in fast_options  # the addopts default: the fast tier
    assert full_options[-2:] == ["-m", ""]  # every tier


def test_ci_runs_the_readme_full_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme_commands()[2] in ci


def test_system_packages_come_from_one_script_and_no_test_installs_any():
    script = ROOT / SYSTEM_PACKAGES
    assert script.is_file() and script.stat().st_mode & 0o111
    for package in ("hipcc", "clang-19", "chromium", "bubblewrap"):
        assert re.search(rf"^packages=\(.*\b{package}\b", script.read_text(), flags=re.MULTILINE), package
    for test_file in (ROOT / "tests").glob("*.py"):
        assert "apt-get install" not in test_file.read_text().replace('"apt-get install" not in', ""), test_file.name


def test_default_tier_leaves_out_exactly_the_registered_tiers():
    options = pytest_options()
    registered = {marker.split(":")[0] for marker in options["markers"]}
    assert registered == {"slow", "toolchain", "browser", "llm_local"}
    expression = shlex.split(options["addopts"])[shlex.split(options["addopts"]).index("-m") + 1]
    assert expression == " and ".join(f"not {m}" for m in ("slow", "toolchain", "browser", "llm_local"))
    setup = (ROOT / "README.md").read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{marker}`" in setup for marker in registered)


def test_bundled_profile_of_first_command_exists():
    first = readme_commands()[0]
    profile = re.search(r"keet explain (\S+)", first).group(1)
    assert (ROOT / profile).is_file()
