"""Write the parameters a microbenchmark run derived (microbench/runner.py output) into a
hardware file (perfmodel/hardware/<id>.toml), with provenance.

    calibrate("calib_h100.json", "h100", "perfmodel/hardware")          # -> list of changes
    calibrate("calib_h100.json", "h100", "perfmodel/hardware", dry_run=True)

Each derived parameter becomes a [params.<name>] table with source = "microbenchmark",
ref = "microbench suite v<N>, <calib file>, <GPU name> driver <driver>, <date>" and
note = how it was derived. The TOML text is edited minimally: an existing [params.<name>]
table is removed (its header, key lines and comments, but not the comment lines directly above
the next table header, which belong to that table), the new tables are appended at the end; everything else is left byte for byte.
Refuses a calibration file measured on another GPU model than the hardware file's, and a
parameter that perfmodel/hardware/parameters.toml does not declare with that unit.
Calibration is perfmodel's (`perfmodel calibrate`): microbench only measures and writes the JSON.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path

from keet.errors import KeetError
from perfmodel.fit import fitted_parameters
from perfmodel.hardware import parse

_HEADER = re.compile(r"^\s*\[")
_MODEL = re.compile(r"\b(?:MI\d{3}[A-Z]?|[A-Z]{1,2}\d{2,3}[A-Z]?)\b")
_VARIANTS = ("PCIE", "NVL", "SXM")


def _model(name: str) -> str | None:
    m = _MODEL.search(name.upper().replace("NVIDIA", " "))
    return m.group(0) if m else None


def gpu_names_match(measured: str, hardware: str) -> bool:
    """Same GPU model (H100, H200, A100, ...); and a form factor named in the measured name
    (PCIe, NVL) must not contradict the hardware file's (e.g. H100 PCIe into an SXM5 file)."""
    mm, hm = _model(measured), _model(hardware)
    if not mm or mm != hm:
        return False
    mu, hu = measured.upper(), hardware.upper()
    named = [v for v in _VARIANTS if v in mu]
    return all(v in hu for v in named) if named else True


def _fmt_value(value: float, unit: str) -> str:
    v = float(f"{float(value):.4g}")
    if v.is_integer() and abs(v) < 2**53:
        i = int(v)
        return f"{i:_}" if abs(i) >= 10_000 else str(i)
    return repr(v)


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def remove_table(text: str, table: str) -> tuple[str, bool]:
    """Remove the `[table]` header, its key lines and its comments; keep the comment lines
    directly above the next table header (they belong to that table) and one blank line."""
    lines = text.splitlines(keepends=True)
    header = re.compile(r"^\s*\[\s*" + re.escape(table) + r"\s*\]\s*(#.*)?$")
    start = next((i for i, ln in enumerate(lines) if header.match(ln.rstrip("\r\n"))), None)
    if start is None:
        return text, False
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    keep_from = end  # the comment lines directly above the next header belong to it
    while keep_from > start + 1 and lines[keep_from - 1].lstrip().startswith("#"):
        keep_from -= 1
    kept = lines[:start]
    if kept and kept[-1].strip() and not lines[keep_from - 1].strip():
        kept.append(lines[keep_from - 1])  # keep the blank line that separated the tables
    return "".join(kept + lines[keep_from:]), True


def _display_path(path: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), Path.cwd())
    except ValueError:
        return str(path)


def calibrate(calib_path: str | Path, gpu_id: str, hardware_dir: str | Path, dry_run: bool = False) -> list[dict]:
    """Write the derived parameters of calib_path into <hardware_dir>/<gpu_id>.toml.

    Returns the changes, one dict per parameter: name, old (None if new), new, unit.
    """
    calib_path, hw_path = Path(calib_path), Path(hardware_dir) / f"{gpu_id}.toml"
    try:
        calib = json.loads(calib_path.read_text())
    except OSError as exc:
        raise KeetError(f"{calib_path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise KeetError(f"{calib_path}: not JSON: {exc}") from None
    if not hw_path.is_file():
        raise KeetError(f"no hardware file {hw_path} for GPU id {gpu_id!r}")
    text = hw_path.read_text()
    try:
        hw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KeetError(f"{hw_path}: not valid TOML: {exc}") from None

    params = calib.get("parameters")
    device = calib.get("device") or {}
    if not isinstance(params, dict) or not params:
        raise KeetError(f"{calib_path}: no derived parameters (not a complete `microbench run` output?)")
    measured = device.get("name") or device.get("nvidia_smi_name") or (device.get("before") or {}).get("name")
    if not measured:
        raise KeetError(f"{calib_path}: no GPU name in 'device'")
    hw_name = (hw.get("gpu") or {}).get("name", "")
    if not gpu_names_match(measured, hw_name):
        raise KeetError(f"{calib_path} was measured on {measured!r}, but {hw_path.name} describes {hw_name!r}: refusing")

    driver = device.get("driver") or (device.get("before") or {}).get("driver_version") or "unknown"
    date = calib.get("date_utc", "unknown date")
    ref = (f"microbench suite v{calib.get('suite_version', '?')}, {_display_path(calib_path)}, "
           f"{measured} driver {driver}, {date}")

    # and the parameters the model fits from the raw sweeps (perfmodel.fit)
    params = {**params, **fitted_parameters(calib, parse(text, hw_path))}
    old_params = hw.get("params", {})
    changes, blocks = [], []
    for name, entry in params.items():
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise KeetError(f"{calib_path}: bad parameter name {name!r}")
        text, _ = remove_table(text, f"params.{name}")
        value = _fmt_value(entry["value"], entry.get("unit", ""))
        block = [f"[params.{name}]", f"value = {value}", f"unit = {_q(entry.get('unit', ''))}",
                 'source = "microbenchmark"', f"ref = {_q(ref)}"]
        if entry.get("from"):
            block.append(f"note = {_q(entry['from'])}")
        blocks.append("\n".join(block) + "\n")
        old = old_params.get(name, {}).get("value")
        changes.append({"name": name, "old": old, "new": tomllib.loads(f"v = {value}")["v"], "unit": entry.get("unit", "")})

    text = text.rstrip("\n") + "\n\n" + "\n".join(blocks)
    try:
        tomllib.loads(text)  # never write a file that does not parse
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - guarded by construction
        raise KeetError(f"internal error: the edited {hw_path.name} would not parse: {exc}") from None
    parse(text, hw_path)  # nor one the parameter schema refuses (HardwareFileError: undeclared name, other unit)
    if not dry_run:
        fd, tmp = tempfile.mkstemp(prefix=f".{hw_path.name}.", dir=hw_path.parent)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, hw_path)
    return changes
