"""Does a written report show every section its profiles can fill?

What a kernel *should* show is decided from the profile alone (which metrics and counters it
holds), independently of how keet/report/sections.py gates its sections; what it *does* show
is read back from the HTML (each section's data-kernel, data-section and data-state). CI
runs this over every report it generates (python -m keet.report.batch).
"""

from __future__ import annotations

from html.parser import HTMLParser

from keet.profile import Kernel, Profile
from keet.report.assemble import SECTIONS

ALWAYS = ("summary", "diagnosis", "prediction")


def expected_sections(profile: Profile, kernel: Kernel) -> set[str]:
    """The sections a kernel's report must show with content, from what its profile holds."""
    values = profile.values(kernel)
    has = lambda *names: any(values.get(n, (0.0,))[0] for n in names)
    expected = set(ALWAYS)
    flops = has("flop.fp32", "flop.fp64", "flop.fp16") or any(
        op.startswith(("HMMA", "HGMMA", "IMMA", "DMMA", "MFMA")) for op in kernel.attributes.get("inst_executed_per_opcode", {}))
    if flops and kernel.duration_ns and has("dram.bytes", "l2.sectors", "global.load_sectors", "shared.wavefronts"):
        expected.add("roofline")
    if has("dram.bytes", "l2.sectors", "global.load_sectors", "global.store_sectors", "l2.hit_rate_pct", "shared.wavefronts"):
        expected.add("memory")
    if any(name.startswith("stall.") and value for name, (value, _unit) in values.items()):
        expected.add("stalls")
    raw = profile.values(kernel, origin="raw")
    if (kernel.attributes.get("inst_executed_per_opcode") or has("inst.fp32", "inst.fp64", "inst.lsu", "inst.xu")
            or any(raw.get(counter, (0.0,))[0] for counter in ("SQ_INSTS_VALU", "SQ_INSTS_SALU", "SQ_INSTS_VMEM_RD"))):
        expected.add("instruction-mix")
    if kernel.source is not None and not kernel.source.instructions.dropna(subset=["file", "line"]).empty:
        expected.add("hotspots")
    return expected


class _Sections(HTMLParser):
    """Collects (kernel anchor, section id, state) of every report section in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, dict[str, str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "section" and attributes.get("data-section") and attributes.get("data-kernel"):
            self.found.setdefault(attributes["data-kernel"], {})[attributes["data-section"]] = attributes.get("data-state") or ""


def shown_sections(html: str) -> dict[str, dict[str, str]]:
    """{kernel anchor: {section id: "shown" | "absent"}} as the page has them."""
    parser = _Sections()
    parser.feed(html)
    return parser.found


def missing_sections(profiles: list[Profile], html: str) -> list[str]:
    """One line per section a report lacks or shows empty although its profile can fill it
    (and per kernel the page lacks altogether); empty when the report is complete."""
    shown = shown_sections(html)
    problems = []
    for index, profile in enumerate(profiles):
        for kernel in profile.kernels:
            anchor = f"p{index}-k{kernel.id}"
            page = shown.get(anchor)
            if page is None:
                problems.append(f"{profile.source}: kernel {kernel.id} ({kernel.name}) is not in the report")
                continue
            expected = expected_sections(profile, kernel)
            for section in SECTIONS:
                if section not in page:
                    problems.append(f"{profile.source}: kernel {kernel.id} ({kernel.name}) has no {section} section")
                elif section in expected and page[section] != "shown":
                    problems.append(f"{profile.source}: kernel {kernel.id} ({kernel.name}): the {section} section is empty "
                                    "although the profile has its data")
    return problems
