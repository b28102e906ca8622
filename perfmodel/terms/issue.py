"""Issue: each SM sub-partition's scheduler issues one warp instruction per clock:
t_issue = warp instructions / schedulers_per_sm, spread over the busy SMs."""

from __future__ import annotations

from perfmodel.terms.base import Contribution, Launch

PARAMETERS = ("schedulers_per_sm",)


def evaluate(k: Launch) -> Contribution:
    out = Contribution()
    if k.instructions:
        out.sm["issue"] = k.instructions / (k.gpu.require("schedulers_per_sm") * k.per_sm)
    return out
