"""Issue 24: every number is bound to what its sentence says it is.

The claim set (keet/llm/claims.py, stored in profiles/llm_eval/claims/) is labelled by
construction; its held-back fifth is scored here and nowhere during development. The rest:
the replayed answer of the issue, numbers in words and other bases, markup and entities."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keet.explain import explain
from keet.ingest import load_profile
from keet.llm import verify
from keet.llm.claims import evaluate_claims, generate, held_back, load_claims

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "profiles" / "llm_eval" / "claims" / "claims.json"
TRANSPOSE = ROOT / "profiles" / "h100" / "ncu" / "transpose_naive.ncu-rep.xz"


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


def test_the_claim_set_is_large_balanced_and_regenerates_exactly(claims: list[dict]) -> None:
    assert len(claims) >= 300
    labels = [c["label"] for c in claims]
    assert abs(labels.count("correct") - labels.count("misattributed")) <= 0.15 * len(claims)
    assert {c["kind"] for c in claims} == {"wrong_kernel", "wrong_gpu", "per_thread_vs_total", "peak_vs_absolute",
                                           "threshold_as_measurement", "rounding", "other_finding"}
    assert all(c["split"] == ("held_back" if held_back(c["sentence"]) else "dev") for c in claims)
    assert generate(ROOT / "profiles") == claims  # deterministic, from the profiles alone


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
