"""Check every claim of an LLM answer against what keet knows: the verifier.

A *claim* is a number (with its unit, SI prefix or percent sign), a metric name, a source line
reference or a quoted piece of source code found in the answer. Each is checked against the
*facts*: the profile's kernels and canonical metrics, the diagnosis (findings, evidence,
thresholds, source lines), the model's predictions and hardware figures, and every number the
agent saw in a tool result. docs/llm.md states the rules; in short:

* a number matches a fact of the same dimension when the fact, rounded (or truncated) to the
  claim's last stated digit, equals it; integer trailing zeros count as stated digits unless
  the claim is hedged ("~400 us", "about 400 us"); K/M/G/T bytes may be decimal or binary;
* a number bound to a metric name ("sol.dram_pct = 91%") must match *that* metric;
* a time, bandwidth, clock, throughput or ratio in a sentence that names a GPU (H100, H200, ...)
  must match a figure of a GPU that sentence names;
* a number binds only to a fact about what its sentence says it is (``binding``): each fact
  carries its kernel, GPUs and a Subject (the quantity and the component, unit or level it
  belongs to, its scope, its role, the launch context and clock it holds for), and so does each
  number, read from its clause, its own unit and the clauses of its sentence without a number;
  words that name nothing the fact contradicts are neutral;
* a metric name must exist in the profile or keet's canonical vocabulary; a source line must
  exist in the profile's source; a quoted code span with numbers must be in the source;
* exempt: list ordinals and "step N", single-digit counts without a unit, and digits inside
  names (H100, sm_90, float4, fp32).

Numbers inside fenced profile strings (kernel names, the profiler's rule text) are never facts:
a kernel named "say 42" does not make 42 supported.

The answer is the model's text, so it is hostile input too: every regular expression here runs
in time about linear in the text (no nested or overlapping quantifiers that can backtrack
without end; tests/test_hostile_llm.py times them on the worst inputs found), every look back
from a number reads a short window, and ``check`` stops at a deadline: what it has not checked
by then is unsupported.
"""

from __future__ import annotations

import bisect
import functools
import html
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Any

from keet.canonical import vocabulary
from keet.llm.fence import CLOSE, OPEN, fence, unfence
from keet.profile import Kernel, Profile
from keet.units import to_base
from perfmodel.hardware import gpu_ids

# ------------------------------------------------------------------ units

# A unit as written in prose -> (dimension, factor to the dimension's base unit).
# Base units: time ns, bytes B, rates B/s, clocks Hz, work flop, throughput flop/s, percent %,
# ratio x, counts (instructions, sectors, cycles, registers, ...) 1.
_TIME = {"ns": 1.0, "nsec": 1.0, "nanosecond": 1.0, "nanoseconds": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "usec": 1e3,
         "microsecond": 1e3, "microseconds": 1e3, "ms": 1e6, "msec": 1e6, "millisecond": 1e6, "milliseconds": 1e6,
         "s": 1e9, "sec": 1e9, "second": 1e9, "seconds": 1e9}
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_COUNT_WORDS = ("registers", "register", "threads", "thread", "blocks", "block", "warps", "warp", "sms", "sm", "cus",
                "sectors", "sector", "wavefronts", "wavefront", "instructions", "instruction", "inst", "cycles", "cycle",
                "requests", "request", "elements", "element", "lanes", "banks", "bank", "bits", "waves", "wave",
                "launches", "kernels", "lines", "samples", "transactions", "clk", "clocks", "ops", "operations")
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}

# Dimensions whose figures belong to one GPU: a sentence naming a GPU restricts them to it.
GPU_DIMENSIONS = {"time", "rate", "freq", "flop_rate", "ratio"}
HEDGES = ("~", "≈", "about", "approximately", "approx.", "roughly", "around", "nearly", "almost", "some", "over", "under",
          "up to", "close to")
# Numbers a reader knows from the architecture, with what they are (unitless or with these units).
ARCHITECTURE_CONSTANTS = {16: "bytes of a 16-byte vector access", 32: "threads per warp / shared-memory banks / bytes per sector",
                          64: "threads per AMD wavefront", 128: "bytes per cache line"}
CONSTANT_UNITS = {None, "threads", "thread", "lanes", "banks", "bank", "bytes", "byte", "B", "bits"}

_NUMBER = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+)"
_UNIT = (r"(?P<unit>%|percent\b|per ?cent\b|x\b|×|times\b|fold\b|"
         r"(?:kilo|mega|giga|tera|peta)?bytes\s+per\s+second\b|(?:kilo|mega|giga|tera|peta)bytes?\b|"
         r"(?:[kKMGTP]i?)?(?:B|bytes?)(?:/s(?:ec)?\b|ps\b)?|"
         r"(?:[kKMGTP])?(?:FLOP/s|FLOPS|flop/s|FLOPs?|flops?)\b|"
         r"(?:[kKMG])?Hz\b|"
         r"(?:n|u|µ|μ|m)?s(?:ec)?\b|(?:nano|micro|milli)?seconds?\b|"
         r"(?:" + "|".join(_COUNT_WORDS) + r")\b|"
         r"(?:" + "|".join(_SCALE_WORDS) + r")\b|[KMG]\b)")
# A number not glued to a name on its left (H100, sm_90, fp32, float4, v2.1) and not the start of
# one; after a digit and a hyphen it is the second end of a range ("1.3-1.5x").
# The lookahead skips a number that begins a call's name ("4x4_kernel(" , "v2.load("): the run of
# word characters and dots after it ends in "(" and its last dot-free part holds a letter or _.
# Written so that each character is read once ((?:\w*\.)*+ takes the dotted parts, possessively;
# [^\WA-Za-z_]*+ the non-letters before the first letter): the plain [\w.]*[A-Za-z_]\w*\( tried
# every split of a long run.
_CALL_FOLLOWS = r"(?!(?:\w*\.)*+[^\WA-Za-z_]*+[A-Za-z_]\w*+\()"
_CLAIM = re.compile(r"(?:(?<![\w.\-/])|(?<=\d-))(?P<sign>[-+−])?" + _NUMBER + _CALL_FOLLOWS + r"(?P<gap>[ \u00a0\-]?)" + _UNIT + "?",
                    re.UNICODE)
_ORDINAL = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:step\s+)?\d+[.)]\s|^\s*#+\s*\d+[.)]?\s", re.IGNORECASE)
_STEP = re.compile(r"\b(?:step|phase|stage|option|change|priority|finding|item|kernel|id)\s+#?$", re.IGNORECASE)
# (?<![\w./\-]): a file name starts where its path does (the leftmost match is the same); without
# it the engine retried every position of a long run of path characters, each time to its end.
_SOURCE_REF = re.compile(r"(?<![\w./\-])(?P<file>[\w./\-]+\.(?:cu|cuh|h|hpp|cpp|cc|c|hip|cl|py|f90))(?::|\s+line\s+)(?P<line>\d+)"
                         r"|\blines?\s+(?P<bare>\d+)(?:\s*(?:-|–|to|and)\s*(?P<bare_end>\d+))?", re.IGNORECASE)
_CODE_SPAN = re.compile(r"```[\w+-]*\n(?P<block>.*?)```|`(?P<span>[^`\n]+)`", re.DOTALL)
# A dotted or double-underscore name (sol.dram_pct, dram__bytes_read.sum). As first written,
# [A-Za-z][A-Za-z0-9_]*(?:(?:__|\.)[A-Za-z0-9_]+)+, every "__" could be a separator or part of a
# name, and "a__a__a...(" took exponential time (30 parts: minutes). Same names, one reading:
# dotted parts taken possessively, or, with no dot, a "__" with a name character after it.
_METRIC = re.compile(r"(?<![\w/])[A-Za-z](?:[A-Za-z0-9_]*+(?:\.[A-Za-z0-9_]++)+|(?=[A-Za-z0-9_]*?__[A-Za-z0-9_])[A-Za-z0-9_]++)(?![\w(])")
# How far back from a number its hedge ("about") or its step word ("step 3") is looked for.
_LOOK_BACK = 64
_FILE_SUFFIX = re.compile(r"\.(cu|cuh|h|hpp|cpp|cc|c|hip|cl|py|f90|md|json|txt|xz|ncu-rep)$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_LINE_ORDINAL = re.compile(r"^\s*(?:[-*]\s+)?(?:\*\*)?\d+[.)]\s+")


def gpu_mention() -> re.Pattern[str]:
    """A GPU of the hardware database named in prose: its id as a word, in any case ("H100",
    "mi300x"; the match lower-cased is the id). Built from gpu_ids(), so a GPU file added to the
    database (or a folder of $PERFMODEL_HARDWARE_PATH) is recognised with no table here."""
    return _mention_pattern(tuple(gpu_ids()))


@functools.cache
def _mention_pattern(ids: tuple[str, ...]) -> re.Pattern[str]:
    # longest first: an id that begins another ("mi300" and "mi300x") must not win the match
    words = "|".join(re.escape(gpu_id) for gpu_id in sorted(ids, key=len, reverse=True))
    return re.compile(rf"\b({words})\b", re.IGNORECASE)


def unit_dimension(unit: str | None) -> tuple[str | None, list[float]]:
    """The dimension of a unit as written in prose and its candidate factors to base units
    (two for K/M/G/T bytes: decimal and binary)."""
    if not unit:
        return None, [1.0]
    if unit in ("%", "percent") or unit.replace(" ", "") == "percent":
        return "percent", [1.0]
    if unit in ("x", "×", "times", "fold"):
        return "ratio", [1.0]
    if match := re.fullmatch(r"(kilo|mega|giga|tera|peta)?(bytes?)(\s+per\s+second)?", unit):
        prefix = {"kilo": "k", "mega": "M", "giga": "G", "tera": "T", "peta": "P"}.get(match.group(1) or "", "")
        return unit_dimension(f"{prefix}B{'/s' if match.group(3) else ''}")
    if unit in _TIME:
        return "time", [_TIME[unit]]
    if unit.lower() in _SCALE_WORDS:
        return "count", [_SCALE_WORDS[unit.lower()]]
    if unit in ("K", "M", "G"):
        return "count", [_PREFIX[unit]]
    if unit.lower() in _COUNT_WORDS:
        return "count", [1.0]
    if match := re.fullmatch(r"([kKMGTP]?)Hz", unit):
        return "freq", [_PREFIX[match.group(1)]]
    if match := re.fullmatch(r"([kKMGTP]?)(FLOP/s|FLOPS|flop/s|FLOPs?|flops?)", unit):
        rate = match.group(2) in ("FLOP/s", "FLOPS", "flop/s")
        return ("flop_rate" if rate else "flop"), [_PREFIX[match.group(1)]]
    if match := re.fullmatch(r"([kKMGTP]i?)?(B|bytes?)(/s|/sec|ps)?", unit):
        prefix = match.group(1) or ""
        factors = [_BINARY[prefix]] if prefix in _BINARY else sorted({_PREFIX[prefix], 1024.0 ** "kKMGTP".find(prefix) if prefix else 1.0})
        if prefix.lower() == "k" and not prefix.endswith("i"):
            factors = [1e3, 1024.0]
        return ("rate" if match.group(3) else "bytes"), factors
    return None, [1.0]


def fact_dimension(unit: str) -> tuple[str, float]:
    """The dimension of a fact's unit (keet's canonical and the profilers' raw units) and the
    factor to its base unit."""
    value, base = to_base(1.0, unit or "")
    if base == "ns":
        return "time", value
    if base in ("%",):
        return "percent", 1.0
    if base in ("byte", "B"):  # "B": the hardware database's spelling
        return "bytes", value
    if base in ("byte/second", "byte/s", "B/s"):
        return "rate", value
    if base == "hz":
        return "freq", value
    if base == "flop":
        return "flop", 1.0
    if base in ("flop/second", "flop/s"):
        return "flop_rate", 1.0
    if base in ("x", "ratio"):
        return "ratio", 1.0
    return "count", 1.0


# ------------------------------------------------------------------ binding

# What a number is about, read from the words around it (a claim) or from where a fact came from
# (its origin and metric name): topic tokens, a scope and roles. One vocabulary serves both sides,
# so that "DRAM throughput" in an answer and sol.dram_pct in the profile meet on the token "dram".
# Each pattern is a plain alternation of words (no nested quantifiers): linear in the text.
# The words after "issue" that make it the schedulers' ("the issue rate"), not a problem
_ISSUE_SENSE = r"slots?|rates?|time|bound|component|stalls?|utili[sz]ation|active|eligible|efficiency|width|cycles?|instructions?|in|ns|warps?"
_TOPICS = (
    ("dram", r"dram|hbm\d?e?|device memory|global memory|off-chip"),
    # "memory bandwidth" or "memory throughput" as such: DRAM's, or the profiler's memory
    # throughput (the busiest memory level); a DRAM fact is a memory fact too (_IMPLIED)
    ("memory", r"(?<!shared[- ])memory (?:bandwidth|throughput|traffic|system)"),
    ("l2", r"l2|lts"),
    ("l1", r"l1|l1tex|texture cache"),
    ("shared", r"shared|smem|lds"),
    ("registers", r"registers?|regs"),
    ("spill", r"spill\w*|local memory"),
    ("occupancy", r"occupancy|occupied|warp slots"),
    ("threads", r"threads?"),
    ("blocks", r"blocks?|ctas?|workgroups?|grid"),
    ("warps", r"warps?|wavefronts?"),
    # "hits in L2 66% of the time": how often, not a fraction of the runtime (read_subject drops it)
    ("idiom", r"(?:most )?of the time"),
    ("duration", r"durations?|runtime|run time|execution time|time|ns"),
    # verbs of time: a time's subject, nothing in "the FMA pipe runs at 68% of peak" (_timed)
    ("ran", r"elapsed|took|takes|take|ran|runs|lasts?"),
    ("share", r"share|gpu time"),
    # ("the register spill problem accounts for 85% of the runtime": a finding and a fraction of
    # runtime say it too, _unsaid; "problem", "issue", "bottleneck" are neutral)
    ("impact", r"impact|at stake|recoverable|recover\w*|could save|sav(?:e|es|ed|ing)|to gain"),
    ("confidence", r"confidence|confident"),
    ("fp32", r"fp32|fma|ffma|single[- ]precision"),
    ("fp64", r"fp64|dfma|double[- ]precision"),
    ("tensor", r"tensor|mma|wmma|hmma"),
    ("sfu", r"sfu|xu|transcendental|special[- ]function"),
    ("int", r"int|integer|alu|imad"),
    ("lsu", r"lsu|load[- ]store"),
    ("fp16", r"fp16|half[- ]precision"),
    ("stall", r"stall\w*"),
    ("hit", r"hit rate|hit|hits"),
    ("bank", r"bank conflicts?|bank"),
    ("sectors", r"sectors?"),
    ("clock", r"clock|frequency"),
    ("sm", r"sms?|multiprocessors?|cus|compute units?"),
    ("halved", r"halv\w*|if halved|in half|by half"),
    ("speed", r"faster|slower|speed-?ups?|speeds?(?! of light)|sped|quicker|vs"),
    ("samples", r"samples?|hot ?spots?"),
    ("instructions", r"instruction issue|instructions?|inst|ipc|issued|(?<=halving )issue|(?<=halve )issue|"
                     r"issue(?=[ -](?:" + _ISSUE_SENSE + r")\b|\s*[.;:]|\s*$)"),
    ("atomics", r"atomics?"),
    ("contention", r"contention|contended|hot[- ]address|same address"),
    ("divergence", r"divergen\w*|branch efficiency"),
    ("cache", r"cache"),
    ("component", r"components?|breakdown|part of"),
    ("capacity", r"capacity|memory size|memory_bytes|of memory|gb of|hbm capacity"),
    # what one launch writes and the next reads back (keet.diagnosis.fusion)
    ("intermediates", r"intermediates?|temporar(?:y|ies)"),
    # the model's other components and keet's other findings by what they are about
    ("latency", r"latenc(?:y|ies)"),
    ("barrier", r"barriers?|syncthreads"),
    ("launch", r"launch (?:overhead|latency|cost)|fixed (?:launch )?(?:overhead|cost)|kernel fixed"),
    ("dispatch", r"dispatch\w*"),
    ("port", r"ports?"),
    ("coalescing", r"uncoalesced|coalesc\w*|strided|scattered"),
    ("tail", r"tail(?: effect)?|partial wave"),
    # how far the model is from the measurement
    ("error", r"errors?|off by|deviat\w*|mispredict\w*|accura\w*"),
)
# (?=[A-Za-z]): every topic word starts with a letter; without it, each position between
# punctuation and digits ("`1`1`1...") tried all the alternatives
_TOPIC = re.compile(r"\b(?=[A-Za-z])(?:" + "|".join(f"(?P<{name}>{words})" for name, words in _TOPICS) + r")\b", re.IGNORECASE)
# Topics a fact has whenever it has another: DRAM bandwidth is memory bandwidth, the L1 and the
# L2 are caches, a component of the model's time is a time. Facts carry them, so that a sentence
# may say either.
_IMPLIED = {"dram": {"memory"}, "l1": {"cache"}, "l2": {"cache"}}
# A "DRAM-bound" or "latency-bound" kernel: words about the kernel, not about the number
_BOUND_WORDS = re.compile(r"(?<![\w/-])(?:[\w/]++-)++(?:bound|limited)\b")
# Tokens that narrow a quantity (a hit rate is not a throughput, what is at stake is not the
# duration): a fact that has one binds only to a claim that says it.
QUALIFIERS = frozenset({"impact", "confidence", "hit", "spill", "halved", "bank", "samples", "component"})
_SCOPES = (
    ("thread", r"per[ -]thread|/\s?thread|each thread|every thread"),
    ("block", r"per[ -](?:thread[ -])?blocks?|/\s?block|per[ -]cta|each block|every block|per[ -]workgroup"),
    ("total", r"in total|total|overall|altogether|in all|all threads|whole grid|entire grid|launched|sum"),
    ("warp", r"per[ -]warp|/\s?warp|warp active|warp predicated"),
)
_SCOPE = re.compile(r"(?=[A-Za-z/])(?:" + "|".join(f"(?P<{name}>{words})" for name, words in _SCOPES) + r")(?!\w)", re.IGNORECASE)
_ROLES = (
    ("threshold", r"thresholds?|cut-?offs?|triggers?|fires?|flags?|exceeds?|exceeding"),
    # "would", "could": what is not measured ("halving the DRAM time would make it 1.8x faster")
    ("model", r"predict\w*|models?|perfmodel|modell?ed|estimat\w*|expects?|(?<!as )expected|attainable|speed of light|forecasts?|would|could"),
    ("peak", r"peak|theoretical|spec|specification|maximum|nominal|hardware|capacity|boost\w*"),
    ("measured", r"measur\w*|profiled|in the profile|observed"),
)
_ROLE = re.compile(r"\b(?=[A-Za-z])(?:" + "|".join(f"(?P<{name}>{words})" for name, words in _ROLES) + r")\b", re.IGNORECASE)
# The conditions a time was measured or predicted in: the caches' state at launch (the model's
# launch contexts, perfmodel.terms.base.CONTEXTS) and the SM clock. A figure binds to a sentence
# that names another condition of the same kind only if it has that one too.
# (keet's facts say theirs as ctx<name>: a word no topic or role reads)
_CONTEXTS = (
    ("warm", r"back-to-back|warm(?:ed)? caches?|repeated launch\w*|steady[- ]state|ctxwarm"),
    ("cold", r"cold caches?|isolated|flushed caches?|caches? flushed|single launch|ctxcold"),
    ("boost_clock", r"boost clock|at boost|ctxboost"),
    ("profiled_clock", r"profil\w* clock|base clock|locked clock|ctxprofiled"),
)
_CONTEXT = re.compile(r"\b(?=[A-Za-z])(?:" + "|".join(f"(?P<{name}>{words})" for name, words in _CONTEXTS) + r")\b", re.IGNORECASE)
CONTEXT_KINDS = {"warm": "caches", "cold": "caches", "boost_clock": "clock", "profiled_clock": "clock"}
# Where a sentence's clauses end: a number's words are those of its own clause.
_CLAUSE = re.compile(r",(?!\d{3}\b)|[;:()\[\]]|\s[-–—]\s|\b(?:and|but|while|whereas|which|so|than)\b", re.IGNORECASE)
_FINDING = re.compile(r"\bfinding ([a-z0-9_]+)")
# A fusion's figures (fusion_facts; a tool result's entry with its "fusion" index, walk_result)
_FUSION = re.compile(r"\bfusion \d+\b")
_KERNEL_REF = re.compile(r"\bkernel\s+(?:#|id\s+)?(?P<id>\d+)\b|\[(?P<bracket>\d+)\]", re.IGNORECASE)
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|" + re.escape(OPEN) + r".*?" + re.escape(CLOSE))
# A finding as an answer names it in words (its id is found as written)
CATEGORY_WORDS = {
    "dram_bandwidth": r"dram bandwidth|hbm bandwidth|dram[- ]bound", "l2_bandwidth": r"l2 bandwidth|l2[- ]bound",
    "l1_shared_bandwidth": r"l1/shared(?:[- ]memory)? bandwidth|shared[- ]memory bandwidth|l1 bandwidth",
    "uncoalesced_global": r"uncoalesced|coalescing", "shared_bank_conflicts": r"bank conflicts?", "atomic_contention": r"atomic contention",
    "warp_divergence": r"warp divergence|divergen\w*", "fp32_compute": r"fp32 compute|single[- ]precision compute",
    "fp64_compute": r"fp64 compute|double[- ]precision compute", "sfu_compute": r"sfu(?: compute)?|special[- ]function",
    "int_compute": r"integer compute|int32? compute", "tensor_compute": r"tensor[- ]core compute|tensor compute",
    "instruction_issue": r"instruction issue|issue[- ]bound", "register_spills": r"register spills?|spill(?:s|ing)?",
    "occupancy_registers": r"register[- ]limited occupancy", "occupancy_shared_memory": r"shared[- ]memory[- ]limited occupancy",
    "occupancy_block_limit": r"block[- ]limited occupancy|block[- ]slot limit", "small_grid": r"small grid",
    "tail_effect": r"tail effect", "memory_latency": r"memory latency|latency[- ]bound", "barrier_sync": r"barrier (?:stalls?|sync\w*)",
    "launch_overhead": r"launch overhead",
    # keet.diagnosis.fusion: a chain of launches one kernel could do (a category of its own in the JSON)
    "fusion": r"fusions?|fus(?:e|ed|es|ing)|fusible",
}
# Dimensions whose hardware figure is a peak: the kernel's own figure is what it achieved.
PEAK_DIMENSIONS = {"rate", "flop_rate", "freq"}


@dataclass(frozen=True)
class Subject:
    """What a number is about, besides its kernel and GPU (Fact.kernel, Fact.gpus; a claim's
    from its sentence): its topic tokens (the quantity and the unit, component or level it
    belongs to: dram, l2, fp32, instructions, duration, impact, ...), its scope (per thread,
    per warp, per block, a total), its roles (a rule's threshold, the model's figure, keet's
    estimate, a hardware peak, a measurement) and its context (the caches' state and the clock
    a time was measured or predicted at)."""

    topic: frozenset[str] = frozenset()
    scope: str | None = None
    roles: frozenset[str] = frozenset()
    context: frozenset[str] = frozenset()

    def with_(self, topic: frozenset[str] | set[str] = frozenset(), roles: frozenset[str] | set[str] = frozenset(),
              context: frozenset[str] | set[str] = frozenset(), scope: str | None = None) -> Subject:
        """This subject with more topic tokens, roles and context (and a scope if it has none)."""
        return Subject(self.topic | frozenset(topic), self.scope or scope, self.roles | frozenset(roles), self.context | frozenset(context))


def read_subject(text: str) -> Subject:
    """The topic, scope, roles and context the words of ``text`` give (underscores and dots as
    spaces, so that metric names read as words; "DRAM-bound" says what bounds the kernel, not
    what a number is). Short texts are remembered: clauses and units repeat."""
    return _read_short(text) if len(text) <= 512 else _read_subject(text)


@functools.lru_cache(maxsize=4096)
def _read_short(text: str) -> Subject:
    return _read_subject(text)


def _read_subject(text: str) -> Subject:
    words = text.replace("_", " ").replace(".", " ")
    if "-bound" in words or "-limited" in words:
        words = _BOUND_WORDS.sub(" ", words)
    found = list(_CONTEXT.finditer(words))
    context = frozenset(m.lastgroup for m in found)
    # the conditions are no quantity: "at the boost clock, the model predicts 975 us" is a time
    bare = _CONTEXT.sub(" ", words) if found else words
    topic = frozenset(m.lastgroup for m in _TOPIC.finditer(bare)) - {"idiom"}
    scopes = [m.lastgroup for m in _SCOPE.finditer(words)]
    roles = frozenset(m.lastgroup for m in _ROLE.finditer(words))
    return Subject(topic, scopes[0] if scopes else None, roles, context)


_DESCRIBED: dict[str, Subject] = {}
_CITED = re.compile(r"\bfinding \w+ (?=evidence |threshold (?:for|of) )")


def describe_fact(origin: str, metric: str | None, about: str) -> Subject:
    """A fact's subject from its origin (profile strings, quoted or fenced, say nothing), metric
    and ``about`` words; cached: origins repeat for every kernel."""
    # a finding's evidence and thresholds are about their metric, not the finding's category
    # (the ALU's 19.2% is not about int_compute because the int_compute finding cites it)
    key = f"{_CITED.sub('', re.sub(r'kernels? [0-9 and]+', '', origin))}|{metric}|{about}"
    found = _DESCRIBED.get(key)
    if found is None:
        if len(_DESCRIBED) > 100_000:
            _DESCRIBED.clear()
        found = _DESCRIBED[key] = read_subject(" ".join((_QUOTED.sub(" ", key.replace("|", " ")),)))
    return found


# ------------------------------------------------------------------ facts


@dataclass(frozen=True)
class Fact:
    """A value keet knows, in the base unit of its dimension, and where it came from."""

    value: float
    dimension: str
    origin: str
    gpus: frozenset[str] = frozenset()
    metric: str | None = None
    kernel: int | None = None  # the kernel it is about; None: the device, a GPU, the profile
    subject: Subject = Subject()
    category: str | None = None  # the finding it is a figure of


@dataclass
class FactBook:
    """Everything an answer's numbers may be checked against."""

    facts: list[Fact] = field(default_factory=list)
    metric_names: set[str] = field(default_factory=set)
    source_lines: dict[str, set[int]] = field(default_factory=dict)  # file basename -> lines that exist
    source_texts: list[str] = field(default_factory=list)
    kernel_names: dict[str, set[int]] = field(default_factory=dict)  # a kernel's name, lower case -> its ids
    kernel_ids: set[int] = field(default_factory=set)
    categories: set[str] = field(default_factory=set)  # of the findings
    own_gpu: str | None = None  # the profile's GPU: the one a sentence naming none talks about
    # the kernel an answer is about until it names one: the longest (the tools' default too)
    default_kernel: int | None = None
    _names: re.Pattern[str] | None = None
    _category_words: re.Pattern[str] | None = None
    _category_count: int = 0

    def add(self, value: Any, unit: str, origin: str, gpus: tuple[str | None, ...] = (), metric: str | None = None,
            kernel: int | None = None, about: str = "") -> None:
        """A fact; ``about``: words that say what it is where its origin does not."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return
        dimension, factor = fact_dimension(unit)
        tags = frozenset(g for g in gpus if g)
        if kernel is None and (named := re.match(r"kernel (\d+)\b", origin)):
            kernel = int(named.group(1))
        if metric:
            about = f"{about} {metric_words(metric)}"
        subject = fact_subject(describe_fact(origin, metric, about), dimension, metric)
        if _ESTIMATES.search(origin):
            subject = subject.with_(roles={"estimate"})
        self.facts.append(Fact(float(value) * factor, dimension, origin, tags, metric, kernel, subject, _category_of(origin)))

    def add_fraction(self, value: Any, origin: str, gpus: tuple[str | None, ...] = (), kernel: int | None = None, about: str = "") -> None:
        """A share (0..1) is said as a percent."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.add(value * 100.0, "%", origin, gpus, kernel=kernel, about=about)

    def add_text(self, text: str, origin: str, gpus: tuple[str | None, ...] = (), kernel: int | None = None, about: str = "") -> None:
        """The numbers of a text keet wrote (a finding's explanation, a model note), each about
        what its clause says and what the origin is."""
        tags = frozenset(g for g in gpus if g)
        if kernel is None and (named := re.match(r"kernel (\d+)\b", origin)):
            kernel = int(named.group(1))
        base = describe_fact(origin, None, about)
        numbers = extract_numbers(text, 0, 0)
        # each number read as an answer's is (bind): its clause without the other numbers and
        # their units, and its own unit and scope ("blocks of at least 64 threads instead of 32")
        tails = _tails(numbers, text, 0)
        marked = list(text)
        for a, b in tails:
            marked[a:b] = " " * (b - a)
        marked_text = "".join(marked)
        spans = _clauses(text)
        topics = [bool(_TOPIC.search(text[a:b].replace("_", " ").replace(".", " "))) for a, b in spans]
        starts = [a for a, _b in tails]
        numbered = [_holds_start(starts, a, b) for a, b in spans]
        for claim, (a, b) in zip(numbers, tails, strict=True):
            mine = read_subject(text[a:b])
            own, borrowed, other = _clause_parts(marked_text, claim.start, spans, topics)
            words = read_subject(own)
            if borrowed:  # as bind: a clause with its own number lends its quantity, not its roles
                lent = read_subject(borrowed)
                words = words.with_(lent.topic) if other is not None and numbered[other] else words.with_(lent.topic, lent.roles,
                                                                                                          lent.context, lent.scope)
            words = _timed(Subject(words.topic | mine.topic, mine.scope or words.scope, words.roles | mine.roles, words.context | mine.context),
                           claim.dimension)
            # keet's sentence says what its number is; the origin (the finding) only where it does not
            base_topic = base.topic if not words.topic - {"duration", "runtime", "clock"} else frozenset()
            subject = fact_subject(Subject(base_topic, base.scope, base.roles, base.context).with_(words.topic, words.roles, words.context,
                                                                                                   words.scope), claim.dimension or "count")
            if _THRESHOLD_BEFORE.search(text, max(0, claim.start - 24), claim.start) or _THRESHOLD_AFTER.match(text, claim.start + len(claim.text)):
                subject = subject.with_(roles={"threshold"})  # "(below 60.0%)", "bound at 60.0% and above"
            category = _category_of(origin)
            for factor in claim.factors:
                self.facts.append(Fact(claim.magnitude * factor, claim.dimension or "count", f"{origin}: {claim.text!r}", tags,
                                       None, kernel, subject, category))

    def add_kernel(self, kernel: Kernel) -> None:
        """A kernel's names as an answer may write them: whole, without its arguments or
        namespace, and without a "_kernel" ending."""
        self.kernel_ids.add(kernel.id)
        name = unfence(kernel.name) if isinstance(kernel.name, str) else ""
        forms = {name, name.split("(")[0], name.split("(")[0].rsplit("::", 1)[-1]}
        # (not a stem that is a word of what numbers are about: "barrier", "divergent")
        forms |= {f.removesuffix("_kernel") for f in set(forms) if len(f.removesuffix("_kernel")) >= 4
                  and not _TOPIC.fullmatch(f.removesuffix("_kernel").replace("_", " "))}
        # "the sfu kernel": the name without "_kernel", said as a kernel, however short
        forms |= {f"{f.removesuffix('_kernel')} kernel" for f in set(forms) if f.endswith("_kernel") and len(f) > len("_kernel")}
        for form in forms:
            if form.strip() and len(form) <= 200:
                self.kernel_names.setdefault(form.strip().lower(), set()).add(kernel.id)
        self._names = None

    def add_range(self, name: str, launches: list[int]) -> None:
        """An NVTX range's name as an answer may write it: it names the range's launches (as a
        kernel's name names the kernel), and its words and digits say nothing of a number's
        quantity ("eager_gelu_add_mul/fp32/67108864" is not about FP32)."""
        name = unfence(name) if isinstance(name, str) else ""
        # (not a word of what numbers are about: a range named "time" leaves the word alone)
        if len(name.strip()) >= 4 and len(name) <= 200 and not _TOPIC.fullmatch(name.strip().replace("_", " ")):
            self.kernel_names.setdefault(name.strip().lower(), set()).update(launches)
            self._names = None

    def kernels_named(self, text: str) -> frozenset[int]:
        """The ids of the kernels ``text`` names ("kernel 3", "[3]", or a kernel's name)."""
        found = set()
        for match in _KERNEL_REF.finditer(text):
            number = int(match.group("id") or match.group("bracket"))
            if number in self.kernel_ids:
                found.add(number)
        if self.kernel_names:
            if self._names is None:
                # longest first, so that "sgemm_tiled_kernel" wins over "sgemm_tiled"
                alternatives = sorted(self.kernel_names, key=len, reverse=True)
                self._names = re.compile(r"(?<![\w])(?:" + "|".join(map(re.escape, alternatives)) + r")(?![\w])", re.IGNORECASE)
            for match in self._names.finditer(text):
                found |= self.kernel_names.get(match.group(0).lower(), set())
        return frozenset(found)

    def categories_named(self, text: str) -> frozenset[str]:
        """The findings ``text`` names in words ("the register spill problem", "bank conflicts")."""
        if self._category_words is None or self._category_count != len(self.categories):
            known = [c for c in sorted(self.categories) if c in CATEGORY_WORDS]
            self._category_count = len(self.categories)
            self._category_words = re.compile(r"\b(?=[A-Za-z_])(?:" + "|".join(f"(?P<{c}>{CATEGORY_WORDS[c]})" for c in known) + r")\b",
                                              re.IGNORECASE) if known else re.compile(r"(?!)")
        return frozenset(m.lastgroup for m in self._category_words.finditer(text.replace("_", " ")))

    def name_spans(self, text: str) -> list[tuple[int, int]]:
        """Where ``text`` names kernels: their words say nothing about a number's quantity."""
        self.kernels_named("")  # compiles the names
        return [m.span() for m in self._names.finditer(text)] if self._names is not None else []

    def add_source(self, file: str, text: str | None, lines: list[int]) -> None:
        name = file.rsplit("/", 1)[-1]
        known = self.source_lines.setdefault(name, set())
        known.update(lines)
        if text:
            known.update(range(1, len(text.splitlines()) + 1))
            self.source_texts.append(text)

    def add_ratio(self, a: float | None, b: float | None, origin: str, gpus: tuple[str | None, ...] = (), about: str = "") -> None:
        """a / b and b / a as ratios, and the differences as percents (30% faster, 23% less time)."""
        if not a or not b:
            return
        for ratio in (a / b, b / a):
            self.add(ratio, "x", origin, gpus, about=f"speedup {about}")
            self.add(abs(ratio - 1) * 100, "%", f"{origin} (percent difference)", gpus, about=f"speedup {about}")


def profile_facts(book: FactBook, profile: Profile, kernels: list[Kernel], own_gpu: str | None) -> None:
    """The kernels' launch, resources, time and canonical metrics; raw and canonical metric
    names; the source files the profile holds."""
    book.metric_names.update(m.name for m in vocabulary())
    book.metric_names.update(profile.metrics["metric"].unique().tolist())
    device = profile.device
    book.own_gpu = book.own_gpu or own_gpu
    for kernel in kernels:
        book.add_kernel(kernel)
    timed = [k for k in kernels if k.duration_ns]
    if book.default_kernel is None and (timed or kernels):
        book.default_kernel = max(timed, key=lambda k: k.duration_ns).id if timed else kernels[0].id
    for name in ("sm_count", "sm_clock_hz", "max_sm_clock_hz", "memory_clock_hz", "memory_bytes", "memory_bus_width_bits", "l2_bytes"):
        unit = "hz" if name.endswith("_hz") else ("byte" if name.endswith("_bytes") else "")
        book.add(getattr(device, name), unit, f"device {name}", (own_gpu,), about="hardware")
    total = profile.total_duration_ns()
    for kernel in kernels:
        where = f"kernel {kernel.id}"
        book.add(kernel.duration_ns, "ns", f"{where} duration", (own_gpu,))
        if kernel.duration_ns and total:
            book.add_fraction(kernel.duration_ns * kernel.invocations / total, f"{where} share of GPU time")
        for name, dims, about in (("grid", kernel.grid, "blocks"), ("block", kernel.block, "threads per block")):
            for value in dims or ():
                book.add(value, "", f"{where} {name} dimension", about=about)
        for name in ("blocks", "threads_per_block", "registers_per_thread", "shared_bytes_per_block", "invocations",
                     "static_shared_bytes", "dynamic_shared_bytes"):
            book.add(getattr(kernel, name), "byte" if "bytes" in name else "", f"{where} {name}")
        if kernel.blocks and kernel.threads_per_block:
            book.add(kernel.blocks * kernel.threads_per_block, "", f"{where} threads launched")
        for metric, (value, unit) in profile.values(kernel).items():
            book.add(value, unit, f"{where} {metric}", (own_gpu,), metric)
        source = kernel.source
        if source is not None:
            lines = source.by_line()
            for file in set(lines["file"]) | set(source.files):
                book.add_source(str(file), source.files.get(file), [int(n) for n, f in zip(lines["line"], lines["file"]) if f == file])
    ranked = sorted((k for k in kernels if k.duration_ns), key=lambda k: -k.duration_ns)[:10]
    for a, b in combinations(ranked, 2):
        book.add_ratio(a.duration_ns, b.duration_ns, f"kernels {a.id} and {b.id} durations")


def finding_facts(book: FactBook, document: dict[str, Any], own_gpu: str | None) -> None:
    """Findings of keet explain's document: impact, confidence, evidence and thresholds, the
    numbers of keet's explanations and suggestions, the hot source lines."""
    for entry in document["kernels"]:
        where = f"kernel {entry['id']}"
        for finding in entry["diagnosis"]:
            book.categories.add(finding["category"])
            origin = f"{where} finding {finding['category']}"
            book.add_fraction(finding["impact"], f"{origin} impact", about="of runtime")
            book.add_fraction(finding["confidence"], f"{origin} confidence")
            if entry.get("duration_ns"):
                book.add(finding["impact"] * entry["duration_ns"], "ns", f"{origin} time at stake", (own_gpu,))
            for evidence in finding["evidence"]:
                book.add(evidence["value"], evidence["unit"], f"{origin} evidence {evidence['metric']}", (own_gpu,), evidence["metric"])
                if "compared_with" in evidence:
                    book.add(evidence["compared_with"], evidence["unit"], f"{origin} threshold for {evidence['metric']}", (own_gpu,))
            book.add_text(finding["explanation"], f"{origin} explanation", (own_gpu,))
            for suggestion in finding["suggestions"]:
                book.add_text(suggestion, f"{origin} suggestion", (own_gpu,))
            for line in finding["source_lines"]:
                # origins reach the model in a repair request ("closest known: ... from ..."): the
                # profile's file name goes fenced
                where_line = f"{fence(line['file'])}:{line['line']}"
                book.add_fraction(line["share"], f"{origin} share of {where_line}", about="samples")
                book.add(line["value"], "", f"{origin} {line['counter']} at {where_line}", about="samples")
                book.add_source(line["file"], None, [line["line"]])
    speed_of_light_facts(book, document, own_gpu)
    fusion_facts(book, document, own_gpu)


def speed_of_light_facts(book: FactBook, document: dict[str, Any], own_gpu: str | None) -> None:
    """Diagnosis v2's figures (keet.diagnosis): each finding's recoverable time and share of
    the kernel's time, each kernel's speed of light (the model's attainable time for its work,
    the headroom to it, the fraction of it reached and how far from it, as a ratio) and its
    verdict's numbers."""
    for entry in document["kernels"]:
        where = f"kernel {entry['id']}"
        for finding in entry["diagnosis"]:
            origin = f"{where} finding {finding['category']}"
            if finding.get("recoverable_ns") is not None:
                book.add(finding["recoverable_ns"], "ns", f"{origin} recoverable time", (own_gpu,))
                book.add_fraction(finding.get("recoverable_fraction"), f"{origin} recoverable share of its time", (own_gpu,))
        sol = entry.get("speed_of_light") or {}
        if sol.get("attainable_ns") is not None:
            limiter = f"{sol.get('limiter') or ''} {sol.get('limiter_term') or ''}".replace("_", " ")
            about = f"model speed of light {limiter} ctxcold"
            book.add(sol["attainable_ns"], "ns", f"{where} speed of light attainable time", (own_gpu,), about=about)
            book.add(sol["headroom_ns"], "ns", f"{where} speed of light headroom recoverable", (own_gpu,), about=about)
            book.add_fraction(sol["fraction"], f"{where} speed of light fraction reached", (own_gpu,), about=about)
            if sol["fraction"]:
                book.add(1 / sol["fraction"], "x", f"{where} speed of light distance from attainable", (own_gpu,), about=about)
        if entry.get("recoverable_ns") is not None:
            book.add(entry["recoverable_ns"], "ns", f"{where} recoverable time", (own_gpu,))
        if entry.get("verdict"):
            book.add_text(entry["verdict"]["text"], f"{where} verdict", (own_gpu,))


def prediction_facts(book: FactBook, profile: Profile, kernels: list[Kernel], own_gpu: str | None) -> None:
    """The model's prediction and breakdown of each kernel on every GPU of the database, the
    GPUs' hardware figures, and the ratios a reader states (measured vs predicted, GPU vs GPU)."""
    from keet.analysis.predictions import model_inputs, predictions
    from keet.llm.tools import prediction_dict
    from perfmodel.hardware import gpu, gpu_ids

    for gpu_id in gpu_ids():
        hardware = gpu(gpu_id)
        for name, param in hardware.params.items():
            book.add(param.value, param.unit, f"{gpu_id} hardware {name}", (gpu_id,))
    for kernel in kernels:
        work, why_not = model_inputs(profile, kernel)
        found = predictions(profile, kernel, work, why_not)
        shown = [p for p in (*found.per_gpu, found.at_profile_clock) if p is not None and p.predicted_ns is not None]
        for prediction in shown:
            # the conditions of the prediction: its launch context and its clock (boost, or the
            # clock the profile ran at, whose prediction goes beside the measured time)
            at_clock = prediction is found.at_profile_clock
            context = f"{CONTEXT_WORDS.get(getattr(prediction, 'context', ISOLATED), '')} {'ctxprofiled' if at_clock else 'ctxboost'}"
            where = f"kernel {kernel.id} model on {prediction.gpu}{' at the profiled clock' if at_clock else ''}"
            walk_result(book, prediction_dict(prediction, gpu(prediction.gpu)), where, (prediction.gpu,), about=context)
            book.add_ratio(kernel.duration_ns, prediction.predicted_ns, f"kernel {kernel.id} measured vs model on {prediction.gpu}"
                           f"{' at the profiled clock' if at_clock else ''}", (prediction.gpu, own_gpu), about=f"error measured {context}")
        for a, b in combinations([p for p in found.per_gpu if p.predicted_ns], 2):
            book.add_ratio(a.predicted_ns, b.predicted_ns, f"kernel {kernel.id} model {a.gpu} vs {b.gpu}", (a.gpu, b.gpu))


def fusion_facts(book: FactBook, document: dict[str, Any], own_gpu: str | None) -> None:
    """The run's fusions (keet.diagnosis.fusion; keet explain's ``fusions``): each chain's
    recoverable time (keet's estimate, as a finding's), its share of the chain's time and of
    the run, the measured time of its launches, the model's time for them as they are and
    fused, the intermediate bytes and the launch count, and the numbers of how it is won (in
    keet's words, without the range's name: a profile string's numbers are never facts). The
    NVTX ranges' names become names of their launches (FactBook.add_range)."""
    from keet.diagnosis.fusion import Fusion

    for entry in document.get("nvtx") or []:
        book.add_range(entry["range"], entry["launches"])
    fusions = document.get("fusions") or []
    if fusions:
        book.categories.add("fusion")
    total = document.get("total_ns")
    for index, entry in enumerate(fusions):
        fusion = Fusion.from_dict(entry)
        origin = f"fusion {index}"
        if fusion.range:
            book.add_range(fusion.range, fusion.launches)
        # a chain's figures are its first launch's (where_to_win's representative): a sentence
        # names the chain by its range (all its launches) or by that launch, not another chain
        first = fusion.launches[0] if fusion.launches else None
        gpus = (own_gpu,)
        book.add(fusion.recoverable_ns, "ns", f"{origin} recoverable time", gpus, kernel=first)
        book.add_fraction(fusion.share, f"{origin} recoverable share of its time", gpus, kernel=first)
        if total:
            book.add_fraction(fusion.recoverable_ns / total, f"{origin} recoverable share of the run", gpus, first, about="of gpu time")
        book.add(fusion.measured_ns, "ns", f"{origin} measured time of its launches", gpus, kernel=first)
        book.add(fusion.predicted_ns, "ns", f"{origin} model's predicted time of its launches", gpus, kernel=first)
        book.add(fusion.fused_ns, "ns", f"{origin} model's predicted time fused into one kernel", gpus, kernel=first)
        book.add(fusion.intermediate_bytes, "byte", f"{origin} intermediates that stay on chip", kernel=first)
        book.add(len(fusion.launches), "", f"{origin} launches", kernel=first)
        book.add_text(fusion.describe(named=False), f"{origin} how", gpus, first)


def _category_of(origin: str) -> str | None:
    """The finding a fact is a figure of: its origin's "finding <category>", or a fusion's."""
    finding = _FINDING.search(origin)
    if finding:
        return finding.group(1)
    return "fusion" if _FUSION.search(origin) else None


# perfmodel's launch contexts (perfmodel.terms.base.CONTEXTS) in the words of _CONTEXTS
ISOLATED = "isolated"
CONTEXT_WORDS = {ISOLATED: "ctxcold", "isolated-clean": "ctxcold", "event": "ctxcold", "back-to-back": "ctxwarm"}
# How a component of the model's breakdown is said (topic words); the others by their own name
COMPONENT_WORDS = {"issue": "instruction issue", "kernel_fixed": "launch overhead", "sm_port": "sm port", "atomics_hot_address": "atomics contention",
                   "dirty_writeback": "l2 writeback", "l1_shared": "l1 shared"}


_KEY_UNITS = (("_bytes_per_s", "byte/second"), ("_ns", "ns"), ("_hz", "hz"), ("_pct", "%"), ("_bytes", "byte"))
_FRACTION_KEYS = {"share", "impact", "confidence"}
_RATIO_KEYS = {"speedup", "speedup_if_halved"}
# Keys whose numbers say which kernel, launches, fusion or group a result is about
_INDEX_KEYS = {"kernel", "id", "launches", "representative", "fusion", "group"}


def walk_result(book: FactBook, result: Any, origin: str, gpus: tuple[str | None, ...] = (), key: str = "",
                kernel: int | None = None, about: str = "") -> None:
    """Every number of a tool result, with its unit from a sibling ``unit`` or from its key;
    keet's own strings give their numbers too, fenced profile strings do not. ``about``: words
    for what every number of the result is about (the conditions of a prediction)."""
    if isinstance(result, dict):
        if isinstance(result.get("component"), str) and OPEN not in result["component"]:
            # an expected effect: its numbers are about that component of the model's time
            component = result["component"]
            about = f"{about} component {COMPONENT_WORDS.get(component, component.replace('_', ' '))}"
            origin = f"{origin} halving '{component}'"  # quoted: read from ``about``, not as words
        if "value" in result and "unit" in result:
            # the tools fence a profile's own units and raw metric names; keet converts with the
            # unit and binds to the name as the model writes it, without the fence (the origin
            # keeps the fence: it goes back to the model in a repair request)
            unit, metric = unfence(result["unit"]), unfence(result.get("metric"))
            unit = unit if isinstance(unit, str) else ""
            metric = metric if isinstance(metric, str) else None
            book.add(result["value"], unit, f"{origin} {result.get('metric', key)}", gpus, metric, kernel, about=about)
            if "compared_with" in result:
                book.add(result["compared_with"], unit, f"{origin} threshold of {result.get('metric', key)}", gpus, kernel=kernel, about=about)
        tags = (*gpus, result.get("gpu")) if isinstance(result.get("gpu"), str) else gpus
        # a fusion or a group of launches (the where_to_win tool) says which: its figures are
        # that fusion's (a finding of its own, keet's estimate) or that group's
        for which in ("fusion", "group"):
            if isinstance(result.get(which), int) and not isinstance(result.get(which), bool):
                origin = f"{origin} {which} {result[which]}"
                category = result.get("category")
                if which == "group" and isinstance(category, str) and re.fullmatch(r"[a-z0-9_]+", category):
                    origin = f"{origin} finding {category}"  # a group's figures are its top finding's
        # a result about one kernel says so ("kernel": id): its numbers are that kernel's
        kernel = result["kernel"] if isinstance(result.get("kernel"), int) and not isinstance(result.get("kernel"), bool) else kernel
        launches = result.get("launches")
        if "fusion" in result and isinstance(launches, list) and launches and all(isinstance(k, int) for k in launches):
            kernel = launches[0]  # a chain's figures are its first launch's (as fusion_facts)
            if isinstance(result.get("range"), str):
                book.add_range(result["range"], launches)  # its range names its launches (fenced: unfenced there)
        if isinstance(result.get("id"), int) and key in ("kernels", "kernel"):
            kernel = result["id"]
        for name, value in result.items():
            if name not in ("value", "compared_with") or "unit" not in result:
                # a breakdown's entries are components of the time, not the time
                part = f"{about} {COMPONENT_WORDS.get(name, '')}" if key == "breakdown_ns" else about
                walk_result(book, value, origin, tags, name if key != "breakdown_ns" else f"{name}_ns component", kernel, part)
    elif isinstance(result, list):
        for item in result:
            walk_result(book, item, origin, gpus, key, kernel, about)
    elif isinstance(result, str):
        if OPEN not in result and key != "component":
            book.add_text(result, f"{origin} {key}", gpus, kernel, about)
    elif isinstance(result, (int, float)):
        if key in _INDEX_KEYS:
            return  # which kernel (launches, fusion, group) a result is about, not a figure of it
        if key in _FRACTION_KEYS:
            book.add_fraction(result, f"{origin} {key}", gpus, kernel, about)
        elif key in _RATIO_KEYS:
            book.add(result, "x", f"{origin} {key}", gpus, kernel=kernel, about=f"{about} {key.replace('_', ' ')}")
            # "a 10% speedup", "9% less time"
            for ratio in (result, 1 / result if result else 0):
                if ratio:
                    book.add(abs(ratio - 1) * 100, "%", f"{origin} {key} (percent difference)", gpus, kernel=kernel,
                             about=f"{about} {key.replace('_', ' ')}")
        else:
            # predicted_ns_if_halved is a time too
            bare = key.removesuffix(" component").removesuffix("_if_halved")
            unit = next((unit for suffix, unit in _KEY_UNITS if bare.endswith(suffix)), "")
            book.add(result, unit, f"{origin} {key}", gpus, kernel=kernel, about=about)


# ------------------------------------------------------------------ claims


@dataclass
class Claim:
    """One checkable statement of the answer and its verdict."""

    kind: str  # "number", "metric", "source_line", "code"
    text: str
    sentence: int  # index of the sentence it is in
    start: int  # offset in the answer
    magnitude: float = 0.0
    dimension: str | None = None
    factors: list[float] = field(default_factory=lambda: [1.0])
    tolerance: float = 0.0  # in the claim's own unit
    metric: str | None = None  # the metric a number is bound to
    gpus: frozenset[str] = frozenset()  # GPUs its sentence names
    kernels: frozenset[int] = frozenset()  # kernels its sentence names (or the last one named before)
    kernel_named: bool = False  # whether its own sentence names them
    categories: frozenset[str] = frozenset()  # findings (bottleneck categories) its sentence names
    subject: Subject = Subject()  # what its clause says it is
    verdict: str = "unchecked"  # supported, unsupported, exempt, unbound (kept only when not strict)
    support: str = ""  # the fact that supports it, or why it is exempt
    reason: str = ""  # why it is unsupported

    def as_dict(self) -> dict[str, Any]:
        found = {"kind": self.kind, "text": preview(self.text), "verdict": self.verdict}
        if self.verdict in ("unsupported", "unbound"):
            found["reason"] = self.reason
        else:
            found["support"] = self.support
        return found


def _stated_tolerance(number: str, hedged: bool) -> float:
    """Half a unit of the last stated digit (trailing integer zeros are stated unless hedged)."""
    digits = number.replace(",", "")
    if "e" in digits.lower():
        mantissa = digits.lower().split("e")[0]
        exponent = int(digits.lower().split("e")[1])
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return 0.5 * 10.0 ** (exponent - decimals)
    if "." in digits:
        return 0.5 * 10.0 ** -len(digits.split(".")[1])
    zeros = len(digits) - len(digits.rstrip("0")) if hedged and digits.strip("0") else 0
    return 0.5 * 10.0**zeros


_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_WORD = "|".join([*_ONES, *_TENS, *_SCALES, "dozen"])
# A number in words ("ninety-nine", "a thousand", "two hundred and fifty"): words from one list
# joined by spaces or hyphens; "a"/"an" only before a scale word. Each word is read once.
_WORD_NUMBER = re.compile(r"(?<![\w-])(?:an?\s+(?=hundred|thousand|million|billion|trillion|dozen))?(?P<words>(?:(?:" + _WORD + r")\b)"
                          r"(?:[\s-](?:and\s)?(?:(?:" + _WORD + r")\b))*+)(?![\w])(?P<gap>[ \u00a0\-]?)" + _UNIT + "?", re.IGNORECASE)
_HEX = re.compile(r"(?<![\w.])0[xX](?P<hex>[0-9A-Fa-f]{1,16})(?![\w.])(?P<gap>[ \u00a0\-]?)" + _UNIT + "?")


def words_value(words: str) -> int:
    """ "ninety-nine" -> 99, "two hundred and fifty thousand" -> 250000."""
    total = current = 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word in _ONES:
            current += _ONES.index(word)
        elif word in _TENS:
            current += 20 + 10 * _TENS.index(word)
        elif word == "dozen":
            current = (current or 1) * 12
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in _SCALES:
            total += (current or 1) * int(_SCALES[word])
            current = 0
    return total + current


def _unit_of(match: re.Match[str], text: str) -> str | None:
    unit = match.group("unit")
    if unit and match.group("gap") == "-" and unit not in _COUNT_WORDS and not unit.endswith(("byte", "bytes")) and unit != "fold":
        unit = None  # "2-way", "16-bit": a hyphen joins words, not a number and its unit
    if unit and unit[0].isalpha() and match.end() < len(text) and (text[match.end()].isalnum() or text[match.end()] == "_"):
        unit = None
    return unit


def _spelled_numbers(text: str, offset: int, sentence: int) -> list[Claim]:
    """Numbers in words and in hexadecimal: claims like any other ("ten-fold", "0x3E8")."""
    found = []
    for match in _WORD_NUMBER.finditer(text):
        words = match.group("words")
        if words.lower() in ("and",):
            continue
        value = words_value(words)
        unit = _unit_of(match, text)
        before = text[max(0, match.start() - _LOOK_BACK): match.start()]
        hedged = any(before.rstrip().lower().endswith(h) for h in HEDGES)
        dimension, factors = unit_dimension(unit)
        found.append(Claim("number", match.group(0).strip(), sentence, offset + match.start(),
                           float(value), dimension, factors, _stated_tolerance(str(value), hedged)))
    for match in _HEX.finditer(text):
        unit = _unit_of(match, text)
        dimension, factors = unit_dimension(unit)
        found.append(Claim("number", match.group(0).strip(), sentence, offset + match.start(), float(int(match.group("hex"), 16)),
                           dimension, factors, 0.5))
    return found


def extract_numbers(text: str, offset: int, sentence: int) -> list[Claim]:
    """The numbers of a piece of text with their units; ordinals and digits inside names are skipped."""
    claims = _spelled_numbers(text, offset, sentence)
    spelled = bytearray(len(text) + 1)
    for claim in claims:
        spelled[claim.start - offset: claim.start - offset + len(claim.text)] = b"\x01" * len(claim.text)
    # where the text's content starts: a number before it is at the head of a list item (O(1)
    # per number; text[:start].strip() per number was quadratic in a long line of numbers)
    content = len(text) - len(text.lstrip().lstrip("-*#").lstrip())
    for match in _CLAIM.finditer(text):
        if spelled[match.start()]:
            continue
        before = text[max(0, match.start() - _LOOK_BACK): match.start()]
        if match.start() <= content and _ORDINAL.match(text[: match.end("num") + 2]):
            continue
        unit = _unit_of(match, text)
        number = match.group("num")
        if _STEP.search(before) and number.isdigit() and not unit:
            continue  # "step 3", "kernel 3"; not "the triad kernel 2.10x faster"
        hedged = any(before.rstrip().lower().endswith(h) for h in HEDGES)
        dimension, factors = unit_dimension(unit)
        claims.append(Claim("number", match.group(0).strip() if unit else number, sentence, offset + match.start("num"),
                            abs(float(number.replace(",", ""))), dimension, factors, _stated_tolerance(number, hedged)))
    return sorted(claims, key=lambda c: c.start)


def _range_units(claims: list[Claim], text: str, offset: int) -> None:
    """"1.3-1.5x", "between 60 and 70%": the unit after the second number applies to the first."""
    for first, second in pairwise(claims):
        between = text[first.start - offset + len(first.text): second.start - offset]
        if first.dimension is None and second.dimension is not None and re.fullmatch(r"\s*(?:-|–|to|and)\s*", between):
            first.dimension, first.factors = second.dimension, second.factors


def sentences(answer: str) -> list[tuple[int, str]]:
    """The answer cut into sentences, each with its offset: a line ends a sentence, and so does
    [.!?] before whitespace, except after a list item's number ("1. Use ...")."""
    found = []
    position = 0
    for line in answer.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        head = _LINE_ORDINAL.match(content)
        start = 0
        for end in _SENTENCE_END.finditer(content, head.end() if head else 0):
            if content[start:end.end()].strip():
                found.append((position + start, content[start:end.end()]))
            start = end.end()
        if content[start:].strip():
            found.append((position + start, content[start:]))
        position += len(line)
    return found


def _clauses(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s clauses (cut at punctuation and conjunctions)."""
    spans, start = [], 0
    for cut in _CLAUSE.finditer(text):
        spans.append((start, cut.start()))
        start = cut.end()
    spans.append((start, len(text)))
    return spans


def _clause_at(text: str, start: int, spans: list[tuple[int, int]] | None = None, topics: list[bool] | None = None) -> str:
    """The words of the clause a number at ``start`` is in; when they name no quantity, those
    of the nearest clause that does (before it, then after it). ``spans`` and ``topics`` (does
    each clause name a quantity): computed once per sentence by the caller with many numbers."""
    own, borrowed, _other = _clause_parts(text, start, spans, topics)
    return f"{own} {borrowed}" if borrowed else own


def _clause_parts(text: str, start: int, spans: list[tuple[int, int]] | None = None,
                  topics: list[bool] | None = None) -> tuple[str, str, int | None]:
    """_clause_at's words apart: the number's own clause, the nearest clause's it borrows (or
    ""), and that clause's index."""
    spans = spans if spans is not None else _clauses(text)
    topics = topics if topics is not None else [bool(read_subject(text[a:b]).topic) for a, b in spans]
    here = bisect.bisect_right([a for a, _b in spans], start) - 1 if len(spans) < 64 else _span_index(spans, start)
    here = max(here, 0)
    # the words near the number only: reading a whole clause of thousands of numbers once per
    # number was quadratic
    own = text[max(spans[here][0], start - 2 * _LOOK_BACK): min(spans[here][1], start + 2 * _LOOK_BACK)]
    if topics[here]:
        return own, "", None
    # at most 64 clauses either way: a hostile sentence of thousands of clauses must not be
    # searched whole for each of its numbers
    before = next((i for i in range(here - 1, max(-1, here - 65), -1) if topics[i]), None)
    after = next((i for i in range(here + 1, min(len(spans), here + 65)) if topics[i]), None)
    other = before if before is not None else after
    if other is None:
        return own, "", None
    a, b = spans[other]
    return own, text[max(a, b - 2 * _LOOK_BACK): b] if other < here else text[a: min(b, a + 2 * _LOOK_BACK)], other


def _span_index(spans: list[tuple[int, int]], start: int) -> int:
    lo, hi = 0, len(spans) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if spans[mid][0] <= start:
            lo = mid
        else:
            hi = mid - 1
    return lo


def bind(claim: Claim, text: str, offset: int, spans: list[tuple[int, int]], topics: list[bool], own: str = "",
         sentence: Subject = Subject(), numbered: list[bool] | None = None) -> None:
    """The claim's subject: the words of its clause (kernel and GPU names, and the other
    numbers with their units, blanked out), of its own unit (``own``: "blocks" in "1,056
    blocks of 256 threads"), and the roles and context its sentence states in clauses without
    a number (``sentence``: "According to the model, ..."); a time is a duration. A clause
    with no quantity word borrows the nearest one's quantity, and its roles only when that
    clause has no number of its own ("it sustains 3065 GB/s, 91% of the peak": not a peak)."""
    mine_words, borrowed, other = _clause_parts(text, claim.start - offset, spans, topics)
    subject = read_subject(mine_words)
    if borrowed:
        lent = read_subject(borrowed)
        if numbered is not None and other is not None and numbered[other]:
            lent = Subject(lent.topic)
        subject = subject.with_(lent.topic, lent.roles, lent.context, lent.scope)
    mine = read_subject(own) if any(ch.isalpha() or ch == "/" for ch in own) else Subject()
    # its own scope ("per thread" right after it) wins over its clause's
    subject = Subject(subject.topic | mine.topic | sentence.topic, mine.scope or subject.scope,
                      subject.roles | mine.roles | sentence.roles, subject.context | mine.context | sentence.context)
    claim.subject = _timed(subject, claim.dimension)


# What follows a number and belongs to it: a scope ("256 threads per block", "8MB/thread") or
# "peak" ("3.07 TB/s out of 3.35 TB/s peak": only the second is a peak)
_TAIL_SCOPE = re.compile(r"\s*(?:(?:per|each|every)\s+[A-Za-z]\w*|/\s?[A-Za-z]\w*|(?:peak|theoretical|max(?:imum)?)\b)")
# Roles a clause without a number gives every number of its sentence ("According to the model, ...")
_SENTENCE_ROLES = frozenset({"model", "measured"})


def _holds_start(starts: list[int], a: int, b: int) -> bool:
    """Whether a number starts in [a, b) (``starts`` sorted)."""
    index = bisect.bisect_left(starts, a)
    return index < len(starts) and starts[index] < b


def _tails(numbers: list[Claim], sentence: str, offset: int) -> list[tuple[int, int]]:
    """Each number's span with its unit and the scope right after it."""
    spans = []
    for claim in numbers:
        start = claim.start - offset
        end = min(len(sentence), start + len(claim.text))
        scope = _TAIL_SCOPE.match(sentence, end)
        spans.append((start, scope.end() if scope else end))
    return spans


def _timed(subject: Subject, dimension: str | None) -> Subject:
    """Duration words ("runs", "time", "took") say what a time is: every time is a duration. A
    percent of a time ("75% of its runtime", "busy 91% of the time") is a fraction of runtime;
    verbs of time say nothing of a percent ("the FMA pipe runs at 68.2% of peak"), and neither
    verbs nor nouns of time say anything of a count, a size or a ratio ("halving the DRAM time")."""
    topic = subject.topic - {"ran"}
    if dimension == "time":
        topic |= {"duration"}
    elif dimension == "freq":  # "boosts to 1.98 GHz": a frequency is a clock's
        topic = (topic - {"duration"}) | {"clock"}
    elif dimension == "percent" and "duration" in topic:
        topic = (topic - {"duration"}) | {"runtime"}
    else:
        topic -= {"duration"}
    return Subject(topic, subject.scope, subject.roles, subject.context)


# What a canonical metric is, where its name does not say it all (keet.canonical's meanings,
# in the words of _TOPICS; the meanings themselves are prose that says more than what it is)
_METRIC_WORDS = {"sol.l1_pct": "l1 shared", "sol.memory_pct": "memory throughput", "sol.sm_pct": "compute sm",
                 "issue.active_pct": "issue slots", "launch.block_size": "threads per block", "launch.grid_size": "blocks",
                 "local.load_sectors": "local memory", "local.store_sectors": "local memory", "local.load_requests": "local memory",
                 "local.store_requests": "local memory", "dram.throughput": "memory bandwidth"}


def metric_words(metric: str) -> str:
    """What a canonical metric is, in words its name lacks ("l1 shared" for sol.l1_pct)."""
    return _METRIC_WORDS.get(metric, "")


# Percent metrics that are fractions of time (a pipe busy 91% of the active cycles)
_TIME_FRACTION_METRICS = re.compile(r"pipe\.|issue\.active|issue\.eligible")
# Figures that are keet's estimates (a finding's share of runtime at stake, its confidence, the
# time it could recover): neither measured nor the model's prediction; a sentence may say either
_ESTIMATES = re.compile(r"\bfinding \w+ (?:impact|confidence|time at stake|recoverable)"
                        r"|\b(?:fusion|group) \d+ (?:recoverable|share_of_run|share of the run|launches|count)")
# A number keet's own text compares with ("below 60.0%", "bound at 60.0% and above"): a threshold
_THRESHOLD_BEFORE = re.compile(r"(?:below|above|bound at|saturated at|at least|at most|exceeds?)\s*$", re.IGNORECASE)
_THRESHOLD_AFTER = re.compile(r"(?:\s+[\w'%]{1,20}){0,3}?\s+(?:and above|and below|or more|or less|and up)\b", re.IGNORECASE)


def fact_subject(subject: Subject, dimension: str, metric: str | None = None) -> Subject:
    """A fact's whole subject: its topics with those they imply (_IMPLIED), a time's duration,
    a fraction of time's "runtime"."""
    topic = set(subject.topic - {"ran"})
    for token in subject.topic:
        topic |= _IMPLIED.get(token, set())
    if dimension == "time":
        topic.add("duration")
    elif dimension == "percent" and (topic & {"duration", "share", "speed", "error"} or (metric and _TIME_FRACTION_METRICS.match(metric))):
        topic.add("runtime")
    return Subject(frozenset(topic), subject.scope, subject.roles, subject.context)


def extract_claims(answer: str, book: FactBook, limit: int | None = None) -> list[Claim]:
    """Every claim of the answer, sentence by sentence (with ``limit``: stop once there are more
    than ``limit``; the caller refuses such an answer whole). Each number carries what its
    sentence says it is about: kernels (named here, else the last named), GPUs, its clause's
    quantity, scope and roles."""
    claims: list[Claim] = []
    prefixes = {name.split(".")[0] for name in book.metric_names if "." in name and "__" not in name}
    last_kernels = frozenset({book.default_kernel}) if book.default_kernel is not None else frozenset()
    mention = gpu_mention()
    for index, (offset, sentence) in enumerate(sentences(answer)):
        if limit is not None and len(claims) > limit:
            break
        gpus = frozenset(m.lower() for m in mention.findall(sentence))
        named = book.kernels_named(sentence)
        if named:
            last_kernels = named
        chars = list(mention.sub(lambda m: " " * len(m.group(0)), sentence))
        for a, b in book.name_spans(sentence):
            chars[a:b] = " " * (b - a)
        blanked = "".join(chars)
        spans = _clauses(blanked)
        # whether each clause names a quantity, read once per sentence, not once per number
        topics = [bool(_TOPIC.search(blanked[a:b].replace("_", " ").replace(".", " "))) for a, b in spans]
        # the characters a claim already covers (a list of spans searched per match was
        # quadratic in a line of thousands of claims)
        covered = bytearray(len(sentence) + 1)

        def take(span: tuple[int, int], covered: bytearray = covered) -> None:
            covered[span[0]:span[1]] = b"\x01" * (span[1] - span[0])

        found: list[Claim] = []
        for match in _SOURCE_REF.finditer(sentence):
            take(match.span())
            found.append(Claim("source_line", match.group(0), index, offset + match.start()))
        for match in _CODE_SPAN.finditer(sentence):
            code = match.group("block") or match.group("span")
            if any(ch.isdigit() for ch in code) and not _METRIC.fullmatch(code.strip()):
                take(match.span())
                found.append(Claim("code", code.strip(), index, offset + match.start()))
        for match in _METRIC.finditer(sentence):
            name = match.group(0)
            if _FILE_SUFFIX.search(name) or covered[match.start()]:
                continue
            if "__" in name or name.split(".")[0] in prefixes or name in book.metric_names:
                take(match.span())
                found.append(Claim("metric", name, index, offset + match.start()))
                binding = _leading_binding(sentence, match.end())
                bound = _CLAIM.match(sentence, match.end() + len(binding))
                if bound:
                    number = extract_numbers(sentence[bound.start():bound.end()], offset + bound.start(), index)
                    for claim in number[:1]:
                        claim.metric = name
                        if any(binding.lower().rstrip().endswith(h) for h in HEDGES):  # "is about 70%"
                            claim.tolerance = _stated_tolerance(bound.group("num"), hedged=True)
                        found.append(claim)
                        take(bound.span())
        numbers = [c for c in extract_numbers(sentence, offset, index) if not covered[c.start - offset]]
        _range_units(numbers, sentence, offset)
        categories = frozenset(c for c in book.categories if c in sentence) | book.categories_named(blanked)
        # each number is read without the others and their units ("1,056 blocks of 256
        # threads": blocks are the first's, threads the second's), with its own unit and scope
        every = sorted((c for c in found + numbers if c.kind == "number"), key=lambda c: c.start)
        tails = _tails(every, sentence, offset)
        marked = list(blanked)
        for a, b in tails:
            marked[a:b] = " " * (b - a)
        marked_text = "".join(marked)
        # roles and context said in clauses without a number hold for the sentence's numbers
        starts = [a for a, _b in tails]
        wordless = [(a, b) for a, b in spans if not _holds_start(starts, a, b)]
        said = [read_subject(blanked[a:b]) for a, b in wordless[:64]]
        # a sentence of one number: what its leading clauses say is about it too ("If the SM
        # port component were cut in half, the kernel would speed up by 1.12x")
        leading = [s for s, (_a, b) in zip(said, wordless, strict=False) if len(every) == 1 and b <= starts[0]]
        whole = Subject(topic=frozenset().union(*(s.topic for s in leading)),
                        roles=frozenset().union(*(s.roles for s in said)) & _SENTENCE_ROLES,
                        context=frozenset().union(*(s.context for s in said)))
        own = {id(c): sentence[a:b] for c, (a, b) in zip(every, tails, strict=True)}
        numbered = [_holds_start(starts, a, b) for a, b in spans]
        for claim in found + numbers:
            claim.gpus = gpus
            claim.categories = categories
            claim.kernels = last_kernels
            claim.kernel_named = bool(named)
            if claim.kind == "number":
                bind(claim, marked_text, offset, spans, topics, own.get(id(claim), ""), whole, numbered)
        claims.extend(sorted(found + numbers, key=lambda c: c.start))
    return claims


_BINDING = re.compile(r"(?:\s*(?:=|:|is|was|of|at|reads|shows|reached|reaches|equals)\s*(?:about|around|roughly|~|≈)?\s*)", re.IGNORECASE)


def _leading_binding(sentence: str, position: int) -> str:
    """The words between a metric name (ending at ``position``) and the number it is said to
    have ("= ", " is about ")."""
    match = _BINDING.match(sentence, position)
    return match.group(0) if match else ""


# ------------------------------------------------------------------ checking


def _matches(claim: Claim, fact: Fact, factor: float) -> bool:
    """The fact, rounded or truncated to the claim's last stated digit, equals the claim."""
    said = fact.value / factor
    difference = abs(said) - claim.magnitude
    slack = 1e-9 * max(abs(said), 1.0)
    return abs(difference) <= claim.tolerance + slack or 0 <= difference < 2 * claim.tolerance


def _compatible(claim: Claim, fact: Fact) -> bool:
    if claim.metric is not None and fact.metric != claim.metric:
        return False
    if claim.dimension is None:
        return fact.dimension in ("count", "percent", "ratio") or claim.metric is not None
    if claim.dimension == "count" and fact.dimension in ("count", "flop"):
        return True
    if claim.dimension != fact.dimension:
        return False
    if claim.gpus and fact.dimension in GPU_DIMENSIONS:
        return bool(fact.gpus & claim.gpus)
    return True


def _closest(claim: Claim, book: FactBook) -> str:
    candidates = [(abs(f.value / claim.factors[0] - claim.magnitude) / max(claim.magnitude, 1e-12), f) for f in book.facts
                  if _compatible(claim, f)]
    if not candidates:
        return ""
    _gap, fact = min(candidates, key=lambda item: item[0])
    return f" (closest known: {fact.value / claim.factors[0]:.4g} from {fact.origin})"


def binding(claim: Claim, fact: Fact, book: FactBook) -> tuple[str, str]:
    """("bound", "") when the fact is about what the claim's sentence says it is: the same GPU
    (the profile's own where the sentence names none), the same kernel, the same quantity and
    scope, the same role (a threshold, the model, a hardware peak, or a measurement);
    ("unbound", why) when the sentence does not say enough to tell; ("other", why) when it
    says something else."""
    own = frozenset({book.own_gpu}) if book.own_gpu else frozenset()
    said = claim.gpus or own
    if fact.gpus and not fact.gpus & said:
        return "other", f"it is a figure of {', '.join(sorted(fact.gpus))}, the sentence is about {', '.join(sorted(said)) or 'no GPU it names'}"
    # a comparison of two GPUs: the sentence names both (one may be the profile's own, unnamed,
    # when the sentence names a single GPU: "2.3x faster on a B200")
    named = claim.gpus if len(claim.gpus) > 1 else claim.gpus | own
    if len(fact.gpus) > 1 and not fact.gpus <= named:
        return "other", f"it compares {' and '.join(sorted(fact.gpus))}, the sentence names {', '.join(sorted(named))}"
    if (fact.kernel is None and "peak" in fact.subject.roles and claim.kernel_named and not claim.gpus
            and "peak" not in claim.subject.roles):
        # a GPU's hardware figure, said of a kernel ("each thread of K holds 255 registers")
        return "other", "it is a hardware limit of the GPU, the sentence states it as the kernel's"
    if fact.kernel is not None and "threshold" in fact.subject.roles and fact.category in claim.categories and not claim.kernel_named:
        pass  # a rule's threshold, said of the rule ("the DRAM bandwidth rule fires at 60%"), not of a kernel
    elif fact.kernel is not None:
        if not claim.kernels:
            return "unbound", "the answer names no kernel, and the profile has several"
        if fact.kernel not in claim.kernels:
            return "other", f"it is kernel {fact.kernel}'s, the sentence is about kernel {', '.join(map(str, sorted(claim.kernels)))}"
    if fact.category and claim.categories and fact.category not in claim.categories:
        return "other", f"it is a figure of the {fact.category} finding, the sentence is about {', '.join(sorted(claim.categories))}"
    subject, about = claim.subject, fact.subject
    if ("threshold" in about.roles) != ("threshold" in subject.roles):
        return "other", ("it is a rule's threshold, the sentence states it as something else" if "threshold" in about.roles
                         else "the sentence states a rule's threshold, the matching value is not one")
    # keet's estimates (a finding's impact) may be said either way: "keet estimates 40% at stake"
    if "model" in about.roles and "model" not in subject.roles:
        return "other", "it is the model's figure, the sentence states it as something else"
    if "model" in subject.roles and not about.roles & {"model", "estimate"}:
        return "other", "the sentence states the model's figure, the matching value is not one"
    if "measured" in subject.roles and "measured" not in about.roles and about.roles & {"model", "estimate", "threshold", "peak"}:
        return "other", "the sentence states a measurement, the matching value is not one"
    if (fact.dimension in PEAK_DIMENSIONS or about.topic & PEAK_TOPICS) and ("peak" in about.roles) != ("peak" in subject.roles):
        return "other", ("it is a hardware peak, the sentence states it as achieved" if "peak" in about.roles
                         else "the sentence states a peak, the matching value is an achieved one")
    for kind in ("caches", "clock"):
        stated = {c for c in subject.context if CONTEXT_KINDS[c] == kind}
        known = {c for c in about.context if CONTEXT_KINDS[c] == kind}
        if stated and known and not stated & known:
            return "other", f"it is for {', '.join(sorted(known))}, the sentence says {', '.join(sorted(stated))}".replace("_", " ")
    if claim.metric is not None:
        return "bound", ""
    if not subject.topic:
        return "unbound", "the sentence does not say what quantity the number is"
    # the words of the finding the sentence names say which finding, not what quantity
    # ("the occupancy_shared_memory rule fires when sol.sm_pct passes 60%")
    known = about.topic | read_subject(fact.category).topic if fact.category and fact.category in claim.categories else about.topic
    if not subject.topic <= known or _unsaid(claim, fact):
        return "other", f"it is {_quantity(about)}, the sentence says {_quantity(subject)}"
    if subject.scope in ("thread", "block", "warp") and about.scope != subject.scope or subject.scope == "total" and about.scope in ("thread", "block", "warp"):
        return "other", f"it is {_scope(about.scope)}, the sentence says {_scope(subject.scope)}"
    return "bound", ""


# What a component of the model's time, or a finding, is about: naming it says "component"
UNIT_TOPICS = frozenset({"dram", "memory", "l2", "l1", "shared", "fp32", "fp64", "tensor", "sfu", "int", "lsu", "fp16", "instructions",
                         "atomics", "latency", "barrier", "launch", "dispatch", "port", "sm", "blocks", "registers", "spill", "coalescing",
                         "tail", "bank", "divergence", "occupancy"})
# Percent facts where the peak (theoretical occupancy) and the achieved value must be told apart
PEAK_TOPICS = frozenset({"occupancy"})


def _unsaid(claim: Claim, fact: Fact) -> set[str]:
    """The fact's narrowing tokens (QUALIFIERS) the sentence does not say. A component of the
    model's time is said by naming its unit ("the FMA work alone takes 539 us"); a finding's
    share of runtime at stake by naming the finding and the runtime ("the register spill
    problem accounts for 85% of the runtime")."""
    subject, about = claim.subject, fact.subject
    missing = set((about.topic & QUALIFIERS) - subject.topic)
    if "component" in missing and (subject.topic & about.topic & UNIT_TOPICS or "halved" in subject.topic & about.topic):
        missing.discard("component")
    if "impact" in missing and fact.category in claim.categories and "runtime" in subject.topic:
        missing.discard("impact")
    return missing


def _quantity(subject: Subject) -> str:
    return " ".join(sorted(subject.topic)) or "no quantity"


def _scope(scope: str | None) -> str:
    return {"thread": "per thread", "block": "per block", "warp": "per warp", "total": "a total"}.get(scope or "", "not per thread or block")


# Numbers a reader knows from the architecture are exempt only when said of what they are.
_CONSTANT_TOPICS = frozenset({"threads", "warps", "bank", "sectors", "cache"})


def check_number(claim: Claim, book: FactBook, strict: bool = True) -> None:
    """Supported by a fact of its value (within its stated digits) about what its sentence says
    it is; unbound (unsupported when ``strict``) when the sentence does not say enough."""
    unbound = other = ""
    for fact in book.facts:
        if _compatible(claim, fact) and any(_matches(claim, fact, factor) for factor in claim.factors):
            verdict, why = binding(claim, fact, book)
            if verdict == "bound":
                claim.verdict, claim.support = "supported", fact.origin
                return
            if verdict == "unbound":
                unbound = unbound or why
            else:
                other = other or f"{fact.origin} has this value, but {why}"
    if claim.metric is None and claim.dimension is None and float(claim.magnitude).is_integer() and claim.magnitude < 10:
        claim.verdict, claim.support = "exempt", "a single-digit count without a unit, not a measurement"
        return
    constant = ARCHITECTURE_CONSTANTS.get(int(claim.magnitude)) if float(claim.magnitude).is_integer() else None
    unit = claim.text[len(claim.text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")):] or None
    if (constant and claim.metric is None and (unit in CONSTANT_UNITS or claim.dimension in (None, "bytes"))
            and claim.subject.scope is None and claim.subject.topic <= _CONSTANT_TOPICS):
        claim.verdict, claim.support = "exempt", f"architecture constant: {constant}"
        return
    if (claim.dimension in (None, "count") and claim.metric is None and not claim.subject.topic and claim.subject.scope is None
            and _in_source(str(int(claim.magnitude)) if float(claim.magnitude).is_integer() else claim.text, book)):
        claim.verdict, claim.support = "supported", "a number written in the kernel's source"
        return
    if unbound:
        claim.verdict = "unsupported" if strict else "unbound"
        claim.reason = f"unbound: a known value rounds to {claim.text}, but {unbound}"
        return
    where = f" for {claim.metric}" if claim.metric else ""
    gpus = f" on {', '.join(sorted(claim.gpus))}" if claim.gpus and claim.dimension in GPU_DIMENSIONS else ""
    claim.verdict = "unsupported"
    if other:
        claim.reason = f"misattributed: {other}"
    else:
        claim.reason = f"no value{where}{gpus} in the profile, findings, tool results or model predictions rounds to {claim.text}{_closest(claim, book)}"


def _in_source(token: str, book: FactBook) -> bool:
    pattern = re.compile(rf"(?<![\w.]){re.escape(token)}(?![\w.])")
    return any(pattern.search(text) for text in book.source_texts)


def check_metric(claim: Claim, book: FactBook) -> None:
    if claim.text in book.metric_names:
        claim.verdict, claim.support = "supported", "a metric of the profile or of keet's canonical vocabulary"
    else:
        claim.verdict, claim.reason = "unsupported", f"no metric named {claim.text} in the profile or keet's vocabulary"


def check_source_line(claim: Claim, book: FactBook) -> None:
    match = _SOURCE_REF.search(claim.text)
    if match.group("file"):
        name = match.group("file").rsplit("/", 1)[-1]
        lines = [int(match.group("line"))]
        files = {name: book.source_lines.get(name)}
    else:
        start = int(match.group("bare"))
        end = int(match.group("bare_end") or start)
        lines = [start, end]
        files = book.source_lines
    for name, known in files.items():
        if known and all(line in known for line in lines):
            claim.verdict, claim.support = "supported", f"{name} has line{'s' if len(set(lines)) > 1 else ''} {'-'.join(map(str, dict.fromkeys(lines)))}"
            return
    if not book.source_lines:
        claim.verdict, claim.reason = "unsupported", "the profile holds no source lines"
    else:
        files = ", ".join(fence(name) for name in sorted(book.source_lines))  # the profile's file names, for the model to read
        claim.verdict, claim.reason = "unsupported", f"no such line in the profile's source ({files})"


def check_code(claim: Claim, book: FactBook) -> None:
    """A code span with numbers is a quote of the source, or each of its numbers must hold."""
    quoted = " ".join(claim.text.split())
    if any(quoted in " ".join(text.split()) for text in book.source_texts):
        claim.verdict, claim.support = "supported", "quoted from the kernel's source"
        return
    inner = [c for c in extract_numbers(claim.text, 0, claim.sentence)]
    for number in inner:
        number.gpus = claim.gpus
        check_number(number, book)
    failed = [n for n in inner if n.verdict == "unsupported"]
    if failed:
        claim.verdict = "unsupported"
        claim.reason = f"code that is not in the kernel's source, with numbers keet cannot support: {', '.join(n.text for n in failed)}"
    else:
        claim.verdict, claim.support = "supported", "every number in it is supported"


CHECKS = {"number": check_number, "metric": check_metric, "source_line": check_source_line, "code": check_code}


NOT_CHECKED = "not verified: the run's deadline was reached first"


def check(answer: str, book: FactBook, deadline: float | None = None, strict: bool = True) -> list[Claim]:
    """Every claim of the answer with its verdict; past ``deadline`` (time.monotonic()), the
    claims not yet checked are unsupported. ``strict``: an unbound number is unsupported."""
    return check_claims(extract_claims(answer, book), book, deadline, strict)


def check_claims(claims: list[Claim], book: FactBook, deadline: float | None = None, strict: bool = True) -> list[Claim]:
    for claim in claims:
        if deadline is not None and time.monotonic() >= deadline:
            claim.verdict, claim.reason = "unsupported", NOT_CHECKED
            continue
        if claim.kind == "number":
            check_number(claim, book, strict)
        else:
            CHECKS[claim.kind](claim, book)
    return claims


def remove_unsupported(answer: str, claims: list[Claim]) -> str:
    """The answer without the sentences that hold an unsupported claim (the rest as written)."""
    bad = {c.sentence for c in claims if c.verdict == "unsupported"}
    spans = [(offset, offset + len(text)) for index, (offset, text) in enumerate(sentences(answer)) if index in bad]
    kept, position = [], 0
    for start, end in spans:
        kept.append(answer[position:start])
        position = end
    kept.append(answer[position:])
    lines = [line.rstrip() for line in "".join(kept).splitlines()]
    lines = [line for line in lines if not _LINE_ORDINAL.fullmatch(line + " ") and line.strip() not in ("-", "*")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def sentence_of(answer: str | list[tuple[int, str]], claim: Claim) -> str:
    """The claim's sentence, cut to SHOWN_CHARS (pass ``sentences(answer)`` when asking for many
    claims: cutting the answer again for each was quadratic)."""
    found = sentences(answer) if isinstance(answer, str) else answer
    return preview(found[claim.sentence][1].strip()) if claim.sentence < len(found) else ""


# How much of a claim, a sentence or a rejected reply the output shows (the model wrote them).
SHOWN_CHARS = 300


def preview(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as output may show it: whole if short, else its start and how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def strip_fences(text: str) -> str:
    """An answer that copied fenced data shows it without the markers."""
    return text.replace(OPEN, "").replace(CLOSE, "")


# ------------------------------------------------------------------ markup

# An answer is shown as plain text in JSON and as markdown, where a link, an image or raw HTML
# would be rendered: an image loads its URL with no click (a leak of whatever the URL carries),
# a javascript: link runs. None of them belongs in an explanation of a profile; a link into the
# report itself ("#kernel-3") may stay. Each pattern is bounded and has one reading (linear).
_IMAGE = re.compile(r"!\[[^\]\n]{0,500}\]\([^)\n]{0,2000}\)|!\[[^\]\n]{0,500}\]\[[^\]\n]{0,500}\]")
_LINK = re.compile(r"\[(?P<text>[^\]\n]{0,500})\]\((?P<url>[^)\n]{0,2000})\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]{1,500}\]:[^\n]*$", re.MULTILINE)
_HTML = re.compile(r"<!--.{0,5000}?-->|</?[A-Za-z][^<>\n]{0,2000}>|<![A-Za-z][^<>\n]{0,2000}>", re.DOTALL)
_URL = re.compile(r"\b(?:https?|ftp|file)://[^\s<>()\[\]\"'`]+|\b(?:javascript|vbscript|data):[^\s<>()\[\]\"'`]+", re.IGNORECASE)
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)


def plain_text(text: str) -> str:
    """The model's text without HTML entities: output is plain text, escaped only where HTML
    is written ("&#39;" from a model is an apostrophe; twice-escaped "&amp;#39;" too)."""
    for _round in range(2):
        unescaped = html.unescape(text)
        if unescaped == text:
            break
        text = unescaped
    return text


def remove_markup(answer: str) -> tuple[str, list[dict[str, Any]]]:
    """The answer without images, links (their text stays; a link to "#..." in the report stays
    whole), raw HTML and URLs, and what was removed, as rejected entries. Code spans are left
    as written: markdown shows them as code."""
    removed: list[dict[str, Any]] = []

    def reject(what: str, text: str, reason: str) -> None:
        removed.append({"kind": "markup", "text": preview(text), "verdict": "unsupported", "reason": f"{what} removed: {reason}",
                        "sentence": ""})

    def outside_code(part: str) -> str:
        def image(m: re.Match[str]) -> str:
            reject("an image", m.group(0), "an image loads its URL when the answer is rendered")
            return ""

        def link(m: re.Match[str]) -> str:
            if m.group("url").strip().startswith("#"):
                return m.group(0)
            reject("a link", m.group(0), "links may only point into the report (#...)")
            return m.group("text")

        def drop(what: str, reason: str) -> Callable[[re.Match[str]], str]:
            def replace(m: re.Match[str]) -> str:
                reject(what, m.group(0), reason)
                return ""
            return replace

        part = _IMAGE.sub(image, part)
        part = _LINK.sub(link, part)
        part = _REFERENCE.sub(drop("a link definition", "links may only point into the report (#...)"), part)
        part = _HTML.sub(drop("raw HTML", "the answer is text, not HTML"), part)
        return _URL.sub(drop("a URL", "an explanation of a profile links nowhere"), part)

    pieces, position = [], 0
    for code in _CODE.finditer(answer):
        pieces.append(outside_code(answer[position:code.start()]))
        pieces.append(code.group(0))
        position = code.end()
    pieces.append(outside_code(answer[position:]))
    return "".join(pieces), removed
