"""The README's set-up commands are the ones CI runs and point at files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```(?:bash|sh)\n(.*?)```", section, flags=re.DOTALL)]


def test_two_setup_commands():
    first, second = readme_commands()
    assert "keet explain" in first and "pip install" in first
    assert "pytest" in second and "pip install" in second


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci


def test_bundled_profile_of_first_command_exists():
    first = readme_commands()[0]
    profile = re.search(r"keet explain (\S+)", first).group(1)
    assert (ROOT / profile).is_file()
