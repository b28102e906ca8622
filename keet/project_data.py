"""Where the project's data lives when the commands run: the kernel zoo (profiles/) and the
source checkout.

`pip install .` copies only the Python packages and their package-data into site-packages;
profiles/ (the measured zoo, its manifest, the LLM evaluation questions) stays in the
repository. So a default computed from ``__file__`` works in an editable install and points
into site-packages after a real one. The commands therefore take the data from an explicit
option, else from the working directory or one of its parents (a checkout or a copy of
profiles/ the user is standing in), else from the source checkout the code runs from.

    manifest_path(None)          # profiles/manifest.json found from the cwd, or KeetError
    profiles_dir(Path("zoo"))    # an explicit folder, checked
    source_checkout()            # the repository root when running from a checkout, else None
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from keet.errors import KeetError

MANIFEST = "manifest.json"
PROJECT = "keet"  # [project] name in pyproject.toml: tells our checkout from another project's


class ProjectDataNotFound(KeetError):
    """No profiles/ folder was given and none was found: one line saying what to pass."""


def source_checkout() -> Path | None:
    """The repository root when keet is imported from a source checkout (editable install or
    run in place), else None (a wheel install: the parent of site-packages/keet is no checkout)."""
    root = Path(__file__).resolve().parents[1]
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("name") == PROJECT else None


def _is_zoo_manifest(path: Path) -> bool:
    """A manifest of our zoo (gpus and kernels), not some other project's manifest.json."""
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(document, dict) and isinstance(document.get("gpus"), dict) and isinstance(document.get("kernels"), list)


def candidates(cwd: Path | None = None) -> list[Path]:
    """The profiles/ folders searched, in order: the working directory and each parent, then
    the source checkout (so an editable install works from anywhere)."""
    start = (cwd or Path.cwd()).resolve()
    found = [directory / "profiles" for directory in (start, *start.parents)]
    if (checkout := source_checkout()) is not None:
        found.append(checkout / "profiles")
    return list(dict.fromkeys(found))


def find_profiles(cwd: Path | None = None) -> Path | None:
    """The first searched profiles/ folder that holds the zoo's manifest, or None."""
    return next((d for d in candidates(cwd) if _is_zoo_manifest(d / MANIFEST)), None)


def _not_found(option: str) -> ProjectDataNotFound:
    return ProjectDataNotFound(f"no profiles/{MANIFEST} of the kernel zoo in {Path.cwd()} or its parents: run from a keet "
                               f"source checkout (or a copy of its profiles/ folder), or pass {option}")


def manifest_path(explicit: str | Path | None = None, option: str = "--manifest PATH") -> Path:
    """The zoo manifest to read: ``explicit`` if given (checked), else the searched default.
    ``option`` names the flag the error message tells the user to pass."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise KeetError(f"{path}: no such manifest file")
        if not _is_zoo_manifest(path):
            raise KeetError(f"{path}: not a kernel-zoo manifest (JSON with 'gpus' and 'kernels', as profiles/{MANIFEST})")
        return path
    found = find_profiles()
    if found is None:
        raise _not_found(option)
    return found / MANIFEST


def profiles_dir(explicit: str | Path | None = None, option: str = "--profiles DIR") -> Path:
    """The zoo's profiles/ folder (absolute): ``explicit`` if given (checked), else the
    searched default."""
    if explicit is not None:
        path = Path(explicit)
        if not _is_zoo_manifest(path / MANIFEST):
            raise KeetError(f"{path}: not the kernel zoo's profiles folder (no valid {MANIFEST} in it)")
        return path.resolve()
    found = find_profiles()
    if found is None:
        raise _not_found(option)
    return found


def writable_source_dir(*parts: str) -> Path | None:
    """A folder of the source checkout (e.g. perfmodel/hardware) when keet runs from one and the
    folder is writable by this user; None otherwise (a wheel install must not be written to)."""
    checkout = source_checkout()
    if checkout is None:
        return None
    folder = checkout.joinpath(*parts)
    return folder if folder.is_dir() and os.access(folder, os.W_OK) else None


def corpus_manifest(zoo_manifest: str | Path) -> dict | None:
    """The real-world corpus's manifest (profiles/corpus/manifest.json, beside the zoo's), or
    None where the checkout has none. Report paths in it are relative to its folder."""
    path = Path(zoo_manifest).parent / "corpus" / "manifest.json"
    if not path.exists():
        return None
    manifest = json.loads(path.read_text())
    manifest["root"] = str(path.parent)
    return manifest
