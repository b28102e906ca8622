"""The site of a folder of profiles (issue 23, "many reports"): built cold into an empty folder,
then again with nothing changed. Target: a 400-profile folder in < 10 minutes on 2 cores, a rerun
with nothing changed in < 30 s.

Two folders: profiles/ as bundled (97 profiles: the zoo on H100 and H200, the corpus parts,
the CSV exports, the reduced reports, the optimize runs' candidates), and a 400-profile folder:
the bundled tree plus 303 hard links (copies where the file system refuses links) of the
one-kernel zoo reports, each under a name of its own at the top of an ``extra/`` folder, so that
they add profile pages and no comparison. Both build with ``--jobs 2`` (KEET_SITE_BENCH_JOBS)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from keet.report.batch import build_site, find_profiles

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"
JOBS = int(os.environ.get("KEET_SITE_BENCH_JOBS", "2"))
TARGET_PROFILES = 400


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system, or links refused
        shutil.copy2(source, target)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    big = tmp_path_factory.mktemp("profiles400") / "profiles"
    bundled = find_profiles(PROFILES)
    for path in bundled:
        if path.is_dir():
            shutil.copytree(path, big / path.relative_to(PROFILES))
        else:
            _link(path, big / path.relative_to(PROFILES))
    singles = sorted((PROFILES / "h100" / "ncu").glob("*.ncu-rep.xz")) + sorted((PROFILES / "h200" / "ncu").glob("*.ncu-rep.xz"))
    for number in range(TARGET_PROFILES - len(bundled)):
        source = singles[number % len(singles)]
        _link(source, big / "extra" / f"r{number:03d}_{source.parent.parent.name}_{source.name}")
    assert len(find_profiles(big)) == TARGET_PROFILES
    return {"bundled": PROFILES, "400": big}


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    return {name: tmp_path_factory.mktemp(f"site_{name}") / "site" for name in ("bundled", "400")}


@pytest.mark.parametrize("name", ["bundled", "400"])
def test_site_cold(benchmark, folders, sites, name):
    result = benchmark.pedantic(build_site, args=([folders[name]], sites[name]), kwargs={"jobs": JOBS}, rounds=1, iterations=1)
    benchmark.extra_info.update(profiles=len(find_profiles(folders[name])), pages=result.pages, kernels=result.kernels,
                                failed=len(result.failed), jobs=JOBS)
    assert result.built and not result.kept


@pytest.mark.parametrize("name", ["bundled", "400"])
def test_site_warm(benchmark, folders, sites, name):
    if not (sites[name] / "index.html").is_file():
        pytest.skip("needs the cold build of the same folder first (run the module whole)")
    result = benchmark.pedantic(build_site, args=([folders[name]], sites[name]), kwargs={"jobs": JOBS}, rounds=3, iterations=1)
    assert result.built == [] and result.kept
