"""Issue 24: every number is bound to what its sentence says it is.

The claim set (keet/llm/claims.py, stored in profiles/llm_eval/claims/) is labelled by
construction; its held-back fifth is scored here and nowhere during development. The rest:
the replayed answer of the issue, numbers in words and other bases, markup and entities."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from keet.explain import explain
from keet.ingest import load_profile
from keet.llm import verify
from keet.llm.claims import evaluate_claims, generate, held_back, load_claims

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "profiles" / "llm_eval" / "claims" / "claims.json"
TRANSPOSE = ROOT / "profiles" / "h100" / "ncu" / "transpose_naive.ncu-rep.xz"


@pytest.fixture(scope="module", autouse=True)
def _one_context_per_profile():
    """Generating and scoring each claim set explains every zoo profile (64 of them, 13-35 s on
    2 cores); within this module each profile is explained once."""
    from keet.llm import claims as claims_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(claims_module, "_context", functools.cache(claims_module._context))
        yield


@pytest.fixture(scope="module")
def claims() -> list[dict]:
    return load_claims(STORED)


@pytest.fixture(scope="module")
def transpose_book() -> verify.FactBook:
    profile = load_profile(TRANSPOSE)
    book = verify.FactBook()
    verify.profile_facts(book, profile, profile.kernels, "h100")
    verify.finding_facts(book, explain(profile), "h100")
    verify.prediction_facts(book, profile, profile.kernels, "h100")
    return book


@pytest.mark.slow  # 13 to 35 s on 2 cores: every zoo kernel's claims
def test_the_claim_set_is_large_balanced_and_regenerates_exactly(claims: list[dict]) -> None:
    assert len(claims) >= 300
    labels = [c["label"] for c in claims]
    assert abs(labels.count("correct") - labels.count("misattributed")) <= 0.15 * len(claims)
    assert {c["kind"] for c in claims} == {"wrong_kernel", "wrong_gpu", "per_thread_vs_total", "peak_vs_absolute",
                                           "threshold_as_measurement", "rounding", "other_finding"}
    assert all(c["split"] == ("held_back" if held_back(c["sentence"]) else "dev") for c in claims)
    assert generate(ROOT / "profiles") == claims  # deterministic, from the profiles alone


@pytest.mark.slow  # 13 to 35 s on 2 cores: every zoo kernel's claims
def test_held_back_fifth_meets_the_bar(claims: list[dict]) -> None:
    score = evaluate_claims(claims, ROOT / "profiles")["held_back"]
    assert score["misattributed"] >= 50 and score["correct"] >= 50
    assert score["rejection_rate"] >= 0.95, score["failures"]
    assert score["acceptance_rate"] >= 0.95, score["failures"]


@pytest.mark.parametrize("sentence", [
    "The size of each warp thread (8MB/thread).",
    "Each thread uses 8 MB.",
    "The kernel needs 8 MB per thread.",
    "The L2 cache is 8 MB.",  # the MI250X's, said of this H100 profile
])
def test_the_8mb_per_thread_kind_is_rejected(sentence: str, transpose_book: verify.FactBook) -> None:
    [claim] = verify.check(sentence, transpose_book)
    assert claim.verdict == "unsupported"


def test_the_issue_answer_replayed_through_the_agent_is_rejected() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage
    from llm_fakes import fake

    from keet.llm.agent import explain_with_llm
    from keet.llm.settings import LLMSettings

    answer = ("## Explanation\nThe size of each warp thread (8MB/thread) is what the kernel&#39;s L2 must hold.\n"
              "![x](http://host/leak?d=secret) <img src=x onerror=alert(1)> [docs](javascript:alert(1)) [top](#kernel-0)\n"
              "## Plan\nUse shared memory.")
    document = explain_with_llm(load_profile(TRANSPOSE), settings=LLMSettings(model="fake"), model=fake(lambda m: AIMessage(content=answer)))
    section = document["llm"]
    assert "8MB" not in section["answer"]
    rejected = {r["text"]: r for r in section["rejected"]}
    assert rejected["8MB"]["reason"].startswith(("misattributed", "unbound", "no value"))
    out = json.dumps(section)
    assert "&#39;" not in out and "http://host" not in section["answer"] and "<img" not in section["answer"]
    assert "javascript:" not in section["answer"] and "[top](#kernel-0)" in section["answer"]
    kinds = [r["kind"] for r in section["rejected"]]
    assert kinds.count("markup") == 3


@pytest.mark.parametrize(("text", "value", "dimension"), [
    ("a thousand times faster", 1000, "ratio"),
    ("ten-fold", 10, "ratio"),
    ("ninety-nine terabytes per second", 99e12, "rate"),
    ("0x3E8 threads", 1000, "count"),
    ("10-fold", 10, "ratio"),
])
def test_numbers_in_words_and_other_bases_are_claims(text: str, value: float, dimension: str) -> None:
    [claim] = verify.extract_numbers(text, 0, 0)
    assert claim.magnitude * claim.factors[0] == pytest.approx(value) and claim.dimension == dimension


def test_a_spelled_number_is_checked_like_digits(transpose_book: verify.FactBook) -> None:
    kernel_registers = 18  # transpose_naive_kernel's registers per thread
    assert verify.check(f"The kernel uses {kernel_registers} registers per thread.", transpose_book)[0].verdict == "supported"
    assert verify.check("The kernel uses eighteen registers per thread.", transpose_book)[0].verdict == "supported"
    assert verify.check("The kernel uses nineteen registers per thread.", transpose_book)[0].verdict == "unsupported"
    assert verify.check("The kernel is a thousand times faster than the model predicts.", transpose_book)[0].verdict == "unsupported"


def test_unbound_is_unsupported_when_strict_and_kept_marked_otherwise(transpose_book: verify.FactBook) -> None:
    dram = next(f.value for f in transpose_book.facts if f.origin == "kernel 0 sol.dram_pct")
    sentence = f"Then {dram:.1f}%."  # a value the kernel has, said of nothing
    [strict] = verify.check(sentence, transpose_book)
    [lenient] = verify.check(sentence, transpose_book, strict=False)
    assert strict.verdict == "unsupported" and strict.reason.startswith("unbound")
    assert lenient.verdict == "unbound"


def test_entities_are_unescaped_and_markup_removed_outside_code() -> None:
    text, removed = verify.remove_markup(verify.plain_text("it&#39;s <b>bold</b> `a<b>c` [x](https://e.com) &amp;lt;script&amp;gt;"))
    assert text.startswith("it's bold `a<b>c` x")
    assert "<script>" not in text and len(removed) == 4


# ---------------------------------------------------------------- natural phrasing (issue 24, part 2)
# A second claim set (keet/llm/claims_natural.py, profiles/llm_eval/claims/natural.json), written
# apart from the first: hedges, units spelled out, ratios as "x", "times" or percents, reordered
# clauses, words that say nothing about the number. Its held-back fifth (its own hash) was not
# looked at while the binding rules were written.

NATURAL = ROOT / "profiles" / "llm_eval" / "claims" / "natural.json"


@pytest.fixture(scope="module")
def natural() -> list[dict]:
    return load_claims(NATURAL)


@pytest.mark.slow  # 13 to 35 s on 2 cores: every zoo kernel's claims
def test_the_natural_set_is_apart_balanced_and_regenerates_exactly(natural: list[dict], claims: list[dict]) -> None:
    from keet.llm.claims_natural import generate_natural
    from keet.llm.claims_natural import held_back as natural_held_back

    assert len(natural) >= 300
    labels = [c["label"] for c in natural]
    assert abs(labels.count("correct") - labels.count("misattributed")) <= 0.15 * len(natural)
    assert len({c["kind"] for c in natural}) >= 15
    assert not {c["sentence"] for c in natural} & {c["sentence"] for c in claims}  # written apart from the first set
    assert all(c["split"] == ("held_back" if natural_held_back(c["sentence"]) else "dev") for c in natural)
    assert generate_natural(ROOT / "profiles") == natural  # deterministic, from the profiles and the model alone


@pytest.mark.slow  # 13 to 35 s on 2 cores: every zoo kernel's claims
def test_natural_held_back_fifth_meets_the_bar(natural: list[dict]) -> None:
    score = evaluate_claims(natural, ROOT / "profiles")["held_back"]
    assert score["misattributed"] >= 50 and score["correct"] >= 50
    assert score["rejection_rate"] >= 0.95, score["failures"]
    assert score["acceptance_rate"] >= 0.95, score["failures"]


def _halving(book: verify.FactBook) -> dict[str, float]:
    """The model's speedup from halving each component of kernel 0's time on the H100."""
    found = {}
    for fact in book.facts:
        if match := re.fullmatch(r"kernel 0 model on h100 halving '(\w+)' speedup_if_halved", fact.origin):
            found[match.group(1)] = fact.value
    return found


COMPONENT_SAID = {"l2": "L2", "dram": "DRAM", "issue": "issue", "fma": "FMA", "l1_shared": "shared-memory", "sm_port": "SM port",
                  "latency": "memory latency", "alu": "ALU", "tensor": "tensor-core", "fp64": "FP64", "sfu": "SFU"}


def test_a_speedup_binds_to_the_component_it_halves(transpose_book: verify.FactBook) -> None:
    effects = _halving(transpose_book)
    best = max(effects, key=effects.get)
    said = f"{effects[best]:.2f}x"
    words = COMPONENT_SAID.get(best, best.replace("_", " "))
    for sentence in (f"The model predicts a {said} speedup from halving the {words} time.",  # the issue's example
                     f"Halving the {words} time would make the kernel {said} faster on the H100.",
                     f"If the {words} component were cut in half, the kernel would speed up by {said}.",
                     f"According to the model, cutting the {words} time in half speeds the kernel up by {(effects[best] - 1) * 100:.0f}%."):
        assert [c.verdict for c in verify.check(sentence, transpose_book)] == ["supported"], sentence
    others = [c for c, value in effects.items() if f"{value:.2f}" != f"{effects[best]:.2f}" and c in COMPONENT_SAID]
    for other in others:
        [claim] = verify.check(f"The model predicts a {said} speedup from halving the {COMPONENT_SAID[other]} time.", transpose_book)
        assert claim.verdict == "unsupported" and claim.reason.startswith("misattributed"), other
    [claim] = verify.check(f"The kernel ran {said} faster than before.", transpose_book)  # not the model's, not measured
    assert claim.verdict == "unsupported"


def test_a_fact_says_what_it_is_about(transpose_book: verify.FactBook) -> None:
    component = next(iter(_halving(transpose_book)))
    fact = next(f for f in transpose_book.facts if f.origin == f"kernel 0 model on h100 halving '{component}' speedup_if_halved")
    assert fact.kernel == 0 and fact.gpus == {"h100"} and fact.dimension == "ratio"
    assert {"component", "halved", "speed"} <= fact.subject.topic and fact.subject.roles == {"model"}
    assert fact.subject.context == {"cold", "boost_clock"}  # perfmodel's isolated launch, at the boost clock
    duration = next(f for f in transpose_book.facts if f.origin == "kernel 0 duration")
    assert duration.subject.topic == {"duration"} and not duration.subject.roles
    impact = next(f for f in transpose_book.facts if f.origin.endswith("impact"))
    assert {"impact", "runtime"} <= impact.subject.topic and impact.subject.roles == {"estimate"}


@pytest.mark.parametrize("template", [
    "As expected, the transpose_naive kernel runs in {us} on the H100 we profiled.",
    "Overall, `transpose_naive_kernel` took {us} in this profile.",
    "At {us}, the memory-bound transpose_naive kernel is worth a look first.",
    "In the profile, transpose_naive_kernel completes in {ms}.",
])
def test_words_that_say_nothing_of_the_number_are_neutral(template: str, transpose_book: verify.FactBook) -> None:
    ns = next(f.value for f in transpose_book.facts if f.origin == "kernel 0 duration")
    predicted = next(f.value for f in transpose_book.facts if f.origin == "kernel 0 model on h100 predicted_ns")
    sentence = template.format(us=f"{ns / 1000:.1f} microseconds", ms=f"{ns / 1e6:.3f} ms")
    assert [c.verdict for c in verify.check(sentence, transpose_book)] == ["supported"], sentence
    if f"{ns / 1000:.1f}" != f"{predicted / 1000:.1f}":  # the model's time stated as the measurement
        wrong = template.format(us=f"{predicted / 1000:.1f} microseconds", ms=f"{predicted / 1e6:.3f} ms")
        assert [c.verdict for c in verify.check(wrong, transpose_book)] == ["unsupported"], wrong
    elsewhere = template.format(us=f"{ns / 1000:.1f} microseconds", ms=f"{ns / 1e6:.3f} ms").replace("H100", "A100")
    if "A100" in elsewhere:  # measured on this H100 only
        assert [c.verdict for c in verify.check(elsewhere, transpose_book)] == ["unsupported"], elsewhere


def test_a_prediction_binds_to_the_launch_context_and_clock_it_was_made_for(transpose_book: verify.FactBook) -> None:
    predicted = next(f.value for f in transpose_book.facts if f.origin == "kernel 0 model on h100 predicted_ns")
    said = f"{predicted / 1000:.1f} us"
    assert verify.check(f"With cold caches, the model predicts {said} for the kernel on the H100.", transpose_book)[0].verdict == "supported"
    assert verify.check(f"At the boost clock, the model predicts {said} for the kernel on the H100.", transpose_book)[0].verdict == "supported"
    [warm] = verify.check(f"Launched back-to-back with warm caches, the model predicts {said} for the kernel on the H100.", transpose_book)
    assert warm.verdict == "unsupported" and "cold" in warm.reason


def test_a_number_after_the_word_kernel_is_still_a_claim() -> None:
    assert [c.text for c in verify.extract_numbers("It would make the triad kernel 2.10x faster.", 0, 0)] == ["2.10x"]
    assert verify.extract_numbers("See kernel 3 for the rest.", 0, 0) == []  # a kernel's id


@pytest.mark.slow  # 13 to 35 s on 2 cores: every zoo kernel's claims
def test_the_natural_set_is_scored_by_llm_eval_claims(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from keet.cli import cli

    out = tmp_path / "scores.json"
    result = CliRunner().invoke(cli, ["llm", "eval", "--claims", "--profiles", str(ROOT / "profiles"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert [line.split(":")[0] for line in result.output.splitlines()] == ["held_back", "dev", "natural held_back", "natural dev"]
    assert set(json.loads(out.read_text())["natural"]) == {"held_back", "dev"}
