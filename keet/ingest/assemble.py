"""Turn what a reader collected into a Profile: raw rows plus canonical rows."""

from __future__ import annotations

from typing import Mapping

from keet import canonical
import pandas as pd

from keet.profile import Device, Kernel, Profile, metrics_frame

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
    raw_frame = pd.DataFrame(
        [(kernel.id, name, value, unit) for kernel in kernels for name, (value, unit) in raw.get(kernel.id, {}).items()],
        columns=["kernel", "metric", "value", "unit"],
    )
    derived = canonical.derive_frame(raw_frame)
    per_kernel: dict[int, dict[str, float]] = {}
    for kid, name, value in derived[["kernel", "metric", "value"]].itertuples(index=False):
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
    metrics = pd.concat([raw_frame.assign(origin="raw"), derived.assign(origin="canonical")], ignore_index=True)
    return Profile(
        source=source,
        format=format,
        device=device,
        kernels=kernels,
        metrics=metrics_frame(metrics),
        tool=tool,
        devices=devices or {},
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
