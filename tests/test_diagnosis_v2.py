"""Diagnosis v2 (issue 21; docs/diagnosis.md): speed of light per kernel, recoverable time per
finding from the model, no silent kernel, library kernels, the view above one kernel, and the
LLM tools and verifier on the new fields. Real reports only: the zoo, tests/data, the corpus."""

from __future__ import annotations

import itertools
import json
import sys
from functools import cache
from pathlib import Path

import pytest
import shared_profiles
from grounding import explanation_numbers, grounded

from keet import load_profile
from keet.diagnosis import RULE_WEIGHT, diagnose_kernel, read_ahead
from keet.diagnosis.libraries import classify, library_of
from keet.explain import explain, to_text

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"
ZOO = PROFILES / "h100" / "zoo_all.ncu-rep.xz"
PAIRS = PROFILES / "corpus" / "h100" / "h100_partpairs.ncu-rep.xz"
PART0 = PROFILES / "corpus" / "h100" / "h100_part0.ncu-rep.xz"
CORPUS = json.loads((PROFILES / "corpus" / "manifest.json").read_text())


@cache
def profile(path: Path):
    if path in (ZOO, PAIRS):  # read once per test process (test_fusion and test_compare read the pairs too)
        return shared_profiles.zoo("h100") if path == ZOO else shared_profiles.read_ahead_once(path)
    return load_profile(path, read_ahead=read_ahead())


@cache
def document(path: Path) -> dict:
    return explain(profile(path))


def entry(doc: dict, name: str) -> dict:
    return next(k for k in doc["kernels"] if k["name"] == name)


# ------------------------------------------------------------------ speed of light


def test_every_zoo_kernel_has_a_speed_of_light_from_its_own_work():
    doc = document(ZOO)
    for kernel in doc["kernels"]:
        sol = kernel["speed_of_light"]
        assert sol["attainable_ns"] > 0 and sol["limiter"], kernel["name"]
        assert sol["headroom_ns"] == pytest.approx(kernel["duration_ns"] - sol["attainable_ns"])
        assert sol["fraction"] == pytest.approx(sol["attainable_ns"] / kernel["duration_ns"])
        assert sol["context"] == "isolated-clean"
    triad = entry(doc, "triad_kernel")["speed_of_light"]
    assert triad["limiter"] == "DRAM bandwidth" and triad["fraction"] > 0.9
    # the tensor kernel ran at 1.78 GHz under load: its speed of light is at that clock
    assert 1.7e9 < entry(doc, "tensor_mma_kernel")["speed_of_light"]["clock_hz"] < 1.85e9
    assert "speed of light" in to_text(doc)


def test_the_model_never_reads_the_measured_time():
    """Doubling a kernel's duration doubles its headroom and leaves its attainable time alone."""
    zoo = load_profile(ZOO)  # its own copy: the durations change
    kernel = zoo.kernel("transpose_naive_kernel")
    before = diagnose_kernel(zoo, kernel)
    kernel.duration_ns *= 2
    after = diagnose_kernel(zoo, kernel)
    assert after.speed_of_light.attainable_ns == before.speed_of_light.attainable_ns
    assert after.speed_of_light.fraction == pytest.approx(before.speed_of_light.fraction / 2)
    # recoverable time is the model's relative gain applied to the measured time
    assert after.recoverable[0].ns == pytest.approx(2 * before.recoverable[0].ns)


def test_without_work_counters_the_speed_of_light_is_not_assessed_and_says_what_to_collect(ncu_data):
    doc = explain(load_profile(ncu_data / "h200_sgemm_tiled_launchstats.ncu-rep"))
    kernel = doc["kernels"][0]
    sol = kernel["speed_of_light"]
    assert sol["attainable_ns"] is None and sol["fraction"] is None
    assert "work counters" in sol["not_assessed"] and "--section MemoryWorkloadAnalysis_Tables" in sol["collect"]
    assert kernel["verdict"]["text"] and kernel["verdict"]["kind"] in ("not_assessed", "rules_only")
    assert "not assessed" in to_text(doc)


# ------------------------------------------------------------------ recoverable time


@pytest.mark.parametrize(("name", "category", "at_least"), [
    ("transpose_naive_kernel", "uncoalesced_global", 0.6),     # ideal sectors per request
    ("bank_conflict_kernel", "shared_bank_conflicts", 0.8),     # no conflict wavefronts
    ("divergent_kernel", "warp_divergence", 0.6),               # converged warps
    ("tail_effect_kernel", "tail_effect", 0.3),                 # 1.11 waves -> 1
    ("small_grid_saxpy_kernel", "small_grid", 0.5),             # 8 blocks -> a full wave
    ("occupancy_regs_kernel", "occupancy_registers", 0.5),      # 255 registers -> full occupancy
])
def test_the_inefficiency_removed_recovers_most_of_the_kernel(name, category, at_least):
    kernel = entry(document(ZOO), name)
    top = kernel["diagnosis"][0]
    assert top["category"] == category
    assert top["recoverable_basis"] == "model" and top["fixed_ns"] < kernel["speed_of_light"]["attainable_ns"]
    assert top["recoverable_ns"] >= at_least * kernel["duration_ns"], top["recoverable_how"]
    assert kernel["recoverable_ns"] == top["recoverable_ns"]


def test_a_kernel_at_its_roofline_has_little_to_recover():
    for name in ("triad_kernel", "smem_bandwidth_kernel", "sfu_kernel", "l2_reread_kernel"):
        kernel = entry(document(ZOO), name)
        assert kernel["recoverable_ns"] < 0.1 * kernel["duration_ns"], name
        assert kernel["verdict"]["kind"] == "speed_of_light" and kernel["verdict"]["text"].startswith("at speed of light"), name


def test_findings_and_kernels_rank_by_recoverable_time():
    doc = document(ZOO)
    recoverable = [k["recoverable_ns"] for k in doc["kernels"]]
    assert recoverable == sorted(recoverable, reverse=True)
    for kernel in doc["kernels"]:
        shares = [f["recoverable_ns"] / kernel["duration_ns"] for f in kernel["diagnosis"]]
        # graded: the rules' order weighs at most RULE_WEIGHT of the kernel's time
        assert all(a + RULE_WEIGHT >= b for a, b in itertools.pairwise(shares)), (kernel["name"], shares)


# ------------------------------------------------------------------ libraries


@pytest.mark.parametrize(("name", "library", "kind"), [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "cublas", "half_matmul"),
    ("nvjet_sm90_qqtst_144x128_128x6_1x2_h_bz_coopA_algo2_TNN", "cublas", "fp8_matmul"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
     "cublas", "fp32_matmul"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(T1::Params)", "cutlass", "tf32_matmul"),
    ("void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, (bool)0, (bool)1, (cudnnKernelDataType_t)0>",
     "cudnn", "layout_conversion"),
    ("triton_red_fused__softmax_exp_prepare_softmax_online_sub_0", "triton", None),
    ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<(int)2>>(T1, T2, T3...)",
     "aten", "optimizer"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t>::Params)",
     "pytorch-mem-eff", None),
    ("void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel<int>", "cub", "sort_scan"),
    ("void at::native::<unnamed>::vectorized_layer_norm_kernel<c10::BFloat16, float, (bool)1>(int, T2, const T1 *)",
     "aten", "row_normalization"),
    ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::func_wrapper_t<float>>>(T3)",
     "aten", "normalization"),
])
def test_library_kernels_by_name(name, library, kind):
    found = classify(name)
    assert found is not None and found.library.id == library and (found.kind.id if found.kind else None) == kind


def test_the_tf32_lever_is_a_tensor_core_kernel_for_the_same_flops_and_traffic():
    """An FFMA implicit-GEMM convolution of cuDNN (corpus dev split): at TF32 the library runs
    another kernel, so the FFMA kernel's instruction stream (FFMAs, the LDS that fed them, the
    address arithmetic, the barriers) is gone; its FLOPs on the tensor cores and its global
    traffic stay."""
    from keet.diagnosis.recoverable import LEVERS
    from keet.diagnosis.speed_of_light import model_view

    case = next(e for e in CORPUS["kernels"] if e["id"] == "conv2d_nchw/fp32/32x64x56x56k64r3#0")
    measured = case["measured"]["h100"]
    conv = load_profile(PROFILES / "corpus" / measured["report"], launches={measured["report_id"]})
    view = model_view(conv, conv.kernel(measured["report_id"]))
    work, _ = LEVERS["tf32"](view)
    before = view.work
    assert before.warp_instructions_by_pipe["fp32"] > 0 and before.warp_instructions_by_pipe["alu"] > 0
    assert before.counts["shared_load_wavefronts"] > 0 and before.barriers
    assert set(work.warp_instructions_by_pipe) == {"tensor"} and work.counts["instructions"] == work.warp_instructions_by_pipe["tensor"]
    assert "shared_load_wavefronts" not in work.counts and not work.barriers and "fp32" not in work.flops
    for traffic in ("global_load_sectors", "l2_sectors_read", "dram_bytes_read", "dram_bytes_write"):
        assert work.counts[traffic] == before.counts[traffic]
    assert view.predict(work).predicted_ns < 0.6 * view.base.predicted_ns


def test_the_read_once_lever_takes_off_the_rows_a_normalisation_reads_again():
    """ATen's layer norm over 32768 rows of 8192 bf16 (corpus, H100) reads each row for its
    statistics and again to normalise it: 1.05 GB from DRAM for a 537 MB input, which is also
    what it writes. Read once, the DRAM reads fall to the written size. ATen's register softmax
    over the same rows reads each row once: nothing to take off."""
    from keet.diagnosis.recoverable import LEVERS
    from keet.diagnosis.speed_of_light import model_view

    pairs = load_profile(PROFILES / "corpus" / "h100" / "h100_partpairs.ncu-rep.xz", launches={5, 7})
    norm, softmax = pairs.kernel(7), pairs.kernel(5)
    assert "layer_norm" in norm.name and "SoftMax" in softmax.name
    view = model_view(pairs, norm)
    before = view.work.counts
    assert before["dram_bytes_read"] > 1.9 * before["dram_bytes_write"]
    work, how = LEVERS["read_once"](view)
    assert work.counts["l2_sectors_read"] == before["l2_sectors_write"]
    assert work.counts["dram_bytes_read"] == pytest.approx(before["l2_sectors_write"] * 32)
    assert 0.15 < 1 - view.predict(work).predicted_ns / view.base.predicted_ns < 0.45 and "re-reads" in how
    assert LEVERS["read_once"](model_view(pairs, softmax)) is None


def test_a_pair_adds_one_change_over_the_launches_it_applies_to_and_not_different_changes():
    """channels_last removes the three layout conversions of an NCHW convolution (each one's whole
    time); the convolution's own tensor-core headroom is another change and does not add to it."""
    from keet.accuracy_corpus import CorpusVerdict, pair_checks

    case = "conv/fp16"
    found = [CorpusVerdict(f"{case}#{i}", case, "dev", "x", None, recoverable_ns=ns, profiled_ns=profiled, change=change)
             for i, (change, ns, profiled) in enumerate([("lever:remove", 5.0, 5.0), ("lever:remove", 4.0, 4.0),
                                                         ("tensor_compute", 6.0, 15.0), ("lever:remove", 3.0, 3.0)])]
    manifest = {"cases": {case: {"kernels": 4}}, "pairs": [{"before": case, "after": "nhwc", "lever": "channels_last",
                                                            "speedup": {"h100": 27 / 15}}]}
    (check,) = pair_checks(manifest, found)
    assert check.predicted_gain == pytest.approx(12 / 27) and check.agrees


def test_hand_written_kernels_are_no_library_and_the_corpus_labels_agree():
    assert all(classify(k.name) is None for k in profile(ZOO).kernels)  # gemm_wmma_kernel, sgemm_* are not cuBLAS
    relabelled = {("cublas", "cutlass"), ("cublas", "pytorch-mem-eff")}  # CUTLASS and mem-eff attention named apart now
    for kernel in CORPUS["kernels"]:
        now = library_of(kernel["name"], default="aten")
        assert now == kernel["library"] or (kernel["library"], now) in relabelled, kernel["name"]
    sys.path.insert(0, str(ROOT))
    from profiles.corpus import build_manifest

    assert build_manifest.library_of(CORPUS["kernels"][0]["name"]) == library_of(CORPUS["kernels"][0]["name"], "aten")


# ------------------------------------------------------------------ above one kernel


def test_identical_launches_are_one_group_with_one_verdict():
    doc = document(ZOO)
    tiny = [g for g in doc["groups"] if g["name"] == "tiny_kernel"]
    assert len(tiny) == 1 and tiny[0]["count"] == 3
    members = [k for k in doc["kernels"] if k["name"] == "tiny_kernel"]
    assert {json.dumps(k["verdict"], sort_keys=True) for k in members} == {json.dumps(tiny[0]["verdict"], sort_keys=True)}
    assert tiny[0]["total_ns"] == pytest.approx(sum(k["duration_ns"] for k in members))
    assert len(doc["groups"]) == 32 and sum(g["count"] for g in doc["groups"]) == 34
    assert {c["id"] for c in doc["caveats"]} == {"locked_clock", "tiny_kernels"}
    assert doc["where_to_win"][0]["recoverable_ns"] == doc["groups"][0]["recoverable_ns"]


def test_zoo_verdicts_are_never_empty_and_name_a_category():
    for kernel in document(ZOO)["kernels"]:
        assert kernel["verdict"]["text"] and kernel["verdict"]["category"], kernel["name"]
        assert 0 <= kernel["verdict"]["score"] <= 1


# ------------------------------------------------------------------ the LLM's tools and verifier


def test_llm_tools_give_speed_of_light_and_recoverable_time_and_the_verifier_accepts_them():
    from keet.format import si
    from keet.llm.tools import ProfileTools
    from keet.llm.verify import FactBook, check, finding_facts, profile_facts

    zoo = profile(ZOO)
    tools = ProfileTools(zoo)
    result = json.loads(tools.call("speed_of_light", kernel="transpose_naive_kernel"))
    assert result["speed_of_light"]["limiter"] and result["speed_of_light"]["fraction_pct"] > 50
    assert result["recoverable"][0]["category"] == "uncoalesced_global" and result["recoverable"][0]["recoverable_ns"] > 0
    listed = json.loads(tools.call("list_kernels"))["kernels"]
    assert all("recoverable_ns" in row and "speed_of_light_pct" in row for row in listed)
    assert "speed_of_light" in [t.name for t in tools.langchain_tools()] if _has_langchain() else True

    kernel = zoo.kernel("transpose_naive_kernel")
    doc = explain(zoo, [kernel])
    book = FactBook()
    profile_facts(book, zoo, [kernel], "h100")
    finding_facts(book, doc, "h100")
    top = doc["kernels"][0]["diagnosis"][0]
    sol = doc["kernels"][0]["speed_of_light"]
    said = (f"Fixing the uncoalesced stores could save {si(top['recoverable_ns'], 'ns')}, "
            f"{top['recoverable_fraction'] * 100:.0f}% of its time. "
            f"The kernel runs at {sol['fraction'] * 100:.0f}% of its L2 speed of light, whose attainable time is "
            f"{si(sol['attainable_ns'], 'ns')}.")
    verdicts = {c.text: c.verdict for c in check(said, book)}
    assert set(verdicts.values()) == {"supported"}, verdicts
    invented = {c.text: c.verdict for c in check("Fixing the uncoalesced stores could save 123 us.", book)}
    assert invented["123 us"] == "unsupported"


def _has_langchain() -> bool:
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------ real PyTorch reports (slow)


@pytest.mark.slow
def test_a_pytorch_report_is_never_silent_groups_its_launches_and_fits_300_lines():
    doc = document(PAIRS)
    assert len(doc["kernels"]) == 34
    for kernel in doc["kernels"]:
        assert kernel["verdict"]["text"], kernel["name"]
        assert kernel["diagnosis"], kernel["name"]  # the speed of light speaks where no rule does
    # the numbers of the speed-of-light findings are their evidence, as the rules' are
    for kernel in doc["kernels"]:
        for finding in kernel["diagnosis"]:
            if finding["rule"] == "speed-of-light":
                candidates = [e["value"] for e in finding["evidence"]] + [e["compared_with"] for e in finding["evidence"]]
                assert all(grounded(t, candidates) for t in explanation_numbers(finding["explanation"])), finding["explanation"]
    ranges = {r["range"]: r for r in doc["nvtx"]}
    conv = ranges["conv2d_nchw/fp16/16x3x224x224k64r7"]
    assert len(conv["launches"]) == 4 and conv["total_ns"] > 0
    text = to_text(doc, width=80)
    assert len(text.splitlines()) < 300 and "NVTX ranges" in text and "conv2d_nchw/fp16/16x3x224x224k64r7" in text
    # cuDNN's layout conversions: a library kernel whose lever is to avoid it
    layout = [k for k in doc["kernels"] if "nchwToNhwc" in k["name"]]
    assert layout and all(k["library"]["kind"] == "layout_conversion" and k["recoverable_ns"] == pytest.approx(k["duration_ns"])
                          for k in layout)
    for finding in (f for k in layout for f in k["diagnosis"]):  # the caller's levers; the rule's code changes beside them
        assert "channels_last" in " ".join(finding["suggestions"])
        assert finding["rule"] == "speed-of-light" or finding["code_suggestions"]
    assert "cuDNN library kernel" in layout[0]["verdict"]["text"]


@pytest.mark.slow
def test_a_hundred_launch_pytorch_report_fits_300_lines():
    doc = document(PART0)
    assert len(to_text(doc, width=80).splitlines()) < 300
    assert sum(g["count"] for g in doc["groups"]) == len(doc["kernels"]) == 103
    assert len(doc["nvtx"]) >= 30 and all(k["verdict"]["text"] for k in doc["kernels"])
