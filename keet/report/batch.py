"""A static site of reports for folders of profiles, as CI and ``keet report DIR -o OUTDIR`` make it:

    python -m keet.report.batch profiles reports [--jobs N | --scheduler ADDRESS] [--baseline DIR]

One report page per profile file (or profiler workload folder), at the same relative path under
the output folder; one comparison page for each set of profiles that share a relative path
under different top-level folders (profiles/h100/ncu/x.ncu-rep.xz with profiles/h200/ncu/
x.ncu-rep.xz: the same kernels on two GPUs), the first folder being the baseline, or with
``--baseline DIR`` for each profile that has a namesake in DIR; and index.html: one sortable
table of every kernel of every profile (duration, verdict, limiter, speed-of-light fraction,
change against its baseline) linking to the pages. Every page is checked with
keet.report.check: the command fails (status 1) when a page lacks a section its profile can fill.

Incremental: OUTDIR/.keet-site.json records, per page, a digest of its inputs' content, of keet's
code and data and of the versions of the libraries that draw it, with the index rows of the
page. A page whose digest has not changed is not rebuilt (its profiles are hashed, not read);
the index is rebuilt from the stored rows; pages of profiles no longer there are removed.

One function, :func:`build_page`, builds a page from plain data and returns plain data; it runs
in this process, in ``--jobs N`` local worker processes, or on the workers of an existing Dask
cluster (``--scheduler``, dask.distributed). Only this process writes files, so every path
gives the same bytes: pages carry no timestamp and no absolute path (a profile is named by its
input folder's name and its path below it).

One bad profile does not stop the site: each failure (an unreadable or hostile file, a FIFO or
device where a profile file is expected, any error while building its page) is one line on
stderr, the other pages and the index are still written, and the status is 1 at the end.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import click

from keet import __version__
from keet.cli_runner import run_cli
from keet.errors import KeetError, ProfileError
from keet.format import si
from keet.ingest import detect, limits, load_profile
from keet.outputs import atomic_write_text, check_output_path
from keet.report.page import render_index
from keet.safe_text import terminal

PROFILE_SUFFIXES = (".xz", ".gz", ".ncu-rep", ".csv", ".db", ".json", ".sqlite")
MANIFEST = ".keet-site.json"
# Bumped when the manifest's shape changes: an older manifest is then ignored (every page rebuilt).
MANIFEST_FORMAT = 1
# Libraries whose version changes the bytes of a page (figures, markup, what is read).
PAGE_LIBRARIES = ("matplotlib", "jinja2", "ncu-report", "numpy", "pandas", "scipy")
# Files of keet and perfmodel that shape a page: code, hardware and rule data, templates.
CODE_SUFFIXES = (".py", ".toml", ".json", ".j2", ".css", ".js")
# The manifest is saved this often while pages are built, so that an interrupted build keeps
# what it finished without rewriting the manifest after every page.
SAVE_EVERY_S = 5.0
INSTALL_DASK = "pip install -c constraints.txt -e '.[site]'"

# Told what the site build is doing (a status line on a terminal; see keet.cli_options).
Progress = Callable[[str], None] | None


def find_profiles(root: Path, refused: list[str] | None = None, skip: Collection[Path] = ()) -> list[Path]:
    """Profile files and workload folders under root, in path order (formats are recognised
    by content; other files are skipped, and so is anything inside a folder of ``skip``: the
    output folder when it lies inside an input).

    A path named like a profile that is no regular file (a FIFO, whose open would block; a
    device) or is beyond keet's size bound is not opened: it is added to ``refused`` as the
    one-line error that says so.
    """
    found: list[Path] = []
    taken: set[Path] = set()
    skipped = {Path(s).absolute() for s in skip}
    for path in sorted(root.rglob("*")):
        if any(parent in taken for parent in path.parents):
            continue  # inside a workload folder already taken whole
        if skipped and any(parent in skipped for parent in (path.absolute(), *path.absolute().parents)):
            continue
        if path.is_dir() or path.name.endswith(PROFILE_SUFFIXES):
            try:
                if not path.is_dir():
                    limits.regular_file(path)
            except ProfileError as exc:
                if refused is not None:
                    refused.append(str(exc))
                continue
            try:
                detect(path)
            except ProfileError:
                continue
            found.append(path)
            taken.add(path)
    return found


def report_name(relative: Path) -> Path:
    """x/y/z.ncu-rep.xz -> x/y/z.html"""
    name = relative.name
    for suffix in PROFILE_SUFFIXES:
        name = name.removesuffix(suffix)
    return relative.with_name(name + ".html")


def comparison_sets(root: Path, profiles: list[Path]) -> dict[Path, list[Path]]:
    """Profiles sharing a path below their top-level folder: {shared path: [profiles]}."""
    groups: dict[Path, list[Path]] = {}
    for path in profiles:
        parts = path.relative_to(root).parts
        if len(parts) > 1:
            groups.setdefault(Path(*parts[1:]), []).append(path)
    return {shared: paths for shared, paths in groups.items() if len(paths) > 1}


# --- the per-page function: plain data in, plain data out ---------------------------------------


@dataclass(frozen=True)
class Source:
    """One profile as a page job reads and names it."""

    path: str  # where to read it: as given here, absolute for a Dask worker
    label: str  # how the page names it: its input folder's name and the path below it


@dataclass(frozen=True)
class PageJob:
    """One page to build: a profile's report (kind "profile") or a comparison ("compare")."""

    page: str  # the page's path below the output folder, with "/" separators
    title: str
    kind: str
    sources: tuple[Source, ...]


@dataclass
class PageResult:
    """What :func:`build_page` returns: the page, or the one line that says why there is none."""

    page: str
    html: str | None = None
    summary: dict[str, Any] | None = None  # profile pages: device, format and the index rows of its kernels
    kernels: int = 0
    missing: list[str] = field(default_factory=list)  # keet.report.check's lines
    error: str | None = None
    seconds: float = 0.0


# Pages are built one at a time per process: matplotlib's style is process-wide state, and the
# Nsight Compute reader forks its workers (a Dask worker with several threads would otherwise
# draw two pages under one another's style).
_BUILD_LOCK = threading.Lock()


def _load(path: str):
    """Read one profile (the seam tests use to plant a failure)."""
    from keet.report.assemble import READ_AHEAD

    return load_profile(path, read_ahead=READ_AHEAD)


def _render(job: PageJob) -> tuple[str, dict[str, Any] | None, int, list[str]]:
    from keet.report.assemble import build
    from keet.report.check import missing_sections
    from keet.report.page import render

    profiles = []
    for source in job.sources:
        profile = _load(source.path)
        profile.source = source.label  # the page names no absolute path: the same bytes wherever the folder lies
        profiles.append(profile)
    report = build(profiles, job.title)
    # no build time on the page: a page rebuilt with nothing changed (or on another worker) has the same bytes
    report.generated = ""
    html = render(report)
    kernels = sum(len(p.kernels) for p in profiles)
    return html, _summary(report) if job.kind == "profile" else None, kernels, missing_sections(profiles, html)


def build_page(job: PageJob) -> PageResult:
    """Read the job's profiles, build and render its page, check its sections, and return the
    page with its index rows; never raises (a failure is the result's one-line ``error``).

    The same function runs in this process, in local worker processes and on Dask workers."""
    began = time.perf_counter()
    with _BUILD_LOCK:
        try:
            html, summary, kernels, missing = _render(job)
        except KeetError as exc:
            return PageResult(job.page, error=f"{job.title}: {exc}", seconds=time.perf_counter() - began)
        except Exception as exc:  # noqa: BLE001 - one profile's bug must not cost the other pages
            return PageResult(job.page, error=f"{job.title}: internal error: {type(exc).__name__}: {exc}",
                              seconds=time.perf_counter() - began)
        finally:
            # A report's profiles hold the worker processes of the Nsight Compute reader; a worker
            # that builds many pages ends them now, not at some later collection.
            gc.collect()
    return PageResult(job.page, html, summary, kernels, missing, seconds=time.perf_counter() - began)


def _finite(value: Any) -> float | None:
    """A number for JSON (the manifest) and sorting: None for missing, NaN or infinite values."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def verdict_label(entry: dict[str, Any]) -> str:
    """A kernel's verdict in one or two words, as `keet explain`'s summary table names it: the
    verdict's category, else the top finding's, else "no finding"; "not assessed" when nothing
    could be weighed."""
    verdict = entry.get("verdict") or {}
    if verdict.get("kind") == "not_assessed":
        return "not assessed"
    return verdict.get("category") or (entry["diagnosis"][0]["category"] if entry.get("diagnosis") else "no finding")


def _summary(report) -> dict[str, Any]:
    """The index rows of a one-profile report: one per kernel, longest first."""
    profile_report = report.profiles[0]
    rows = []
    for kernel_report in profile_report.kernels:
        kernel, entry = kernel_report.kernel, kernel_report.entry
        sol = entry.get("speed_of_light") or {}
        assessed = sol.get("attainable_ns") is not None
        rows.append({
            "id": kernel.id,
            "name": kernel.name,
            "function_name": kernel.function_name,
            "anchor": kernel_report.anchor,
            "duration_ns": _finite(kernel.duration_ns),
            "verdict": verdict_label(entry),
            "verdict_text": (entry.get("verdict") or {}).get("text"),
            "limiter": sol.get("limiter") if assessed else None,
            "fraction": _finite(sol.get("fraction")) if assessed else None,
            "recoverable_ns": _finite(entry.get("recoverable_ns")),
        })
    profile = profile_report.profile
    return {"device": profile.device.name, "format": profile.format, "kernels": rows}


# --- planning: which pages, named how, compared with what ------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One profile of the site."""

    source: Source
    site: PurePosixPath  # its path below the site
    key: str  # what pairs it with its baseline: the path below its top-level folder or input root
    side: str  # what a comparison calls its folder: the top-level folder, the input folder, or the baseline
    is_baseline: bool = False


@dataclass
class Plan:
    """Every page of a site, in a fixed order, and how profiles pair with their baselines."""

    entries: list[Entry]
    jobs: list[PageJob]
    pages: dict[str, str]  # a profile's label -> its page
    baselines: dict[str, str]  # a profile's label -> its baseline's label
    comparisons: dict[str, str]  # a profile's label -> the comparison page that shows it beside its baseline
    inputs: list[Path]  # the folders read
    refused: list[str] = field(default_factory=list)


def _unique(name: str, taken: Collection[str]) -> str:
    """``name``, or name-2, name-3... when it is taken."""
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}-{number}"
    return candidate


def _folder_name(root: Path) -> str:
    return root.absolute().name or "root"


def _check_folder(path: Path, what: str) -> None:
    """One line when ``path`` is not a folder keet can list (exit status 2 through run_cli)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise KeetError(f"{path}: no such folder{what}") from None
    except OSError as exc:
        raise KeetError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(mode):
        raise KeetError(f"{path}: is not a folder{what}")


def plan_site(roots: Sequence[str | Path], baseline: str | Path | None = None, out: str | Path | None = None) -> Plan:
    """The site's pages for profiles under ``roots`` (compared with their namesakes under
    ``baseline`` when given), in a fixed order: profile pages in input and path order, then
    comparison pages in the order of their shared path.

    One root keeps its own layout (its subfolders are the sides compared: h100/, h200/);
    several roots become top-level folders named after them, the first being the baseline.
    """
    roots = [Path(r) for r in roots]
    for root in roots:
        _check_folder(root, "")
    if baseline is not None:
        _check_folder(Path(baseline), " (--baseline)")
    refused: list[str] = []
    skip = [Path(out)] if out is not None else []
    entries: list[Entry] = []
    tops: list[str] = []
    for root in roots:
        found = find_profiles(root, refused, skip)
        if len(roots) == 1:
            for path in found:
                relative = PurePosixPath(path.relative_to(root).as_posix())
                key = str(PurePosixPath(*relative.parts[1:])) if len(relative.parts) > 1 else ""
                # without --baseline a profile pairs by the path below its top-level folder; with it, by its whole path
                if baseline is None:
                    entries.append(Entry(Source(str(path), f"{_folder_name(root)}/{relative}"), relative, key, relative.parts[0]))
                else:
                    entries.append(Entry(Source(str(path), f"{_folder_name(root)}/{relative}"), relative, str(relative),
                                         _folder_name(root)))
            tops.extend(dict.fromkeys(e.site.parts[0] for e in entries if len(e.site.parts) > 1))
        else:
            top = _unique(_folder_name(root), tops)
            tops.append(top)
            for path in found:
                relative = PurePosixPath(path.relative_to(root).as_posix())
                entries.append(Entry(Source(str(path), f"{top}/{relative}"), top / relative, str(relative), top))
    if baseline is not None:
        base_root = Path(baseline)
        base_top = _unique("baseline", tops + [e.side for e in entries])
        tops.insert(0, base_top)
        base_entries = []
        for path in find_profiles(base_root, refused, skip):
            relative = PurePosixPath(path.relative_to(base_root).as_posix())
            base_entries.append(Entry(Source(str(path), f"{base_top}/{relative}"), base_top / relative, str(relative), base_top, True))
        entries = base_entries + entries
    if not entries:
        raise KeetError(" ".join([f"no profiles under {', '.join(map(str, roots))}", *refused]))

    jobs: list[PageJob] = []
    pages: dict[str, str] = {}
    taken: set[str] = set()
    for entry in entries:
        page = report_name(Path(entry.site)).as_posix()
        if page in taken:  # x.csv beside x.ncu-rep: the second keeps its whole file name
            page = _unique(f"{entry.site}.html", taken)
        taken.add(page)
        pages[entry.source.label] = page
        jobs.append(PageJob(page, str(entry.site), "profile", (entry.source,)))

    # Pairing: with --baseline, the baseline folder's profile of the same path; without, the
    # first profile (in input and path order) that shares the path below its top-level folder.
    groups: dict[str, list[Entry]] = {}
    if baseline is not None:
        bases = {e.key: e for e in entries if e.is_baseline}
        for entry in entries:
            if not entry.is_baseline and entry.key in bases:
                groups.setdefault(entry.key, [bases[entry.key]]).append(entry)
    else:
        for entry in entries:
            if entry.key:
                groups.setdefault(entry.key, []).append(entry)
    compare_top = _unique("compare", tops)
    baselines: dict[str, str] = {}
    comparisons: dict[str, str] = {}
    for shared, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        sides = [m.side for m in members]
        name = report_name(Path(shared))
        page = _unique((PurePosixPath(compare_top) / PurePosixPath(name.as_posix()).with_name(
            f"{name.stem}_{'_vs_'.join(sides)}.html")).as_posix(), taken)
        taken.add(page)
        jobs.append(PageJob(page, f"{shared}: {' vs '.join(sides)}", "compare", tuple(m.source for m in members)))
        for member in members[1:]:
            baselines[member.source.label] = members[0].source.label
            comparisons[member.source.label] = page
    inputs = roots + ([Path(baseline)] if baseline is not None else [])
    return Plan(entries, jobs, pages, baselines, comparisons, inputs, refused)


# --- incremental builds: content hashes and the manifest --------------------------------------------


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def content_hash(path: str | Path) -> str:
    """sha256 of a profile file; for a workload folder, of its files' relative paths and contents.
    Only regular files are opened (a FIFO inside a folder would block the read)."""
    path = Path(path)
    if not path.is_dir():
        return _file_digest(path)
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            file = Path(folder) / name
            try:
                if not stat.S_ISREG(os.stat(file).st_mode):
                    continue
                digest.update(f"{file.relative_to(path).as_posix()}\0{_file_digest(file)}\n".encode())
            except OSError:
                digest.update(f"{file.relative_to(path).as_posix()}\0unreadable\n".encode())
    return digest.hexdigest()


def code_fingerprint() -> str:
    """A hash of what shapes a page besides its profiles: keet's version, the source and data
    files of keet and perfmodel (rules, model, hardware files, templates) and the versions of
    the libraries that read and draw. A change to any of them rebuilds every page."""
    digest = hashlib.sha256(f"keet {__version__}\n".encode())
    for name in PAGE_LIBRARIES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{name} {version}\n".encode())
    for package in ("keet", "perfmodel"):
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            base = Path(location)
            for file in sorted(base.rglob("*")):
                if file.suffix in CODE_SUFFIXES and "__pycache__" not in file.parts and file.is_file():
                    digest.update(f"{package}/{file.relative_to(base).as_posix()}\0".encode())
                    digest.update(file.read_bytes())
    return digest.hexdigest()


def _job_digest(job: PageJob, fingerprint: str, hashes: dict[str, str]) -> str:
    """What a page depends on: the code, the page's name and title, its profiles' names and
    contents (not where they lie: a moved folder keeps its pages)."""
    text = json.dumps([MANIFEST_FORMAT, fingerprint, job.kind, job.page, job.title,
                       [(s.label, hashes[s.path]) for s in job.sources]])
    return hashlib.sha256(text.encode()).hexdigest()


def _safe_page(page: Any) -> bool:
    """A page path from the manifest that may be removed: relative, below the site, an HTML file
    (the manifest sits in a folder anyone may have edited)."""
    if not isinstance(page, str) or not page.endswith(".html") or page == "index.html":
        return False
    path = PurePosixPath(page)
    return not path.is_absolute() and ".." not in path.parts and "\\" not in page


def _read_manifest(out: Path) -> dict[str, dict[str, Any]]:
    """The pages the last build recorded, {} when there is no usable manifest (every page is rebuilt)."""
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or not isinstance(data.get("pages"), dict):
        return {}
    return {page: record for page, record in data["pages"].items() if _safe_page(page) and _usable(record)}


def _usable(record: Any) -> bool:
    """A manifest record this code can rebuild the index from (anything else: the page is rebuilt)."""
    if not isinstance(record, dict) or not isinstance(record.get("digest"), str) or not isinstance(record.get("size"), int):
        return False
    summary = record.get("summary")
    if summary is None:
        return True
    return (isinstance(summary, dict) and isinstance(summary.get("kernels"), list)
            and all(isinstance(row, dict) and isinstance(row.get("name"), str) for row in summary["kernels"]))


def _write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` unless the file already holds it (an unchanged site keeps its files' times)."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write_text(check_output_path(path), text)
    return True


def _save_manifest(out: Path, records: dict[str, dict[str, Any]]) -> None:
    document = {"format": MANIFEST_FORMAT, "keet": __version__, "pages": dict(sorted(records.items()))}
    _write_if_changed(out / MANIFEST, json.dumps(document, indent=1, sort_keys=True) + "\n")


# --- running the page jobs: here, in local processes, on a Dask cluster --------------------------


def _run_here(jobs: list[PageJob]) -> Iterator[PageResult]:
    for job in jobs:
        yield build_page(job)


def _run_local(jobs: list[PageJob], workers: int) -> Iterator[PageResult]:
    """Local worker processes, started with spawn: a fresh interpreter inherits no thread, lock
    or native-reader state of this process (which may have read profiles itself, as a test
    session or a notebook has), so no worker can hang on a lock held at a fork."""
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {pool.submit(build_page, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                yield future.result()
            except BrokenProcessPool:
                yield PageResult(job.page, error=f"{job.title}: a worker process died while building its page")
            except Exception as exc:  # noqa: BLE001 - a result that does not come back is this page's failure only
                yield PageResult(job.page, error=f"{job.title}: internal error: {type(exc).__name__}: {exc}")
    finally:
        # an interrupt or a write error here: the pages not started are dropped, not built for nothing
        pool.shutdown(wait=True, cancel_futures=True)


def _worker_is_daemon() -> bool:
    """Run on each Dask worker: a daemonic process cannot start the Nsight Compute reader's workers."""
    import multiprocessing

    return bool(multiprocessing.current_process().daemon)


def _run_dask(jobs: list[PageJob], address: str) -> Iterator[PageResult]:
    """The same build_page on the workers of an existing Dask cluster. The workers must see the
    profiles at the same absolute paths (a shared file system) and have keet installed; the
    pages come back to this process, which alone writes them. Connects and checks the workers
    at once, so that a missing dask, a wrong address or unfit workers are one line before
    anything is written."""
    try:
        from distributed import Client
    except ImportError:
        raise KeetError(f"--scheduler needs dask.distributed, which is not installed: {INSTALL_DASK}") from None
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise KeetError(f"--scheduler {address}: cannot connect to a Dask scheduler ({terminal(exc)})") from None
    try:
        daemonic = [worker for worker, daemon in client.run(_worker_is_daemon).items() if daemon]
    except Exception:
        client.close()
        raise
    if daemonic:
        client.close()
        raise KeetError(f"--scheduler {address}: {len(daemonic)} Dask worker(s) run as daemonic processes, which cannot start the "
                        "processes keet reads Nsight Compute reports in: start the workers with "
                        "DASK_DISTRIBUTED__WORKER__DAEMON=False (or dask worker --no-nanny)")
    return _dask_results(client, jobs)


def _dask_results(client, jobs: list[PageJob]) -> Iterator[PageResult]:
    from distributed import as_completed as dask_completed

    try:
        remote = [PageJob(j.page, j.title, j.kind, tuple(Source(os.path.abspath(s.path), s.label) for s in j.sources)) for j in jobs]
        futures = client.map(build_page, remote, pure=False)
        by_future = dict(zip(futures, jobs))
        for future in dask_completed(futures):
            job = by_future[future]
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker (KilledWorker) fails this page only
                yield PageResult(job.page, error=f"{job.title}: the Dask task failed: {type(exc).__name__}: {exc}")
            future.release()  # the page is written here: the cluster need not keep it
    finally:
        client.close()


# --- the site ------------------------------------------------------------------------------------


@dataclass
class SiteResult:
    """What a site build did."""

    out: Path
    pages: int  # pages the site has (index.html aside)
    kernels: int  # kernels of the profile pages
    built: list[str]  # pages built this time
    kept: list[str]  # pages whose inputs and code had not changed
    removed: list[str]  # pages of profiles that are gone
    failed: list[str]  # one line per page that could not be built
    problems: list[str]  # every line for stderr: refused paths, failures, missing sections
    seconds: float = 0.0

    @property
    def index(self) -> Path:
        return self.out / "index.html"


def build_site(roots: Sequence[str | Path], out: str | Path, *, jobs: int = 1, scheduler: str | None = None,
               baseline: str | Path | None = None, progress: Progress = None,
               on_page: Callable[[PageResult, int, int], None] | None = None) -> SiteResult:
    """Build (or bring up to date) the site of the profiles under ``roots`` in ``out``.

    jobs: local worker processes (1: this process); scheduler: the address of a Dask scheduler
    whose workers build the pages instead. ``progress`` hears what is going on (a status line);
    ``on_page`` is called with each page built (result, pages done, pages to build).
    Raises KeetError (one line) when an input is not a folder, holds no profile, or ``out``
    cannot be the site's folder; a profile that fails is a line of ``problems``."""
    tell = progress or (lambda message: None)
    started = time.monotonic()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise KeetError(f"{out}: the output exists and is not a folder; a site is written into a folder")
    tell("finding profiles")
    plan = plan_site(roots, baseline, out)
    tell(f"hashing {len(plan.entries)} profiles")
    fingerprint = code_fingerprint()
    hashes: dict[str, str] = {}
    errors: dict[str, str] = {}  # page -> the one line that says why it was not built
    for entry in plan.entries:
        try:
            hashes[entry.source.path] = content_hash(entry.source.path)
        except OSError as exc:
            errors[plan.pages[entry.source.label]] = f"{entry.site}: cannot be read ({exc.strerror or exc})"
    previous = _read_manifest(out)
    records: dict[str, dict[str, Any]] = {}  # the pages the site has now
    stale: list[PageJob] = []
    digests: dict[str, str] = {}
    for job in plan.jobs:
        if any(s.path not in hashes for s in job.sources):
            errors.setdefault(job.page, f"{job.title}: a profile of this comparison cannot be read")
            continue
        digests[job.page] = digest = _job_digest(job, fingerprint, hashes)
        record = previous.get(job.page)
        if record is not None and record.get("digest") == digest and _size(out / job.page) == record.get("size"):
            records[job.page] = record
        else:
            stale.append(job)
    kept = [job.page for job in plan.jobs if job.page in records]
    titles = {job.page: job.title for job in stale}
    # Largest inputs first, so that the longest pages do not start last on a worker; results are
    # keyed by page, so the order in which they complete changes nothing that is written.
    size = {e.source.path: _input_size(e.source.path) for e in plan.entries}
    stale.sort(key=lambda job: -sum(size[s.path] for s in job.sources))
    if scheduler is not None:
        results = _run_dask(stale, scheduler)
    elif jobs > 1 and len(stale) > 1:
        results = _run_local(stale, min(jobs, len(stale)))
    else:
        results = _run_here(stale)
    out.mkdir(parents=True, exist_ok=True)
    built: list[str] = []
    saved = time.monotonic()
    tell(f"building {len(stale)} of {len(plan.jobs)} pages ({len(kept)} up to date)")
    for done, result in enumerate(results, 1):
        if result.html is not None:
            atomic_write_text(check_output_path(out / result.page, plan.inputs), result.html)
            records[result.page] = {"digest": digests[result.page], "title": titles[result.page],
                                    "size": len(result.html.encode("utf-8")), "kernels": result.kernels,
                                    "missing": result.missing, "summary": result.summary}
            built.append(result.page)
            if time.monotonic() - saved > SAVE_EVERY_S:  # an interrupted build keeps the pages it finished
                _save_manifest(out, {**previous, **records})
                saved = time.monotonic()
        else:
            errors[result.page] = result.error or f"{titles[result.page]}: no page"
        if on_page is not None:
            on_page(result, done, len(stale))
        tell(f"built {done}/{len(stale)} pages: {result.page}")
    # Pages of profiles that are gone, and old pages of profiles that failed this time (the
    # index must not link a page that no longer says what the profile holds).
    removed = sorted(page for page in previous if page not in records)
    for page in removed:
        _remove_page(out, page)
    removed = [page for page in removed if page not in errors]
    _save_manifest(out, records)
    tell("writing the index")
    order = {job.page: number for number, job in enumerate(plan.jobs)}
    failed = [errors[page] for page in sorted(errors, key=order.__getitem__)]
    _write_if_changed(out / "index.html", render_index(index_document(plan, records, failed)))
    built.sort(key=order.__getitem__)
    missing = [line for job in plan.jobs if job.page in records for line in records[job.page].get("missing") or []]
    kernels = sum(record.get("kernels", 0) for record in records.values() if record.get("summary") is not None)
    return SiteResult(out, len(records), kernels, built, kept, removed, failed, plan.refused + failed + missing,
                      time.monotonic() - started)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _input_size(path: str) -> int:
    try:
        target = Path(path)
        return sum(f.stat().st_size for f in target.rglob("*") if f.is_file()) if target.is_dir() else target.stat().st_size
    except OSError:
        return 0


def _remove_page(out: Path, page: str) -> None:
    """Remove a page the site no longer has, and the folders it leaves empty (never ``out``)."""
    path = out / page
    try:
        if path.is_file() and not path.is_symlink():
            path.unlink()
    except OSError:
        return
    for folder in path.parents:
        if folder == out or out not in folder.parents:
            break
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            break


# --- the index -------------------------------------------------------------------------------------


def _href(page: str, anchor: str | None = None) -> str:
    """A link to a page of the site: its path percent-encoded (a file name may hold '#', '?' or a space)."""
    return quote(page) + (f"#{quote(anchor)}" if anchor else "")


def _match_rows(base: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """{index of a row of ``other``: its baseline row}, by the rules of keet.report.compare.match
    (exact name, then function name, then the lone kernel of each), applied to the stored index
    rows: the index is rebuilt from them without reading any profile."""
    pairs: dict[int, dict[str, Any]] = {}
    left = list(range(len(base)))
    right = list(range(len(other)))
    for key in (lambda r: r["name"], lambda r: r.get("function_name") or r["name"]):
        for b in list(left):
            partner = next((o for o in right if key(other[o]) == key(base[b])), None)
            if partner is not None:
                pairs[partner] = base[b]
                left.remove(b)
                right.remove(partner)
    if len(base) == len(other) == 1 and left and right:
        pairs[right[0]] = base[left[0]]
    return pairs


def index_document(plan: Plan, records: dict[str, dict[str, Any]], failed: list[str]) -> dict[str, Any]:
    """What index.html shows, as plain data: a row per kernel of every profile page (in the
    plan's order, kernels longest first), each with its change against its baseline, the
    comparison pages, and one line per page that could not be built."""
    summaries = {label: records[page]["summary"] for label, page in plan.pages.items()
                 if page in records and records[page].get("summary") is not None}
    sites = {entry.source.label: str(entry.site) for entry in plan.entries}
    rows: list[dict[str, Any]] = []
    for entry in plan.entries:
        label = entry.source.label
        summary = summaries.get(label)
        if summary is None:
            continue
        page = plan.pages[label]
        base_label = plan.baselines.get(label)
        base_rows = summaries[base_label]["kernels"] if base_label in summaries else None
        partners = _match_rows(base_rows, summary["kernels"]) if base_rows else {}
        compared = plan.comparisons.get(label)
        common = {"profile": sites[label], "href": _href(page), "device": summary.get("device") or "",
                  "change_href": _href(compared) if compared in records else None}
        if not summary["kernels"]:
            rows.append({**common, "kernel": "(no kernels)", "kernel_href": _href(page), "duration_ns": None, "verdict": "",
                         "verdict_text": None, "limiter": None, "fraction": None, "change": None, "change_title": None})
        for number, row in enumerate(summary["kernels"]):
            base = partners.get(number)
            change = title = None
            if base is not None and base.get("duration_ns") and row.get("duration_ns") is not None:
                change = row["duration_ns"] / base["duration_ns"] - 1
                title = f"{si(row['duration_ns'], 'ns')} against {si(base['duration_ns'], 'ns')} of {base['name']} in {sites[base_label]}"
            rows.append({**common, "kernel": row["name"], "kernel_href": _href(page, row.get("anchor")),
                         "duration_ns": row.get("duration_ns"), "verdict": row.get("verdict") or "",
                         "verdict_text": row.get("verdict_text"), "limiter": row.get("limiter"), "fraction": row.get("fraction"),
                         "change": change, "change_title": title})
    comparisons = [{"title": job.title, "href": _href(job.page), "kernels": records[job.page].get("kernels", 0)}
                   for job in plan.jobs if job.kind == "compare" and job.page in records]
    profiles = sum(1 for job in plan.jobs if job.kind == "profile" and job.page in records)
    with_baseline = any(entry.is_baseline for entry in plan.entries)
    return {"rows": rows, "comparisons": comparisons, "failed": failed, "profiles": profiles,
            "baseline": "the profile of the same path under the --baseline folder" if with_baseline
            else "the profile of the same path under the first top-level folder"}


# --- command line ------------------------------------------------------------------------------------


def folder_inputs(paths: Sequence[str | Path]) -> bool:
    """Whether ``keet report`` was given folders of profiles (a site) rather than profiles (one
    page). A profiler's workload folder (rocprof-compute) is a profile; a missing path is left
    to the profile reader, whose one line names it. Profiles and folders of profiles together
    are a KeetError: the command writes one page or one site, not both."""
    folders, profiles = [], []
    for path in map(Path, paths):
        if path.is_dir():
            try:
                detect(path)
            except ProfileError:
                folders.append(path)
                continue
        profiles.append(path)
    if folders and profiles:
        raise KeetError(f"{folders[0]} is a folder of profiles and {profiles[0]} a profile: give profiles (one report) "
                        "or folders of profiles (a site), not both")
    return bool(folders)


def echo_site_result(result: SiteResult) -> None:
    """The closing lines of both commands: what was done on stdout, each problem on stderr,
    status 1 when there was any."""
    import sys

    click.echo(f"{result.pages} page{'s' if result.pages != 1 else ''} in {result.out} ({len(result.built)} built, {len(result.kept)} up to date"
               f"{f', {len(result.removed)} removed' if result.removed else ''}; {result.kernels} kernels; "
               f"{result.seconds:.0f} s); index: {result.index}")
    if result.problems:
        click.echo("\n".join(terminal(line) for line in result.problems), err=True)  # one line each; they quote file names
        sys.exit(1)


@click.command()
@click.argument("root", type=click.Path(file_okay=False, path_type=Path))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True, help="Local worker processes.")
@click.option("--scheduler", metavar="ADDRESS", help="Build the pages on this Dask scheduler's workers (dask.distributed).")
@click.option("--baseline", type=click.Path(file_okay=False, path_type=Path),
              help="Compare each profile with the one of the same path under this folder.")
def main(root: Path, out: Path, jobs: int, scheduler: str | None, baseline: Path | None) -> None:
    """Write a report for every profile under ROOT (and a comparison for profiles of the same
    name under different top-level folders) into OUT, check them, and write OUT/index.html."""
    if scheduler is not None and jobs > 1:
        raise click.UsageError("--jobs and --scheduler: give one (the scheduler's workers build the pages)")

    def line(result: PageResult, done: int, total: int) -> None:
        if result.error is None:
            kernels = result.kernels
            click.echo(f"[{done}/{total}] {terminal(result.page)}: {kernels} kernel{'s' if kernels != 1 else ''}, {result.seconds:.1f} s"
                       + (f", {len(result.missing)} missing sections" if result.missing else ""))

    echo_site_result(build_site([root], out, jobs=jobs, scheduler=scheduler, baseline=baseline, on_page=line))


if __name__ == "__main__":
    # run through the package's module, not this __main__ copy: worker processes and Dask
    # unpickle build_page and its results by the name keet.report.batch
    run_cli(importlib.import_module("keet.report.batch").main, "python -m keet.report.batch")
