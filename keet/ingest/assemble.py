"""Turn what a reader collected into a Profile: raw rows plus canonical rows."""

from __future__ import annotations

import math
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

    Whatever a file holds, the Profile keeps only what can be true (docs/ingest.md, "Values
    that cannot be true"): no metric is infinite or NaN, no launch dimension is zero or
    negative, no count or size is negative. Such values are missing, as if the file lacked
    them, so that everything downstream may divide by a grid or a clock.
    """
    raw = {kid: {name: cell for name, cell in metrics.items() if _finite(cell[0])} for kid, metrics in raw.items()}
    derived = [row for row in canonical.derive_all({kernel.id: raw.get(kernel.id, {}) for kernel in kernels}) if _possible(row[1], row[2])]
    per_kernel: dict[int, dict[str, float]] = {}
    for kid, name, value, _ in derived:
        per_kernel.setdefault(kid, {})[name] = value
    for kernel in kernels:
        _fill_from_canonical(kernel, per_kernel.get(kernel.id, {}))
        _drop_impossible_launch_facts(kernel)
        derived.extend(_launch_metrics(kernel, per_kernel.setdefault(kernel.id, {})))
    for each in {**(devices or {}), kernels[0].device_id: device}.values():
        _drop_impossible_device_facts(each)
    for device_id, each in {**(devices or {}), kernels[0].device_id: device}.items():
        # The profiled clock and SM count: from the first kernel on the device where the
        # device record lacks them (CSV exports carry no device attributes).
        first = per_kernel.get(next((k.id for k in kernels if k.device_id == device_id), -1), {})
        if each.sm_clock_hz is None and "sm_clock" in first:
            each.sm_clock_hz = first["sm_clock"]
        if each.sm_count is None and "launch.sm_count" in first:
            each.sm_count = _count(first["launch.sm_count"], _MAX_SIZE, minimum=1)
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


# Bounds of what a launch can be: CUDA and HIP grids go up to 2^32 - 1 blocks a dimension;
# a size or count beyond 2^48 (256 TiB, 2.8e14 registers) describes no GPU.
_MAX_DIMENSION = 2**32 - 1
_MAX_SIZE = 2**48


# Canonical metrics with a floor (rules divide by the first group): a launch of 0 threads, a
# device of 0 SMs or a clock of 0 Hz is damage, not a measurement.
_POSITIVE = frozenset({"launch.grid_size", "launch.block_size", "launch.threads", "launch.sm_count", "sm_clock"})
_NON_NEGATIVE_PREFIXES = ("launch.", "occupancy.")


def _possible(name: str, value: float) -> bool:
    if not _finite(value):
        return False
    if name in _POSITIVE:
        return value > 0
    return value >= 0 or not name.startswith(_NON_NEGATIVE_PREFIXES)


def _finite(value: object) -> bool:
    try:
        return math.isfinite(value)  # type: ignore[arg-type]
    except (TypeError, OverflowError):
        return False


def _count(value: object, maximum: int, minimum: int = 0) -> int | None:
    """A number within [minimum, maximum] as a whole number (floats truncated), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    if not _finite(value) or not minimum <= value <= maximum:
        return None
    return int(value)


def _dims(value: tuple[int, ...] | None) -> tuple[int, int, int] | None:
    if value is None or len(value) != 3:
        return None
    checked = tuple(_count(v, _MAX_DIMENSION, minimum=1) for v in value)
    return None if None in checked else checked  # type: ignore[return-value]


def _drop_impossible_launch_facts(kernel: Kernel) -> None:
    kernel.grid = _dims(kernel.grid)
    kernel.block = _dims(kernel.block)
    kernel.registers_per_thread = _count(kernel.registers_per_thread, _MAX_SIZE)
    kernel.static_shared_bytes = _count(kernel.static_shared_bytes, _MAX_SIZE)
    kernel.dynamic_shared_bytes = _count(kernel.dynamic_shared_bytes, _MAX_SIZE)
    if kernel.duration_ns is not None and not (_finite(kernel.duration_ns) and kernel.duration_ns >= 0):
        kernel.duration_ns = None
    kernel.invocations = _count(kernel.invocations, _MAX_SIZE, minimum=1) or 1


def _drop_impossible_device_facts(device: Device) -> None:
    """A device with no SMs or a clock of zero (or of infinity) has none we know."""
    device.sm_count = _count(device.sm_count, _MAX_SIZE, minimum=1)
    for name in ("memory_bytes", "memory_bus_width_bits", "l2_bytes"):
        setattr(device, name, _count(getattr(device, name), _MAX_SIZE, minimum=1))
    for name in ("sm_clock_hz", "max_sm_clock_hz", "memory_clock_hz"):
        value = getattr(device, name)
        if value is not None and not (_finite(value) and value > 0):
            setattr(device, name, None)


def _launch_metrics(kernel: Kernel, values: dict[str, float]) -> list[tuple[int, str, float, str]]:
    """Canonical launch metrics from the kernel's grid and block where no raw metric gave them.

    An `ncu --csv` export prints the launch shape in its Grid Size/Block Size columns on every
    row, but carries launch__ metrics only with the Launch Statistics section: without these
    rows the grid rules (small grid, tail effect) would go unassessed. The raw rows stay what
    the file holds.
    """
    facts = {}
    if kernel.grid is not None:
        facts["launch.grid_size"] = (float(math.prod(kernel.grid)), "block")
    if kernel.block is not None:
        facts["launch.block_size"] = (float(math.prod(kernel.block)), "thread")
    if kernel.grid is not None and kernel.block is not None:
        facts["launch.threads"] = (float(math.prod(kernel.grid) * math.prod(kernel.block)), "thread")
    rows = []
    for name, (value, unit) in facts.items():
        if name not in values:
            values[name] = value
            rows.append((kernel.id, name, value, unit))
    return rows


def _fill_from_canonical(kernel: Kernel, values: Mapping[str, float]) -> None:
    def whole(name: str) -> int | None:
        return _count(values[name], _MAX_SIZE) if name in values else None

    if kernel.duration_ns is None:
        kernel.duration_ns = values.get("duration")
    if kernel.registers_per_thread is None:
        kernel.registers_per_thread = whole("launch.registers_per_thread")
    if kernel.static_shared_bytes is None:
        kernel.static_shared_bytes = whole("launch.shared_static")
    if kernel.dynamic_shared_bytes is None:
        kernel.dynamic_shared_bytes = whole("launch.shared_dynamic")
