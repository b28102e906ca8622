"""perfmodel.model: the bounds, the overlap rule and the lower-bound marking, on synthetic work."""

from __future__ import annotations

import dataclasses

import pytest

from perfmodel.features import KernelFeatures
from perfmodel.hardware import Param, gpu
from perfmodel.model import combine, predict, tensor_flops_per_instruction


def work(**counts) -> KernelFeatures:
    pipes = counts.pop("pipes", {})
    return KernelFeatures(name="k", grid_blocks=132 * 8, threads_per_block=256, registers_per_thread=32,
                          shared_bytes_per_block=0, counts=counts, warp_instructions_by_pipe=pipes,
                          source_gpu="NVIDIA H100 80GB HBM3", l2_bytes_of_source_gpu=50 * 2**20)


def with_params(gpu_id: str, **values: float):
    hw = gpu(gpu_id)
    params = dict(hw.params) | {k: Param(k, v, "", "microbenchmark", "test") for k, v in values.items()}
    return dataclasses.replace(hw, params=params)


def test_combine_is_a_p_norm_between_sum_and_maximum():
    assert combine(3.0, 4.0, 2.0) == pytest.approx(5.0)
    assert combine(3.0, 4.0, 1.0) == pytest.approx(7.0)
    assert combine(3.0, 4.0, None) == 4.0 and combine(0.0, 4.0, 2.0) == 4.0


def test_tensor_flops_from_shape_modifiers():
    assert tensor_flops_per_instruction("HMMA.16816.F32") == 2 * 16 * 8 * 16
    assert tensor_flops_per_instruction("HGMMA.64x128x16.F32") == 2 * 64 * 128 * 16 / 4  # a warpgroup's four warps
    assert tensor_flops_per_instruction("HMMA") == 0.0


def test_mma_sync_and_wgmma_use_their_own_rates():
    hw = with_params("h100", tensor_mma_sync_fp16_flops_per_clk_per_sm=2048, tensor_wgmma_fp16_flops_per_clk_per_sm=4096)
    sync = dataclasses.replace(work(instructions=1e6), tensor_instructions={"HMMA.16816.F32": 1e6})
    wg = dataclasses.replace(work(instructions=1e6), tensor_instructions={"HGMMA.64x128x16.F32": 1e6 * 4096 / 65536})
    # the same FLOPs: wgmma at twice the rate takes half the time
    assert predict(hw, sync).breakdown["tensor"] == pytest.approx(2 * predict(hw, wg).breakdown["tensor"])


def test_fp8_mma_runs_at_the_fp8_rate_of_its_kind():
    """QGMMA (FP8 wgmma, as cuBLAS's FP8 GEMM of the corpus runs it) at the vendor FP8 peak, twice
    the FP16 wgmma rate for the same FLOPs; QMMA (FP8 mma.sync) at FP16 mma.sync's share of it."""
    from perfmodel.terms.tensor import precision_of, tensor_rate

    hw = gpu("h100")
    assert precision_of("QGMMA.64x144x32.F32.E4M3.E4M3") == precision_of("QMMA.16832.F32.E4M3.E4M3") == "fp8"
    assert tensor_rate(hw, "QGMMA.64x144x32.F32.E4M3.E4M3") == hw.value("tensor_fp8_flops_per_clk_per_sm") == 8192
    share = hw.value("tensor_mma_sync_fp16_flops_per_clk_per_sm") / hw.value("tensor_fp16_flops_per_clk_per_sm")
    assert tensor_rate(hw, "QMMA.16832.F32.E4M3.E4M3") == pytest.approx(8192 * share)
    fp8 = dataclasses.replace(work(instructions=1e6), tensor_instructions={"QGMMA.64x128x32.F32.E4M3.E4M3": 1e6})
    fp16 = dataclasses.replace(work(instructions=1e6), tensor_instructions={"HGMMA.64x128x16.F32": 2e6})
    # the same FLOPs: FP16 wgmma at its measured 4081 flop/clk/SM, FP8 at 8192
    assert predict(hw, fp16).breakdown["tensor"] == pytest.approx(8192 / 4081 * predict(hw, fp8).breakdown["tensor"])


def test_without_the_sass_half_the_load_requests_wait_at_least_once_per_warp():
    """A profile without SourceCounters: 0.5 of a warp's load requests are its waits, at least one
    and at most all; traced waits, where the SASS gave them, are taken as they are."""
    from perfmodel.terms.latency import untraced_waits_per_warp

    assert untraced_waits_per_warp(64.0) == 32.0
    assert untraced_waits_per_warp(1.5) == 1.0 and untraced_waits_per_warp(0.5) == 0.5 and untraced_waits_per_warp(0.0) == 0.0
    warps = 132 * 8 * 8
    untraced = predict(gpu("h100"), work(global_load_requests=64.0 * warps, global_load_sectors=64.0 * warps * 4))
    traced = predict(gpu("h100"), work(global_load_requests=64.0 * warps, global_load_sectors=64.0 * warps * 4,
                                       global_load_waits=32.0 * warps))
    assert untraced.inputs["load_waits_per_warp"] == traced.inputs["load_waits_per_warp"] == 32.0
    assert untraced.caveats and not traced.caveats


def test_a_hot_address_serialises_atomics_only_when_one_slice_carries_most():
    hw = gpu("h100")
    spread = predict(hw, work(l2_sectors_atomic=1e6, l2_sectors_busiest_slice=1e6 / 80 * 1.1, instructions=1e5))
    hot = predict(hw, work(l2_sectors_atomic=1e6, l2_sectors_busiest_slice=1e6 + 100, instructions=1e5))
    assert "atomics_hot_address" not in spread.breakdown
    assert hot.bound == "atomics_hot_address"
    clock = hw.require("clock_boost_hz")
    hot_ns = 1e6 / (hw.require("atomic_same_address_ops_per_clk") * clock) * 1e9
    assert hot.predicted_ns == pytest.approx(hot_ns + hot.inputs["overheads_ns"])
    assert hot.inputs["overheads_ns"] == pytest.approx(hw.require("kernel_fixed_ns"))  # no DRAM traffic: no ramp


def test_partial_sector_stores_go_at_the_scattered_store_rate():
    hw = gpu("h100")
    whole = predict(hw, work(l2_sectors_write=8e6, global_store_sectors=8e6, global_store_bytes_per_sector=32.0))
    partial = predict(hw, work(l2_sectors_write=8e6, global_store_sectors=8e6, global_store_bytes_per_sector=4.0))
    rate = hw.value("l2_scattered_store_sectors_per_clk")
    if rate is None:
        pytest.skip("h100 has no calibrated scattered-store rate")
    expected = (8e6 / 8 * 32 / hw.require("l2_bandwidth_bytes_per_clk") + 8e6 * 7 / 8 / rate) / hw.require("clock_boost_hz")
    assert partial.breakdown["l2"] == pytest.approx(expected * 1e9)
    assert partial.breakdown["l2"] > 2 * whole.breakdown["l2"]


def test_sm_and_memory_sides_combine_with_the_overlap_exponent():
    hw = with_params("h100", overlap_exponent=2.0)
    w = work(dram_bytes_read=3e9, pipes={"fp32": 4e7}, instructions=4e7)
    p = predict(hw, w)
    sm, memory = p.inputs["sm_side_ns"], p.inputs["memory_side_ns"]
    assert sm > 0 and memory > 0
    assert p.predicted_ns == pytest.approx((sm**2 + memory**2) ** 0.5 + p.inputs["overheads_ns"])


@pytest.mark.parametrize("asynchronous", [0.0, 1.0])
def test_a_warps_own_load_waits_combine_with_the_chain_exponent_and_pipeline_waits_with_the_overlap_exponent(asynchronous):
    """Waits for a warp's own loads (the occupancy sweep's kind) combine with the throughput at
    chain_overlap_exponent; waits at an asynchronous copy pipeline's barriers (cp.async, TMA),
    built to overlap it, at overlap_exponent, the same as the SM and memory sides."""
    hw = with_params("h100", overlap_exponent=3.0, chain_overlap_exponent=1.5)
    waits = 40.0 * 132 * 8 * 8
    w = work(dram_bytes_read=3e7, global_load_requests=waits, global_load_waits=waits,
             global_load_async_waits=waits * asynchronous, global_load_sectors=3e7 / 32)
    p = predict(hw, w, "isolated-clean")
    side = "pipelined" if asynchronous else "chains"
    latency = p.terms["latency"][side]["latency"]
    assert set(p.terms["latency"]) - {"inputs"} == {side} and p.breakdown["latency"] == pytest.approx(latency)
    throughput = combine(p.inputs["sm_side_ns"], p.inputs["memory_side_ns"], 3.0)
    exponent = 3.0 if asynchronous else 1.5
    assert latency > 0.3 * throughput
    assert p.predicted_ns == pytest.approx((throughput**exponent + latency**exponent) ** (1 / exponent) + p.inputs["overheads_ns"])


def test_a_missing_parameter_makes_a_lower_bound_that_names_it():
    hw = gpu("h100")
    reduced = dataclasses.replace(hw, params={k: v for k, v in hw.params.items() if not k.startswith("atomic")})
    p = predict(reduced, work(l2_sectors_atomic=1e6, instructions=1e5))
    assert p.missing_parameters and "atomic_ops_per_clk" in p.missing_parameters[0]
    assert p.as_dict()["lower_bound"] and any("lower bound" in n for n in p.notes)
    assert not predict(hw, work(l2_sectors_atomic=1e6, instructions=1e5)).missing_parameters


def test_barriers_cost_more_with_more_warps_per_block():
    hw = with_params("h100", barrier_base_cycles=12, barrier_cycles_per_warp=2)
    small = dataclasses.replace(work(instructions=1e7), threads_per_block=64, grid_blocks=132 * 32, barriers=1e6)
    large = dataclasses.replace(work(instructions=1e7), threads_per_block=1024, grid_blocks=132 * 2, barriers=1e6)
    # the same number of barriers per warp in both (the same warps in total): a 32-warp block waits longer
    assert predict(hw, large).breakdown["barrier"] > predict(hw, small).breakdown["barrier"]


def streaming(nbytes: float) -> KernelFeatures:
    """A read-once streaming kernel of `nbytes` (a quarter of them written back), 1024 bytes per block."""
    return dataclasses.replace(work(dram_bytes_read=nbytes, dram_bytes_write=nbytes / 4, l2_sectors_read=nbytes / 32,
                                    l2_sectors_write=nbytes / 4 / 32, instructions=nbytes / 64),
                               grid_blocks=int(nbytes // 4096), threads_per_block=128)


def test_the_launch_context_changes_what_is_predicted_and_says_which():
    hw = gpu("h100")
    small, large = streaming(16 * 2**20), streaming(2 * 2**30)
    isolated, clean = predict(hw, small, "isolated"), predict(hw, small, "isolated-clean")
    warm, event = predict(hw, small, "back-to-back"), predict(hw, small, "event")
    # a flush by writing leaves dirty lines that the kernel's 20 MiB write back
    assert isolated.predicted_ns - clean.predicted_ns == pytest.approx(hw.require("l2_dirty_writeback_ns_per_byte") * 20 * 2**20)
    # 20 MiB fit in L2: the repeat reads it there, no DRAM traffic
    assert "dram" not in warm.breakdown and warm.predicted_ns < clean.predicted_ns
    assert event.predicted_ns == pytest.approx(clean.predicted_ns + hw.require("event_overhead_ns"))
    assert {p.as_dict()["context"] for p in (isolated, clean, warm, event)} == {"isolated", "isolated-clean", "back-to-back", "event"}
    # a footprint larger than L2 streams through on the repeat as well
    assert "dram" in predict(hw, large, "back-to-back").breakdown
    with pytest.raises(ValueError, match="unknown launch context"):
        predict(hw, small, "warm")


def test_the_ncu_context_is_a_clean_launch_as_nsight_compute_spans_it():
    small = streaming(16 * 2**20)
    for gpu_id in ("h100", "h200"):
        hw = gpu(gpu_id)
        clean, ncu = predict(hw, small, "isolated-clean"), predict(hw, small, "ncu")
        assert ncu.predicted_ns == pytest.approx(clean.predicted_ns + hw.require("ncu_overhead_ns"))
        assert ncu.as_dict()["context"] == "ncu" and ncu.breakdown["ncu"] == pytest.approx(hw.require("ncu_overhead_ns"))
    # a GPU whose file has no such measurement gets no plain ncu prediction
    assert gpu("mi300x").value("ncu_overhead_ns") is None
    assert predict(gpu("mi300x"), small, "ncu").lower_bound


def test_an_empty_kernel_costs_the_fixed_launch_and_its_blocks():
    hw = gpu("h100")
    tiny = dataclasses.replace(work(instructions=10), grid_blocks=1)
    assert predict(hw, tiny).predicted_ns == pytest.approx(hw.require("kernel_fixed_ns"), rel=0.01)
    assert predict(hw, tiny).bound == "launch"
    many = dataclasses.replace(work(instructions=10), grid_blocks=100_000)
    assert predict(hw, many).breakdown["block_dispatch"] == pytest.approx(100_000 * hw.require("block_dispatch_ns"))


def test_json_lists_each_term_with_its_inputs():
    d = predict(gpu("h100"), streaming(64 * 2**20)).as_dict()
    assert d["context"] == "isolated"
    assert d["terms"]["dram"]["memory"]["dram"] > 0 and d["terms"]["dram"]["inputs"]["l2_footprint_bytes"] > 64 * 2**20
    assert "kernel_fixed" in d["terms"]["launch"]["overheads"]


def test_l1_charges_per_cache_line_a_request_touches():
    hw = gpu("h100")
    # the same 4e7 sectors: coalesced (4 sectors, one line per request) or scattered (a line per sector)
    coalesced = predict(hw, work(global_load_sectors=4e7, global_load_wavefronts=1e7, instructions=1e6))
    scattered = predict(hw, work(global_load_sectors=4e7, global_load_wavefronts=4e7, instructions=1e6))
    assert scattered.breakdown["l1_shared"] == pytest.approx(4 * coalesced.breakdown["l1_shared"])
    # without the wavefront counts, the sectors' bytes
    by_bytes = predict(hw, work(global_load_sectors=4e7, instructions=1e6))
    assert by_bytes.breakdown["l1_shared"] == pytest.approx(coalesced.breakdown["l1_shared"])


def test_atomics_go_at_their_kind_and_sector_rates():
    hw = gpu("h100")
    clock = hw.require("clock_boost_hz")
    # 8e6 float adds, 8 to a sector: bound by the adds
    packed = predict(hw, work(l2_sectors_atomic=1e6, global_atomic_ops_f32=8e6, instructions=1e5))
    assert packed.breakdown["atomics"] == pytest.approx(8e6 / hw.require("atomic_ops_per_clk") / clock * 1e9)
    # the same adds scattered one to a sector: bound by the sectors
    scattered = predict(hw, work(l2_sectors_atomic=8e6, global_atomic_ops_f32=8e6, instructions=1e5))
    assert scattered.breakdown["atomics"] == pytest.approx(8e6 / hw.require("atomic_sectors_per_clk") / clock * 1e9)
    # doubles and returning atomics are slower per operation than float REDs
    f64 = predict(hw, work(l2_sectors_atomic=1e6, global_atomic_ops_f64=8e6, instructions=1e5))
    ret = predict(hw, work(l2_sectors_atomic=1e6, global_atomic_ops_return=8e6, instructions=1e5))
    assert f64.breakdown["atomics"] > ret.breakdown["atomics"] > packed.breakdown["atomics"]


def test_atomic_operations_are_split_by_kind_from_the_opcode_tables():
    from perfmodel.features import global_atomic_ops

    ops = global_atomic_ops({"REDG": 640.0, "ATOMG": 32.0},
                            {"REDG.E.ADD.F32.FTZ.RN.STRONG.GPU": 15.0, "REDG.E.ADD.STRONG.GPU": 5.0, "ATOMG.E.EXCH.STRONG.GPU": 1.0})
    assert ops == {"global_atomic_ops_f32": 480.0, "global_atomic_ops_int": 160.0, "global_atomic_ops_return": 32.0}


def test_l2_read_requests_of_one_sector_cost_the_measured_scattered_rate():
    hw = gpu("h100")
    clock = hw.require("clock_boost_hz")
    lines = predict(hw, work(l2_sectors_read=4e7, l2_read_requests=1e7, instructions=1e5))  # 4 sectors a request
    sectors = predict(hw, work(l2_sectors_read=4e7, l2_read_requests=4e7, instructions=1e5))  # 1 sector a request
    assert lines.breakdown["l2"] == pytest.approx(4e7 * 32 / hw.require("l2_bandwidth_bytes_per_clk") / clock * 1e9)
    assert sectors.breakdown["l2"] == pytest.approx(4e7 / hw.require("l2_scattered_load_sectors_per_clk") / clock * 1e9)
