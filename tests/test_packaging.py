"""Every data file keet needs at run time is in the wheel: `pip install .` (the README's first
command) copies only what pyproject's package-data names, so a template or the optimize
harness left out works in the editable test install and fails for users."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_package_data_covers_every_non_python_file() -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, patterns in package_data.items():
        base = ROOT / package
        files = [p.relative_to(base).as_posix() for p in base.rglob("*")
                 if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
        missing = [f for f in files if not any(fnmatch(f, pattern) for pattern in patterns)]
        assert not missing, f"{package}: not in package-data: {missing}"
