"""Interpret a kernel's PTX on a sample of blocks to count its dynamic work.

One warp is 32 lanes held as numpy arrays (one value per lane). Registers are stored as raw
bits in an unsigned array of their declared width (``.pred`` as bool) and viewed as the type
each instruction names, so ``mov.b32`` of a float and ``add.s32`` of the same register both
work as in PTX.

Divergence. Every lane has its own PC; at each step the warp executes the instruction at the
*smallest* PC of its live lanes, for the lanes whose PC it is (min-PC scheduling). This is
simpler than an active-mask stack with reconvergence at the immediate post-dominator and,
unlike a stack, needs no control-flow analysis: the result of every lane is exactly what
sequential per-thread execution gives. For the structured code nvcc emits (forward branches
around if/else bodies, backward branches closing loops, the join below both paths) the
smallest-PC group is the one the hardware runs first and the lanes meet again at the join,
so warp instruction counts are those of post-dominator reconvergence. It differs only for
unstructured layouts (a block placed below the join that jumps back up), where it may split
a warp into more issue groups than the hardware would: warp instruction counts can then be
slightly high, never the values computed.

Barriers. The warps of a block run in phases: each warp runs until it reaches ``bar.sync``
(or exits); when every live warp waits, all are released. Shared memory written before a
barrier is therefore seen by every warp after it. Exited warps do not hold a barrier back.

Memory. Global memory is named numpy byte buffers given by the caller; a pointer argument is
a :class:`Pointer` (buffer name, byte offset). Each buffer gets a base address in a flat
address space (``GLOBAL_BASE + i * GLOBAL_STRIDE``); an access outside every buffer raises
:class:`MemoryFault`. Shared memory is one byte array per block (static variables at the
offsets the parser assigns, dynamic shared memory after them); local memory is private per
lane. Generic addresses map the shared window at ``SHARED_WINDOW`` and the local window at
``LOCAL_WINDOW`` (``cvta`` converts); global addresses are generic addresses unchanged.
Atomics are applied lane by lane in lane order.

Counting, per warp-level instruction issued (a group of lanes at one PC), with the PTX to
SASS pipe mapping in :data:`PIPE_OF_PTX` (see :func:`_costs` for its approximations):
warp instructions per pipe, thread-level FLOPs per precision (fma = 2), global requests (one
per warp-level ld/st with an active lane, as Nsight Compute counts them; a 128-bit access is
one request) and 32-byte sectors (distinct sectors of the bytes the active lanes touch),
shared wavefronts (max over the 32 four-byte banks of the distinct words touched; the same
word read by many lanes is a broadcast and costs nothing), global atomics (one warp
instruction, one L2 atomic sector operation per active lane, as measured on the zoo's
atomic_contention kernel) and barriers. :func:`count_work` extrapolates the sampled blocks to
the whole grid.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import numpy as np

from perfmodel.static.load_chains import load_waits
from perfmodel.static.ptx import (
    TYPE_BITS,
    Addr,
    Imm,
    Instruction,
    Kernel,
    Raw,
    Reg,
    Sym,
    Vec,
)

WARP = 32
GLOBAL_BASE = 1 << 40
GLOBAL_STRIDE = 1 << 36  # address room per buffer
SHARED_WINDOW = 1 << 32
LOCAL_WINDOW = 1 << 34
WINDOW_SIZE = 1 << 30
EXITED = np.int64(1 << 40)


# cooperative groups' grid workspace (%envreg1:%envreg2, cg::this_grid()): a buffer of its own. A
# sampled interpretation has only some of the blocks, so grid.sync()'s barrier (atom.add to it,
# then spin reading it until its top bit flips) is made to pass at once: a lane that reads the
# barrier word sees the value its own atom.add found there with the top bit flipped.
GRID_WORKSPACE = "__grid_workspace"
CLOCK_PER_READ = 1_000_000  # %clock, %clock64, %globaltimer advance this much at each read

# device functions a call may name that are done as nothing, returning 0: printf, assert's report
NO_OP_CALLS = {"vprintf", "__assertfail"}
# The device runtime (dynamic parallelism: <<<>>> in device code, cudaMalloc/cudaFree/streams in
# device code, built with -rdc) and the device heap (malloc/free, new/delete): calls the
# interpreter carries out (Interpreter._runtime_call). A device-side launch is
# cudaGetParameterBufferV2(kernel, grid, block, shared bytes) -> a buffer the caller fills with
# the arguments, then cudaLaunchDeviceV2(buffer, stream): it is recorded (Interpreter.device_launches),
# not run. Their own time on the GPU is not modelled (each counts as one instruction).
DEVICE_RUNTIME_CALLS = {
    "__cudaCDP2GetParameterBufferV2": "parameter_buffer", "cudaGetParameterBufferV2": "parameter_buffer",
    "__cudaCDP2LaunchDeviceV2": "launch", "cudaLaunchDeviceV2": "launch",
    "__cudaCDP2Malloc": "cuda_malloc", "malloc": "malloc",
    "__cudaCDP2Free": "success", "free": "success",
    "__cudaCDP2StreamCreateWithFlags": "success", "__cudaCDP2StreamDestroy": "success",
    "__cudaCDP2GetLastError": "success", "__cudaCDP2PeekAtLastError": "success",
    "__cudaCDP2EventCreateWithFlags": "success", "__cudaCDP2EventRecord": "success", "__cudaCDP2EventDestroy": "success",
}
PARAM_BUFFER_BYTES = 4096  # the device runtime's limit on a kernel's parameters
CALL_PARAM_BYTES = 64  # room per .param of a call sequence (per lane)
FUNCTION_BASE = 1 << 60  # addresses of the module's kernels (a device-side launch names its kernel by address)


@dataclass(frozen=True)
class DeviceLaunch:
    """A kernel launch made from device code, as the interpreted lanes made it."""
    kernel: str  # mangled name
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    params: bytes  # the parameter buffer the launching thread filled (PARAM_BUFFER_BYTES)


class InterpreterError(RuntimeError):
    """The kernel cannot be interpreted with the given arguments."""


class UnsupportedInstruction(InterpreterError):
    """A PTX instruction (or form of one) the interpreter does not implement."""

    def __init__(self, inst: Instruction, why: str = ""):
        self.instruction = inst.text
        self.line = inst.line
        self.why = why
        super().__init__(f"unsupported PTX instruction at line {inst.line}: {inst.text!r}" + (f" ({why})" if why else ""))


class MemoryFault(InterpreterError):
    """An access outside every buffer (or outside shared/local memory)."""


@dataclass(frozen=True)
class Pointer:
    buffer: str
    offset: int = 0


_DTYPE = {"b8": np.uint8, "u8": np.uint8, "s8": np.int8, "b16": np.uint16, "u16": np.uint16, "s16": np.int16,
          "f16": np.float16, "bf16": np.uint16, "b32": np.uint32, "u32": np.uint32, "s32": np.int32, "f32": np.float32,
          "f16x2": np.uint32, "bf16x2": np.uint32, "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f64": np.float64,
          "pred": np.bool_}
_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_TYPES = set(_DTYPE)
_SIGNED = {"s8", "s16", "s32", "s64"}
_FLOAT = {"f16", "f32", "f64"}
_HALVES = {"f16", "bf16", "f16x2", "bf16x2"}  # 16-bit floats: computed in float64, rounded once
_NOT_NUMPY = {"bf16", "f16x2", "bf16x2"}  # held as raw bits: numpy arithmetic on them would be wrong


def _satf(r: np.ndarray) -> np.ndarray:
    """.sat of a float result: clamp to [0, 1], NaN and -0 -> +0."""
    return np.where(np.isnan(r), 0, np.clip(r, 0, 1)).astype(r.dtype) + r.dtype.type(0)
_IGNORED_MODS = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "acquire", "release", "acq_rel",
                 "weak", "gpu", "cta", "sys", "cluster", "uni", "aligned", "sync", "approx", "full", "ftz", "rn", "rz",
                 "rm", "rp", "rni", "rzi", "rmi", "rpi", "lo", "noftz"}
_L1_BYPASS = {"cg", "cv", "volatile"}  # loads served by the L2, never allocated in L1
_SPACES = {"global", "shared", "local", "param", "const", "generic"}


def _bits(t: str) -> int:
    return TYPE_BITS[t]


def _as(bits: np.ndarray, t: str) -> np.ndarray:
    """View raw register bits as PTX type t."""
    dt = _DTYPE[t]
    if t == "pred":
        return bits.astype(bool) if bits.dtype != np.bool_ else bits
    if bits.dtype == np.bool_:
        return bits.astype(dt)
    w = _bits(t) if t not in ("f16x2", "bf16x2") else 32
    if bits.dtype.itemsize * 8 != w:
        bits = bits.astype(_UNSIGNED[w])
    return bits.view(dt)


def _to_bits(value: np.ndarray, t: str) -> np.ndarray:
    if t == "pred":
        return value.astype(bool)
    dt = _DTYPE[t]
    if value.dtype != dt:
        value = value.astype(dt)
    return value.view(_UNSIGNED[dt().itemsize * 8])


def _imm_array(imm: Imm, t: str, n: int) -> np.ndarray:
    dt = _DTYPE[t]
    if t == "pred":
        return np.full(n, bool(imm.value))
    if imm.is_float:
        f = struct.unpack("<f", struct.pack("<I", imm.value))[0] if imm.bits == 32 else struct.unpack("<d", struct.pack("<Q", imm.value))[0]
        if t in _FLOAT:
            return np.full(n, f, dtype=dt)
        # raw bits moved into an integer register (mov.b32 %r, 0f3F800000)
        return np.full(n, imm.value & ((1 << _bits(t)) - 1), dtype=_UNSIGNED[_bits(t)]).view(dt)
    if t in _FLOAT:
        return np.full(n, float(imm.value), dtype=dt)
    w = _bits(t)
    return np.full(n, imm.value & ((1 << w) - 1), dtype=_UNSIGNED[w]).view(dt)


# --------------------------------------------------------------------------- rounding
# Floating-point formats as (significand bits, minimum normal exponent, largest finite value).
_FORMATS = {"f16": (11, -14, 65504.0), "bf16": (8, -126, float.fromhex("0x1.fep127")),
            "f32": (24, -126, float(np.finfo(np.float32).max)), "f64": (53, -1022, float(np.finfo(np.float64).max))}
_ROUNDINGS = ("rn", "rz", "rm", "rp")


def _rounding(mods) -> str:
    r = [m for m in mods if m in _ROUNDINGS]
    return r[0] if r else "rn"


def _two_sum(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(x + y) and the exact error e = x + y - s (float64, Knuth; e = 0 where s is not finite)."""
    s = x + y
    bb = s - x
    e = (x - (s - bb)) + (y - bb)
    return s, np.where(np.isfinite(e), e, 0.0)


def _round_to(s: np.ndarray, e: np.ndarray | float, mode: str, fmt: str) -> np.ndarray:
    """The exact value s + e rounded to format fmt ("f16", "bf16", "f32") in mode rn/rz/rm/rp,
    as float64. s is float64; e only needs the sign of (exact - s) and a magnitude below half
    a float64 ulp of s (e = 0: s is exact). Subnormals of the format are kept (no flush)."""
    p, emin, big = _FORMATS[fmt]
    s = np.asarray(s, dtype=np.float64)
    e = np.broadcast_to(np.asarray(e, dtype=np.float64), s.shape)
    with np.errstate(all="ignore"):
        e = np.where(np.isfinite(e), e, 0.0)
        finite = np.isfinite(s)
        _, k = np.frexp(np.where(finite & (s != 0), s, 1.0))  # |s| in [2^(k-1), 2^k)
        q = np.ldexp(1.0, np.maximum(k - 1, emin) - (p - 1))  # the format's ulp at s
        x = s / q  # exact (a power-of-two scaling)
        n = np.floor(x)
        frac = x - n
        es = np.sign(e)
        if mode == "rn":
            up = (frac > 0.5) | ((frac == 0.5) & ((es > 0) | ((es == 0) & (np.fmod(n, 2) != 0))))
            r = (n + up) * q
        else:
            if mode == "rz":
                toward = np.where(s > 0, -1.0, 1.0)  # direction of zero
            elif mode == "rm":
                toward = np.full(s.shape, -1.0)
            else:
                toward = np.full(s.shape, 1.0)
            # floor/ceil of x, and one step further when x is on the grid but the exact value is past it
            r = np.where(toward < 0, n, np.where(frac > 0, n + 1, n))
            on_grid = frac == 0
            step_down = on_grid & (es < 0) & (toward < 0)
            step_up = on_grid & (es > 0) & (toward > 0)
            # a step that leaves a binade downwards in magnitude is half as long
            pow2 = (np.abs(x) == 2.0 ** (p - 1)) & (np.maximum(k - 1, emin) == k - 1) & (k - 1 > emin)
            down_len = np.where(pow2 & (s > 0), 0.5, 1.0)
            up_len = np.where(pow2 & (s < 0), 0.5, 1.0)
            r = (r - step_down * down_len + step_up * up_len) * q
            r = np.where((s == 0) & (es == 0), s, r)
        if mode == "rn":
            r = np.where(np.abs(r) > big, np.copysign(np.inf, s), r)
        else:
            to_inf = (mode == "rp") & (s > 0) | (mode == "rm") & (s < 0)
            r = np.where(np.abs(r) > big, np.where(to_inf, np.copysign(np.inf, s), np.copysign(big, s)), r)
        r = np.where(r == 0, np.copysign(0.0, np.where(s == 0, np.where(es == 0, s, es), s)), r)
        return np.where(finite, r, s)


def _round_f32(s: np.ndarray, e: np.ndarray | float, mode: str) -> np.ndarray:
    """float32 result of an exact value s + e (see _round_to): the fast float64 -> float32 cast
    when it is right (round to nearest, s not a float32 midpoint, no underflow)."""
    if mode == "rn":
        f = s.astype(np.float32)
        mid = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
        if not (mid.any() or ((np.abs(s) < 2.0 ** -125) & (s != 0)).any()):
            return f
    return _round_to(s, e, mode, "f32").astype(np.float32)


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def _to_bf16(s: np.ndarray, e: np.ndarray | float, mode: str) -> np.ndarray:
    """bf16 bits (uint16) of the exact value s + e; NaN -> 0x7FFF (the GPU's canonical NaN)."""
    f = _round_to(s, e, mode, "bf16").astype(np.float32)
    bits = (f.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(s), np.uint16(0x7FFF), bits)


def _to_f16(s: np.ndarray, e: np.ndarray | float, mode: str) -> np.ndarray:
    """float16 of the exact value s + e; NaN -> 0x7FFF (the GPU's canonical NaN)."""
    f = _round_to(s, e, mode, "f16").astype(np.float16)
    return np.where(np.isnan(s), np.uint16(0x7FFF).view(np.float16), f)


_CANONICAL_NAN16 = np.uint16(0x7FFF)  # what the GPU returns for a NaN result of f16/bf16 min, max


def _half_f64(bits: np.ndarray, half: str) -> np.ndarray:
    """uint16 bits of f16 or bf16 values -> their float64 values (exact)."""
    return (_bf16_to_f32(bits) if half == "bf16" else bits.view(np.float16)).astype(np.float64)


def _per_half(fn, packed: bool):
    """fn over uint16 halves; for packed (x2) types applied to the low and high halves of uint32 words."""
    if not packed:
        return fn

    def both(*ops):
        lo = fn(*[(o & np.uint32(0xFFFF)).astype(np.uint16) for o in ops])
        hi = fn(*[(o >> np.uint32(16)).astype(np.uint16) for o in ops])
        return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
    return both


def _half_minmax(half: str, is_max: bool, nan: bool):
    """min/max of f16/bf16 bits: the non-NaN operand when one is NaN (the canonical NaN when
    both are, or either with .NaN), -0 below +0."""
    def one(a, b):
        x, y = _half_f64(a, half), _half_f64(b, half)
        sx, sy = np.signbit(x), np.signbit(y)
        take_a = ((x > y) | ((x == y) & sy & ~sx)) if is_max else ((x < y) | ((x == y) & sx & ~sy))
        r = np.where(take_a, a, b)
        na, nb = np.isnan(x), np.isnan(y)
        r = np.where(na & ~nb, b, np.where(nb & ~na, a, r))
        return np.where((na | nb) if nan else (na & nb), _CANONICAL_NAN16, r).astype(np.uint16)
    return one


def _fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a*b + c with one rounding (float64). Error-free transforms give a candidate; lanes where
    it could be off (near a rounding midpoint, or where the product's error is not exact:
    tiny or huge operands) are recomputed exactly with Python fractions."""
    from fractions import Fraction

    with np.errstate(all="ignore"):
        p = a * b
        split = 134217729.0
        def halves(x):
            t = split * x
            hi = t - (t - x)
            return hi, x - hi
        ah, al = halves(a)
        bh, bl = halves(b)
        pe = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # exact: a*b = p + pe
        s, se = _two_sum(p, c)
        t = se + pe
        r = s + t
        ulp = np.spacing(np.abs(r))
        z = (s - r) + t  # exact value - r, within ~ulp(t)
        risky = np.abs(np.abs(z) - ulp / 2) <= (np.spacing(np.abs(t)) + np.spacing(np.abs(z))) * 4
        risky |= np.frexp(r)[0] == 0.5  # a power of two: the ulp below is half the one above
        scale = np.maximum(np.abs(a), 1e-300) * np.maximum(np.abs(b), 1e-300)
        risky |= (scale > 2.0 ** 990) | (np.abs(p) < 2.0 ** -960) | (np.abs(r) < 2.0 ** -960) | ~np.isfinite(pe)
        risky &= np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & np.isfinite(p)
        r = np.where(np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & np.isfinite(p), r, a * b + c)
    for i in np.nonzero(risky)[0]:
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        r[i] = float(exact) if exact != 0 else float(a[i]) * float(b[i]) + float(c[i])
    return r


# --------------------------------------------------------------------------- wmma geometry
WMMA_SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16),
               "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4)}
# fragment element type -> bytes (tf32 is held as f32 bits)
WMMA_AB = {"f16": 2, "bf16": 2, "tf32": 4, "f64": 8, "u8": 1, "s8": 1}
WMMA_CD = {"f32": 4, "f16": 2, "s32": 4, "f64": 8}
# the SASS MMA of a wmma.mma by its a/b type, with that instruction's m, n, k: a wmma.mma is
# M N K / (m n k) of them (m16n16k16 f16: 2 HMMA.16816; m8n8k4 f64: 1 DMMA.884)
WMMA_SASS = {"f16": ("HMMA.16816", 16, 8, 16), "bf16": ("HMMA.16816", 16, 8, 16), "tf32": ("HMMA.1688", 16, 8, 8),
             "f64": ("DMMA.884", 8, 8, 4), "u8": ("IMMA.16816", 16, 8, 16), "s8": ("IMMA.16816", 16, 8, 16)}


def wmma_block(frag: str, layout: str, mnk: tuple[int, int, int]) -> tuple[int, int]:
    """(rows, columns) of a wmma fragment's block as laid out in memory."""
    m, n, k = mnk
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[frag]
    return (rows, cols) if layout == "row" else (cols, rows)


def wmma_accesses(frag: str, rows: int, row_bytes: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """[(bytes per lane, per-lane memory row, per-lane byte column)] of one fragment load or
    store: a/b 16 bytes per lane (LDSM-like), c/d 8, fewer for a smaller block."""
    total = rows * row_bytes
    size = min(16 if frag in ("a", "b") else 8, row_bytes, max(1, total // WARP))
    per_row = row_bytes // size
    lane = np.arange(WARP)
    return [(size, (WARP * j + lane) // per_row, size * ((WARP * j + lane) % per_row))
            for j in range(max(1, total // (WARP * size)))]


def _wmma_costs(mods: tuple[str, ...]) -> list[tuple[str, float]]:
    """Pipe costs of a wmma instruction: the tensor pipe's SASS MMAs of a wmma.mma, one LSU
    access per wmma_accesses entry of a load or store."""
    shape = next((WMMA_SHAPES[m] for m in mods if m in WMMA_SHAPES), (16, 16, 16))
    if "mma" in mods:
        at = next((m for m in mods[mods.index("mma"):] if m in WMMA_SASS and m != "f64"), "f64" if "f64" in mods else "f16")
        _, sm, sn, sk = WMMA_SASS[at]
        return [("tensor", float(max(1, shape[0] * shape[1] * shape[2] // (sm * sn * sk))))]
    frag = next((m for m in ("a", "b", "c", "d") if m in mods), "c")
    t = next((m for m in mods if m in (WMMA_AB if frag in ("a", "b") else WMMA_CD)), "f32")
    es = (WMMA_AB if frag in ("a", "b") else WMMA_CD)[t]
    rows, cols = wmma_block(frag, "row" if "row" in mods else "col", shape)
    return [("lsu", float(len(wmma_accesses(frag, rows, cols * es))))]


# --------------------------------------------------------------------------- pipe mapping
# PTX opcode -> (pipe, SASS instructions per PTX instruction). Approximations (documented):
# 64-bit integer add/sub/logic/shift/compare are two ALU instructions (IADD3 + IADD3.X, ...);
# mul.wide/mad.wide one IMAD.WIDE; mul.lo.s64 three IMADs; integer div/rem ~ the compiler's
# 20-instruction sequence; div.rn.f32/f64 and sqrt.rn/rcp.rn are MUFU + Newton steps;
# cvta.to.global and bar.warp.sync usually vanish (cost 0); ld.param becomes constant-bank
# operands or LDC/ULDC ("uniform"); SASS the compiler adds or removes (IMAD.MOV, address
# arithmetic folded into [R+imm], predicate logic, BSSY/BSYNC) is not modelled.
PIPE_OF_PTX = {
    "fp32": {"add.f32", "sub.f32", "mul.f32", "fma.f32", "mad.f32", "neg.f32", "abs.f32"},
    "fp64": {"add.f64", "sub.f64", "mul.f64", "fma.f64", "mad.f64", "neg.f64", "abs.f64", "setp.f64", "min.f64", "max.f64"},
    "fp16": {"add.f16", "sub.f16", "mul.f16", "fma.f16"},
    "int_fma": {"mul", "mad", "mul24", "mad24"},
    "alu": {"add", "sub", "and", "or", "xor", "not", "cnot", "shl", "shr", "setp", "set", "selp", "min", "max", "mov", "popc", "clz",
            "brev", "bfe", "bfi", "bfind", "shf", "prmt", "lop3", "neg", "abs", "cvta", "copysign", "testp", "vabsdiff4"},
    "xu": {"rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "cvt"},
    "lsu": {"ld", "st", "atom", "red", "shfl", "cp", "tex", "tld4", "suld", "sust", "sured"},
    "special": {"vote", "activemask", "redux", "match"},
    "barrier": {"bar", "barrier", "membar", "fence", "mbarrier"},
    "branch": {"bra", "ret", "exit"},
    "tensor": {"mma"},
}
_PIPE_BY_KEY = {op: pipe for pipe, ops in PIPE_OF_PTX.items() for op in ops}
_MEMORY_OPCODES = PIPE_OF_PTX["lsu"] - {"shfl"}  # the instructions that weigh a sampled block (count_work)
_FLOPS = {"add": 1, "sub": 1, "mul": 1, "fma": 2, "mad": 2}
_SPECIAL_REGS = ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%clock",
                 "%clock64", "%globaltimer", "%lanemask", "%dynamic_smem_size", "%total_smem_size", "%gridid")


def _type_of(mods: tuple[str, ...]) -> str | None:
    ts = [m for m in mods if m in _TYPES]
    return ts[-1] if ts else None


def _regs_in(op) -> list[tuple[str, bool]]:
    """(register, used as an address base) of an operand."""
    if isinstance(op, Reg):
        return [(op.name.lstrip("!"), False)]
    if isinstance(op, Vec):
        return [x for item in op.items for x in _regs_in(item)]
    if isinstance(op, Addr) and isinstance(op.base, Reg):
        return [(op.base.name, True)]
    return []


_IMMEDIATE_USERS = {"add", "sub", "mul", "fma", "mad", "min", "max", "setp", "selp", "and", "or", "xor", "shl", "shr"}
_NO_DEST = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "membar", "fence"}


def folded_instructions(kernel: Kernel) -> set[int]:
    """Indices of PTX instructions that the SASS compiler folds into their users (cost 0):
    a 32-bit mov of an immediate read only by arithmetic becomes an immediate operand;
    an add of an immediate whose result is only ever an address base becomes the [R+imm]
    offset of the loads/stores; a 64-bit shl by an immediate read by one 64-bit add becomes
    part of a LEA (the add counts, the shift does not); a mul.wide read only by 64-bit adds
    becomes an IMAD.WIDE with each of them (see wide_adds)."""
    uses: dict[str, list[tuple[int, bool]]] = {}
    defs: dict[str, int] = {}
    for i, inst in enumerate(kernel.instructions):
        ops = inst.operands
        srcs = ops if inst.opcode in _NO_DEST else ops[1:]
        if inst.opcode not in _NO_DEST and ops:
            for name, _ in _regs_in(ops[0]):
                defs[name] = defs.get(name, 0) + 1
        for op in srcs:
            for name, is_addr in _regs_in(op):
                uses.setdefault(name, []).append((i, is_addr))
        if inst.guard:
            uses.setdefault(inst.guard, []).append((i, False))
    folded = set()
    for i, inst in enumerate(kernel.instructions):
        ops = inst.operands
        if inst.opcode == "mov" and len(ops) == 2 and isinstance(ops[1], Imm) and isinstance(ops[0], Reg) and not inst.guard \
                and _type_of(inst.mods) in ("f32", "b32", "u32", "s32") and defs.get(ops[0].name) == 1:
            u = uses.get(ops[0].name, [])
            if u and all(not is_addr and kernel.instructions[j].opcode in _IMMEDIATE_USERS for j, is_addr in u):
                folded.add(i)  # the constant becomes an immediate operand of its users
            continue
        if len(ops) != 3 or not isinstance(ops[0], Reg) or defs.get(ops[0].name) != 1 or inst.guard:
            continue
        u = uses.get(ops[0].name, [])
        if not u:
            continue
        t = _type_of(inst.mods)
        if inst.opcode == "mul" and "wide" in inst.mods and all(
                kernel.instructions[j].opcode == "add" and _type_of(kernel.instructions[j].mods) in ("s64", "u64")
                and not is_addr for j, is_addr in u):
            folded.add(i)  # mul.wide + add.s64 are one IMAD.WIDE: the add carries the cost (wide_adds)
            continue
        if inst.opcode == "add" and t in ("s32", "u32", "s64", "u64", "b32", "b64") and isinstance(ops[2], Imm) \
                and all(is_addr for _, is_addr in u) or inst.opcode == "shl" and t == "b64" and isinstance(ops[2], Imm) \
                and len(u) == 1 and all(not is_addr and kernel.instructions[j].opcode == "add" and _type_of(kernel.instructions[j].mods) in ("s64", "u64")
                        for j, is_addr in u):
            folded.add(i)
    return folded


def wide_adds(kernel: Kernel, folded: set[int]) -> set[int]:
    """64-bit adds of a folded mul.wide: each is one IMAD.WIDE (1 int_fma, not 2 ALU adds)."""
    wide = {kernel.instructions[i].operands[0].name for i in folded if kernel.instructions[i].opcode == "mul"}
    return {j for j, inst in enumerate(kernel.instructions)
            if inst.opcode == "add" and any(isinstance(o, Reg) and o.name in wide for o in inst.operands[1:])}


def _costs(inst: Instruction) -> tuple[list[tuple[str, float]], tuple[str, int] | None]:
    """SASS pipe costs of one PTX instruction and its FLOPs per thread (precision, count)."""
    op, mods = inst.opcode, inst.mods
    t = _type_of(mods)
    if op == "ld" and "param" in mods:
        return [("uniform", 1.0)], None
    if op == "cvta" and "to" in mods and "global" in mods:
        return [], None
    if op == "bar" and "warp" in mods:
        return [], None
    if op == "mov" and any(isinstance(o, Reg) and o.name.startswith(_SPECIAL_REGS) for o in inst.operands[1:]):
        return [("special", 1.0)], None
    if op in ("add", "sub", "mul", "fma", "mad", "neg", "abs", "min", "max", "setp", "set") and t in ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"):
        if t == "f32":
            pipe = "alu" if op in ("min", "max", "setp", "set") else "fp32"
        elif t == "f64":
            pipe = "fp64"
        else:
            pipe = "fp16"
        flops = None
        if op in _FLOPS:
            prec = {"f32": "fp32", "f64": "fp64"}.get(t, "fp16")
            flops = (prec, _FLOPS[op] * (2 if t in ("f16x2", "bf16x2") else 1))
        return [(pipe, 1.0)], flops
    if op in ("div", "rem"):
        if t == "f32":
            return ([("xu", 1.0), ("fp32", 1.0)] if "approx" in mods or "full" in mods else [("xu", 1.0), ("fp32", 8.0)]), None
        if t == "f64":
            return [("xu", 1.0), ("fp64", 8.0)], None
        return [("xu", 2.0), ("int_fma", 8.0), ("alu", 10.0)], None
    if op in ("rcp", "sqrt", "rsqrt") and t == "f64":
        return [("xu", 1.0), ("fp64", 6.0)], None
    if op in ("rcp", "sqrt") and "approx" not in mods:
        return [("xu", 1.0), ("fp32", 4.0)], None
    if op in ("sin", "cos") or op in ("lg2", "ex2") and "ftz" not in mods:
        # FMUL.RZ range reduction before MUFU.SIN/COS; denormal scaling around MUFU.EX2/LG2
        return [("xu", 1.0), ("fp32", 1.0)], None
    if op in ("lg2", "ex2"):
        return [("xu", 1.0)], None
    if op in ("neg", "abs") and t in ("f32", "f64"):
        return [], None  # SASS operand modifiers (-x, |x|) of the instruction that reads them
    if op == "mma":
        return [("tensor", 1.0)], None
    if op == "wmma":  # m16n16k16 f16: 2 HMMA.16816; a/b fragment loads 1 LDSM.x4, c/d 4 LD/ST.64 (see _op_wmma)
        return _wmma_costs(mods), None
    if op == "cvt":
        types = [m for m in mods if m in _TYPES]
        if len(types) == 2 and not (set(types) & {"f16", "f32", "f64", "bf16"}):
            return ([("alu", 1.0)] if _bits(types[0]) != _bits(types[1]) or types[0] != types[1] else []), None
    pipe = _PIPE_BY_KEY.get(op)
    if pipe is None:
        return [("other", 1.0)], None
    n = 1.0
    if pipe == "alu" and t in ("s64", "u64", "b64") and op not in ("mov", "cvta", "selp"):
        n = 2.0
    if pipe == "int_fma":
        if "wide" in mods:
            n = 1.0
        elif t in ("s64", "u64"):
            n = 3.0
    return [(pipe, n)], None


# --------------------------------------------------------------------------- state
@dataclass
class LaneGroup:
    """The lanes interpreted together: whole warps (32 lanes each, lane i in warp i // 32) of
    one or more blocks, every value one numpy element per lane."""
    regs: dict[str, np.ndarray]
    pc: np.ndarray
    tid: tuple[np.ndarray, np.ndarray, np.ndarray]
    laneid: np.ndarray
    warpid: np.ndarray
    local: np.ndarray | None
    steps: int = 0
    grid_arrived: np.ndarray | None = None  # per lane: the value its atom.add found in the grid barrier word
    work: np.ndarray | None = None  # per lane: memory instructions it ran (weighs the sampled blocks)
    call_slab: np.ndarray | None = None  # per lane: the .param space of call sequences (arguments, return values)


@dataclass
class BlockContext:
    """Per-lane block identity and the sampled blocks' shared memory, one slab per block."""
    ctaid: tuple[np.ndarray, np.ndarray, np.ndarray]
    shared: np.ndarray
    shared_base: np.ndarray
    slot: np.ndarray  # the lane's block: its index in the group's list of blocks


@dataclass
class Counters:
    inst_by_pc: np.ndarray  # warp-level executions per instruction index
    threads_by_pc: np.ndarray  # lanes that executed (guard true) per instruction index
    global_load_requests: int = 0
    global_load_sectors: int = 0
    global_store_requests: int = 0
    global_store_sectors: int = 0
    shared_load_requests: int = 0
    shared_load_wavefronts: int = 0
    shared_store_requests: int = 0
    shared_store_wavefronts: int = 0
    shared_ideal_wavefronts: int = 0
    local_load_sectors: int = 0
    local_store_sectors: int = 0
    global_atomic_instructions: int = 0
    l2_sectors_atomic: int = 0
    shared_atomic_instructions: int = 0
    barriers: int = 0
    atomics_per_address: dict[int, int] = field(default_factory=dict)
    global_load_sectors_l1_bypass: int = 0  # of global_load_sectors: .cg / volatile loads
    global_load_bytes: int = 0  # bytes the active lanes asked for
    global_store_bytes: int = 0
    footprint: dict[str, Footprint] = field(default_factory=dict)  # "load", "load_l2" (L1 bypass), "store"
    global_load_pcs: set[int] = field(default_factory=set)  # instructions that read global memory (synchronous loads)


class Footprint:
    """The distinct global 32-byte sectors each sampled block touched (for the cache model):
    keys block slot << 48 | sector, merged in batches to bound memory."""

    BATCH = 1 << 20

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.uint64)
        self.pending: list[np.ndarray] = []
        self.pending_size = 0

    def add(self, slots: np.ndarray, addrs: np.ndarray, size: int) -> None:
        self.pending.append(_sector_keys(addrs, size, slots.astype(np.uint64) << np.uint64(48)))
        self.pending_size += len(self.pending[-1])
        if self.pending_size > self.BATCH:
            self.sectors()

    def sectors(self) -> np.ndarray:
        """Sorted distinct keys."""
        if self.pending:
            self.keys = distinct(np.concatenate([self.keys, *self.pending]))
            self.pending, self.pending_size = [], 0
        return self.keys


class Memory:
    """Global memory: named byte buffers at base addresses in one flat address space."""

    def __init__(self, buffers: dict[str, np.ndarray]):
        self.names = list(buffers)
        self.buffers = []
        for name in self.names:
            b = buffers[name]
            if not isinstance(b, np.ndarray):
                raise TypeError(f"buffer {name!r} must be a numpy array")
            if b.dtype != np.uint8:
                b = b.view(np.uint8) if b.flags.c_contiguous else np.ascontiguousarray(b).view(np.uint8)
            b = b.reshape(-1)
            if len(b) >= GLOBAL_STRIDE:
                raise ValueError(f"buffer {name!r} is too large")
            self.buffers.append(b)

    def add(self, name: str, data: np.ndarray) -> None:
        self.names.append(name)
        self.buffers.append(data.view(np.uint8).reshape(-1))

    def address(self, ptr: Pointer) -> int:
        try:
            i = self.names.index(ptr.buffer)
        except ValueError:
            raise InterpreterError(f"pointer argument names an unknown buffer {ptr.buffer!r}") from None
        return GLOBAL_BASE + i * GLOBAL_STRIDE + ptr.offset

    def buffer(self, name: str) -> np.ndarray:
        return self.buffers[self.names.index(name)]

    def _locate(self, addrs: np.ndarray, size: int, inst: Instruction):
        rel = addrs.astype(np.int64) - GLOBAL_BASE
        idx = rel // GLOBAL_STRIDE
        off = rel - idx * GLOBAL_STRIDE
        bad = (rel < 0) | (idx >= len(self.buffers))
        if not bad.any():
            lens = np.array([len(b) for b in self.buffers], dtype=np.int64)[idx]
            bad = off + size > lens
        if bad.any():
            a = int(addrs[np.argmax(bad)])
            where = self._describe(a)
            raise MemoryFault(f"line {inst.line}: {inst.text!r}: out-of-bounds global access of {size} bytes at {a:#x} ({where})")
        return idx, off

    def _describe(self, a: int) -> str:
        rel = a - GLOBAL_BASE
        if rel < 0 or rel // GLOBAL_STRIDE >= len(self.buffers):
            return "not in any buffer"
        i = rel // GLOBAL_STRIDE
        return f"buffer {self.names[i]!r} offset {rel % GLOBAL_STRIDE} of {len(self.buffers[i])} bytes"

    def read(self, addrs: np.ndarray, size: int, inst: Instruction) -> np.ndarray:
        idx, off = self._locate(addrs, size, inst)
        out = np.empty((len(addrs), size), dtype=np.uint8)
        span = np.arange(size)
        for i in distinct(idx):
            sel = idx == i
            out[sel] = self.buffers[i][off[sel][:, None] + span]
        return out

    def write(self, addrs: np.ndarray, data: np.ndarray, inst: Instruction) -> None:
        size = data.shape[1]
        idx, off = self._locate(addrs, size, inst)
        span = np.arange(size)
        # which lane wins when lanes store to the same bytes is undefined on the GPU too
        for i in distinct(idx):
            sel = idx == i
            self.buffers[i][(off[sel][:, None] + span).reshape(-1)] = data[sel].reshape(-1)


def _flat_read(mem: np.ndarray, off: np.ndarray, size: int, what: str, inst: Instruction) -> np.ndarray:
    off = off.astype(np.int64)
    if (off < 0).any() or (off + size > len(mem)).any():
        raise MemoryFault(f"line {inst.line}: {inst.text!r}: {what} access out of bounds ({len(mem)} bytes)")
    return mem[off[:, None] + np.arange(size)]


def _flat_write(mem: np.ndarray, off: np.ndarray, data: np.ndarray, what: str, inst: Instruction) -> None:
    off = off.astype(np.int64)
    size = data.shape[1]
    if (off < 0).any() or (off + size > len(mem)).any():
        raise MemoryFault(f"line {inst.line}: {inst.text!r}: {what} access out of bounds ({len(mem)} bytes)")
    mem[(off[:, None] + np.arange(size)).reshape(-1)] = data.reshape(-1)


def _local_sectors(lanes: np.ndarray, size: int) -> int:
    """Local memory is lane-interleaved: a warp's access of `size` bytes per lane covers
    ceil(active lanes x size / 32) sectors."""
    per_warp = np.bincount(lanes >> 5)
    return int((-(-per_warp[per_warp > 0] * size // 32)).sum())


_ABS_BITS = np.uint64(0x7FFFFFFFFFFFFFFF)
_TINY_BITS = np.float64(2.0 ** -125).view(np.uint64) - np.uint64(1)  # |x| - 1 below this: 0 < |x| < 2^-125


def distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values. np.unique hashes since numpy 2.3, which is several times slower
    than sorting for the few thousand integers of one access."""
    if len(values) < 2:
        return values
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _warp_count(lanes: np.ndarray) -> int:
    """Warps that hold at least one of these (ascending) lane indices of a lane group."""
    if len(lanes) == 0:
        return 0
    w = lanes >> 5
    return 1 + int(np.count_nonzero(w[1:] != w[:-1]))


def _sector_keys(addrs: np.ndarray, size: int, tag: np.ndarray) -> np.ndarray:
    """The 32-byte sectors of each access of ``size`` bytes (one or more per lane), each or-ed
    with its lane's tag (high bits that keep lanes of different warps or blocks apart)."""
    a = addrs.astype(np.uint64)
    first = a >> np.uint64(5)
    last = (a + np.uint64(size - 1)) >> np.uint64(5)
    keys = [first | tag]
    for k in range(1, int((last - first).max()) + 1 if len(a) else 0):
        sector = first + np.uint64(k)
        keys.append((sector | tag)[sector <= last])
    return keys[0] if len(keys) == 1 else np.concatenate(keys)


def _sectors(addrs: np.ndarray, size: int, lanes: np.ndarray) -> int:
    """Distinct 32-byte sectors each warp touches, summed over the warps (the lanes' warp
    index tags the sector number, so one sort counts every warp at once)."""
    return len(distinct(_sector_keys(addrs, size, (lanes.astype(np.uint64) >> np.uint64(5)) << np.uint64(44))))


def _wavefronts(offs: np.ndarray, size: int, lanes: np.ndarray) -> tuple[int, int]:
    """(wavefronts, ideal wavefronts) of one shared access, summed over the warps: per warp,
    the maximum over the 32 four-byte banks of the distinct words touched (a word read by
    several lanes is a broadcast). 128-bit accesses are served per half-warp (lanes 0-15,
    16-31), each half at least one wavefront: this reproduces Nsight Compute on the zoo (4 per
    contiguous LDS.128 in smem_bandwidth, 3 on average for sgemm_tiled's broadcast/contiguous
    pairs)."""
    group = lanes.astype(np.int64) >> (4 if size == 16 else 5)
    nwords = max(1, size // 4)
    words = (offs.astype(np.int64) // 4)[:, None] + np.arange(nwords)
    keys = distinct(((group[:, None] << 32) + words).reshape(-1))  # distinct (group, word), sorted
    g = keys >> 32
    index = np.concatenate([[0], np.cumsum(g[1:] != g[:-1])])
    ngroups = int(index[-1]) + 1
    per_bank = np.bincount(index * 32 + (keys & 31), minlength=ngroups * 32).reshape(ngroups, 32)
    words_per_group = np.bincount(index, minlength=ngroups)
    return int(per_bank.max(axis=1).sum()), int(np.maximum(1, -(-words_per_group // 32)).sum())


# --------------------------------------------------------------------------- interpreter
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
        "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
_ATOM_OPS = {"add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"}


class Interpreter:
    """Executes one kernel's PTX for chosen blocks."""

    def __init__(self, kernel: Kernel, grid, block, args, buffers: dict[str, np.ndarray] | None = None,
                 dynamic_shared_bytes: int = 0, max_steps_per_warp: int = 20_000_000, functions: tuple[str, ...] = ()):
        self.kernel = kernel
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.threads = self.block[0] * self.block[1] * self.block[2]
        self.nwarps = (self.threads + WARP - 1) // WARP
        self.memory = buffers if isinstance(buffers, Memory) else Memory(buffers or {})
        self._workspace: tuple[int, int] | None = None
        self._clock = 0
        self._loops: list[tuple[int, int]] | None = None  # (first, last) instruction index of each backward branch's span
        notes: list[str] = []
        if any(isinstance(o, Reg) and o.name.startswith("%envreg") for inst in kernel.instructions for o in inst.operands):
            self.memory.add(GRID_WORKSPACE, np.zeros(64, np.uint8))
            at = self.memory.address(Pointer(GRID_WORKSPACE))
            self._workspace = (at, at + 64)
            notes.append("grid.sync() (cooperative groups): each sampled block goes on as if every block had arrived; "
                         "what other blocks would have written is what the host left there")
        self.dynamic_shared_bytes = dynamic_shared_bytes
        self.shared_bytes = kernel.static_shared_bytes
        ext = [v for v in kernel.shared if v.extern]
        if ext:
            self.shared_bytes = max(v.offset for v in ext) + dynamic_shared_bytes
        self.symbols = {v.name: v.offset for v in kernel.shared}
        self.const_symbols: dict[str, int] = {}
        self.global_symbols: dict[str, int] = {}
        const = bytearray()
        for v in kernel.variables:
            if v.space == "const":
                start = (len(const) + v.align - 1) // v.align * v.align
                # a buffer of the variable's name holds what the host wrote (cudaMemcpyToSymbol)
                data = bytes(self.memory.buffer(v.name)[:v.size]) if v.name in self.memory.names else v.data
                const.extend(bytes(start - len(const)) + data.ljust(v.size, b"\0"))
                self.const_symbols[v.name] = start
            else:
                if v.name not in self.memory.names:
                    self.memory.add(v.name, np.frombuffer(v.data, dtype=np.uint8).copy())
                self.global_symbols[v.name] = self.memory.address(Pointer(v.name))
        self.const_bank = np.frombuffer(bytes(const), dtype=np.uint8)
        self.local_offsets = {}
        off = 0
        for v in kernel.local:
            off = (off + v.align - 1) // v.align * v.align
            self.local_offsets[v.name] = off
            off += v.size
        self.local_bytes = off
        self.max_steps = max_steps_per_warp
        self.params = self._param_bytes(args)
        self.counters = Counters(np.zeros(len(kernel.instructions), np.int64), np.zeros(len(kernel.instructions), np.int64))
        self._pc_of = {id(inst): pc for pc, inst in enumerate(kernel.instructions)}  # for the load chains' count
        self.approximations: set[str] = set(notes)
        self.missing: set[str] = set()  # work the interpretation does not count (texture fetches' traffic)
        self.block_work: dict[tuple[int, int, int], float] = {}  # per block run: memory instructions of its threads
        self._memory_pcs = frozenset(i for i, inst in enumerate(kernel.instructions)
                                     if inst.opcode in _MEMORY_OPCODES and not {"param", "const"} & set(inst.mods))
        self._tensor_names: dict[int, str] = {}
        self._tensor_per_warp: dict[int, int] = {}  # SASS tensor instructions per PTX one (default 1)
        self.L = 0
        self._wavefront_cache: dict[tuple, tuple[int, int]] = {}
        self._wmma_place_cache: dict[tuple[int, int], list[np.ndarray]] = {}
        # the module's kernels by address (mov.u64 %rd, kernel_name: what a device-side launch names)
        self.function_addresses = {name: FUNCTION_BASE + 16 * i for i, name in enumerate(functions)}
        self._function_names = {a: name for name, a in self.function_addresses.items()}
        self.device_launches: list[DeviceLaunch] = []
        self._param_buffers: dict[int, tuple[int, tuple, tuple, int, str]] = {}  # address -> launch being prepared
        self._heap_allocations = 0
        # .param of a call sequence -> offset after the kernel's parameters; each lane has its own
        # values (LaneGroup.call_slab), written by st.param and read back by ld.param (return values)
        self._call_params: dict[str, int] = {}
        self._call_base = len(self.params)
        for inst in kernel.instructions:  # name the call, not the st.param that prepares it
            if inst.opcode == "call":
                callee = self._callee(inst)
                if callee.startswith("%"):
                    raise UnsupportedInstruction(inst, f"calls the function {callee} points to (a virtual function or a "
                                                       "function pointer): indirect calls are not interpreted")
                if callee not in NO_OP_CALLS and callee not in DEVICE_RUNTIME_CALLS:
                    raise UnsupportedInstruction(inst, f"calls {callee}: device-function calls (functions nvcc did not "
                                                       "inline, recursion) are not interpreted")
                for group in re.findall(r"\(([^)]*)\)", inst.text):  # (retval0), callee, (param0, param1)
                    for name in filter(None, (x.strip() for x in group.split(","))):
                        self._call_params.setdefault(name, self._call_base + CALL_PARAM_BYTES * len(self._call_params))
        self._call_bytes = CALL_PARAM_BYTES * len(self._call_params)
        if self._call_params:  # room for their values in the parameter space's layout
            self.params += bytearray(self._call_bytes)
        self._decode_for(WARP)  # decoding checks every instruction before anything runs

    @staticmethod
    def _callee(inst: Instruction) -> str:
        """The function a call names: call[.uni] [(ret),] name[, (args)]."""
        text = inst.text.split(None, 1)[1] if " " in inst.text else ""
        m = re.match(r"^\s*(?:\([^)]*\)\s*,\s*)?(%?[\w$.]+)", text)
        return m.group(1) if m else "a function"

    def _op_call(self, inst, index, unknown):
        """printf (vprintf) and a failed assert (__assertfail): nothing happens, 0 is returned.
        The device runtime's and the device heap's functions (DEVICE_RUNTIME_CALLS) are
        carried out by _runtime_call."""
        callee = self._callee(inst)
        m = re.match(r"^\S+\s+(?:\(([^)]*)\)\s*,\s*)?[\w$.]+\s*(?:,\s*\(([^)]*)\))?", inst.text, re.DOTALL)
        names = lambda text: [x.strip() for x in (text or "").split(",") if x.strip()]
        rets, params = (names(m.group(1)), names(m.group(2))) if m else ([], [])
        ret_at = [self._call_params[r] - self._call_base for r in rets]
        arg_at = [self._call_params[a] - self._call_base for a in params]
        kind = DEVICE_RUNTIME_CALLS.get(callee)
        if kind is None:
            self.approximations.add(f"calls {callee}: done as nothing (no output)")
            unseen = f"{callee}'s own time (printf and assert are done as nothing)"
        else:
            self.approximations.add("device runtime calls (device-side launches, cudaMalloc, malloc, streams): carried out")
            unseen = ("the device runtime calls' own time (device heap, device-side launches: a parent grid ends after "
                      "the grids it launched)")

        def call(w, b, mask):
            lanes = np.nonzero(mask)[0]
            if not len(lanes):
                return
            # a call that runs takes time on the GPU that is not counted: the prediction is a lower bound that says so
            self.missing.add(unseen)
            slab = self._slab(w)
            result = np.zeros((len(lanes), 8), dtype=np.uint8)  # 0: cudaSuccess, or a null pointer
            if kind is not None:
                args = [slab[lanes[:, None], at + np.arange(CALL_PARAM_BYTES)] for at in arg_at]
                result = self._runtime_call(kind, inst, w, lanes, args)
            for at in ret_at:
                slab[lanes[:, None], at + np.arange(CALL_PARAM_BYTES)] = 0
                slab[lanes[:, None], at + np.arange(8)] = result
        return call

    def _slab(self, w: LaneGroup) -> np.ndarray:
        if w.call_slab is None or w.call_slab.shape != (self.L, self._call_bytes):
            w.call_slab = np.zeros((self.L, self._call_bytes), dtype=np.uint8)
        return w.call_slab

    def _new_buffer(self, prefix: str, size: int) -> int:
        """A fresh global buffer of SIZE zero bytes (a device-heap allocation, a parameter
        buffer): its address."""
        name = f"__{prefix}_{self._heap_allocations}"
        self._heap_allocations += 1
        self.memory.add(name, np.zeros(max(1, size), dtype=np.uint8))
        return self.memory.address(Pointer(name))

    def _runtime_call(self, kind: str, inst: Instruction, w: LaneGroup, lanes: np.ndarray, args: list[np.ndarray]) -> np.ndarray:
        """Carry out one device-runtime or device-heap call for LANES (each lane's argument
        bytes in ARGS); each lane's 8 return bytes."""
        def u64(i):
            return args[i][:, :8].copy().view(np.uint64).reshape(-1)

        def u32(i, count=1):
            return args[i][:, :4 * count].copy().view(np.uint32).reshape(len(lanes), count)

        out = np.zeros(len(lanes), dtype=np.uint64)
        if kind == "parameter_buffer":  # (kernel address, grid dim3, block dim3, shared bytes) -> buffer
            func, grid, block, smem = u64(0), u32(1, 3), u32(2, 3), u32(3)[:, 0]
            for i in range(len(lanes)):
                at = self._new_buffer("param_buffer", PARAM_BUFFER_BYTES)
                name = self.memory.names[-1]
                self._param_buffers[at] = (int(func[i]), tuple(int(x) for x in grid[i]), tuple(int(x) for x in block[i]),
                                           int(smem[i]), name)
                out[i] = at
        elif kind == "launch":  # (parameter buffer, stream) -> cudaSuccess; the launch is recorded
            for at in u64(0).tolist():
                found = self._param_buffers.pop(at, None)
                if found is None:
                    raise InterpreterError(f"line {inst.line}: {inst.text!r}: launches a parameter buffer "
                                           "cudaGetParameterBufferV2 never gave")
                func, grid, block, smem, name = found
                kernel = self._function_names.get(func)
                if kernel is None:
                    raise InterpreterError(f"line {inst.line}: {inst.text!r}: launches the function at {func:#x}, "
                                           "not a kernel of this module")
                self.device_launches.append(DeviceLaunch(kernel, grid, block, smem, bytes(self.memory.buffer(name))))
        elif kind in ("cuda_malloc", "malloc"):  # cudaMalloc(void** where, size) -> cudaSuccess; malloc(size) -> pointer
            sizes = u64(1 if kind == "cuda_malloc" else 0)
            for i in range(len(lanes)):
                out[i] = self._new_buffer("device_malloc", int(sizes[i]))
            if kind == "cuda_malloc":
                where, data = u64(0), out.view(np.uint8).reshape(-1, 8)
                for space, sub, rel in self._classify(where, "generic"):
                    sel = slice(None) if sub is None else sub
                    if space == "global":
                        self.memory.write(rel[sel] if sub is not None else rel, data[sel], inst)
                    elif space == "local":
                        self._local_write(w, rel[sel] if sub is not None else rel, lanes[sel], data[sel], inst)
                    else:
                        raise UnsupportedInstruction(inst, "cudaMalloc into shared memory")
                out[:] = 0
        return out.view(np.uint8).reshape(-1, 8)

    def _decode_for(self, lanes: int) -> None:
        """Build the per-instruction closures for a group of `lanes` lanes."""
        if lanes != self.L:
            self.L = lanes
            self.ops = [self._decode(i, inst) for i, inst in enumerate(self.kernel.instructions)]

    # ---------------------------------------------------------------- arguments
    def _param_bytes(self, args) -> bytearray:
        k = self.kernel
        if isinstance(args, dict):
            values = []
            for i, p in enumerate(k.params):
                if p.name in args:
                    values.append(args[p.name])
                elif i in args:
                    values.append(args[i])
                else:
                    raise InterpreterError(f"{k.name}: no value for parameter {p.name}")
        else:
            values = list(args)
        if len(values) != len(k.params):
            raise InterpreterError(f"{k.name} takes {len(k.params)} arguments, {len(values)} given")
        size = max((p.offset + p.size for p in k.params), default=0)
        buf = bytearray(size)
        for p, v in zip(k.params, values):
            if isinstance(v, Pointer):
                v = self.memory.address(v)
            if isinstance(v, (bytes, bytearray)):
                raw = bytes(v)
            elif p.type in ("f32", "f64", "f16"):
                raw = np.array([v], dtype=_DTYPE[p.type]).tobytes()
            elif p.type in _DTYPE and p.type != "pred":
                raw = (int(v) & ((1 << (8 * p.size)) - 1)).to_bytes(p.size, "little")
            else:
                raw = (int(v) & ((1 << (8 * p.size)) - 1)).to_bytes(p.size, "little")
            if len(raw) != p.size:
                raise InterpreterError(f"{k.name}: parameter {p.name} is {p.size} bytes, value gives {len(raw)}")
            buf[p.offset:p.offset + p.size] = raw
        return buf

    # ---------------------------------------------------------------- operands
    def _reader(self, op, t: str, inst: Instruction):
        if isinstance(op, Sym) and op.name in self.kernel.regs:
            op = Reg(op.name)  # a register of an inline-asm scope without '%' (nvcc's "low", "__$temp3")
        if isinstance(op, Imm):
            arr = _imm_array(op, t, self.L)
            return lambda w, b: arr
        if isinstance(op, Reg):
            name = op.name
            if name.startswith(_SPECIAL_REGS):
                return self._special(name, t, inst)
            if name.startswith("%envreg"):  # the grid workspace of cooperative groups (see GRID_WORKSPACE)
                at = self._workspace[0] if self._workspace else 0
                value = {"%envreg1": at >> 32, "%envreg2": at & 0xFFFFFFFF}.get(name, 0)
                arr = np.full(self.L, value, dtype=np.uint64)
                return lambda w, b: _as(arr, t)
            if name not in self.kernel.regs:
                raise UnsupportedInstruction(inst, f"undeclared register {name}")
            if t == "pred":
                return lambda w, b: w.regs[name]
            declared = self.kernel.regs[name]
            if declared != "pred" and max(8, TYPE_BITS[declared]) == _bits(t) and t not in ("f16x2", "bf16x2"):
                dt = np.dtype(_DTYPE[t])
                return lambda w, b: w.regs[name].view(dt)  # same width: a free reinterpretation
            return lambda w, b: _as(w.regs[name], t)
        if isinstance(op, Sym):
            if op.name in self.symbols:
                arr = np.full(self.L, self.symbols[op.name], dtype=np.uint64)
                return lambda w, b: _as(arr, t)
            params = {p.name: p.offset for p in self.kernel.params}  # mov %rd, kernel_param: its place in param space
            for table in (self.local_offsets, self.const_symbols, self.global_symbols, params, {"WARP_SZ": WARP},
                          self.function_addresses):
                if op.name in table:
                    arr = np.full(self.L, table[op.name], dtype=np.uint64)
                    return lambda w, b: _as(arr, t)
            raise UnsupportedInstruction(inst, f"symbol operand {op.name}")
        raise UnsupportedInstruction(inst, f"operand {op}")

    def _in_loop(self, inst: Instruction) -> bool:
        """Whether the instruction lies in a loop: between a backward branch and its target."""
        if self._loops is None:
            self._loops = [(self.kernel.labels[op.name], j) for j, other in enumerate(self.kernel.instructions)
                           if other.opcode == "bra" and other.operands and isinstance(op := other.operands[0], Sym)
                           and self.kernel.labels.get(op.name, j + 1) <= j]
        index = next(i for i, other in enumerate(self.kernel.instructions) if other is inst)
        return any(start <= index <= end for start, end in self._loops)

    def _special(self, name: str, t: str, inst: Instruction):
        base, _, comp = name.partition(".")
        axis = {"x": 0, "y": 1, "z": 2}.get(comp)
        if base == "%tid" and axis is not None:
            return lambda w, b: _as(w.tid[axis].astype(np.uint64), t)
        consts = {"%ntid": self.block, "%nctaid": self.grid}
        if base in consts and axis is not None:
            arr = np.full(self.L, consts[base][axis], dtype=np.uint64)
            return lambda w, b: _as(arr, t)
        if base == "%ctaid" and axis is not None:
            return lambda w, b: _as(b.ctaid[axis], t)
        if name == "%laneid":
            return lambda w, b: _as(w.laneid.astype(np.uint64), t)
        if name == "%warpid":
            return lambda w, b: _as(w.warpid, t)
        if name == "%nwarpid":
            return lambda w, b: _as(np.full(self.L, self.nwarps, dtype=np.uint64), t)
        if name in ("%smid", "%gridid"):
            return lambda w, b: _as(np.zeros(self.L, dtype=np.uint64), t)
        if name in ("%clock", "%clock64", "%globaltimer"):
            # a fast clock: loops that wait for a number of cycles (clock_block of simpleHyperQ)
            # end after a few thousand steps instead of millions; what they wait is not work
            self.approximations.add(f"{name} is a fast clock ({CLOCK_PER_READ:,} more at each read): a kernel that waits "
                                    "for a time is predicted by the work of its few interpreted iterations, not the wait")

            # A read inside a loop waits for a time to pass (the fast clock ends the loop at once, so
            # the loop's count says nothing): that wait is the kernel's time, not counted, and the
            # prediction is a lower bound. Reads outside loops time a stretch of work (the clock sample).
            waits = self._in_loop(inst)

            def clock(w, b):
                self._clock += CLOCK_PER_READ
                if waits:
                    self.missing.add(f"the time it waits on the clock (a loop reading {name} until a time has passed)")
                return _as(np.full(self.L, self._clock, dtype=np.uint64), t)
            return clock
        if name in ("%dynamic_smem_size", "%total_smem_size"):
            v = self.dynamic_shared_bytes if name == "%dynamic_smem_size" else self.shared_bytes
            return lambda w, b: _as(np.full(self.L, v, dtype=np.uint64), t)
        if name.startswith("%lanemask_"):
            lane = np.arange(self.L, dtype=np.uint64) & np.uint64(WARP - 1)
            one = np.uint64(1)
            masks = {"eq": one << lane, "lt": (one << lane) - one, "le": (one << (lane + one)) - one}
            masks["gt"] = ~masks["le"] & np.uint64(0xFFFFFFFF)
            masks["ge"] = ~masks["lt"] & np.uint64(0xFFFFFFFF)
            arr = masks[name.split("_")[1]] & np.uint64(0xFFFFFFFF)
            return lambda w, b: _as(arr, t)
        raise UnsupportedInstruction(inst, f"special register {name}")

    def _writer(self, op, t: str, inst: Instruction):
        if isinstance(op, Sym) and op.name == "_":
            return lambda w, v, m: None
        if isinstance(op, Sym) and op.name in self.kernel.regs:
            op = Reg(op.name)
        if not isinstance(op, Reg) or op.name not in self.kernel.regs:
            raise UnsupportedInstruction(inst, f"destination {op}")
        name = op.name
        declared = self.kernel.regs[name]
        if declared != "pred" and t != "pred" and max(8, TYPE_BITS[declared]) == _bits(t) and t not in ("f16x2", "bf16x2"):
            dt, ut = np.dtype(_DTYPE[t]), np.dtype(_UNSIGNED[_bits(t)])

            def write_same_width(w, value, mask):
                np.copyto(w.regs[name], value.astype(dt, copy=False).view(ut), where=mask)
            return write_same_width

        def write(w, value, mask):
            store = w.regs[name]
            if store.dtype == np.bool_:
                np.copyto(store, value.astype(bool), where=mask)
                return
            bits = _to_bits(value, t)
            if bits.dtype != store.dtype:
                if t in _SIGNED and bits.dtype.itemsize < store.dtype.itemsize:
                    bits = value.astype(np.int64).view(np.uint64).astype(store.dtype)
                else:
                    bits = bits.astype(store.dtype)
            np.copyto(store, bits, where=mask)
        return write

    # ---------------------------------------------------------------- decode
    def _decode(self, index: int, inst: Instruction):
        op, mods = inst.opcode, inst.mods
        unknown = [m for m in mods if m not in _TYPES and m not in _IGNORED_MODS and not m.startswith(("L1::", "L2::"))]
        try:
            handler = getattr(self, f"_op_{op}")
        except AttributeError:
            raise UnsupportedInstruction(inst) from None
        fn = handler(inst, index, unknown)
        if inst.guard is not None and inst.guard not in self.kernel.regs:
            raise UnsupportedInstruction(inst, f"undeclared guard {inst.guard}")
        return fn

    def _t(self, inst: Instruction) -> str:
        t = _type_of(inst.mods)
        if t is None:
            raise UnsupportedInstruction(inst, "no type")
        return t

    def _check(self, inst, unknown, allowed=()):
        bad = [m for m in unknown if m not in allowed]
        if bad:
            raise UnsupportedInstruction(inst, "modifier " + ".".join(bad))

    def _simple(self, inst, t_dst, t_srcs, fn):
        dst = self._writer(inst.operands[0], t_dst, inst)
        srcs = [self._reader(o, ts, inst) for o, ts in zip(inst.operands[1:], t_srcs)]
        if len(srcs) != len(inst.operands) - 1:
            raise UnsupportedInstruction(inst, "operands")

        if len(srcs) == 1:
            (s0,) = srcs
            return lambda w, b, mask: dst(w, fn(s0(w, b)), mask)
        if len(srcs) == 2:
            s0, s1 = srcs
            return lambda w, b, mask: dst(w, fn(s0(w, b), s1(w, b)), mask)
        if len(srcs) == 3:
            s0, s1, s2 = srcs
            return lambda w, b, mask: dst(w, fn(s0(w, b), s1(w, b), s2(w, b)), mask)

        def run(w, b, mask):
            dst(w, fn(*[s(w, b) for s in srcs]), mask)
        return run

    # arithmetic ---------------------------------------------------------------
    def _sat(self, inst, t, fn):
        if "sat" in inst.mods:
            if t in _FLOAT:
                return lambda *a: _satf(fn(*a))
            if t == "s32":
                return lambda *a: np.clip(fn(*[x.astype(np.int64) for x in a]), -2**31, 2**31 - 1).astype(np.int32)
        return fn

    def _float_arith(self, inst, t, kind):
        """add/sub/mul/fma of f16, bf16, f16x2, bf16x2 (halves unpacked, computed exactly in
        float64 and rounded once) and of f32/f64 with a rounding modifier other than .rn.
        None: the plain numpy expression is exact (f32/f64 round to nearest)."""
        mode = _rounding(inst.mods)
        nsrc = 3 if kind == "fma" else 2
        if t in _HALVES:
            if "sat" in inst.mods:
                raise UnsupportedInstruction(inst, f".sat of {t}")
            half = t.removesuffix("x2")
            packed = t.endswith("x2")
            bt = "b32" if packed else "b16"

            def exact(x, y, z=None):
                if kind == "add":
                    return _two_sum(x, y)
                if kind == "sub":
                    return _two_sum(x, -y)
                if kind == "mul":
                    return x * y, 0.0  # products of halves are exact in float64
                return _two_sum(x * y, z)

            def one(*halves):  # uint16 bits of each operand -> uint16 bits of the result
                xs = [(_bf16_to_f32(h) if half == "bf16" else h.view(np.float16)).astype(np.float64) for h in halves]
                with np.errstate(all="ignore"):
                    s, e = exact(*xs)
                if half == "bf16":
                    return _to_bf16(s, e, mode)
                return _to_f16(s, e, mode).view(np.uint16)

            if packed:
                def fn(*ops):
                    lo = one(*[(o & np.uint32(0xFFFF)).astype(np.uint16) for o in ops])
                    hi = one(*[(o >> np.uint32(16)).astype(np.uint16) for o in ops])
                    return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
            else:
                fn = one
            return self._simple(inst, bt, (bt,) * nsrc, fn)
        if mode == "rn" and kind != "fma":
            return None
        if t == "f64":
            if kind == "fma":
                if mode != "rn":
                    raise UnsupportedInstruction(inst, "directed rounding of fma.f64")
                return self._simple(inst, t, (t, t, t), self._sat(inst, t, _fma_f64))
            raise UnsupportedInstruction(inst, "directed rounding of f64 arithmetic")
        if t != "f32":
            raise UnsupportedInstruction(inst, "type")

        def f32op(a, b, c=None):
            x, y = a.astype(np.float64), b.astype(np.float64)
            with np.errstate(all="ignore"):
                if kind == "fma" and mode == "rn":  # fast path: the float64 sum is not a float32 midpoint
                    s = x * y + c
                    bits = s.view(np.uint64)
                    # a midpoint has the 29 bits below float32's precision at 1000...0; nonzero
                    # magnitudes under 2^-125 (float32 subnormals) need the exact path too
                    unsafe = ((bits & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)) | (
                        ((bits & _ABS_BITS) - np.uint64(1)) < _TINY_BITS)
                    if not unsafe.any():
                        return s.astype(np.float32)
                if kind == "mul":
                    s, e = x * y, 0.0  # exact
                    return _round_f32(s, e, mode)
                if kind == "fma":
                    x, y = x * y, c.astype(np.float64)  # the product is exact in float64
                elif kind == "sub":
                    y = -y
                s, e = _two_sum(x, y)
                r = _round_f32(s, e, mode)
            if mode == "rm":  # an exact zero sum is -0 when rounding down (unless both are +0)
                zero = (s == 0) & (e == 0) & ~((x == 0) & (y == 0) & ~np.signbit(x) & ~np.signbit(y))
                r = np.where(zero, np.float32(-0.0), r)
            return r
        return self._simple(inst, t, (t,) * nsrc, self._sat(inst, t, f32op))

    def _op_add(self, inst, index, unknown):
        self._check(inst, unknown, ("sat", "cc"))
        if "cc" in inst.mods:
            raise UnsupportedInstruction(inst, "carry")
        t = self._t(inst)
        if t in _FLOAT or t in _HALVES:
            fn = self._float_arith(inst, t, "add")
            if fn is not None:
                return fn
        return self._simple(inst, t, (t, t), self._sat(inst, t, lambda a, b: a + b))

    def _op_sub(self, inst, index, unknown):
        self._check(inst, unknown, ("sat",))
        t = self._t(inst)
        if t in _FLOAT or t in _HALVES:
            fn = self._float_arith(inst, t, "sub")
            if fn is not None:
                return fn
        return self._simple(inst, t, (t, t), self._sat(inst, t, lambda a, b: a - b))

    def _op_mul(self, inst, index, unknown):
        self._check(inst, unknown, ("wide", "hi", "sat"))
        t = self._t(inst)
        if t in _FLOAT or t in _HALVES:
            fn = self._float_arith(inst, t, "mul")
            if fn is not None:
                return fn
            return self._simple(inst, t, (t, t), self._sat(inst, t, lambda a, b: a * b))
        if "wide" in inst.mods:
            wt = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}[t]
            wd = _DTYPE[wt]
            return self._simple(inst, wt, (t, t), lambda a, b: a.astype(wd) * b.astype(wd))
        if "hi" in inst.mods:
            w = _bits(t)
            if w == 64:
                def hi64(a, b):
                    return np.array([((int(x) * int(y)) >> 64) & (2**64 - 1) for x, y in zip(a, b)], dtype=np.uint64).view(a.dtype)
                return self._simple(inst, t, (t, t), hi64)
            wd = np.int64 if t in _SIGNED else np.uint64
            return self._simple(inst, t, (t, t), lambda a, b: ((a.astype(wd) * b.astype(wd)) >> w).astype(_DTYPE[t]))
        return self._simple(inst, t, (t, t), lambda a, b: a * b)

    def _op_mad(self, inst, index, unknown):
        self._check(inst, unknown, ("wide", "hi", "sat"))
        t = self._t(inst)
        if t in _FLOAT or t in _HALVES:
            return self._op_fma(inst, index, [m for m in unknown if m != "sat"])
        if "wide" in inst.mods:
            wt = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}[t]
            wd = _DTYPE[wt]
            return self._simple(inst, wt, (t, t, wt), lambda a, b, c: a.astype(wd) * b.astype(wd) + c)
        if "hi" in inst.mods:
            w = _bits(t)
            if w == 64:
                raise UnsupportedInstruction(inst)
            wd = np.int64 if t in _SIGNED else np.uint64
            return self._simple(inst, t, (t, t, t), lambda a, b, c: ((a.astype(wd) * b.astype(wd)) >> w).astype(_DTYPE[t]) + c)
        return self._simple(inst, t, (t, t, t), lambda a, b, c: a * b + c)

    def _op_fma(self, inst, index, unknown):
        """fma.f32: the float64 product is exact, the sum is rounded once to f32 (through its
        exact float64 error, so a float64 sum on a float32 midpoint rounds the right way);
        fma.f64: error-free transforms, exact fractions near a midpoint (see _fma_f64)."""
        self._check(inst, unknown, ("sat",))
        t = self._t(inst)
        if t not in ("f32", "f64") and t not in _HALVES:
            raise UnsupportedInstruction(inst, "type")
        return self._float_arith(inst, t, "fma")

    def _op_div(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        if t in _FLOAT:
            mode = _rounding(inst.mods)
            if mode == "rn" or "approx" in inst.mods or "full" in inst.mods:
                return self._simple(inst, t, (t, t), lambda a, b: a / b)
            if t != "f32":
                raise UnsupportedInstruction(inst, f"directed rounding of div.{t}")

            def div_directed(a, b):
                x, y = a.astype(np.float64), b.astype(np.float64)
                with np.errstate(all="ignore"):
                    q = x / y
                    # sign of the exact quotient minus q: exact where it matters (q has <= 25 bits)
                    e = np.sign(x - q * y) * np.sign(y) * np.spacing(np.abs(q)) / 4
                    e = np.where(np.isfinite(q) & (y != 0), e, 0.0)
                    return _round_f32(q, e, mode)
            return self._simple(inst, t, (t, t), div_directed)
        w = _bits(t)
        ut = _UNSIGNED[w]

        def div(a, b):
            bz = b == 0
            bs = np.where(bz, 1, b).astype(a.dtype)
            if t in _SIGNED:  # magnitudes as unsigned, so that |INT_MIN| does not overflow
                ua = np.where(a < 0, (~a.view(ut) + ut(1)).astype(ut), a.view(ut))
                ub = np.where(bs < 0, (~bs.view(ut) + ut(1)).astype(ut), bs.view(ut))
                uq = (ua // ub).astype(ut)
                q = np.where((a < 0) != (bs < 0), (~uq + ut(1)).astype(ut), uq).view(a.dtype)
            else:
                q = a // bs
            return np.where(bz, np.array(-1).astype(a.dtype) if t not in _SIGNED else -1, q).astype(a.dtype)
        return self._simple(inst, t, (t, t), div)

    def _op_rem(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        def rem(a, b):
            bs = np.where(b == 0, 1, b)
            if t in _SIGNED:
                r = np.fmod(a.astype(np.int64), bs.astype(np.int64)).astype(a.dtype)
            else:
                r = a % bs
            return np.where(b == 0, a, r)
        return self._simple(inst, t, (t, t), rem)

    def _minmax(self, inst, unknown, f_float, f_int):
        self._check(inst, unknown, ("NaN", "xorsign", "abs"))
        t = self._t(inst)
        if "xorsign" in unknown or "abs" in unknown:
            raise UnsupportedInstruction(inst, "modifier .xorsign.abs")
        if t in _HALVES:
            bt = "b32" if t.endswith("x2") else "b16"
            fn = _per_half(_half_minmax(t.removesuffix("x2"), inst.opcode == "max", "NaN" in unknown), t.endswith("x2"))
            return self._simple(inst, bt, (bt, bt), fn)
        if "NaN" in unknown and t in _FLOAT:
            f_float = np.maximum if inst.opcode == "max" else np.minimum  # NaN wins
        return self._simple(inst, t, (t, t), f_float if t in _FLOAT else f_int)

    def _op_min(self, inst, index, unknown):
        return self._minmax(inst, unknown, np.fmin, np.minimum)

    def _op_max(self, inst, index, unknown):
        return self._minmax(inst, unknown, np.fmax, np.maximum)

    def _sign_bits(self, inst, t, op):
        """neg/abs of f16, bf16 and their x2 packs: the sign bit of each half."""
        bt = "b32" if t.endswith("x2") else "b16"
        mask = np.uint32(0x80008000) if t.endswith("x2") else np.uint16(0x8000)
        return self._simple(inst, bt, (bt,), (lambda a: a ^ mask) if op == "neg" else (lambda a: a & ~mask))

    def _op_neg(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        if t in _NOT_NUMPY or (t == "f16" and "ftz" in inst.mods):
            return self._sign_bits(inst, t, "neg")
        if t == "f16":  # the H100 gives the canonical NaN 0x7FFF for a NaN (not a flipped sign)
            nan = np.uint16(0x7FFF).view(np.float16)
            return self._simple(inst, t, (t,), lambda a: np.where(np.isnan(a), nan, -a))
        return self._simple(inst, t, (t,), lambda a: -a)

    def _op_abs(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        if t in _NOT_NUMPY:
            return self._sign_bits(inst, t, "abs")
        return self._simple(inst, t, (t,), np.abs)

    def _logic(self, inst, unknown, fn):
        self._check(inst, unknown)
        t = self._t(inst)
        return self._simple(inst, t, (t,) * (len(inst.operands) - 1), fn)

    def _op_and(self, inst, index, unknown):
        return self._logic(inst, unknown, lambda a, b: a & b)

    def _op_or(self, inst, index, unknown):
        return self._logic(inst, unknown, lambda a, b: a | b)

    def _op_xor(self, inst, index, unknown):
        return self._logic(inst, unknown, lambda a, b: a ^ b)

    def _op_not(self, inst, index, unknown):
        return self._logic(inst, unknown, lambda a: ~a)

    def _op_cnot(self, inst, index, unknown):
        return self._logic(inst, unknown, lambda a: (a == 0).astype(a.dtype))

    def _op_lop3(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        lut_op = inst.operands[4]
        if not isinstance(lut_op, Imm):
            raise UnsupportedInstruction(inst, "non-immediate LUT")
        lut = lut_op.value

        def lop3(a, b, c, _):
            r = np.zeros_like(a)
            for i in range(8):
                if lut >> i & 1:
                    r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
            return r
        return self._simple(inst, t, (t, t, t, "b32"), lop3)

    def _op_shl(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        w = _bits(t)
        ut = _UNSIGNED[w]

        def shl(a, b):
            s = b.astype(np.uint64)
            return np.where(s >= w, 0, a.view(ut) << np.minimum(s, w - 1).astype(ut)).astype(ut).view(a.dtype)
        return self._simple(inst, t, (t, "u32"), shl)

    def _op_shr(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        w = _bits(t)

        def shr(a, b):
            s = np.minimum(b.astype(np.uint64), w).astype(np.int64)
            if t in _SIGNED:
                return (a.astype(np.int64) >> np.minimum(s, 63)).astype(a.dtype) if w < 64 else a >> np.minimum(s, 63).astype(a.dtype)
            ut = _UNSIGNED[w]
            return np.where(s >= w, 0, a.view(ut) >> np.minimum(s, w - 1).astype(ut)).astype(ut).view(a.dtype)
        return self._simple(inst, t, (t, "u32"), shr)

    def _op_popc(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        w = _bits(t)

        def popc(a):
            u = a.view(_UNSIGNED[w]).astype(np.uint64)
            return np.array([int(x).bit_count() for x in u], dtype=np.uint32)
        return self._simple(inst, "u32", (t,), popc)

    def _op_clz(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        w = _bits(t)
        return self._simple(inst, "u32", (t,), lambda a: np.array([w - int(x).bit_length() for x in a.view(_UNSIGNED[w])], dtype=np.uint32))

    def _op_brev(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        w = _bits(t)
        return self._simple(inst, t, (t,), lambda a: np.array([int(format(int(x), f"0{w}b")[::-1], 2) for x in a.view(_UNSIGNED[w])], dtype=_UNSIGNED[w]).view(a.dtype))

    def _op_bfe(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        w = _bits(t)

        def bfe(a, pos, ln):
            out = []
            for x, p, n in zip(a.view(_UNSIGNED[w]), pos, ln):
                x, p, n = int(x), int(p) & 0xFF, int(n) & 0xFF
                v = (x >> min(p, w - 1)) & ((1 << n) - 1) if n else 0
                if p >= w:
                    v = 0 if t not in _SIGNED else (-(x >> (w - 1) & 1)) & ((1 << w) - 1)
                elif t in _SIGNED and n:
                    sign_bit = min(p + n - 1, w - 1)
                    if x >> sign_bit & 1:  # copies of the sign bit above the bits taken from x
                        v |= ((1 << w) - 1) ^ ((1 << min(n, w - p)) - 1)
                out.append(v & ((1 << w) - 1))
            return np.array(out, dtype=_UNSIGNED[w]).view(a.dtype)
        return self._simple(inst, t, (t, "u32", "u32"), bfe)

    def _op_bfi(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        w = _bits(t)

        def bfi(a, b, pos, ln):
            out = []
            for x, y, p, n in zip(a.view(_UNSIGNED[w]), b.view(_UNSIGNED[w]), pos, ln):
                x, y, p, n = int(x), int(y), int(p) & 0xFF, int(n) & 0xFF
                if n and p < w:
                    m = ((1 << n) - 1) << p & ((1 << w) - 1)
                    y = (y & ~m) | ((x << p) & m)
                out.append(y & ((1 << w) - 1))
            return np.array(out, dtype=_UNSIGNED[w]).view(b.dtype)
        return self._simple(inst, t, (t, t, "u32", "u32"), bfi)

    def _op_bfind(self, inst, index, unknown):
        """Bit position of the most significant non-sign bit (0xFFFFFFFF if none); .shiftamt:
        the left shift that brings it to the top."""
        self._check(inst, unknown, ("shiftamt",))
        t = self._t(inst)
        w = _bits(t)
        shiftamt = "shiftamt" in inst.mods

        def bfind(a):
            out = []
            for x in a.view(_UNSIGNED[w]).tolist():
                if t in _SIGNED and x >> (w - 1):
                    x = ~x & ((1 << w) - 1)
                pos = x.bit_length() - 1
                out.append(0xFFFFFFFF if pos < 0 else (w - 1 - pos if shiftamt else pos))
            return np.array(out, dtype=np.uint32)
        return self._simple(inst, "u32", (t,), bfind)

    def _op_shf(self, inst, index, unknown):
        """Funnel shift of the 64-bit b:a by c (.wrap: c mod 32, .clamp: min(c, 32)); shf.l
        keeps the high word, shf.r the low word."""
        self._check(inst, unknown, ("l", "r", "wrap", "clamp"))
        if self._t(inst) != "b32" or ("l" in inst.mods) == ("r" in inst.mods) or ("wrap" in inst.mods) == ("clamp" in inst.mods):
            raise UnsupportedInstruction(inst, "shf form")
        left, wrap = "l" in inst.mods, "wrap" in inst.mods

        def shf(a, b, c):
            n = (c & np.uint32(31)) if wrap else np.minimum(c, np.uint32(32))
            v = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
            n = n.astype(np.uint64)
            r = (v << n) >> np.uint64(32) if left else v >> n
            return (r & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return self._simple(inst, "b32", ("b32", "b32", "u32"), shf)

    def _op_prmt(self, inst, index, unknown):
        self._check(inst, unknown)
        if len(inst.operands) != 4:
            raise UnsupportedInstruction(inst, "prmt mode")

        def prmt(a, b, c):
            out = []
            for x, y, s in zip(a, b, c):
                src = (int(y) << 32 | int(x)).to_bytes(8, "little")
                r = 0
                for k in range(4):
                    sel = int(s) >> (4 * k) & 0xF
                    byte = src[sel & 7]
                    if sel & 8:
                        byte = 0xFF if byte & 0x80 else 0
                    r |= byte << (8 * k)
                out.append(r)
            return np.array(out, dtype=np.uint32)
        return self._simple(inst, "b32", ("b32", "b32", "b32"), prmt)

    def _op_selp(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        return self._simple(inst, t, (t, t, "pred"), lambda a, b, c: np.where(c, a, b).astype(a.dtype))

    def _op_copysign(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        return self._simple(inst, t, (t, t), lambda a, b: np.copysign(b, a))

    def _compare(self, inst, cmp: str, t: str):
        if cmp in _CMP:
            f = _CMP[cmp]
            if t in _FLOAT and cmp == "ne":
                return lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b)
            return f
        if t in _FLOAT:
            if cmp == "num":
                return lambda a, b: ~np.isnan(a) & ~np.isnan(b)
            if cmp == "nan":
                return lambda a, b: np.isnan(a) | np.isnan(b)
            if cmp.endswith("u") and cmp[:-1] in _CMP:
                f = _CMP[cmp[:-1]]
                return lambda a, b: f(a, b) | np.isnan(a) | np.isnan(b)
        raise UnsupportedInstruction(inst, f"comparison {cmp}")

    def _half_compare(self, inst, cmp: str, t: str):
        """A comparison of f16/bf16 (x2: per half) bits: (reader type, fn -> bool per half)."""
        f = self._compare(inst, cmp, "f32")
        half = t.removesuffix("x2")
        return ("b32" if t.endswith("x2") else "b16"), lambda a, b: f(_half_f64(a, half), _half_f64(b, half))

    def _op_set(self, inst, index, unknown):
        """set.CmpOp[.BoolOp].dtype.stype d, a, b[, c]: all ones (integers) or 1.0 (floats)
        where the comparison holds, else 0; per half for f16x2/bf16x2."""
        types = [m for m in inst.mods if m in _TYPES]
        boolop = [m for m in unknown if m in ("and", "or", "xor")]
        cmps = [m for m in unknown if m not in ("and", "or", "xor")]
        if len(types) != 2 or len(cmps) != 1:
            raise UnsupportedInstruction(inst, "set form")
        dt, st = types
        comb = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[boolop[0]] if boolop else None
        rc = self._reader(inst.operands[3], "pred", inst) if boolop else None
        if st in _HALVES:
            rt, f = self._half_compare(inst, cmps[0], st)
            packed = st.endswith("x2")
            one = {"f16": np.uint16(0x3C00), "bf16": np.uint16(0x3F80), "f16x2": np.uint16(0x3C00),
                   "bf16x2": np.uint16(0x3F80)}.get(dt, np.uint16(0xFFFF))
            dst_t = "b32" if packed else ("b16" if dt in _HALVES else dt)
        else:
            rt, f = st, self._compare(inst, cmps[0], st)
            packed = False
            one = {"f32": np.float32(1.0), "f16": np.uint16(0x3C00), "bf16": np.uint16(0x3F80)}.get(dt)
            dst_t = "b16" if dt in ("f16", "bf16") else dt
        ra, rb, write = self._reader(inst.operands[1], rt, inst), self._reader(inst.operands[2], rt, inst), self._writer(inst.operands[0], dst_t, inst)

        def halfwise(a, b, c):
            def one_half(x, y):
                r = f(x, y)
                r = comb(r, c) if comb is not None else r
                return np.where(r, one, np.uint16(0)).astype(np.uint16)
            return _per_half(one_half, packed)(a, b)

        def run(w, b, mask):
            with np.errstate(all="ignore"):
                c = rc(w, b) if rc else None
                if st in _HALVES:
                    write(w, halfwise(ra(w, b), rb(w, b), c), mask)
                    return
                r = f(ra(w, b), rb(w, b))
                if comb is not None:
                    r = comb(r, c)
                if one is None:  # integer result: all ones
                    write(w, np.where(r, _DTYPE[dt](-1) if dt in _SIGNED else np.iinfo(_DTYPE[dt]).max, 0).astype(_DTYPE[dt]), mask)
                else:
                    write(w, np.where(r, one, type(one)(0)), mask)
        return run

    def _op_setp(self, inst, index, unknown):
        t = self._t(inst)
        if t in _HALVES:
            return self._setp_halves(inst, unknown, t)
        cmps = [m for m in unknown if m not in ("and", "or", "xor")]
        boolop = [m for m in unknown if m in ("and", "or", "xor")]
        if len(cmps) != 1:
            raise UnsupportedInstruction(inst, "comparison")
        f = self._compare(inst, cmps[0], t)
        dst = inst.operands[0]
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        writers = [self._writer(d, "pred", inst) for d in dsts]
        ra, rb = self._reader(inst.operands[1], t, inst), self._reader(inst.operands[2], t, inst)
        rc = self._reader(inst.operands[3], "pred", inst) if boolop else None
        comb = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[boolop[0]] if boolop else None

        def run(w, b, mask):
            with np.errstate(all="ignore"):
                r = f(ra(w, b), rb(w, b))
            neg = ~r
            if comb is not None:
                c = rc(w, b)
                r, neg = comb(r, c), comb(neg, c)
            writers[0](w, r, mask)
            if len(writers) > 1:
                writers[1](w, neg, mask)
        return run

    def _setp_halves(self, inst, unknown, t):
        """setp of bf16 (as bits) and of f16x2/bf16x2: `setp.lt.f16x2 p|q, a, b` sets p from
        the low halves and q from the high halves."""
        cmps = [m for m in unknown if m not in ("and", "or", "xor")]
        boolop = [m for m in unknown if m in ("and", "or", "xor")]
        if len(cmps) != 1:
            raise UnsupportedInstruction(inst, "comparison")
        rt, f = self._half_compare(inst, cmps[0], t)
        dst = inst.operands[0]
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        writers = [self._writer(d, "pred", inst) for d in dsts]
        ra, rb = self._reader(inst.operands[1], rt, inst), self._reader(inst.operands[2], rt, inst)
        rc = self._reader(inst.operands[3], "pred", inst) if boolop else None
        comb = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[boolop[0]] if boolop else None
        packed = t.endswith("x2")

        def run(w, b, mask):
            a, bb = ra(w, b), rb(w, b)
            with np.errstate(all="ignore"):
                if packed:
                    lo = f((a & np.uint32(0xFFFF)).astype(np.uint16), (bb & np.uint32(0xFFFF)).astype(np.uint16))
                    hi = f((a >> np.uint32(16)).astype(np.uint16), (bb >> np.uint32(16)).astype(np.uint16))
                    first, second = lo, hi
                else:
                    first = f(a, bb)
                    second = ~first
            if comb is not None:
                c = rc(w, b)
                first, second = comb(first, c), comb(second, c)
            writers[0](w, first, mask)
            if len(writers) > 1:
                writers[1](w, second, mask)
        return run

    def _op_mov(self, inst, index, unknown):
        self._check(inst, unknown)
        t = self._t(inst)
        dst, src = inst.operands
        if isinstance(src, Vec) and not isinstance(dst, Vec):  # pack {lo, hi} into a wider register
            n = len(src.items)
            pt = {2: {32: "b16", 64: "b32"}, 4: {32: "b8", 64: "b16"}}[n][_bits(t)]
            readers = [self._reader(o, pt, inst) for o in src.items]
            write = self._writer(dst, t, inst)
            pw = _bits(pt)

            def pack(w, b, mask):
                v = np.zeros(self.L, dtype=np.uint64)
                for k, r in enumerate(readers):
                    v |= r(w, b).view(_UNSIGNED[pw]).astype(np.uint64) << np.uint64(k * pw)
                write(w, _as(v, t), mask)
            return pack
        if isinstance(dst, Vec):  # unpack
            n = len(dst.items)
            pt = {2: {32: "b16", 64: "b32"}, 4: {32: "b8", 64: "b16"}}[n][_bits(t)]
            pw = _bits(pt)
            read = self._reader(src, t, inst)
            writers = [self._writer(o, pt, inst) for o in dst.items]

            def unpack(w, b, mask):
                v = read(w, b).view(_UNSIGNED[_bits(t)]).astype(np.uint64)
                for k, wr in enumerate(writers):
                    wr(w, ((v >> np.uint64(k * pw)) & np.uint64((1 << pw) - 1)).astype(_UNSIGNED[pw]), mask)
            return unpack
        return self._simple(inst, t, (t,), lambda a: a)

    def _op_cvt(self, inst, index, unknown):
        if "tf32" in inst.mods:
            return self._cvt_tf32(inst, unknown)
        self._check(inst, unknown, ("sat",))
        types = [m for m in inst.mods if m in _TYPES]
        if len(types) != 2:
            raise UnsupportedInstruction(inst, "types")
        dt, st = types
        mods = set(inst.mods)
        mode = _rounding(mods)
        int_round = [m for m in ("rni", "rzi", "rmi", "rpi") if m in mods]
        sat = "sat" in mods
        if dt in ("f16x2", "bf16x2"):  # cvt.rn.f16x2.f32 d, a, b: a to the upper half, b to the lower
            if st != "f32" or len(inst.operands) != 3 or int_round or sat:
                raise UnsupportedInstruction(inst, "cvt form")
            conv = _to_bf16 if dt == "bf16x2" else (lambda s, e, m: _to_f16(s, e, m).view(np.uint16))
            return self._simple(inst, "b32", ("f32", "f32"), lambda a, b: (conv(a.astype(np.float64), 0.0, mode).astype(np.uint32) << np.uint32(16))
                                | conv(b.astype(np.float64), 0.0, mode).astype(np.uint32))
        if st in ("f16x2", "bf16x2"):
            raise UnsupportedInstruction(inst, "type")
        if dt == "bf16" or st == "bf16":
            if sat or (dt == "bf16" and st == "bf16"):
                raise UnsupportedInstruction(inst, "cvt form")
            if dt == "bf16":  # from f32, f64, f16 or an integer: its exact value (<= 53 bits) rounded once
                if int_round:
                    raise UnsupportedInstruction(inst, "cvt form")
                src = "b16" if st == "f16" else st
                conv = (lambda a: a.view(np.float16).astype(np.float64)) if st == "f16" else (lambda a: a.astype(np.float64))
                return self._simple(inst, "b16", (src,), lambda a: _to_bf16(conv(a), 0.0, mode))
            if dt == "f32" and not int_round:
                return self._simple(inst, "f32", ("b16",), _bf16_to_f32)
            if dt == "f64" and not int_round:
                return self._simple(inst, "f64", ("b16",), lambda a: _bf16_to_f32(a).astype(np.float64))
            if dt == "f16" and not int_round:
                return self._simple(inst, "f16", ("b16",), lambda a: _to_f16(_bf16_to_f32(a).astype(np.float64), 0.0, mode))
            if dt in _FLOAT or dt in _HALVES:
                raise UnsupportedInstruction(inst, "cvt form")
            rnd = {"rni": np.rint, "rmi": np.floor, "rpi": np.ceil}.get(int_round[0] if int_round else "rzi", np.trunc)
            info = np.iinfo(_DTYPE[dt])

            def to_int(a):  # bf16 -> integer: rounded, saturated, NaN -> 0
                v = rnd(_bf16_to_f32(a).astype(np.float64))
                return np.clip(np.nan_to_num(v, nan=0.0), info.min, info.max).astype(_DTYPE[dt])
            return self._simple(inst, dt, ("b16",), to_int)
        if dt in _FLOAT and st in _FLOAT:
            if int_round:  # round to an integral value in the source format
                if dt != st:
                    raise UnsupportedInstruction(inst, "integer rounding between float types")
                fn = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[int_round[0]]
            elif _bits(dt) >= _bits(st):
                fn = lambda a: a.astype(_DTYPE[dt])  # exact
            elif dt == "f32":
                fn = (lambda a: a.astype(np.float32)) if mode == "rn" else (lambda a: _round_f32(a, 0.0, mode))
            else:  # f16 from f32/f64
                fn = lambda a: _to_f16(a.astype(np.float64), 0.0, mode)
            return self._simple(inst, dt, (st,), self._sat(inst, dt, fn))
        if dt in _FLOAT:  # integer -> float
            if int_round:
                raise UnsupportedInstruction(inst, "integer rounding of an integer")
            exact64 = _bits(st) <= 32 or dt == "f16"

            def i2f(a):
                if mode == "rn" and dt != "f16":
                    return a.astype(_DTYPE[dt])  # one rounding (exact for <= 32-bit integers to f64)
                if exact64 or mode == "rn":
                    s = a.astype(np.float64)
                    if dt == "f64" or mode == "rn" and _bits(st) == 64:
                        return a.astype(_DTYPE[dt])  # one rounding (exact for <= 32-bit integers)
                    return _round_f32(s, 0.0, mode) if dt == "f32" else _to_f16(s, 0.0, mode)
                # 64-bit integer, directed: float64 nearest, then the exact side of it
                s = a.astype(np.float64)
                side = np.array([(int(x) > int(y)) - (int(x) < int(y)) for x, y in zip(a.tolist(), s.tolist())], dtype=np.float64)
                if dt == "f32":
                    return _round_f32(s, side * np.spacing(np.abs(s)) / 4, mode)
                towards = {"rz": -np.sign(s), "rm": np.full(len(s), -1.0), "rp": np.full(len(s), 1.0)}[mode]
                move = (side != 0) & (np.sign(side) == towards)
                return np.where(move, np.nextafter(s, towards * np.inf), s)
            return self._simple(inst, dt, (st,), self._sat(inst, dt, i2f))
        if st in _FLOAT:  # float -> int: round, saturate; NaN as the H100 gives it
            fn_round = {"rni": np.rint, "rmi": np.floor, "rpi": np.ceil}.get(int_round[0] if int_round else "rzi", np.trunc)
            w = _bits(dt)
            info = np.iinfo(_DTYPE[dt])
            # NaN: 0x80000000 / 0x8000000000000000 for f32 -> s64/u64 and f64 -> s32/s64/u64 (as on
            # the H100), 0 for the others
            nan_value = 1 << (w - 1) if st == "f32" and w == 64 or st == "f64" and dt in ("s32", "s64", "u64") else 0
            lo, hi = float(info.min), float(2 ** (w - 1) if dt in _SIGNED else 2 ** w)

            def f2i(a):
                x = fn_round(a.astype(np.float64))
                nan = np.isnan(x)
                over, under = x >= hi, x < lo
                safe = np.where(nan | over | under, 0, x).astype(_DTYPE[dt])
                r = np.where(over, info.max, np.where(under, info.min, safe)).astype(_DTYPE[dt])
                return np.where(nan, np.array(nan_value, dtype=_UNSIGNED[w]).view(_DTYPE[dt]), r)
            return self._simple(inst, dt, (st,), f2i)

        # int -> int: sign- or zero-extend from the source width, wrap (or saturate) to the destination
        def cvt(a):
            src = a.astype(np.int64) if st in _SIGNED else a.astype(np.uint64)
            if sat:
                info = np.iinfo(_DTYPE[dt])
                if st in _SIGNED:
                    src = np.clip(src, max(info.min, -2**63), min(info.max, 2**63 - 1))
                else:
                    src = np.minimum(src, np.uint64(min(info.max, 2**64 - 1)))
                src = src.astype(np.int64 if dt in _SIGNED else np.uint64)
            return src.astype(_UNSIGNED[_bits(dt)]).view(_DTYPE[dt]) if _bits(dt) < 64 or dt not in _SIGNED else src.astype(np.int64)
        return self._simple(inst, dt, (st,), cvt)

    def _cvt_tf32(self, inst, unknown):
        """cvt.{rna,rn,rz}[.satfinite].tf32.f32 d, a: a rounded to TF32 (10 stored mantissa bits),
        held in a 32-bit register as an f32 bit pattern whose low 13 bits are zero. rna rounds
        half away from zero, rn half to even, rz truncates; NaN and infinity pass unchanged."""
        mode = [m for m in ("rna", "rn", "rz") if m in inst.mods]
        rest = [m for m in unknown if m not in ("tf32", "rna", "satfinite")]
        types = [m for m in inst.mods if m in _TYPES]
        if rest or len(mode) != 1 or types != ["f32"] or len(inst.operands) != 2:
            raise UnsupportedInstruction(inst, "cvt.tf32 form (cvt.rna/rn/rz.tf32.f32 only)")
        low = np.uint32(0x1FFF)

        def tf32(a):
            bits = a.view(np.uint32)
            special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
            if mode[0] == "rna":
                rounded = bits + np.uint32(0x1000)
            elif mode[0] == "rn":
                rounded = bits + np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1))
            else:
                rounded = bits
            return np.where(special, bits, rounded & ~low).astype(np.uint32)
        return self._simple(inst, "b32", ("f32",), tf32)

    def _op_cvta(self, inst, index, unknown):
        t = self._t(inst)
        space = [m for m in unknown if m != "to"]
        if len(space) != 1 or space[0] not in ("global", "shared", "local", "param", "const"):
            raise UnsupportedInstruction(inst, "state space")
        s = space[0]
        if s in ("param", "const"):
            raise UnsupportedInstruction(inst, "state space")
        to = "to" in inst.mods
        window = {"global": 0, "shared": SHARED_WINDOW, "local": LOCAL_WINDOW}[s]
        w64 = np.uint64(window)
        if to:
            return self._simple(inst, t, ("u64",), lambda a: a - w64)
        return self._simple(inst, t, ("u64",), lambda a: a + w64)

    def _unary_float(self, inst, unknown, fn):
        self._check(inst, unknown)
        t = self._t(inst)
        if t not in ("f32", "f64"):
            raise UnsupportedInstruction(inst, "type")
        if "approx" in inst.mods:
            self.approximations.add("approximate transcendentals are computed exactly (values may differ in the last bits)")
        return self._simple(inst, t, (t,), fn)

    def _directed_unary(self, inst, unknown, kind):
        """rcp/sqrt.{rz,rm,rp}.f32: float64 result, then the side of the exact value (exact
        where it matters: the float64 result has <= 25 significant bits there)."""
        mode = _rounding(inst.mods)
        t = self._t(inst)
        if t != "f32":
            raise UnsupportedInstruction(inst, f"directed rounding of {kind}.{t}")
        self._check(inst, unknown)

        def fn(a):
            x = a.astype(np.float64)
            with np.errstate(all="ignore"):
                if kind == "sqrt":
                    r = np.sqrt(x)
                    e = np.sign(x - r * r)
                else:
                    r = 1 / x
                    e = np.sign(1 - r * x) * np.sign(x)
                e = np.where(np.isfinite(r) & (x != 0), e * np.spacing(np.abs(r)) / 4, 0.0)
                return _round_f32(r, e, mode)
        return self._simple(inst, t, (t,), fn)

    def _op_rcp(self, inst, index, unknown):
        if _rounding(inst.mods) != "rn" and "approx" not in inst.mods:
            return self._directed_unary(inst, unknown, "rcp")
        return self._unary_float(inst, unknown, lambda a: 1 / a)

    def _op_sqrt(self, inst, index, unknown):
        if _rounding(inst.mods) != "rn" and "approx" not in inst.mods:
            return self._directed_unary(inst, unknown, "sqrt")
        return self._unary_float(inst, unknown, np.sqrt)

    def _op_rsqrt(self, inst, index, unknown):
        return self._unary_float(inst, unknown, lambda a: 1 / np.sqrt(a))

    def _op_ex2(self, inst, index, unknown):
        return self._unary_float(inst, unknown, np.exp2)

    def _op_lg2(self, inst, index, unknown):
        return self._unary_float(inst, unknown, np.log2)

    def _op_sin(self, inst, index, unknown):
        return self._unary_float(inst, unknown, np.sin)

    def _op_cos(self, inst, index, unknown):
        return self._unary_float(inst, unknown, np.cos)

    def _op_tanh(self, inst, index, unknown):
        return self._unary_float(inst, unknown, np.tanh)

    # control ----------------------------------------------------------------
    def _op_bra(self, inst, index, unknown):
        self._check(inst, unknown)
        target = inst.operands[0]
        if not isinstance(target, Sym) or target.name not in self.kernel.labels:
            raise UnsupportedInstruction(inst, "branch target")
        dest = self.kernel.labels[target.name]

        def bra(w, b, mask):
            w.pc[mask] = dest
            return True  # handled the PC of the executing lanes
        return bra

    def _op_ret(self, inst, index, unknown):
        self._check(inst, unknown)
        if not self.kernel.is_entry:
            raise UnsupportedInstruction(inst, "ret from a function")

        def ret(w, b, mask):
            w.pc[mask] = EXITED
            return True
        return ret

    _op_exit = _op_ret

    def _bar_red(self, inst, unknown):
        """bar.red.popc.u32 d, 0, {!}c (__syncthreads_count) and bar.red.{and,or}.pred p, 0, {!}c
        (__syncthreads_and/or): a barrier of the block, and the reduction of c over its lanes."""
        ops = [m for m in unknown if m in ("popc", "and", "or")]
        if len(ops) != 1 or len(inst.operands) not in (3, 4) or not (isinstance(inst.operands[1], Imm) and inst.operands[1].value == 0):
            raise UnsupportedInstruction(inst, "bar.red form")
        op = ops[0]
        src = inst.operands[-1]
        neg = isinstance(src, Reg) and src.name.startswith("!")
        rc = self._reader(Reg(src.name.lstrip("!")) if neg else src, "pred", inst)
        wd = self._writer(inst.operands[0], "u32" if op == "popc" else "pred", inst)

        def red(w, b, mask):
            c = rc(w, b)
            c = (~c if neg else c) & mask
            slots = b.slot
            nslots = int(slots.max()) + 1 if len(slots) else 1
            count = np.bincount(slots[mask], weights=c[mask], minlength=nslots)
            members = np.bincount(slots[mask], minlength=nslots)
            per_block = {"popc": count, "or": count > 0, "and": count == members}[op]
            wd(w, per_block[slots].astype(np.uint32 if op == "popc" else bool), mask)
            self.counters.barriers += _warp_count(np.nonzero(mask)[0])
        return red

    def _op_bar(self, inst, index, unknown):
        if "warp" in inst.mods:
            return lambda w, b, mask: None
        if "red" in unknown:
            return self._bar_red(inst, unknown)
        if "arrive" in unknown:
            raise UnsupportedInstruction(inst, "bar.arrive")
        if len(inst.operands) > 1:
            raise UnsupportedInstruction(inst, "bar.sync with a thread count")
        if inst.operands and not (isinstance(inst.operands[0], Imm) and inst.operands[0].value == 0):
            raise UnsupportedInstruction(inst, "named barrier other than 0")

        def bar(w, b, mask):
            # Lock-step min-PC scheduling of the whole group already makes every live lane of
            # the block arrive here before any lane goes on (see the module docstring).
            self.counters.barriers += _warp_count(np.nonzero(mask)[0])
        return bar

    _op_barrier = _op_bar

    def _op_membar(self, inst, index, unknown):
        return lambda w, b, mask: None

    _op_fence = _op_membar

    def _op_trap(self, inst, index, unknown):
        """__trap() (a failed check): decoded, and an error only if a lane executes it."""
        def trap(w, b, mask):
            if mask.any():
                raise InterpreterError(f"line {inst.line}: {inst.text!r}: the kernel executed trap (__trap(), a failed check) "
                                       "with the data the host left")
        return trap

    def _op_tex(self, inst, index, unknown):
        """tex / tld4 (texture fetches and gathers through a texture object): the texture's
        contents are not known here (CUDA arrays are made by runtime calls the recorder does not
        model), so every fetched value is 0, and the fetch is counted as one instruction with no
        memory traffic: the kernel's prediction is a lower bound that says so."""
        dst = inst.operands[0]
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        types = [m for m in inst.mods if m in _TYPES]
        if not types or len(inst.operands) < 2 or not isinstance(inst.operands[1], (Vec, Addr, Raw)):
            raise UnsupportedInstruction(inst, "texture fetch form")
        dt = types[0]
        writers = [self._writer(d, dt, inst) for d in dsts if not (isinstance(d, Sym) and d.name == "_")]
        self.missing.add("texture fetches' memory traffic (tex/tld4 read through a texture object: their values "
                         "are read as 0)")
        zeros = np.zeros(self.L, dtype=_DTYPE[dt])

        def tex(w, b, mask):
            for wr in writers:
                wr(w, zeros, mask)
        return tex

    _op_tld4 = _op_tex

    def _op_sust(self, inst, index, unknown):
        """sust / sured (surface stores and reductions through a surface object): the surface's
        memory is a CUDA array the recorder does not model, so nothing is written; the store is
        counted as one instruction with no memory traffic, and the prediction is a lower bound
        that says so. suld (surface loads) reads zeros, like a texture fetch."""
        if len(inst.operands) < 2 or not isinstance(inst.operands[0], (Addr, Vec, Raw)):
            raise UnsupportedInstruction(inst, "surface store form")
        self.missing.add("surface stores' memory traffic (sust/sured write a CUDA array through a surface object: "
                         "not modelled)")
        return lambda w, b, mask: None

    _op_sured = _op_sust

    def _op_suld(self, inst, index, unknown):
        dst = inst.operands[0]
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        types = [m for m in inst.mods if m in _TYPES]
        if not types or len(inst.operands) < 2:
            raise UnsupportedInstruction(inst, "surface load form")
        writers = [self._writer(d, types[-1], inst) for d in dsts if not (isinstance(d, Sym) and d.name == "_")]
        self.missing.add("surface loads' memory traffic (suld reads a CUDA array through a surface object: its values "
                         "are read as 0)")
        zeros = np.zeros(self.L, dtype=_DTYPE[types[-1]])

        def suld(w, b, mask):
            for wr in writers:
                wr(w, zeros, mask)
        return suld

    def _op_griddepcontrol(self, inst, index, unknown):
        """griddepcontrol.wait / .launch_dependents (programmatic dependent launch, CUB's kernels
        on sm_90): one launch is interpreted at a time, after everything before it, so waiting
        for the grids it depends on is immediate, and allowing dependents to start changes nothing."""
        if not {"wait", "launch_dependents"} & set(inst.mods):
            raise UnsupportedInstruction(inst, "griddepcontrol form")
        return lambda w, b, mask: None

    def _op_nanosleep(self, inst, index, unknown):  # __nanosleep: no work, no values (its time is not modelled)
        return lambda w, b, mask: None

    def _op_prefetch(self, inst, index, unknown):  # prefetch.global.L2 and friends: a hint, no values
        return lambda w, b, mask: None

    _op_prefetchu = _op_prefetch
    _op_applypriority = _op_prefetch
    _op_discard = _op_prefetch

    # warp-level ---------------------------------------------------------------
    def _op_shfl(self, inst, index, unknown):
        modes = [m for m in unknown if m in ("up", "down", "bfly", "idx")]
        if len(modes) != 1 or "sync" not in inst.mods:
            raise UnsupportedInstruction(inst, "shfl form")
        mode = modes[0]
        dst = inst.operands[0]
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        wd = self._writer(dsts[0], "b32", inst)
        wp = self._writer(dsts[1], "pred", inst) if len(dsts) > 1 else None
        ra, rb, rc = (self._reader(o, "b32", inst) for o in inst.operands[1:4])
        group_lane = np.arange(self.L, dtype=np.int64)
        lane = group_lane & (WARP - 1)
        warp_base = group_lane - lane

        def shfl(w, b, mask):
            a = ra(w, b)
            bval = rb(w, b).astype(np.int64) & 31
            c = rc(w, b).astype(np.int64)
            cval, segmask = c & 31, (c >> 8) & 31
            max_lane = (lane & segmask) | (cval & ~segmask)
            min_lane = lane & segmask
            if mode == "up":
                j = lane - bval
                ok = j >= max_lane
            elif mode == "down":
                j = lane + bval
                ok = j <= max_lane
            elif mode == "bfly":
                j = lane ^ bval
                ok = j <= max_lane
            else:
                j = min_lane | (bval & ~segmask)
                ok = j <= max_lane
            j = np.where(ok, j, lane)
            wd(w, a[warp_base + j], mask)
            if wp is not None:
                wp(w, ok, mask)
        return shfl

    def _op_vote(self, inst, index, unknown):
        modes = [m for m in unknown if m in ("all", "any", "uni", "ballot")]
        if len(modes) != 1:
            raise UnsupportedInstruction(inst, "vote form")
        mode = modes[0]
        if mode == "ballot":
            wd = self._writer(inst.operands[0], "b32", inst)
            rp = self._reader(inst.operands[1], "pred", inst)
            def ballot(w, b, mask):
                wd(w, self._per_warp_mask(rp(w, b) & mask), mask)
            return ballot
        wd = self._writer(inst.operands[0], "pred", inst)
        src = inst.operands[1]
        neg = isinstance(src, Reg) and src.name.startswith("!")
        rp = self._reader(Reg(src.name.lstrip("!")) if neg else src, "pred", inst)

        def vote(w, b, mask):
            p = rp(w, b)
            if neg:
                p = ~p
            on = (p & mask).reshape(-1, WARP)
            off = (~p & mask).reshape(-1, WARP)
            r = ~off.any(axis=1) if mode == "all" else on.any(axis=1) if mode == "any" else ~(on.any(axis=1) & off.any(axis=1))
            wd(w, np.repeat(r, WARP), mask)
        return vote

    def _op_redux(self, inst, index, unknown):
        """redux.sync.{add,min,max,and,or,xor}.{u32,s32,b32} d, a, membermask: the reduction over
        the warp's active lanes (sm_80 __reduce_*_sync), given to each of them."""
        ops = [m for m in unknown if m in ("add", "min", "max", "and", "or", "xor")]
        t = self._t(inst)
        if len(ops) != 1 or "sync" not in inst.mods or t not in ("u32", "s32", "b32"):
            raise UnsupportedInstruction(inst, "redux form")
        op = ops[0]
        wd = self._writer(inst.operands[0], t, inst)
        ra = self._reader(inst.operands[1], t, inst)
        dtype = _DTYPE[t]

        def redux(w, b, mask):
            a = ra(w, b).astype(np.int64).reshape(-1, WARP)
            on = mask.reshape(-1, WARP)
            if op == "add":
                r = np.where(on, a, 0).sum(axis=1)
            elif op in ("min", "max"):
                big = np.iinfo(np.int64).max
                r = (np.where(on, a, big).min(axis=1) if op == "min" else np.where(on, a, -big).max(axis=1))
            else:
                fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
                start = -1 if op == "and" else 0
                r = fn.reduce(np.where(on, a, start), axis=1)
            wd(w, np.repeat((r & 0xFFFFFFFF).astype(np.uint32), WARP).view(dtype), mask)
        return redux

    def _op_match(self, inst, index, unknown):
        """match.any.sync.b32/b64 d, a, membermask: the lanes of the warp (active ones) holding
        the same a; match.all.sync d[|p], a, membermask: all of them if every one holds the same
        a (p true), else 0 (p false)."""
        modes = [m for m in unknown if m in ("any", "all")]
        t = self._t(inst)
        if len(modes) != 1 or "sync" not in inst.mods or t not in ("b32", "b64"):
            raise UnsupportedInstruction(inst, "match form")
        dst = inst.operands[0]
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        wd = self._writer(dsts[0], "b32", inst)
        wp = self._writer(dsts[1], "pred", inst) if len(dsts) > 1 else None
        ra = self._reader(inst.operands[1], t, inst)
        weights = np.uint64(1) << np.arange(WARP, dtype=np.uint64)

        def match(w, b, mask):
            a = ra(w, b).astype(np.uint64).reshape(-1, WARP)
            on = mask.reshape(-1, WARP)
            same = (a[:, :, None] == a[:, None, :]) & on[:, None, :] & on[:, :, None]  # [warp, lane, other lane]
            lanes = (same * weights).sum(axis=2).astype(np.uint32)
            if modes[0] == "any":
                wd(w, lanes.reshape(-1), mask)
                return
            active = (on * weights).sum(axis=1).astype(np.uint32)
            uniform = ((lanes == active[:, None]) | ~on).all(axis=1)
            wd(w, np.where(uniform[:, None], lanes, 0).astype(np.uint32).reshape(-1), mask)
            if wp is not None:
                wp(w, np.repeat(uniform, WARP), mask)
        return match

    def _op_mbarrier(self, inst, index, unknown):
        """mbarrier (cuda::barrier, cuda::pipeline): init, arrive[_drop] (count), test_wait /
        try_wait (a state, or .parity), inval. The 8 bytes in shared memory hold the pending
        count (low word) and the phase (bit 31 of the high word) over the expected count; an
        arrival that completes the phase flips it and restores the count. Lanes arrive in lane
        order; a wait is true once the phase its state was taken in has completed."""
        kinds = [m for m in unknown if m in ("init", "arrive", "arrive_drop", "test_wait", "try_wait", "inval")]
        bad = [m for m in unknown if m in ("expect_tx", "complete_tx", "pending_count")]
        space = "shared" if any(m.startswith("shared") for m in inst.mods) else "generic"
        if len(kinds) != 1 or bad:
            raise UnsupportedInstruction(inst, "mbarrier form (transaction counts of TMA are not interpreted)")
        kind = kinds[0]
        if kind == "inval":
            return lambda w, b, mask: None
        ops = inst.operands
        at = ops[0] if kind == "init" else ops[1]
        addr = self._address(at, space, inst)
        parity = "parity" in inst.mods

        def slots(w, b, lanes):
            a = addr(w, b)[lanes]
            if space == "generic":
                a = a - np.uint64(SHARED_WINDOW)
            return self._shared_offsets(b, a, lanes, 8, inst).astype(np.int64)

        def state(b, off):
            word = b.shared[off:off + 8].view(np.uint32)
            return int(word[0]), int(word[1]) & 0x7FFFFFFF, int(word[1]) >> 31

        def put(b, off, pending, expected, phase):
            b.shared[off:off + 8] = np.array([pending, (phase << 31) | expected], np.uint32).view(np.uint8)

        if kind == "init":
            rc = self._reader(ops[1], "u32", inst)

            def init(w, b, mask):
                lanes = np.nonzero(mask)[0]
                counts = rc(w, b)
                for lane, off in zip(lanes.tolist(), slots(w, b, lanes).tolist()):
                    put(b, off, int(counts[lane]), int(counts[lane]), 0)
            return init
        if kind in ("arrive", "arrive_drop"):
            wd = self._writer(ops[0], "b64", inst) if not (isinstance(ops[0], Sym) and ops[0].name == "_") else None
            rc = self._reader(ops[2], "u32", inst) if len(ops) > 2 else None

            def arrive(w, b, mask):
                lanes = np.nonzero(mask)[0]
                counts = rc(w, b) if rc else None
                tokens = np.zeros(self.L, np.uint64)
                for lane, off in zip(lanes.tolist(), slots(w, b, lanes).tolist()):
                    pending, expected, phase = state(b, off)
                    tokens[lane] = phase
                    pending -= int(counts[lane]) if counts is not None else 1
                    if kind == "arrive_drop":
                        expected -= 1
                    if pending <= 0:
                        phase, pending = phase ^ 1, expected
                    put(b, off, pending, expected, phase)
                if wd:
                    wd(w, tokens, mask)
            return arrive
        wp = self._writer(ops[0], "pred", inst)
        rt = self._reader(ops[2], "u32" if parity else "b64", inst)

        def wait(w, b, mask):
            lanes = np.nonzero(mask)[0]
            token = rt(w, b).astype(np.uint64)
            done = np.zeros(self.L, bool)
            for lane, off in zip(lanes.tolist(), slots(w, b, lanes).tolist()):
                done[lane] = state(b, off)[2] != (int(token[lane]) & 1)
            wp(w, done, mask)
        return wait

    def _op_vabsdiff4(self, inst, index, unknown):
        """vabsdiff4.u32.u32.u32{.add} d, a, b, c: |a - b| of each byte (unsigned), summed with c
        (.add, the sum of absolute differences of __vsadu4), or per byte into d (no .add: c's
        bytes are not merged, the form needs the mask operand)."""
        types = [m for m in inst.mods if m in _TYPES]
        rest = [m for m in unknown if m != "add"]
        if types != ["u32", "u32", "u32"] or rest or len(inst.operands) != 4:
            raise UnsupportedInstruction(inst, "vabsdiff4 form (unsigned bytes, .add or none)")
        add = "add" in unknown

        def fn(a, b, c):
            x = a.astype(np.uint32).view(np.uint8).reshape(-1, 4).astype(np.int32)
            y = b.astype(np.uint32).view(np.uint8).reshape(-1, 4).astype(np.int32)
            d = np.abs(x - y)
            if add:
                return (d.sum(axis=1).astype(np.uint32) + c).astype(np.uint32)
            return d.astype(np.uint8).reshape(-1).view(np.uint32).copy()
        return self._simple(inst, "u32", ("u32", "u32", "u32"), fn)

    def _op_activemask(self, inst, index, unknown):
        wd = self._writer(inst.operands[0], "b32", inst)
        return lambda w, b, mask: wd(w, self._per_warp_mask(mask), mask)

    def _per_warp_mask(self, bits: np.ndarray) -> np.ndarray:
        """Each warp's 32 lane booleans as a 32-bit mask, repeated on the warp's lanes."""
        weights = np.uint64(1) << np.arange(WARP, dtype=np.uint64)
        return np.repeat((bits.reshape(-1, WARP) * weights).sum(axis=1).astype(np.uint32), WARP)

    def _op_mma(self, inst, index, unknown):
        """mma.sync.aligned.m16n8k16.row.col with f16/bf16 inputs and f32/f16 accumulators,
        computed per warp with the PTX ISA's fragment layouts (groupID = lane / 4,
        threadID_in_group = lane % 4): A (16x16) a0..a7 in 4 registers, row groupID (+8 for
        a2, a3, a6, a7), column 2 threadID_in_group + (i % 2) (+8 for a4..a7); B (16x8)
        b0..b3, row 2 threadID_in_group + (i % 2) (+8 for b2, b3), column groupID; C and D
        (16x8) c0..c3, row groupID (+8 for c2, c3), column 2 threadID_in_group + (i % 2).
        D = A B + C in float64, rounded once (the H100's results match exactly)."""
        shape = next((m for m in inst.mods if m.startswith("m") and "n" in m and "k" in m), "")
        types = [m for m in inst.mods if m in _TYPES]
        self._check(inst, [m for m in unknown if m != shape], ("row", "col"))
        if shape != "m16n8k16" or "row" not in inst.mods or "col" not in inst.mods or len(types) != 4:
            raise UnsupportedInstruction(inst, "mma form (only m16n8k16.row.col is implemented)")
        dt, at, bt, ct = types
        if at != bt or at not in ("f16", "bf16") or dt not in ("f32", "f16") or ct not in ("f32", "f16"):
            raise UnsupportedInstruction(inst, "mma types")
        ops = inst.operands
        if len(ops) != 4 or not all(isinstance(o, Vec) for o in ops):
            raise UnsupportedInstruction(inst, "operands")
        nacc = 4 if dt == "f32" else 2
        if [len(o.items) for o in ops] != [nacc, 4, 2, 4 if ct == "f32" else 2]:
            raise UnsupportedInstruction(inst, "operand vector sizes")
        writers = [self._writer(o, "f32" if dt == "f32" else "b32", inst) for o in ops[0].items]
        ra = [self._reader(o, "b32", inst) for o in ops[1].items]
        rb = [self._reader(o, "b32", inst) for o in ops[2].items]
        rc = [self._reader(o, "f32" if ct == "f32" else "b32", inst) for o in ops[3].items]
        nums = [int(x) for x in re.findall(r"\d+", shape)]
        self._tensor_names[index] = "HMMA." + "".join(str(x) for x in nums) + "." + dt.upper()

        lane = np.arange(self.L) % WARP
        g, tg = lane >> 2, lane & 3
        nw = self.L // WARP
        wi = (np.arange(self.L) // WARP)[:, None]
        i8, i4 = np.arange(8), np.arange(4)
        a_row, a_col = g[:, None] + 8 * ((i8 >> 1) & 1), 2 * tg[:, None] + (i8 & 1) + 8 * (i8 >> 2)
        b_row, b_col = 2 * tg[:, None] + (i4 & 1) + 8 * (i4 >> 1), np.broadcast_to(g[:, None], (self.L, 4))
        c_row, c_col = g[:, None] + 8 * (i4 >> 1), 2 * tg[:, None] + (i4 & 1)
        a_at = (wi * 256 + a_row * 16 + a_col).reshape(-1)  # flat positions in the per-warp matrices
        b_at = (wi * 128 + b_row * 8 + b_col).reshape(-1)
        c_at = (wi * 128 + c_row * 8 + c_col).reshape(-1)

        def halves(regs, typ):  # (L, 2 * len(regs)) float64: lower half first
            h = np.stack(regs, axis=1).astype(np.uint32).view(np.uint16)  # little-endian: low half first
            return (_bf16_to_f32(h) if typ == "bf16" else h.view(np.float16)).astype(np.float64)

        def mma(w, b, mask):
            av = halves([r(w, b) for r in ra], at)
            bv = halves([r(w, b) for r in rb], bt)
            if ct == "f32":
                cv = np.stack([r(w, b) for r in rc], axis=1).astype(np.float64)
            else:
                cv = halves([r(w, b) for r in rc], "f16")
            A = np.empty(nw * 256)
            B = np.empty(nw * 128)
            C = np.empty(nw * 128)
            A[a_at] = av.reshape(-1)
            B[b_at] = bv.reshape(-1)
            C[c_at] = cv.reshape(-1)
            D = (A.reshape(nw, 16, 16) @ B.reshape(nw, 16, 8) + C.reshape(nw, 16, 8)).reshape(-1)[c_at].reshape(self.L, 4)
            if dt == "f32":
                for k, wr in enumerate(writers):
                    wr(w, D[:, k].astype(np.float32), mask)
            else:
                h = _to_f16(D.reshape(-1), 0.0, "rn").view(np.uint16).reshape(self.L, 4).astype(np.uint32)
                for k, wr in enumerate(writers):
                    wr(w, h[:, 2 * k] | (h[:, 2 * k + 1] << np.uint32(16)), mask)
        return mma

    # wmma ---------------------------------------------------------------------
    # Fragments are opaque to the program (it only loads, stores, multiplies them and changes
    # their elements one by one), so the interpreter picks its own per-lane layout, for every
    # shape and type of the PTX ISA's wmma but the sub-byte ones: a fragment is held in words
    # of one register each (8 bytes for f64, else 4), and register k of lane l holds word
    # (32 k + l) % W of the fragment's W words. a/b words are in memory order (the bytes of the
    # block as laid out in memory, so a 16 x 16 f16 fragment's 8 registers hold every pair
    # twice); the mma reads .row/.col from its own qualifiers. c/d words are in the logical
    # (row-major) order of the M x N matrix, since the load or store names the layout.
    # Memory accesses follow what the SASS does (Nsight Compute on the zoo's gemm_wmma): an a/b
    # load is LDSM-like, 16 bytes per lane (lane l of a 16 x 16 f16 block: memory row l / 2,
    # columns 8 (l % 2) ..+8), fewer when the block is smaller; a c load or d store is 8 bytes
    # per lane per access (4 accesses for a 16 x 16 f32 block). Each access counts like a per-
    # lane ld/st of its size: one request per warp, sectors, shared wavefronts.
    def _wmma_shape(self, inst) -> tuple[str, tuple[int, int, int]]:
        found = [m for m in inst.mods if m in WMMA_SHAPES]
        if len(found) != 1:
            raise UnsupportedInstruction(inst, "wmma shape (m16n16k16, m32n8k16, m8n32k16, m16n16k8, m8n8k4)")
        return found[0], WMMA_SHAPES[found[0]]

    _wmma_block = staticmethod(wmma_block)
    _wmma_accesses = staticmethod(wmma_accesses)

    def _wmma_form(self, inst, unknown, frag_ok):
        mods = inst.mods
        frag = next((m for m in ("a", "b", "c", "d") if m in mods), None)
        layout = [m for m in ("row", "col") if m in mods]
        space = [m for m in unknown if m in ("global", "shared", "generic")]
        shape, mnk = self._wmma_shape(inst)
        types = [m for m in mods if m in WMMA_AB or m in WMMA_CD or m in _TYPES]
        rest = [m for m in unknown if m not in ("a", "b", "c", "d", "row", "col", "load", "store", shape, "tf32")
                and m not in space and m not in WMMA_AB]
        if rest or frag not in frag_ok or len(layout) != 1 or len(space) > 1 or len(types) != 1:
            raise UnsupportedInstruction(inst, "wmma form")
        t = types[0]
        table = WMMA_AB if frag in ("a", "b") else WMMA_CD
        if t not in table:
            raise UnsupportedInstruction(inst, "wmma fragment type (a/b: f16, bf16, tf32, f64, u8, s8; c/d: f32, f16, s32, f64)")
        return frag, layout[0], (space[0] if space else "generic"), t, mnk

    def _wmma_words(self, frag: str, t: str, mnk: tuple[int, int, int], regs: Vec, inst) -> tuple[int, int, str]:
        """(words W of the fragment, bytes per word, register type) after checking its registers."""
        es = (WMMA_AB if frag in ("a", "b") else WMMA_CD)[t]
        word = 8 if t == "f64" else 4
        rows, cols = self._wmma_block(frag, "row", mnk)
        words = rows * cols * es // word
        if not isinstance(regs, Vec) or not regs.items or len(regs.items) * WARP < words:
            raise UnsupportedInstruction(inst, "wmma fragment registers")
        return words, word, ("f64" if t == "f64" else "f32" if t in ("f32", "tf32") else "b32")

    def _wmma_places(self, words: int) -> list[np.ndarray]:
        """Per register k (at most 8), each lane's word in the flat (warps x WORDS) fragment
        array: warp * WORDS + (32 k + lane) % WORDS (cached: thousands of wmma instructions
        share a handful of sizes)."""
        cache = self._wmma_place_cache
        key = (self.L, words)
        if key not in cache:
            lane, warp = np.arange(self.L) & (WARP - 1), np.arange(self.L) // WARP
            cache[key] = [(warp * words + (WARP * k + lane) % words).astype(np.int64) for k in range(8)]
        return cache[key]

    def _wmma_lanes(self, inst, mask):
        lanes = np.nonzero(mask)[0]
        if len(lanes) == 0:
            return None
        full = mask.reshape(-1, WARP)
        warps = full.any(axis=1)
        if not full[warps].all():
            raise InterpreterError(f"line {inst.line}: {inst.text!r}: wmma executed by part of a warp")
        return lanes

    def _op_wmma(self, inst, index, unknown):
        if "load" in inst.mods:
            return self._wmma_load(inst, unknown)
        if "store" in inst.mods:
            return self._wmma_store(inst, unknown)
        if "mma" in inst.mods:
            return self._wmma_mma(inst, index, unknown)
        raise UnsupportedInstruction(inst)

    def _wmma_setup(self, inst, frag, space):
        ops = inst.operands
        addr_op, stride_op = (ops[1], ops[2] if len(ops) > 2 else None) if frag != "d" else (ops[0], ops[2] if len(ops) > 2 else None)
        addr = self._address(addr_op, space, inst)
        default = WMMA_SHAPES[self._wmma_shape(inst)[0]]
        rows_cols = self._wmma_block(frag, next(m for m in ("row", "col") if m in inst.mods), default)
        # without a stride operand the block is packed: the stride is its row length
        stride = (self._reader(stride_op, "u32", inst) if stride_op is not None
                  else (lambda w, b: np.full(self.L, rows_cols[1], dtype=np.uint32)))
        return addr, stride, (ops[0] if frag != "d" else ops[1])

    @staticmethod
    def _wmma_order(layout: str, mnk: tuple[int, int, int]) -> np.ndarray:
        """For c/d: element i of the logical row-major M x N matrix is element order[i] of the
        block in memory order (identity for .row; for .col, (r, c) is at c M + r)."""
        m, n, _ = mnk
        if layout == "row":
            return np.arange(m * n)
        return np.arange(m * n).reshape(n, m).T.reshape(-1)

    def _wmma_load(self, inst, unknown):
        frag, layout, space, t, mnk = self._wmma_form(inst, [m for m in unknown if m != "load"], ("a", "b", "c"))
        addr, stride, regs = self._wmma_setup(inst, frag, space)
        words, word, rtype = self._wmma_words(frag, t, mnk, regs, inst)
        es = (WMMA_AB if frag in ("a", "b") else WMMA_CD)[t]
        rows, cols = self._wmma_block(frag, layout, mnk)
        writers = [self._writer(r, rtype, inst) for r in regs.items]
        accesses = self._wmma_accesses(frag, rows, cols * es)
        nw = self.L // WARP
        lane_all = np.arange(self.L) & (WARP - 1)
        warp_all = np.arange(self.L) // WARP
        wdtype = np.uint64 if word == 8 else np.uint32
        vtype = {"f64": np.float64, "f32": np.float32}.get(rtype, np.uint32)  # what the register writer takes
        order = self._wmma_order(layout, mnk) if frag == "c" else None

        # per access and lane, precomputed (the loads of a GEMM's inner loop run millions of
        # times): the row and byte column it reads, and where its bytes go in the flat block
        row_bytes = cols * es
        plan = []
        for size, row, col in accesses:
            r_all, c_all = row[lane_all].astype(np.uint64), col[lane_all].astype(np.uint64)
            into = (((warp_all * rows + row[lane_all]) * row_bytes + col[lane_all])[:, None] + np.arange(size)).astype(np.int64)
            plan.append((size, r_all, c_all, into))
        pick = self._wmma_places(words)
        if order is not None:  # c: from memory order to the logical row-major order of its elements
            element = (np.arange(nw)[:, None] * rows * cols + order[None, :]).reshape(-1)
            reorder = (element[:, None] * es + np.arange(es)).reshape(-1)
        ses = np.uint64(es)

        def load(w, b, mask):
            lanes = self._wmma_lanes(inst, mask)
            if lanes is None:
                return
            every = len(lanes) == self.L
            base, st = addr(w, b), stride(w, b).astype(np.uint64)
            if not every:
                base, st = base[lanes], st[lanes]
            mem = np.zeros(nw * rows * row_bytes, dtype=np.uint8)  # the blocks in memory order, bytes
            for size, r_all, c_all, into in plan:
                r, cl, at = (r_all, c_all, into) if every else (r_all[lanes], c_all[lanes], into[lanes])
                a = base + r * st * ses + cl
                if space == "generic":
                    data = np.zeros((len(lanes), size), dtype=np.uint8)
                    for sp, sub, rel in self._classify(a, space):
                        data[sub] = self._load_bytes(w, b, sp, rel[sub], lanes[sub], size, inst)
                else:
                    data = self._load_bytes(w, b, space, a, lanes, size, inst)
                mem[at] = data
            if order is not None:
                mem = mem[reorder]
            flat = mem.view(wdtype)
            for k, wr in enumerate(writers):
                wr(w, flat[pick[k]].view(vtype), mask)
        return load

    def _wmma_store(self, inst, unknown):
        frag, layout, space, t, mnk = self._wmma_form(inst, [m for m in unknown if m != "store"], ("d",))
        if space in ("const", "param"):
            raise UnsupportedInstruction(inst, f"{space} state space")
        addr, stride, regs = self._wmma_setup(inst, frag, space)
        words, word, rtype = self._wmma_words(frag, t, mnk, regs, inst)
        es = WMMA_CD[t]
        rows, cols = self._wmma_block(frag, layout, mnk)
        readers = [self._reader(r, rtype, inst) for r in regs.items]
        accesses = self._wmma_accesses(frag, rows, cols * es)
        nw = self.L // WARP
        lane_all = np.arange(self.L) & (WARP - 1)
        warp_all = np.arange(self.L) // WARP
        wdtype = np.uint64 if word == 8 else np.uint32
        order = self._wmma_order(layout, mnk)
        c = self.counters

        def store(w, b, mask):
            lanes = self._wmma_lanes(inst, mask)
            if lanes is None:
                return
            flat = np.zeros((nw, words), dtype=wdtype)
            for k in reversed(range(len(readers))):  # a word held twice: the first register's copy wins
                flat[warp_all, (WARP * k + lane_all) % words] = readers[k](w, b).view(wdtype)
            logical = flat.view(np.uint8).reshape(nw, rows * cols, es)
            memory_order = np.empty_like(logical)
            memory_order[:, order] = logical  # logical element i goes to memory element order[i]
            mem = memory_order.reshape(nw, rows, cols * es)
            base, st = addr(w, b)[lanes], stride(w, b)[lanes].astype(np.uint64)
            lane, warp = lanes & (WARP - 1), lanes // WARP
            for size, row, col in accesses:
                r, cl = row[lane], col[lane]
                a = base + r.astype(np.uint64) * st * np.uint64(es) + cl.astype(np.uint64)
                data = mem[warp[:, None], r[:, None], cl[:, None] + np.arange(size)]
                for sp, sub, rel in self._classify(a, space):
                    sel = lanes if sub is None else lanes[sub]
                    d = data if sub is None else data[sub]
                    rel = rel if sub is None else rel[sub]
                    if sp == "global":
                        self.memory.write(rel, d, inst)
                        self._count_global(c, "store", b, rel, size, sel)
                    elif sp == "shared":
                        _flat_write(b.shared, self._shared_offsets(b, rel, sel, size, inst), d, "shared", inst)
                        wf, ideal = self._wavefronts(rel, size, sel)
                        c.shared_store_requests += _warp_count(sel)
                        c.shared_store_wavefronts += wf
                        c.shared_ideal_wavefronts += ideal
                    else:
                        self._local_write(w, rel, sel, d, inst)
                        c.local_store_sectors += _local_sectors(sel, size)
        return store

    @staticmethod
    def _wmma_values(raw: np.ndarray, t: str) -> np.ndarray:
        """A fragment's elements (raw bytes, (..., es)) as exact float64 or int64 values."""
        if t in ("f16", "bf16"):
            h = raw.copy().view(np.uint16)[..., 0]
            return (_bf16_to_f32(h) if t == "bf16" else h.view(np.float16)).astype(np.float64)
        if t == "tf32":  # the tensor core reads the top 19 bits of the f32 pattern
            bits = raw.copy().view(np.uint32)[..., 0] & np.uint32(0xFFFFE000)
            return bits.view(np.float32).astype(np.float64)
        if t in ("f32", "f64"):
            return raw.copy().view(np.float32 if t == "f32" else np.float64)[..., 0].astype(np.float64)
        return raw.copy().view({"u8": np.uint8, "s8": np.int8, "s32": np.int32}[t])[..., 0].astype(np.int64)

    def _wmma_mma(self, inst, index, unknown):
        """D = A B + C per warp: floating point in float64 rounded once to D's type, integers
        exactly (s32 wraps, or saturates with .satfinite); counted as the SASS MMAs of its shape
        (_WMMA_SASS: 2 HMMA.16816 for m16n16k16 f16, 1 DMMA.884 for m8n8k4 f64, ...)."""
        layouts = [m for m in inst.mods if m in ("row", "col")]
        shape, mnk = self._wmma_shape(inst)
        types = [m for m in inst.mods if m in WMMA_AB or m in WMMA_CD or m in _TYPES]
        rest = [m for m in unknown if m not in ("mma", "row", "col", shape, "satfinite", "tf32") and m not in WMMA_AB]
        if rest or len(layouts) != 2:
            raise UnsupportedInstruction(inst, "wmma.mma form")
        if len(types) == 2:  # wmma.mma...f32.f32: f16 inputs implied
            dt, ct, at = types[0], types[1], "f16"
        elif len(types) == 4 and types[1] == types[2]:
            dt, at, _, ct = types
        else:
            raise UnsupportedInstruction(inst, "wmma.mma types")
        integer = at in ("u8", "s8")
        if at not in WMMA_SASS or dt not in WMMA_CD or ct not in WMMA_CD or \
                integer != (dt == "s32") or integer != (ct == "s32") or (at == "f64") != (dt == "f64"):
            raise UnsupportedInstruction(inst, "wmma.mma types")
        ops = inst.operands
        if len(ops) != 4 or not all(isinstance(o, Vec) for o in ops):
            raise UnsupportedInstruction(inst, "operands")
        m, n, k = mnk
        wa, worda, ta = self._wmma_words("a", at, mnk, ops[1], inst)
        wb, _, tb = self._wmma_words("b", at, mnk, ops[2], inst)
        wc, wordc, tc = self._wmma_words("c", ct, mnk, ops[3], inst)
        wd, wordd, td = self._wmma_words("d", dt, mnk, ops[0], inst)
        writers = [self._writer(o, td, inst) for o in ops[0].items]
        ra = [self._reader(o, ta, inst) for o in ops[1].items]
        rb = [self._reader(o, tb, inst) for o in ops[2].items]
        rc = [self._reader(o, tc, inst) for o in ops[3].items]
        sass, sm, sn, sk = WMMA_SASS[at]
        suffix = {"f32": ".F32", "f16": ".F16", "f64": "", "s32": ""}[dt] + {"tf32": ".TF32", "bf16": ".BF16"}.get(at, "")
        if integer:
            suffix = f".{at.upper()}.{at.upper()}"
        self._tensor_names[index] = sass + suffix
        self._tensor_per_warp[index] = max(1, m * n * k // (sm * sn * sk))
        nw = self.L // WARP
        a_layout, b_layout = layouts
        esa, esc = WMMA_AB[at], WMMA_CD[ct]
        satfinite = "satfinite" in inst.mods
        dtype_d = {"f64": np.float64, "f32": np.float32}.get(td, np.uint32)  # what D's register writers take

        places = {n_words: self._wmma_places(n_words) for n_words in {wa, wb, wc, wd}}

        def gather(regs, words, word, w, b):
            flat = np.zeros(nw * words, dtype=np.uint64 if word == 8 else np.uint32)
            at = places[words]
            for i in reversed(range(len(regs))):
                flat[at[i]] = regs[i](w, b).view(flat.dtype)
            return flat.view(np.uint8).reshape(nw, -1)

        def matrix(raw, layout, rows, cols, es, t):  # the logical rows x cols matrix of an a/b block in memory order
            block = (rows, cols) if layout == "row" else (cols, rows)
            v = self._wmma_values(raw.reshape(nw, block[0], block[1], es), t)
            return v if layout == "row" else v.transpose(0, 2, 1)

        def mma(w, b, mask):
            if self._wmma_lanes(inst, mask) is None:
                return
            A = matrix(gather(ra, wa, worda, w, b), a_layout, m, k, esa, at)
            B = matrix(gather(rb, wb, worda, w, b), b_layout, k, n, esa, at)
            C = self._wmma_values(gather(rc, wc, wordc, w, b).reshape(nw, m, n, esc), ct)
            if integer:
                D = np.einsum("wij,wjk->wik", A, B) + C
                D = np.clip(D, -2**31, 2**31 - 1) if satfinite else ((D + 2**31) % 2**32) - 2**31
                out = D.astype(np.int32)
            else:
                D = A @ B + C
                out = D.astype({"f32": np.float32, "f16": np.float16, "f64": np.float64}[dt])
            words = np.ascontiguousarray(out).reshape(-1).view(np.uint64 if wordd == 8 else np.uint32)
            for i, wr in enumerate(writers):
                wr(w, words[places[wd][i]].view(dtype_d), mask)
        return mma

    # memory -------------------------------------------------------------------
    def _mem_form(self, inst, unknown, extra=()):
        space = [m for m in unknown if m in _SPACES]
        vec = [m for m in unknown if m in ("v2", "v4", "v8")]
        rest = [m for m in unknown if m not in _SPACES and m not in ("v2", "v4", "v8") and m not in extra]
        if rest or len(space) > 1:
            raise UnsupportedInstruction(inst, "modifier " + ".".join(rest))
        t = self._t(inst)
        n = int(vec[0][1:]) if vec else 1
        return (space[0] if space else "generic"), n, t

    def _address(self, op: Addr, space: str, inst: Instruction):
        if not isinstance(op, Addr):
            raise UnsupportedInstruction(inst, "address operand")
        off = np.uint64(op.offset & (2**64 - 1))
        if op.base is None:
            return lambda w, b: np.full(self.L, off, dtype=np.uint64)
        if isinstance(op.base, Reg):
            name = op.base.name
            if name not in self.kernel.regs:
                raise UnsupportedInstruction(inst, f"undeclared register {name}")
            return lambda w, b: w.regs[name].astype(np.uint64) + off
        sym = op.base.name
        if space == "param":
            try:
                at = self.kernel.param(sym).offset
            except KeyError:
                if sym not in self._call_params:
                    raise UnsupportedInstruction(inst, f"unknown parameter {sym}") from None
                at = self._call_params[sym]
            arr = np.full(self.L, at + op.offset, dtype=np.uint64)
            return lambda w, b: arr
        if sym in self.symbols:
            base = self.symbols[sym] + (SHARED_WINDOW if space == "generic" else 0)
            arr = np.full(self.L, base + op.offset, dtype=np.uint64)
            return lambda w, b: arr
        if sym in self.local_offsets:
            base = self.local_offsets[sym] + (LOCAL_WINDOW if space == "generic" else 0)
            arr = np.full(self.L, base + op.offset, dtype=np.uint64)
            return lambda w, b: arr
        if sym in self.const_symbols and space == "const":
            arr = np.full(self.L, self.const_symbols[sym] + op.offset, dtype=np.uint64)
            return lambda w, b: arr
        if sym in self.global_symbols and space in ("global", "generic"):
            arr = np.full(self.L, self.global_symbols[sym] + op.offset, dtype=np.uint64)
            return lambda w, b: arr
        raise UnsupportedInstruction(inst, f"address of {sym}")

    def _classify(self, addrs: np.ndarray, space: str):
        """Split lanes of a generic access into (space, lane mask, space-relative addresses)."""
        if space != "generic":
            return [(space, None, addrs)]
        out = []
        sh = (addrs >= SHARED_WINDOW) & (addrs < SHARED_WINDOW + WINDOW_SIZE)
        lo = (addrs >= LOCAL_WINDOW) & (addrs < LOCAL_WINDOW + WINDOW_SIZE)
        gl = ~(sh | lo)
        if sh.any():
            out.append(("shared", sh, addrs - np.uint64(SHARED_WINDOW)))
        if lo.any():
            out.append(("local", lo, addrs - np.uint64(LOCAL_WINDOW)))
        if gl.any():
            out.append(("global", gl, addrs))
        return out

    def _load_bytes(self, w, b, space, addrs, lanes, size, inst):
        c = self.counters
        if space == "global":
            if (pc := self._pc_of.get(id(inst))) is not None:
                c.global_load_pcs.add(pc)
            data = self.memory.read(addrs, size, inst)
            self._count_global(c, "load_l2" if _L1_BYPASS.intersection(inst.mods) else "load", b, addrs, size, lanes)
            if self._workspace and size == 4:  # grid.sync()'s wait: the barrier word has flipped for this lane
                spin = (addrs >= self._workspace[0]) & (addrs < self._workspace[1])
                if spin.any():
                    arrived = w.grid_arrived
                    old = arrived[lanes[spin]] if arrived is not None and len(arrived) == self.L else np.zeros(int(spin.sum()), np.uint64)
                    flipped = (old.astype(np.uint32) ^ np.uint32(0x80000000)).view(np.uint8).reshape(-1, 4)
                    data = data.copy()
                    data[spin] = flipped
        elif space == "shared":
            data = _flat_read(b.shared, self._shared_offsets(b, addrs, lanes, size, inst), size, "shared", inst)
            wf, ideal = self._wavefronts(addrs, size, lanes)
            c.shared_load_requests += _warp_count(lanes)
            c.shared_load_wavefronts += wf
            c.shared_ideal_wavefronts += ideal
        elif space == "local":
            data = self._local_read(w, addrs, lanes, size, inst)
            c.local_load_sectors += _local_sectors(lanes, size)
        elif space == "const":
            data = _flat_read(self.const_bank, addrs, size, "constant", inst)
        elif space == "param":
            off = addrs.astype(np.int64)
            if (off + size > len(self.params)).any():
                raise MemoryFault(f"line {inst.line}: {inst.text!r}: parameter access out of bounds")
            if self._call_bytes and (off >= self._call_base).all():  # a call's return value: each lane's own
                return self._slab(w)[lanes[:, None], (off - self._call_base)[:, None] + np.arange(size)]
            pb = np.frombuffer(bytes(self.params), dtype=np.uint8)
            data = pb[off[:, None] + np.arange(size)]
        else:
            raise UnsupportedInstruction(inst, f"{space} state space")
        return data

    def _wavefronts(self, offs: np.ndarray, size: int, lanes: np.ndarray) -> tuple[int, int]:
        """_wavefronts, remembered by the access pattern: bank conflicts do not change when every
        lane's address moves by the same multiple of 128 bytes (all 32 banks), as a loop's tile
        offset does, so a loop pays the count once."""
        base = int(offs.min()) & ~127
        key = (size, lanes.tobytes(), (offs - offs.dtype.type(base)).tobytes())
        found = self._wavefront_cache.get(key)
        if found is None:
            if len(self._wavefront_cache) > 4096:
                self._wavefront_cache.clear()
            found = self._wavefront_cache[key] = _wavefronts(offs, size, lanes)
        return found

    @staticmethod
    def _count_global(c: Counters, kind: str, b: BlockContext, addrs: np.ndarray, size: int, lanes: np.ndarray) -> None:
        """Requests (warps), sectors per warp, bytes asked for and the blocks' footprints."""
        warps, sectors = _warp_count(lanes), _sectors(addrs, size, lanes)
        if kind.startswith("load"):
            c.global_load_requests += warps
            c.global_load_sectors += sectors
            if kind == "load_l2":
                c.global_load_sectors_l1_bypass += sectors
            c.global_load_bytes += len(lanes) * size
        else:
            c.global_store_requests += warps
            c.global_store_sectors += sectors
            c.global_store_bytes += len(lanes) * size
        c.footprint.setdefault(kind, Footprint()).add(b.slot[lanes], addrs, size)

    def _shared_offsets(self, b, offs, lanes, size, inst) -> np.ndarray:
        """Block-relative shared offsets -> offsets in the group's shared slabs."""
        o = offs.astype(np.int64)
        if (o < 0).any() or (o + size > self.shared_bytes).any():
            raise MemoryFault(f"line {inst.line}: {inst.text!r}: shared access out of bounds ({self.shared_bytes} bytes)")
        return b.shared_base[lanes] + o

    def _local_read(self, w, offs, lanes, size, inst):
        if w.local is None or (offs.astype(np.int64) + size > w.local.shape[1]).any():
            raise MemoryFault(f"line {inst.line}: {inst.text!r}: local access out of bounds")
        o = offs.astype(np.int64)
        return w.local[lanes[:, None], o[:, None] + np.arange(size)]

    def _local_write(self, w, offs, lanes, data, inst):
        if w.local is None or (offs.astype(np.int64) + data.shape[1] > w.local.shape[1]).any():
            raise MemoryFault(f"line {inst.line}: {inst.text!r}: local access out of bounds")
        o = offs.astype(np.int64)
        w.local[lanes[:, None], o[:, None] + np.arange(data.shape[1])] = data

    def _op_ld(self, inst, index, unknown):
        space, n, t = self._mem_form(inst, unknown)
        size = max(1, _bits(t) // 8)
        dst = inst.operands[0]
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        if len(dsts) != n:
            raise UnsupportedInstruction(inst, "vector width")
        # sub-word loads widen into the (wider) destination register
        writers = [self._writer(d, t, inst) for d in dsts]
        addr = self._address(inst.operands[1], space, inst)
        dtype = _DTYPE[t]

        def ld(w, b, mask):
            lanes = np.nonzero(mask)[0]
            if len(lanes) == 0:
                return
            a = addr(w, b)[lanes]
            full = np.zeros((self.L, size * n), dtype=np.uint8)
            for sp, sub, rel in self._classify(a, space):
                sel = lanes if sub is None else lanes[sub]
                full[sel] = self._load_bytes(w, b, sp, rel, sel, size * n, inst)
            vals = np.ascontiguousarray(full).view(dtype).reshape(self.L, n)
            for k, wr in enumerate(writers):
                wr(w, vals[:, k], mask)
        return ld

    def _op_st(self, inst, index, unknown):
        space, n, t = self._mem_form(inst, unknown)
        target = inst.operands[0]
        if space == "param" and isinstance(target, Addr) and isinstance(target.base, Sym) and target.base.name in self._call_params:
            return self._call_param_store(inst, target, n, t)  # an argument of a call: each lane's own
        if space in ("const", "param"):
            raise UnsupportedInstruction(inst, f"{space} state space")
        size = max(1, _bits(t) // 8)
        src = inst.operands[1]
        srcs = list(src.items) if isinstance(src, Vec) else [src]
        if len(srcs) != n:
            raise UnsupportedInstruction(inst, "vector width")
        readers = [self._reader(s, t, inst) for s in srcs]
        addr = self._address(inst.operands[0], space, inst)
        dtype = _DTYPE[t]
        c = self.counters

        def st(w, b, mask):
            lanes = np.nonzero(mask)[0]
            if len(lanes) == 0:
                return
            vals = np.stack([r(w, b).astype(dtype, copy=False) for r in readers], axis=1)
            data = np.ascontiguousarray(vals).view(np.uint8).reshape(self.L, size * n)
            a = addr(w, b)[lanes]
            for sp, sub, rel in self._classify(a, space):
                sel = lanes if sub is None else lanes[sub]
                d = data[sel]
                if sp == "global":
                    self.memory.write(rel, d, inst)
                    self._count_global(c, "store", b, rel, size * n, sel)
                elif sp == "shared":
                    _flat_write(b.shared, self._shared_offsets(b, rel, sel, size * n, inst), d, "shared", inst)
                    wf, ideal = self._wavefronts(rel, size * n, sel)
                    c.shared_store_requests += _warp_count(sel)
                    c.shared_store_wavefronts += wf
                    c.shared_ideal_wavefronts += ideal
                else:
                    self._local_write(w, rel, sel, d, inst)
                    c.local_store_sectors += _local_sectors(sel, size * n)
        return st

    def _call_param_store(self, inst, target: Addr, n: int, t: str):
        """st.param into a call sequence's .param: each lane's bytes in its call slab."""
        size = max(1, _bits(t) // 8)
        src = inst.operands[1]
        srcs = list(src.items) if isinstance(src, Vec) else [src]
        if len(srcs) != n:
            raise UnsupportedInstruction(inst, "vector width")
        at = self._call_params[target.base.name] - self._call_base + target.offset
        if at < 0 or at + size * n > self._call_bytes:
            raise UnsupportedInstruction(inst, f"call argument beyond {CALL_PARAM_BYTES} bytes")
        readers = [self._reader(s_, t, inst) for s_ in srcs]
        dtype = _DTYPE[t]
        cols = at + np.arange(size * n)

        def st(w, b, mask):
            lanes = np.nonzero(mask)[0]
            if not len(lanes):
                return
            vals = np.stack([r(w, b).astype(dtype, copy=False) for r in readers], axis=1)
            data = np.ascontiguousarray(vals).view(np.uint8).reshape(self.L, size * n)
            self._slab(w)[lanes[:, None], cols] = data[lanes]
        return st

    def _op_atom(self, inst, index, unknown, reduction=False):
        ops = [m for m in unknown if m in _ATOM_OPS]
        if len(ops) != 1:
            raise UnsupportedInstruction(inst, "atomic operation")
        aop = ops[0]
        space, n, t = self._mem_form(inst, unknown, extra=(aop,))
        if n != 1 or space not in ("global", "shared", "generic"):
            raise UnsupportedInstruction(inst, "atomic form")
        if t in ("f16", "bf16", "f16x2", "bf16x2") and aop != "add":
            raise UnsupportedInstruction(inst, "atomic type")
        size = _bits(t) // 8
        dtype = _DTYPE[t]
        if t in _HALVES:  # atomicAdd of __half, __nv_bfloat16 and their pairs: each half rounded to nearest
            half, packed = t.removesuffix("x2"), t.endswith("x2")

            def add_bits(a, bb):  # uint16 bits -> uint16 bits
                s, e = _two_sum(_half_f64(a, half), _half_f64(bb, half))
                return _to_bf16(s, e, "rn") if half == "bf16" else _to_f16(s, e, "rn").view(np.uint16)

            halves_add = _per_half(add_bits, packed)
            bits_type = np.uint32 if packed else np.uint16

            def add_halves(old, v):
                o = np.array([old], dtype=dtype).view(bits_type)
                w = np.array([v], dtype=dtype).view(bits_type)
                return halves_add(o, w).astype(bits_type).view(dtype)[0]
        operands = inst.operands if reduction else inst.operands[1:]
        dst = None if reduction else self._writer(inst.operands[0], t, inst)
        addr = self._address(operands[0], space, inst)
        rb = self._reader(operands[1], t, inst)
        rc = self._reader(operands[2], t, inst) if aop == "cas" else None
        c = self.counters

        def apply(old, v, cmp):
            if aop == "add":
                return add_halves(old, v) if t in _HALVES else old + v
            if aop == "min":
                return min(old, v)
            if aop == "max":
                return max(old, v)
            if aop == "inc":
                return 0 if old >= v else old + 1
            if aop == "dec":
                return v if (old == 0 or old > v) else old - 1
            if aop == "and":
                return old & v
            if aop == "or":
                return old | v
            if aop == "xor":
                return old ^ v
            if aop == "exch":
                return v
            return v if old == cmp else old  # cas: operand b is the compare value, c the new one

        def atom(w, b, mask):
            lanes = np.nonzero(mask)[0]
            if len(lanes) == 0:
                return
            a = addr(w, b)[lanes]
            bv = rb(w, b)
            cv = rc(w, b) if rc is not None else None
            result = np.zeros(self.L, dtype=dtype)
            for sp, sub, rel in self._classify(a, space):
                sel = lanes if sub is None else lanes[sub]
                if sp == "global":
                    c.global_atomic_instructions += _warp_count(sel)
                    c.l2_sectors_atomic += len(sel)
                    addresses, hits = np.unique(rel, return_counts=True)
                    for x, k in zip(addresses.tolist(), hits.tolist()):
                        c.atomics_per_address[x] = c.atomics_per_address.get(x, 0) + k
                elif sp == "shared":
                    c.shared_atomic_instructions += _warp_count(sel)
                else:
                    raise UnsupportedInstruction(inst, "local atomic")
                if sp == "shared":
                    rel = self._shared_offsets(b, rel, sel, size, inst)
                for lane, ad in zip(sel.tolist(), rel.tolist()):
                    one = np.array([ad], dtype=np.uint64)
                    if sp == "global":
                        old = self.memory.read(one, size, inst).view(dtype)[0, 0]
                    else:
                        old = _flat_read(b.shared, one, size, "shared", inst).view(dtype)[0, 0]
                    if aop == "cas":
                        new = cv[lane] if old == bv[lane] else old
                    else:
                        with np.errstate(all="ignore"):
                            new = dtype(apply(old, bv[lane], None))
                    data = np.array([new], dtype=dtype).view(np.uint8).reshape(1, size)
                    if sp == "global" and self._workspace and self._workspace[0] <= ad < self._workspace[1]:
                        if w.grid_arrived is None or len(w.grid_arrived) != self.L:
                            w.grid_arrived = np.zeros(self.L, np.uint64)
                        w.grid_arrived[lane] = int(old)  # what this lane's spin compares with (see _load_bytes)
                    if sp == "global":
                        self.memory.write(one, data, inst)
                    else:
                        _flat_write(b.shared, one, data, "shared", inst)
                    result[lane] = old
            if dst is not None:
                dst(w, result, mask)
        return atom

    def _op_cp(self, inst, index, unknown):
        """cp.async: executed at once (the kernel may read the data only after cp.async.wait_*,
        so copying eagerly gives the same values); commit/wait are no-ops. Counted as a global
        load request (LDGSTS) and a shared store."""
        if "async" not in inst.mods:
            raise UnsupportedInstruction(inst)
        if any(m in inst.mods for m in ("commit_group", "wait_group", "wait_all")):
            return lambda w, b, mask: None
        if "bulk" in inst.mods or len(inst.operands) not in (3, 4) or not isinstance(inst.operands[2], Imm):
            raise UnsupportedInstruction(inst, "cp.async form")
        size = inst.operands[2].value
        dst_addr = self._address(inst.operands[0], "shared", inst)
        src_addr = self._address(inst.operands[1], "global", inst)
        src_size = self._reader(inst.operands[3], "u32", inst) if len(inst.operands) == 4 else None
        c = self.counters

        def cp(w, b, mask):
            lanes = np.nonzero(mask)[0]
            if len(lanes) == 0:
                return
            src = src_addr(w, b)[lanes]
            data = self.memory.read(src, size, inst)
            if src_size is not None:  # bytes past src-size are zero-filled
                keep = src_size(w, b)[lanes].astype(np.int64)
                data[np.arange(size)[None, :] >= keep[:, None]] = 0
            dst = dst_addr(w, b)[lanes]
            _flat_write(b.shared, self._shared_offsets(b, dst, lanes, size, inst), data, "shared", inst)
            self._count_global(c, "load", b, src, size, lanes)
            wf, ideal = self._wavefronts(dst, size, lanes)
            c.shared_store_requests += _warp_count(lanes)
            c.shared_store_wavefronts += wf
            c.shared_ideal_wavefronts += ideal
        return cp

    def _op_red(self, inst, index, unknown):
        return self._op_atom(inst, index, unknown, reduction=True)

    # ---------------------------------------------------------------- execution
    def _new_group(self, blocks: list[tuple[int, int, int]], warps: list[int]) -> tuple[LaneGroup, BlockContext]:
        """Lanes of the listed warps of every listed block, block after block."""
        self._decode_for(len(blocks) * len(warps) * WARP)
        bx, by, _ = self.block
        linear = np.concatenate([w * WARP + np.arange(WARP) for w in warps] * len(blocks))
        slot = np.repeat(np.arange(len(blocks)), len(warps) * WARP)
        tid = (linear % bx, (linear // bx) % by, linear // (bx * by))
        regs = {}
        for name, typ in self.kernel.regs.items():
            regs[name] = np.zeros(self.L, dtype=bool) if typ == "pred" else np.zeros(self.L, dtype=_UNSIGNED[max(8, TYPE_BITS[typ])])
        pc = np.where(linear < self.threads, 0, EXITED).astype(np.int64)
        local = np.zeros((self.L, self.local_bytes), dtype=np.uint8) if self.local_bytes else None
        group = LaneGroup(regs, pc, tuple(x.astype(np.uint32) for x in tid), (linear & (WARP - 1)).astype(np.uint32),
                          (linear // WARP).astype(np.uint64), local)
        ctaid = tuple(np.array([c[axis] for c in blocks], dtype=np.uint64)[slot] for axis in range(3))
        context = BlockContext(ctaid, np.zeros(len(blocks) * self.shared_bytes, dtype=np.uint8), slot * self.shared_bytes, slot)
        return group, context

    def _live_warps(self, live: np.ndarray) -> int:
        return int(np.count_nonzero(live.reshape(-1, WARP).any(axis=1)))

    def _run_group(self, w: LaneGroup, b: BlockContext) -> None:
        """Run the group until every lane exits. While all live lanes share one PC (the common
        case) the PC is a Python int and the per-lane array is only written back at control
        flow, which keeps the per-instruction cost low. Each step is one warp instruction for
        every warp with a lane at that PC."""
        insts = self.kernel.instructions
        ops = self.ops
        inst_by_pc, threads_by_pc = self.counters.inst_by_pc, self.counters.threads_by_pc
        n = len(insts)
        pc = w.pc
        live = pc < EXITED
        if not live.any():
            return
        p = int(pc[live].min())
        uniform = bool((pc[live] == p).all())
        nlive, nwarps = int(np.count_nonzero(live)), self._live_warps(live)
        steps, limit = w.steps, self.max_steps
        if w.work is None:
            w.work = np.zeros(len(pc), dtype=np.int64)
        work, memory = w.work, self._memory_pcs
        try:
            while True:
                if uniform:
                    active = live
                    inst_by_pc[p] += nwarps
                else:
                    p = int(pc.min())
                    if p >= EXITED:
                        return
                    active = pc == p
                    inst_by_pc[p] += self._live_warps(active)
                if p >= n:
                    raise InterpreterError(f"{self.kernel.name}: execution ran past the last instruction")
                steps += 1
                if steps > limit:
                    raise InterpreterError(f"line {insts[p].line}: {insts[p].text!r}: more than {limit:,} instructions in one "
                                           "warp: too long to interpret, or a loop that does not end with the data the host "
                                           "left (one that waits for another block, or for data a kernel or library would "
                                           "have written on the GPU)")
                inst = insts[p]
                if inst.guard is not None:
                    g = w.regs[inst.guard]
                    mask = active & (~g if inst.guard_negated else g)
                    threads_by_pc[p] += int(np.count_nonzero(mask))
                else:
                    mask = active
                    threads_by_pc[p] += nlive if uniform else int(np.count_nonzero(mask))
                if p in memory:
                    work += mask
                if not ops[p](w, b, mask):
                    if uniform:
                        p += 1
                    else:
                        pc[active] += 1
                    continue
                # control flow: bring the per-lane PCs up to date, then re-derive the schedule
                if uniform:
                    pc[live & ~mask] = p + 1
                else:
                    pc[active & ~mask] += 1
                live = pc < EXITED
                if not live.any():
                    return
                nlive, nwarps = int(np.count_nonzero(live)), self._live_warps(live)
                p = int(pc[live].min())
                uniform = bool((pc[live] == p).all())
        finally:
            w.steps = steps
            if uniform and live.any():
                pc[live] = p

    def run(self, blocks: list[tuple[int, int, int]], warps: list[int] | None = None) -> None:
        """Run the listed blocks (all their warps, or the listed ones when the kernel has no
        barrier) together as one lane group."""
        group, context = self._new_group(list(blocks), list(range(self.nwarps)) if warps is None else list(warps))
        old = np.seterr(all="ignore")
        try:
            self._run_group(group, context)
        finally:
            np.seterr(**old)
            if group.work is not None:
                for ctaid, work in zip(blocks, np.bincount(context.slot, weights=group.work, minlength=len(blocks))):
                    self.block_work[tuple(ctaid)] = self.block_work.get(tuple(ctaid), 0.0) + float(work)

    def run_block(self, ctaid: tuple[int, int, int], warps: list[int] | None = None) -> None:
        """Run one block."""
        self.run([ctaid], warps)

    # ---------------------------------------------------------------- results
    def totals(self) -> dict:
        """Counts of everything interpreted so far (not extrapolated)."""
        c = self.counters
        by_pipe: dict[str, float] = {}
        flops: dict[str, float] = {}
        tensor: dict[str, float] = {}
        ptx_instructions = int(c.inst_by_pc.sum())
        waits, async_waits = load_waits(self.kernel.instructions, c.inst_by_pc, c.global_load_pcs)
        folded = folded_instructions(self.kernel)
        fused = wide_adds(self.kernel, folded)
        for i, inst in enumerate(self.kernel.instructions):
            k = c.inst_by_pc[i]
            if not k:
                continue
            costs, fl = _costs(inst)
            if i in folded:
                costs = []
            elif i in fused:
                costs = [("int_fma", 1.0)]
            for pipe, per in costs:
                by_pipe[pipe] = by_pipe.get(pipe, 0.0) + per * k
            if fl:
                flops[fl[0]] = flops.get(fl[0], 0.0) + fl[1] * c.threads_by_pc[i]
            if i in self._tensor_names:
                name = self._tensor_names[i]
                tensor[name] = tensor.get(name, 0.0) + k * self._tensor_per_warp.get(i, 1)
        return {
            "counts": {
                "global_load_requests": c.global_load_requests, "global_load_sectors": c.global_load_sectors,
                "global_store_requests": c.global_store_requests, "global_store_sectors": c.global_store_sectors,
                "shared_load_wavefronts": c.shared_load_wavefronts, "shared_store_wavefronts": c.shared_store_wavefronts,
                "shared_bank_conflicts": c.shared_load_wavefronts + c.shared_store_wavefronts - c.shared_ideal_wavefronts,
                "local_load_sectors": c.local_load_sectors, "local_store_sectors": c.local_store_sectors,
                "instructions": sum(by_pipe.values()),
                "global_atomic_instructions": c.global_atomic_instructions, "l2_sectors_atomic": c.l2_sectors_atomic,
                "global_load_waits": waits, "global_load_async_waits": async_waits,
            },
            "warp_instructions_by_pipe": by_pipe,
            "flops": flops,
            "barriers": c.barriers,
            "tensor_instructions": tensor,
            "ptx_warp_instructions": ptx_instructions,
            "thread_instructions": int(c.threads_by_pc.sum()),
            "shared_load_requests": c.shared_load_requests,
            "shared_store_requests": c.shared_store_requests,
            "shared_atomic_instructions": c.shared_atomic_instructions,
            "max_atomics_per_address": max(c.atomics_per_address.values(), default=0),
            "global_load_bytes": c.global_load_bytes,
            "global_load_sectors_l1_bypass": c.global_load_sectors_l1_bypass,
            "global_store_bytes": c.global_store_bytes,
        }


def _linear_samples(total: int, count: int) -> list[int]:
    count = max(1, min(count, total))
    if count == 1:
        return [0]
    return sorted({int(i * (total - 1) / (count - 1) + 0.5) for i in range(count)})


def sample_blocks(grid, count: int, *, last_neighbour: bool = False) -> list[tuple[int, int, int]]:
    """Blocks that represent the grid: the first, the last and an even spread between.
    last_neighbour adds the block before the last (when the grid has more blocks than
    count), which tells a last block that is a remainder (a rounded-up grid's partial or empty
    block) from a trend across the grid (see sample_weights)."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    total = g[0] * g[1] * g[2]
    linear = _linear_samples(total, count)
    if last_neighbour and total > len(linear) >= 2:
        linear = sorted(set(linear) | {total - 2})
    return [(i % g[0], (i // g[0]) % g[1], i // (g[0] * g[1])) for i in linear]


def sample_weights(linear: list[int], total: int) -> np.ndarray:
    """How many of the grid's blocks each sampled block (linear indices, sorted, the first 0 and
    the last total - 1) stands for. The last block stands for itself alone: in a rounded-up
    grid it is the one partial or empty block, and weighing it like the others would scale its
    missing work to a third of the grid. The blocks before it are the sum of the piecewise-linear
    interpolation between the samples (exact for work that grows or shrinks linearly with the
    block index, as in triangular grids); blocks past the last knot count as that knot."""
    n = len(linear)
    if n >= total or n < 2:
        return np.full(n, total / n)
    weights = np.zeros(n)
    knots = linear[:-1]
    for i in range(len(knots) - 1):
        length = knots[i + 1] - knots[i]
        weights[i] += (length + 1) / 2  # points knots[i] .. knots[i+1] - 1, the hat functions' sums
        weights[i + 1] += (length - 1) / 2
    weights[len(knots) - 1] += 1 + (total - 2 - knots[-1])
    weights[-1] = 1.0
    return weights


def _scale(value, factor):
    if isinstance(value, dict):
        return {k: _scale(v, factor) for k, v in value.items()}
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value) * factor
    return value


def count_work(kernel: Kernel, grid, block, args, buffers: dict[str, np.ndarray] | None = None, *,
               dynamic_shared_bytes: int = 0, sample: int = 3, warps_per_block: int | None = None,
               max_steps_per_warp: int = 20_000_000, functions: tuple[str, ...] = ()) -> dict:
    """Interpret ``sample`` blocks of a launch and extrapolate their work to the whole grid.

    Warps of a block that neither synchronises (no bar.sync) nor declares shared memory are
    independent, so by default only 3 of them (first, middle, last) are interpreted and
    scaled to the block; ``warps_per_block`` sets that number (0 or None with barriers or
    shared memory: all warps).

    Returns {"counts": {KernelFeatures count name: value}, "warp_instructions_by_pipe",
    "flops", "barriers", "tensor_instructions", ... , "sampled_blocks", "sampled_warps",
    "scale", "approximations", "device_launches"}; all counts are for the whole grid: sampled
    counts x block_scale x warps per block / warps sampled, where block_scale weighs each
    sampled block by the blocks it stands for (sample_weights) and by its work. Buffers are
    modified in place by the sampled warps' stores. functions: the module's kernel names, which
    device-side launches name (DeviceLaunch, made by the sampled warps only: "scale" turns
    their number into the grid's).
    """
    interp = Interpreter(kernel, grid, block, args, buffers, dynamic_shared_bytes, max_steps_per_warp, functions)
    blocks = sample_blocks(interp.grid, sample, last_neighbour=True)
    independent = not kernel.shared and not any(i.opcode in ("bar", "barrier") and "warp" not in i.mods for i in kernel.instructions)
    if warps_per_block is None:
        warps_per_block = 3 if independent else 0
    warps = None
    if independent and 0 < warps_per_block < interp.nwarps:
        warps = [lin for lin, _, _ in sample_blocks((interp.nwarps,), warps_per_block)]
    interp.run(blocks, warps)
    gx, gy, gz = interp.grid
    total_blocks = gx * gy * gz
    # a ratio estimate: the sampled blocks' counts scaled by the grid's work (each sampled
    # block's memory instructions, threads that ran them, times the blocks it stands for) over
    # the sampled work. Memory instructions, not all: an empty block still runs its index
    # arithmetic, and would weigh as a fraction of a full one.
    work = np.array([interp.block_work.get(b, 0.0) for b in blocks])
    weights = sample_weights([x + gx * (y + gy * z) for x, y, z in blocks], total_blocks)
    block_scale = float(weights @ work / work.sum()) if work.sum() > 0 else total_blocks / len(blocks)
    factor = block_scale * (interp.nwarps / len(warps) if warps else 1.0)
    totals = interp.totals()
    out = _scale(totals, factor)
    out["sampled_blocks"] = blocks
    out["sampled_warps"] = warps if warps is not None else list(range(interp.nwarps))
    out["scale"] = factor
    out["grid_blocks"] = total_blocks
    out["block_scale"] = block_scale  # full-work blocks the grid amounts to, per sampled block
    out["warp_scale"] = interp.nwarps / len(warps) if warps else 1.0
    out["footprint"] = {kind: f.sectors() for kind, f in interp.counters.footprint.items()}  # per sampled block
    out["buffer_bytes"] = [len(b) for b in interp.memory.buffers]
    out["approximations"] = sorted(interp.approximations)
    out["missing"] = sorted(interp.missing)  # work not counted: the prediction is a lower bound
    out["device_launches"] = list(interp.device_launches)
    if warps:
        out["approximations"].append(f"{len(warps)} of {interp.nwarps} warps per block interpreted (no barrier, no shared memory)")
    return out
