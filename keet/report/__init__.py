"""HTML reports: one self-contained page per set of profiles (keet report PROFILE... -o FILE).

    from keet.report import build, render, write_report
    report = build([load_profile("a.ncu-rep"), load_profile("b.ncu-rep")])  # the second compared with the first
    html = render(report)
"""

from keet.report.assemble import PROFILE_SECTIONS, SECTIONS, Report, build, write_report
from keet.report.page import render

__all__ = ["PROFILE_SECTIONS", "SECTIONS", "Report", "build", "render", "write_report"]
