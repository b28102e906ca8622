"""Render diagnoses: terminal text, markdown, and the JSON contract of docs/rules.md."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from keet.diagnosis import applies, diagnose
from keet.format import dims, json_text, si, source_path
from keet.profile import Kernel, Profile
from keet.rules import AMD_RULES
from keet.safe_text import markdown_code, markdown_text, terminal
from keet.summary import device_dict, kernel_summary, kernels_by_duration

_WHITESPACE = re.compile(r"[\t\n\x0b\x0c\r]")


def explain(profile: Profile, kernels: list[Kernel] | None = None, top: int | None = None) -> dict[str, Any]:
    """The explanation document (the JSON contract) for the chosen kernels, longest first."""
    chosen = kernels_by_duration(profile, kernels)
    entries = []
    for diagnosis in diagnose(profile, chosen):
        summary = kernel_summary(profile, diagnosis.kernel)
        findings = diagnosis.findings[:top] if top else diagnosis.findings
        entries.append(
            {
                **summary,
                "diagnosis": [f.as_dict() for f in findings],
                "not_assessed": [n.as_dict() for n in diagnosis.not_assessed],
            }
        )
    return {"source": profile.source, "format": profile.format, "device": device_dict(profile), "kernels": entries}


def to_json(document: dict[str, Any]) -> str:
    """The document as JSON, strings exact; a non-finite number (from a damaged file) is null."""
    return json_text(document, indent=1)


def evidence_text(evidence: dict[str, Any]) -> str:
    unit = evidence["unit"]
    text = f"{evidence['metric']} = {metric_value(evidence['value'], unit)}"
    if "compared_with" in evidence:
        text += f" ({evidence['relation']} {metric_value(evidence['compared_with'], unit)})"
    return text


def metric_value(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.1f}%"
    if unit in ("byte", "byte/second", "hz"):
        return si(value, {"byte": "B", "byte/second": "B/s", "hz": "Hz"}[unit])
    return f"{value:,.4g} {unit}".rstrip() if abs(value) < 1e4 else f"{value:,.0f} {unit}".rstrip()


def _rocprof_collect(not_assessed: list[dict[str, Any]]) -> list[str]:
    """The rocprof commands that collect what the AMD rules missed (their ``collect`` strings
    are rocprofv3 / rocprof-compute command lines; counters are merged into one)."""
    counters = sorted({c for n in not_assessed if "--pmc" in n["collect"] for c in n["collect"].split("--pmc", 1)[1].split(" -- ")[0].split()})
    lines: list[str] = []
    if not any(n["collect"] for n in not_assessed):
        return lines  # nothing a profiler run would add (e.g. a GPU without a known peak)
    if counters:
        lines.append(
            f"Collect with: rocprofv3 --kernel-trace --pmc {' '.join(counters)} -- ./app (if the GPU cannot count them in one "
            "pass, split them over runs, or over pmc: lines of an input file given with -i)."
        )
    elif any(n["collect"].startswith("rocprofv3") for n in not_assessed):
        lines.append("Collect with: rocprofv3 --kernel-trace -- ./app (launch configuration and resources).")
    lines.append(
        "Or collect everything at once: rocprof-compute profile -n NAME -- ./app, and explain the workload folder "
        "(its sysinfo.csv names the GPU, its CU and XCD counts, which utilizations and ceilings need)."
    )
    return lines


def _amd_lines(entry: dict[str, Any]) -> list[str]:
    """What the AMD rules checked and found clear, what they could not assess, and the rocprof
    commands that collect the rest (instead of the ncu sections of the NVIDIA rules)."""
    categories = sorted({n["category"] for n in entry["not_assessed"]})
    missing = sorted({m for n in entry["not_assessed"] for m in n["missing"]})
    found = {f["category"] for f in entry["diagnosis"]}
    checked = sorted({r.category for r in AMD_RULES if applies(r, "amd")} - set(categories) - found)
    lines = [f"Checked and not limiting: {', '.join(checked)}."] if checked else []
    if entry["not_assessed"]:
        lines += [f"Not assessed (the profile lacks {', '.join(missing)}): {', '.join(categories)}.", *_rocprof_collect(entry["not_assessed"])]
    return lines


def not_assessed_lines(entry: dict[str, Any], vendor: str = "nvidia") -> list[str]:
    if vendor == "amd":
        return _amd_lines(entry)
    if not entry["not_assessed"]:
        return []
    categories = sorted({n["category"] for n in entry["not_assessed"]})
    missing = sorted({m for n in entry["not_assessed"] for m in n["missing"]})
    collect = sorted({option.strip() for n in entry["not_assessed"] for option in n["collect"].split("--") if option.strip()})
    return [
        f"Not assessed (the profile lacks {', '.join(missing)}): {', '.join(categories)}.",
        ("Collect with: ncu " + " ".join(f"--{option}" for option in collect)) if collect else "",
    ]


def to_text(document: dict[str, Any], markdown: bool = False, width: int = 100) -> str:
    """Readable in a terminal (or as markdown): with several kernels a summary table first,
    then kernels longest first, findings by rank. Text lines fit ``width`` columns, except
    source lines (code is not re-flowed).

    Strings from the profile (names, paths, device, source lines, and the rules' prose that
    quotes them) are neutralised (keet.safe_text): one line each, no control sequence reaches
    the terminal, and in markdown names are code spans and prose is escaped. Source paths are
    shown as folder and file name (keet.format.source_path), not as the capturing machine's
    absolute paths.
    """
    device = document["device"]
    lines: list[str] = []
    # name: a profile string shown as such; prose: sentences (which may quote profile strings)
    name, prose = (markdown_code, markdown_text) if markdown else (terminal, _one_line)

    def wrap(text: str, indent: str, following: str | None = None) -> list[str]:
        """Prose as lines: one markdown line (a renderer re-flows it), or text filled to width."""
        if markdown:
            return [indent + prose(text)]
        return textwrap.wrap(prose(text), width, initial_indent=indent, subsequent_indent=indent if following is None else following,
                             break_on_hyphens=False) or [indent.rstrip()]

    head = prose(f"{device['name']} ({device['arch'] or 'unknown arch'}, {device['sm_count'] or '?'} SMs)")
    if markdown:
        lines.append(f"# {name(document['source'])}\n\n{head}\n")
    else:
        lines.extend(textwrap.wrap(f"{name(document['source'])}: {head}", width, subsequent_indent="  ", break_on_hyphens=False))
    if len(document["kernels"]) > 1:
        lines.extend(_summary_table(document["kernels"], markdown, width))
    for entry in document["kernels"]:
        share = f"{entry['share'] * 100:.1f}% of GPU time" if entry["share"] is not None else "share unknown"
        title = f"[{entry['id']}] {name(entry['name'])}"  # no link: this file defines no reference for [0]
        if markdown:
            lines.append(f"\n## {title}\n")
        else:
            lines.append("")
            lines.extend(textwrap.wrap(title, width, subsequent_indent="    ", break_on_hyphens=False))
        bullet = "- " if markdown else "  "
        registers = entry["registers_per_thread"] if entry["registers_per_thread"] is not None else "?"
        shared = entry["shared_bytes_per_block"] if entry["shared_bytes_per_block"] is not None else "?"
        lines.extend(wrap(f"{si(entry['duration_ns'], 'ns')} ({share}); grid {dims(entry['grid'])} x block {dims(entry['block'])}; "
                          f"{registers} registers/thread, {shared} B shared/block", bullet, "    "))
        if not entry["diagnosis"] and entry["not_assessed"]:
            lines.extend(wrap("No bottleneck can be named from the evidence this profile holds; the checks listed below could not run.",
                              bullet, "    "))
        elif not entry["diagnosis"]:
            lines.extend(wrap("No bottleneck found: no unit is near its peak and no inefficiency was measured.", bullet, "    "))
        for rank, finding in enumerate(entry["diagnosis"], 1):
            header = f"{rank}. {finding['category']}  (impact {finding['impact'] * 100:.0f}% of runtime, confidence {finding['confidence']:.0%})"
            if markdown:
                lines.append(f"\n### {header}\n")
            else:
                lines.append("")
                lines.extend(textwrap.wrap(header, width, initial_indent="  ", subsequent_indent="     "))
            lines.extend(wrap(finding["explanation"], "" if markdown else "     "))
            lines.append("" if markdown else "     evidence:")
            for e in finding["evidence"]:
                if markdown:
                    lines.append(f"- {_evidence_markdown(e)}")
                else:
                    lines.extend(textwrap.wrap(terminal(evidence_text(e)), width, initial_indent="       ", subsequent_indent="         "))
            if finding["source_lines"]:
                lines.append("\n**Source lines**\n" if markdown else "     source lines:")
                for s in finding["source_lines"]:
                    code = name(s["text"].strip()) if s["text"] else ""
                    place = name(f"{source_path(s['file'])}:{s['line']}")
                    # one line each, never re-flowed: code broken over lines misreads
                    lines.append(f"{'- ' if markdown else '       '}{place} {code} ({s['share']:.0%} of {prose(s['counter'])})")
            lines.append("\n**What to change**\n" if markdown else "     what to change:")
            for suggestion in finding["suggestions"]:
                lines.extend(wrap(suggestion, "- ") if markdown else wrap(suggestion, "       - ", "         "))
        rest = [line for line in not_assessed_lines(entry, device.get("vendor", "nvidia")) if line]
        if markdown and rest:
            lines.append("")
        for line in rest:
            lines.extend(wrap(line, "- " if markdown else "  "))
    # The last pass: whatever a field above let through, no control character is printed.
    return terminal("\n".join(lines) + "\n", newlines=True)


# Verdict of a kernel the rules found nothing on, in the summary table.
NO_FINDING = "no finding"


def _summary_table(entries: list[dict[str, Any]], markdown: bool, width: int) -> list[str]:
    """Kernels longest first: share of GPU time, the top finding's category and its
    recoverable time. Recoverable time is the model's (diagnosis v2's ``recoverable_ns``);
    until a finding carries it, the column says n/a rather than a guess."""
    rows = []
    for entry in entries:
        top = entry["diagnosis"][0] if entry["diagnosis"] else None
        share = f"{entry['share'] * 100:.1f}%" if entry["share"] is not None else "n/a"
        recoverable = si(top["recoverable_ns"], "ns") if top is not None and top.get("recoverable_ns") is not None else "n/a"
        rows.append((str(entry["id"]), entry["name"], share, top["category"] if top else NO_FINDING, recoverable))
    if markdown:
        cell = lambda text: text.replace("|", "\\|")  # a pipe inside a code span still ends a GFM table cell
        return ["", f"{len(entries)} kernels, longest first:", "", "| Kernel | Share of time | Verdict | Recoverable |",
                "| --- | ---: | --- | ---: |",
                *(f"| {cell(f'[{i}] ' + markdown_code(n))} | {s} | {v} | {r} |" for i, n, s, v, r in rows), ""]
    heads = ("#", "kernel", "share", "verdict", "recoverable")
    sizes = [max(len(h), *(len(str(r[c])) for r in rows)) for c, h in enumerate(heads)]
    # the kernel column takes what the others leave of the width (names are cut, the page below has them whole)
    sizes[1] = max(12, min(sizes[1], width - 2 - sum(sizes) + sizes[1] - 2 * (len(heads) - 1)))

    def row(values: tuple[str, ...]) -> str:
        ident, kernel, share, verdict, recoverable = values
        kernel = terminal(kernel)
        kernel = kernel if len(kernel) <= sizes[1] else kernel[: sizes[1] - 3] + "..."
        return (f"  {ident:>{sizes[0]}}  {kernel:<{sizes[1]}}  {share:>{sizes[2]}}  {verdict:<{sizes[3]}}  "
                f"{recoverable:>{sizes[4]}}").rstrip()

    return ["", f"{len(entries)} kernels, longest first (details below):", row(heads), *(row(r) for r in rows)]


def _one_line(text: str) -> str:
    """Prose for the terminal: whitespace as spaces (textwrap re-flows it), the rest escaped."""
    return terminal(_WHITESPACE.sub(" ", str(text)))


def _evidence_markdown(evidence: dict[str, Any]) -> str:
    """One evidence item in markdown: the metric name as code, the numbers as escaped text."""
    text = evidence_text(evidence)
    metric = str(evidence["metric"])
    return markdown_code(metric) + markdown_text(text[len(metric):]) if text.startswith(metric) else markdown_text(text)
