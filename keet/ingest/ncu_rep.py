"""Nsight Compute reports (.ncu-rep; gzip/xz/bz2-compressed too) via PyPI ncu-report."""

from __future__ import annotations

import functools
import math
import os
import struct
from collections import deque
from collections.abc import Collection, Hashable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from keet.errors import ProfileError
from keet.ingest import limits, register, sniff
from keet.ingest.assemble import assemble
from keet.ingest.compressed import Content, plain_copy
from keet.ingest.ncu_rep_native import (
    IN_FLIGHT,
    NativeReport,
    first_line,
    loaded,
    loaded_action,
    native_errors,
    raise_on,
    read_ahead_in_worker,
    start_sass,
)
from keet.profile import (
    Device,
    Kernel,
    Profile,
    RuleResult,
    SourceCounters,
    SourceRequest,
)

MAGIC = sniff.NCU_REP_MAGIC
_BLOCK_PAYLOAD_SIZE = 5  # field number of PayloadSize in the report's BlockHeader message
_RULE_KINDS = {0: "none", 1: "ok", 2: "warning", 3: "optimization", 4: "error"}
_SPEEDUP_TYPES = {0: None, 1: "local", 2: "global"}
# Per-opcode instruction counts kept as kernel attributes (the kernel's instruction mix).
_OPCODE_TABLES = {
    "inst_executed_per_opcode": "sass__inst_executed_per_opcode",  # warp-level
    "thread_inst_executed_per_opcode": "sass__thread_inst_executed_true_per_opcode",  # thread-level, predicated on
    "inst_executed_per_opcode_with_modifier": "sass__inst_executed_per_opcode_with_modifier_all",  # e.g. HMMA.16816.F32
}
_MAX_WORKERS = 4
# Read even when a caller asks for a subset of metrics: the launch and the device.
_ALWAYS_READ = ("launch__", "device__attribute_")
_ACTIONS_PER_WORKER = 4  # below this many actions per worker another process costs more than it saves
# Actions per read task: a big full-set action decodes to 10-20 MB that the native reader never
# frees, so a worker is checked against its memory limit after every few (ncu_rep_native); with
# their per-instruction counters read ahead (~15 MB more for a function's first launch in a
# worker), after every two.
_ACTIONS_PER_TASK = 8
_ACTIONS_PER_TASK_AHEAD = 2
_MAX_BLOCK_HEADER_BYTES = 1 << 24  # real block headers are at most 132 KiB (reports of ncu 2022.2-2025.3)


@register
class NcuReportReader:
    id = "ncu-rep"
    description = "Nsight Compute report (.ncu-rep), any version the ncu-report module reads"
    reads_ahead = True  # per-instruction counters with the metrics, in one pass per action (load_profile)
    reads_launches = True  # some launches alone: the others' actions are never decoded (load_profile)

    def sniff(self, head: bytes) -> bool:
        return sniff.ncu_rep(head)

    def read(self, path: Path, metrics: Collection[str] | None = None, read_ahead: SourceRequest | None = None,
             launches: Collection[int] | None = None) -> Profile:
        import ncu_report  # noqa: F401 - lazily (a native library), here: forked workers inherit it loaded

        path = Path(path)  # compared with the copy's path below: a str would never equal it
        keep = frozenset(metrics) if metrics is not None else None
        # The framing is walked while the file is decompressed: a bomb or a damaged file
        # stops at its first bad block, before the copy grows.
        plain = plain_copy(path, walk=functools.partial(_walk_framing, path))
        # All native reads run in forked workers (keet/ingest/ncu_rep_native.py says why); the
        # workers that read the actions keep the report loaded for the kernels' source counters.
        # The copy lives as long as the report's kernels: those are read from it later.
        native = NativeReport(path, plain, workers=_MAX_WORKERS)
        try:
            records = _read_all_actions(path, native, keep, read_ahead, launches)
            # Launches of one function (same name, same code address) have one SASS: read it once.
            native.code = {(r.range_index, r.action_index): _code_of(r) for r in records if r.function_base is not None}
            for record in records:  # later reads go where the action is decoded already
                position = (record.range_index, record.action_index)
                native.assign(position, record.slot)
                if read_ahead is not None:
                    native.read_ahead(position, read_ahead, record.ahead)
                    record.ahead = None
            return _profile_from_records(path, native, records)
        except BaseException as exc:  # Ctrl-C too must not leave the copy or the workers behind
            native.close()
            if isinstance(exc, ProfileError) or not isinstance(exc, Exception):
                raise
            # a damaged payload surfaces as odd values deep in the native reader
            raise ProfileError(path, f"report is corrupt ({first_line(exc)})") from None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("varint runs past the end")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _payload_size(header: bytes) -> int:
    """PayloadSize from a BlockHeader protobuf message (wire format, no schema needed)."""
    pos = 0
    while pos < len(header):
        key, pos = _varint(header, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(header, pos)
            if field == _BLOCK_PAYLOAD_SIZE:
                return value
        elif wire == 2:
            length, pos = _varint(header, pos)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unknown wire type {wire}")
    return 0


def _walk_framing(path: Path, content: Content) -> None:
    """Walk the report's block framing so a truncated file is an error, not fewer kernels.

    The native reader silently returns the kernels before a cut; the framing (magic,
    header, then blocks of [u32 header size][header][payload]) must end exactly at EOF.
    A block header of size 0 (what zeros, a sparse file's hole, read as) is refused at once:
    it moves 4 bytes a block, so a 2 GB hole would take minutes to walk. Real blocks have
    headers of 63 bytes to 132 KiB and may have no payload.
    """
    try:
        if content.read(len(MAGIC)) != MAGIC:
            raise ProfileError(path, "is not an Nsight Compute report (bad magic)")
        file_header = _u32(content.read(4))
        if content.skip(file_header) != file_header:
            raise ValueError("its file header is cut off")
        blocks, max_blocks = 0, limits.max_rows()
        while True:
            size = content.read(4)
            if not size:
                break
            block_header_size = _u32(size)
            if block_header_size == 0:
                raise ValueError(f"an empty block at byte {content.position - 4:,}")
            if block_header_size > _MAX_BLOCK_HEADER_BYTES:
                raise ValueError(f"a block header of {block_header_size:,} bytes at byte {content.position - 4:,}")
            header = content.read(block_header_size)
            if len(header) < block_header_size:
                raise ValueError("its block structure ends early")
            payload = _payload_size(header)  # only headers are parsed: payloads are passed over
            if content.skip(payload) != payload:
                raise ValueError("its block structure ends early")
            blocks += 1
            if blocks > max_blocks:
                raise limits.over_limit(path, "KEET_MAX_ROWS", f"report has more than {max_blocks:,} blocks")
        if blocks == 0:
            raise ValueError("it holds no block")
    except (struct.error, ValueError) as exc:
        raise ProfileError(path, f"report is truncated or corrupt ({exc})") from None


def _u32(data: bytes) -> int:
    if len(data) < 4:
        raise ValueError("its block structure ends early")
    return struct.unpack("<I", data)[0]


def _device(values: dict[str, object]) -> Device:
    def num(name: str) -> float | None:
        value = values.get(f"device__attribute_{name}")
        return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None

    major, minor = num("compute_capability_major"), num("compute_capability_minor")
    cc = (int(major), int(minor)) if major is not None and minor is not None else None
    khz = lambda name: None if num(name) is None else num(name) * 1e3
    as_int = lambda name: None if num(name) is None else int(num(name))
    return Device(
        name=str(values.get("device__attribute_display_name", "unknown NVIDIA GPU")),
        vendor="nvidia",
        arch=f"sm_{cc[0]}{cc[1]}" if cc else None,
        compute_capability=cc,
        sm_count=as_int("multiprocessor_count"),
        max_sm_clock_hz=khz("max_gpu_frequency_khz") or khz("clock_rate"),
        memory_clock_hz=khz("max_mem_frequency_khz") or khz("memory_clock_rate"),
        memory_bytes=as_int("total_memory"),
        memory_bus_width_bits=as_int("global_memory_bus_width"),
        l2_bytes=as_int("l2_cache_size"),
        attributes={k.removeprefix("device__attribute_"): v for k, v in values.items() if k.startswith("device__attribute_")},
    )


def _rule_results(rules: list[dict]) -> list[RuleResult]:
    """The rules' findings; results with no message and no focus metric (table-only) say nothing."""
    results = []
    for rule in rules:
        message = rule.get("rule_message") or {}
        speedup = rule.get("speedup_estimation") or {}
        if not message.get("message") and not message.get("title") and not rule.get("focus_metrics"):
            continue
        results.append(
            RuleResult(
                rule_id=rule.get("rule_identifier", ""),
                name=rule.get("name", ""),
                section=rule.get("section_identifier"),
                title=message.get("title", ""),
                message=message.get("message", ""),
                kind=_RULE_KINDS.get(message.get("type"), "none"),
                speedup_type=_SPEEDUP_TYPES.get(speedup.get("type")),
                estimated_speedup_pct=speedup.get("speedup"),
                focus_metrics=list(rule.get("focus_metrics") or []),
            )
        )
    return results


def _opcode_table(metric) -> dict[str, float]:
    ids = metric.correlation_ids()
    return {ids.as_string(i): metric.as_double(i) for i in range(metric.num_instances())}


@dataclass
class _ActionRecord:
    """What one report action (kernel launch) holds, as plain picklable data."""

    range_index: int
    action_index: int
    name: str
    mangled_name: str
    function_name: str
    raw: dict[str, tuple[float, str]]
    strings: dict[str, str]
    rules: list[dict]
    opcodes: dict[str, dict[str, float]]  # per-opcode tables (instruction mix)
    function_base: int | None = None  # address of the kernel's code: launches sharing it share their SASS
    slot: int = 0  # the worker that read it (and holds it decoded)
    launch: int = 0  # its place among all the report's actions: the kernel's id
    ahead: tuple | None = None  # a read-ahead of its per-instruction counters (read_ahead_in_worker's answer)


def _learn(record: _ActionRecord, request: SourceRequest, native: NativeReport, unlocated: set[Hashable]) -> None:
    """From an action's counters read ahead: start reading its code's SASS (the first launch's
    pcs that `request` picks), and note a code without file:line (a library built without
    -lineinfo) that later launches need not locate."""
    (source, _), errors = record.ahead
    if source is None or errors:
        return
    code = _code_of(record)
    frame, _, base = source
    if request.sass_for is not None and (offsets := request.sass_for(frame)):
        native.read_sass_ahead((record.range_index, record.action_index), code, [base + pc for pc in offsets])
    if request.columns is None:  # every instruction was located
        sought = len(frame) > 0
    else:
        deciding = [name for name in request.locate or () if name in frame.columns]
        sought = bool(deciding) and frame[deciding].to_numpy().any()
    if sought and frame["file"].isna().all():
        unlocated.add(code)


def _code_of(record: _ActionRecord) -> Hashable:
    """What launches of one function share (their SASS, file:line): its name and code address,
    or where the report has no address the launch itself."""
    return _code_key(record.mangled_name, record.function_base, (record.range_index, record.action_index))


def _code_key(mangled_name: str, function_base: int | None, position: tuple[int, int]) -> Hashable:
    return position if function_base is None else (mangled_name, function_base)


class _MetricKinds:
    """Value kind and unit of each metric name, learnt once per worker.

    Every action of a report has the same metric names with the same kinds and units;
    asking the native layer again for each costs more than reading the value.
    """

    def __init__(self, ncu_report) -> None:
        metric_class = ncu_report.IMetric
        self.getters = {
            metric_class.ValueKind_DOUBLE: metric_class.as_double,
            metric_class.ValueKind_FLOAT: metric_class.as_double,
            metric_class.ValueKind_UINT64: metric_class.as_uint64,
            metric_class.ValueKind_UINT32: metric_class.as_uint64,
        }
        self.known: dict[str, tuple[object, str]] = {}

    @classmethod
    @functools.cache
    def of_worker(cls, ncu_report) -> _MetricKinds:
        """The worker process's one instance (its read tasks share what it learnt)."""
        return cls(ncu_report)

    def describe(self, name: str, metric) -> tuple[object, str]:
        found = self.known.get(name)
        if found is None:
            found = self.known[name] = (self.getters.get(metric.kind()), metric.unit())
        return found


def _read_action(action, range_index: int, action_index: int, ncu_report, kinds: _MetricKinds, skip: tuple[str, ...],
                 keep: frozenset[str] | None) -> _ActionRecord:
    raw: dict[str, tuple[float, str]] = {}
    strings: dict[str, str] = {}
    for name in action.metric_names():
        if name.startswith(skip) or (keep is not None and name not in keep and not name.startswith(_ALWAYS_READ)):
            continue
        metric = action.metric_by_name(name)
        getter, unit = kinds.describe(name, metric)
        if getter is not None:
            if metric.has_value():
                raw[name] = (float(getter(metric)), unit)
            continue
        value = metric.value()  # strings and anything unusual take the general path
        if isinstance(value, str):
            strings[name] = value
        elif value is not None:
            raw[name] = (float(value), unit)
    if nvtx := _nvtx_ranges(action):
        strings["nvtx"] = nvtx
    opcodes = {}
    for table, metric_name in _OPCODE_TABLES.items():
        metric = action.metric_by_name(metric_name)
        if metric is not None and metric.num_instances() > 0:
            opcodes[table] = _opcode_table(metric)
    return _ActionRecord(
        range_index=range_index,
        action_index=action_index,
        name=action.name(ncu_report.IAction.NameBase_DEMANGLED),
        mangled_name=action.name(ncu_report.IAction.NameBase_MANGLED),
        function_name=action.name(ncu_report.IAction.NameBase_FUNCTION),
        raw=raw,
        strings=strings,
        rules=list(action.rule_results_as_dicts()),
        opcodes=opcodes,
        function_base=_function_base(action),
    )


def _function_base(action) -> int | None:
    metric = action.metric_by_name("launch__function_pcs")
    if metric is None or metric.num_instances() == 0:
        return None
    return min(metric.as_uint64(i) for i in range(metric.num_instances()))


def _nvtx_ranges(action) -> str | None:
    """The NVTX ranges open around a launch (ncu --nvtx): each domain's push/pop stack, outermost
    first, as "a > b" ("domain: a > b" outside the default domain; domains joined by " | ")."""
    try:
        state = action.nvtx_state()
        stacks = []
        for domain_id in state.domains() if state is not None else ():
            domain = state.domain_by_id(domain_id)
            ranges = [str(r) for r in (*domain.push_pop_ranges(), *domain.start_end_ranges())]
            if ranges:
                name = str(domain.name())
                stacks.append(" > ".join(ranges) if name in ("", "<default domain>") else f"{name}: {' > '.join(ranges)}")
    except Exception:  # noqa: BLE001 - a report without NVTX data, or an older reader API
        return None
    return " | ".join(stacks) or None


def _read_actions(report: str, positions: list[tuple[int, int]], keep: frozenset[str] | None = None,
                  read_ahead: SourceRequest | None = None, unlocated: frozenset[Hashable] = frozenset()
                  ) -> list[_ActionRecord]:
    """Read some actions of a report, and with `read_ahead` their per-instruction counters (no
    SASS: :func:`_learn`; no file:line of the code in `unlocated`, which has none): runs in a
    worker process.

    Device attributes are the same for every launch on a device: read them from the
    task's first action on each device only (they are 166 of ~2200 metrics of an H100
    full-set action); _share_device_attributes gives them back to the other actions.
    """
    import ncu_report

    with native_errors() as errors:
        kinds = _MetricKinds.of_worker(ncu_report)
        records = []
        seen_devices: set[int] = set()
        for range_index, action_index in positions:
            action = loaded_action(report, (range_index, action_index))
            device_id = _device_id_of(action)
            skip = ("device__attribute_",) if device_id in seen_devices else ()
            seen_devices.add(device_id)
            records.append(_read_action(action, range_index, action_index, ncu_report, kinds, skip, keep))
    raise_on(errors)
    if read_ahead is not None:  # a damaged source view fails its later read, not the metrics
        for record in records:
            record.ahead = read_ahead_in_worker(report, (record.range_index, record.action_index), _code_of(record),
                                                read_ahead, unlocated)
    return records


def _start_disassembler(report: str, position: tuple[int, int]) -> None:
    """Start this worker's disassembler (~0.4 s, once per process) on the code of the action at
    `position`, where it has per-instruction counters, so that its later SASS reads go without
    that start: runs in a worker process. A failure is the later read's."""
    import ncu_report

    with suppress(Exception), native_errors():
        action = loaded_action(report, position)
        counters = action.metric_by_name("inst_executed")  # the Source Counters section's, per pc
        base = _function_base(action)
        if base is None or counters is None or counters.num_instances() == 0:
            return
        start_sass(report, position, _code_key(action.name(ncu_report.IAction.NameBase_MANGLED), base, position), base)


def _device_id_of(action) -> int:
    metric = action.metric_by_name("launch__device_id")
    return int(metric.as_uint64()) if metric is not None and metric.has_value() else 0


def _share_device_attributes(records: list[_ActionRecord]) -> None:
    """Give every action the device attributes read once per device and read task.

    Reports of ncu before about 2022 have no launch__sm_count: the SM count of a kernel is
    its device__attribute_multiprocessor_count, which only the action that read the
    attributes had, so every other kernel lost it (and the grid rules could not run).
    """
    per_device: dict[int, dict[str, tuple[float, str]]] = {}
    strings: dict[int, dict[str, str]] = {}
    for record in records:
        device_id = int(record.raw.get("launch__device_id", (0, ""))[0])
        attributes = {k: v for k, v in record.raw.items() if k.startswith("device__attribute_")}
        if attributes and device_id not in per_device:
            per_device[device_id] = attributes
            strings[device_id] = {k: v for k, v in record.strings.items() if k.startswith("device__attribute_")}
    for record in records:
        device_id = int(record.raw.get("launch__device_id", (0, ""))[0])
        for name, value in per_device.get(device_id, {}).items():
            record.raw.setdefault(name, value)
        for name, value in strings.get(device_id, {}).items():
            record.strings.setdefault(name, value)


def _positions(report: str) -> list[tuple[int, int]]:
    """(range, action) of every action of a report: runs in a worker process."""
    with native_errors() as errors:
        context = loaded(report)
        positions = [(r, a) for r in range(context.num_ranges()) for a in range(context.range_by_idx(r).num_actions())]
    raise_on(errors)
    return positions


def _read_all_actions(path: Path, native: NativeReport, keep: frozenset[str] | None,
                      read_ahead: SourceRequest | None, launches: Collection[int] | None = None) -> list[_ActionRecord]:
    """All actions (or those whose place among them is in `launches`), read by the report's
    workers: one, or up to _MAX_WORKERS for a large report.

    ncu-report's native action loading dominates (about 60 ms per H100 full-set action)
    and holds the GIL, so threads do not help; processes do. And the native reader aborts on
    some damaged reports (a protobuf CHECK failure, found by flipping bits): in a worker, that
    is a corrupt report, not the end of keet.
    """
    try:
        positions = native.call(0, _positions)
        if not positions:
            raise ProfileError(path, "report holds no profiled kernels (empty or corrupt)")
        launch_of = {position: index for index, position in enumerate(positions)}
        if launches is not None:
            chosen = set(launches)
            if missing := chosen - set(range(len(positions))):
                raise ProfileError(path, f"report has no launch {min(missing)} (it holds {len(positions)}: 0-{len(positions) - 1})")
            positions = [p for index, p in enumerate(positions) if index in chosen]
        workers = max(1, min(os.cpu_count() or 1, _MAX_WORKERS, len(positions) // _ACTIONS_PER_WORKER))
        native.use_workers(workers)
        # The actions are read in tasks of a few: between tasks a worker grown past its memory
        # limit gives way to a new one, and every task reads device attributes once (keyed to its
        # first action). Tasks are handed over as workers answer (IN_FLIGHT per slot; a slot that
        # has more to do takes fewer), each with the code known to have no file:line (finding out
        # parses the action's code, ~17 MB). Read ahead, a code's SASS is read in slot 0 as soon
        # as its first launch's counters are here (_learn).
        size = _ACTIONS_PER_TASK if read_ahead is None else _ACTIONS_PER_TASK_AHEAD
        tasks = deque(positions[i:i + size] for i in range(0, len(positions), size))
        unlocated: set[Hashable] = set()
        running: dict[Future, int] = {}

        # Read ahead with SASS on several workers, slot 0 reads the SASS (read_sass_ahead): its
        # first task only starts the disassembler (~0.4 s) while the others read every action,
        # and once asked for SASS it reads no more actions while another worker can.
        warm = read_ahead is not None and read_ahead.sass_for is not None and workers > 1

        def hand_over(slot: int) -> None:
            if tasks and (workers == 1 or slot not in native.sass_slots()):
                future = native.submit(slot, _read_actions, tasks.popleft(), keep, read_ahead, frozenset(unlocated))
                running[future] = slot

        for slot in range(workers):
            if warm and slot == 0:
                running[native.submit(slot, _start_disassembler, positions[0])] = slot
                continue
            for _ in range(IN_FLIGHT):
                hand_over(slot)
        parts = []
        while running:
            for future in wait(running, return_when=FIRST_COMPLETED).done:
                slot = running.pop(future)
                part = native.result(future) or []  # the disassembler's start answers None
                for record in part:
                    record.slot = slot
                    record.launch = launch_of[(record.range_index, record.action_index)]
                    if read_ahead is not None:
                        _learn(record, read_ahead, native, unlocated)
                parts.append(part)
                hand_over(slot)
    except BrokenProcessPool:
        raise ProfileError(path, "report is corrupt (the Nsight Compute reader crashed on it)") from None
    records = sorted((record for part in parts for record in part), key=lambda r: (r.range_index, r.action_index))
    _share_device_attributes(records)
    return records


def _kernel(kid: int, record: _ActionRecord, device_id: int, source_loader) -> Kernel:
    raw = record.raw

    def dims(prefix: str) -> tuple[int, int, int] | None:
        if f"launch__{prefix}_dim_x" not in raw:
            return None
        return tuple(int(raw[f"launch__{prefix}_dim_{axis}"][0]) if f"launch__{prefix}_dim_{axis}" in raw else 1 for axis in "xyz")

    attributes: dict[str, object] = {k: v for k, v in record.strings.items() if not k.startswith("device__attribute_")}
    attributes.update(record.opcodes)
    attributes["ncu_range"] = record.range_index
    attributes["ncu_action"] = record.action_index
    return Kernel(
        id=kid,
        name=record.name,
        mangled_name=record.mangled_name,
        function_name=record.function_name,
        grid=dims("grid"),
        block=dims("block"),
        device_id=device_id,
        stream=int(raw["launch__stream_id"][0]) if "launch__stream_id" in raw else None,
        range_name=f"range {record.range_index}",
        attributes=attributes,
        rule_results=_rule_results(record.rules),
        source_loader=source_loader,
    )


def _source_of(native: NativeReport, position: tuple[int, int], columns: frozenset[str] | None = None,
               locations: bool = True) -> SourceCounters | None:
    return native.source(position, columns, locations)


def _profile_from_records(path: Path, native: NativeReport, records: list[_ActionRecord]) -> Profile:
    kernels: list[Kernel] = []
    raw: dict[int, dict[str, tuple[float, str]]] = {}
    devices: dict[int, Device] = {}
    for record in records:
        kid = record.launch
        # A damaged payload can leave an action that the native reader returns without a
        # name or any metric: that is a corrupt report, not a kernel named None.
        if not isinstance(record.name, str) or not record.name or not (record.raw or record.strings):
            raise ProfileError(path, f"report is corrupt (kernel {kid} has no name or no metrics)")
        device_id = int(record.raw.get("launch__device_id", (0, ""))[0])
        if device_id not in devices:
            devices[device_id] = _device({**{k: v for k, (v, _) in record.raw.items()}, **record.strings})
        position = (record.range_index, record.action_index)
        loader = functools.partial(_source_of, native, position)
        loader.prefetch = functools.partial(native.prefetch, position)
        loader.takes_columns = True  # Kernel.source_columns: a reader may read a few columns alone
        kernels.append(_kernel(kid, record, device_id, loader))
        raw[kid] = record.raw
    profile = assemble(str(path), "ncu-rep", devices[kernels[0].device_id], kernels, raw, tool="Nsight Compute report", devices=devices)
    profile.releaser = native.release
    return profile
