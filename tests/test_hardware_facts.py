"""Hardware facts live only in perfmodel/hardware (issue 18 item 3).

1. No hardware number in keet/ or perfmodel/ code outside perfmodel/hardware: the Python
   sources are tokenised and every string that is a GPU id or a build target (sm_90a,
   gfx942), every nvcc/hipcc arch flag, every integer equal to a database GPU's SM/CU count
   and every sector/line/wavefront/request size or launch cost defined as a literal fails
   the test unless its file is allow-listed below with a reason.
2. Adding a GPU is adding its TOML: a fake GPU file in a temporary folder named by
   $PERFMODEL_HARDWARE_PATH shows up in `perfmodel gpus`, gives its launch cost to the rules
   for a profile whose device name matches its pattern, and gets the report's predictions.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import tokenize
from pathlib import Path

import pytest
import shared_profiles
from click.testing import CliRunner

from perfmodel.hardware import (
    BUILTIN_DIR,
    HARDWARE_PATH_ENV,
    gpu,
    gpu_id_for_device_name,
    gpu_ids,
)

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"

# file -> why its hits are not hardware facts: each names which GPUs profiles were measured on
# (data of profiles/, not of a GPU) or what a profiler's counters say; a file listed here that
# no longer has a hit fails too, so the list shrinks as the literals go.
ALLOWED = {
    "keet/accuracy.py": "the zoo was measured on H100 and H200 (profiles/manifest.json): the --gpu choices and default name its profiles",
    "keet/accuracy_corpus.py": "the corpus was timed on H100 and H200 (profiles/): which GPUs were measured",
    "perfmodel/validate.py": "the zoo was timed on H100 and H200 (profiles/manifest.json): the validation settings",
    "perfmodel/validate_corpus.py": "the corpus was timed on H100 and H200: the validation settings",
    "perfmodel/features.py": "amd_arch recognises a gfx generation from the counters only it has (a reader's fact, not a constant)",
    "keet/llm/evaluate.py": "the LLM evaluation runs on the zoo's H100 profiles: which profiles were measured",
}
BUILD_TARGET = re.compile(r"^(sm_\d{2,3}a?|compute_\d{2,3}a?|gfx9[0-9a-f]{2})$")
BUILD_FLAG = re.compile(r"gencode=arch=compute_\d|offload-arch=gfx")
SIZE_NAME = re.compile(r"^[A-Z0-9_]*(SECTOR|CACHE_LINE|LINE|WAVEFRONT|REQUEST)_BYTES$")
LAUNCH_NAME = re.compile(r"^[A-Z0-9_]*LAUNCH_(COST|OVERHEAD)[A-Z0-9_]*$")


def hardware_literals(path: Path, ids: set[str], sm_counts: set[int]) -> list[str]:
    """'line: what' for each hardware literal of one Python file."""
    tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
    found = []
    for i, token in enumerate(tokens):
        line = token.start[0]
        if token.type == tokenize.STRING and not token.string.startswith(('"""', "'''", 'f"', "f'", 'rf', 'fr')):
            try:
                value = eval(token.string)
            except (SyntaxError, ValueError):
                continue
            if isinstance(value, str) and (value.lower() in ids or BUILD_TARGET.match(value) or BUILD_FLAG.search(value)):
                found.append(f"{line}: {value!r}")
        elif token.type == tokenize.NUMBER and token.string.isdigit() and int(token.string) in sm_counts:
            found.append(f"{line}: {token.string} (an SM/CU count)")
        elif (token.type == tokenize.NAME and i + 2 < len(tokens) and tokens[i + 1].string == "="
              and tokens[i + 2].type == tokenize.NUMBER and (SIZE_NAME.match(token.string) or LAUNCH_NAME.match(token.string))):
            found.append(f"{line}: {token.string} = {tokens[i + 2].string}")
    return found


def test_no_hardware_number_outside_the_hardware_database():
    ids = set(gpu_ids())
    sm_counts = {int(gpu(gpu_id).require("sm_count")) for gpu_id in ids}
    sources = sorted([*(ROOT / "keet").rglob("*.py"), *(ROOT / "perfmodel").rglob("*.py")])
    hits = {}
    for path in sources:
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("perfmodel/hardware/"):
            continue
        if found := hardware_literals(path, ids, sm_counts):
            hits[relative] = found
    new = {path: found for path, found in hits.items() if path not in ALLOWED}
    assert not new, f"hardware facts belong in perfmodel/hardware (a GPU or isa/ TOML file): {new}"
    stale = sorted(set(ALLOWED) - set(hits))
    assert not stale, f"allow-listed files without hardware literals any more; drop them from ALLOWED: {stale}"


def test_the_scanner_finds_what_it_looks_for(tmp_path):
    """The grep test could fail: each kind of literal it bans is found in a sample file."""
    sample = tmp_path / "sample.py"
    sample.write_text('SECTOR_BYTES = 32\nLAUNCH_COST_NS = 3000.0\nARCHS = {"h100": "sm_90a"}\nSMS = 132\n'
                      'FLAGS = ["--offload-arch=gfx942"]\n"""h100 in a docstring is prose"""\n')
    found = hardware_literals(sample, {"h100"}, {132})
    assert [hit.split(":")[0] for hit in found] == ["1", "2", "3", "3", "4", "5"], found


FAKE_PATTERN = r"\bFAKEGPU 9000\b"


@pytest.fixture
def fake_gpu(tmp_path, monkeypatch):
    """A GPU the package does not ship: the H100 file under another id, name, pattern, SM count
    and launch cost, in a folder named by $PERFMODEL_HARDWARE_PATH."""
    text = (BUILTIN_DIR / "h100.toml").read_text()
    text = text.replace('id = "h100"', 'id = "fakegpu"').replace('name = "NVIDIA H100 SXM5 80GB HBM3"', 'name = "Fake GPU 9000"')
    text = text.replace("reference = true\n", "").replace("listing_order = 1", "listing_order = 99")
    text = re.sub(r"device_patterns = \[.*\]", lambda _: f"device_patterns = ['{FAKE_PATTERN}']", text)
    text = re.sub(r"(\[params\.sm_count\]\nvalue = )\d+", r"\g<1>66", text)
    text = re.sub(r"(\[params\.launch_overhead_ns\]\nvalue = )[\d.]+", r"\g<1>7777", text)
    (tmp_path / "fakegpu.toml").write_text(text)
    monkeypatch.setenv(HARDWARE_PATH_ENV, str(tmp_path))
    return gpu("fakegpu")


def test_a_fake_gpu_is_in_the_database_and_perfmodel_gpus(fake_gpu):
    from perfmodel.cli import cli

    assert fake_gpu.value("sm_count") == 66 and fake_gpu.isa is not None and fake_gpu.isa.id == "sm_90"
    assert gpu_id_for_device_name("FAKEGPU 9000 (engineering sample)") == "fakegpu"
    result = CliRunner().invoke(cli, ["gpus", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "fakegpu" in [entry["id"] for entry in json.loads(result.output)]


def test_without_the_folder_the_fake_gpu_is_unknown(fake_gpu, monkeypatch):
    monkeypatch.delenv(HARDWARE_PATH_ENV)
    assert "fakegpu" not in gpu_ids() and gpu_id_for_device_name("FAKEGPU 9000") is None


@pytest.fixture(scope="module")
def tiny_kernel_profile():
    return shared_profiles.zoo("h100")  # the manifest's combined report


def as_fake_device(profile):
    device = dataclasses.replace(profile.device, name="FAKEGPU 9000")
    return dataclasses.replace(profile, device=device, devices={key: device for key in profile.devices})


def test_the_rules_use_the_fake_gpus_limits(fake_gpu, tiny_kernel_profile):
    from keet.diagnosis import diagnose_kernel

    profile = as_fake_device(tiny_kernel_profile)
    findings = diagnose_kernel(profile, profile.kernel("tiny_kernel")).findings
    launch = next(f for f in findings if f.category == "launch_overhead")
    duration = next(e for e in launch.evidence if e.metric == "duration")
    assert duration.compared_with == 7777  # the fake file's launch cost, not the H100's
    assert launch.impact == pytest.approx(7777 / (7777 + duration.value))


def test_the_report_predicts_the_fake_gpu(fake_gpu, tiny_kernel_profile):
    from keet.report import sections

    profile = as_fake_device(tiny_kernel_profile)
    kernel = profile.kernel("tiny_kernel")
    work, error = sections.model_inputs(profile, kernel)
    predictions = sections.predictions(profile, kernel, work, error)
    assert predictions.own_gpu == "fakegpu"
    assert "fakegpu" in [p.gpu for p in predictions.per_gpu]
