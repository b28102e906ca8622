"""`keet compare` and `keet explain --baseline` (issue 23, item 3) on the bundled real profiles:
the zoo captured on an H100 and an H200 (profiles/manifest.json has each kernel's CUDA-event
times on both), the zoo's before/after kernels (the bank-conflicted transpose and its padded
fix), and, in the slow tier, the real-world corpus (H100 vs H200 parts, and its before/after
pairs of profiles/corpus/pairs.py with their repeated CUPTI timings).

Checked: every kernel's direction against the measured times, the exit status against the
threshold, a self-comparison, bad input (one line, exit status 2, nothing written), the JUnit
file against the rules of the two schemas CI servers use, and the markdown and JSON shapes
(docs/compare.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pandas as pd
import pytest
import shared_profiles
from click.testing import CliRunner

from keet.analysis.compare import (
    DEFAULT_NOISE,
    CompareResult,
    Timing,
    compare_profiles,
    group_launches,
    in_range,
    kernel_identity,
    match,
    pair_up,
    verdict,
)
from keet.cli import cli, main
from keet.compare import (
    TimingsFile,
    check_ranges,
    compare_paths,
    document,
    pair_files,
    to_junit,
    to_text,
)
from keet.errors import ProfileError
from keet.ingest import load_profile
from keet.profile import METRIC_COLUMNS, Device, Kernel, Profile

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"
H100, H200 = PROFILES / "h100", PROFILES / "h200"
CONFLICT = H100 / "ncu" / "transpose_smem_conflict.ncu-rep.xz"  # the zoo's "before": a bank-conflicted tile
PADDED = H100 / "ncu" / "transpose_smem_padded.ncu-rep.xz"  # its fix (1.8x faster, profiles/README.md)
CORPUS = PROFILES / "corpus"


def keet_main(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, *args: str | Path) -> tuple[int, str, str]:
    """The console script's entry point in this process (run_cli: exit status, one error line)."""
    monkeypatch.setattr(sys, "argv", ["keet", *map(str, args)])
    with pytest.raises(SystemExit) as exited:
        main()
        sys.exit(0)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def keet(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real console script's behaviour (run_cli: exit status, one error line), not CliRunner's."""
    return subprocess.run([sys.executable, "-m", "keet.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=600, check=False)


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "80"}, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _shared_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands these tests run in this process get one read of each zoo report they compare
    (the tests are of the comparison; they had read sgemm_tiled and the transposes 50 times)."""
    shared_profiles.share_reads_ahead(monkeypatch, CONFLICT, PADDED, *(gpu / "ncu" / f"{name}.ncu-rep.xz"
                                                                    for gpu in (H100, H200) for name in ("sgemm_tiled", "dram_triad")))


@pytest.fixture(scope="module")
def zoo() -> tuple[Profile, Profile]:
    return shared_profiles.zoo("h100"), shared_profiles.zoo("h200")


def measured_direction(h100_ms: float, h200_ms: float, noise: float = DEFAULT_NOISE) -> str:
    change = h200_ms / h100_ms - 1
    return "unchanged" if abs(change) <= noise else "faster" if change < 0 else "slower"


# ---------------------------------------------------------------- H100 vs H200: the zoo


def test_h100_vs_h200_zoo_names_the_measured_direction_of_every_kernel(zoo) -> None:
    """The CUDA-event medians of 25 cold-L2 runs per GPU (profiles/manifest.json) decide the
    expected direction, with the same 2% band the comparison uses for a single launch."""
    h100, h200 = zoo
    manifest = json.loads((PROFILES / "manifest.json").read_text())
    expected = {k["kernel"]: measured_direction(k["measured"]["h100"]["median_ms"], k["measured"]["h200"]["median_ms"])
                for k in manifest["kernels"]}
    result = compare_profiles(h100, h200, explain=False)
    assert not result.only_base and not result.only_new
    assert {c.name for c in result.kernels} == set(expected)  # 34 launches: tiny_kernel's three are one group
    got = {c.name: {"regression": "slower"}.get(c.status, c.status) for c in result.kernels}
    assert got == expected
    assert sum(s == "faster" for s in got.values()) == 14  # the memory-bound ones: 1.43x the DRAM bandwidth
    assert all(c.matched_by == "name" and not c.differs for c in result.kernels)
    tiny = next(c for c in result.kernels if c.name == "tiny_kernel")
    assert tiny.base.launches == 3 and tiny.noise["base"]["from"] == "launches"
    assert tiny.noise["value"] == pytest.approx(max(tiny.base.timing.spread, tiny.new.timing.spread))


def test_the_exit_status_follows_the_threshold(zoo) -> None:
    """H100 -> H200 has nothing slower; H200 -> H100 is up to 1.44x slower (reduce_tree)."""
    h100, h200 = zoo
    assert not compare_profiles(h100, h200, explain=False).regressions()
    back = compare_profiles(h200, h100, explain=False)
    worst = max(c.change for c in back.kernels)
    assert worst == pytest.approx(0.437, abs=0.01)
    for threshold, regressions in ((0.05, 13), (0.40, 2), (0.50, 0)):
        found = compare_profiles(h200, h100, threshold=threshold, explain=False).regressions()
        assert len(found) == regressions, threshold
        assert all(c.change > threshold for c in found)


@pytest.mark.parametrize(("base", "new", "threshold", "status"), [
    (H100 / "ncu" / "dram_triad.ncu-rep.xz", H200 / "ncu" / "dram_triad.ncu-rep.xz", "5%", 0),
    (H200 / "ncu" / "dram_triad.ncu-rep.xz", H100 / "ncu" / "dram_triad.ncu-rep.xz", "0.5", 0),  # +42% < 50%
    (H200 / "ncu" / "dram_triad.ncu-rep.xz", H100 / "ncu" / "dram_triad.ncu-rep.xz", "40%", 1),
], ids=["h100-h200", "h200-h100-50pct", "h200-h100-40pct"])
def test_the_command_exits_by_the_threshold(base: Path, new: Path, threshold: str, status: int) -> None:
    code, out = invoke("compare", base, new, "--threshold", threshold)
    assert code == status, out
    assert out.rstrip().endswith(f"exit status {status}.")


def test_a_self_comparison_finds_nothing(tmp_path: Path) -> None:
    junit = tmp_path / "self.xml"
    code, out = invoke("compare", CONFLICT, CONFLICT, "--format", "json", "--junit", junit)
    assert code == 0
    doc = json.loads(out)
    assert doc["exit_status"] == 0 and doc["counts"]["kernels"] == 1 and doc["counts"]["unchanged"] == 1
    (entry,) = doc["profiles"][0]["kernels"]
    assert entry["change"] == 0 and entry["explanation"] == [] and entry["findings"] is None
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "0"


# ---------------------------------------------------------------- before/after: the zoo's transpose


def test_the_padded_transpose_is_faster_and_explained_by_the_bank_conflicts() -> None:
    code, out = invoke("compare", CONFLICT, PADDED, "--format", "json")
    assert code == 0
    (entry,) = json.loads(out)["profiles"][0]["kernels"]
    assert entry["status"] == "faster" and entry["speedup"] > 1.5
    assert entry["matched_by"] == "alone" and entry["differs"] == ["name"]  # one kernel each: renamed
    resolved = {f["category"]: f for f in entry["findings"]["resolved"]}
    evidence = resolved["shared_bank_conflicts"]["evidence"]
    assert evidence["metric"] == "shared.bank_conflicts" and evidence["before"] == 65_718_596 and evidence["after"] < 1e6
    assert entry["model"]["terms"][0]["term"] == "l1_shared"
    assert entry["model"]["base"]["predicted_ns"] > entry["model"]["new"]["predicted_ns"]


def test_swapping_a_real_speedup_is_a_regression_with_its_cause() -> None:
    result = keet("compare", PADDED, CONFLICT)
    assert result.returncode == 1, result.stderr
    assert "regression +" in result.stdout and "Newly found: shared_bank_conflicts" in result.stdout
    assert "1 regression beyond the 5.0% threshold and the noise: exit status 1." in result.stdout


def test_explain_with_a_baseline_prints_the_same_comparison() -> None:
    """`keet explain A --baseline B` is `keet compare B A` for that pair (it used to ignore
    --baseline without --llm), for the kernels --kernel picks; explain is not a gate: its exit
    status stays 0."""
    code, explained = invoke("explain", CONFLICT, "--baseline", PADDED, "--kernel", "transpose_smem_conflict_kernel", "--top", "1")
    assert code == 0
    code, compared = invoke("compare", PADDED, CONFLICT, "--top", "1")
    assert code == 1 and explained == compared
    # --top 1: the slower side's first cause, not the finding that went away
    assert "Newly found: shared_bank_conflicts" in explained and "No longer found" not in explained


# ---------------------------------------------------------------- matching, grouping, noise


def _kernel(kid: int, name: str, grid: tuple = (1, 1, 1), block: tuple = (32, 1, 1), nvtx: str | None = None,
            ns: float | None = 1000.0, function: str | None = None) -> Kernel:
    return Kernel(kid, name, function_name=function or name.split("<")[0], grid=grid, block=block, duration_ns=ns,
                  attributes={"nvtx": nvtx} if nvtx else {})


def _profile(kernels: list[Kernel], device: str = "NVIDIA H100 80GB HBM3") -> Profile:
    return Profile("synthetic", "test", Device(device, "nvidia"), kernels, pd.DataFrame(columns=METRIC_COLUMNS))


def test_matching_tiers() -> None:
    base = [_kernel(0, "a"), _kernel(1, "b", grid=(2, 1, 1)), _kernel(2, "f<int>", nvtx="r"), _kernel(3, "gone")]
    new = [_kernel(0, "a"), _kernel(1, "b", grid=(4, 1, 1)), _kernel(2, "f<float>", nvtx="r"), _kernel(3, "came")]
    pairs, left, right = pair_up(base, new, kernel_identity)
    assert [(a.name, b.name, tier) for a, b, tier in pairs] == [("a", "a", "name"), ("b", "b", "name"),
                                                                 ("f<int>", "f<float>", "function"), ("gone", "came", "alone")]
    assert not left and not right


def test_matching_stays_inside_a_shared_nvtx_range_and_never_guesses() -> None:
    base = [_kernel(0, "k", nvtx="one"), _kernel(1, "k", nvtx="two"), _kernel(2, "x", grid=(1, 1, 1)), _kernel(3, "x", grid=(2, 1, 1))]
    new = [_kernel(0, "k", nvtx="two", grid=(8, 1, 1)), _kernel(1, "x", grid=(3, 1, 1))]
    pairs, names = match(base, new)
    # "k" in range "two" pairs within it although its launch changed; "k" of range "one" is never
    # borrowed; two "x" against one is ambiguous, and no kernel is alone: left unpaired
    assert [(a.id, b.id) for a, b in pairs] == [(1, 0)]
    assert sorted(names) == ["k", "x", "x", "x"]


def test_identical_launches_are_one_group_with_their_median_and_spread() -> None:
    launches = [_kernel(i, "k", ns=ns) for i, ns in enumerate((100.0, 110.0, 104.0))]
    (group,) = group_launches(_profile(launches))
    assert group.launches == 3 and group.time_ns == 104.0 and group.representative.id == 2
    assert group.timing.spread == pytest.approx(10 / 104)


def test_verdicts_need_both_the_noise_and_the_threshold() -> None:
    assert verdict(0.019, 0.02, 0.05) == "unchanged"
    assert verdict(0.03, 0.02, 0.05) == "slower"  # beyond the noise, within the threshold
    assert verdict(0.06, 0.02, 0.05) == "regression"
    assert verdict(0.06, 0.10, 0.05) == "unchanged"  # beyond the threshold, within the measured noise
    assert verdict(-0.06, 0.02, 0.05) == "faster"
    assert verdict(None, 0.02, 0.05) == "untimed"


def test_a_fusion_is_compared_by_its_nvtx_range() -> None:
    """Three eager launches against one fused kernel (renamed range): no kernel pairs, the
    range's total time does, and a slower range fails the run."""
    base = _profile([_kernel(i, f"eager{i}", nvtx="eager/op", ns=100.0) for i in range(3)])
    new = _profile([_kernel(0, "fused", nvtx="compiled/op", ns=400.0)])
    result = compare_profiles(base, new, ranges={"eager/op": "compiled/op"}, explain=False)
    assert not result.kernels and len(result.only_base) == 3 and len(result.only_new) == 1
    (found,) = result.ranges
    assert (found.base_name, found.name, found.base_launches, found.new_launches) == ("eager/op", "compiled/op", 3, 1)
    assert found.change == pytest.approx(400 / 300 - 1) and found.status == "regression"
    assert result.regressions() == [found]


def test_in_range_reads_nested_and_domain_stacks() -> None:
    assert in_range("outer > inner", "inner") and in_range("outer > inner", "outer")
    assert in_range("dom: a > b | c", "b") and in_range("dom: a > b | c", "c") and not in_range("dom: a > b", "dom")
    assert not in_range(None, "a") and not in_range("ab", "a")


# ---------------------------------------------------------------- inputs


def test_folders_pair_profiles_by_name(tmp_path: Path) -> None:
    """h100/h100_x.ncu-rep.xz pairs with h200/h200_x.ncu-rep.xz; notes are not profiles; a file
    without a partner is listed, not compared."""
    for gpu, source in (("h100", H100), ("h200", H200)):
        (tmp_path / gpu).mkdir()
        shutil.copy(source / "ncu" / "dram_triad.ncu-rep.xz", tmp_path / gpu / f"{gpu}_triad.ncu-rep.xz")
        (tmp_path / gpu / "notes.json").write_text('{"not": "a profile"}')
    shutil.copy(H100 / "ncu" / "tail_effect.ncu-rep.xz", tmp_path / "h100" / "tail.ncu-rep.xz")
    pairs, only_base, only_new = pair_files(tmp_path / "h100", tmp_path / "h200")
    assert [(a.name, b.name) for a, b in pairs] == [("h100_triad.ncu-rep.xz", "h200_triad.ncu-rep.xz")]
    assert [p.name for p in only_base] == ["tail.ncu-rep.xz"] and only_new == []
    code, out = invoke("compare", tmp_path / "h100", tmp_path / "h200", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["only_base_files"] == [str(tmp_path / "h100" / "tail.ncu-rep.xz")]
    assert doc["profiles"][0]["kernels"][0]["status"] == "faster"


@pytest.fixture(scope="module")
def partpairs() -> Profile:
    return shared_profiles.read_ahead_once(CORPUS / "h100" / "h100_partpairs.ncu-rep.xz")


def test_a_timings_file_gives_every_launch_its_repeated_runs(partpairs: Profile) -> None:
    """The corpus's CUPTI timings (10 isolated runs per kernel) cover every launch of the pairs'
    report, matched by NVTX range and position, and replace the single profiled durations."""
    timings = TimingsFile(CORPUS / "h100" / "times_h100.json")
    manifest = {(k["measured"]["h100"].get("report"), k["measured"]["h100"].get("report_id")): k
                for k in json.loads((CORPUS / "manifest.json").read_text())["kernels"]}
    for kernel in partpairs.kernels:
        found = timings(partpairs, kernel)
        expected = manifest[("h100/h100_partpairs.ncu-rep.xz", kernel.id)]["measured"]["h100"]
        assert found == Timing(expected["isolated_ns"], expected["isolated_min_ns"], expected["isolated_max_ns"], 10, "timings")
    result = compare_profiles(partpairs, partpairs, base_timings=timings, new_timings=timings, explain=False)
    assert all(c.status == "unchanged" and c.noise["base"]["from"] == "timings" for c in result.kernels)
    with pytest.raises(ProfileError, match="no launch ran in NVTX range 'softmax/fp32/1x1'"):
        check_ranges(partpairs, ["softmax/fp32/4096x1024", "softmax/fp32/1x1"])


# ---------------------------------------------------------------- bad input: one line, exit 2, nothing written


@pytest.mark.parametrize(("case", "problem"), [
    ("missing", "bad.ncu-rep: no such file or folder"), ("empty", "bad.ncu-rep: is empty"),
    ("not a profile", "bad.ncu-rep: is not a profile format"), ("truncated", "bad.ncu-rep: "),
    ("file and folder", "a folder: give two profiles or two folders"), ("empty folder", "a: holds no profile"),
    ("bad timings", "bad.ncu-rep: is not a timings file"), ("unknown range", "records no NVTX range"),
    ("output is an input", "keet never writes over its inputs"),
    ("folders without a common name", "no profile of one folder has the name of a profile of the other")])
def test_bad_input_is_one_line_and_status_2(tmp_path: Path, case: str, problem: str, capsys: pytest.CaptureFixture,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.ncu-rep"
    out, junit = tmp_path / "out.md", tmp_path / "out.xml"
    args: list[str | Path] = ["compare", bad, CONFLICT]
    if case == "empty":
        bad.write_bytes(b"")
    elif case == "not a profile":
        bad.write_text("kernel,time\nk,1\n")
    elif case == "truncated":
        bad.write_bytes(CONFLICT.read_bytes()[:4096])
    elif case == "file and folder":
        args = ["compare", CONFLICT, tmp_path]
    elif case == "empty folder":
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        (tmp_path / "a" / "README").write_text("no profile here\n")
        args = ["compare", tmp_path / "a", tmp_path / "b"]
    elif case == "bad timings":
        bad.write_text('{"cases": []}')
        args = ["compare", CONFLICT, PADDED, "--base-timings", bad]
    elif case == "unknown range":
        args = ["compare", CONFLICT, PADDED, "--range", "no/such/range"]
    elif case == "output is an input":
        args = ["compare", CONFLICT, PADDED, "-o", PADDED]
    elif case == "folders without a common name":
        for name, source in (("a", CONFLICT), ("b", PADDED)):
            (tmp_path / name).mkdir()
            shutil.copy(source, tmp_path / name)
        args = ["compare", tmp_path / "a", tmp_path / "b"]
    code, stdout, stderr = keet_main(capsys, monkeypatch, *args, "--junit", junit, *(["-o", out] if "-o" not in args else []))
    assert code == 2, (stdout, stderr)
    (line,) = stderr.strip().splitlines()
    assert line.startswith("keet: error: ") and problem in line and "Traceback" not in stderr
    assert stdout == "" and not out.exists() and not junit.exists()


# ---------------------------------------------------------------- JUnit XML

# The rules of the two JUnit schemas CI servers validate against, written out here (no XSD
# validator is installed): Apache Ant's JUnit.xsd as published by Windy Road
# (https://github.com/windyroad/JUnit-Schema, JUnit.xsd; GitLab, Jenkins' junit plugin and most
# readers follow it) and Jenkins' xunit-plugin junit-10.xsd
# (https://github.com/jenkinsci/xunit-plugin, src/main/resources/org/jenkinsci/plugins/xunit/
# types/model/xsd/junit-10.xsd). A file must satisfy both: where one is stricter, its rule is
# the one below.
ANT_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")  # xs:dateTime, no zone
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")  # junit-10's suite time
SUITE_ATTRIBUTES = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname", "id", "package"}
SUITE_REQUIRED = SUITE_ATTRIBUTES - {"skipped"}  # package and id: Ant's aggregated <testsuites> form
CASE_ATTRIBUTES = {"name", "classname", "time"}  # all required by Ant; junit-10 allows these (and group)


def _decimal(text: str) -> bool:
    try:
        Decimal(text)
    except InvalidOperation:
        return False
    return "e" not in text.lower() and text.strip() == text


def junit_problems(xml_text: str) -> list[str]:
    """Every way ``xml_text`` breaks either schema (empty: valid under both)."""
    problems: list[str] = []
    root = ET.fromstring(xml_text)
    if root.tag != "testsuites" or root.attrib:  # Ant declares no attribute on <testsuites>
        problems.append(f"root <{root.tag}> with {root.attrib}")
    for number, suite in enumerate(root):
        where = f"testsuite {number}"
        if suite.tag != "testsuite":
            problems.append(f"<{suite.tag}> under <testsuites>")
            continue
        keys = set(suite.attrib)
        if keys - SUITE_ATTRIBUTES or SUITE_REQUIRED - keys:
            problems.append(f"{where}: attributes {sorted(keys ^ SUITE_REQUIRED)} (extra or missing)")
            continue
        if suite.get("id") != str(number):
            problems.append(f"{where}: id {suite.get('id')} (Ant: 0, 1, ... in order)")
        for key in ("tests", "failures", "errors", "skipped"):
            if not re.fullmatch(r"-?[0-9]+", suite.get(key, "0")):
                problems.append(f"{where}: {key}={suite.get(key)!r} is not an xs:int")
        if not (_decimal(suite.get("time")) and SUREFIRE_TIME.fullmatch(suite.get("time"))):
            problems.append(f"{where}: time {suite.get('time')!r}")
        if not ANT_TIMESTAMP.fullmatch(suite.get("timestamp")):
            problems.append(f"{where}: timestamp {suite.get('timestamp')!r}")
        if not suite.get("name").strip() or not suite.get("hostname").strip() or not suite.get("package").strip():
            problems.append(f"{where}: an empty token")
        # Ant: properties, testcase*, system-out, system-err, in this order, nothing else
        tags = [child.tag for child in suite]
        if not (tags[:1] == ["properties"] and tags[-2:] == ["system-out", "system-err"]
                and set(tags[1:-2]) <= {"testcase"}):
            problems.append(f"{where}: children {tags}")
        for prop in suite.find("properties") if suite.find("properties") is not None else []:
            if prop.tag != "property" or set(prop.attrib) != {"name", "value"} or not prop.get("name").strip():
                problems.append(f"{where}: property {prop.attrib}")
        cases = suite.findall("testcase")
        if int(suite.get("tests")) != len(cases):
            problems.append(f"{where}: tests={suite.get('tests')} but {len(cases)} test cases")
        for kind, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            if int(suite.get(attribute, "0")) != sum(case.find(kind) is not None for case in cases):
                problems.append(f"{where}: {attribute}={suite.get(attribute)} does not count its <{kind}> elements")
        for case in cases:
            if set(case.attrib) != CASE_ATTRIBUTES or not _decimal(case.get("time")) or not case.get("name").strip():
                problems.append(f"{where}: testcase {case.attrib}")
            children = list(case)
            if len(children) > 1 or any(c.tag not in ("failure", "error", "skipped") for c in children):
                problems.append(f"{where}: testcase children {[c.tag for c in children]} (Ant: at most one of them)")
            for child in children:
                if child.tag in ("failure", "error") and ("type" not in child.attrib or set(child.attrib) - {"type", "message"}):
                    problems.append(f"{where}: <{child.tag}> attributes {child.attrib} (Ant requires type)")
                if list(child):
                    problems.append(f"{where}: <{child.tag}> has elements (text only)")
    return problems


def test_the_checker_catches_what_either_schema_refuses() -> None:
    valid = ('<testsuites><testsuite name="s" package="p" id="0" timestamp="2026-01-02T03:04:05" hostname="h" tests="1" '
             'failures="1" errors="0" skipped="0" time="0.5"><properties/><testcase name="t" classname="c" time="0.5">'
             '<failure type="regression" message="m">x</failure></testcase><system-out/><system-err/></testsuite></testsuites>')
    assert junit_problems(valid) == []
    for broken in (valid.replace('failures="1"', 'failures="0"'), valid.replace("<properties/>", ""),
                   valid.replace(' type="regression"', ""), valid.replace("T03:04:05", "T03:04:05Z"),
                   valid.replace('time="0.5">', 'time="5e-1">', 1), valid.replace("<testsuites>", '<testsuites tests="1">'),
                   valid.replace("</failure>", "</failure><system-out>o</system-out>")):
        assert junit_problems(broken), broken


def test_junit_validates_with_a_failure_per_regression_and_hostile_names(tmp_path: Path) -> None:
    base, new = load_profile(PADDED), load_profile(CONFLICT)
    hostile = 'k<1>&"\x1b[31m\ufffe\x00 \u202e'
    new.kernels[0] = replace(new.kernels[0], name=hostile)
    result = CompareResult(str(PADDED), str(CONFLICT), 0.05, DEFAULT_NOISE, [compare_profiles(base, new)])
    xml_text = to_junit(result, timestamp=datetime(2026, 1, 2, 3, 4, 5))
    assert junit_problems(xml_text) == []
    suite = ET.fromstring(xml_text).find("testsuite")
    (case,) = suite.findall("testcase")
    assert suite.get("failures") == "1" and case.find("failure").get("type") == "regression"
    assert "\\x1b" in case.get("name") and "\\ufffe" in case.get("name") and "\x1b" not in xml_text
    assert "shared_bank_conflicts" in case.find("failure").text
    assert float(case.get("time")) == pytest.approx(new.kernels[0].duration_ns / 1e9)


def test_junit_lists_unmatched_kernels_as_skipped_and_ranges_in_their_own_suite() -> None:
    base = _profile([_kernel(i, f"eager{i}", nvtx="eager/op", ns=100.0) for i in range(3)])
    new = _profile([_kernel(0, "fused", nvtx="compiled/op", ns=200.0)])
    result = CompareResult("a", "b", 0.05, DEFAULT_NOISE, [compare_profiles(base, new, ranges={"eager/op": "compiled/op"}, explain=False)])
    xml_text = to_junit(result)
    assert junit_problems(xml_text) == []
    kernels, ranges = ET.fromstring(xml_text)
    assert (kernels.get("tests"), kernels.get("skipped"), kernels.get("failures")) == ("4", "4", "0")
    assert (ranges.get("tests"), ranges.get("failures")) == ("1", "0")  # 300 ns -> 200 ns: faster
    assert ranges.find("testcase").get("name") == "compiled/op"


# ---------------------------------------------------------------- markdown and JSON


def test_json_shape(zoo) -> None:
    h100, h200 = zoo
    triad = [load_profile(gpu / "ncu" / "dram_triad.ncu-rep.xz") for gpu in (H200, H100)]
    result = CompareResult("h200", "h100", 0.05, DEFAULT_NOISE, [compare_profiles(*triad, top=1),
                                                                 compare_profiles(h200, h100, explain=False)])
    doc = json.loads(json.dumps(document(result)))
    assert doc["schema"] == "keet-compare/1" and doc["exit_status"] == 1 and doc["threshold"] == 0.05
    assert set(doc) == {"schema", "base", "new", "threshold", "default_noise", "exit_status", "counts", "profiles",
                        "only_base_files", "only_new_files"}
    assert doc["counts"]["regression"] == 1 + 13 and doc["counts"]["kernels"] == 1 + 32
    profile, zoo_profile = doc["profiles"]
    assert set(profile) == {"base", "new", "counts", "kernels", "ranges", "only_base", "only_new"}
    assert profile["base"]["device"] == {"name": "NVIDIA H200", "gpu": "h200"}
    statuses = [k["status"] for k in zoo_profile["kernels"]]
    assert statuses == sorted(statuses, key=["regression", "slower", "faster", "unchanged", "untimed"].index)
    (entry,) = profile["kernels"]
    assert set(entry) == {"name", "base_name", "function", "base", "new", "matched_by", "differs", "change", "speedup",
                          "noise", "status", "findings", "model", "explanation"}
    assert set(entry["new"]) == {"name", "function", "ids", "grid", "block", "nvtx", "launches", "time_ns", "timing"}
    assert entry["noise"] == {"value": 0.02, "base": {"value": 0.02, "from": "default", "count": 1},
                              "new": {"value": 0.02, "from": "default", "count": 1}}
    assert entry["status"] == "regression" and entry["speedup"] == pytest.approx(1 / (1 + entry["change"]))
    assert set(entry["findings"]) == {"resolved", "appeared", "persisting"}
    assert entry["model"]["hardware_alone"]["gpu"] == "h100" and entry["model"]["terms"][0]["term"] == "dram"
    assert sum(s.startswith(("No longer", "Newly", "Still")) for s in entry["explanation"]) <= 1  # --top 1
    assert all(k["explanation"] == [] and k["model"] is None for k in zoo_profile["kernels"])  # not explained


def test_markdown_renders_and_keeps_names_as_code() -> None:
    import markdown_it  # the test extra installs it

    base, new = load_profile(PADDED), load_profile(CONFLICT)
    new.kernels[0] = replace(new.kernels[0], name="evil<script>|**x**", function_name="evil<script>|**x**")
    result = CompareResult(str(PADDED), str(CONFLICT), 0.05, DEFAULT_NOISE, [compare_profiles(base, new)])
    text = to_text(result, markdown=True)
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert "<script>" not in html and "<code>evil&lt;script&gt;|**x**</code>" in html
    assert html.count("<tr>") == 2  # header and the one kernel: the pipe did not split the row
    assert "<h2>" in html and "Newly found: shared_bank_conflicts" in html


def test_text_fits_80_columns() -> None:
    code, out = invoke("compare", H200 / "ncu" / "sgemm_tiled.ncu-rep.xz", H100 / "ncu" / "sgemm_tiled.ncu-rep.xz")
    assert code == 0 and max(map(len, out.splitlines())) <= 80


def test_output_and_junit_files(tmp_path: Path) -> None:
    out, junit = tmp_path / "c.md", tmp_path / "c.xml"
    code, printed = invoke("compare", PADDED, CONFLICT, "--format", "markdown", "-o", out, "--junit", junit)
    assert code == 1 and printed.startswith(f"wrote {out}: 1 kernel matched: 1 regression")
    assert out.read_text().startswith("# keet compare: ") and junit_problems(junit.read_text()) == []


# ---------------------------------------------------------------- the corpus (slow: 100-290 MB reports)


def _cupti(entry: dict, gpu: str) -> Timing:
    m = entry["measured"][gpu]
    return Timing(m["isolated_ns"], m["isolated_min_ns"], m["isolated_max_ns"], 10, "timings")


@pytest.fixture(scope="module")
def corpus_manifest() -> dict:
    return json.loads((CORPUS / "manifest.json").read_text())


@pytest.mark.slow
def test_h100_vs_h200_corpus_folders(corpus_manifest: dict) -> None:
    """The corpus parts captured on both GPUs, compared folder against folder (h100_partI pairs
    with h200_partI), with the CUPTI timings files: every kernel is matched, and each kernel
    launched once gets the direction its ten isolated runs per GPU give (beyond the spread of
    those runs), so the exit status is the one the measurements call for."""
    by_report = {(k["measured"]["h100"]["report"], k["measured"]["h100"]["report_id"]): k
                 for k in corpus_manifest["kernels"] if k["measured"]["h100"].get("report")}
    result = compare_paths(CORPUS / "h100", CORPUS / "h200", base_timings=CORPUS / "h100" / "times_h100.json",
                           new_timings=CORPUS / "h200" / "times_h200.json")
    # the reports profiled on the H100 only: the pairs' "before" cases and the dev split's CUB cases
    assert result.only_base_files == [str(CORPUS / "h100" / f"h100_part{name}.ncu-rep.xz") for name in ("cubdev", "pairs")]
    assert not result.only_new_files
    assert len(result.profiles) == 3 and all(not p.only_base and not p.only_new for p in result.profiles)
    assert sum(c.base.launches for p in result.profiles for c in p.kernels) == 286  # every profiled launch
    single = 0
    expected_exit = 0
    for p in result.profiles:
        for change in p.kernels:
            entry = by_report[("h100/" + Path(p.base.source).name, change.base.first.id)]
            h200 = entry["measured"]["h200"]  # the manifest's own pairing (by order within each case)
            assert (h200["report"], h200["report_id"]) == ("h200/" + Path(p.new.source).name, change.new.first.id), entry["id"]
            if change.base.launches > 1 or change.new.launches > 1:
                continue  # a group of launches takes their median and the widest spread
            a, b = _cupti(entry, "h100"), _cupti(entry, "h200")
            assert (change.base.timing, change.new.timing) == (a, b), entry["id"]
            measured = b.median_ns / a.median_ns - 1
            expected = verdict(measured, max(a.spread, b.spread), result.threshold)
            assert change.status == expected, (entry["id"], change.status, expected)
            expected_exit |= expected == "regression"
            single += 1
    assert single >= 150
    assert result.exit_status == expected_exit


@pytest.mark.slow
def test_corpus_before_after_pairs(corpus_manifest: dict) -> None:
    """Every pair of profiles/corpus/pairs.py whose both cases were profiled on the H100: the
    "after" (the faster way, measured) is named faster, by its kernel where the two pair one to
    one and by its NVTX range otherwise; the other way round it is a regression (exit 1)."""
    profiled, launches = {}, {}
    for k in corpus_manifest["kernels"]:
        if k["measured"]["h100"].get("report"):
            profiled.setdefault(k["case"], k["measured"]["h100"]["report"])
            launches.setdefault(k["case"], []).append(k["measured"]["h100"]["report_id"])
    pairs = [p for p in corpus_manifest["pairs"] if p["before"] in profiled and p["after"] in profiled]
    assert len(pairs) == 18
    # each report read for the launches of the pairs' cases only (their NVTX ranges)
    wanted: dict[str, set[int]] = {}
    for pair in pairs:
        for side in ("before", "after"):
            wanted.setdefault(profiled[pair[side]], set()).update(launches[pair[side]])
    reports = {name: load_profile(CORPUS / name, launches=ids) for name, ids in sorted(wanted.items())}
    by_range = 0
    for pair in pairs:
        before, after = reports[profiled[pair["before"]]], reports[profiled[pair["after"]]]
        forward = compare_profiles(before, after, ranges={pair["before"]: pair["after"]}, explain=False)
        backward = compare_profiles(after, before, ranges={pair["after"]: pair["before"]}, explain=False)
        # the operation: its range where its kernels do not pair one to one, else its one kernel
        (operation,) = forward.ranges or forward.kernels
        assert operation.status == "faster", (pair, operation)
        assert backward.regressions(), pair
        by_range += bool(forward.ranges)
        # a kernel both variants run unchanged (the convolution itself, when only the layout
        # transposes around it go away) is not called faster
        for kernel in forward.kernels:
            assert kernel.status == "faster" or (kernel.base.first.name == kernel.new.first.name and forward.ranges), pair
    assert by_range == 7  # the fusions and the layout changes: 3 eager kernels -> 1, 4 -> 1 ...
    # and as the command runs it: two pairs of one BASE and one NEW report, both ways
    code, _ = invoke("compare", CORPUS / "h100" / "h100_partpairs.ncu-rep.xz", CORPUS / "h100" / "h100_part0.ncu-rep.xz",
                     "--range", "softmax/fp32/8192x4096=compiled_softmax/fp32/8192x4096",
                     "--range", "add_transposed/fp32/4096x4096=add_2d/fp32/4096x4096")
    assert code == 0
    code, out = invoke("compare", CORPUS / "h100" / "h100_part0.ncu-rep.xz", CORPUS / "h100" / "h100_partpairs.ncu-rep.xz",
                       "--range", "compiled_softmax/fp32/8192x4096=softmax/fp32/8192x4096")
    assert code == 1 and "regression" in out
