"""keet: explain GPU kernel profiles.

Library API (the CLI is a thin layer over it)::

    from keet import load_profile
    profile = load_profile("profiles/h100/dram_triad.ncu-rep")
    profile.kernel_table()
    profile.metrics.query("origin == 'canonical'")
"""

from keet.errors import KeetError, ProfileError
from keet.ingest import detect, load_profile
from keet.profile import Device, Kernel, Profile, RuleResult, SourceCounters

__all__ = ["Device", "KeetError", "Kernel", "Profile", "ProfileError", "RuleResult", "SourceCounters", "detect", "load_profile"]
__version__ = "0.1.0"
