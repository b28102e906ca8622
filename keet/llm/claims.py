"""An adversarial claim set for the verifier's binding rules, labelled by construction.

Sentences about the zoo's kernels (profiles/h100/zoo_all.ncu-rep.xz and its H200 twin: 34
kernels each), half stating a figure of what they name and half misattributing one the way
models do: right number, wrong kernel; right number, wrong GPU; per thread vs per block vs total;
a hardware peak stated as achieved; a rule's threshold stated as a measurement; rounded beyond
its digits; a figure of another finding. Each label comes from the profile, keet's findings and
the model's predictions directly (a misattributed sentence is kept only when the figure it
states for its subject is not that subject's figure), never from the verifier.

A fifth of the sentences, chosen by a hash of the sentence, is held back: it is never used while
developing the binding rules and is what `keet llm eval --claims` reports as the result.

    claims = generate()                  # deterministic (SEED); stored as profiles/llm_eval/claims/claims.json
    scores = evaluate_claims(claims)     # {"held_back": {...}, "dev": {...}}
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keet.project_data import profiles_dir
from perfmodel.hardware import gpu_ids

SEED = 24
PROFILES = ("h100/zoo_all.ncu-rep.xz", "h200/zoo_all.ncu-rep.xz")
# A GPU as answers name it: its id in capitals, for every GPU of the hardware database (no table
# of our own, as keet.llm.claims_natural). The set therefore follows the database: a GPU file
# added or removed changes the generated sentences, and the stored claims.json is regenerated.
GPU_WORDS = {gpu_id: gpu_id.upper() for gpu_id in gpu_ids()}
# The GPUs a "wrong GPU" sentence may name instead of the profile's own: any of the database.
OTHER_GPUS = tuple(GPU_WORDS)
PER_KIND = 24  # sentences of each kind and label drawn (at most) per profile
HELD_BACK = 5  # one in five


def held_back(sentence: str) -> bool:
    """The held-back fifth, by a hash of the sentence (stable across runs and machines)."""
    return hashlib.sha256(sentence.encode()).digest()[0] % HELD_BACK == 0


def rounds_to(stated: float, decimals: int, value: float | None) -> bool:
    """Whether ``value`` rounded or truncated to ``decimals`` is ``stated`` (the verifier's
    reading of stated digits, applied to the truth)."""
    if value is None:
        return False
    unit = 10.0 ** -decimals
    return abs(value - stated) <= unit / 2 + 1e-9 * max(abs(value), 1) or 0 <= value - stated < unit


def spelled(number: int) -> str:
    """An integer below a million in words ("two hundred and fifty-six")."""
    ones = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
    tens = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

    def below_thousand(n: int) -> str:
        words = []
        if n >= 100:
            words.append(f"{ones[n // 100]} hundred")
            n %= 100
            if n:
                words.append("and")
        if n >= 20:
            words.append(tens[n // 10 - 2] + (f"-{ones[n % 10]}" if n % 10 else ""))
        elif n or not words:
            words.append(ones[n])
        return " ".join(words)

    if number >= 1000:
        rest = number % 1000
        return f"{below_thousand(number // 1000)} thousand" + (f" {below_thousand(rest)}" if rest else "")
    return below_thousand(number)


def _us(ns: float) -> tuple[str, float, int]:
    return f"{ns / 1000:.1f} us", round(ns / 1000, 1), 1


def _pct(value: float) -> tuple[str, float, int]:
    return f"{value:.1f}%", round(value, 1), 1


def _perturbed(stated: float, value: float, decimals: int) -> float:
    """The stated figure moved one last digit away from the value (so that neither rounding nor
    truncating the value gives it)."""
    unit = 10.0 ** -decimals
    return round(stated + unit if stated >= value else stated - unit, decimals)


def kernel_table(profile: Any, document: dict[str, Any], book: Any) -> list[dict[str, Any]]:
    """Per kernel with a unique name: the figures the templates state, from the profile, the
    findings and the model's predictions (by the fact book's origins, which name what each is)."""
    names = [k.name for k in profile.kernels]
    findings = {entry["id"]: entry["diagnosis"] for entry in document["kernels"]}
    predicted: dict[tuple[int, str], float] = {}
    for fact in book.facts:
        for gpu in GPU_WORDS:
            if fact.kernel is not None and fact.origin == f"kernel {fact.kernel} model on {gpu} predicted_ns":
                predicted[(fact.kernel, gpu)] = fact.value
    table = []
    for kernel in profile.kernels:
        if names.count(kernel.name) != 1 or not kernel.duration_ns:
            continue
        values = {metric: value for metric, (value, _unit) in profile.values(kernel).items()}
        table.append({"id": kernel.id, "name": kernel.name, "duration_ns": kernel.duration_ns, "registers": kernel.registers_per_thread,
                      "threads_per_block": kernel.threads_per_block, "blocks": kernel.blocks,
                      "shared_per_block": kernel.shared_bytes_per_block, "dram_pct": values.get("sol.dram_pct"),
                      "dram_throughput": values.get("dram.throughput"), "findings": findings.get(kernel.id, []),
                      "predicted": {gpu: ns for (k, gpu), ns in predicted.items() if k == kernel.id}})
    return table


def _templates(own: str, hardware: dict[str, float]) -> dict[str, Callable[[dict, dict, random.Random], list[tuple[str, str]]]]:
    """Per kind: from a kernel and another one, [(label, sentence)] (correct and misattributed)."""
    gpu = GPU_WORDS[own]

    def wrong_kernel(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        text, stated, digits = _us(a["duration_ns"])
        found.append(("correct", f"{a['name']} ran for {text}."))
        if not rounds_to(stated, digits, b["duration_ns"] / 1000):
            found.append(("misattributed", f"{b['name']} ran for {text}."))
        if a["registers"]:
            count = a["registers"]
            said = spelled(count) if rng.random() < 0.3 else str(count)
            found.append(("correct", f"{a['name']} uses {said} registers per thread."))
            if b["registers"] != count:
                found.append(("misattributed", f"{b['name']} uses {said} registers per thread."))
        if a["dram_pct"] is not None:
            text, stated, digits = _pct(a["dram_pct"])
            found.append(("correct", f"{a['name']} reached {text} of peak DRAM throughput (sol.dram_pct)."))
            if not rounds_to(stated, digits, b["dram_pct"]):
                found.append(("misattributed", f"{b['name']} reached {text} of peak DRAM throughput (sol.dram_pct)."))
        return found

    def wrong_gpu(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        gpus = sorted(a["predicted"])
        if len(gpus) >= 2:
            g1, g2 = rng.sample(gpus, 2)
            text, stated, digits = _us(a["predicted"][g1])
            found.append(("correct", f"The model predicts {text} for {a['name']} on the {GPU_WORDS[g1]}."))
            if not rounds_to(stated, digits, a["predicted"][g2] / 1000):
                found.append(("misattributed", f"The model predicts {text} for {a['name']} on the {GPU_WORDS[g2]}."))
        other = rng.choice([g for g in OTHER_GPUS if g != own])
        text, _stated, _digits = _us(a["duration_ns"])
        found.append(("correct", f"On the {gpu}, {a['name']} took {text}."))
        found.append(("misattributed", f"On the {GPU_WORDS[other]}, {a['name']} took {text}."))  # measured on this GPU only
        return found

    def scope(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        tpb, blocks = a["threads_per_block"], a["blocks"]
        if tpb and blocks:
            said = f"0x{tpb:X}" if rng.random() < 0.2 else str(tpb)
            found.append(("correct", f"{a['name']} launches {said} threads per block."))
            found.append(("correct", f"{a['name']} launches {tpb * blocks:,} threads in total."))
            if blocks > 1:
                found.append(("misattributed", f"{a['name']} launches {said} threads in total."))
        if a["registers"]:
            found.append(("misattributed", f"{a['name']} uses {a['registers']} registers per block."))
        if a["shared_per_block"]:
            found.append(("correct", f"{a['name']} uses {a['shared_per_block']:,} bytes of shared memory per block."))
            found.append(("misattributed", f"{a['name']} uses {a['shared_per_block']:,} bytes of shared memory per thread."))
        l2 = hardware.get("l2_bytes")
        if l2:
            found.append(("correct", f"The {gpu} has {l2 / 2**20:.0f} MiB of L2 cache."))
            found.append(("misattributed", f"Each thread of {a['name']} uses {l2 / 2**20:.0f} MiB ({l2 / 2**20:.0f}MB/thread)."))
        return found

    def peak(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        bandwidth = hardware.get("dram_bandwidth_bytes_per_s")
        if bandwidth:
            found.append(("correct", f"The {gpu}'s peak DRAM bandwidth is {bandwidth / 1e12:.2f} TB/s."))
            if not rounds_to(round(bandwidth / 1e12, 2), 2, (a["dram_throughput"] or 0) / 1e12):
                found.append(("misattributed", f"{a['name']} sustained {bandwidth / 1e12:.2f} TB/s of DRAM throughput."))
        if a["dram_throughput"]:
            found.append(("correct", f"{a['name']} sustained {a['dram_throughput'] / 1e9:.1f} GB/s of DRAM throughput."))
        if a["dram_pct"] is not None and a["dram_pct"] >= 10:
            found.append(("misattributed", f"{a['name']} sustained {a['dram_pct']:.1f} GB/s of DRAM throughput."))
        return found

    def threshold(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        for finding in a["findings"]:
            for evidence in finding["evidence"]:
                if "compared_with" not in evidence or evidence["unit"] != "%":
                    continue
                text, _stated, digits = _pct(evidence["value"])
                found.append(("correct", f"For {a['name']}, {evidence['metric']} is {text}."))
                limit, limit_stated, _d = _pct(evidence["compared_with"])
                found.append(("correct", (f"The {finding['category']} rule fires for {a['name']} when {evidence['metric']} passes a "
                                          f"threshold of {limit}.")))
                if not rounds_to(limit_stated, digits, evidence["value"]):
                    found.append(("misattributed", f"For {a['name']}, {evidence['metric']} is {limit}."))
        return found

    def rounding(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        text, stated, digits = _us(a["duration_ns"])
        wrong = _perturbed(stated, a["duration_ns"] / 1000, digits)
        found = [("correct", f"{a['name']} ran for {text}."), ("misattributed", f"{a['name']} ran for {wrong:.1f} us.")]
        if a["dram_pct"] is not None:
            text, stated, digits = _pct(a["dram_pct"])
            wrong = _perturbed(stated, a["dram_pct"], digits)
            found.append(("correct", f"{a['name']}'s sol.dram_pct is {text}."))
            found.append(("misattributed", f"{a['name']}'s sol.dram_pct is {wrong:.1f}%."))
        return found

    def other_finding(a: dict, b: dict, rng: random.Random) -> list[tuple[str, str]]:
        found = []
        for first, second in zip(a["findings"], a["findings"][1:], strict=False):
            text, stated, digits = _pct(first["impact"] * 100)
            found.append(("correct", f"The {first['category']} finding of {a['name']} puts {text} of its runtime at stake."))
            if not rounds_to(stated, digits, second["impact"] * 100):
                found.append(("misattributed", f"The {second['category']} finding of {a['name']} puts {text} of its runtime at stake."))
            confidence, c_stated, c_digits = _pct(first["confidence"] * 100)
            if not rounds_to(c_stated, c_digits, first["impact"] * 100):
                found.append(("misattributed", f"The {first['category']} finding of {a['name']} puts {confidence} of its runtime at stake."))
        return found

    return {"wrong_kernel": wrong_kernel, "wrong_gpu": wrong_gpu, "per_thread_vs_total": scope, "peak_vs_absolute": peak,
            "threshold_as_measurement": threshold, "rounding": rounding, "other_finding": other_finding}


def _context(path: Path) -> tuple[Any, dict[str, Any], Any, str]:
    """The profile, keet explain's document, the fact book (profile, findings, predictions) and
    the profile's GPU id."""
    from keet.diagnosis import read_ahead
    from keet.explain import explain
    from keet.ingest import load_profile
    from keet.llm.verify import FactBook, finding_facts, prediction_facts, profile_facts
    from perfmodel.hardware import gpu_id_for_device_name

    profile = load_profile(path, read_ahead=read_ahead())
    own = gpu_id_for_device_name(profile.device.name)
    document = explain(profile)
    book = FactBook()
    profile_facts(book, profile, profile.kernels, own)
    finding_facts(book, document, own)
    prediction_facts(book, profile, profile.kernels, own)
    return profile, document, book, own


def generate(profiles: str | Path | None = None) -> list[dict[str, Any]]:
    """The claim set: deterministic (SEED), balanced per kind and label, each sentence with its
    label, kind, profile and split ("held_back" or "dev")."""
    from perfmodel.hardware import gpu

    root = profiles_dir(profiles)
    rng = random.Random(SEED)
    claims: list[dict[str, Any]] = []
    for relative in PROFILES:
        profile, document, book, own = _context(root / relative)
        hardware = {name: param.value for name, param in gpu(own).params.items()}
        table = kernel_table(profile, document, book)
        for kind, template in _templates(own, hardware).items():
            drawn: dict[str, list[str]] = {"correct": [], "misattributed": []}
            for a in table:
                b = rng.choice([k for k in table if k["id"] != a["id"]])
                for label, sentence in template(a, b, rng):
                    if sentence not in drawn[label]:
                        drawn[label].append(sentence)
            for label, sentences in drawn.items():
                for sentence in rng.sample(sentences, min(PER_KIND, len(sentences))):
                    claims.append({"profile": relative, "kind": kind, "label": label, "sentence": sentence,
                                   "split": "held_back" if held_back(sentence) else "dev"})
    return claims


def write_claims(claims: list[dict[str, Any]], path: str | Path, **header: Any) -> None:
    """The claim file: seed, profiles, any further header fields, then the claims."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"seed": SEED, "profiles": list(PROFILES), **header, "claims": claims}, indent=1) + "\n")


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    return json.loads(Path(path).read_text())["claims"]


def evaluate_claims(claims: list[dict[str, Any]], profiles: str | Path | None = None,
                    splits: tuple[str, ...] = ("held_back",), books: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Per split: how many misattributed sentences the verifier rejects (a sentence is rejected
    when any of its numbers is unsupported, strict mode) and how many correct ones it accepts,
    per kind too. ``books``: the fact books by profile, filled as they are built, for calls that
    score several claim sets against the same profiles (each book explains its profile)."""
    from keet.llm.verify import check

    root = profiles_dir(profiles)
    books = {} if books is None else books
    scores: dict[str, dict[str, Any]] = {}
    for split in splits:
        chosen = [c for c in claims if c["split"] == split]
        counts = {"correct": [0, 0], "misattributed": [0, 0]}
        kinds: dict[str, list[int]] = {}
        failures = []
        for claim in chosen:
            if claim["profile"] not in books:
                books[claim["profile"]] = _context(root / claim["profile"])[2]
            verdicts = check(claim["sentence"], books[claim["profile"]])
            accepted = all(v.verdict != "unsupported" for v in verdicts) and any(v.kind == "number" for v in verdicts)
            right = accepted == (claim["label"] == "correct")
            counts[claim["label"]][0] += right
            counts[claim["label"]][1] += 1
            tally = kinds.setdefault(f"{claim['kind']}/{claim['label']}", [0, 0])
            tally[0] += right
            tally[1] += 1
            if not right:
                failures.append({**claim, "verdicts": [v.as_dict() for v in verdicts]})
        scores[split] = {
            "misattributed_rejected": counts["misattributed"][0], "misattributed": counts["misattributed"][1],
            "correct_accepted": counts["correct"][0], "correct": counts["correct"][1],
            "rejection_rate": counts["misattributed"][0] / max(counts["misattributed"][1], 1),
            "acceptance_rate": counts["correct"][0] / max(counts["correct"][1], 1),
            "by_kind": kinds, "failures": failures,
        }
    return scores
