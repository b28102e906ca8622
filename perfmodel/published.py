"""Published measurements beside the model: STREAM/BabelStream triad bandwidth, FMA and GEMM
throughput measured by others on the GPUs we cannot run, compared with the model's prediction for
the zoo program that does the same kind of work.

The figures live in perfmodel/data/published_results.toml, each with its source (title, authors,
publisher, year, URL and where in it the number is) and a sentence on how comparable the zoo
kernel is. Metric/GPU pairs searched for without a usable figure are listed there too, so the
table says "none found" rather than leaving a silent gap.

    rows = comparison_rows(predictions, {program: program_work(features) ...})
    print(comparison_markdown(rows))

perfmodel.validate.document() puts the table into docs/validation.md.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from perfmodel.features import KernelFeatures
from perfmodel.hardware import SECTOR_BYTES, gpu_ids_in_listing_order

# metric -> unit, the zoo program it is compared with, and the work that turns time into the metric.
METRICS: dict[str, dict[str, str]] = {
    "stream_triad_bandwidth": {"unit": "GB/s", "program": "dram_triad", "work": "bytes",
                               "label": "STREAM / BabelStream triad bandwidth"},
    "fp32_fma_throughput": {"unit": "TFLOP/s", "program": "fp32_fma", "work": "fp32_flops",
                            "label": "FP32 FMA throughput"},
    "sgemm_throughput": {"unit": "TFLOP/s", "program": "sgemm_tiled", "work": "fp32_flops",
                         "label": "FP32 GEMM (SGEMM) throughput"},
    "fp16_tensor_gemm_throughput": {"unit": "TFLOP/s", "program": "gemm_wmma", "work": "tensor_flops",
                                    "label": "FP16 tensor-core GEMM throughput"},
}


@dataclass(frozen=True)
class Source:
    title: str
    authors: str
    publisher: str
    year: str
    url: str
    where: str

    def citation(self) -> str:
        return f"{self.authors}, \"{self.title}\", {self.publisher}, {self.year}, <{self.url}>: {self.where}"


@dataclass(frozen=True)
class Published:
    gpu: str
    metric: str
    value: float
    unit: str
    benchmark: str
    program: str
    comparability: str
    source: Source


@dataclass(frozen=True)
class Missing:
    gpu: str
    metric: str
    searched: str


@dataclass(frozen=True)
class Row:
    gpu: str
    program: str
    metric: str
    unit: str
    predicted: float | None  # the model's prediction for the program, in the metric's unit
    published: float | None  # None: none found
    benchmark: str
    comparability: str
    citation: str

    @property
    def ratio(self) -> float | None:
        if self.predicted is None or not self.published:
            return None
        return self.predicted / self.published


def load(path: Path | None = None) -> tuple[list[Published], list[Missing]]:
    """The published figures and the searched-but-not-found pairs."""
    text = path.read_text() if path else resources.files("perfmodel").joinpath("data/published_results.toml").read_text()
    data = tomllib.loads(text)
    results = [Published(entry["gpu"], entry["metric"], float(entry["value"]), entry["unit"], entry["benchmark"],
                         entry["program"], entry["comparability"], Source(**{k: str(v) for k, v in entry["source"].items()}))
               for entry in data.get("result", [])]
    missing = [Missing(entry["gpu"], entry["metric"], entry["searched"]) for entry in data.get("missing", [])]
    return results, missing


def program_work(work: KernelFeatures) -> dict[str, float]:
    """Bytes and FLOPs of one zoo kernel from its work counts: requested global bytes (loads plus
    stores, the STREAM convention), FP32 FLOPs (thread-level FFMA x 2 + FADD + FMUL) and tensor
    FLOPs (from the MMA shapes)."""
    from perfmodel.model import tensor_flops_per_instruction

    counts = work.counts
    return {
        "bytes": (counts.get("global_load_sectors", 0.0) + counts.get("global_store_sectors", 0.0)) * SECTOR_BYTES,
        "fp32_flops": work.flops.get("fp32", 0.0),
        "tensor_flops": sum(count * tensor_flops_per_instruction(op) for op, count in work.tensor_instructions.items()),
    }


def _metric_value(metric: str, work: Mapping[str, float], predicted_ns: float | None) -> float | None:
    if predicted_ns is None or predicted_ns <= 0:
        return None
    amount = work.get(METRICS[metric]["work"], 0.0)
    if not amount:
        return None
    per_ns = amount / predicted_ns  # bytes/ns = GB/s; flop/ns = GFLOP/s
    return per_ns if METRICS[metric]["unit"] == "GB/s" else per_ns / 1e3


def comparison_rows(predictions: Mapping[tuple[str, str], float], work: Mapping[str, Mapping[str, float]],
                    results: tuple[list[Published], list[Missing]] | None = None) -> list[Row]:
    """One row per published figure (and per searched-but-not-found pair): the model's prediction
    for the matching zoo program turned into the figure's metric (triad bytes / predicted time ->
    GB/s, FLOPs / predicted time -> TFLOP/s) beside the published value.

    ``predictions`` maps (program, gpu id) to predicted ns; ``work`` maps program to its bytes
    and FLOPs (:func:`program_work`).
    """
    published, missing = results if results is not None else load()
    rows = []
    for result in published:
        amount = work.get(result.program, {})
        rows.append(Row(result.gpu, result.program, result.metric, METRICS[result.metric]["unit"],
                        _metric_value(result.metric, amount, predictions.get((result.program, result.gpu))),
                        result.value, result.benchmark, result.comparability, result.source.citation()))
    for gap in missing:
        program = METRICS[gap.metric]["program"]
        rows.append(Row(gap.gpu, program, gap.metric, METRICS[gap.metric]["unit"],
                        _metric_value(gap.metric, work.get(program, {}), predictions.get((program, gap.gpu))),
                        None, "none found", "", f"searched: {gap.searched}"))
    metric_order = list(METRICS)
    gpu_order = gpu_ids_in_listing_order()
    rows.sort(key=lambda r: (metric_order.index(r.metric), gpu_order.index(r.gpu) if r.gpu in gpu_order else 99,
                             r.published is None))
    return rows


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f} {unit}" if value >= 100 else f"{value:,.1f} {unit}"


def comparison_markdown(rows: Iterable[Row]) -> str:
    """A markdown table: model prediction, published measurement, their ratio, what was measured
    and how comparable it is, and the source."""
    lines = ["| GPU | zoo program | metric | model | published | model / published | published benchmark; comparability | source |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        published = _number(row.published, row.unit) if row.published is not None else "none found"
        ratio = f"{row.ratio:.2f}" if row.ratio is not None else "—"
        described = row.benchmark if not row.comparability else f"{row.benchmark}; {row.comparability}"
        cells = [row.gpu, row.program, METRICS[row.metric]["label"], _number(row.predicted, row.unit), published, ratio,
                 described, row.citation]
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |")
    return "\n".join(lines)
