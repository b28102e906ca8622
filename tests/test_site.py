"""keet report over folders: the static site (keet/report/batch.py). Its index (one row per
kernel, links that resolve, the sortable table, escaping, the change against the baseline),
incremental rebuilds (nothing redone when nothing changed, a changed profile redone, a removed
one dropped, a code change redoing all), the same bytes from --jobs 2 and from a Dask
LocalCluster as from one process, and bad input.

Built from small real profiles (two zoo reports of one kernel captured on H100 and H200, a
34-kernel ncu CSV export, a rocprof-compute MI200 table): a site of five pages."""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
from base64 import b64encode
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

from keet.cli import cli
from keet.errors import KeetError
from keet.ingest import load_profile
from keet.report import batch
from keet.report.batch import MANIFEST, build_site, plan_site

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"
AMD = ROOT / "tests" / "data" / "rocprof"
HOSTILE_NAME = "<img src=x onerror=alert(1)>spill_kernel"
REAL_FINGERPRINT = batch.code_fingerprint  # before the fixture below replaces it


@pytest.fixture(autouse=True)
def fixed_fingerprint(monkeypatch):
    """The code's fingerprint, fixed: other work on this checkout (an edited module) must not make
    a rerun rebuild pages in the middle of a test. test_a_code_change_rebuilds_every_page checks
    the fingerprint's own effect."""
    monkeypatch.setattr(batch, "code_fingerprint", lambda: "fixed for the test")


def make_root(folder: Path) -> Path:
    """profiles/{h100,h200}/ncu/smem_bandwidth (a comparison pair), an ncu CSV export of the zoo
    with a kernel named as markup, and a rocprof-compute table."""
    root = folder / "profiles"
    for gpu in ("h100", "h200"):
        (root / gpu / "ncu").mkdir(parents=True)
        shutil.copy(PROFILES / gpu / "ncu" / "smem_bandwidth.ncu-rep.xz", root / gpu / "ncu")
    (root / "h100" / "csv").mkdir()
    text = lzma.decompress((PROFILES / "h100" / "csv" / "zoo_all_details.csv.xz").read_bytes()).decode()
    (root / "h100" / "csv" / "zoo details.csv").write_text(text.replace("spill_kernel", HOSTILE_NAME))
    (root / "h100" / "amd").mkdir()
    shutil.copy(AMD / "mi200_v1backend_pmc_perf.csv", root / "h100" / "amd")
    return root


def files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built once, in this process (the serial path); tests copy it before changing it."""
    folder = tmp_path_factory.mktemp("site")
    root = make_root(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch, "code_fingerprint", lambda: "fixed for the test")
        result = build_site([root], folder / "out")
    return root, folder / "out", result


class Index(HTMLParser):
    """The kernel rows of index.html: each row's cells (text, data-sort, links)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[dict]] = []
        self.links: list[str] = []
        self.table = None
        self.body = False
        self.cell: dict | None = None
        self.scripts: list[str] = []
        self.in_script = False
        self.csp = ""

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "table":
            self.table = attributes.get("id")
        elif tag == "tbody" and self.table == "kernels":
            self.body = True
        elif tag == "tr" and self.body:
            self.rows.append([])
        elif tag == "td" and self.body:
            self.cell = {"text": "", "sort": attributes.get("data-sort"), "href": None}
            self.rows[-1].append(self.cell)
        elif tag == "a":
            self.links.append(attributes["href"])
            if self.cell is not None:
                self.cell["href"] = attributes["href"]
        elif tag == "script":
            self.in_script = True
            self.scripts.append("")
        elif tag == "meta" and attributes.get("http-equiv") == "Content-Security-Policy":
            self.csp = attributes["content"]

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None
        elif tag == "table":
            self.table = None
        elif tag == "tbody":
            self.body = False
        elif tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data
        if self.in_script:
            self.scripts[-1] += data


def parse_index(out: Path) -> Index:
    index = Index()
    index.feed((out / "index.html").read_text(encoding="utf-8"))
    return index


def test_the_site_has_a_page_per_profile_and_the_comparison(site):
    root, out, result = site
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    assert pages == ["compare/ncu/smem_bandwidth_h100_vs_h200.html", "h100/amd/mi200_v1backend_pmc_perf.html",
                     "h100/csv/zoo details.html", "h100/ncu/smem_bandwidth.html", "h200/ncu/smem_bandwidth.html", "index.html"]
    assert sorted(result.built) == pages[:-1] and result.kept == [] and result.problems == []
    assert (out / MANIFEST).is_file() and result.kernels == 1 + 1 + 34 + len(load_profile(AMD / "mi200_v1backend_pmc_perf.csv").kernels)
    for page in pages:  # relocatable and the same wherever built: no absolute path, no build time
        text = (out / page).read_text(encoding="utf-8")
        assert str(root.parent) not in text
        assert page == "index.html" or "Generated by keet" in text


def test_the_index_has_one_row_per_kernel_and_its_links_resolve(site):
    root, out, _ = site
    index = parse_index(out)
    profiles = {"h100/ncu/smem_bandwidth.ncu-rep.xz": root / "h100/ncu/smem_bandwidth.ncu-rep.xz",
                "h200/ncu/smem_bandwidth.ncu-rep.xz": root / "h200/ncu/smem_bandwidth.ncu-rep.xz",
                "h100/csv/zoo details.csv": root / "h100/csv/zoo details.csv",
                "h100/amd/mi200_v1backend_pmc_perf.csv": root / "h100/amd/mi200_v1backend_pmc_perf.csv"}
    expected = sorted((name, kernel.name) for name, path in profiles.items() for kernel in load_profile(path).kernels)
    assert sorted((row[0]["text"], row[2]["text"]) for row in index.rows) == expected
    for link in index.links:
        path, _, anchor = link.partition("#")
        target = out / unquote(path)
        assert target.is_file(), link
        if anchor:
            assert f'id="{unquote(anchor)}"' in target.read_text(encoding="utf-8"), link


def test_the_index_is_sortable_by_its_own_script_only(site):
    _, out, _ = site
    html = (out / "index.html").read_text(encoding="utf-8")
    index = parse_index(out)
    assert 'class="sortable site" id="kernels"' in html and html.count("<button type=\"button\">") >= 8
    (script,) = index.scripts
    digest = b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in index.csp and "default-src 'none'" in index.csp
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # no CDN, nothing fetched
    durations = [row[3] for row in index.rows if row[3]["sort"]]
    assert all(float(cell["sort"]) > 0 and cell["text"].endswith("s") for cell in durations)


def test_kernel_names_are_escaped_in_the_index(site):
    _, out, _ = site
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;spill_kernel" in html
    assert HOSTILE_NAME in [row[2]["text"] for row in parse_index(out).rows]


def test_the_change_is_against_the_same_path_under_the_first_folder(site):
    root, out, _ = site
    rows = {row[0]["text"]: row for row in parse_index(out).rows}
    before = load_profile(root / "h100/ncu/smem_bandwidth.ncu-rep.xz").kernels[0].duration_ns
    after = load_profile(root / "h200/ncu/smem_bandwidth.ncu-rep.xz").kernels[0].duration_ns
    change = rows["h200/ncu/smem_bandwidth.ncu-rep.xz"][7]
    assert float(change["sort"]) == pytest.approx(after / before - 1)
    assert change["text"] == f"{(after / before - 1) * 100:+.1f}%"
    assert change["href"] == "compare/ncu/smem_bandwidth_h100_vs_h200.html"
    assert rows["h100/ncu/smem_bandwidth.ncu-rep.xz"][7]["sort"] == ""  # the baseline itself has no change


def test_a_rerun_with_nothing_changed_rebuilds_nothing(site, tmp_path):
    root, out, first = site
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    times = {p: p.stat().st_mtime_ns for p in copy.rglob("*") if p.is_file()}
    again = build_site([root], copy)
    assert again.built == [] and sorted(again.kept) == sorted(first.built) and again.removed == []
    assert {p: p.stat().st_mtime_ns for p in copy.rglob("*") if p.is_file()} == times  # not even the index is rewritten


def _copies(site, tmp_path: Path) -> tuple[Path, Path]:
    """Copies of the site's profile folder and built site, to change without touching the module's."""
    root, out, _ = site
    shutil.copytree(root, tmp_path / "profiles")
    shutil.copytree(out, tmp_path / "out")
    return tmp_path / "profiles", tmp_path / "out"


@pytest.mark.slow  # rebuilds pages (4 s); the unchanged rerun and the failing profile keep the incremental build in the default tier
def test_a_changed_profile_is_rebuilt_and_a_removed_one_dropped(site, tmp_path):
    root, out = _copies(site, tmp_path)
    shutil.copy(PROFILES / "h200/ncu/dram_triad.ncu-rep.xz", root / "h200/ncu/smem_bandwidth.ncu-rep.xz")  # new content, same name
    shutil.rmtree(root / "h100" / "amd")
    untouched = (out / "h100/csv/zoo details.html").stat().st_mtime_ns
    result = build_site([root], out)
    assert result.built == ["h200/ncu/smem_bandwidth.html", "compare/ncu/smem_bandwidth_h100_vs_h200.html"]
    assert result.removed == ["h100/amd/mi200_v1backend_pmc_perf.html"] and result.problems == []
    assert not (out / "h100" / "amd").exists()  # its page and the folder it leaves empty
    assert (out / "h100/csv/zoo details.html").stat().st_mtime_ns == untouched
    assert "dram_triad" in (out / "h200/ncu/smem_bandwidth.html").read_text(encoding="utf-8")
    assert [row[0]["text"] for row in parse_index(out).rows].count("h100/amd/mi200_v1backend_pmc_perf.csv") == 0


def test_a_profile_that_fails_loses_its_old_page_and_is_listed(site, tmp_path):
    root, out = _copies(site, tmp_path)
    data = (root / "h200/ncu/smem_bandwidth.ncu-rep.xz").read_bytes()
    (root / "h200/ncu/smem_bandwidth.ncu-rep.xz").write_bytes(data[: len(data) // 2])
    result = build_site([root], out)
    assert len(result.failed) == 2 and all("\n" not in line for line in result.failed)  # the profile and its comparison
    assert result.failed[0].startswith("h200/ncu/smem_bandwidth.ncu-rep.xz: ")
    assert not (out / "h200/ncu/smem_bandwidth.html").exists() and not (out / "compare").exists()
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "Not built" in html and "h200/ncu/smem_bandwidth.ncu-rep.xz" in html
    assert (out / "h100/ncu/smem_bandwidth.html").is_file()


def test_a_code_change_rebuilds_every_page(site, tmp_path, monkeypatch):
    root, out, _ = site
    shutil.copytree(out, tmp_path / "out")
    monkeypatch.setattr(batch, "code_fingerprint", lambda: "keet changed")
    monkeypatch.setattr(batch, "build_page", lambda job: batch.PageResult(job.page, error=f"{job.title}: rebuilt"))
    result = build_site([root], tmp_path / "out")
    assert sorted(line.removesuffix(": rebuilt") for line in result.failed) == sorted(
        job.title for job in plan_site([root]).jobs)  # every page went to build_page again


def test_the_fingerprint_covers_the_libraries_that_draw_a_page(monkeypatch):
    first = REAL_FINGERPRINT()
    assert REAL_FINGERPRINT() == first and re.fullmatch("[0-9a-f]{64}", first)
    real_version = batch.importlib.metadata.version
    monkeypatch.setattr(batch.importlib.metadata, "version",
                        lambda name: "99.0" if name == "matplotlib" else real_version(name))
    assert REAL_FINGERPRINT() != first


@pytest.mark.slow
def test_jobs_2_gives_the_same_bytes_as_one_process(site, tmp_path):
    root, out, _ = site
    result = build_site([root], tmp_path / "out", jobs=2)
    assert result.problems == [] and files(tmp_path / "out") == files(out)


@pytest.mark.slow
def test_a_dask_local_cluster_gives_the_same_bytes(site, tmp_path):
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    root, out, _ = site
    # the Nsight Compute reader starts worker processes: Dask's workers must not be daemonic
    with dask.config.set({"distributed.worker.daemon": False}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        result = build_site([root], tmp_path / "out", scheduler=cluster.scheduler_address)
    assert result.problems == [] and files(tmp_path / "out") == files(out)


@pytest.mark.slow
def test_daemonic_dask_workers_are_one_clear_error(site, tmp_path):
    distributed = pytest.importorskip("distributed")
    root, _, _ = site
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            pytest.raises(KeetError, match="DASK_DISTRIBUTED__WORKER__DAEMON=False") as error:
        build_site([root], tmp_path / "out", scheduler=cluster.scheduler_address)
    assert "\n" not in str(error.value)


def test_without_dask_the_scheduler_is_one_line_with_the_install_command(site, tmp_path, monkeypatch):
    root, _, _ = site
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(KeetError, match=re.escape("pip install -c constraints.txt -e '.[site]'")) as error:
        build_site([root], tmp_path / "out", scheduler="tcp://127.0.0.1:1")
    assert "\n" not in str(error.value)


def test_several_folders_and_a_baseline_folder_are_planned(tmp_path):
    for folder in ("old", "new", "also"):
        (tmp_path / folder / "ncu").mkdir(parents=True)
    shutil.copy(PROFILES / "h100/ncu/transpose_smem_conflict.ncu-rep.xz", tmp_path / "old/ncu/transpose.ncu-rep.xz")
    shutil.copy(PROFILES / "h100/ncu/transpose_smem_padded.ncu-rep.xz", tmp_path / "new/ncu/transpose.ncu-rep.xz")
    shutil.copy(PROFILES / "h100/ncu/dram_triad.ncu-rep.xz", tmp_path / "also/ncu/transpose.ncu-rep.xz")
    several = plan_site([tmp_path / "old", tmp_path / "new"])
    assert [job.page for job in several.jobs] == ["old/ncu/transpose.html", "new/ncu/transpose.html",
                                                   "compare/ncu/transpose_old_vs_new.html"]
    assert several.baselines == {"new/ncu/transpose.ncu-rep.xz": "old/ncu/transpose.ncu-rep.xz"}
    with_baseline = plan_site([tmp_path / "new", tmp_path / "also"], baseline=tmp_path / "old")
    assert [job.page for job in with_baseline.jobs] == ["baseline/ncu/transpose.html", "new/ncu/transpose.html",
                                                        "also/ncu/transpose.html", "compare/ncu/transpose_baseline_vs_new_vs_also.html"]
    assert set(with_baseline.baselines.values()) == {"baseline/ncu/transpose.ncu-rep.xz"}
    one = plan_site([tmp_path / "new"], baseline=tmp_path / "old")  # one folder keeps its layout
    assert [job.page for job in one.jobs] == ["baseline/ncu/transpose.html", "ncu/transpose.html",
                                              "compare/ncu/transpose_baseline_vs_new.html"]


def test_a_manifest_cannot_make_the_site_remove_files_outside_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "precious.html").write_text("keep")
    record = '{"digest": "d", "size": 1, "summary": null}'
    (out / MANIFEST).write_text(f'{{"format": 1, "pages": {{"../precious.html": {record}, "/etc/x.html": {record}, "a/b.html": {record}, '
                                f'"c.html": {{"digest": "d", "size": 1, "summary": {{"kernels": "not rows"}}}}}}}}')
    assert list(batch._read_manifest(out)) == ["a/b.html"]  # the others: never removed, and rebuilt


def test_cli_options_of_a_site_are_refused_for_profiles(tmp_path):
    profile = PROFILES / "h100/ncu/smem_bandwidth.ncu-rep.xz"
    result = CliRunner().invoke(cli, ["report", str(profile), "-o", str(tmp_path / "r.html"), "--jobs", "2"])
    assert result.exit_code == 2 and "apply to folders of profiles" in result.output
    (tmp_path / "dir" / "a").mkdir(parents=True)
    shutil.copy(profile, tmp_path / "dir" / "a")
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "dir"), str(profile), "-o", str(tmp_path / "o")],
                                standalone_mode=False, catch_exceptions=True)
    assert isinstance(result.exception, KeetError) and "not both" in str(result.exception)


def _keet(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "from keet.cli import main; main()", *map(str, args)]
    env = {k: v for k, v in os.environ.items() if k != "KEET_DEBUG"}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300, check=False)


def test_a_missing_folder_is_one_line_and_status_2(tmp_path):
    result = _keet("report", tmp_path / "nowhere", "-o", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "nowhere" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_an_unreadable_profile_is_one_line_status_1_and_the_rest_is_written(tmp_path):
    root = tmp_path / "profiles"
    (root / "a").mkdir(parents=True)
    shutil.copy(AMD / "mi200_v1backend_pmc_perf.csv", root / "a" / "good.csv")
    data = (PROFILES / "h100/ncu/smem_bandwidth.ncu-rep.xz").read_bytes()
    (root / "a" / "cut.ncu-rep.xz").write_bytes(data[: len(data) // 2])
    result = _keet("report", root, "-o", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("a/cut.ncu-rep.xz: ")
    assert (tmp_path / "out/a/good.html").is_file() and not (tmp_path / "out/a/cut.html").exists()
    assert result.stdout.startswith("1 page in ") and "index.html" in result.stdout


@pytest.mark.browser
def test_the_index_sorts_in_chromium_and_runs_nothing_else(site, chromium):
    from playwright.sync_api import sync_playwright

    _, out, _ = site
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=flags)
        try:
            page = browser.new_page()
            errors, requests, dialogs = [], [], []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("request", lambda request: requests.append(request.url))
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto((out / "index.html").as_uri(), wait_until="load")
            cells = page.locator("#kernels tbody tr td:nth-child(4)")
            values = lambda: [float(v) for v in cells.evaluate_all("cells => cells.map(c => c.dataset.sort)") if v]
            heading = page.locator("#kernels thead th", has_text="Duration")
            heading.locator("button").click()
            assert values() == sorted(values()) and heading.get_attribute("aria-sort") == "ascending"
            heading.locator("button").click()
            assert values() == sorted(values(), reverse=True) and heading.get_attribute("aria-sort") == "descending"
            page.locator("#kernels thead th button", has_text="Kernel").click()
            names = page.locator("#kernels tbody tr td:nth-child(3)").all_inner_texts()
            assert names == sorted(names, key=str.lower) and HOSTILE_NAME in names  # shown as text
            assert errors == [] and dialogs == [] and requests == [(out / "index.html").as_uri()]
        finally:
            browser.close()
