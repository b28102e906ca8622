"""The declared parameter schema (perfmodel/hardware/parameters.toml, issue 20 item 2).

1. Lookups: GPU/ISA value() and require() of a name the schema does not declare raise
   UnknownParameter (a typo used to read as "absent" and silently drop a limit); a declared
   parameter a file lacks is still None / the default.
2. Files: a GPU or ISA file (here in a folder named by $PERFMODEL_HARDWARE_PATH) with an
   undeclared parameter, another unit, a source the declaration does not allow, or a parameter
   of the other vendor is refused, naming the file and the parameter; `perfmodel gpus` says so in
   one line with exit status 2; calibrate refuses to write such a file; every built-in file loads.
3. The schema itself: no dead entry (each is set by a file or named by the code), every
   used_by module exists and names the parameter, every name the code looks up is declared
   (including the f-string names of the tensor term and the model terms' PARAMETERS).
4. docs/model.md's parameter table is the one generated from the schema.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from keet.errors import KeetError
from perfmodel.hardware import (
    BUILTIN_DIR,
    HARDWARE_PATH_ENV,
    HardwareFileError,
    UnknownParameter,
    gpu,
    gpu_ids,
    isa,
    isa_ids,
)
from perfmodel.hardware.schema import (
    SCHEMA_PATH,
    documented_table,
    parameter_table,
    schema,
)

ROOT = Path(__file__).resolve().parents[1]
CODE = sorted(p for package in ("keet", "perfmodel", "microbench") for p in (ROOT / package).rglob("*.py"))
MODEL_DOC = ROOT / "docs" / "model.md"


def module_path(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def names_in(text: str) -> tuple[set[str], list[re.Pattern]]:
    """The quoted names of a source text, and its f-string names as patterns
    (f"tensor_{kind}_{precision}_flops_per_clk_per_sm" -> tensor_\\w+_\\w+_flops_per_clk_per_sm)."""
    literal = set(re.findall(r"[\"']([a-z][a-z0-9_]*)[\"']", text))
    templates = [re.compile(re.sub(r"\\\{[^}]*\\\}", r"\\w+", re.escape(t)))
                 for t in re.findall(r"\bf[\"']([a-z0-9_]*\{[a-z_]+\}[a-z0-9_{}]*)[\"']", text)]
    return literal, templates


def mentions(text: str, name: str) -> bool:
    literal, templates = names_in(text)
    return name in literal or any(t.fullmatch(name) for t in templates)


# ------------------------------------------------------------------ lookups


def test_a_typo_in_a_lookup_raises():
    h100 = gpu("h100")
    for lookup in (h100.value, h100.require, h100.isa.value, h100.isa.require):
        with pytest.raises(UnknownParameter, match=r"'sm_cuont' is not a declared hardware parameter \(did you mean 'sm_count'\?\)"):
            lookup("sm_cuont")
    with pytest.raises(KeyError):  # a programming error, not a user's bad input
        h100.value("dram_bandwith_bytes_per_s", 0.0)
    assert not issubclass(UnknownParameter, KeetError)


def test_a_declared_parameter_a_file_lacks_is_still_absent():
    a100 = gpu("a100")
    assert a100.value("tensor_wgmma_bf16_flops_per_clk_per_sm") is None
    assert a100.value("lsu_ops_per_clk_per_sm", 7.0) == 7.0
    with pytest.raises(KeetError, match="has no lsu_ops_per_clk_per_sm"):
        a100.require("lsu_ops_per_clk_per_sm")
    assert gpu("h100").value("sector_bytes") == 32  # from its ISA file


def test_every_builtin_file_passes(monkeypatch):
    monkeypatch.delenv(HARDWARE_PATH_ENV, raising=False)
    declared = schema().names
    for gpu_id in gpu_ids():
        assert set(gpu(gpu_id).params) <= declared
    for isa_id in isa_ids():
        assert set(isa(isa_id).params) <= declared


# ------------------------------------------------------------------ files


def fake_gpu_text() -> str:
    """The H100 file as another GPU (so that nothing but the fake is in question)."""
    text = (BUILTIN_DIR / "h100.toml").read_text()
    text = text.replace('id = "h100"', 'id = "fakegpu"').replace("reference = true\n", "")
    return re.sub(r"device_patterns = \[.*\]", lambda _: "device_patterns = ['FAKEGPU 9000']", text)


SM_COUNT = '[params.sm_count]\nvalue = 132\nunit = "SM"\nsource = "vendor"\n'
BAD_FILES = {  # what is wrong -> (edit of the fake file, the parameter named, the words of the error)
    "a typo'd name": (lambda t: t.replace("[params.sm_count]", "[params.sm_cuont]"), "sm_cuont",
                      "not a declared parameter (did you mean 'sm_count'?)"),
    "a wrong unit": (lambda t: t.replace(SM_COUNT, SM_COUNT.replace('"SM"', '"CU"')), "sm_count",
                     "unit 'CU' differs from the schema's 'SM'"),
    "a disallowed source": (lambda t: t.replace(SM_COUNT, SM_COUNT.replace('"vendor"', '"derived"')), "sm_count",
                            "source 'derived' is not one the schema allows for it (vendor, publication, microbenchmark)"),
    "an unknown source": (lambda t: t.replace(SM_COUNT, SM_COUNT.replace('"vendor"', '"fitted"')), "sm_count",
                          "source 'fitted' is not one"),
    "the other vendor's parameter": (
        lambda t: t + '\n[params.mfma_fp16_flops_per_clk_per_cu]\nvalue = 1024\nunit = "flop/clk/CU"\nsource = "vendor"\nref = "x"\n',
        "mfma_fp16_flops_per_clk_per_cu", "declared for flop/clk/CU (amd only) files, not for a file of vendor 'nvidia'"),
    "no value": (lambda t: t.replace(SM_COUNT, SM_COUNT.replace("value = 132\n", "")), "sm_count", "value must be a number"),
}


def test_the_fake_file_itself_passes(tmp_path, monkeypatch):
    (tmp_path / "fakegpu.toml").write_text(fake_gpu_text())
    monkeypatch.setenv(HARDWARE_PATH_ENV, str(tmp_path))
    assert gpu("fakegpu").value("sm_count") == 132


@pytest.mark.parametrize("problem", BAD_FILES)
def test_a_bad_hardware_file_is_refused_naming_file_and_parameter(tmp_path, monkeypatch, problem):
    edit, name, words = BAD_FILES[problem]
    text = edit(fake_gpu_text())
    assert text != fake_gpu_text()
    path = tmp_path / "fakegpu.toml"
    path.write_text(text)
    monkeypatch.setenv(HARDWARE_PATH_ENV, str(tmp_path))
    with pytest.raises(HardwareFileError) as caught:
        gpu("fakegpu")
    message = str(caught.value)
    assert message.startswith(f"{path}: parameter {name!r}: ") and words in message, message
    assert caught.value.path == str(path) and caught.value.name == name
    assert isinstance(caught.value, KeetError)


def test_a_bad_isa_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "isa").mkdir()
    text = (BUILTIN_DIR / "isa" / "gfx942.toml").read_text()
    bad = re.sub(r'(\[params\.l1_line_bytes\]\nvalue = \d+\n)unit = "B"', r'\1unit = "bytes"', text)
    assert bad != text
    (tmp_path / "isa" / "gfx942.toml").write_text(bad)
    monkeypatch.setenv(HARDWARE_PATH_ENV, str(tmp_path))
    with pytest.raises(HardwareFileError, match=r"gfx942\.toml: parameter 'l1_line_bytes': unit 'bytes' differs from the schema's 'B'"):
        isa("gfx942")


def test_perfmodel_gpus_reports_a_bad_file_in_one_line(tmp_path):
    (tmp_path / "fakegpu.toml").write_text(fake_gpu_text().replace("[params.sm_count]", "[params.sm_cuont]"))
    env = {**os.environ, HARDWARE_PATH_ENV: str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "perfmodel.cli", "gpus"], capture_output=True, text=True, env=env, timeout=120,
                            check=False, cwd=ROOT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert "fakegpu.toml: parameter 'sm_cuont': not a declared parameter" in result.stderr


def test_calibrate_refuses_an_undeclared_parameter(tmp_path):
    from perfmodel.calibrate import calibrate

    hw = tmp_path / "hw"
    hw.mkdir()
    (hw / "h100.toml").write_text((BUILTIN_DIR / "h100.toml").read_text())
    before = (hw / "h100.toml").read_text()
    calib = tmp_path / "calib_h100.json"
    calib.write_text(json.dumps({"device": {"name": "NVIDIA H100 80GB HBM3"}, "date_utc": "2026-11-21T12:00:00Z",
                                 "parameters": {"dram_latncy_cycles": {"value": 800, "unit": "cycle", "from": "a typo"}}}))
    with pytest.raises(HardwareFileError, match=r"h100\.toml: parameter 'dram_latncy_cycles': not a declared parameter"):
        calibrate(calib, "h100", hw)
    assert (hw / "h100.toml").read_text() == before


def test_perfmodel_gpus_and_predict_still_work():
    from perfmodel.cli import cli

    listed = CliRunner().invoke(cli, ["gpus", "--format", "json"])
    assert listed.exit_code == 0, listed.output
    assert {entry["id"] for entry in json.loads(listed.output)} >= {"h100", "h200", "mi300x"}
    shown = CliRunner().invoke(cli, ["gpus", "--show", "mi300x"])
    assert shown.exit_code == 0 and "sm_count" in shown.output
    profile = ROOT / "profiles" / "h100" / "ncu" / "dram_triad.ncu-rep.xz"
    predicted = CliRunner().invoke(cli, ["predict", str(profile), "--gpu", "h100", "--format", "json"])
    assert predicted.exit_code == 0, predicted.output
    assert json.loads(predicted.output)["kernels"][0]["predicted_ns"] > 0


# ------------------------------------------------------------------ the schema


def test_the_schema_parses_and_names_only_known_sources():
    parsed = schema()
    assert set(parsed.sources) == {"vendor", "publication", "derived", "microbenchmark"}
    assert parsed.params and all(set(d.sources) <= set(parsed.sources) for d in parsed.params.values())
    assert all("\n" not in d.description for d in parsed.params.values())


def test_no_dead_entries():
    """Each declared parameter is set by a built-in file or named by the code."""
    in_files = {name for path in [*BUILTIN_DIR.glob("*.toml"), *(BUILTIN_DIR / "isa").glob("*.toml")] if path != SCHEMA_PATH
                for name in tomllib.loads(path.read_text()).get("params", {})}
    texts = [p.read_text() for p in CODE if not p.is_relative_to(BUILTIN_DIR)]
    dead = [name for name in schema().names if name not in in_files and not any(mentions(t, name) for t in texts)]
    assert not dead, f"declared in {SCHEMA_PATH} but set by no file and named by no code: {dead}"


def test_every_used_by_module_exists_and_names_the_parameter():
    wrong = []
    for declaration in schema().params.values():
        for entry in declaration.used_by:
            module = entry.split(":", 1)[0].strip()
            path = module_path(module)
            if path is None:
                wrong.append(f"{declaration.name}: {module} is no module")
            elif not mentions(path.read_text(), declaration.name):
                wrong.append(f"{declaration.name}: {module} does not name it")
    assert not wrong, f"fix used_by in {SCHEMA_PATH}: {wrong}"


LOOKUP = re.compile(r"\.(?:value|require)\(\s*(f?)[\"']([a-z0-9_{}]+)[\"']")


def test_every_name_the_code_looks_up_is_declared():
    declared = schema().names
    undeclared = []
    for path in CODE:
        for is_f, name in LOOKUP.findall(path.read_text()):
            if is_f:
                pattern = re.compile(re.sub(r"\\\{[^}]*\\\}", r"\\w+", re.escape(name)))
                if not any(pattern.fullmatch(n) for n in declared):
                    undeclared.append(f"{path.relative_to(ROOT)}: f{name!r}")
            elif name not in declared:
                undeclared.append(f"{path.relative_to(ROOT)}: {name!r}")
    assert not undeclared, f"looked up but not declared in {SCHEMA_PATH}: {undeclared}"


def test_the_tensor_rate_names_the_model_builds_are_declared():
    """perfmodel.terms.tensor asks for tensor_{kind}_{precision}_flops_per_clk_per_sm and the
    vendor tensor_{precision}_flops_per_clk_per_sm: each combination must be declared, or a
    kernel of that kind would raise UnknownParameter."""
    declared = schema().names
    for precision in ("fp16", "bf16"):
        assert f"tensor_{precision}_flops_per_clk_per_sm" in declared
        for kind in ("mma_sync", "wgmma"):
            assert f"tensor_{kind}_{precision}_flops_per_clk_per_sm" in declared


def test_the_model_terms_read_declared_parameters_listed_in_used_by():
    terms = pytest.importorskip("perfmodel.terms")
    declarations = schema().params
    wrong = []
    for term in terms.TERMS.values():
        for param in term.PARAMETERS:
            if param not in declarations:
                wrong.append(f"{term.__name__}.PARAMETERS: {param} is not declared")
            elif not any(u.split(":", 1)[0].strip() == term.__name__ for u in declarations[param].used_by):
                wrong.append(f"{param}: used_by lacks {term.__name__}")
    assert not wrong, wrong


# ------------------------------------------------------------------ docs


def test_the_docs_parameter_table_is_current():
    documented = documented_table(MODEL_DOC.read_text())
    assert documented is not None, "docs/model.md has no <!-- parameters:begin --> ... <!-- parameters:end --> markers"
    assert documented == parameter_table(), "docs/model.md's parameter table is stale: run `python -m perfmodel.hardware --write-docs`"
