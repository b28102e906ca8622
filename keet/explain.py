"""Render diagnoses: terminal text, markdown, and the JSON contract of the design brief."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from keet.diagnosis import applies, diagnose
from keet.format import dims, si
from keet.profile import Kernel, Profile
from keet.rules import AMD_RULES
from keet.summary import device_dict, kernel_summary, kernels_by_duration


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
    return json.dumps(document, indent=1)


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
    """Readable in a terminal (or as markdown): kernels longest first, findings by rank."""
    device = document["device"]
    lines = []
    head = f"{device['name']} ({device['arch'] or 'unknown arch'}, {device['sm_count'] or '?'} SMs)"
    lines.append(f"# {document['source']}\n\n{head}\n" if markdown else f"{document['source']}: {head}")
    wrap = (lambda text, indent: [text]) if markdown else (lambda text, indent: textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent))
    for entry in document["kernels"]:
        share = f"{entry['share'] * 100:.1f}% of GPU time" if entry["share"] is not None else "share unknown"
        title = f"[{entry['id']}] {entry['name']}"
        lines.append(f"\n## {title}\n" if markdown else f"\n{title}")
        bullet = "- " if markdown else "  "
        lines.append(
            f"{bullet}{si(entry['duration_ns'], 'ns')} ({share}); grid {dims(entry['grid'])} x block {dims(entry['block'])}; "
            f"{entry['registers_per_thread'] if entry['registers_per_thread'] is not None else '?'} registers/thread, "
            f"{entry['shared_bytes_per_block'] if entry['shared_bytes_per_block'] is not None else '?'} B shared/block"
        )
        if not entry["diagnosis"] and entry["not_assessed"]:
            lines.append(f"{bullet}No bottleneck can be named from the evidence this profile holds; the checks listed below could not run.")
        elif not entry["diagnosis"]:
            lines.append(f"{bullet}No bottleneck found: no unit is near its peak and no inefficiency was measured.")
        for rank, finding in enumerate(entry["diagnosis"], 1):
            header = f"{rank}. {finding['category']}  (impact {finding['impact'] * 100:.0f}% of runtime, confidence {finding['confidence']:.0%})"
            lines.append(f"\n### {header}\n" if markdown else f"\n  {header}")
            lines.extend(wrap(finding["explanation"], "     "))
            lines.append("" if markdown else "     evidence:")
            lines.extend(f"{'- ' if markdown else '       '}{evidence_text(e)}" for e in finding["evidence"])
            if finding["source_lines"]:
                lines.append("\n**Source lines**\n" if markdown else "     source lines:")
                for s in finding["source_lines"]:
                    code = f"`{s['text'].strip()}`" if s["text"] else ""
                    lines.append(f"{'- ' if markdown else '       '}{s['file']}:{s['line']} {code} ({s['share']:.0%} of {s['counter']})")
            lines.append("\n**What to change**\n" if markdown else "     what to change:")
            for suggestion in finding["suggestions"]:
                lines.extend(wrap(suggestion, "- ") if markdown else textwrap.wrap(suggestion, width, initial_indent="       - ", subsequent_indent="         "))
        for line in not_assessed_lines(entry, device.get("vendor", "nvidia")):
            if line:
                lines.extend(wrap(line, "") if markdown else textwrap.wrap(line, width, initial_indent="  ", subsequent_indent="  "))
    return "\n".join(lines) + "\n"
