"""Turn what a reader collected into a Profile: raw rows plus canonical rows."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from keet import canonical
from keet.profile import METRIC_COLUMNS, Device, Kernel, Profile

RawMetrics = Mapping[str, tuple[float, str]]


def assemble(
    source: str,
    format: str,
    device: Device,
    kernels: list[Kernel],
    raw: Mapping[int, RawMetrics],
    tool: str | None = None,
    devices: dict[int, Device] | None = None,
) -> Profile:
    """Build the Profile; canonical metrics are derived here, once, for every reader.

    Launch facts the kernel records lack (duration, registers, shared memory) are filled
    from the canonical metrics, so every reader's kernels look alike.
    """
    derived = canonical.derive_all({kernel.id: raw.get(kernel.id, {}) for kernel in kernels})
    per_kernel: dict[int, dict[str, float]] = {}
    for kid, name, value, _ in derived:
        per_kernel.setdefault(kid, {})[name] = value
    for kernel in kernels:
        _fill_from_canonical(kernel, per_kernel.get(kernel.id, {}))
    for device_id, each in {**(devices or {}), kernels[0].device_id: device}.items():
        # The profiled clock and SM count: from the first kernel on the device where the
        # device record lacks them (CSV exports carry no device attributes).
        first = per_kernel.get(next((k.id for k in kernels if k.device_id == device_id), -1), {})
        if each.sm_clock_hz is None and "sm_clock" in first:
            each.sm_clock_hz = first["sm_clock"]
        if each.sm_count is None and "launch.sm_count" in first:
            each.sm_count = int(first["launch.sm_count"])
    return Profile(
        source=source,
        format=format,
        device=device,
        kernels=kernels,
        metrics=_metrics_table(kernels, raw, derived),
        tool=tool,
        devices=devices or {},
    )


def _metrics_table(kernels: list[Kernel], raw: Mapping[int, RawMetrics], derived: list[tuple[int, str, float, str]]) -> pd.DataFrame:
    """The tidy table, built column-wise (a 20-kernel full-set report has ~40 000 rows)."""
    ids, names, values, units = [], [], [], []
    for kernel in kernels:
        metrics = raw.get(kernel.id, {})
        ids.extend([kernel.id] * len(metrics))
        names.extend(metrics.keys())
        for value, unit in metrics.values():
            values.append(value)
            units.append(unit)
    raw_count = len(ids)
    for kid, name, value, unit in derived:
        ids.append(kid)
        names.append(name)
        values.append(value)
        units.append(unit)
    origin = np.array(["raw", "canonical"], dtype=object).repeat([raw_count, len(ids) - raw_count])
    return pd.DataFrame(
        {
            "kernel": np.array(ids, dtype="int64"),
            "metric": names,
            "value": np.array(values, dtype="float64"),
            "unit": units,
            "origin": origin,
        },
        columns=METRIC_COLUMNS,
    )


def _fill_from_canonical(kernel: Kernel, values: Mapping[str, float]) -> None:
    def whole(name: str) -> int | None:
        return int(values[name]) if name in values else None

    if kernel.duration_ns is None:
        kernel.duration_ns = values.get("duration")
    if kernel.registers_per_thread is None:
        kernel.registers_per_thread = whole("launch.registers_per_thread")
    if kernel.static_shared_bytes is None:
        kernel.static_shared_bytes = whole("launch.shared_static")
    if kernel.dynamic_shared_bytes is None:
        kernel.dynamic_shared_bytes = whole("launch.shared_dynamic")
