"""A launch given on the command line: --kernel, --grid, --block, --smem, --arg NAME=VALUE, --buffer NAME=BYTES.

For files without a main (no launch to discover), or to override what discovery found.
Parameter names are the kernel's C++ parameter names, read from its __global__ declaration in
the source; the PTX names (``kernel_param_3``) and positions (``3``) are accepted too. Pointer
parameters take a buffer (``--buffer NAME=BYTES``, e.g. 64MiB; its content is uninitialized:
zeros), the others a value (``--arg NAME=VALUE``: an integer in any Python base, a float, true
or false), packed little-endian at the size of the PTX parameter. Every mistake is a
LaunchSpecError (a KeetError: one line, exit status 2 through the CLI).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from pathlib import Path

from keet.errors import KeetError
from keet.names import function_base_name
from perfmodel.static.compile import Compiled, entry_params
from perfmodel.static.launches import Arg, Buffer, Launch, Pointer

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
FAKE_BASE = 0x7F00_0000_0000  # pointer values of spec buffers: FAKE_BASE + id << 36
_SIZE_SUFFIX = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000**2, "mb": 1000**2, "mib": 1 << 20,
                "g": 1000**3, "gb": 1000**3, "gib": 1 << 30}


class LaunchSpecError(KeetError):
    """A bad --kernel/--grid/--block/--smem/--arg/--buffer."""


@dataclass(frozen=True)
class CParam:
    name: str
    type: str

    @property
    def pointer(self) -> bool:
        return "*" in self.type or "[" in self.type

    @property
    def floating(self) -> bool:
        return bool(re.search(r"\b(float|double|half|__half|__nv_bfloat16)\b", self.type)) and not self.pointer


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", text)


def source_params(source: str, function: str) -> list[CParam] | None:
    """The parameters of __global__ FUNCTION in SOURCE (None when the declaration is not found)."""
    text = _strip_comments(source)
    for m in re.finditer(r"__global__\b", text):
        head = re.compile(rf"\b{re.escape(function)}\s*\(")
        found = head.search(text, m.end())
        if not found or any(c in text[m.end():found.start()] for c in ";{}"):
            continue
        depth, i = 1, found.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        inner = text[found.end():i - 1]
        parts, depth, cur = [], 0, ""
        for c in inner:
            if c in "(<[":
                depth += 1
            elif c in ")>]":
                depth -= 1
            if c == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += c
        if cur.strip():
            parts.append(cur)
        params = []
        for part in parts:
            part = part.split("=")[0].strip()
            if part in ("", "void"):
                continue
            words = re.match(r"(.*?)([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)$", part, re.DOTALL)
            if not words:
                return None
            params.append(CParam(name=words.group(2), type=(words.group(1) + words.group(3)).strip()))
        return params
    return None


def parse_dims(text: str, what: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    parts = [p.strip() for p in str(text).split(",")]
    if not 1 <= len(parts) <= 3:
        raise LaunchSpecError(f"{what} {text!r}: give X, X,Y or X,Y,Z")
    dims = []
    for p in parts:
        try:
            value = int(p, 0)
        except ValueError:
            raise LaunchSpecError(f"{what} {text!r}: {p!r} is not an integer") from None
        if value < 1:
            raise LaunchSpecError(f"{what} {text!r}: every dimension must be at least 1")
        dims.append(value)
    dims += [1] * (3 - len(dims))
    for axis, (value, limit) in enumerate(zip(dims, limits)):
        if value > limit:
            raise LaunchSpecError(f"{what} {text!r}: dimension {'xyz'[axis]} = {value} exceeds the CUDA limit {limit}")
    return dims[0], dims[1], dims[2]


def parse_bytes(text: str, what: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _SIZE_SUFFIX:
        raise LaunchSpecError(f"{what} {text!r}: give a byte count such as 4096, 64KiB or 1GiB")
    return int(m.group(1)) * _SIZE_SUFFIX[m.group(2).lower()]


def _pairs(items: list[str] | tuple[str, ...], option: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise LaunchSpecError(f"{option} {item!r}: give NAME=VALUE")
        out.append((name.strip(), value.strip()))
    return out


def _pack(value: str, param: CParam | None, size: int, name: str) -> bytes:
    text = value.strip().lower()
    if text in ("true", "false"):
        number: int | float = int(text == "true")
    else:
        try:
            number = int(text, 0)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise LaunchSpecError(f"--arg {name}={value}: not a number") from None
    floating = param.floating if param is not None else isinstance(number, float)
    if floating:
        fmt = {2: "<e", 4: "<f", 8: "<d"}.get(size)
        if fmt is None:
            raise LaunchSpecError(f"--arg {name}={value}: a {size}-byte floating-point parameter is not supported")
        return struct.pack(fmt, float(number))
    if isinstance(number, float):
        if not number.is_integer():
            raise LaunchSpecError(f"--arg {name}={value}: parameter {name} ({param.type if param else 'integer'}) takes an integer")
        number = int(number)
    if size not in (1, 2, 4, 8):
        raise LaunchSpecError(f"--arg {name}={value}: a {size}-byte parameter (a struct?) cannot be given on the command line")
    unsigned = param is not None and bool(re.search(r"\b(unsigned|size_t|uint\w*|bool)\b", param.type))
    lo, hi = (0, 2 ** (8 * size) - 1) if unsigned else (-(2 ** (8 * size - 1)), 2 ** (8 * size) - 1)
    if not lo <= number <= hi:
        raise LaunchSpecError(f"--arg {name}={value}: out of range for a {size}-byte {param.type if param else 'integer'}")
    return (number % 2 ** (8 * size)).to_bytes(size, "little")


def launch_from_spec(compiled: Compiled, *, kernel: str | None = None, grid: str | None = None, block: str | None = None,
                     smem: str | int | None = None, args: list[str] | tuple[str, ...] = (),
                     buffers: list[str] | tuple[str, ...] = (), base: Launch | None = None) -> Launch:
    """The launch the flags describe; with BASE (a discovered launch), the flags override its values."""
    if base is not None and kernel is None:
        kernel = base.kernel
    if kernel is None:
        if len(compiled.kernels) != 1:
            names = ", ".join(sorted(k.demangled for k in compiled.kernels.values())) or "none"
            raise LaunchSpecError(f"{compiled.source}: name the kernel with --kernel (kernels: {names})")
        kernel = next(iter(compiled.kernels))
    try:
        res = compiled.kernel(kernel)
    except KeetError as exc:
        raise LaunchSpecError(str(exc)) from None
    ptx_params = entry_params(compiled.ptx).get(res.name, [])
    function = function_base_name(res.demangled)
    try:
        source_text = Path(compiled.source).read_text(errors="replace")
    except OSError:
        source_text = ""
    cparams = source_params(source_text, function)
    if cparams is not None and len(cparams) != len(ptx_params):
        cparams = None  # e.g. a struct passed as several PTX parameters: use the PTX names only

    if base is None and (grid is None or block is None):
        raise LaunchSpecError(f"{compiled.source}: give --grid and --block for kernel {function}")
    g = parse_dims(grid, "--grid", MAX_GRID) if grid is not None else base.grid
    b = parse_dims(block, "--block", MAX_BLOCK) if block is not None else base.block
    if b[0] * b[1] * b[2] > MAX_THREADS_PER_BLOCK:
        raise LaunchSpecError(f"--block {block}: {b[0] * b[1] * b[2]} threads per block exceed the CUDA limit {MAX_THREADS_PER_BLOCK}")
    dyn = parse_bytes(str(smem), "--smem") if smem is not None else (base.dynamic_shared_bytes if base else 0)

    def index_of(name: str, option: str) -> int:
        if cparams is not None:
            for i, p in enumerate(cparams):
                if p.name == name:
                    return i
        for i, p in enumerate(ptx_params):
            if p.name == name:
                return i
        if name.isdigit() and int(name) < len(ptx_params):
            return int(name)
        known = ", ".join(p.name for p in cparams) if cparams is not None else ", ".join(p.name for p in ptx_params)
        raise LaunchSpecError(f"{option} {name}=...: kernel {function} has no parameter {name} (parameters: {known or 'none'})")

    def label(i: int) -> str:
        return cparams[i].name if cparams is not None else ptx_params[i].name

    given_args = {index_of(n, "--arg"): v for n, v in _pairs(args, "--arg")}
    given_buffers = {}
    for n, v in _pairs(buffers, "--buffer"):
        given_buffers[index_of(n, "--buffer")] = parse_bytes(v, f"--buffer {n}=")

    both = sorted(set(given_args) & set(given_buffers))
    if both:
        raise LaunchSpecError(f"parameter {label(both[0])} is given both with --arg and --buffer")
    new_args: list[Arg] = list(base.args) if base is not None else []
    new_buffers: dict[int, Buffer] = dict(base.buffers) if base is not None else {}
    next_id = max([0, *new_buffers]) + 1
    missing = []
    for i, p in enumerate(ptx_params):
        cp = cparams[i] if cparams is not None else None
        is_pointer = cp.pointer if cp is not None else None
        if i in given_buffers:
            if is_pointer is False or p.size != 8:
                raise LaunchSpecError(f"--buffer {label(i)}=...: parameter {label(i)} ({cp.type if cp else p.type}) is not a pointer; use --arg")
            buf = Buffer(id=next_id, size=given_buffers[i], kind="device", content="uninitialized")
            next_id += 1
            new_buffers[buf.id] = buf
            arg = Arg(name=p.name, size=8, raw=(FAKE_BASE + (buf.id << 36)).to_bytes(8, "little"), pointers=(Pointer(0, buf.id, 0),))
        elif i in given_args:
            if is_pointer:
                raise LaunchSpecError(f"--arg {label(i)}=...: parameter {label(i)} ({cp.type}) is a pointer; give its size with --buffer {label(i)}=BYTES")
            arg = Arg(name=p.name, size=p.size, raw=_pack(given_args[i], cp, p.size, label(i)))
        elif base is not None and i < len(new_args):
            continue
        else:
            kind = "--buffer" if is_pointer else "--arg"
            missing.append(f"{kind} {label(i)}=" + ("BYTES" if is_pointer else "VALUE"))
            continue
        if i < len(new_args):
            new_args[i] = arg
        else:
            new_args.append(arg)
    if missing:
        raise LaunchSpecError(f"kernel {function} needs {', '.join(missing)}")
    used = {ptr.buffer for a in new_args for ptr in a.pointers}
    launch = Launch(kernel=res.name, name=res.demangled, grid=g, block=b, dynamic_shared_bytes=dyn, args=new_args,
                    buffers={k: v for k, v in new_buffers.items() if k in used})
    return replace(launch, seq=base.seq, count=base.count) if base is not None else launch
