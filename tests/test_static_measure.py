"""perfmodel/static/measure.py: the H100 timings of the open-source program corpus (issue 22).

ncu's CSV is parsed on real exports (tests/data/ncu, see tests/data/SOURCES.md); the GPU step's
orchestration runs against stand-ins for nvcc and ncu written here (no GPU on this machine);
the comparison runs on a synthetic times.json (made up here, not measured).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.static import corpus, measure

NCU = Path(__file__).parent / "data" / "ncu"
ROOT = Path(__file__).resolve().parents[1]


def test_details_csv_of_a_real_h100_export():
    """The H100 export has the application's output before the table, 9 launches and kernel
    names with commas inside."""
    text = (NCU / "h100_details_metrics_with_stdout.csv").read_text()
    launches = measure.parse_ncu_csv(text, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
    assert len(launches) == 9 and [launch["id"] for launch in launches] == list(range(9))
    first = launches[0]
    assert first["kernel"].startswith("void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4,")
    assert first["grid"] == [912, 1, 1] and first["block"] == [256, 1, 1]
    assert first["value"] == pytest.approx(float(text.split('"sm__throughput.avg.pct_of_peak_sustained_elapsed","%","')[1].split('"')[0]))
    assert measure.parse_ncu_csv(text) == []  # no gpu__time_duration rows in it


def test_durations_in_base_units_with_thousands_separators():
    """A real Turing export: the 20-column header with rule rows, a duration of "21,058,944" ns."""
    text = (NCU / "sm75_details_rules_copy_blocked.csv").read_text()
    (launch,) = measure.parse_ncu_csv(text, "Duration")
    assert launch["value"] == 21_058_944 and launch["kernel"].startswith("copy_blocked[v1,")
    assert launch["grid"] == [1024, 1, 1] and launch["block"] == [256, 1, 1]
    microseconds = text.replace('"Duration","ns","21,058,944"', '"Duration","usecond","21,058.944"')
    assert measure.parse_ncu_csv(microseconds, "Duration")[0]["value"] == pytest.approx(21_058_944)
    with pytest.raises(measure.MeasureError, match="no Metric Value column"):
        measure.parse_ncu_csv('"ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit"\n"0","k","(1)","(1)","x","ns"\n')


def test_medians_and_the_ncu_command():
    launches = [{"kernel": "_Z1kPf", "grid": [4, 1, 1], "block": [256, 1, 1], "value": v} for v in (30.0, 10.0, 20.0)]
    launches.append({"kernel": "_Z1kPf", "grid": [8, 1, 1], "block": [256, 1, 1], "value": 50.0})
    assert measure.medians(launches) == [
        {"kernel": "_Z1kPf", "grid": [4, 1, 1], "block": [256, 1, 1], "samples_ns": [30.0, 10.0, 20.0], "median_ns": 20.0},
        {"kernel": "_Z1kPf", "grid": [8, 1, 1], "block": [256, 1, 1], "samples_ns": [50.0], "median_ns": 50.0}]
    cmd = measure.ncu_command("ncu", "./prog", ["3"])
    assert cmd[-2:] == ["./prog", "3"] and "--cache-control" in cmd and cmd[cmd.index("--cache-control") + 1] == "all"
    assert cmd[cmd.index("--filter-mode") + 1] == "per-launch-config" and cmd[cmd.index("--launch-count") + 1] == "5"
    again = measure.ncu_command("ncu", "./prog", [], kernel="_Z1kPf")
    assert again[again.index("--kernel-name") + 1] == "regex:^_Z1kPf$"


def _fake_repository(root: Path) -> tuple[dict, dict]:
    """A repository with one program that includes a header of its folder ("...") and one of
    an -I folder (<...>), reads data/, and has documentation beside it."""
    repo = root / "demo"
    (repo / "Common").mkdir(parents=True)
    (repo / "Common" / "helper.h").write_text('#include "nested.h"\n')
    (repo / "Common" / "nested.h").write_text("// nested\n")
    (repo / "Common" / "unused.h").write_text("// never included\n")
    prog = repo / "Samples" / "prog"
    (prog / "data").mkdir(parents=True)
    (prog / "doc").mkdir()
    (prog / "prog.cu").write_text('#include <helper.h>\n#include "local.cuh"\n#include <cstdio>\nint main() {}\n')
    (prog / "local.cuh").write_text("// local\n")
    (prog / "data" / "input.pgm").write_bytes(b"P5 1 1 255\n\0")
    (prog / "doc" / "manual.pdf").write_bytes(b"%PDF")
    (prog / "README.md").write_text("# prog\n")
    manifest = {"repos": {"me/demo": {"folder": "demo", "commit": "0" * 40, "license": "MIT"}},
                "program": [{"id": "demo/prog", "repo": "me/demo", "path": "Samples/prog/prog.cu", "include": ["Common"],
                             "args": [], "status": "predicts"},
                            {"id": "demo/prog 2", "repo": "me/demo", "path": "Samples/prog/prog.cu", "include": ["Common"],
                             "args": ["2"], "status": "partial"},
                            {"id": "demo/broken", "repo": "me/demo", "path": "Samples/prog/prog.cu", "include": [],
                             "args": ["x"], "status": "fails"}]}
    predictions = {"demo/prog": [{"kernel": "_Z1kPf", "name": "k(float*)", "grid": [4, 1, 1], "block": [256, 1, 1],
                                  "launches": 10, "predicted_ns": 1200.0},
                                 {"kernel": "_Z5otherPf", "name": "other(float*)", "grid": [1, 1, 1], "block": [32, 1, 1],
                                  "launches": 1, "predicted_ns": 900.0}],
                   "demo/prog 2": [{"kernel": "_Z1kPf", "name": "k(float*)", "grid": [8, 1, 1], "block": [256, 1, 1],
                                    "launches": 1, "predicted_ns": None}]}
    return manifest, predictions


def test_bundle_copies_what_each_program_needs(tmp_path: Path):
    manifest, predictions = _fake_repository(tmp_path / "src")
    out = tmp_path / "bundle"
    doc = measure.bundle(out, tmp_path / "src", manifest, predictions)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["bundle.json", "demo/Common/helper.h", "demo/Common/nested.h", "demo/Samples/prog/data/input.pgm",
                     "demo/Samples/prog/local.cuh", "demo/Samples/prog/prog.cu", "measure.py"]
    (program,) = doc["programs"]  # one program, two runs (the failing one is left out)
    assert program["include"] == ["demo/Common"] and program["folder"] == "demo/Samples/prog" and not program["openmp"]
    assert [run["id"] for run in program["runs"]] == ["demo/prog", "demo/prog 2"]
    assert [e["kernel"] for e in program["runs"][0]["expect"]] == ["_Z1kPf", "_Z5otherPf"] and program["runs"][1]["expect"] == []
    assert doc["bytes"] == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert json.loads((out / "bundle.json").read_text())["programs"] == doc["programs"]
    with pytest.raises(measure.MeasureError, match="not empty"):
        measure.bundle(out, tmp_path / "src", manifest, predictions)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_measure_builds_and_times_every_run_with_stand_ins_for_nvcc_and_ncu(tmp_path: Path):
    """nvcc and ncu are stand-ins (no GPU here): nvcc writes a script, asks for -rdc=true as real
    nvcc does for a device-side launch; ncu prints a details CSV in the real layout, profiling
    kernel _Z1kPf only unless --kernel-name asks for another (the second pass)."""
    manifest, predictions = _fake_repository(tmp_path / "src")
    (tmp_path / "src" / "demo" / "Samples" / "prog" / "prog.cu").write_text("// launches from the device\nint main() {}\n")
    out = tmp_path / "bundle"
    measure.bundle(out, tmp_path / "src", manifest, predictions)
    tools = tmp_path / "bin"
    tools.mkdir()
    _executable(tools / "nvcc", f"""#!{sys.executable}
import sys
args = sys.argv[1:]
if "-rdc=true" not in args and "device" in open(args[args.index("-o") - 1]).read():
    sys.stderr.write("prog.cu(1): error: kernel launch from __device__ or __global__ functions requires separate compilation mode\\n")
    sys.exit(1)
out = args[args.index("-o") + 1]
open(out, "w").write("#!/bin/sh\\nexit 0\\n")
""")
    (tools / "nvcc").chmod(0o755)
    header = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
    _executable(tools / "ncu", f"""#!{sys.executable}
import sys
args = sys.argv[1:]
name = args[args.index("--kernel-name") + 1][len("regex:^"):-1] if "--kernel-name" in args else "_Z1kPf"
grid = "(4, 1, 1)" if name == "_Z1kPf" else "(1, 1, 1)"
block = "(256, 1, 1)" if name == "_Z1kPf" else "(32, 1, 1)"
print("==PROF== Connected to process 1 (prog)")
print({header!r})
for i, value in enumerate(["1,000", "1,100", "900"]):
    print(f'"{{i}}","1","prog","host","{{name}}","1","7","{{block}}","{{grid}}","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","{{value}}"')
""")
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    times = tmp_path / "times.json"
    result = subprocess.run([sys.executable, str(out / "measure.py"), "--measure", str(out), "--out", str(times)],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    doc = json.loads(times.read_text())
    assert set(doc["runs"]) == {"demo/prog", "demo/prog 2"} and all(r["status"] == "measured" for r in doc["runs"].values())
    kernels = {(k["kernel"], tuple(k["grid"])): k for k in doc["runs"]["demo/prog"]["kernels"]}
    assert kernels[("_Z1kPf", (4, 1, 1))]["median_ns"] == 1000.0 and kernels[("_Z1kPf", (4, 1, 1))]["samples_ns"] == [1000.0, 1100.0, 900.0]
    assert ("_Z5otherPf", (1, 1, 1)) in kernels  # predicted, not profiled by the first pass: the second one did
    assert "2 of 2 runs measured" in result.stdout
    bad = subprocess.run([sys.executable, str(out / "measure.py"), "--measure", str(tmp_path), "--out", str(times)],
                         capture_output=True, text=True, env=env, timeout=60, check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no bundle.json" in bad.stderr


def test_compare_on_a_synthetic_times_file(tmp_path: Path):
    """times.json here is synthetic (made up for the test): two runs, one configuration the
    GPU never ran and one it ran that was not predicted."""
    predictions = {"a": [{"kernel": "_Z1kPf", "name": "k(float*)", "grid": [4, 1, 1], "block": [256, 1, 1], "launches": 1,
                          "predicted_ns": 1200.0},
                         {"kernel": "_Z1kPf", "name": "k(float*)", "grid": [8, 1, 1], "block": [256, 1, 1], "launches": 1,
                          "predicted_ns": 3000.0}],
                   "b": [{"kernel": "_Z1gv", "name": "g()", "grid": [1, 1, 1], "block": [32, 1, 1], "launches": 1,
                          "predicted_ns": 500.0},
                         {"kernel": "_Z1hv", "name": "h()", "grid": [1, 1, 1], "block": [32, 1, 1], "launches": 1,
                          "predicted_ns": None, "launched_by": "g()"}]}
    times = {"gpus": ["NVIDIA H100 80GB HBM3"], "tool": "ncu --metrics gpu__time_duration.sum", "runs": {
        "a": {"status": "measured", "kernels": [
            {"kernel": "_Z1kPf", "grid": [4, 1, 1], "block": [256, 1, 1], "samples_ns": [1000.0], "median_ns": 1000.0},
            {"kernel": "_Z1kPf", "grid": [8, 1, 1], "block": [256, 1, 1], "samples_ns": [2000.0, 2000.0], "median_ns": 2000.0},
            {"kernel": "_Z6unseenv", "grid": [1, 1, 1], "block": [1, 1, 1], "samples_ns": [5.0], "median_ns": 5.0}]},
        "b": {"status": "failed", "problem": "exit status 1: no data", "kernels": []}}}
    comparison = measure.compare(times, predictions)
    a = comparison["runs"]["a"]
    assert (a["matched"], a["predicted"]) == (2, 2) and [r["ape"] for r in a["configurations"]] == [pytest.approx(0.2), pytest.approx(0.5)]
    assert a["median_ape"] == pytest.approx(0.35) and comparison["runs"]["b"]["matched"] == 0
    o = comparison["overall"]
    assert (o["configurations"], o["predicted"], o["runs_measured"]) == (2, 3, 1)
    assert o["median_ape"] == pytest.approx(0.35) and o["median_signed"] == pytest.approx(0.35)
    text = "\n".join(measure.report(comparison))
    assert "a: 2/2 configurations measured, median APE 35%" in text and "b: 0/1" in text and "no data" in text
    manifest = {"repos": {"r": {"folder": "r", "commit": "1" * 40, "license": "MIT"}},
                "program": [{"id": "a", "repo": "r", "path": "a.cu", "include": [], "args": [], "status": "predicts",
                             "configurations": 2, "predicted": 2, "seconds": 1.0, "reason": ""}]}
    lines = corpus.section(manifest, comparison)
    assert any("median APE 35%" in line and "2 of the 3 predicted configurations" in line for line in lines)
    assert "| a | r | - | predicts | 2/2 | 1.0 | 35% (2) |  |" in lines
    doc = tmp_path / "validation.md"
    doc.write_text("# Validation\n\nearlier sections\n\n" + corpus.SECTION_TITLE + "\n\nold text\n")
    corpus.write_section(doc, manifest)
    assert doc.read_text().startswith("# Validation\n\nearlier sections\n\n" + corpus.SECTION_TITLE) and "old text" not in doc.read_text()


def test_compare_command_line_errors(tmp_path: Path):
    bad = tmp_path / "times.json"
    bad.write_text("[1, 2]")
    result = subprocess.run([sys.executable, "-m", "perfmodel.static.measure", "--compare", str(bad)], capture_output=True,
                            text=True, cwd=ROOT, timeout=120, check=False)
    assert result.returncode == 2 and result.stderr.startswith("measure: error:") and result.stderr.count("\n") == 1
    result = subprocess.run([sys.executable, "-m", "perfmodel.static.measure", "--bundle", str(tmp_path / "b")],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert result.returncode == 2 and "--bundle needs --root" in result.stderr


def test_a_run_past_its_time_is_stopped_and_the_deadline_skips_the_rest(tmp_path: Path):
    """The program an ncu stand-in runs never ends: at the run's limit the program is stopped
    (not ncu), and ncu prints what it profiled until then, as the real one does when its target
    exits; once the deadline is near, the runs left are recorded as skipped."""
    import time

    manifest, predictions = _fake_repository(tmp_path / "src")
    out = tmp_path / "bundle"
    measure.bundle(out, tmp_path / "src", manifest, predictions)
    tools = tmp_path / "bin"
    tools.mkdir()
    _executable(tools / "nvcc", f"#!{sys.executable}\nimport sys\nargs = sys.argv[1:]\n"
                                "open(args[args.index('-o') + 1], 'w').write('#!/bin/sh\\nexit 0\\n')\n")
    header = '"ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"'
    _executable(tools / "ncu", f"""#!{sys.executable}
import subprocess
subprocess.Popen(["sleep", "300"]).wait()  # the program, until it is stopped
print({header!r})
print('"0","_Z1kPf","(256, 1, 1)","(4, 1, 1)","gpu__time_duration.sum","nsecond","1500"')
""")
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    times = tmp_path / "times.json"
    start = time.monotonic()
    result = subprocess.run([sys.executable, str(out / "measure.py"), "--measure", str(out), "--out", str(times),
                             "--run-timeout", "2", "--deadline", "12"], capture_output=True, text=True, env=env, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 60
    runs = json.loads(times.read_text())["runs"]
    first = runs["demo/prog"]
    assert first["status"] == "measured" and first["problem"] == "stopped after 2 s"
    assert [(k["kernel"], k["median_ns"]) for k in first["kernels"]] == [("_Z1kPf", 1500.0)]
    assert runs["demo/prog 2"]["status"] == "skipped" and "deadline" in runs["demo/prog 2"]["problem"]
