"""Attention computed operator by operator: the matrix product of queries and keys, a softmax,
and the product with the values, each a launch of its own that writes and reads the N x N
scores (PyTorch's math path of scaled_dot_product_attention, or attention written by hand).

One fused attention kernel (flash attention: F.scaled_dot_product_attention's flash or
memory-efficient backend, flash-attn) keeps the scores on chip and runs both products on the
tensor cores. The lever is the caller's, and the chain it replaces crosses matrix products,
which the general fusion of keet.diagnosis.fusion does not (a GEMM ends its chains).

A span is found in one NVTX range or among consecutive library launches outside any range:
a matrix product A (a library matmul kind), later a softmax (by name: keet/data/libraries.toml
``[attention]``), then the next matrix product B, where A writes more than it reads (the scores
are larger than the queries and keys: sequence length > head dimension).

The estimate is the speed of light of one kernel doing the attention's own work, in the model's
units (perfmodel terms, at the profiled clock), the slowest of
- the products' arithmetic (A's and B's tensor and FP32-pipe time; products that ran on the FP32
  pipe moved to the tensor cores at the TF32 rate by keet.diagnosis.recoverable's tf32 lever: a
  flash kernel runs 16-bit, twice that rate, so the bound errs long);
- the softmax's special functions (its exponentials: its SFU time);
- the compulsory traffic, DRAM and L2: what A reads (queries, keys), what B reads but the
  scores (values: B's reads less min(A's writes, B's reads)) and what B writes (the output);
plus one launch's fixed costs. What the unfused launches spend besides (the scores written and
read back, tiles of the products re-read from the L2, the elementwise operators' index
arithmetic, block dispatch) is what fusing removes. Recoverable = the span's measured time minus
that bound: the most a fused attention kernel can win, which a good one approaches (on the
corpus's causal bf16 4x16x512x64 call flash attention takes 22.5 us against a bound of 14.6 us,
and the 9 launches of the math path's span 371 us).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from keet.diagnosis import Diagnosis
from keet.diagnosis.fusion import Fusion, chains_of_launches, written_bytes
from keet.diagnosis.libraries import softmax_patterns
from keet.diagnosis.recoverable import LEVERS
from keet.diagnosis.speed_of_light import ModelView, bounds
from perfmodel.features import KernelFeatures
from perfmodel.hardware import SECTOR_BYTES

LEVER = "attention"
# Library kinds (keet/data/libraries.toml) of a matrix product.
MATMUL_KINDS = frozenset({"fp32_matmul", "tf32_matmul", "half_matmul", "fp8_matmul", "matmul"})
# The model's units (perfmodel terms) the speed of light of a fused attention sums: the products'
# arithmetic, the softmax's special functions, and the compulsory traffic.
ARITHMETIC = frozenset({"tensor", "fma", "fp32"})
SOFTMAX_UNITS = frozenset({"sfu", "xu"})
MEMORY = frozenset({"dram", "l2"})


def _is_matmul(d: Diagnosis) -> bool:
    return bool(d.library and d.library.kind and d.library.kind.id in MATMUL_KINDS)


def _is_softmax(d: Diagnosis) -> bool:
    return any(p in d.kernel.name for p in softmax_patterns())


def spans(diagnoses: list[Diagnosis]) -> list[tuple[str | None, list[Diagnosis]]]:
    """The attention spans (A .. B, launch order) among runs of launches that belong together."""
    found = []
    for range_name, run in chains_of_launches(diagnoses, any_limiter=True):
        start = None
        for index, d in enumerate(run):
            if _is_matmul(d):
                if start is not None and any(_is_softmax(x) for x in run[start + 1:index]):
                    found.append((range_name, run[start:index + 1]))
                    start = None
                    continue
                start = index
    return found


def _read(view: ModelView) -> float:
    return view.work.counts.get("dram_bytes_read", 0.0)


def _work(d: Diagnosis) -> KernelFeatures:
    """A product's work on the tensor cores (the tf32 lever where it ran on the FP32 pipe)."""
    if d.library and d.library.model_lever == "tf32":
        changed = LEVERS["tf32"](d.view)
        if isinstance(changed, tuple):
            return changed[0]
    return d.view.work


def fused_attention(span: list[Diagnosis], range_name: str | None) -> Fusion | None:
    """The attention estimate of one span (module docstring), or None where the model cannot
    weigh its products or where they write no more than they read (no scores to keep on chip).
    Its ``intermediate_bytes`` is the DRAM traffic of the span beyond the compulsory."""
    views = [d.view for d in span]
    if not all(isinstance(v, ModelView) for v in views):
        return None
    first, last = views[0], views[-1]
    scores = min(written_bytes(first), _read(last))
    if written_bytes(first) <= _read(first) or scores <= 0:
        return None
    compulsory_read = _read(first) + _read(last) - scores
    compulsory_write = last.work.counts.get("dram_bytes_write", written_bytes(last))
    units: dict[str, float] = defaultdict(float)
    try:
        for d in (span[0], span[-1]):
            for unit, ns in bounds(d.view.predict(_work(d))).items():
                if unit in ARITHMETIC:
                    units[unit] += ns
        for d in span[1:-1]:
            if _is_softmax(d):
                for unit, ns in bounds(d.view.base).items():
                    if unit in SOFTMAX_UNITS:
                        units[unit] += ns
        counts = dict(last.work.counts)
        traffic = {"dram_bytes_read": compulsory_read, "dram_bytes_write": compulsory_write,
                   "l2_sectors_read": compulsory_read / SECTOR_BYTES, "l2_sectors_write": compulsory_write / SECTOR_BYTES,
                   "l1_to_l2_read_bytes": compulsory_read, "l1_to_l2_write_bytes": compulsory_write}
        counts.update({name: value for name, value in traffic.items() if name in counts})
        moved = last.predict(replace(last.work, counts=counts))
        for unit, ns in bounds(moved).items():
            if unit in MEMORY:
                units[unit] = ns
        overheads = moved.inputs.get("overheads_ns", 0.0) or 0.0
    except (ValueError, KeyError, ZeroDivisionError):
        return None
    if not units:
        return None
    fused = max(units.values()) + overheads
    predicted = sum(v.base.predicted_ns for v in views)
    measured = sum(v.measured_ns for v in views)
    traffic_now = sum(_read(v) + v.work.counts.get("dram_bytes_write", 0.0) for v in views)
    return Fusion([d.kernel.id for d in span], range_name, measured, predicted, fused,
                  max(0.0, traffic_now - compulsory_read - compulsory_write), max(0.0, measured - fused), lever=LEVER)


def attentions(diagnoses: list[Diagnosis]) -> list[Fusion]:
    """Every attention span's estimate."""
    found = []
    for range_name, span in spans(diagnoses):
        estimate = fused_attention(span, range_name)
        if estimate is not None:
            found.append(estimate)
    return found
