"""The hardware database files (perfmodel/hardware/*.toml): schema, provenance and the
cross-checks that could catch a wrong number.

Reads the TOML files directly with tomllib and imports no perfmodel module, so a broken
loader cannot hide a broken file (and the other way round).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

HARDWARE = Path(__file__).resolve().parent.parent / "perfmodel" / "hardware"

GPU_IDS = ("h100", "h200", "b200", "a100", "mi300a", "mi300x", "mi250x")
GPU_KEYS_NVIDIA = {"id", "name", "vendor", "arch", "compute_capability", "build_target", "listing_order"}
GPU_KEYS_AMD = {"id", "name", "vendor", "arch", "build_target", "listing_order"}
GPU_KEYS_OPTIONAL = {"reference"}  # h100: the GPU of the zoo's reference profiles
PARAM_KEYS_REQUIRED = {"value", "unit", "source", "ref"}
PARAM_KEYS_ALLOWED = PARAM_KEYS_REQUIRED | {"note"}

# The declared parameters (perfmodel/hardware/parameters.toml, read here with tomllib): a name is
# allowed in a vendor's file when its declared unit is one string or list, or a table naming that
# vendor; the loader enforces units and sources too (tests/test_parameter_schema.py).
SCHEMA = tomllib.loads((HARDWARE / "parameters.toml").read_text())
SOURCES = set(SCHEMA["sources"])
ALLOWED = {vendor: {name for name, d in SCHEMA["params"].items() if not isinstance(d["unit"], dict) or vendor in d["unit"]}
           for vendor in ("nvidia", "amd")}

# Every file must carry these (the consistency checks below rely on them).
REQUIRED_EVERYWHERE = {
    "sm_count", "warp_size", "schedulers_per_sm", "registers_per_sm", "max_registers_per_thread",
    "register_alloc_unit_per_warp", "max_warps_per_sm", "max_threads_per_sm", "max_blocks_per_sm",
    "max_threads_per_block", "shared_per_sm_bytes", "max_shared_per_block_bytes", "shared_banks",
    "shared_bank_bytes", "l1_bytes_per_sm", "dram_bytes", "dram_bandwidth_bytes_per_s",
    "fp32_flops_per_clk_per_sm", "fp64_flops_per_clk_per_sm",
    "fp32_peak_flops", "fp64_peak_flops", "tensor_fp16_peak_flops",
}
REQUIRED_AMD = {"xcd_count", "vgprs_per_simd", "agprs_per_simd", "sgprs_per_simd", "max_vgprs_per_wave",
                "lds_banks", "mfma_fp16_flops_per_clk_per_cu", "mfma_fp64_flops_per_clk_per_cu"}
REQUIRED_NVIDIA = {"max_warps_per_scheduler", "shared_alloc_unit_bytes", "shared_reserved_per_block_bytes"}

# Documented gaps, not silent ones. Every file now has a boost clock (B200's is derived from its
# vendor FP32 peak, b200.toml header); B200 has no per-SM tensor rate (its tensor clock is unpublished).
NO_BOOST_CLOCK: set[str] = set()
NO_PER_SM_TENSOR_RATE = {"b200"}
# Where a vendor peak only matches sm_count x per-SM rate x clock_boost_hz with another clock or
# another rate, the exception is stated here (and in the file's note) so the check still runs.
TENSOR_CLOCK_HZ = {"h100": 1.83e9, "h200": 1.83e9}  # NVIDIA computes Hopper FP16/TF32/FP8/INT8 tensor peaks at 1830 MHz
FP32_PACKED_FACTOR = {"mi300x": 2, "mi300a": 2}     # AMD's CDNA 3 FP32 peak counts packed FP32 (v_pk_fma_f32)
TOLERANCE = 0.02

ARCH_OF_CC = {"8.0": "sm_80", "9.0": "sm_90", "10.0": "sm_100"}
AMD_ARCHS = {"gfx90a", "gfx942"}


def load(gpu_id: str) -> dict:
    with open(HARDWARE / f"{gpu_id}.toml", "rb") as handle:
        return tomllib.load(handle)


def values(gpu_id: str) -> dict[str, float]:
    return {name: entry["value"] for name, entry in load(gpu_id)["params"].items()}


def close(a: float, b: float, tol: float = TOLERANCE) -> bool:
    return abs(a - b) <= tol * max(abs(a), abs(b))


def test_every_gpu_has_a_file_and_no_stray_files():
    assert sorted(p.stem for p in HARDWARE.glob("*.toml") if p.name != "parameters.toml") == sorted(GPU_IDS)


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_gpu_table(gpu_id):
    data = load(gpu_id)
    assert set(data) == {"gpu", "identify", "params"}
    head = data["gpu"]
    assert data["identify"]["device_patterns"], "a profile's device must be recognisable"
    assert head["build_target"].startswith(head["arch"]), "sm_90 builds sm_90 or sm_90a, gfx942 builds gfx942"
    assert head["id"] == gpu_id
    assert head["vendor"] in ("nvidia", "amd")
    assert isinstance(head["name"], str) and head["name"].strip()
    if head["vendor"] == "nvidia":
        assert set(head) - GPU_KEYS_OPTIONAL == GPU_KEYS_NVIDIA
        assert head["arch"] == ARCH_OF_CC[head["compute_capability"]]
    else:
        assert set(head) - GPU_KEYS_OPTIONAL == GPU_KEYS_AMD, "compute_capability is NVIDIA-only"
        assert head["arch"] in AMD_ARCHS


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_params_schema(gpu_id):
    data = load(gpu_id)
    vendor = data["gpu"]["vendor"]
    params = data["params"]
    unknown = set(params) - ALLOWED[vendor]
    assert not unknown, f"parameter names outside the {vendor} list: {sorted(unknown)}"
    for name, entry in params.items():
        assert PARAM_KEYS_REQUIRED <= set(entry) <= PARAM_KEYS_ALLOWED, (name, sorted(entry))
        value = entry["value"]
        assert isinstance(value, (int, float)) and not isinstance(value, bool), name
        assert math.isfinite(value) and value > 0, (name, value)
        assert entry["source"] in SOURCES, (name, entry["source"])
        assert isinstance(entry["unit"], str) and entry["unit"].strip(), name
        assert isinstance(entry["ref"], str) and entry["ref"].strip(), name
        assert isinstance(entry.get("note", ""), str), name


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_required_params_present(gpu_id):
    data = load(gpu_id)
    required = REQUIRED_EVERYWHERE | (REQUIRED_AMD if data["gpu"]["vendor"] == "amd" else REQUIRED_NVIDIA)
    missing = required - set(data["params"])
    assert not missing, sorted(missing)
    if gpu_id not in NO_BOOST_CLOCK:
        assert "clock_boost_hz" in data["params"]
    else:
        assert "clock_boost_hz" not in data["params"], "a clock was added: drop it from NO_BOOST_CLOCK"


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_peaks_are_vendor_figures(gpu_id):
    params = load(gpu_id)["params"]
    for name in ("fp32_peak_flops", "fp64_peak_flops", "tensor_fp16_peak_flops"):
        # Per-GCD MI250X peaks are the vendor package figure halved; the ref must still name it.
        assert params[name]["source"] in ("vendor", "derived"), name
        if params[name]["source"] == "derived":
            assert "/ 2 GCDs" in params[name]["ref"], name


# A per-SM rate measured by microbench (perfmodel calibrate) is an achieved rate: it may fall a
# few percent short of the vendor peak (FFMA loops reach about 98.5% on H100/H200), never above it.
MEASURED_SHORTFALL = 0.05


def _rate_matches(gpu_id: str, rate: str, peak: float, computed: float) -> bool:
    if load(gpu_id)["params"][rate]["source"] == "microbenchmark":
        return (1 - MEASURED_SHORTFALL) * peak <= computed <= (1 + TOLERANCE) * peak
    return close(peak, computed)


def _fp32_check(gpu_id):
    v = values(gpu_id)
    factor = FP32_PACKED_FACTOR.get(gpu_id, 1)
    return v["fp32_peak_flops"], factor * v["sm_count"] * v["fp32_flops_per_clk_per_sm"] * v["clock_boost_hz"]


@pytest.mark.parametrize("gpu_id", sorted(set(GPU_IDS) - NO_BOOST_CLOCK))
def test_fp32_peak_matches_sm_count_rate_and_boost_clock(gpu_id):
    peak, computed = _fp32_check(gpu_id)
    assert _rate_matches(gpu_id, "fp32_flops_per_clk_per_sm", peak, computed), f"{gpu_id}: vendor {peak:.4g} vs computed {computed:.4g}"


@pytest.mark.parametrize("gpu_id", sorted(set(GPU_IDS) - NO_BOOST_CLOCK))
def test_fp64_peak_matches_sm_count_rate_and_boost_clock(gpu_id):
    v = values(gpu_id)
    computed = v["sm_count"] * v["fp64_flops_per_clk_per_sm"] * v["clock_boost_hz"]
    assert _rate_matches(gpu_id, "fp64_flops_per_clk_per_sm", v["fp64_peak_flops"], computed), \
        f"{gpu_id}: vendor {v['fp64_peak_flops']:.4g} vs {computed:.4g}"


def _tensor_fp16_rate(v: dict[str, float]) -> float | None:
    return v.get("tensor_fp16_flops_per_clk_per_sm", v.get("mfma_fp16_flops_per_clk_per_cu"))


@pytest.mark.parametrize("gpu_id", sorted(set(GPU_IDS) - NO_BOOST_CLOCK - NO_PER_SM_TENSOR_RATE))
def test_tensor_fp16_peak_matches_rate_and_clock(gpu_id):
    v = values(gpu_id)
    rate = _tensor_fp16_rate(v)
    assert rate is not None
    clock = TENSOR_CLOCK_HZ.get(gpu_id, v["clock_boost_hz"])
    computed = v["sm_count"] * rate * clock
    assert close(v["tensor_fp16_peak_flops"], computed), f"{gpu_id}: vendor {v['tensor_fp16_peak_flops']:.4g} vs {computed:.4g}"


@pytest.mark.parametrize("gpu_id", sorted(TENSOR_CLOCK_HZ))
def test_documented_tensor_clock_exception_is_real(gpu_id):
    """The exception must be needed: at the boost clock the tensor peak would be off by >2%."""
    v = values(gpu_id)
    at_boost = v["sm_count"] * _tensor_fp16_rate(v) * v["clock_boost_hz"]
    assert not close(v["tensor_fp16_peak_flops"], at_boost)
    assert "1830" in load(gpu_id)["params"]["tensor_fp16_peak_flops"].get("note", "")


@pytest.mark.parametrize("gpu_id", sorted(FP32_PACKED_FACTOR))
def test_documented_packed_fp32_exception_is_real(gpu_id):
    v = values(gpu_id)
    plain = v["sm_count"] * v["fp32_flops_per_clk_per_sm"] * v["clock_boost_hz"]
    assert not close(v["fp32_peak_flops"], plain)
    assert "packed" in load(gpu_id)["params"]["fp32_peak_flops"].get("note", "").lower()


def test_b200_peaks_imply_a_plausible_clock():
    """No B200 clock is published; the vendor peaks must still imply one near the other parts' 1.9-2.0 GHz."""
    v = values("b200")
    from_fp32 = v["fp32_peak_flops"] / (v["sm_count"] * v["fp32_flops_per_clk_per_sm"])
    from_fp64 = v["fp64_peak_flops"] / (v["sm_count"] * v["fp64_flops_per_clk_per_sm"])
    assert 1.8e9 < from_fp32 < 2.2e9 and 1.8e9 < from_fp64 < 2.2e9
    assert close(from_fp32, from_fp64)


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_occupancy_limits_consistent(gpu_id):
    data = load(gpu_id)
    v = values(gpu_id)
    assert v["max_threads_per_sm"] == v["max_warps_per_sm"] * v["warp_size"]
    assert v["max_threads_per_block"] <= v["max_threads_per_sm"]
    assert v["max_threads_per_block"] % v["warp_size"] == 0
    assert v["registers_per_sm"] > 0 and v["max_registers_per_thread"] > 0
    assert v["register_alloc_unit_per_warp"] > 0
    # One warp at the per-thread maximum fits in the register file.
    assert v["max_registers_per_thread"] * v["warp_size"] <= v["registers_per_sm"]
    assert 0 < v["max_shared_per_block_bytes"] <= v["shared_per_sm_bytes"]
    assert v["shared_per_sm_bytes"] <= v.get("l1_bytes_per_sm", math.inf) or data["gpu"]["vendor"] == "amd"
    assert v["shared_banks"] * v["shared_bank_bytes"] > 0
    if "shared_bandwidth_bytes_per_clk_per_sm" in v:
        peak = v["shared_banks"] * v["shared_bank_bytes"]
        if data["params"]["shared_bandwidth_bytes_per_clk_per_sm"]["source"] == "microbenchmark":
            assert (1 - MEASURED_SHORTFALL) * peak <= v["shared_bandwidth_bytes_per_clk_per_sm"] <= peak  # achieved <= banks x width
        else:
            assert v["shared_bandwidth_bytes_per_clk_per_sm"] == peak
    assert v["max_warps_per_sm"] % v["schedulers_per_sm"] == 0
    if data["gpu"]["vendor"] == "nvidia":
        assert v["max_warps_per_sm"] == v["schedulers_per_sm"] * v["max_warps_per_scheduler"]
        # The per-block limit is the per-SM capacity minus the reserved 1 KB.
        assert v["max_shared_per_block_bytes"] + v["shared_reserved_per_block_bytes"] == v["shared_per_sm_bytes"]
        assert v["registers_per_sm"] % v["register_alloc_unit_per_warp"] == 0
    else:
        # VGPR file: SIMDs x VGPRs per SIMD x 64 lanes; AGPRs share it (not additional).
        assert v["registers_per_sm"] == v["schedulers_per_sm"] * v["vgprs_per_simd"] * v["warp_size"]
        assert v["agprs_per_simd"] == v["vgprs_per_simd"]
        assert v["max_vgprs_per_wave"] <= v["vgprs_per_simd"]
        assert v["max_registers_per_thread"] == v["max_vgprs_per_wave"]
        assert v["vgprs_per_simd"] % v["register_alloc_unit_per_warp"] == 0
        assert v["lds_banks"] == v["shared_banks"]


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_memory_hierarchy_ordered(gpu_id):
    v = values(gpu_id)
    if "l2_bytes" in v:
        assert v["l1_bytes_per_sm"] < v["l2_bytes"] < v["dram_bytes"]
    if "mall_bytes" in v:
        assert v["l2_bytes"] < v["mall_bytes"] < v["dram_bytes"]
    assert 1e11 < v["dram_bandwidth_bytes_per_s"] < 2e13


@pytest.mark.parametrize("gpu_id", [g for g in GPU_IDS if g.startswith("mi")])
def test_amd_tensor_aliases_equal_mfma_rates(gpu_id):
    v = values(gpu_id)
    for dtype in ("fp16", "bf16", "fp64", "fp8"):
        mfma = v.get(f"mfma_{dtype}_flops_per_clk_per_cu")
        tensor = v.get(f"tensor_{dtype}_flops_per_clk_per_sm")
        assert (mfma is None) == (tensor is None), dtype
        assert mfma == tensor, dtype


@pytest.mark.parametrize("gpu_id", ["mi300a", "mi300x", "mi250x"])
def test_amd_l2_is_per_xcd_slices(gpu_id):
    v = values(gpu_id)
    per_xcd = v["l2_bytes"] / v["xcd_count"]
    assert per_xcd == (4 if gpu_id != "mi250x" else 8) * 1024 * 1024


def test_mi250x_describes_one_gcd():
    data = load("mi250x")
    v = values("mi250x")
    assert "GCD" in data["gpu"]["name"]
    assert v["sm_count"] == 110 and v["xcd_count"] == 1
    text = (HARDWARE / "mi250x.toml").read_text()
    assert "220 CUs" in text and "128 GB" in text, "package totals belong in the header comment"


# H200 is an H100 SXM5 with a different memory system: every SM-level fact must be identical.
SAME_SM_PARAMS = (
    "sm_count", "clock_base_hz", "clock_boost_hz", "warp_size", "schedulers_per_sm", "max_warps_per_scheduler",
    "registers_per_sm", "max_registers_per_thread", "register_alloc_unit_per_warp", "max_warps_per_sm",
    "max_threads_per_sm", "max_blocks_per_sm", "max_threads_per_block", "shared_per_sm_bytes",
    "max_shared_per_block_bytes", "shared_alloc_unit_bytes", "shared_reserved_per_block_bytes", "shared_banks",
    "shared_bank_bytes", "l1_bytes_per_sm",
)


def test_h200_has_the_h100_sm():
    h100, h200 = values("h100"), values("h200")
    per_sm_rates = {n for n in set(h100) | set(h200) if n.endswith("_per_clk_per_sm")}
    for name in sorted(set(SAME_SM_PARAMS) | per_sm_rates):
        assert (name in h100) == (name in h200), name
        if name in h100:
            measured = all(load(g)["params"][name]["source"] == "microbenchmark" for g in ("h100", "h200"))
            if measured and name in per_sm_rates:  # two machines' measurements of the same SM: within 2%
                assert close(h100[name], h200[name]), name
            else:
                assert h100[name] == h200[name], name
    assert load("h100")["gpu"]["compute_capability"] == load("h200")["gpu"]["compute_capability"]


def test_h200_has_more_memory_and_bandwidth_than_h100():
    h100, h200 = values("h100"), values("h200")
    assert h200["dram_bandwidth_bytes_per_s"] > h100["dram_bandwidth_bytes_per_s"]
    assert h200["dram_bytes"] > h100["dram_bytes"]
    assert h200["clock_memory_hz"] > h100["clock_memory_hz"]


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_no_parameter_is_calibrated_on_a_validation_kernel(gpu_id):
    """The zoo's timings validate the model: none of them may set a model parameter.

    Device properties read off the zoo captures (clocks from nvidia-smi, the L2 size from
    ncu's device attributes) are fine; a kernel's measured time is not. The corpus's dev split
    may set one (perfmodel.ncu_overhead: two timings of the same launches), its validation split not.
    """
    for name, entry in load(gpu_id)["params"].items():
        ref = entry["ref"]
        zoo = ref.replace("profiles/corpus/manifest.json", "")  # the corpus is not the zoo
        assert not ("manifest.json" in zoo and any(word in zoo for word in ("median", "launch_overhead", "us/launch", "timing"))), (gpu_id, name, ref)
        # nor may the corpus's validation split: a parameter read from the corpus names the dev split
        assert "profiles/corpus" not in ref or "dev split" in ref, (gpu_id, name, ref)


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_derived_refs_show_their_formula(gpu_id):
    for name, entry in load(gpu_id)["params"].items():
        if entry["source"] == "derived":
            ref = entry["ref"]
            assert any(op in ref for op in (" x ", " / ", "/", " - ", "=")), (name, ref)


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_per_clock_rates_are_whole_powers_of_two(gpu_id):
    """Per-SM/CU per-clock rates derived from rounded vendor peaks must come out as exact hardware
    widths (powers of two); a non-power-of-two would mean a wrong clock, SM count or peak."""
    for name, entry in load(gpu_id)["params"].items():
        if "_per_clk_per_" in name and entry["source"] != "microbenchmark":  # measured rates are achieved, not widths
            value = entry["value"]
            assert value == int(value) and int(value) & (int(value) - 1) == 0, (name, value)


def test_b200_tensor_rate_is_the_published_width_not_the_peak_over_the_boost_clock():
    """At the derived boost clock the vendor FP16 tensor peak is not a power-of-two per-SM rate
    (7680: the datasheet peak is at a lower, unpublished tensor clock), so the file records the
    width NVIDIA's own code states for compute capability 10 (8192 = 2 x Hopper's 4096) and cites it."""
    v = values("b200")
    implied = v["tensor_fp16_peak_flops"] / (v["sm_count"] * v["clock_boost_hz"])
    nearest = round(implied)
    assert nearest & (nearest - 1) != 0
    entry = load("b200")["params"]["tensor_fp16_flops_per_clk_per_sm"]
    assert entry["value"] == 2 * values("h100")["tensor_fp16_flops_per_clk_per_sm"] == 8192
    assert entry["source"] == "vendor" and "cudnn-frontend" in entry["ref"]
    assert load("b200")["params"]["tensor_bf16_flops_per_clk_per_sm"]["value"] == 8192


def test_b200_clock_is_derived_from_its_fp32_peak():
    entry = load("b200")["params"]["clock_boost_hz"]
    assert entry["source"] == "derived" and "75e12" in entry["ref"]
    v = values("b200")
    assert close(v["clock_boost_hz"], v["fp32_peak_flops"] / (v["sm_count"] * v["fp32_flops_per_clk_per_sm"]), 1e-4)


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_every_file_has_what_the_model_needs_to_run(gpu_id):
    """perfmodel.model requires these; the rest it reads with .value() and skips when absent."""
    v = values(gpu_id)
    for name in ("clock_boost_hz", "sm_count", "warp_size", "schedulers_per_sm", "dram_bandwidth_bytes_per_s"):
        assert name in v, name


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_latencies_are_ordered(gpu_id):
    v = values(gpu_id)
    chain = [v[name] for name in ("l1_latency_cycles", "l2_latency_cycles", "dram_latency_cycles") if name in v]
    assert chain == sorted(chain) and len(set(chain)) == len(chain)


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_publication_refs_name_their_place(gpu_id):
    """A cited publication must say where in it the number is (a file and commit, a quote, a table)."""
    for name, entry in load(gpu_id)["params"].items():
        if entry["source"] == "publication":
            ref = entry["ref"]
            assert ("commit" in ref or "'" in ref or "table" in ref.lower()), (name, ref)


@pytest.mark.parametrize("gpu_id", ["h100", "h200"])
def test_ncu_overhead_is_what_its_derivation_gives(gpu_id):
    """The hardware file's ncu_overhead_ns is recomputed from the committed corpus: it cannot drift."""
    from perfmodel.ncu_overhead import derive

    value, note = derive(gpu_id)
    entry = load(gpu_id)["params"]["ncu_overhead_ns"]
    assert entry["value"] == round(value) and entry["note"] == note
    assert 500 < value < 2000  # Nsight Compute's span over CUPTI's: about a microsecond, never negative
