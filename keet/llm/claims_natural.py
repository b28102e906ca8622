"""A second claim set for the verifier: sentences phrased the way an LLM writes them.

keet/llm/claims.py states each figure in one fixed wording per kind ("X ran for 12.3 us.").
Answers are not written that way: they hedge ("about 590 microseconds"), spell units out, give a
ratio as "1.8x", "1.8 times" or "an 80% speedup", reorder clauses ("On the MI300X, the model puts
...") and wrap numbers in words that add nothing ("the memory-bound triad kernel"). This set is
written apart from that one (other templates, other figures: the model's breakdown and expected
effects, hardware figures, occupancy, hit rates, pipe utilisation, ratios between GPUs and
against the measurement) so that binding rules tuned on the first are judged on wording they
never saw.

Labels come from the profile, keet's findings and the model's predictions (computed here from
perfmodel, not read from the verifier's facts), by construction: a misattributed sentence is
kept only when its figure, read with the documented rounding rule (half a unit of the last
stated digit, or truncation; integer trailing zeros are loose only after a hedge), does not hold
for what the sentence says it is about.

A fifth, chosen by a hash of "natural:" + the sentence, is held back: it is never looked at while
the binding rules are developed and is the headline of `keet llm eval --claims`.

    claims = generate_natural()          # deterministic (SEED)
    write_natural(claims, "profiles/llm_eval/claims/natural.json")
    scores = evaluate_claims(claims)     # keet.llm.claims.evaluate_claims, as for the first set
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keet.llm.claims import PROFILES, write_claims
from keet.project_data import profiles_dir
from perfmodel.hardware import gpu_ids

SEED = 2024
# A GPU as answers name it: its id in capitals (from the hardware database, no table of our own)
GPU_WORDS = {gpu_id: gpu_id.upper() for gpu_id in gpu_ids()}
PER_FAMILY = 9  # sentences of each family and label drawn (at most) per profile
HELD_BACK = 5  # one in five
EFFECTS = 4  # the model's expected effects are given for the four largest components (keet.llm.tools)
HEDGES = ("about", "roughly", "around", "approximately", "~", "nearly")

# How an answer names a component of the model's breakdown.
COMPONENT_WORDS = {
    "fma": ("FMA", "FP32 FMA", "FP32 arithmetic"), "issue": ("instruction issue", "issue"), "alu": ("ALU", "integer ALU"),
    "dram": ("DRAM", "HBM", "DRAM bandwidth"), "l1_shared": ("L1/shared", "shared-memory", "L1/shared-memory"),
    "l2": ("L2", "L2 bandwidth"), "latency": ("memory latency", "latency"), "tensor": ("tensor core", "tensor-core"),
    "fp64": ("FP64", "double-precision"), "sfu": ("SFU", "special-function"), "barrier": ("barrier", "__syncthreads barrier"),
    "sm_port": ("SM port", "SM memory port"), "atomics_hot_address": ("atomic contention", "hot-address atomic"),
    "atomics": ("atomic", "atomics"), "block_dispatch": ("block dispatch",), "kernel_fixed": ("fixed launch overhead",),
    "dram_ramp": ("DRAM ramp-up",),
}
# How an answer names a metric a rule compares with a threshold.
METRIC_WORDS = {
    "pipe.fma_pct": ("FMA pipe utilization", "FP32 FMA pipe usage"), "pipe.alu_pct": ("ALU pipe utilization", "integer ALU pipe usage"),
    "sol.dram_pct": ("DRAM throughput", "HBM bandwidth utilization"), "sol.l1_pct": ("L1/shared throughput", "L1/shared-memory throughput"),
    "sol.l2_pct": ("L2 throughput", "L2 bandwidth utilization"), "pipe.xu_pct": ("SFU pipe utilization", "special-function unit usage"),
    "pipe.tensor_pct": ("tensor pipe utilization", "tensor core usage"), "pipe.fp64_pct": ("FP64 pipe utilization", "double-precision pipe usage"),
    "issue.active_pct": ("issue slot utilization", "instruction issue utilization"), "sol.sm_pct": ("SM throughput", "compute (SM) throughput"),
}
CATEGORY_WORDS = {
    "dram_bandwidth": "DRAM bandwidth", "l2_bandwidth": "L2 bandwidth", "l1_shared_bandwidth": "L1/shared bandwidth",
    "uncoalesced_global": "uncoalesced access", "shared_bank_conflicts": "shared-memory bank conflict", "atomic_contention": "atomic contention",
    "warp_divergence": "warp divergence", "fp32_compute": "FP32 compute", "fp64_compute": "FP64 compute", "sfu_compute": "SFU",
    "int_compute": "integer compute", "tensor_compute": "tensor-core", "instruction_issue": "instruction issue", "register_spills": "register spill",
    "occupancy_registers": "register-limited occupancy", "occupancy_shared_memory": "shared-memory-limited occupancy",
    "occupancy_block_limit": "block-limited occupancy", "small_grid": "small grid", "tail_effect": "tail effect",
    "memory_latency": "memory latency", "barrier_sync": "barrier", "launch_overhead": "launch overhead",
}


def held_back(sentence: str) -> bool:
    """The held-back fifth, by a hash of the sentence (a salt of its own: not the first set's split)."""
    return hashlib.sha256(f"natural:{sentence}".encode()).digest()[0] % HELD_BACK == 0


def holds(stated: float, tolerance: float, value: float | None) -> bool:
    """Whether ``value`` read to the stated digits is ``stated``: rounded (within ``tolerance``,
    half a unit of the last stated digit) or truncated (at most two tolerances above)."""
    if value is None:
        return False
    slack = 1e-9 * max(abs(value), 1.0)
    return abs(value - stated) <= tolerance + slack or 0 <= value - stated < 2 * tolerance


class Said:
    """A number as written ("about 590 microseconds") with what it states in a base unit and the
    tolerance of its last stated digit (in that base unit)."""

    def __init__(self, text: str, stated: float, tolerance: float) -> None:
        self.text, self.stated, self.tolerance = text, stated, tolerance

    def holds(self, value: float | None) -> bool:
        return holds(self.stated, self.tolerance, value)


def hedged_tolerance(value: float) -> float:
    """The tolerance of a hedged integer ("about 590"): its trailing zeros are not stated digits
    (half a unit of the last non-zero digit), as docs/llm.md states the rounding rule."""
    digits = str(round(value))
    zeros = len(digits) - len(digits.rstrip("0")) if digits.strip("0") else 0
    return 0.5 * 10.0**zeros


def _hedge(rng: random.Random) -> str:
    hedge = rng.choice(HEDGES)
    return hedge if hedge == "~" else hedge + " "


def say_time(ns: float, rng: random.Random) -> Said:
    """A time in one of the ways answers write it; base unit ns."""
    us = ns / 1000
    form = rng.randrange(6)
    if form == 0:
        return Said(f"{us:.1f} us", round(us, 1) * 1000, 50)
    if form == 1:
        return Said(f"{us:.1f} µs", round(us, 1) * 1000, 50)
    if form == 2:
        return Said(f"{us:.1f} microseconds", round(us, 1) * 1000, 50)
    if form == 3 and us >= 10:
        return Said(f"{_hedge(rng)}{round(us):.0f} microseconds", round(us) * 1000, hedged_tolerance(us) * 1000)
    if form == 4 and us >= 100:
        return Said(f"{us / 1000:.3f} ms", round(us / 1000, 3) * 1e6, 500)
    if form == 5 and us >= 100:
        return Said(f"{_hedge(rng)}{us / 1000:.2f} milliseconds", round(us / 1000, 2) * 1e6, 5000)
    return Said(f"{us:.1f} us", round(us, 1) * 1000, 50)


def say_percent(value: float, rng: random.Random, hedged: bool | None = None) -> Said:
    """A percentage; base unit %."""
    hedged = rng.random() < 0.3 if hedged is None else hedged
    if hedged and value >= 10:
        return Said(f"{_hedge(rng)}{round(value):.0f}%", round(value), hedged_tolerance(value))
    form = rng.randrange(3)
    if form == 0:
        return Said(f"{value:.1f}%", round(value, 1), 0.05)
    if form == 1:
        return Said(f"{value:.1f} percent", round(value, 1), 0.05)
    return Said(f"{value:.1f} per cent", round(value, 1), 0.05)


def say_ratio(ratio: float, rng: random.Random) -> Said:
    """A ratio as "1.84x", "1.8 times", "1.84×"; base unit: the ratio."""
    form = rng.randrange(4)
    if form == 0:
        return Said(f"{ratio:.2f}x", round(ratio, 2), 0.005)
    if form == 1:
        return Said(f"{ratio:.1f} times", round(ratio, 1), 0.05)
    if form == 2:
        return Said(f"{ratio:.2f}×", round(ratio, 2), 0.005)
    return Said(f"{_hedge(rng)}{ratio:.1f}x", round(ratio, 1), 0.05)


def say_rate(bytes_per_s: float, rng: random.Random) -> Said:
    """A bandwidth; base unit B/s (decimal prefixes, as vendors and keet state them)."""
    gb = bytes_per_s / 1e9
    if gb >= 1000 and rng.random() < 0.6:
        return Said(f"{gb / 1000:.2f} TB/s", round(gb / 1000, 2) * 1e12, 0.005e12)
    if rng.random() < 0.5:
        return Said(f"{gb:.1f} GB/s", round(gb, 1) * 1e9, 0.05e9)
    return Said(f"{gb:.1f} gigabytes per second", round(gb, 1) * 1e9, 0.05e9)


def say_count(count: int, rng: random.Random) -> Said:
    return Said(f"{count:,}" if count >= 10000 or rng.random() < 0.5 else str(count), count, 0.5)


# What bounds a kernel, as answers say it of the kernel (true of it: its first finding)
BOUND_WORDS = {"dram_bandwidth": "memory-bound", "l2_bandwidth": "L2-bound", "l1_shared_bandwidth": "shared-memory-bound",
               "fp32_compute": "compute-bound", "fp64_compute": "FP64-bound", "tensor_compute": "tensor-bound", "sfu_compute": "SFU-bound",
               "int_compute": "integer-bound", "instruction_issue": "issue-bound", "memory_latency": "latency-bound",
               "barrier_sync": "barrier-bound"}
# Words that say nothing about a number, at the head of a sentence
OPENERS = ("Notably, ", "In short, ", "Overall, ", "As expected, ")


def name_of(kernel: dict, rng: random.Random) -> str:
    """A kernel as answers name it: its name, in backticks, "the <stem> kernel", or with what
    bounds it ("the memory-bound triad kernel")."""
    name = kernel["name"]
    stem = name.removesuffix("_kernel")
    form = rng.randrange(5)
    if form == 0 and stem != name:
        return f"the {stem} kernel"
    if form == 4 and stem != name and kernel["findings"] and kernel["findings"][0]["category"] in BOUND_WORDS:
        return f"the {BOUND_WORDS[kernel['findings'][0]['category']]} {stem} kernel"
    if form == 1:
        return f"`{name}`"
    return name


def an(word: str) -> str:
    """ "an H100", "a B200": the article as the name is read aloud."""
    return f"{'an' if word[0] in 'AEFHILMNORSX' else 'a'} {word}"


def cap(sentence: str) -> str:
    """A sentence's first word capitalised, unless it is a kernel's name (code keeps its case)."""
    return "The" + sentence[3:] if sentence.startswith("the ") else sentence


def _model_figures(profile: Any) -> dict[int, dict[str, dict[str, Any]]]:
    """Per kernel and GPU: the model's time, breakdown and the speedup of halving each of the
    four largest components (as keet's tools show them), computed from perfmodel."""
    from perfmodel.features import features
    from perfmodel.hardware import gpu
    from perfmodel.model import predict

    figures: dict[int, dict[str, dict[str, Any]]] = {}
    for kernel in profile.kernels:
        try:
            work = features(profile, kernel)
        except (ValueError, KeyError):
            continue
        for gpu_id in gpu_ids():
            try:
                prediction = predict(gpu(gpu_id), work)
            except ValueError:
                continue
            breakdown = {name: ns for name, ns in sorted(prediction.breakdown.items(), key=lambda item: -item[1]) if ns > 0}
            halved = {}
            for name in list(breakdown)[:EFFECTS]:
                others = max((ns for other, ns in breakdown.items() if other != name), default=0.0)
                after = max(breakdown[name] / 2, others)
                if after > 0:
                    halved[name] = prediction.predicted_ns / after
            figures.setdefault(kernel.id, {})[gpu_id] = {"ns": prediction.predicted_ns, "breakdown": breakdown, "halved": halved,
                                                         "lower_bound": prediction.lower_bound}
    return figures


def kernel_rows(profile: Any, document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per kernel with a unique name: the figures the sentences state."""
    names = [k.name for k in profile.kernels]
    findings = {entry["id"]: entry["diagnosis"] for entry in document["kernels"]}
    model = _model_figures(profile)
    total = profile.total_duration_ns()
    rows = []
    for kernel in profile.kernels:
        if names.count(kernel.name) != 1 or not kernel.duration_ns:
            continue
        values = {metric: value for metric, (value, _unit) in profile.values(kernel).items()}
        rows.append({"id": kernel.id, "name": kernel.name, "duration_ns": kernel.duration_ns, "registers": kernel.registers_per_thread,
                     "threads_per_block": kernel.threads_per_block, "blocks": kernel.blocks, "shared_per_block": kernel.shared_bytes_per_block,
                     "share_pct": kernel.duration_ns * kernel.invocations / total * 100 if total else None,
                     "values": values, "findings": findings.get(kernel.id, []), "model": model.get(kernel.id, {})})
    return rows


Family = Callable[[dict, dict, random.Random], list[tuple[str, str]]]


def _families(own: str, hardware: dict[str, dict[str, float]]) -> dict[str, Family]:
    """Per family: from a kernel and another one, [(label, sentence)]."""
    here = GPU_WORDS[own]
    others = [g for g in GPU_WORDS if g != own and g in hardware]

    def duration(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        said = say_time(a["duration_ns"], rng)
        name = name_of(a, rng)
        wording = rng.choice([
            f"{cap(name)} runs in {said.text}.",
            f"At {said.text}, {name} is one of the kernels worth a look.",
            f"The measured runtime of {name} was {said.text}.",
            f"It takes {name} {said.text} to finish on the {here} we profiled.",
            f"In the profile, {name} completes in {said.text}.",
            f"{cap(name)} took {said.text} per launch in this profile.",
        ])
        found.append(("correct", wording))
        if not said.holds(b["duration_ns"]):
            found.append(("misattributed", rng.choice([f"{cap(name_of(b, rng))} runs in {said.text}.",
                                                       f"The measured runtime of {name_of(b, rng)} was {said.text}."])))
        other = rng.choice(others)
        found.append(("misattributed", rng.choice([f"On the {GPU_WORDS[other]}, {name} was measured at {said.text}.",
                                                   f"Measured on {an(GPU_WORDS[other])}, {name} took {said.text}."])))
        predicted = a["model"].get(own, {}).get("ns")
        if predicted:
            model = say_time(predicted, rng)
            if not model.holds(a["duration_ns"]):
                found.append(("misattributed", rng.choice([f"In the profile, {name} completes in {model.text}.",
                                                           f"The measured runtime of {name} was {model.text}."])))
        return found

    def prediction(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        gpus = sorted(g for g in a["model"] if g in GPU_WORDS)
        if len(gpus) < 2:
            return found
        g1, g2 = rng.sample(gpus, 2)
        said = say_time(a["model"][g1]["ns"], rng)
        name = name_of(a, rng)

        def sentence(gpu_word: str) -> str:
            return rng.choice([
                f"The model expects {name} to take {said.text} on the {gpu_word}.",
                f"On {an(gpu_word)}, perfmodel puts {name} at {said.text}.",
                f"For {name} on the {gpu_word}, the predicted runtime is {said.text}.",
                f"Predicted time on the {gpu_word}: {said.text} for {name}.",
                f"According to the model, {name} would run in {said.text} on the {gpu_word}.",
            ])

        found.append(("correct", sentence(GPU_WORDS[g1])))
        if not said.holds(a["model"][g2]["ns"]):
            found.append(("misattributed", sentence(GPU_WORDS[g2])))
        if b["model"].get(g1) and not said.holds(b["model"][g1]["ns"]):
            found.append(("misattributed", f"The model expects {name_of(b, rng)} to take {said.text} on the {GPU_WORDS[g1]}."))
        measured = say_time(a["duration_ns"], rng)
        if own in a["model"] and not measured.holds(a["model"][own]["ns"]):
            found.append(("misattributed", rng.choice([f"The model predicts {measured.text} for {name} on the {here}.",
                                                       f"On the {here}, perfmodel's estimate for {name} is {measured.text}."])))
        return found

    def halving(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        model = a["model"].get(own)
        if not model or not model["halved"]:
            return found
        component, speedup = rng.choice(sorted(model["halved"].items()))
        words = rng.choice(COMPONENT_WORDS.get(component, (component.replace("_", " "),)))
        name = name_of(a, rng)
        if rng.random() < 0.25 and speedup >= 1.05:
            said = Said(f"{(speedup - 1) * 100:.0f}%", round((speedup - 1) * 100), 0.5)
            percent = True
        else:
            said, percent = say_ratio(speedup, rng), False

        def holds_for(value: float) -> bool:
            return said.holds((value - 1) * 100 if percent else value)

        def sentence(words: str) -> str:
            if percent:
                return rng.choice([f"Halving the {words} time would make {name} {said.text} faster, the model predicts.",
                                   f"According to the model, cutting the {words} time in half speeds {name} up by {said.text}."])
            return rng.choice([
                f"The model predicts a speedup of {said.text} from halving the {words} time of {name}.",
                f"Halving the {words} time would make {name} {said.text} faster on the {here}.",
                f"If the {words} component were cut in half, {name} would speed up by {said.text}.",
                f"For {name}, the model expects halving {words} to give {said.text}.",
            ])

        found.append(("correct", sentence(words)))
        for other, value in sorted(model["halved"].items()):
            if other != component and other in COMPONENT_WORDS and not holds_for(value):
                found.append(("misattributed", sentence(COMPONENT_WORDS[other][0])))
                break
        elsewhere = [g for g in a["model"] if g != own and component in a["model"][g]["halved"]]
        if elsewhere:
            gpu_id = rng.choice(sorted(elsewhere))
            if not holds_for(a["model"][gpu_id]["halved"][component]) and not percent:
                found.append(("misattributed", (f"On the {GPU_WORDS[gpu_id]}, the model predicts a {said.text} speedup from halving "
                                               f"the {words} time of {name}.")))
        return found

    def component_time(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        model = a["model"].get(own)
        if not model:
            return found
        parts = [(c, ns) for c, ns in model["breakdown"].items() if c in COMPONENT_WORDS and ns >= 1000][:4]
        if not parts:
            return found
        component, ns = rng.choice(parts)
        said = say_time(ns, rng)
        name = name_of(a, rng)
        words = rng.choice(COMPONENT_WORDS[component])

        def sentence(words: str) -> str:
            return rng.choice([f"In the model's breakdown for {name}, the {words} component alone takes {said.text}.",
                               f"The model attributes {said.text} of {name}'s time to {words}.",
                               f"On its own, the {words} work of {name} would take {said.text} according to the model."])

        found.append(("correct", sentence(words)))
        for other, value in model["breakdown"].items():
            if other != component and other in COMPONENT_WORDS and not said.holds(value):
                found.append(("misattributed", sentence(COMPONENT_WORDS[other][0])))
                break
        if not said.holds(a["duration_ns"]) and not said.holds(model["ns"]):
            found.append(("misattributed", f"{cap(name)} ran for {said.text} in the profile."))
        return found

    def registers(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        count = a["registers"]
        if not count:
            return found
        name = name_of(a, rng)
        found.append(("correct", rng.choice([f"Each thread of {name} holds {count} registers.",
                                             f"{cap(name)} is compiled to {count} registers per thread.",
                                             f"Register usage for {name} is {count} per thread.",
                                             f"With {count} registers per thread, {name} is limited in how many warps fit on an SM."])))
        found.append(("misattributed", rng.choice([f"{cap(name)} allocates {count} registers per block.",
                                                   f"Each block of {name} holds {count} registers in total."])))
        if b["registers"] and b["registers"] != count:
            found.append(("misattributed", f"Each thread of {name_of(b, rng)} holds {count} registers."))
        return found

    def launch(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        tpb, blocks = a["threads_per_block"], a["blocks"]
        if not tpb or not blocks:
            return found
        name = name_of(a, rng)
        total = say_count(tpb * blocks, rng)
        found.append(("correct", rng.choice([f"{cap(name)} launches {blocks:,} blocks of {tpb} threads each.",
                                             f"The grid of {name} has {blocks:,} blocks with {tpb} threads per block.",
                                             f"Altogether {name} runs {total.text} threads.",
                                             f"{cap(name)} uses {tpb}-thread blocks."])))
        if blocks > 1:
            found.append(("misattributed", rng.choice([f"Altogether {name} runs {tpb} threads.",
                                                       f"{cap(name)} launches {tpb} threads in total."])))
            found.append(("misattributed", f"{cap(name)} launches {total.text} threads per block."))
        if blocks != tpb and blocks > 1:
            found.append(("misattributed", f"Each block of {name} has {blocks:,} threads."))
        return found

    def shared(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        size = a["shared_per_block"]
        if not size:
            return found
        name = name_of(a, rng)
        said = f"{size // 1024} KiB" if size % 1024 == 0 and rng.random() < 0.6 else f"{size:,} bytes"
        found.append(("correct", rng.choice([f"{cap(name)} allocates {said} of shared memory per block.",
                                             f"Each block of {name} uses {said} of shared memory."])))
        found.append(("misattributed", rng.choice([f"{cap(name)} allocates {said} of shared memory per thread.",
                                                   f"Each thread of {name} uses {said} of shared memory."])))
        return found

    def dram(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        name = name_of(a, rng)
        achieved, pct = a["values"].get("dram.throughput"), a["values"].get("sol.dram_pct")
        peak = hardware[own].get("dram_bandwidth_bytes_per_s")
        if achieved:
            said = say_rate(achieved, rng)
            found.append(("correct", rng.choice([f"{cap(name)} sustains {said.text} of DRAM throughput.",
                                                 f"{cap(name)} pulls {said.text} from HBM.",
                                                 f"Measured DRAM bandwidth for {name} is {said.text}."])))
            if peak and not said.holds(peak):
                found.append(("misattributed", f"The {here}'s peak DRAM bandwidth is {said.text}."))
        if pct is not None:
            said = say_percent(pct, rng)
            found.append(("correct", rng.choice([f"{cap(name)} reaches {said.text} of the {here}'s peak DRAM bandwidth.",
                                                 f"DRAM throughput of {name} is at {said.text} of peak.",
                                                 f"{cap(name)} keeps HBM bandwidth {said.text} utilized."])))
            if b["values"].get("sol.dram_pct") is not None and not said.holds(b["values"]["sol.dram_pct"]):
                found.append(("misattributed", f"{cap(name_of(b, rng))} reaches {said.text} of the {here}'s peak DRAM bandwidth."))
            if pct >= 10 and not holds(round(pct), 0.5e9, achieved):
                found.append(("misattributed", f"{cap(name)} moves {pct:.0f} GB/s of DRAM traffic."))
        if peak and achieved:
            said = say_rate(peak, rng)
            if not said.holds(achieved):
                found.append(("misattributed", rng.choice([f"{cap(name)} pulls {said.text} from HBM.",
                                                           f"{cap(name)} sustains {said.text} of DRAM throughput."])))
        return found

    def gpu_figures(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        gpu_id = rng.choice([own, own, *others])
        figures = hardware[gpu_id]
        word = GPU_WORDS[gpu_id]
        other = rng.choice([g for g in hardware if g != gpu_id and g in GPU_WORDS])
        choices = []
        if figures.get("sm_count"):
            unit = "CUs" if gpu_id.startswith("mi") else "SMs"
            choices.append(("sm_count", lambda v: Said(f"{v:.0f}", v, 0.5), lambda s: rng.choice([
                f"The {word} has {s.text} {unit}.", f"With {s.text} {unit}, the {word} has plenty of parallelism."])))
        if figures.get("l2_bytes"):
            choices.append(("l2_bytes", lambda v: Said(f"{v / 2**20:.0f} MB", round(v / 2**20) * 2**20, 0.5 * 2**20), lambda s: rng.choice([
                f"The {word} has {s.text} of L2 cache.", f"The {word}'s L2 cache holds {s.text}."])))
        if figures.get("clock_boost_hz"):
            choices.append(("clock_boost_hz", lambda v: Said(f"{v / 1e9:.2f} GHz", round(v / 1e9, 2) * 1e9, 0.005e9), lambda s: rng.choice([
                f"The {word} boosts to {s.text}.", f"The {word}'s boost clock is {s.text}."])))
        if figures.get("dram_bandwidth_bytes_per_s"):
            choices.append(("dram_bandwidth_bytes_per_s", lambda v: Said(f"{v / 1e12:.2f} TB/s", round(v / 1e12, 2) * 1e12, 0.005e12),
                            lambda s: rng.choice([f"The {word} offers a peak memory bandwidth of {s.text}.",
                                                  f"Peak HBM bandwidth on the {word} is {s.text}."])))
        if not choices:
            return found
        key, say, sentence = rng.choice(choices)
        said = say(figures[key])
        found.append(("correct", sentence(said)))
        if hardware[other].get(key) and not said.holds(hardware[other][key]):
            text = sentence(said)
            found.append(("misattributed", text.replace(f"The {word}", f"The {GPU_WORDS[other]}", 1).replace(f"the {word}", f"the {GPU_WORDS[other]}", 1)))
        if key == "l2_bytes":
            found.append(("misattributed", f"Each thread of {name_of(a, rng)} gets {said.text} of L2 cache."))
        return found

    def occupancy(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        achieved, theoretical = a["values"].get("occupancy.achieved_pct"), a["values"].get("occupancy.theoretical_pct")
        if achieved is None:
            return found
        name = name_of(a, rng)
        said = say_percent(achieved, rng)
        found.append(("correct", rng.choice([f"{cap(name)} achieves an occupancy of {said.text}.",
                                             f"Achieved occupancy for {name} is {said.text}.",
                                             f"{cap(name)} keeps {said.text} of its warp slots occupied on average."])))
        if theoretical is not None:
            limit = say_percent(theoretical, rng, hedged=False)
            found.append(("correct", f"The theoretical occupancy of {name} is {limit.text}."))
            if not limit.holds(achieved):
                found.append(("misattributed", f"{cap(name)} achieves an occupancy of {limit.text}."))
            if not said.holds(theoretical):
                found.append(("misattributed", f"The theoretical occupancy of {name} is {said.text}."))
        return found

    def cache_hits(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        l2, l1 = a["values"].get("l2.hit_rate_pct"), a["values"].get("l1.hit_rate_pct")
        name = name_of(a, rng)
        if l2 is not None:
            said = say_percent(l2, rng)
            found.append(("correct", rng.choice([f"The L2 hit rate of {name} is {said.text}.",
                                                 f"{cap(name)} hits in L2 {said.text} of the time."])))
            if l1 is not None and not said.holds(l1):
                found.append(("misattributed", f"The L1 hit rate of {name} is {said.text}."))
            if b["values"].get("l2.hit_rate_pct") is not None and not said.holds(b["values"]["l2.hit_rate_pct"]):
                found.append(("misattributed", f"The L2 hit rate of {name_of(b, rng)} is {said.text}."))
        return found

    def pipes(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        fma, alu = a["values"].get("pipe.fma_pct"), a["values"].get("pipe.alu_pct")
        name = name_of(a, rng)
        if fma is not None and fma >= 1:
            said = say_percent(fma, rng)
            found.append(("correct", rng.choice([f"The FMA pipe is {said.text} busy in {name}.",
                                                 f"{cap(name)} keeps the FP32 FMA pipe at {said.text} utilization."])))
            if alu is not None and not said.holds(alu):
                found.append(("misattributed", f"The ALU pipe is {said.text} busy in {name}."))
        if alu is not None and alu >= 1:
            said = say_percent(alu, rng)
            found.append(("correct", f"{cap(name)} uses the integer ALU pipe at {said.text} of its peak."))
            if fma is not None and not said.holds(fma):
                found.append(("misattributed", f"{cap(name)} uses the FMA pipe at {said.text} of its peak."))
        return found

    def findings(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        name = name_of(a, rng)
        listed = [f for f in a["findings"] if f["category"] in CATEGORY_WORDS]
        for index, finding in enumerate(listed[:2]):
            words = CATEGORY_WORDS[finding["category"]]
            said = say_percent(finding["impact"] * 100, rng)

            def sentence(words: str, said: Said = said) -> str:
                return rng.choice([f"keet estimates that {said.text} of {name}'s runtime is at stake from {words}.",
                                   f"The {words} issue accounts for {said.text} of {name}'s runtime.",
                                   f"Fixing the {words} problem could recover up to {said.text} of {name}'s time."])

            found.append(("correct", sentence(words)))
            other = listed[1 - index] if len(listed) > 1 and index < 2 else None
            if other is not None and CATEGORY_WORDS[other["category"]] != words and not said.holds(other["impact"] * 100):
                found.append(("misattributed", sentence(CATEGORY_WORDS[other["category"]])))
            confidence = say_percent(finding["confidence"] * 100, rng, hedged=False)
            if not confidence.holds(finding["impact"] * 100):
                found.append(("misattributed", sentence(words, confidence)))
            if index == 0:
                at_stake = say_time(finding["impact"] * a["duration_ns"], rng)
                found.append(("correct", f"Up to {at_stake.text} of {name}'s runtime is at stake from {words}."))
        return found

    def thresholds(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        name = name_of(a, rng)
        for finding in a["findings"]:
            for evidence in finding["evidence"]:
                if "compared_with" not in evidence or evidence["unit"] != "%" or evidence["metric"] not in METRIC_WORDS:
                    continue
                words = rng.choice(METRIC_WORDS[evidence["metric"]])
                value = say_percent(evidence["value"], rng)
                limit = Said(f"{evidence['compared_with']:.0f}%", round(evidence["compared_with"]), 0.5)
                found.append(("correct", rng.choice([f"{cap(name)}'s {words} is {value.text}.",
                                                     f"In {name}, {words} comes to {value.text}."])))
                if limit.holds(evidence["compared_with"]):
                    found.append(("correct", rng.choice([
                        (f"keet's {CATEGORY_WORDS.get(finding['category'], finding['category'])} rule triggers when {words} "
                        f"crosses a threshold of {limit.text}."),
                        (f"The threshold for {words} in the {CATEGORY_WORDS.get(finding['category'], finding['category'])} rule "
                        f"is {limit.text}.")])))
                if not limit.holds(evidence["value"]):
                    found.append(("misattributed", rng.choice([f"{cap(name)}'s {words} is {limit.text}.",
                                                               f"In {name}, {words} comes to {limit.text}."])))
                return found
        return found

    def versus_model(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        predicted = a["model"].get(own, {}).get("ns")
        if not predicted:
            return found
        name = name_of(a, rng)
        ratio = a["duration_ns"] / predicted
        said = Said(f"{max(ratio, 1 / ratio):.2f}x", round(max(ratio, 1 / ratio), 2), 0.005)
        if said.stated == 1.0:
            return found
        way = "slower" if ratio > 1 else "faster"

        def sentence(name: str) -> str:
            return rng.choice([f"On the {here}, {name} runs {said.text} {way} than the model predicts.",
                               f"The measurement of {name} is {said.text} {way} than perfmodel's estimate."])

        found.append(("correct", sentence(name)))
        predicted_b = b["model"].get(own, {}).get("ns")
        if predicted_b:
            ratio_b = b["duration_ns"] / predicted_b
            if not said.holds(ratio_b) and not said.holds(1 / ratio_b):
                found.append(("misattributed", sentence(name_of(b, rng))))
        return found

    def across_gpus(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        gpus = sorted(g for g in a["model"] if g in GPU_WORDS)
        if len(gpus) < 3:
            return found
        g1, g2, g3 = rng.sample(gpus, 3)
        fast, slow = sorted((g1, g2), key=lambda g: a["model"][g]["ns"])
        ratio = a["model"][slow]["ns"] / a["model"][fast]["ns"]
        said = say_ratio(ratio, rng)
        if said.stated <= 1.0:
            return found
        name = name_of(a, rng)

        def sentence(fast: str, slow: str) -> str:
            return rng.choice([f"The model expects {name} to run {said.text} faster on the {GPU_WORDS[fast]} than on the {GPU_WORDS[slow]}.",
                               f"According to perfmodel, {name} is {said.text} faster on {an(GPU_WORDS[fast])} than on {an(GPU_WORDS[slow])}."])

        found.append(("correct", sentence(fast, slow)))
        third = a["model"][g3]["ns"]
        for x, y in ((fast, g3), (g3, slow)):
            pair = a["model"][x]["ns"], a["model"][y]["ns"]
            if not said.holds(pair[0] / pair[1]) and not said.holds(pair[1] / pair[0]) and third:
                found.append(("misattributed", sentence(x, y)))
                break
        return found

    def share(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        if a["share_pct"] is None:
            return found
        said = say_percent(a["share_pct"], rng)
        name = name_of(a, rng)
        found.append(("correct", rng.choice([f"{cap(name)} accounts for {said.text} of the total GPU time.",
                                             f"Of all the GPU time in the profile, {said.text} is spent in {name}."])))
        if b["share_pct"] is not None and not said.holds(b["share_pct"]):
            found.append(("misattributed", f"{cap(name_of(b, rng))} accounts for {said.text} of the total GPU time."))
        return found

    return {"duration": duration, "prediction": prediction, "halving": halving, "component_time": component_time,
            "registers": registers, "launch": launch, "shared_memory": shared, "dram": dram, "gpu_figures": gpu_figures,
            "occupancy": occupancy, "cache_hits": cache_hits, "pipes": pipes, "findings": findings, "thresholds": thresholds,
            "versus_model": versus_model, "across_gpus": across_gpus, "gpu_time_share": share}


def generate_natural(profiles: str | Path | None = None) -> list[dict[str, Any]]:
    """The natural-phrasing claim set: deterministic (SEED), each sentence with its label,
    family, profile and split ("held_back" or "dev")."""
    from keet.llm.claims import _context
    from perfmodel.hardware import gpu

    root = profiles_dir(profiles)
    rng = random.Random(SEED)
    hardware = {g: {name: param.value for name, param in gpu(g).params.items()} for g in gpu_ids()}
    claims: list[dict[str, Any]] = []
    for relative in PROFILES:
        profile, document, _book, own = _context(root / relative)
        rows = kernel_rows(profile, document)
        for family, make in _families(own, hardware).items():
            drawn: dict[str, list[str]] = {"correct": [], "misattributed": []}
            for a in rows:
                b = rng.choice([k for k in rows if k["id"] != a["id"]])
                for label, sentence in make(a, b, rng):
                    if rng.random() < 0.2:  # an opener that says nothing about the number
                        first = sentence.split(" ", 1)[0]
                        lower = first[:1].isupper() and first[1:].isalpha() and first[1:].islower()
                        sentence = rng.choice(OPENERS) + (sentence[0].lower() + sentence[1:] if lower else sentence)
                    if sentence not in drawn["correct"] and sentence not in drawn["misattributed"]:
                        drawn[label].append(sentence)
            for label, sentences in drawn.items():
                for sentence in rng.sample(sentences, min(PER_FAMILY, len(sentences))):
                    claims.append({"profile": relative, "kind": family, "label": label, "sentence": sentence,
                                   "split": "held_back" if held_back(sentence) else "dev"})
    return claims


def write_natural(claims: list[dict[str, Any]], path: str | Path) -> None:
    """Stored as profiles/llm_eval/claims/natural.json (load with keet.llm.claims.load_claims)."""
    write_claims(claims, path, seed=SEED, salt="natural:")
