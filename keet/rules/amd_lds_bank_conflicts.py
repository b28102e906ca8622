"""LDS bank conflicts on AMD: a wave's LDS accesses to one of the 32 banks serialise.

rocprof-compute's "LDS Bank Conflicts/Access" (canonical ``shared.bank_conflicts_per_access``)
is SQ_LDS_BANK_CONFLICT / (SQ_LDS_IDX_ACTIVE - SQ_LDS_BANK_CONFLICT): cycles the LDS stalled on
conflicts per conflict-free active cycle.
"""

from __future__ import annotations

from keet.rules.amd_base import Unassessed, amd_rule, pmc
from keet.rules.base import Finding, KernelView, clamp, num

# At a quarter of a conflict cycle per access the extra passes are worth a code change (the
# NVIDIA rule's share, for the same kind of replay).
CONFLICTS_PER_ACCESS = 0.25


@amd_rule(
    "amd-lds-bank-conflicts",
    "shared_bank_conflicts",
    "AMD: LDS bank conflicts add LDS cycles",
    needs=("shared.bank_conflicts",),
    collect=pmc("SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE"),
)
def apply(k: KernelView) -> Finding | Unassessed | None:
    conflicts = k.metric("shared.bank_conflicts")
    if conflicts <= 0:
        return None  # no conflict cycles (or no LDS use at all)
    rate = k.metric("shared.bank_conflicts_per_access")
    if rate is None:
        return Unassessed(["shared.bank_conflicts_per_access"], pmc("SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE"))
    if rate < CONFLICTS_PER_ACCESS:
        return None
    return Finding(
        category="shared_bank_conflicts",
        rule="amd-lds-bank-conflicts",
        # impact = conflict cycles / all LDS active cycles = r / (1 + r): the share of LDS time
        # lost, an upper bound on the runtime at stake (LDS busy time is not measured here)
        impact=clamp(rate / (1 + rate)),
        confidence=0.6,
        evidence=[k.evidence("shared.bank_conflicts_per_access", CONFLICTS_PER_ACCESS, ">="), k.evidence("shared.bank_conflicts")],
        explanation=(
            f"The LDS stalled {num(conflicts)} cycles on bank conflicts, {rate:.3g} per conflict-free LDS cycle: lanes of a wave "
            "hit different addresses in the same four-byte LDS bank, and the access is replayed once per extra address."
        ),
        suggestions=[
            "Pad each LDS row by one element (__shared__ float tile[64][65] rather than [64][64]) so a column access by a wave touches every bank once.",
            "Or swizzle the column index (c ^ r) to keep the array dense while spreading a column over all banks.",
            "For 8- or 16-byte elements (double, float4) pad by one element too, and prefer ds_read_b64/b128 with consecutive lanes on consecutive elements.",
            "Re-profile and check SQ_LDS_BANK_CONFLICT drops toward zero.",
        ],
        explains=("l1_shared_bandwidth", "instruction_issue", "memory_latency"),
    )
