"""Fusion: launches one kernel could do, and the time that would win.

Eager PyTorch launches one kernel per operator: in ``(gelu(x) + a) * b`` each kernel writes its
result to DRAM and the next one reads it back, and each pays its own launch. One fused kernel
(torch.compile, a fused optimizer, flash attention, a hand-written epilogue) keeps those
intermediates on chip. A chain is a run of consecutive launches of one device that belong
together and that fusion can speed up: launches bound by memory traffic or by their launch cost
(their speed of light's limiter), of one NVTX range (ncu --nvtx; a framework operator or a user's
range), or, where the profile has no ranges, consecutive ATen launches (whose operators the
framework could fuse). A launch bound by compute (a GEMM, a convolution) ends a chain.

The intermediate between launch i and launch i+1 is what i wrote and i+1 read back, at most:

    intermediate_i = min(bytes i wrote to L2, bytes i+1 read from DRAM)

(Nsight Compute flushes the caches before every launch, so a launch reads its inputs from
DRAM; its writes are counted where they reach the L2, as a dirty line may stay there). The
fused estimate asks the model about each launch's own work with the intermediate it read and
the one it wrote taken off its DRAM and L2 traffic, adds their times (phases that a real fused
kernel would overlap, so the estimate is conservative), and pays one launch's fixed costs
instead of one per launch:

    fused = sum over launches of (predicted' - overheads') + the largest overheads'
    recoverable = measured total x (1 - fused / predicted total)

The model's relative gain is applied to the measured time, as for every other recoverable time
(keet.diagnosis.recoverable): measured - fused would credit the fusion with whatever the model
misses on the launches as they are (a fused optimizer's two launches, which fusing again saves
3% of in the model's terms, showed 31% that way: the model's shortfall on them). Each phase of the
fused kernel is at the model's typical overlap of its units, not at its speed of light, so the
estimate stays conservative.

That assumes the intermediates are temporaries nothing else reads (in-place updates and results
kept for the backward pass are not); the finding says so (``ASSUMPTION``, its ``assumption`` in
the JSON, which the report and the LLM agent's tools show with it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from keet.diagnosis import Diagnosis
from keet.diagnosis.libraries import attention_lever
from keet.diagnosis.speed_of_light import ModelView, model_view
from keet.format import si
from keet.profile import Kernel, Profile
from perfmodel.hardware import SECTOR_BYTES

# Libraries whose consecutive launches form a chain without an NVTX range (keet/data/libraries.toml ids).
FUSIBLE_LIBRARIES = frozenset({"aten"})
# ... and those whose launches keet.diagnosis.attention looks through (its spans cross matrix products).
OPERATOR_LIBRARIES = frozenset({"aten", "cublas", "cutlass", "cudnn"})
# Limiters (the speed of light's model term) of launches that fusion speeds up: traffic to
# memory, and launches too short for their work. A launch bound by a pipe, the tensor cores or
# issue (a GEMM, a convolution) ends a chain: keeping its operands on chip does not shorten it,
# and a range that spans a layer's forward and backward is not one kernel to write.
FUSIBLE_LIMITERS = frozenset({"dram", "l2", "sm_port", "latency", "launch", "block_dispatch"})
# A chain whose fusion wins less than this share of its time is not worth a reader's time
# (keet.diagnosis.MIN_IMPACT for one finding).
MIN_SHARE = 0.02
CATEGORY = "fusion"
# The caller's lever for a chain (keet.diagnosis.attention has its own, for attention).
FUSION_LEVER = ("Fuse the chain into one kernel: torch.compile for PyTorch operators (one Triton kernel reads the inputs "
                "once and writes the result once), or a kernel of your own that keeps the intermediates in registers or "
                "shared memory.")
# What every fusion estimate takes for granted, in the words every presenter shows it with.
ASSUMPTION = ("nothing else reads the intermediates: they are temporaries of the chain (an in-place update, or a tensor "
              "kept for the backward pass, must still be written)")


@dataclass
class Fusion:
    """A chain of launches fused into one: its launches, where they come from (``range`` or
    consecutive library launches), the intermediate bytes that stay on chip, the model's time of
    the fused work and the measured time it would save."""

    launches: list[int]  # kernel ids, launch order
    range: str | None
    measured_ns: float
    predicted_ns: float  # sum of the launches' predictions as they are
    fused_ns: float  # the model's time of the fused work
    intermediate_bytes: float
    recoverable_ns: float
    lever: str = CATEGORY  # "fusion", or "attention" (keet.diagnosis.attention: a fused attention kernel)

    @property
    def share(self) -> float:
        return self.recoverable_ns / self.measured_ns if self.measured_ns else 0.0

    @property
    def how(self) -> str:
        return self.describe()

    @property
    def suggestion(self) -> str:
        """The caller's lever, in keet's words."""
        return attention_lever() if self.lever == "attention" else FUSION_LEVER

    def describe(self, named: bool = True) -> str:
        """How the time is won, in keet's words. ``named``: with the range's name, a string from
        the profile (False: "the range", for a reader that must keep profile strings apart)."""
        count = len(self.launches)
        if self.range:
            where = f"the {count} launches of range {self.range}" if named else f"the {count} launches of the range"
        else:
            where = f"{count} consecutive launches"
        if self.lever == "attention":
            return (f"{where} (attention: matrix products around a softmax) as one fused attention kernel (flash attention): "
                    f"{si(self.intermediate_bytes, 'B')} of score traffic never reaches memory and the products run on the "
                    f"tensor cores; the model's speed of light for that kernel is {si(self.fused_ns, 'ns')}, against "
                    f"{si(self.measured_ns, 'ns')} measured (the model's {si(self.predicted_ns, 'ns')} for the launches as they are)")
        return (f"{where} fused into one kernel: {si(self.intermediate_bytes, 'B')} of intermediates written and read back stay "
                f"on chip, and {count - 1} launch(es) fewer (if nothing else reads the intermediates); the model's "
                f"{si(self.predicted_ns, 'ns')} for the launches becomes {si(self.fused_ns, 'ns')} as one kernel, against "
                f"{si(self.measured_ns, 'ns')} measured")

    def as_dict(self) -> dict[str, Any]:
        return {"category": CATEGORY, "launches": self.launches, "range": self.range, "measured_ns": self.measured_ns,
                "predicted_ns": self.predicted_ns, "fused_ns": self.fused_ns, "intermediate_bytes": self.intermediate_bytes,
                "recoverable_ns": self.recoverable_ns, "recoverable_fraction": self.share, "recoverable_how": self.how,
                "recoverable_basis": "model", "assumption": ASSUMPTION, "lever": self.lever, "suggestion": self.suggestion}

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> Fusion:
        """The estimate back from its ``as_dict`` (keet explain's ``fusions``), for presenters
        that get the document."""
        return cls(list(entry["launches"]), entry.get("range"), entry["measured_ns"], entry["predicted_ns"], entry["fused_ns"],
                   entry["intermediate_bytes"], entry["recoverable_ns"], entry.get("lever", CATEGORY))


def chains(diagnoses: list[Diagnosis]) -> list[tuple[str | None, list[Diagnosis]]]:
    """Runs of consecutive launches (profile order, one device) that belong together: one NVTX
    range each, or, outside any range, consecutive launches of a fusible library; each launch
    bound by memory traffic or its launch cost (FUSIBLE_LIMITERS)."""
    return chains_of_launches(diagnoses)


def chains_of_launches(diagnoses: list[Diagnosis], any_limiter: bool = False) -> list[tuple[str | None, list[Diagnosis]]]:
    """:func:`chains`; with `any_limiter`, whatever bounds each launch, and outside ranges the
    consecutive launches of OPERATOR_LIBRARIES together (keet.diagnosis.attention)."""
    libraries = OPERATOR_LIBRARIES if any_limiter else FUSIBLE_LIBRARIES
    ordered = sorted(diagnoses, key=lambda d: d.kernel.id)
    out: list[tuple[str | None, list[Diagnosis]]] = []
    current: list[Diagnosis] = []
    key: tuple | None = None
    for d in ordered:
        kernel = d.kernel
        nvtx = kernel.attributes.get("nvtx")
        library = d.library.library.id if d.library else None
        limiter = d.speed_of_light.component if d.speed_of_light else None
        if limiter not in FUSIBLE_LIMITERS and not any_limiter:
            this = None
        elif nvtx:
            this = ("range", nvtx, kernel.device_id)
        elif library in libraries:
            this = ("library", library if not any_limiter else "operators", kernel.device_id)
        else:
            this = None
        if this is not None and this == key and kernel.id == current[-1].kernel.id + 1:
            current.append(d)
            continue
        _close_chain(out, key, current)
        current, key = ([d], this) if this is not None else ([], None)
    _close_chain(out, key, current)
    return out


def _close_chain(out: list[tuple[str | None, list[Diagnosis]]], key: tuple | None, members: list[Diagnosis]) -> None:
    if len(members) >= 2 and key is not None:
        out.append((key[1] if key[0] == "range" else None, members))


def written_bytes(view: ModelView) -> float:
    """What a launch wrote (to the L2, or where the profile lacks that, to DRAM)."""
    counts = view.work.counts
    if "l2_sectors_write" in counts:
        return counts["l2_sectors_write"] * SECTOR_BYTES
    return counts.get("dram_bytes_write", 0.0)


def _without(view: ModelView, read_off: float, write_off: float):
    """The launch's work with `read_off` bytes fewer read from DRAM (and the L2) and `write_off`
    bytes fewer written to the L2 (and DRAM)."""
    counts = dict(view.work.counts)

    def less(name: str, amount: float) -> None:
        if name in counts:
            counts[name] = max(0.0, counts[name] - amount)

    less("dram_bytes_read", read_off)
    less("l2_sectors_read", read_off / SECTOR_BYTES)
    less("l1_to_l2_read_bytes", read_off)
    less("l2_sectors_write", write_off / SECTOR_BYTES)
    less("l1_to_l2_write_bytes", write_off)
    less("dram_bytes_write", write_off)
    return replace(view.work, counts=counts)


def fuse(profile: Profile, chain: list[Kernel], range_name: str | None = None,
         views: list[ModelView | None] | None = None) -> Fusion | None:
    """The fusion estimate of one chain (module docstring), or None where the model cannot
    weigh every launch of it (a launch without work counts, or on a GPU without a file).
    ``views``: the model already applied to each launch (Diagnosis.view), where it was."""
    views = [v if v is not None else model_view(profile, kernel) for kernel, v in zip(chain, views or [None] * len(chain))]
    if not all(isinstance(v, ModelView) for v in views):
        return None
    written = [written_bytes(v) for v in views]
    read = [v.work.counts.get("dram_bytes_read", 0.0) for v in views]
    between = [min(written[i], read[i + 1]) for i in range(len(views) - 1)]
    parts, overheads = [], []
    try:
        for i, view in enumerate(views):
            fixed = view.predict(_without(view, between[i - 1] if i else 0.0, between[i] if i < len(between) else 0.0))
            extra = fixed.inputs.get("overheads_ns", 0.0) or 0.0
            parts.append(fixed.predicted_ns - extra)
            overheads.append(extra)
    except (ValueError, KeyError, ZeroDivisionError):
        return None
    predicted = sum(v.base.predicted_ns for v in views)
    measured = sum(v.measured_ns for v in views)
    fused = sum(parts) + max(overheads, default=0.0)
    if predicted <= 0:
        return None
    saved = max(0.0, measured * (1.0 - fused / predicted))
    return Fusion([k.id for k in chain], range_name, measured, predicted, fused, sum(between), saved)


def fusions(profile: Profile, diagnoses: list[Diagnosis]) -> list[Fusion]:
    """Every chain's fusion estimate worth reporting, and every attention span's
    (keet.diagnosis.attention), by recoverable time; a chain inside an attention span is part of
    that span's estimate and is not listed on its own."""
    from keet.diagnosis.attention import attentions  # it builds on this module's chains

    found = [a for a in attentions(diagnoses) if a.share >= MIN_SHARE]
    spanned = {kid for a in found for kid in range(a.launches[0], a.launches[-1] + 1)}
    for range_name, members in chains(diagnoses):
        if any(d.kernel.id in spanned for d in members):
            continue
        estimate = fuse(profile, [d.kernel for d in members], range_name, [d.view for d in members])
        if estimate is not None and estimate.share >= MIN_SHARE:
            found.append(estimate)
    return sorted(found, key=lambda f: (-f.recoverable_ns, f.launches[0]))
