"""keet report without a browser: what each section shows (checked against the real profiles'
own metrics and the hardware files), the comparison of profiles, the section check CI runs,
bad input, and escaping. tests/test_report_browser.py renders the pages in Chromium."""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from keet.analysis.compare import match
from keet.cli import cli
from keet.errors import KeetError
from keet.ingest import load_profile
from keet.report import SECTIONS, build, render, write_report
from keet.report import sections as S
from keet.report.batch import comparison_sets, find_profiles, report_name
from keet.report.batch import main as batch_main
from keet.report.check import expected_sections, missing_sections, shown_sections
from perfmodel.hardware import gpu

ROOT = Path(__file__).resolve().parents[1]
H100 = ROOT / "profiles" / "h100" / "ncu"
H200 = ROOT / "profiles" / "h200" / "ncu"
AMD = ROOT / "tests" / "data" / "rocprof"


@pytest.fixture(scope="module")
def transpose():
    return load_profile(H100 / "transpose_smem_conflict.ncu-rep.xz")


@pytest.fixture(scope="module")
def sgemm():
    return load_profile(H100 / "sgemm_tiled.ncu-rep.xz")


def test_memory_chart_shows_the_profiles_own_traffic(transpose):
    kernel = transpose.kernels[0]
    chart = S.memory_chart(transpose, kernel, S.model_inputs(transpose, kernel)[0])
    links = {(link.source, link.target, link.what): link.bytes for link in chart.links}
    value = lambda metric: transpose.value(kernel, metric)
    assert links[("SM", "L1", "reads")] == value("global.load_sectors") * 32
    assert links[("L1", "L2", "reads")] == value("l2.bytes_from_l1")
    assert links[("L2", "DRAM", "writes")] == value("dram.bytes_write")
    assert chart.hit_rates == {"L1": value("l1.hit_rate_pct"), "L2": value("l2.hit_rate_pct")}
    assert chart.shared["bank conflicts"] == value("shared.bank_conflicts")
    seconds = kernel.duration_ns * 1e-9
    assert all(math.isclose(link.per_second, link.bytes / seconds) for link in chart.links)


def test_stalls_are_the_canonical_stall_metrics_largest_first(transpose):
    kernel = transpose.kernels[0]
    stalls = S.stalls(transpose, kernel)
    assert [s.cycles_per_instruction for s in stalls] == sorted((s.cycles_per_instruction for s in stalls), reverse=True)
    assert {s.metric: s.cycles_per_instruction for s in stalls} == {
        name: v for name, (v, _u) in transpose.values(kernel).items() if name.startswith("stall.") and v > 0}
    assert stalls[0].metric == "stall.mio_throttle" and stalls[0].meaning  # the conflicted shared reads queue up


def test_hotspots_rank_lines_by_warp_samples_with_their_source(transpose):
    kernel = transpose.kernels[0]
    hot = S.hotspots(kernel)
    lines = kernel.source.by_line()
    total = lines[S.PC_SAMPLES].sum()
    top = lines.loc[lines[S.PC_SAMPLES].idxmax()]
    assert (hot.lines[0].file, hot.lines[0].line) == (top.file, top.line)
    assert hot.lines[0].share == pytest.approx(top[S.PC_SAMPLES] / total)
    assert "tile[threadIdx.x][threadIdx.y + j]" in hot.lines[0].text  # the conflicted column read
    excerpt = hot.excerpts[0]
    numbers = [n for n, _text, _share in excerpt.lines]
    assert numbers == list(range(numbers[0], numbers[-1] + 1)) and hot.lines[0].line in numbers


def test_roofline_points_and_roofs_come_from_the_profile_and_the_hardware_file(sgemm):
    kernel = sgemm.kernels[0]
    work = S.model_inputs(sgemm, kernel)[0]
    roof = S.roofline(sgemm, kernel, work, gpu("h100"))
    clock = sgemm.value(kernel, "sm_clock")
    assert roof.clock_hz == clock
    # The few HFMA2 of this FP32 GEMM are under 1% of its FLOPs: no fp16 point decades below.
    assert {p.precision for p in roof.points} == {"fp32"}
    assert {p.level for p in roof.points} == {"DRAM", "L2", "L1/shared"}
    dram = next(p for p in roof.points if p.level == "DRAM")
    assert dram.flops == work.flops["fp32"] and dram.bytes == work.counts["dram_bytes_read"] + work.counts["dram_bytes_write"]
    assert dram.performance == pytest.approx(work.flops["fp32"] / (kernel.duration_ns * 1e-9))
    h100 = gpu("h100")
    roofs = {c.label: c.value for c in roof.memory + roof.compute}
    assert roofs["fp32"] == pytest.approx(h100.value("fp32_flops_per_clk_per_sm") * h100.value("sm_count") * clock)
    assert roofs["L2"] == pytest.approx(h100.value("l2_bandwidth_bytes_per_clk") * clock)
    assert roofs["DRAM"] == h100.value("dram_achievable_bytes_per_s")
    assert all(c.origin.startswith(("microbenchmark", "vendor", "derived", "publication")) for c in roof.memory + roof.compute)


def test_no_roofline_for_a_kernel_without_floating_point_work(transpose):
    kernel = transpose.kernels[0]
    assert S.roofline(transpose, kernel, S.model_inputs(transpose, kernel)[0], gpu("h100")) is None
    report = build([transpose])
    assert "no floating-point instructions" in report.profiles[0].kernels[0].absent["roofline"]


def test_predictions_cover_every_gpu_and_the_profiled_clock(sgemm):
    kernel = sgemm.kernels[0]
    work = S.model_inputs(sgemm, kernel)[0]
    predictions = S.predictions(sgemm, kernel, work, None)
    assert predictions.own_gpu == "h100" and predictions.measured_ns == kernel.duration_ns
    from perfmodel.hardware import gpu_ids

    assert [p.gpu for p in predictions.per_gpu] == gpu_ids()
    assert predictions.at_profile_clock is None  # profiled at 1.96 GHz, within 2% of the 1.98 GHz boost
    # The same work profiled at a locked 1.59 GHz base clock: the own-GPU prediction moves with it.
    slow = S.predictions(_with_clock(sgemm, kernel, 1.59e9), kernel, work, None)
    boost = next(p for p in slow.per_gpu if p.gpu == "h100")
    assert slow.at_profile_clock.clock_hz == 1.59e9
    assert slow.at_profile_clock.predicted_ns > boost.predicted_ns * 1.1  # issue-bound: time scales with the clock


def _with_clock(profile, kernel, hz: float):
    """The profile with its SM clock metric replaced (as if Nsight Compute locked the clock)."""
    import copy

    changed = copy.copy(profile)
    metrics = profile.metrics.copy()
    metrics.loc[(metrics.kernel == kernel.id) & (metrics.metric == "sm_clock") & (metrics.origin == "canonical"), "value"] = hz
    changed.metrics = metrics
    changed.__post_init__()
    return changed


def test_a_gpu_the_database_lacks_gets_points_but_no_roofs():
    profile = load_profile(ROOT / "tests" / "data" / "ncu" / "v100_miniweather_divtomult.ncu-rep.xz")
    report = build([profile])
    kernels = report.profiles[0].kernels
    assert all(k.predictions.own_gpu is None for k in kernels)
    with_points = [k for k in kernels if k.roofline is not None]
    assert with_points and all(k.roofline.gpu is None and not k.roofline.memory for k in with_points)
    assert "no roofs are drawn" in render(report)


def test_every_section_is_in_the_page_for_every_kernel(transpose, sgemm):
    html = render(build([transpose, sgemm]))
    shown = shown_sections(html)
    assert set(shown) == {"p0-k0", "p1-k0"}
    assert all(list(sections) == list(SECTIONS) for sections in shown.values())
    assert shown["p1-k0"]["roofline"] == "shown" and shown["p0-k0"]["roofline"] == "absent"
    assert missing_sections([transpose, sgemm], html) == []
    for section in SECTIONS:
        assert f'id="p1-k0-{section}"' in html and f'href="#p1-k0-{section}"' in html  # table of contents


def test_the_check_catches_a_section_that_should_show_data(sgemm):
    html = render(build([sgemm]))
    assert expected_sections(sgemm, sgemm.kernels[0]) == set(SECTIONS)
    emptied = html.replace('data-section="stalls" data-state="shown"', 'data-section="stalls" data-state="absent"')
    expected = f"{sgemm.source}: kernel 0 (sgemm_tiled_kernel): the stalls section is empty although the profile has its data"
    assert missing_sections([sgemm], emptied) == [expected]
    dropped = re.sub(r'<section class="part" id="p0-k0-hotspots".*?</section>', "", html, flags=re.DOTALL)
    assert any("has no hotspots section" in problem for problem in missing_sections([sgemm], dropped))


def test_comparison_explains_the_padded_transpose_with_the_rules():
    before = load_profile(H100 / "transpose_smem_conflict.ncu-rep.xz")
    after = load_profile(H100 / "transpose_smem_padded.ncu-rep.xz")
    report = build([before, after])
    (change,) = report.comparison.deltas[0]
    assert change.other.kernel.name == "transpose_smem_padded_kernel"  # one kernel each: matched though renamed
    assert change.speedup == pytest.approx(before.kernels[0].duration_ns / after.kernels[0].duration_ns)
    assert change.speedup > 1.5
    assert "shared_bank_conflicts" in [f["category"] for f in change.resolved]
    text = " ".join(change.explanation)
    conflicts = after.value(after.kernels[0], "shared.bank_conflicts")
    assert f"shared.bank_conflicts 65,718,596 wavefront -> {conflicts:,.0f} wavefront" in text
    assert "the largest change is the l1_shared time" in text
    (chart,) = report.comparison_figures.values()
    assert "Duration" in chart.title and "transpose_smem_conflict_kernel" in chart.alt


def test_a_report_of_several_profiles_reads_and_releases_each_before_loading_the_next():
    """Two big reports' native workers never hold their decoded reports at once."""
    events = []

    def loader(path):
        def load():
            events.append(("load", path.name))
            profile = load_profile(path)
            release = profile.releaser
            profile.releaser = lambda: (events.append(("release", path.name)), release())
            return profile
        return load

    first, second = H100 / "transpose_smem_conflict.ncu-rep.xz", H100 / "transpose_smem_padded.ncu-rep.xz"
    report = build([loader(first), loader(second)])
    assert events == [("load", first.name), ("release", first.name), ("load", second.name), ("release", second.name)]
    assert report.comparison is not None and report.profiles[0].kernels[0].kernel.source is not None


def test_h100_and_h200_profiles_match_by_kernel_name():
    h100 = load_profile(H100 / "dram_triad.ncu-rep.xz")
    h200 = load_profile(H200 / "dram_triad.ncu-rep.xz")
    pairs, alone = match(h100.kernels, h200.kernels)
    assert [(a.name, b.name) for a, b in pairs] == [(k.name, k.name) for k in h100.kernels] and alone == []
    report = build([h100, h200])
    text = " ".join(report.comparison.deltas[0][0].explanation)
    assert "on h200 predicts" in text and "from the hardware alone" in text


def test_amd_profile_report_uses_rocprof_counters():
    profile = load_profile(AMD / "mi200_v1backend_pmc_perf.csv")
    report = build([profile])
    (kernel,) = report.profiles[0].kernels
    raw = profile.values(profile.kernels[0], origin="raw")
    links = {(link.source, link.target, link.what): link.bytes for link in kernel.memory.links}
    assert links[("L2", "DRAM", "reads")] == kernel.work.counts["dram_bytes_read"] > 0
    assert kernel.instruction_mix and sum(kernel.instruction_mix.values()) > 0
    assert "rocprof does not attribute counters to source lines" in kernel.absent["hotspots"]
    assert raw and missing_sections([profile], render(report)) == []


def test_untrusted_strings_are_escaped_and_the_page_runs_no_script(transpose):
    evil = '<script>alert(1)</script>"\'><img src=x onerror=alert(2)>'
    kernel = transpose.kernels[0]
    original = kernel.name
    try:
        kernel.name = evil
        html = render(build([transpose]))
    finally:
        kernel.name = original
    assert evil not in html and "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing fetched from the network


def test_write_report_writes_nothing_on_bad_input(tmp_path, transpose):
    out = tmp_path / "report.html"
    with pytest.raises(KeetError):
        write_report([H100 / "transpose_smem_conflict.ncu-rep.xz", tmp_path / "missing.ncu-rep"], out)
    assert not out.exists() and list(tmp_path.iterdir()) == []
    write_report([H100 / "transpose_smem_conflict.ncu-rep.xz"], out)
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("content", [b"", b"not a profile\n", b"NVIDIA Nsight Compute\x00\x01\x02 truncated"])
def test_cli_bad_input_is_one_line_and_status_2(tmp_path, content):
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(content)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["report", str(bad), "-o", str(out)], standalone_mode=False, catch_exceptions=True)
    assert isinstance(result.exception, KeetError) and "\n" not in str(result.exception)
    assert not out.exists()


def test_cli_writes_the_report(tmp_path):
    out = tmp_path / "sub" / "r.html"
    result = CliRunner().invoke(cli, ["report", str(H100 / "transpose_smem_conflict.ncu-rep.xz"), "-o", str(out), "--title", "T<1>"])
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out}: 1 kernel from 1 profile\n"
    assert "<title>T&lt;1&gt;</title>" in out.read_text()


@pytest.mark.slow  # four reports (4 s); test_site covers folders of profiles in the default tier
def test_batch_reports_every_profile_and_compares_same_names(tmp_path):
    root = tmp_path / "profiles"
    for gpu_dir, source in (("h100", H100), ("h200", H200)):
        (root / gpu_dir / "ncu").mkdir(parents=True)
        shutil.copy(source / "smem_bandwidth.ncu-rep.xz", root / gpu_dir / "ncu")
    (root / "h100" / "notes.json").write_text('{"not": "a profile"}')
    found = find_profiles(root)
    assert [p.relative_to(root).as_posix() for p in found] == ["h100/ncu/smem_bandwidth.ncu-rep.xz", "h200/ncu/smem_bandwidth.ncu-rep.xz"]
    assert report_name(Path("h100/ncu/smem_bandwidth.ncu-rep.xz")) == Path("h100/ncu/smem_bandwidth.html")
    assert list(comparison_sets(root, found)) == [Path("ncu/smem_bandwidth.ncu-rep.xz")]
    out = tmp_path / "reports"
    result = CliRunner().invoke(batch_main, [str(root), str(out)])
    assert result.exit_code == 0, result.output
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    assert written == ["compare/ncu/smem_bandwidth_h100_vs_h200.html", "h100/ncu/smem_bandwidth.html", "h200/ncu/smem_bandwidth.html",
                       "index.html"]
    assert 'href="compare/ncu/smem_bandwidth_h100_vs_h200.html"' in (out / "index.html").read_text()


def test_batch_fails_on_a_profile_it_cannot_read(tmp_path):
    root = tmp_path / "profiles"
    root.mkdir()
    data = (H100 / "smem_bandwidth.ncu-rep.xz").read_bytes()
    (root / "cut.ncu-rep.xz").write_bytes(data[: len(data) // 2])
    result = CliRunner().invoke(batch_main, [str(root), str(tmp_path / "out")])
    assert result.exit_code == 1 and "cut.ncu-rep.xz" in result.output


def test_trace_only_profile_is_reported_without_predictions():
    profile = load_profile(AMD / "mi300a_rocm7_kernel_trace.csv")
    report = build([profile])
    html = render(report)
    kernel = report.profiles[0].kernels[0]
    assert kernel.predictions.per_gpu == [] and kernel.predictions.error
    assert f"Not predicted: {kernel.predictions.error}" in html.replace("&#39;", "'")
    assert missing_sections([profile], html) == []
