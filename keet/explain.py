"""Render diagnoses: terminal text, markdown, and the JSON contract of docs/rules.md (diagnosis v2:
speed of light, recoverable time, verdicts, library kernels, groups of identical launches, NVTX
ranges and caveats)."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from keet.diagnosis import applies, diagnose
from keet.diagnosis.run import summarize
from keet.diagnosis.verdict import CLEAR_MARGIN
from keet.format import dims, json_text, metric_value, si, source_path
from keet.profile import Kernel, Profile
from keet.rules import AMD_RULES
from keet.safe_text import markdown_code, markdown_text, terminal
from keet.summary import device_dict, kernel_summary, kernels_by_duration

_WHITESPACE = re.compile(r"[\t\n\x0b\x0c\r]")


def explain(profile: Profile, kernels: list[Kernel] | None = None, top: int | None = None) -> dict[str, Any]:
    """The explanation document (the JSON contract, docs/rules.md) for the chosen kernels: per
    kernel its findings with their recoverable time, its speed of light, verdict and library;
    above the kernels, the groups of identical launches, the NVTX ranges, the run's caveats and
    where the most time can be won. Kernels rank by recoverable time, then duration."""
    chosen = kernels_by_duration(profile, kernels)
    diagnoses = diagnose(profile, chosen)
    run = summarize(profile, diagnoses)
    group_of = {kid: group.id for group in run.groups for kid in group.launches}
    entries = []
    for diagnosis in diagnoses:
        summary = kernel_summary(profile, diagnosis.kernel)
        findings = diagnosis.finding_dicts()
        entries.append(
            {
                **summary,
                "diagnosis": findings[:top] if top else findings,
                "not_assessed": [n.as_dict() for n in diagnosis.not_assessed],
                **diagnosis.as_dict(),
                "group": group_of.get(diagnosis.kernel.id),
                "nvtx": diagnosis.kernel.attributes.get("nvtx"),
            }
        )
    entries.sort(key=lambda e: (-(e["recoverable_ns"] or 0.0), e["duration_ns"] is None, -(e["duration_ns"] or 0.0), e["id"]))
    return {"source": profile.source, "format": profile.format, "device": device_dict(profile), "kernels": entries, **run.as_dict()}


def to_json(document: dict[str, Any]) -> str:
    """The document as JSON, strings exact; a non-finite number (from a damaged file) is null."""
    return json_text(document, indent=1)


def evidence_text(evidence: dict[str, Any]) -> str:
    unit = evidence["unit"]
    text = f"{evidence['metric']} = {metric_value(evidence['value'], unit)}"
    if "compared_with" in evidence:
        text += f" ({evidence['relation']} {metric_value(evidence['compared_with'], unit)})"
    return text


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


# The text and markdown outputs stop giving kernels their details past this many lines (the
# summary table lists every group, the JSON has everything): a 100-launch PyTorch capture reads
# in a few pages, not a thousand lines.
TEXT_LINES = 280
# Ranges listed in the NVTX section of the text (the JSON has every one).
NVTX_SHOWN = 40


def to_text(document: dict[str, Any], markdown: bool = False, width: int = 100) -> str:
    """Readable in a terminal (or as markdown): the run's caveats, where the most time can be
    won, its NVTX ranges, a summary table of the groups of identical launches, then the groups'
    details by recoverable time, as many as fit TEXT_LINES (always the first). Text lines fit
    ``width`` columns, except source lines (code is not re-flowed).

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
    entries = {entry["id"]: entry for entry in document["kernels"]}
    groups = document.get("groups") or [_lone_group(entry) for entry in document["kernels"]]
    bullet = "- " if markdown else "  "
    for caveat in document.get("caveats", []):
        lines.extend(wrap(f"Note: {caveat['text']}", bullet, "    "))
    if len(groups) > 1:
        lines.extend(_where_to_win(document, wrap, markdown))
        lines.extend(_nvtx_lines(document, groups, name, wrap, markdown, width))
        lines.extend(_summary_table(groups, entries, document.get("total_ns"), markdown, width))
    shown = 0
    for index, group in enumerate(groups):
        block = _group_lines(entries[group["representative"]], group, device, name, prose, wrap, markdown, width)
        if index and len(lines) + len(block) > TEXT_LINES:
            break
        lines.extend(block)
        shown += 1
    if shown < len(groups):
        lines.append("")
        lines.extend(wrap(f"{len(groups) - shown} more kernel group{'s' if len(groups) - shown > 1 else ''} in the table above: "
                          "keet explain --kernel NAME shows one in full, --format json shows every finding.", "" if markdown else "  "))
    # The last pass: whatever a field above let through, no control character is printed.
    return terminal("\n".join(lines) + "\n", newlines=True)


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _lone_group(entry: dict[str, Any]) -> dict[str, Any]:
    """A one-launch group for a document without groups (built by an older keet)."""
    return {"id": entry["id"], "name": entry["name"], "count": 1, "launches": [entry["id"]], "total_ns": entry["duration_ns"] or 0.0,
            "representative": entry["id"], "recoverable_ns": entry.get("recoverable_ns"), "verdict": entry.get("verdict"),
            "speed_of_light": entry.get("speed_of_light"), "nvtx": [entry["nvtx"]] if entry.get("nvtx") else []}


def _group_lines(entry: dict[str, Any], group: dict[str, Any], device: dict[str, Any], name, prose, wrap, markdown: bool,
                 width: int) -> list[str]:
    """One group of identical launches in full: its representative launch's findings."""
    lines: list[str] = []
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
    if group["count"] > 1:
        ids = ", ".join(str(i) for i in group["launches"][:8]) + (", ..." if group["count"] > 8 else "")
        lines.extend(wrap(f"{group['count']} identical launches ({ids}): {si(group['total_ns'], 'ns')} in all; shown: the launch of "
                          "median duration, whose verdict stands for all.", bullet, "    "))
    if group.get("nvtx"):
        lines.extend(wrap("NVTX range: " + "; ".join(group["nvtx"][:3]) + ("; ..." if len(group["nvtx"]) > 3 else ""), bullet, "    "))
    if entry.get("verdict"):
        lines.extend(wrap(f"Verdict: {entry['verdict']['text']}", bullet, "    "))
    sol = entry.get("speed_of_light")
    if sol and (entry.get("verdict") or {}).get("kind") != "not_assessed":  # that verdict says why already
        lines.extend(wrap(f"Speed of light: {_sol_sentence(sol, entry['duration_ns'])}", bullet, "    "))
    library = entry.get("library")
    if library and not entry["diagnosis"]:
        lines.append("" if markdown else "  caller's levers:")
        for lever in library["levers"]:
            lines.extend(wrap(lever, "- ") if markdown else wrap(lever, "    - ", "      "))
    for rank, finding in enumerate(entry["diagnosis"], 1):
        header = f"{rank}. {finding['category']}  ({_recoverable_text(finding, entry['duration_ns'])}impact {finding['impact'] * 100:.0f}%, " \
                 f"confidence {finding['confidence']:.0%})"
        if markdown:
            lines.append(f"\n### {header}\n")
        else:
            lines.append("")
            lines.extend(textwrap.wrap(header, width, initial_indent="  ", subsequent_indent="     "))
        lines.extend(wrap(finding["explanation"], "" if markdown else "     "))
        if finding.get("recoverable_how") and finding.get("recoverable_ns"):
            lines.extend(wrap(f"Recoverable by {finding['recoverable_how']}.", "" if markdown else "     "))
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
    if not entry["diagnosis"] and not entry.get("verdict"):
        lines.extend(wrap("No bottleneck can be named from the evidence this profile holds; the checks listed below could not run."
                          if entry["not_assessed"] else "No bottleneck found: no unit is near its peak and no inefficiency was measured.",
                          bullet, "    "))
    rest = [line for line in not_assessed_lines(entry, device.get("vendor", "nvidia")) if line]
    if markdown and rest:
        lines.append("")
    for line in rest:
        lines.extend(wrap(line, "- " if markdown else "  "))
    return lines


def _recoverable_text(finding: dict[str, Any], duration: float | None) -> str:
    """"recoverable 717 us = 88% of its time, " for a finding's header (empty when not weighed)."""
    found = finding.get("recoverable_ns")
    if found is None:
        return ""
    share = f" = {found / duration:.0%} of its time" if duration else ""
    return f"recoverable {si(found, 'ns')}{share}, "


def _sol_sentence(sol: dict[str, Any], measured: float | None) -> str:
    """The speed-of-light line: "at 91% of its DRAM bandwidth speed of light (attainable ...)"."""
    if sol.get("attainable_ns") is None:
        collect = f" ({sol['collect']})" if sol.get("collect") else ""
        return f"not assessed: {sol.get('not_assessed') or 'the model could not weigh this kernel'}{collect}."
    fraction, attainable, limiter = sol["fraction"], sol["attainable_ns"], sol["limiter"]
    bound = " (a lower bound: the profile lacks some work counts)" if sol.get("lower_bound") else ""
    close = (f"; {sol['next_limiter']} is close behind ({sol['margin']:.2f}x)"
             if sol.get("margin") is not None and sol.get("next_limiter") and sol["margin"] < CLEAR_MARGIN else "")
    clock = f", at the profiled SM clock of {si(sol['clock_hz'], 'Hz')}" if sol.get("clock_hz") else ""
    if fraction >= 1.0:
        return (f"at speed of light: the model's {limiter}-bound time for this work is {si(attainable, 'ns')}{bound}, and the kernel "
                f"takes {si(measured, 'ns')}{clock}{close}.")
    if fraction >= 0.5:
        return f"at {fraction:.0%} of its {limiter} speed of light: attainable {si(attainable, 'ns')}{bound}{clock}{close}."
    return f"{1 / fraction:.1f}x from its attainable {si(attainable, 'ns')}{bound}: limited by {limiter}{clock}{close}."


def _where_to_win(document: dict[str, Any], wrap, markdown: bool) -> list[str]:
    found = document.get("where_to_win") or []
    if not found:
        return []
    lines = ["", "**Where the most time can be won**" if markdown else "Where the most time can be won:", *([""] if markdown else [])]
    for rank, item in enumerate(found, 1):
        share = f" ({item['share_of_run']:.0%} of the run)" if item.get("share_of_run") is not None else ""
        how = f", by {item['how']}" if item.get("how") else ""
        if "fusion" in item:  # a chain of launches, named by its range or its launch ids
            label, launches = _short(item["name"]), f" ({item['count']} launches from [{item['representative']}])"
            text = f"{label}{launches}: {si(item['recoverable_ns'], 'ns')}{share}: fusion{how}"
        else:
            label, launches = _short(item.get("function") or item["name"]), f" x{item['count']}" if item["count"] > 1 else ""
            text = f"[{item['representative']}] {label}{launches}: {si(item['recoverable_ns'], 'ns')}{share}: {item['category'] or 'speed of light'}{how}"
        lines.extend(wrap(text, f"{rank}. " if markdown else f"  {rank}. ", "     "))
    return lines


def _nvtx_lines(document: dict[str, Any], groups: list[dict[str, Any]], name, wrap, markdown: bool, width: int) -> list[str]:
    ranges = document.get("nvtx") or []
    if not ranges:
        return []
    lines = ["", f"NVTX ranges ({len(ranges)}), longest first:" if not markdown else f"**NVTX ranges** ({len(ranges)}), longest first:",
             *([""] if markdown else [])]
    shown_as = {g["id"]: g["representative"] for g in groups}  # the text names a group by its shown launch
    for item in ranges[:NVTX_SHOWN]:
        recoverable = f", {si(item['recoverable_ns'], 'ns')} recoverable" if item.get("recoverable_ns") else ""
        count = len(item["launches"])
        kernels = [str(shown_as.get(g, g)) for g in item["groups"]]
        text = f"{si(item['total_ns'], 'ns')} in {count} launch{'es' if count > 1 else ''}{recoverable} " \
               f"([{', '.join(kernels[:6])}{', ...' if len(kernels) > 6 else ''}])"
        if markdown:
            lines.append(f"- {name(item['range'])}: {markdown_text(text)}")
        else:
            label = terminal(item["range"])
            lines.extend(textwrap.wrap(f"{label}: {text}", width, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False))
    if len(ranges) > NVTX_SHOWN:
        lines.append(f"  ... {len(ranges) - NVTX_SHOWN} more ranges (--format json lists every one)")
    return lines


# Verdict of a kernel the rules found nothing on, in the summary table.
NO_FINDING = "no finding"


def _summary_table(groups: list[dict[str, Any]], entries: dict[int, dict[str, Any]], total: float | None, markdown: bool,
                   width: int) -> list[str]:
    """Groups of identical launches by recoverable time: launches, share of GPU time, the
    verdict's category, the speed of light (attainable / measured) and the recoverable time."""
    rows = []
    for group in groups:
        entry = entries[group["representative"]]
        verdict = group.get("verdict") or entry.get("verdict") or {}
        category = verdict.get("category") or (entry["diagnosis"][0]["category"] if entry["diagnosis"] else NO_FINDING)
        if verdict.get("kind") == "not_assessed":
            category = "not assessed"
        share = f"{group['total_ns'] / total * 100:.1f}%" if total else "n/a"
        sol = (group.get("speed_of_light") or {}).get("fraction")
        sol_text = f"{min(sol, 9.99):.0%}" if sol is not None else "n/a"
        recoverable = si(group["recoverable_ns"], "ns") if group.get("recoverable_ns") is not None else "n/a"
        rows.append((str(group["representative"]), entry.get("function_name") or entry["name"], f"x{group['count']}", share, category,
                     sol_text, recoverable))
    launches = sum(g["count"] for g in groups)
    caption = (f"{launches} launches in {len(groups)} groups of identical ones, by recoverable time"
               if launches != len(groups) else f"{len(groups)} kernels, by recoverable time")
    if markdown:
        cell = lambda text: text.replace("|", "\\|")  # a pipe inside a code span still ends a GFM table cell
        return ["", f"{caption}:", "", "| Kernel | Launches | Share of time | Verdict | Speed of light | Recoverable |",
                "| --- | ---: | ---: | --- | ---: | ---: |",
                *(f"| {cell(f'[{i}] ' + markdown_code(n))} | {c} | {s} | {v} | {sol} | {r} |" for i, n, c, s, v, sol, r in rows), ""]
    heads = ("#", "kernel", "n", "share", "verdict", "SoL", "recoverable")
    sizes = [max(len(h), *(len(str(r[c])) for r in rows)) for c, h in enumerate(heads)]
    # the kernel column takes what the others leave of the width (names are cut, the page below has them whole)
    sizes[1] = max(12, min(sizes[1], width - 2 - sum(sizes) + sizes[1] - 2 * (len(heads) - 1)))

    def row(values: tuple[str, ...]) -> str:
        ident, kernel, count, share, verdict, sol, recoverable = values
        kernel = terminal(kernel)
        kernel = kernel if len(kernel) <= sizes[1] else kernel[: sizes[1] - 3] + "..."
        return (f"  {ident:>{sizes[0]}}  {kernel:<{sizes[1]}}  {count:>{sizes[2]}}  {share:>{sizes[3]}}  {verdict:<{sizes[4]}}  "
                f"{sol:>{sizes[5]}}  {recoverable:>{sizes[6]}}").rstrip()

    return ["", *textwrap.wrap(f"{caption} (details below):", width), row(heads), *(row(r) for r in rows)]


def _one_line(text: str) -> str:
    """Prose for the terminal: whitespace as spaces (textwrap re-flows it), the rest escaped."""
    return terminal(_WHITESPACE.sub(" ", str(text)))


def _evidence_markdown(evidence: dict[str, Any]) -> str:
    """One evidence item in markdown: the metric name as code, the numbers as escaped text."""
    text = evidence_text(evidence)
    metric = str(evidence["metric"])
    return markdown_code(metric) + markdown_text(text[len(metric):]) if text.startswith(metric) else markdown_text(text)
