"""keet report pages in real headless Chromium (Debian's, installed by the test setup; see the
`chromium` fixture in conftest.py), driven by Playwright: every kind of report renders, its
main sections are visible, every figure decodes, the page logs no console error, fetches
nothing, and a kernel name made of markup is shown as text and runs nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from keet.ingest import load_profile
from keet.report import build, render, write_report

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
H100 = ROOT / "profiles" / "h100"
AMD = ROOT / "tests" / "data" / "rocprof"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-quic", "--no-first-run"]

REPORTS = {
    "ncu-rep with source counters": [H100 / "ncu" / "transpose_smem_conflict.ncu-rep.xz"],
    "ncu csv export, 34 kernels": [H100 / "csv" / "zoo_all_details.csv.xz"],
    "before and after a change": [H100 / "ncu" / "transpose_smem_conflict.ncu-rep.xz", H100 / "ncu" / "transpose_smem_padded.ncu-rep.xz"],
    "H100 vs H200": [H100 / "ncu" / "gemm_wmma.ncu-rep.xz", ROOT / "profiles" / "h200" / "ncu" / "gemm_wmma.ncu-rep.xz"],
    "rocprof-compute MI200": [AMD / "mi200_v1backend_pmc_perf.csv"],
    "rocprof v1 stats, MI250X": [AMD / "mi250x_fd_results.csv"],
}


@pytest.fixture(scope="module")
def browser(chromium: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        yield launched
        launched.close()


class Visit:
    """A page opened in the browser, with everything it logged, raised, fetched or popped up."""

    def __init__(self, browser, path: Path) -> None:
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.goto(path.as_uri(), wait_until="load")


@pytest.mark.parametrize("name", list(REPORTS))
def test_report_renders_in_chromium(browser, tmp_path, name):
    out = tmp_path / "report.html"
    report = write_report(REPORTS[name], out)
    visit = Visit(browser, out)
    page = visit.page
    try:
        kernels = [k for p in report.profiles for k in p.kernels]
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=len(kernels) <= 6)  # a 34-kernel page is 100 M pixels
        image = Image.open(shot).convert("L")
        assert image.width == 1280 and image.height >= 900
        low, high = image.getextrema()
        assert high - low > 100  # text and figures, not a blank page
        assert page.locator("#toc").is_visible() and page.locator("#overview").is_visible()
        assert page.locator("article.kernel").count() == len(kernels)
        for kernel in kernels[:6]:  # scrolling through dozens of kernels adds time, not coverage
            for section in ("summary", "diagnosis", "prediction", "memory"):
                heading = page.locator(f"#{kernel.anchor}-{section}-h")
                heading.scroll_into_view_if_needed()
                assert heading.is_visible(), f"{kernel.anchor} {section}"
        if report.comparison is not None:
            assert page.locator("#comparison table.comparison tbody tr").count() == len(report.comparison.deltas[0])
        figures = sum(len(images) for k in kernels for images in k.figures.values()) + len(report.comparison_figures)
        # A trace-only profile (durations, no counters) has nothing to draw; every other report does.
        assert figures > 0 or not any(k.memory or k.stalls or k.instruction_mix for k in kernels)
        assert page.locator("figure img").count() == figures
        decoded = page.evaluate("() => [...document.images].filter(i => i.complete && i.naturalWidth > 0).length")
        assert decoded == figures  # every SVG data: URI is a valid image
        assert [m for m in visit.console if m.startswith(("error", "warning"))] == [] and visit.errors == []
        assert all(url.startswith(("file:", "data:")) for url in visit.requests)
    finally:
        page.close()


def test_table_of_contents_links_reach_their_sections(browser, tmp_path):
    out = tmp_path / "report.html"
    write_report(REPORTS["ncu-rep with source counters"], out)
    visit = Visit(browser, out)
    page = visit.page
    try:
        page.locator('#toc a[href="#p0-k0"]').click()
        page.locator('#toc a[href="#p0-k0-hotspots"]').click()
        assert page.evaluate("() => location.hash") == "#p0-k0-hotspots"
        assert page.locator("#p0-k0-hotspots-h").is_visible()
        top = page.evaluate("() => document.getElementById('p0-k0-hotspots').getBoundingClientRect().top")
        assert -1 < top < 900  # scrolled to the section (sub-pixel offsets)
    finally:
        page.close()


def test_kernel_named_with_markup_is_shown_as_text_and_runs_nothing(browser, tmp_path):
    evil = '<script>window.__xss = 1</script>"\'><img src=x onerror="window.__xss = 2; alert(3)">'
    profile = load_profile(H100 / "ncu" / "transpose_smem_conflict.ncu-rep.xz")
    profile.kernels[0].name = evil
    out = tmp_path / "evil.html"
    out.write_text(render(build([profile], title=evil)), encoding="utf-8")
    visit = Visit(browser, out)
    page = visit.page
    try:
        assert page.locator("#p0-k0-h").inner_text() == f"[0] {evil}"
        assert page.locator("h1").inner_text() == evil
        assert page.title() == evil
        assert page.evaluate("() => window.__xss") is None
        assert page.locator("script").count() == 0
        assert page.evaluate("() => [...document.images].every(i => i.src.startsWith('data:image/svg+xml'))")
        assert visit.dialogs == [] and visit.errors == []
    finally:
        page.close()
