"""Parameters of the launch-context and per-SM port terms from a kernel_duration or sm_bandwidth run
(microbench/cupti/kernel_duration.py, sm_bandwidth.py).

    python3 -m microbench.cupti.derive microbench/calib/kernel_duration_h100_<date>.json [--l2-bytes N]

adds (or replaces) the document's "parameters", in the form `perfmodel calibrate` writes into a
hardware file. Each comes from our own kernels' CUPTI durations (docs/model.md, "Launch context"):

- kernel_fixed_ns: an empty one-block kernel, cold clean caches (the start and end of any kernel);
- block_dispatch_ns: least-squares slope of the empty kernel's duration against its grid
  (1,320 to 52,800 blocks): the rate at which the GPU starts blocks;
- event_overhead_ns: CUDA-event time minus CUPTI duration of the same isolated empty launches;
- dram_ramp_ns: the streaming read's intercept (least squares of duration against bytes, relative
  error, sizes from 4 MiB up), less kernel_fixed_ns: the memory pipeline's fill and drain;
- l2_dirty_writeback_ns_per_byte: least-squares slope of (isolated after a write flush - isolated
  after a clean flush) of the streaming read against min(bytes, L2 size): the dirty lines the
  kernel's data evicts, written back while it runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

SUITE_VERSION = 1


def _line(xs: list[float], ys: list[float], relative: bool = False) -> tuple[float, float]:
    """Intercept and slope of the least-squares line, each point weighted by 1/y if relative."""
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    w = 1.0 / y if relative else np.ones_like(y)
    a = np.vstack([np.ones_like(x), x]).T * w[:, None]
    (intercept, slope), *_ = np.linalg.lstsq(a, y * w, rcond=None)
    return float(intercept), float(slope)


def derive(document: dict, l2_bytes: float) -> dict:
    """name -> {value, unit, from} from a kernel_duration document; l2_bytes is the GPU's L2."""
    results = document["results"]
    empty = sorted((r for r in results if r["kernel"] == "empty"), key=lambda r: r["grid"])
    read = sorted((r for r in results if r["kernel"] == "read"), key=lambda r: r["bytes"])
    med = lambda r, c: r[c]["median_ns"]
    params = {}
    one = next(r for r in empty if r["grid"] == 1)
    fixed = med(one, "isolated_clean")
    params["kernel_fixed_ns"] = {"value": fixed, "unit": "ns", "from": (
        f"kernel_duration (empty, grid 1 x {one['block']} threads): median CUPTI duration of {one['isolated_clean']['n']} isolated "
        "launches after a clean 256 MiB flush")}
    many = [r for r in empty if r["grid"] >= 1320]
    _, per_block = _line([r["grid"] for r in many], [med(r, "isolated_clean") for r in many])
    params["block_dispatch_ns"] = {"value": per_block, "unit": "ns/block", "from": (
        "kernel_duration (empty): least-squares slope of the median CUPTI duration against the grid over "
        + ", ".join(f"{r['grid']} blocks {med(r, 'isolated_clean'):.0f} ns" for r in many))}
    params["event_overhead_ns"] = {"value": statistics.median(med(r, "event") - med(r, "isolated_clean") for r in empty), "unit": "ns",
                                   "from": "kernel_duration (empty, every grid): median of (CUDA-event time - CUPTI duration) of "
                                           "isolated launches after a clean flush"}
    streaming = [r for r in read if r["bytes"] >= 4 << 20]
    intercept, slope = _line([r["bytes"] for r in streaming], [med(r, "isolated_clean") for r in streaming], relative=True)
    params["dram_ramp_ns"] = {"value": max(intercept - fixed, 0.0), "unit": "ns", "from": (
        f"kernel_duration (read, {len(streaming)} sizes 4 MiB to {streaming[-1]['bytes'] >> 20} MiB, 1024 fp32 per 128-thread block): "
        f"intercept {intercept:.0f} ns of the least-squares line (relative error) of CUPTI duration against bytes, clean cold "
        f"caches, less kernel_fixed_ns; its slope is {1 / slope:.0f} GB/s")}
    xs = [min(r["bytes"], l2_bytes) for r in read]
    ys = [med(r, "isolated") - med(r, "isolated_clean") for r in read]
    writeback = float(np.dot(xs, ys) / np.dot(xs, xs))  # through the origin: no data, no write-back
    params["l2_dirty_writeback_ns_per_byte"] = {"value": writeback, "unit": "ns/B", "from": (
        f"kernel_duration (read, {len(read)} sizes 64 KiB to {read[-1]['bytes'] >> 20} MiB): least-squares slope through the origin "
        f"of (isolated after a written flush - isolated after a clean flush) against min(bytes, L2 {l2_bytes / 2**20:.0f} MiB)")}
    return params


def derive_sm_bandwidth(document: dict) -> dict:
    """name -> {value, unit, from} from an sm_bandwidth document: one SM's read rate from DRAM and from
    L2 and its write rate, each the median over the grids of at most four blocks (one SM each: the
    rest of the GPU idle, so that nothing but the SM's own port and loads in flight limits it)."""
    clock = float(document["device"]["sm_clock_mhz_now"]) * 1e6
    few = [r for r in document["results"] if r["grid"] <= 4]

    def rate(kernel: str, level: str) -> tuple[float, str]:
        rows = [r for r in few if r["kernel"] == kernel and r["level"] == level]
        per_ns = statistics.median(r["bytes_per_ns_per_block"] for r in rows)
        shown = ", ".join(f"{r['grid']} SM {r['bytes_per_ns_per_block']:.1f} B/ns" for r in rows)
        return per_ns, shown

    params = {}
    how = (f"sm_bandwidth ({document['warps_per_block'] * 32}-thread persistent blocks, {document['chunk_elements']} fp32 per "
           f"iteration; CUPTI durations): median over grids of 1, 2 and 4 blocks of bytes / duration / blocks, at the "
           f"{clock / 1e6:.0f} MHz SM clock nvidia-smi read")
    for name, level in (("sm_dram_read_bytes_per_clk", "dram"), ("sm_l2_read_bytes_per_clk", "l2")):
        per_ns, shown = rate("read", level)
        params[name] = {"value": per_ns * 1e9 / clock, "unit": "B/clk", "from": f"{how}; read of a {level}-resident buffer: {shown}"}
    # copy moves one byte read per byte written: per byte pair the port spends 1/read + 1/write
    read_ns, _ = rate("read", "dram")
    copy_ns, shown = rate("copy", "dram")
    write_ns = 1.0 / (2.0 / copy_ns - 1.0 / read_ns)
    params["sm_write_bytes_per_clk"] = {"value": write_ns * 1e9 / clock, "unit": "B/clk", "from": (
        f"{how}; copy of a DRAM-resident buffer ({shown} read + written), less the read's share at the read rate")}
    return params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--l2-bytes", type=float, help="the GPU's L2 size, for runs that did not record it")
    args = parser.parse_args(argv)
    for path in args.paths:
        document = json.loads(Path(path).read_text())
        if document.get("suite") == "sm_bandwidth":
            document["parameters"] = derive_sm_bandwidth(document)
        else:
            l2_bytes = document["device"].get("l2_bytes") or args.l2_bytes
            if not l2_bytes:
                parser.error(f"{path} does not record the L2 size: pass --l2-bytes")
            document["parameters"] = derive(document, l2_bytes)
        document.setdefault("suite_version", SUITE_VERSION)
        document["device"].setdefault("name", document["device"]["device"])
        document.setdefault("date_utc", document["device"].get("date_utc"))
        Path(path).write_text(json.dumps(document, indent=1) + "\n")
        for name, entry in document["parameters"].items():
            print(f"{path}: {name} = {entry['value']:.4g} {entry['unit']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
