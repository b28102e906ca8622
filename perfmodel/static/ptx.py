"""A parser for the PTX that ``nvcc -ptx`` emits (sm_80 / sm_90a): kernels, their parameters,
register and shared-memory declarations, labels and instructions with their guards, opcode
modifiers and operands.

Only what kernels compiled from CUDA C++ use is recognised; directives the interpreter does
not need (.version, .target, .maxntid, .pragma, debug sections) are skipped. Anything in a
kernel body that is neither a declaration, a label nor an instruction raises
:class:`PTXParseError` naming the line.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from keet.errors import KeetError

TYPE_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
             "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
             "b64": 64, "u64": 64, "s64": 64, "f64": 64, "b128": 128, "pred": 1}


class PTXParseError(KeetError):
    """PTX text this parser does not understand (names the line)."""


@dataclass(frozen=True)
class Reg:
    name: str  # "%r1", or a special register such as "%tid.x"


@dataclass(frozen=True)
class Imm:
    value: int | float
    is_float: bool = False
    bits: int | None = None  # 32 for 0f..., 64 for 0d...: the raw IEEE bits are `value`


@dataclass(frozen=True)
class Sym:
    name: str  # a label, a variable (shared symbol) or a parameter name


@dataclass(frozen=True)
class Vec:
    items: tuple  # of Reg / Imm / Sym ("_" is Sym("_"))


@dataclass(frozen=True)
class Raw:
    text: str  # an operand form the parser does not decode (texture/surface tuples, ...)


@dataclass(frozen=True)
class Addr:
    base: Reg | Sym | None
    offset: int = 0


@dataclass
class Param:
    name: str
    type: str  # "u64", "f32", "b8" (arrays / structs are .b8 with a count)
    size: int  # bytes
    align: int
    offset: int  # byte offset in the parameter buffer


@dataclass
class SharedVar:
    name: str
    size: int  # bytes, 0 for extern (dynamic) shared memory
    align: int
    offset: int = 0  # in the block's shared window
    extern: bool = False


@dataclass
class LocalVar:
    name: str
    size: int
    align: int


@dataclass
class Instruction:
    line: int  # 1-based line number in the PTX text
    text: str  # the instruction as written, without the ';'
    opcode: str  # "ld" for ld.global.nc.v4.f32
    mods: tuple[str, ...]  # ("global", "nc", "v4", "f32")
    operands: tuple
    guard: str | None = None  # predicate register guarding the instruction
    guard_negated: bool = False

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode, *self.mods))


@dataclass
class ModuleVar:
    name: str
    space: str  # "const" or "global"
    size: int
    align: int
    data: bytes  # initial contents (zeros where the PTX gives no initializer)


@dataclass
class Kernel:
    name: str
    params: list[Param]
    regs: dict[str, str]  # register name -> declared type
    shared: list[SharedVar]
    local: list[LocalVar]
    instructions: list[Instruction]
    labels: dict[str, int]  # label -> index of the next instruction
    is_entry: bool = True
    variables: list[ModuleVar] = field(default_factory=list)  # module-scope .const / .global variables

    @property
    def static_shared_bytes(self) -> int:
        return max((v.offset + v.size for v in self.shared if not v.extern), default=0)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


@dataclass
class Module:
    version: str | None
    target: str | None
    kernels: dict[str, Kernel] = field(default_factory=dict)
    functions: dict[str, Kernel] = field(default_factory=dict)
    variables: list[ModuleVar] = field(default_factory=list)  # module-scope .const / .global variables


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_REG_DECL = re.compile(r"^\.reg\s*\.(\w+)\s+(.+)$")
_IDENT = re.compile(r"(?<![\w$.%])([A-Za-z_$][\w$]*)(?![\w$])")
_ARRAY = re.compile(r"^(%?[\w$.]+)<(\d+)>$")
_VAR_DECL = re.compile(r"^(\.extern\s+)?\.(shared|local)\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$.]+)(?:\[(\d*)\])?(?:\s*=.*)?$", re.DOTALL)
_PARAM = re.compile(r"^\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+(?:\d+\s+)?)*)?([\w$.]+)(?:\[(\d+)\])?$")
_HEADER = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)\s*\(?", re.DOTALL)
_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+U?|0[0-7]*U?|[1-9]\d*U?)$")


def _parse_int(text: str) -> int:
    t = text.rstrip("U")
    neg = t.startswith("-")
    t = t.lstrip("+-")
    if t.lower().startswith("0x"):
        v = int(t, 16)
    elif len(t) > 1 and t.startswith("0"):
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


def parse_operand(text: str):
    t = text.strip()
    if t.startswith("{") and t.endswith("}"):
        return Vec(tuple(parse_operand(x) for x in _split_commas(t[1:-1])))
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        m = re.match(r"^([%\w$.]+)?\s*(?:\+\s*(-?\s*[\w]+))?$", inner)
        if not m:
            return Raw(t)
        base, off = m.group(1), m.group(2)
        if base is not None and _INT.match(base):
            return Addr(None, _parse_int(base))
        b = None if base is None else (Reg(base) if base.startswith("%") else Sym(base))
        return Addr(b, _parse_int(off.replace(" ", "")) if off else 0)
    if re.match(r"^0[fF][0-9a-fA-F]{8}$", t):
        return Imm(int.from_bytes(bytes.fromhex(t[2:]), "big"), True, 32)
    if re.match(r"^0[dD][0-9a-fA-F]{16}$", t):
        return Imm(int.from_bytes(bytes.fromhex(t[2:]), "big"), True, 64)
    if _INT.match(t):
        return Imm(_parse_int(t))
    if re.match(r"^[-+]?\d+\.\d*([eE][-+]?\d+)?$", t):
        return Imm(struct.unpack("<Q", struct.pack("<d", float(t)))[0], True, 64)
    if t.startswith(("%", "!%")):
        return Reg(t)
    if re.match(r"^[\w$.]+$", t):
        return Sym(t)
    return Raw(t)


def _split_commas(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [x.strip() for x in out]


def _parse_instruction(stmt: str, line: int) -> Instruction:
    text = stmt.strip()
    guard, neg = None, False
    m = re.match(r"^@(!?)(%[\w.$]+)\s+(.*)$", text, re.DOTALL)
    if m:
        neg, guard, text = m.group(1) == "!", m.group(2), m.group(3)
    parts = text.split(None, 1)
    head = parts[0]
    rest = parts[1] if len(parts) > 1 else ""
    pieces = head.split(".")
    opcode, mods = pieces[0], tuple(p for p in pieces[1:])
    ops = []
    for o in _split_commas(rest):
        if "|" in o and not o.startswith("["):  # setp p|q, shfl d|p
            ops.append(Vec(tuple(parse_operand(x) for x in o.split("|"))))
        else:
            ops.append(parse_operand(o))
    return Instruction(line, " ".join(stmt.split()), opcode, mods, tuple(ops), guard, neg)


def _statements(body: str, first_line: int):
    """(statement, line) pairs of a body: ';'-terminated statements, labels and braces."""
    i, line, n = 0, first_line, len(body)
    cur, cur_line = [], None
    while i < n:
        ch = body[i]
        if ch == "\n":
            line += 1
            if cur and "".join(cur).lstrip().startswith((".loc", ".file")):  # line directives have no ';'
                cur, cur_line = [], None
        if ch in "{}" and not "".join(cur).strip():  # a scope opens or closes (inline asm blocks declare registers in them)
            yield ch, line
            cur, cur_line = [], None
            i += 1
            continue
        if ch == ";":
            stmt = "".join(cur).strip()
            if stmt:
                yield stmt, cur_line or line
            cur, cur_line = [], None
        else:
            if cur_line is None and not ch.isspace():
                cur_line = line
            cur.append(ch)
            stmt = "".join(cur).strip()
            if ch == ":" and re.match(r"^[\w$.]+:$", stmt) and body[i + 1:i + 2] != ":":  # a label, not shared::cta
                yield stmt, cur_line
                cur, cur_line = [], None
        i += 1


def _parse_params(text: str) -> list[Param]:
    params, offset = [], 0
    for raw in _split_commas(text):
        raw = " ".join(raw.split())
        if not raw:
            continue
        m = _PARAM.match(raw)
        if not m:
            raise PTXParseError(f"parameter {raw!r}")
        align, typ, name, count = m.groups()
        elem = max(1, TYPE_BITS.get(typ, 8) // 8)
        size = elem * (int(count) if count else 1)
        al = int(align) if align else elem
        offset = (offset + al - 1) // al * al
        params.append(Param(name, typ, size, al, offset))
        offset += size
    return params


def parse(text: str) -> Module:
    """Parse a PTX module."""
    clean = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    version = (m.group(1) if (m := re.search(r"^\s*\.version\s+(\S+)", clean, re.MULTILINE)) else None)
    target = (m.group(1) if (m := re.search(r"^\s*\.target\s+(\S+)", clean, re.MULTILINE)) else None)
    module = Module(version, target)
    pos = 0
    spans = []
    while (m := _HEADER.search(clean, pos)):
        kind, name = m.group(1), m.group(2)
        # parameter list
        j = m.end()
        if clean[j - 1] == "(":
            close = clean.index(")", j)
            params = _parse_params(clean[j:close])
            j = close + 1
        else:
            params = []
        # declaration only (prototype) or body?
        brace = clean.find("{", j)
        semi = clean.find(";", j)
        if brace < 0 or (0 <= semi < brace):
            pos = (semi if semi >= 0 else j) + 1
            continue
        depth, k = 0, brace
        while True:
            if clean[k] == "{":
                depth += 1
            elif clean[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        body = clean[brace + 1:k]
        kernel = _parse_body(name, params, body, clean.count("\n", 0, brace) + 1, kind == "entry")
        (module.kernels if kind == "entry" else module.functions)[name] = kernel
        spans.append((m.start(), k + 1))
        pos = k + 1
    # module-scope variables: the text outside every function
    outside, last = [], 0
    for a, b in spans:
        outside.append(clean[last:a])
        last = b
    outside.append(clean[last:])
    shared: list[SharedVar] = []
    for found in re.finditer(r"^[ \t]*((?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:const|global|shared)\b[^;]*);", "".join(outside), re.MULTILINE):
        flat = " ".join(found.group(1).split())
        vm = _MODULE_VAR.match(flat)
        if not vm:
            raise PTXParseError(f"unsupported module-scope declaration {flat[:80]!r}")
        ext, space, align, typ, vname, count, init = vm.groups()
        elem = max(1, TYPE_BITS.get(typ, 8) // 8)
        al = int(align) if align else elem
        if space == "shared":
            shared.append(SharedVar(vname, elem * int(count) if count else (0 if count == "" else elem), al, 0, bool(ext) or count == ""))
            continue
        size = elem * (int(count) if count else 1)
        module.variables.append(ModuleVar(vname, space, size, al, _initial_bytes(init, typ, size)))
    for kernel in (*module.kernels.values(), *module.functions.values()):
        kernel.variables = module.variables
        if shared:
            kernel.shared.extend(SharedVar(v.name, v.size, v.align, 0, v.extern) for v in shared)
            _layout_shared(kernel.shared)
    return module


_MODULE_VAR = re.compile(r"^(?:\.visible\s+|\.weak\s+)?(\.extern\s+)?\.(const|global|shared)\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$.]+)"
                         r"(?:\[(\d*)\])?(?:\s*=\s*(.*))?$", re.DOTALL)


def _initial_bytes(init: str | None, typ: str, size: int) -> bytes:
    out = bytearray(size)
    if not init:
        return bytes(out)
    items = [x for x in _split_commas(init.strip().strip("{}")) if x]
    elem = max(1, TYPE_BITS.get(typ, 8) // 8)
    for i, item in enumerate(items[: size // elem]):
        op = parse_operand(item)
        if isinstance(op, Sym) or (isinstance(op, Raw) and re.match(r"^generic\([\w$.]+\)(\s*\+\s*\d+)?$", item.strip())):
            continue  # the address of a function or variable (a vtable): left 0, the interpreter has no such addresses
        if not isinstance(op, Imm):
            raise PTXParseError(f"initializer {item!r} of a {typ} variable")
        if op.is_float and typ in ("f32", "f64"):
            bits = op.value if (op.bits == 32) == (typ == "f32") else None
            if bits is None:
                f = struct.unpack("<d" if op.bits == 64 else "<f", op.value.to_bytes(op.bits // 8, "little"))[0]
                raw = struct.pack("<f" if typ == "f32" else "<d", f)
            else:
                raw = bits.to_bytes(elem, "little")
        else:
            raw = (int(op.value) & ((1 << (8 * elem)) - 1)).to_bytes(elem, "little")
        out[i * elem:(i + 1) * elem] = raw
    return bytes(out)


def _layout_shared(shared: list[SharedVar]) -> None:
    offset = 0
    for v in shared:
        if not v.extern:
            offset = (offset + v.align - 1) // v.align * v.align
            v.offset = offset
            offset += v.size
    for v in shared:
        if v.extern:
            al = max(v.align, 16)
            v.offset = (offset + al - 1) // al * al


def _scoped_names(stmt: str, scopes: list[dict[str, str]]) -> str:
    """STMT with the registers of the enclosing scopes renamed (innermost declaration wins);
    opcodes, modifiers and labels are left alone."""
    def rename(token: str) -> str:
        for scope in reversed(scopes):
            if token in scope:
                return scope[token]
        return token

    def names(text: str) -> str:
        text = re.sub(r"%[\w$]+", lambda m: rename(m.group(0)), text)
        return _IDENT.sub(lambda m: rename(m.group(1)), text)

    text = stmt.strip()
    if text.startswith(".reg"):
        return text
    guard = ""
    m = re.match(r"^@(!?)(\S+)\s+(.*)$", text, re.DOTALL)
    if m:
        guard, text = f"@{m.group(1)}{rename(m.group(2))} ", m.group(3)
    head, *rest = text.split(None, 1)
    return f"{guard}{head} {names(rest[0])}" if rest else guard + head


def _parse_body(name: str, params: list[Param], body: str, first_line: int, is_entry: bool) -> Kernel:
    regs: dict[str, str] = {}
    shared: list[SharedVar] = []
    local: list[LocalVar] = []
    instructions: list[Instruction] = []
    labels: dict[str, int] = {}
    offset = 0
    # registers declared inside { } scopes (inline asm: `{ .reg .b32 f, C; ... }`, names without
    # %, reused by sibling scopes with other types) get a name of their own: %name$scope<N>
    scopes: list[dict[str, str]] = []
    opened = 0
    for stmt, line in _statements(body, first_line):
        if stmt == "{":
            opened += 1
            scopes.append({})
            continue
        if stmt == "}":
            if scopes:
                scopes.pop()
            continue
        if scopes and any(scopes):
            stmt = _scoped_names(stmt, scopes)
        flat = " ".join(stmt.split())
        if flat.endswith(":") and re.match(r"^[\w$.]+:$", flat):
            labels[flat[:-1]] = len(instructions)
            continue
        if flat.startswith(".reg"):
            m = _REG_DECL.match(flat)
            if not m:
                raise PTXParseError(f"line {line}: {flat}")
            typ = m.group(1)
            for item in _split_commas(m.group(2)):
                am = _ARRAY.match(item)
                names = [f"{am.group(1)}{i}" for i in range(int(am.group(2)))] if am else [item]
                for reg in names:
                    if scopes:
                        scopes[-1][reg] = unique = f"%{reg.lstrip('%')}$scope{opened}"
                        reg = unique
                    regs[reg] = typ
            continue
        if flat.startswith((".shared", ".extern", ".local")):
            m = _VAR_DECL.match(flat)
            if not m:
                raise PTXParseError(f"line {line}: unsupported declaration {flat}")
            ext, space, align, typ, vname, count = m.groups()
            elem = max(1, TYPE_BITS.get(typ, 8) // 8)
            al = int(align) if align else elem
            size = elem * (int(count) if count else (0 if count == "" else 1))
            if space == "shared":
                if ext or count == "":
                    shared.append(SharedVar(vname, 0, al, 0, True))
                else:
                    offset = (offset + al - 1) // al * al
                    shared.append(SharedVar(vname, size, al, offset))
                    offset += size
            else:
                local.append(LocalVar(vname, size, al))
            continue
        if flat.startswith((".pragma", ".loc", ".file", ".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".section")):
            continue
        if flat.startswith(".param"):  # arguments of a call (printf, a non-inlined function): the call itself is refused later
            continue
        if flat.startswith("."):
            raise PTXParseError(f"line {line}: unsupported directive {flat}")
        instructions.append(_parse_instruction(stmt, line))
    _layout_shared(shared)  # extern shared arrays start after the static ones, at their alignment
    return Kernel(name, params, regs, shared, local, instructions, labels, is_entry)
