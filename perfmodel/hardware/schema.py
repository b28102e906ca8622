"""The declared parameter schema of the hardware files (perfmodel/hardware/parameters.toml).

Every [params.NAME] of a GPU or ISA file must be declared there, with the file's unit and an
allowed source: ``check_param`` refuses anything else with a HardwareFileError (a KeetError:
one line on stderr, exit status 2) that names the file and the parameter. Every name the code
asks GPU.value/require or ISA.value/require for must be declared too: ``check_name`` raises
UnknownParameter (a KeyError: a programming error, a typo in the code) for one that is not,
where a typo used to read as "absent" and silently drop a limit from the model.

The schema is parsed once (functools.cache). ``parameter_table`` renders it as the markdown
table of docs/model.md's "Parameters" section (``python -m perfmodel.hardware --write-docs``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from keet.errors import KeetError

SCHEMA_PATH = Path(__file__).with_name("parameters.toml")
# hardware folders hold GPU files <id>.toml; the schema's own name is not a GPU id
SCHEMA_FILE_NAME = SCHEMA_PATH.name
DOCS_BEGIN = "<!-- parameters:begin -->"
DOCS_END = "<!-- parameters:end -->"
DECLARATION_KEYS = {"unit", "sources", "description", "used_by"}


class HardwareFileError(KeetError):
    """A hardware file (or the schema itself) states a parameter the schema does not allow."""

    def __init__(self, path: str | Path, name: str, problem: str) -> None:
        self.path, self.name, self.problem = str(path), name, problem
        super().__init__(f"{self.path}: parameter {name!r}: {problem}")


class UnknownParameter(KeyError):
    """Code looked up a parameter name that parameters.toml does not declare."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)

    def __str__(self) -> str:
        return (f"{self.name!r} is not a declared hardware parameter{_did_you_mean(self.name)}: "
                f"declare it in {SCHEMA_PATH} (one [params.{self.name}] table) or fix the name")


@dataclass(frozen=True)
class Declaration:
    name: str
    unit: str | tuple[str, ...] | dict[str, tuple[str, ...]]  # as written: one, spellings, or by vendor
    sources: tuple[str, ...]
    description: str
    used_by: tuple[str, ...]

    def units_for(self, vendor: str) -> tuple[str, ...]:
        """The unit spellings a file of ``vendor`` may write (none: that vendor may not set it)."""
        if isinstance(self.unit, dict):
            return self.unit.get(vendor, ())
        return (self.unit,) if isinstance(self.unit, str) else self.unit

    def unit_text(self) -> str:
        def one(units: str | tuple[str, ...]) -> str:
            return units if isinstance(units, str) else " or ".join(units)

        if isinstance(self.unit, dict):
            if len(self.unit) == 1:
                (vendor, units), = self.unit.items()
                return f"{one(units)} ({vendor} only)"
            return ", ".join(f"{one(units)} ({vendor})" for vendor, units in self.unit.items())
        return one(self.unit)


@dataclass(frozen=True)
class Schema:
    sources: dict[str, str]  # provenance kind -> what it means
    params: dict[str, Declaration]
    names: frozenset[str]


@cache
def schema() -> Schema:
    """parameters.toml, parsed and checked once per process."""
    data = tomllib.loads(SCHEMA_PATH.read_text())
    sources = data.get("sources", {})
    if not sources or not all(isinstance(v, str) for v in sources.values()):
        raise HardwareFileError(SCHEMA_PATH, "sources", "[sources] must map each provenance kind to its meaning")
    params = {name: _declaration(name, entry, sources) for name, entry in data.get("params", {}).items()}
    return Schema(dict(sources), params, frozenset(params))


def _declaration(name: str, entry: object, sources: dict[str, str]) -> Declaration:
    def bad(problem: str) -> HardwareFileError:
        return HardwareFileError(SCHEMA_PATH, name, problem)

    if not isinstance(entry, dict) or set(entry) != DECLARATION_KEYS:
        raise bad(f"a declaration has exactly the keys {', '.join(sorted(DECLARATION_KEYS))}")

    def spellings(unit: object) -> str | tuple[str, ...]:
        if isinstance(unit, str) and unit:
            return unit
        if isinstance(unit, list) and unit and all(isinstance(u, str) and u for u in unit):
            return tuple(unit)
        raise bad(f"unit must be a string, a list of strings or a table of them by vendor, not {unit!r}")

    raw = entry["unit"]
    unit = {vendor: spellings(units) for vendor, units in raw.items()} if isinstance(raw, dict) and raw else spellings(raw)
    if isinstance(unit, dict):
        unit = {vendor: (units,) if isinstance(units, str) else units for vendor, units in unit.items()}
    allowed = entry["sources"]
    if not (isinstance(allowed, list) and allowed and set(allowed) <= set(sources)):
        raise bad(f"sources must be a non-empty list of the [sources] kinds ({', '.join(sources)}), not {allowed!r}")
    if not (isinstance(entry["description"], str) and entry["description"].strip()):
        raise bad("description must be one line of text")
    used_by = entry["used_by"]
    if not (isinstance(used_by, list) and all(isinstance(u, str) and u.strip() for u in used_by)):
        raise bad("used_by must be a list of 'module: what for' strings")
    return Declaration(name, unit, tuple(allowed), entry["description"].strip(), tuple(used_by))


def declared_names() -> frozenset[str]:
    return schema().names


def check_name(name: str) -> None:
    """Raise UnknownParameter unless ``name`` is declared."""
    if name not in schema().names:
        raise UnknownParameter(name)


def check_param(path: str | Path, vendor: str, name: str, entry: object) -> None:
    """Raise HardwareFileError unless the [params.NAME] table ``entry`` of a ``vendor`` file at
    ``path`` is declared, has the declared unit and an allowed source, a number and a ref."""
    declaration = schema().params.get(name)
    if declaration is None:
        raise HardwareFileError(path, name, f"not a declared parameter{_did_you_mean(name)}; fix the name or declare it in {SCHEMA_PATH}")
    if not isinstance(entry, dict):
        raise HardwareFileError(path, name, "not a table: write it as [params.NAME] with value, unit, source and ref")
    units = declaration.units_for(vendor)
    if not units:
        raise HardwareFileError(path, name, f"declared for {declaration.unit_text()} files, not for a file of vendor {vendor!r}")
    unit = entry.get("unit")
    if unit not in units:
        raise HardwareFileError(path, name, f"unit {unit!r} differs from the schema's {' or '.join(map(repr, units))}")
    source = entry.get("source")
    if source not in declaration.sources:
        raise HardwareFileError(path, name, f"source {source!r} is not one the schema allows for it "
                                            f"({', '.join(declaration.sources)})")
    value = entry.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise HardwareFileError(path, name, f"value must be a number, not {value!r}")
    if not isinstance(entry.get("ref"), str):
        raise HardwareFileError(path, name, "has no ref (where the number comes from)")


def _did_you_mean(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(schema().names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ------------------------------------------------------------------ the docs table


def files_setting(hardware_dir: Path = SCHEMA_PATH.parent) -> dict[str, list[str]]:
    """Parameter name -> the built-in files that set it: GPU ids, then isa/<arch>."""
    found: dict[str, list[str]] = {}
    gpu_files = sorted(p for p in hardware_dir.glob("*.toml") if p.name != SCHEMA_FILE_NAME)
    for prefix, paths in (("", gpu_files), ("isa/", sorted((hardware_dir / "isa").glob("*.toml")))):
        for path in paths:
            for name in tomllib.loads(path.read_text()).get("params", {}):
                found.setdefault(name, []).append(prefix + path.stem)
    return found


def parameter_table(hardware_dir: Path = SCHEMA_PATH.parent) -> str:
    """The schema as a markdown table: one row per parameter, in the order of parameters.toml."""
    gpus = sorted(p.stem for p in hardware_dir.glob("*.toml") if p.name != SCHEMA_FILE_NAME)
    setting = files_setting(hardware_dir)

    def cell(text: str) -> str:
        return text.replace("|", "\\|") or "—"

    def set_by(name: str) -> str:
        files = setting.get(name, [])
        own = [f for f in files if not f.startswith("isa/")]
        isas = [f.removeprefix("isa/") for f in files if f.startswith("isa/")]
        parts = (["every GPU"] if own == gpus else [", ".join(own)] if own else []) + ([f"isa: {', '.join(isas)}"] if isas else [])
        return "; ".join(parts) or "no built-in file"

    lines = ["| name | unit | sources | used by | description | set by |", "|---|---|---|---|---|---|"]
    for declaration in schema().params.values():
        lines.append("| " + " | ".join(cell(text) for text in (
            f"`{declaration.name}`", declaration.unit_text(), ", ".join(declaration.sources), "; ".join(declaration.used_by),
            declaration.description, set_by(declaration.name))) + " |")
    return "\n".join(lines)


def documented_table(text: str) -> str | None:
    """The table between the markers of a docs text, or None without both markers."""
    if DOCS_BEGIN not in text or DOCS_END not in text:
        return None
    return text.split(DOCS_BEGIN, 1)[1].split(DOCS_END, 1)[0].strip()


def with_table(text: str, table: str) -> str:
    """``text`` with ``table`` between its markers (everything else byte for byte)."""
    before, rest = text.split(DOCS_BEGIN, 1)
    after = rest.split(DOCS_END, 1)[1]
    return f"{before}{DOCS_BEGIN}\n{table}\n{DOCS_END}{after}"
