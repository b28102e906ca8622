"""Reports that tests only read, loaded once per test process.

Each load of a combined zoo report starts its reader's workers and reads 34 kernels (2-3 s on
2 cores); the default tier loaded the H100 one 35 times. A test that changes a profile (its
metrics, its kernels' durations) loads its own.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from keet import load_profile
from keet.diagnosis import read_ahead
from keet.profile import Profile

PROFILES = Path(__file__).resolve().parents[1] / "profiles"


@cache
def read_ahead_once(path: Path) -> Profile:
    """The report at `path`, read as `keet explain` reads it (per-instruction counters ahead)."""
    return load_profile(path, read_ahead=read_ahead())


def zoo(gpu: str) -> Profile:
    """The GPU's combined zoo report, read as `keet explain` reads it."""
    return read_ahead_once(PROFILES / gpu / "zoo_all.ncu-rep.xz")


def share_reads_ahead(monkeypatch, *paths: Path) -> None:
    """keet's commands run in this process get the copy of any of `paths` read once here
    whenever they read it whole: with the options `keet explain` passes (every kernel's counters
    ahead) or with none (`keet metrics`; the copy read ahead holds the same metrics): for tests
    of what the commands do with a profile, not of how it is read."""
    import keet.ingest

    real = keet.ingest.load_profile
    shared = {Path(p) for p in paths}

    def load(path, *args, **kwargs):
        if Path(path) in shared and not args and kwargs in ({}, {"read_ahead": read_ahead()}):
            return read_ahead_once(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(keet.ingest, "load_profile", load)


def zoo_only_profiles(folder: Path) -> Path:
    """A profiles/ folder in `folder` that links every part of ours but the real-world corpus;
    returns its manifest.json. `perfmodel validate --manifest` on it does everything but read
    the 59 MB of corpus reports (a minute on 2 cores), which its document says is not assessed:
    for tests of the command, not of the corpus figures."""
    mirror = folder / "profiles"
    mirror.mkdir()
    for part in PROFILES.iterdir():
        if part.name != "corpus":
            (mirror / part.name).symlink_to(part)
    return mirror / "manifest.json"
