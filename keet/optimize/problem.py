"""Optimize problems: what a kernel computes, on which shapes, with which inputs and tolerance.

A problem is a TOML file (profiles/optimize/*/problem.toml); keys are described in
docs/optimize.md. Inputs are generated here with numpy from a seed, so the reference and every
candidate see exactly the same bytes.
"""

from __future__ import annotations

import ast
import operator
import re
import tomllib
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from keet.errors import KeetError

# Default tolerances, |out - ref| <= atol + rtol * |ref|, by output dtype.
DEFAULT_TOLERANCE = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "int32": (0.0, 0.0),
    "uint32": (0.0, 0.0),
    "int64": (0.0, 0.0),
}
DTYPES = {name: np.dtype(name) for name in DEFAULT_TOLERANCE}
INITS = ("uniform", "normal", "cycle", "arange")
# Problem, buffer and shape names become file and folder names (the run folder, the inputs,
# the outputs): plain names only, so that none of them can point outside its folder.
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")


def plain_name(value: Any, where: str) -> str:
    """``value`` when it is a plain file name (letters, digits, '.', '_', '-'; no separator,
    not '.' or '..'), else KeetError naming where it came from."""
    if not isinstance(value, str) or not PLAIN_NAME.fullmatch(value):
        raise KeetError(f"{where}: {value!r} is not a plain name (letters, digits, '.', '_' and '-', starting with a letter "
                        "or digit, at most 100 characters)")
    return value


@dataclass(frozen=True)
class BufferSpec:
    name: str
    dtype: str
    count: str  # an expression over the dims: products and sums of names and integers
    init: str = "uniform"
    low: float = -1.0
    high: float = 1.0

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype].itemsize


@dataclass(frozen=True)
class Shape:
    label: str
    dims: dict[str, int]
    seed: int


@dataclass
class Problem:
    name: str
    kernel: str
    dims: list[str]
    inputs: list[BufferSpec]
    outputs: list[BufferSpec]
    shapes: list[Shape]
    timing: Shape
    rtol: float
    atol: float
    deterministic: bool = True
    path: Path | None = None
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def dim_values(self, shape: Shape) -> list[int]:
        return [shape.dims[name] for name in self.dims]

    def count(self, buffer: BufferSpec, shape: Shape) -> int:
        return evaluate_count(buffer.count, shape.dims)


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def evaluate_count(expression: str, dims: dict[str, int]) -> int:
    """Value of a count expression such as ``rows*cols`` or ``32*m``: integers, dim names,
    + - * and // only (parsed with ast, never evaluated as code)."""

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in dims:
                raise KeetError(f"count {expression!r} names {node.id!r}, which is not a dim")
            return dims[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        raise KeetError(f"count {expression!r}: only integers, dim names and + - * // are allowed")

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise KeetError(f"count {expression!r} is not an expression") from None
    return int(value(tree.body))


def _buffer(entry: dict[str, Any], default_dtype: str, where: str) -> BufferSpec:
    dtype = entry.get("dtype", default_dtype)
    if dtype not in DTYPES:
        raise KeetError(f"{where}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    init = entry.get("init", "uniform")
    if init not in INITS:
        raise KeetError(f"{where}: init {init!r} is not one of {', '.join(INITS)}")
    return BufferSpec(plain_name(entry["name"], f"{where}: name"), dtype, str(entry["count"]), init, float(entry.get("low", -1.0)), float(entry.get("high", 1.0)))


def _shape(entry: dict[str, Any], dims: list[str], label: str, where: str) -> Shape:
    missing = [d for d in dims if d not in entry]
    if missing:
        raise KeetError(f"{where}: shape {label} lacks {', '.join(missing)}")
    return Shape(plain_name(entry.get("label", label), f"{where}: shape label"), {d: int(entry[d]) for d in dims}, int(entry.get("seed", 1)))


def load_problem(path: str | Path) -> Problem:
    """Read a problem TOML; errors name the file and the key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise KeetError(f"{path}: {exc}") from None
    try:
        dims = list(data["dims"])
        dtype = data.get("dtype", "float32")
        inputs = [_buffer(e, dtype, f"{path}: inputs") for e in data["inputs"]]
        outputs = [_buffer(e, dtype, f"{path}: outputs") for e in data["outputs"]]
        shapes = [_shape(e, dims, f"shape{i}", str(path)) for i, e in enumerate(data["shapes"])]
        timing = _shape(data["timing"], dims, "timing", str(path))
        rtol, atol = DEFAULT_TOLERANCE[outputs[0].dtype]
        kernel = data["kernel"]
        if not isinstance(kernel, str) or not IDENTIFIER.fullmatch(kernel):
            raise KeetError(f"{path}: kernel {kernel!r} is not a C identifier")
        return Problem(
            name=plain_name(data["name"], f"{path}: name"),
            kernel=kernel,
            dims=dims,
            inputs=inputs,
            outputs=outputs,
            shapes=shapes,
            timing=timing,
            rtol=float(data.get("rtol", rtol)),
            atol=float(data.get("atol", atol)),
            deterministic=bool(data.get("deterministic", True)),
            path=path,
            notes=data.get("notes", ""),
        )
    except KeyError as exc:
        raise KeetError(f"{path}: missing key {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise KeetError(f"{path}: {exc}") from None


def generate_input(buffer: BufferSpec, count: int, seed: int) -> np.ndarray:
    """The input's values for one shape and seed (the same on every machine)."""
    rng = np.random.default_rng([seed, zlib_crc(buffer.name)])
    dtype = DTYPES[buffer.dtype]
    if buffer.init == "uniform":
        if dtype.kind == "f":
            return rng.uniform(buffer.low, buffer.high, count).astype(dtype)
        # integers: [low, high] inclusive (the defaults give -1, 0, 1), never below 0 when unsigned
        low = max(int(buffer.low), 0) if dtype.kind == "u" else int(buffer.low)
        return rng.integers(low, max(int(buffer.high), low), count, endpoint=True).astype(dtype)
    if buffer.init == "normal":
        return rng.standard_normal(count).astype(dtype)
    if buffer.init == "arange":
        return np.arange(count).astype(dtype)
    # "cycle": next[] of a random permutation that is one cycle through all elements
    order = rng.permutation(count)
    following = np.empty(count, dtype=np.int64)
    following[order] = np.roll(order, -1)
    return following.astype(dtype)


def zlib_crc(text: str) -> int:
    """A stable per-buffer seed component (hash() differs between processes)."""
    return zlib.crc32(text.encode())


def describe(problem: Problem) -> str:
    """One line for logs and prompts."""
    shapes = "; ".join(", ".join(f"{k}={v}" for k, v in s.dims.items()) for s in problem.shapes)
    return (
        f"{problem.name}: kernel {problem.kernel}, dims {', '.join(problem.dims)}; "
        f"inputs {', '.join(f'{b.name}[{b.count}] {b.dtype}' for b in problem.inputs)}; "
        f"outputs {', '.join(f'{b.name}[{b.count}] {b.dtype}' for b in problem.outputs)}; "
        f"checked shapes: {shapes}; tolerance rtol {problem.rtol:g} atol {problem.atol:g}; "
        f"timed at {', '.join(f'{k}={v}' for k, v in problem.timing.dims.items())}"
    )
