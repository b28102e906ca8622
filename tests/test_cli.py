"""The `keet` command line as a user runs it: real processes, real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "ncu"
RTX3070 = DATA / "rtx3070_cuvectoradddrv.ncu-rep"
V100 = DATA / "v100_miniweather_divtomult.ncu-rep.xz"


def keet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "keet.cli", *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def test_metrics_json_grep_and_kernel():
    result = keet("metrics", V100, "--kernel", "semi_discrete_step_232_gpu", "--grep", "^dram\\.", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    rows = document["metrics"]
    assert {r["metric"] for r in rows} == {"dram.bytes_read", "dram.bytes_write", "dram.bytes", "dram.throughput"}
    assert {r["kernel"] for r in rows} == {4}
    assert all(r["origin"] == "canonical" for r in rows)


def test_metrics_csv_has_raw_and_canonical_names():
    result = keet("metrics", RTX3070, "--format", "csv", "--grep", "time_duration|^duration$")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "kernel,kernel_name,metric,value,unit,origin"
    assert "0,VecAdd_kernel,gpu__time_duration.sum,3232.0,ns,raw" in lines
    assert "0,VecAdd_kernel,duration,3232.0,ns,canonical" in lines


def test_metrics_table_origin_filter():
    result = keet("metrics", RTX3070, "--origin", "raw", "--grep", "launch__grid_size")
    assert result.returncode == 0
    assert "launch__grid_size" in result.stdout and "196" in result.stdout
    assert "canonical" not in result.stdout


def test_explain_json_contract_sorted_by_duration():
    result = keet("explain", V100, "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["format"] == "ncu-rep"
    assert document["device"]["name"] == "Tesla V100-SXM2-32GB"
    kernels = document["kernels"]
    durations = [k["duration_ns"] for k in kernels]
    assert durations == sorted(durations, reverse=True)
    assert kernels[0]["name"] == "semi_discrete_step_232_gpu"
    assert sum(k["share"] for k in kernels) == pytest.approx(1.0)
    assert all(set(k) >= {"id", "name", "duration_ns", "diagnosis"} for k in kernels)


def test_explain_text_and_markdown():
    text = keet("explain", V100, "--kernel", "3")
    assert text.returncode == 0 and "compute_tendencies_x_309_gpu" in text.stdout and "28.5% of GPU time" in text.stdout
    markdown = keet("explain", RTX3070, "--format", "markdown")
    assert markdown.stdout.startswith("# ") and "## [0] `VecAdd_kernel`" in markdown.stdout


def written(name: str, content: bytes):
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(content)
        return path

    return make


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda d: d / "missing.ncu-rep", "no such file"),
        (lambda d: d, "is a directory"),
        (written("empty.ncu-rep", b""), "is empty"),
        (written("noise.bin", bytes(range(256)) * 20), "not a profile format"),
        (written("cut.ncu-rep", RTX3070.read_bytes()[:30000]), "truncated or corrupt"),
    ],
)
@pytest.mark.parametrize("command", ["explain", "metrics"])
def test_bad_input_is_one_line_exit_2(tmp_path, make, problem, command):
    path = make(tmp_path)
    result = keet(command, path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and problem in lines[0]
    assert "Traceback" not in result.stderr


def test_unknown_kernel_and_bad_regex_are_clear_errors():
    unknown = keet("explain", RTX3070, "--kernel", "no_such_kernel")
    assert unknown.returncode == 2 and "no kernel matches 'no_such_kernel'" in unknown.stderr
    regex = keet("metrics", RTX3070, "--grep", "(")
    assert regex.returncode == 2 and "not a regular expression" in regex.stderr and "Traceback" not in regex.stderr


@pytest.mark.parametrize("module", ["perfmodel.cli", "microbench.cli"])
def test_other_console_scripts_start(module):
    result = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "Usage:" in result.stdout
