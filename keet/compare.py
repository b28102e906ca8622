"""`keet compare BASE NEW` and `keet explain A --baseline B`: two profiles (or two folders of
profiles) compared kernel by kernel, as text, markdown, JSON (docs/compare.md) and JUnit XML.

The comparison itself (matching, noise, verdicts, explanations) is keet.analysis.compare; this
module finds the profiles to compare, reads timings files, and renders the result. Every
rendering is made from the one JSON document (:func:`document`), so that the formats cannot
disagree. Strings from the profiles (kernel names, NVTX ranges, metric names and units) are
data: escaped for the terminal, quoted as code in markdown, and stripped of what XML 1.0
cannot hold in the JUnit file.
"""

from __future__ import annotations

import json
import math
import re
import socket
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from keet.analysis.compare import (
    DEFAULT_NOISE,
    DEFAULT_THRESHOLD,
    CompareResult,
    ProfileComparison,
    Timing,
    TimingSource,
    compare_profiles,
    in_range,
)
from keet.errors import KeetError, ProfileError
from keet.format import json_text, si
from keet.profile import Kernel, Profile
from keet.safe_text import markdown_code, markdown_text, terminal

# Kernels in the order a reader wants them: what fails the run first, then what changed.
SHOWN_ORDER = ("regression", "slower", "faster", "unchanged", "untimed")
# The version of the JSON document (docs/compare.md); a change that breaks a reader bumps it.
SCHEMA = "keet-compare/1"
# Kernels the text and markdown outputs name in their "only in" lists (the JSON has them all).
UNMATCHED_SHOWN = 20

Progress = Callable[[str], None] | None


# ---------------------------------------------------------------- inputs


def _is_profile(path: Path) -> bool:
    """Whether keet reads ``path`` as one profile (a file of a known format, or a folder a
    reader recognises, such as a rocprof-compute workload)."""
    from keet.ingest import detect

    try:
        detect(path)
    except ProfileError:
        return False
    return True


def _folder_profiles(folder: Path) -> list[Path]:
    """The profiles directly in a folder, by name: files (and profile folders) keet reads. Other
    files (notes, timings, captures' JSON) are left out; an empty file is an error, since it is
    what a failed capture leaves behind."""
    found = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_file() and entry.stat().st_size == 0:
            raise ProfileError(entry, "is empty (a failed capture?); remove it or give the profiles one by one")
        if (entry.is_file() or entry.is_dir()) and _is_profile(entry):
            found.append(entry)
    if not found:
        raise ProfileError(folder, "holds no profile keet reads (files directly in it; subfolders are not searched)")
    return found


def _name_key(path: Path, folder: Path) -> str:
    """A file's name with its folder's name taken out: h100/h100_part0.ncu-rep.xz and
    h200/h200_part0.ncu-rep.xz both become "{}_part0.ncu-rep.xz"."""
    return path.name.replace(folder.name, "{}") if folder.name else path.name


def pair_files(base: Path, new: Path) -> tuple[list[tuple[Path, Path]], list[Path], list[Path]]:
    """The profiles to compare: the two paths when each is a profile, else the profiles of two
    folders paired by file name (then by file name with each folder's own name taken out).
    Returns the pairs and each folder's profiles without a partner."""
    for path in (base, new):
        if not path.exists():
            raise ProfileError(path, "no such file or folder")
    base_one, new_one = _is_profile(base) or base.is_file(), _is_profile(new) or new.is_file()
    if base_one and new_one:
        return [(base, new)], [], []
    if base_one != new_one:
        one, other = (base, new) if base_one else (new, base)
        raise KeetError(f"{one} is a profile and {other} a folder: give two profiles or two folders of profiles")
    left, right = _folder_profiles(base), _folder_profiles(new)
    pairs: list[tuple[Path, Path]] = []
    for key in (lambda p, folder: p.name, _name_key):
        by_name = {key(p, new): p for p in right}
        for path in list(left):
            partner = by_name.get(key(path, base))
            if partner is not None and partner in right:
                pairs.append((path, partner))
                left.remove(path)
                right.remove(partner)
    if not pairs:
        raise KeetError(f"{base} and {new}: no profile of one folder has the name of a profile of the other "
                        f"(compare two files to compare profiles of different names)")
    return sorted(pairs), left, right


def _comparable(name: str) -> str:
    """CUPTI and Nsight Compute demangle template arguments differently ("<4," vs "<(int)4,"):
    a timed kernel is recognised by its qualified name up to the template arguments (and its
    launch configuration)."""
    return re.split(r"[<(]", name, maxsplit=1)[0].strip()


@dataclass
class _TimedKernel:
    name: str
    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    timing: Timing


class TimingsFile:
    """Repeated CUPTI timings of NVTX-named cases (profiles/corpus/capture_torch.py's
    times_GPU.json): per case, its kernels in launch order, each with the median, minimum and
    maximum of its isolated (cold-L2) runs. A profile's launch gets the timing of the kernel of
    its NVTX range at its position in that range, when the name and launch configuration agree
    (else the first unclaimed kernel of that range that agrees)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            raise ProfileError(self.path, "no such file") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ProfileError(self.path, f"is not a timings file (not JSON: {exc})") from None
        self.cases = self._cases(data)
        self._claimed: dict[int, dict[int, Timing]] = {}

    def _cases(self, data: Any) -> dict[str, list[_TimedKernel]]:
        if not isinstance(data, dict) or not isinstance(data.get("cases"), dict):
            raise ProfileError(self.path, 'is not a timings file (no "cases" object; docs/compare.md gives the layout)')
        runs = data.get("isolated_runs")
        if not isinstance(runs, int) or runs < 1:
            raise ProfileError(self.path, 'is not a timings file ("isolated_runs" is not a positive count)')
        cases: dict[str, list[_TimedKernel]] = {}
        for case, entry in data["cases"].items():
            kernels = entry.get("kernels") if isinstance(entry, dict) else None
            if kernels is None and isinstance(entry, dict) and "error" in entry:
                kernels = []  # a case the capture could not time ("no kernel launched"): nothing to look up
            if not isinstance(kernels, list):
                raise ProfileError(self.path, f'case {case!r} has no "kernels" list')
            timed = []
            for kernel in kernels:
                try:
                    values = [float(kernel[k]) for k in ("isolated_ns", "isolated_min_ns", "isolated_max_ns")]
                    name = str(kernel["name"])
                except (KeyError, TypeError, ValueError):
                    raise ProfileError(self.path, f"case {case!r}: a kernel lacks its name or isolated_ns/_min_ns/_max_ns") from None
                if not all(math.isfinite(v) and v > 0 for v in values):
                    raise ProfileError(self.path, f"case {case!r}: a kernel's times are not positive numbers")
                timed.append(_TimedKernel(name, _dims(kernel.get("grid")), _dims(kernel.get("block")),
                                          Timing(values[0], values[1], values[2], runs, "timings")))
            cases[str(case)] = timed
        return cases

    def _assign(self, profile: Profile) -> dict[int, Timing]:
        """Every launch of ``profile`` that a case of this file times, by kernel id."""
        found: dict[int, Timing] = {}
        by_case: dict[str, list[Kernel]] = {}
        for kernel in profile.kernels:
            nvtx = kernel.attributes.get("nvtx")
            case = next((c for c in self.cases if in_range(nvtx, c)), None) if nvtx else None
            if case is not None:
                by_case.setdefault(case, []).append(kernel)
        for case, launches in by_case.items():
            timed = list(self.cases[case])
            unclaimed = list(range(len(timed)))
            for position, kernel in enumerate(launches):
                agrees = [i for i in unclaimed if self._agrees(timed[i], kernel)]
                if not agrees:
                    continue
                index = position if position in agrees else agrees[0]
                found[kernel.id] = timed[index].timing
                unclaimed.remove(index)
        return found

    @staticmethod
    def _agrees(timed: _TimedKernel, kernel: Kernel) -> bool:
        same_launch = (timed.grid is None or timed.grid == kernel.grid) and (timed.block is None or timed.block == kernel.block)
        return same_launch and _comparable(timed.name) == _comparable(kernel.name)

    def __call__(self, profile: Profile, kernel: Kernel) -> Timing | None:
        if id(profile) not in self._claimed:
            self._claimed[id(profile)] = self._assign(profile)
        return self._claimed[id(profile)].get(kernel.id)


def _dims(value: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(v) for v in value) if value else None
    except (TypeError, ValueError):
        return None


def parse_ranges(values: tuple[str, ...] | list[str]) -> dict[str, str] | None:
    """--range RANGE or --range BASE_RANGE=NEW_RANGE (repeatable) as {baseline name: new name}."""
    if not values:
        return None
    ranges: dict[str, str] = {}
    for value in values:
        before, sep, after = value.partition("=")
        before, after = before.strip(), (after.strip() if sep else before.strip())
        if not before or not after:
            raise KeetError(f"--range {value!r}: give RANGE or BASE_RANGE=NEW_RANGE")
        ranges[before] = after
    return ranges


def check_ranges(profile: Profile, names: list[str]) -> None:
    """A --range that no launch ran in is a typo, not an empty comparison."""
    stacks = {k.attributes.get("nvtx") for k in profile.kernels} - {None}
    for name in names:
        if not stacks:
            raise ProfileError(profile.source, f"records no NVTX range, so none is {name!r} (profile with ncu --nvtx)")
        if not any(in_range(stack, name) for stack in stacks):
            raise ProfileError(profile.source, f"no launch ran in NVTX range {name!r}")


def compare_paths(base: str | Path, new: str | Path, *, threshold: float = DEFAULT_THRESHOLD, noise: float = DEFAULT_NOISE,
                  ranges: dict[str, str] | None = None, base_timings: str | Path | None = None,
                  new_timings: str | Path | None = None, top: int | None = None, progress: Progress = None) -> CompareResult:
    """Read and compare: every pair of profiles (two files, or two folders' files paired by
    name). Every input is read before anything is compared, so a bad one stops the command
    before any output."""
    from keet.diagnosis import read_ahead
    from keet.ingest import load_profile

    tell = progress or (lambda message: None)
    pairs, only_base, only_new = pair_files(Path(base), Path(new))
    timings: list[TimingSource | None] = [TimingsFile(t) if t else None for t in (base_timings, new_timings)]
    loaded = []
    for number, (a, b) in enumerate(pairs, 1):
        tell(f"reading profile pair {number}/{len(pairs)}: {a.name}")
        left, right = (load_profile(path, read_ahead=read_ahead()) for path in (a, b))
        if ranges is not None:
            check_ranges(left, list(ranges))
            check_ranges(right, list(ranges.values()))
        loaded.append((left, right))
    compared = []
    for number, (left, right) in enumerate(loaded, 1):
        tell(f"comparing {number}/{len(loaded)}: {Path(left.source).name}")
        compared.append(compare_profiles(left, right, threshold=threshold, default_noise=noise, ranges=ranges,
                                         base_timings=timings[0], new_timings=timings[1], top=top, progress=tell))
    return CompareResult(str(base), str(new), threshold, noise, compared, [str(p) for p in only_base], [str(p) for p in only_new])


def compare_loaded(base: Profile, new: Profile, kernels: list[Kernel] | None = None, top: int | None = None,
                   threshold: float = DEFAULT_THRESHOLD, noise: float = DEFAULT_NOISE, progress: Progress = None) -> CompareResult:
    """`keet explain NEW --baseline BASE [--kernel K]`: the comparison of two loaded profiles,
    reporting only ``kernels`` of the new one when given."""
    compared = compare_profiles(base, new, threshold=threshold, default_noise=noise, new_kernels=kernels, top=top,
                                progress=progress)
    return CompareResult(str(base.source), str(new.source), threshold, noise, [compared])


# ---------------------------------------------------------------- the JSON document


def _device(profile: Profile) -> dict[str, Any]:
    from perfmodel.hardware import gpu_id_for_device_name

    return {"name": profile.device.name, "gpu": gpu_id_for_device_name(profile.device.name)}


def _profile_document(p: ProfileComparison) -> dict[str, Any]:
    order = {status: n for n, status in enumerate(SHOWN_ORDER)}
    kernels = sorted(p.kernels, key=lambda c: (order[c.status], -abs(c.change or 0.0)))
    return {"base": {"source": p.base.source, "device": _device(p.base)}, "new": {"source": p.new.source, "device": _device(p.new)},
            "counts": p.counts(), "kernels": [c.as_dict() for c in kernels],
            "ranges": [r.as_dict() for r in sorted(p.ranges, key=lambda r: (order[r.status], -abs(r.change or 0.0)))],
            "only_base": [g.as_dict() for g in p.only_base], "only_new": [g.as_dict() for g in p.only_new]}


def document(result: CompareResult) -> dict[str, Any]:
    """The comparison as the JSON contract of docs/compare.md."""
    return {"schema": SCHEMA, "base": result.base, "new": result.new, "threshold": result.threshold,
            "default_noise": result.default_noise, "exit_status": result.exit_status, "counts": result.counts(),
            "profiles": [_profile_document(p) for p in result.profiles],
            "only_base_files": result.only_base_files, "only_new_files": result.only_new_files}


def to_json(result: CompareResult) -> str:
    return json_text(document(result), indent=1)


# ---------------------------------------------------------------- text and markdown


def _pct(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def _label(entry: dict[str, Any]) -> str:
    """How a kernel is named in a table row: its function name, and its NVTX range where it has one."""
    new = entry["new"]
    name = new["function"] or new["name"]
    return f"{name} [{new['nvtx']}]" if new["nvtx"] else name


def _launch(side: dict[str, Any]) -> str:
    grid = "x".join(map(str, side["grid"])) if side["grid"] else "?"
    block = "x".join(map(str, side["block"])) if side["block"] else "?"
    return f"grid {grid}, block {block}"


def _noise_words(noise: dict[str, Any]) -> str:
    """The noise band and where each side's came from: "3 launches", "10 timed runs", "one measurement"."""
    def one(n: dict[str, Any]) -> str:
        return {"launches": f"{n['count']} launches", "timings": f"{n['count']} timed runs",
                "mixed": "launches and timed runs"}.get(n["from"], "one measurement")

    return f"noise {_pct(noise['value'], signed=False)} (base: {one(noise['base'])}, new: {one(noise['new'])})"


def _verdict_line(doc: dict[str, Any]) -> str:
    regressions = doc["counts"].get("regression", 0) + doc["counts"].get("range_regressions", 0)
    if regressions:
        return (f"{regressions} regression{'s' if regressions != 1 else ''} beyond the {_pct(doc['threshold'], False)} "
                f"threshold and the noise: exit status 1.")
    return f"No regression beyond the {_pct(doc['threshold'], False)} threshold and the noise: exit status 0."


def _counts_line(counts: dict[str, int]) -> str:
    parts = [f"{counts[s]} {s}{'s' if s == 'regression' and counts[s] != 1 else ''}"
             for s in ("regression", "slower", "faster", "unchanged", "untimed") if counts.get(s)]
    matched = counts.get("kernels", 0)
    line = f"{matched} kernel{'s' if matched != 1 else ''} matched" + (f": {', '.join(parts)}" if parts else "")
    extra = [f"{counts[k]} only in {w}" for k, w in (("only_base", "BASE"), ("only_new", "NEW")) if counts.get(k)]
    if counts.get("ranges"):
        extra.append(f"{counts['ranges']} NVTX range{'s' if counts['ranges'] != 1 else ''} compared by total time")
    return line + (f"; {', '.join(extra)}" if extra else "") + "."


def to_text(result: CompareResult, markdown: bool = False, width: int = 100) -> str:
    """The comparison for a terminal (``width`` columns) or as markdown: per pair of profiles, a
    table of every matched kernel (regressions first), each changed kernel's explanation, the
    NVTX ranges compared by total time, the kernels without a partner, and the verdict."""
    doc = document(result)
    out: list[str] = []
    name = markdown_code if markdown else terminal
    prose = markdown_text if markdown else terminal

    def wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
        if markdown:
            return [f"{first if first is not None else indent}{text}"]
        return textwrap.wrap(text, width, initial_indent=first if first is not None else indent, subsequent_indent=indent,
                             break_on_hyphens=False) or [""]

    title = f"keet compare: {result.base} -> {result.new}"
    out += [f"# {prose(title)}", ""] if markdown else [*wrap(terminal(title)), ""]
    out += wrap(f"Threshold {_pct(result.threshold, False)} (a kernel slower than this beyond the noise is a regression); "
                f"noise: the spread of repeated measurements, else {_pct(result.default_noise, False)}.")
    if len(doc["profiles"]) != 1:  # one pair: its own section says it
        out += wrap(f"{len(doc['profiles'])} pairs of profiles; " + _counts_line(doc["counts"]))
    for files, side in ((doc["only_base_files"], "BASE"), (doc["only_new_files"], "NEW")):
        if files:
            out += wrap(f"Profiles only in {side} (not compared): " + ", ".join(prose(Path(f).name) for f in files) + ".")
    for profile in doc["profiles"]:
        out += [""] + _profile_lines(profile, doc, markdown, width, name, prose, wrap)
    out += ["", *wrap(_verdict_line(doc))]
    return "\n".join(out) + "\n"


def _profile_lines(profile: dict[str, Any], doc: dict[str, Any], markdown: bool, width: int, name, prose, wrap) -> list[str]:
    base, new = profile["base"], profile["new"]
    heading = f"{base['source']} ({base['device']['name']}) -> {new['source']} ({new['device']['name']})"
    lines = [f"## {prose(heading)}", ""] if markdown else [*wrap(terminal(heading)), "-" * min(width, len(terminal(heading)))]
    lines += wrap(_counts_line(profile["counts"]))
    if profile["kernels"]:
        lines += [""] + _table(profile["kernels"], markdown, width, name)
    changed = [k for k in profile["kernels"] if k["explanation"]]
    if changed:
        lines += ["", "### What changed" if markdown else "What changed:"]
        for entry in changed:
            lines.append("")
            head = f"{entry['status']} {_pct(entry['change'])}: "
            if markdown:
                lines.append(f"**{head.strip()}** {name(entry['new']['name'])}")
            else:
                lines += wrap(terminal(entry["new"]["name"]), indent="    ", first=head)
            facts = [f"{_launch(entry['base'])} -> {_launch(entry['new'])}" if "launch configuration" in entry["differs"]
                     else _launch(entry["new"]), _noise_words(entry["noise"])]
            if entry["matched_by"] != "name" or entry["differs"]:
                facts.append(_matched_words(entry))
            for sentence in ["; ".join(facts) + ".", *entry["explanation"]]:
                lines += wrap(prose(sentence), indent="  ", first="- ") if markdown else wrap(terminal(sentence), indent="    ", first="  - ")
    if profile["ranges"]:
        lines += ["", "### NVTX ranges compared by total time" if markdown else "NVTX ranges whose launches do not pair one to one "
                  "(compared by total time):", ""]
        lines += _range_table(profile["ranges"], markdown, width, name)
    for key, where in (("only_base", "BASE"), ("only_new", "NEW")):
        groups = profile[key]
        if groups:
            # full names: a function name alone repeats (three elementwise kernels of one operation)
            shown = ", ".join(name(g["name"] + (f" [{g['nvtx']}]" if g["nvtx"] else "")) for g in groups[:UNMATCHED_SHOWN])
            more = f" and {len(groups) - UNMATCHED_SHOWN} more" if len(groups) > UNMATCHED_SHOWN else ""
            lines += ["", *wrap(f"Only in {where} ({len(groups)}, not compared): {shown}{more}.")]
    return lines


def _matched_words(entry: dict[str, Any]) -> str:
    how = {"name": "matched by name", "function": "matched by function name",
           "alone": "matched as the only kernel left on each side"}[entry["matched_by"]]
    return how + (f" ({', '.join(entry['differs'])} differ{'s' if len(entry['differs']) == 1 else ''})" if entry["differs"] else "")


def _cell(text: str) -> str:
    """A GFM table cell: a pipe ends the cell even inside a code span, unless escaped."""
    return text.replace("|", "\\|")


def _table(kernels: list[dict[str, Any]], markdown: bool, width: int, name) -> list[str]:
    rows = [(k["status"], _pct(k["change"]), si(k["base"]["time_ns"], "ns"), si(k["new"]["time_ns"], "ns"),
             _pct(k["noise"]["value"], signed=False), _label(k)) for k in kernels]
    return _columns(("status", "change", "base", "new", "noise", "kernel"), rows, markdown, width, name)


def _range_table(ranges: list[dict[str, Any]], markdown: bool, width: int, name) -> list[str]:
    rows = [(r["status"], _pct(r["change"]), si(r["base_ns"], "ns"), si(r["new_ns"], "ns"),
             f"{r['base_launches']} -> {r['new_launches']}",
             r["name"] if r["name"] == r["base_name"] else f"{r['base_name']} -> {r['name']}") for r in ranges]
    return _columns(("status", "change", "base", "new", "launches", "range"), rows, markdown, width, name)


def _columns(header: tuple[str, ...], rows: list[tuple[str, ...]], markdown: bool, width: int, name) -> list[str]:
    """Five value columns (a status, then four right-aligned figures) and a name: a markdown table,
    or aligned text whose name column is cut to what is left of `width`."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|---|---:|---:|---:|---:|---|"]
        return lines + ["| " + " | ".join([*row[:5], _cell(name(row[5]))]) + " |" for row in rows]
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(5)]
    room = max(12, width - sum(widths) - 2 * 5)
    lines = ["  ".join([header[0].ljust(widths[0]), *(h.rjust(w) for h, w in zip(header[1:5], widths[1:])), header[5]])]
    for row in rows:
        label = terminal(row[5])
        label = label if len(label) <= room else label[: room - 3] + "..."
        lines.append("  ".join([row[0].ljust(widths[0]), *(v.rjust(w) for v, w in zip(row[1:5], widths[1:])), label]))
    return lines


# ---------------------------------------------------------------- JUnit XML

# Characters XML 1.0 cannot hold even escaped (C0 controls but tab, newline and carriage return;
# lone surrogates; U+FFFE, U+FFFF): a kernel name holding one would make the file unreadable to
# every CI server. terminal() already shows the C0/C1 controls as visible escapes.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: object, newlines: bool = False) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", terminal(text, newlines=newlines))


def _seconds(ns: float | None) -> str:
    """A time in seconds as both schemas take it: decimal, never an exponent."""
    return f"{(ns or 0.0) / 1e9:.9f}"


def _class_name(source: str) -> str:
    stem = Path(source).name.split(".")[0] or "profile"
    return "keet.compare." + re.sub(r"[^A-Za-z0-9_-]", "_", stem)


def _case_name(entry: dict[str, Any]) -> str:
    side = entry["new"]
    return f"{side['name']} ({_launch(side)})" + (f" [{side['nvtx']}]" if side["nvtx"] else "")


def _suite(suites: ET.Element, number: int, name: str, profile: dict[str, Any], doc: dict[str, Any], timestamp: str,
           host: str) -> ET.Element:
    """A <testsuite> with what both common schemas require (Ant's JUnit.xsd: package, id,
    timestamp, hostname, properties, system-out and system-err in this order; Jenkins'
    junit-10.xsd: a subset of its attributes), its counts filled in by the caller."""
    suite = ET.SubElement(suites, "testsuite", {"name": _xml(name), "package": "keet.compare", "id": str(number),
                                                "timestamp": timestamp, "hostname": host})
    properties = ET.SubElement(suite, "properties")
    for key, value in (("base", profile["base"]["source"]), ("new", profile["new"]["source"]),
                       ("base_device", profile["base"]["device"]["name"]), ("new_device", profile["new"]["device"]["name"]),
                       ("threshold", f"{doc['threshold']:g}"), ("default_noise", f"{doc['default_noise']:g}")):
        ET.SubElement(properties, "property", {"name": key, "value": _xml(value)})
    return suite


def _close_suite(suite: ET.Element, cases: list[ET.Element], summary: str) -> None:
    failures = sum(c.find("failure") is not None for c in cases)
    skipped = sum(c.find("skipped") is not None for c in cases)
    total = sum(float(c.get("time", "0")) for c in cases)
    suite.attrib.update({"tests": str(len(cases)), "failures": str(failures), "errors": "0", "skipped": str(skipped),
                         "time": f"{total:.9f}"})
    ET.SubElement(suite, "system-out").text = _xml(summary, newlines=True)
    ET.SubElement(suite, "system-err").text = ""


def _kernel_case(suite: ET.Element, classname: str, entry: dict[str, Any], doc: dict[str, Any]) -> ET.Element:
    case = ET.SubElement(suite, "testcase", {"name": _xml(_case_name(entry)), "classname": classname,
                                            "time": _seconds(entry["new"]["time_ns"])})
    change = f"{_pct(entry['change'])} ({si(entry['base']['time_ns'], 'ns')} -> {si(entry['new']['time_ns'], 'ns')})"
    if entry["status"] == "regression":
        message = f"{change}: slower beyond the {_pct(doc['threshold'], False)} threshold; {_noise_words(entry['noise'])}"
        body = "\n".join([message, *entry["explanation"]])
        ET.SubElement(case, "failure", {"type": "regression", "message": _xml(message)}).text = _xml(body, newlines=True)
    elif entry["status"] == "untimed":
        ET.SubElement(case, "skipped", {"message": "a side has no duration to compare"})
    return case


def to_junit(result: CompareResult, timestamp: datetime | None = None) -> str:
    """JUnit XML: per pair of profiles one test suite of its kernels (one test case per matched
    kernel, a <failure> for each regression, a <skipped> for each kernel without a partner or a
    duration) and, where NVTX ranges were compared by total time, one suite of them. Valid
    against both schemas CI servers use: Ant's JUnit.xsd and Jenkins' junit-10.xsd
    (tests/test_compare.py checks each rule)."""
    doc = document(result)
    stamp = (timestamp or datetime.now()).strftime("%Y-%m-%dT%H:%M:%S")  # Ant's schema: no time zone
    try:
        host = socket.gethostname() or "localhost"
    except OSError:
        host = "localhost"
    suites = ET.Element("testsuites")
    number = 0
    for profile in doc["profiles"]:
        classname = _class_name(profile["new"]["source"])
        label = f"{Path(profile['base']['source']).name} -> {Path(profile['new']['source']).name}"
        suite = _suite(suites, number, f"keet compare: kernels of {label}", profile, doc, stamp, host)
        cases = [_kernel_case(suite, classname, entry, doc) for entry in profile["kernels"]]
        for key, where in (("only_base", "BASE"), ("only_new", "NEW")):
            for group in profile[key]:
                case = ET.SubElement(suite, "testcase", {"name": _xml(_case_name({"new": group})), "classname": classname,
                                                         "time": _seconds(group["time_ns"])})
                ET.SubElement(case, "skipped", {"message": f"only in {where}: no kernel of the other profile matches"})
                cases.append(case)
        _close_suite(suite, cases, _counts_line(profile["counts"]))
        number += 1
        if profile["ranges"]:
            suite = _suite(suites, number, f"keet compare: NVTX ranges of {label}", profile, doc, stamp, host)
            cases = []
            for entry in profile["ranges"]:
                case = ET.SubElement(suite, "testcase", {"name": _xml(entry["name"]), "classname": classname + ".ranges",
                                                         "time": _seconds(entry["new_ns"])})
                if entry["status"] == "regression":
                    message = (f"{_pct(entry['change'])} ({si(entry['base_ns'], 'ns')} -> {si(entry['new_ns'], 'ns')}): the "
                               f"range's launches are slower beyond the {_pct(doc['threshold'], False)} threshold")
                    ET.SubElement(case, "failure", {"type": "regression", "message": _xml(message)}).text = _xml(message)
                elif entry["status"] == "untimed":
                    ET.SubElement(case, "skipped", {"message": "a side has no duration to compare"})
                cases.append(case)
            _close_suite(suite, cases, f"{len(cases)} NVTX ranges compared by the total time of their launches.")
            number += 1
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# ---------------------------------------------------------------- the command's output


def render(result: CompareResult, fmt: str, width: int = 100) -> str:
    """The comparison in one of the formats `keet compare --format` takes."""
    if fmt == "json":
        return to_json(result) + "\n"
    return to_text(result, markdown=fmt == "markdown", width=width)


def summary_line(result: CompareResult) -> str:
    """One line for the terminal when the output went to a file."""
    return _counts_line(result.counts()).rstrip(".") + "; " + _verdict_line(document(result))
