"""Retargeting work counts from the profiled GPU to another: warp-size conversion, the last-level
cache capacity model for DRAM reads, and what the real zoo profiles become on each target."""

from __future__ import annotations

from dataclasses import replace

import pytest
import shared_profiles

from perfmodel.features import KernelFeatures, features
from perfmodel.hardware import gpu, gpu_id_for_device_name, gpu_ids
from perfmodel.model import predict
from perfmodel.retarget import (
    dram_read_bytes,
    last_level_bytes,
    retarget,
    reuse_capacity,
    source_gpu,
    warp_conversion,
)

MB = 1e6


@pytest.fixture(scope="module")
def zoo() -> dict[str, KernelFeatures]:
    profile = shared_profiles.zoo("h100")
    return {kernel.name: features(profile, kernel) for kernel in profile.kernels}


def synthetic(**counts: float) -> KernelFeatures:
    return KernelFeatures(
        name="synthetic", grid_blocks=1024, threads_per_block=256, registers_per_thread=32, shared_bytes_per_block=0,
        counts=dict(counts), warp_instructions_by_pipe={"fp32": 8000.0, "lsu": 2000.0, "alu": 1000.0},
        flops={"fp32": 16000.0 * 32}, barriers=64.0, tensor_instructions={"HMMA.16816.F32": 10.0},
        source_gpu="NVIDIA H100 80GB HBM3", l2_bytes_of_source_gpu=52_428_800)


# ------------------------------------------------------------------ device names


@pytest.mark.parametrize(("name", "expected"), [
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"), ("NVIDIA B200", "b200"),
    ("NVIDIA A100-SXM4-80GB", "a100"), ("AMD Instinct MI300X", "mi300x"), ("AMD Instinct MI300A", "mi300a"),
    ("AMD Instinct MI250X", "mi250x"),
    # Different products: no near miss.
    ("NVIDIA H100 PCIe", None), ("NVIDIA GB200", None), ("NVIDIA A100-SXM4-40GB", None), ("AMD Instinct MI250", None),
    ("Tesla V100-SXM2-16GB", None), (None, None), ("", None),
])
def test_gpu_id_for_device_name(name, expected):
    assert gpu_id_for_device_name(name) == expected


@pytest.mark.parametrize("gpu_id", gpu_ids())
def test_every_hardware_file_name_maps_back_to_its_id(gpu_id):
    """Retargeted features name the target as their source; that name must resolve to the target."""
    assert gpu_id_for_device_name(gpu(gpu_id).name) == gpu_id


# ------------------------------------------------------------------ the pieces


def test_warp_conversion_counts_wavefronts_per_block():
    assert warp_conversion(256, 32, 64) == 0.5
    assert warp_conversion(32, 32, 64) == 1.0  # a 32-thread block is one half-empty wavefront
    assert warp_conversion(96, 32, 64) == pytest.approx(2 / 3)
    assert warp_conversion(256, 32, 32) == 1.0
    assert warp_conversion(256, 64, 32) == 2.0


def test_capacity_model_anchors():
    requested = 4000 * MB
    # A 16 MB working set that fit in a 50 MB cache: kept on any cache that holds it.
    assert reuse_capacity(16 * MB, 50 * MB) == 16 * MB
    assert dram_read_bytes(requested, 16 * MB, 50 * MB, 126 * MB) == 16 * MB
    assert dram_read_bytes(requested, 16 * MB, 50 * MB, 16 * MB) == 16 * MB
    # Half the working set in the cache: half the re-reads miss (random replacement).
    assert dram_read_bytes(requested, 16 * MB, 50 * MB, 8 * MB) == pytest.approx(16 * MB + (requested - 16 * MB) / 2)
    # No cache: every request goes to DRAM.
    assert dram_read_bytes(requested, 16 * MB, 50 * MB, 0.0) == pytest.approx(requested)
    # Streaming or DRAM over-fetch (no hits on the source): unchanged whatever the cache.
    assert dram_read_bytes(800 * MB, 800 * MB, 50 * MB, 1.0) == 800 * MB
    assert dram_read_bytes(1000 * MB, 2000 * MB, 50 * MB, 1.0) == 2000 * MB
    # Data streamed through the source's cache: its hits needed the whole cache; a larger cache
    # gains nothing (no evidence of longer reuse), a smaller one keeps its share of the hits.
    assert reuse_capacity(200 * MB, 50 * MB) == 50 * MB
    assert dram_read_bytes(1000 * MB, 200 * MB, 50 * MB, 300 * MB) == 200 * MB
    assert dram_read_bytes(1000 * MB, 200 * MB, 50 * MB, 25 * MB) == pytest.approx(1000 * MB - 800 * MB / 2)


def test_capacity_model_is_monotonic_in_the_target_capacity():
    values = [dram_read_bytes(3000 * MB, 100 * MB, 50 * MB, c * MB) for c in (0, 1, 5, 10, 25, 40, 50, 60, 300)]
    assert values == sorted(values, reverse=True)
    assert values[0] == pytest.approx(3000 * MB) and values[-1] == 100 * MB


def test_last_level_is_l2_plus_mall_on_cdna3():
    assert last_level_bytes(gpu("mi300x")) == gpu("mi300x").value("l2_bytes") + gpu("mi300x").value("mall_bytes")
    assert last_level_bytes(gpu("mi250x")) == gpu("mi250x").value("l2_bytes")
    assert last_level_bytes(gpu("b200")) > last_level_bytes(gpu("h100")) > last_level_bytes(gpu("a100"))


# ------------------------------------------------------------------ retarget() on synthetic work


def test_same_gpu_changes_nothing():
    work = synthetic(dram_bytes_read=10 * MB, l2_sectors_read=1e6)
    same, notes = retarget(work, gpu("h100"), gpu("h100"))
    assert same is work and "as measured" in notes[0]


def test_nvidia_to_amd_halves_warp_level_counts_and_keeps_the_rest():
    work = synthetic(instructions=11000.0, global_load_requests=500.0, global_store_requests=100.0,
                     global_load_sectors=4000.0, shared_load_wavefronts=300.0, dram_bytes_read=1 * MB, l2_sectors_read=40000.0)
    out, notes = retarget(work, gpu("h100"), gpu("mi300x"))
    assert out.counts["instructions"] == 5500.0
    assert out.counts["global_load_requests"] == 250.0 and out.counts["global_store_requests"] == 50.0
    assert out.warp_instructions_by_pipe == {"fp32": 4000.0, "lsu": 1000.0, "alu": 500.0}
    assert out.barriers == 32.0
    # Thread-level and byte counts do not depend on the warp size.
    assert out.flops == work.flops and out.tensor_instructions == work.tensor_instructions
    assert out.counts["global_load_sectors"] == 4000.0 and out.counts["shared_load_wavefronts"] == 300.0
    assert out.grid_blocks == work.grid_blocks and out.threads_per_block == work.threads_per_block
    assert any("64-lane wavefronts: x0.5" in note for note in notes)
    # The input is not modified.
    assert work.counts["instructions"] == 11000.0 and work.warp_instructions_by_pipe["fp32"] == 8000.0


def test_nvidia_to_nvidia_keeps_instruction_counts():
    work = synthetic(instructions=11000.0, dram_bytes_read=1 * MB, l2_sectors_read=40000.0)
    out, notes = retarget(work, gpu("h100"), gpu("b200"))
    assert out.counts["instructions"] == 11000.0 and out.warp_instructions_by_pipe == work.warp_instructions_by_pipe
    assert not any("wavefronts" in note for note in notes)


def test_a_working_set_between_a100_and_h100_l2_spills_only_on_a100():
    """45 MB re-read 100 times: resident in H100's 50 MiB L2 and B200's 126 MiB, not in A100's 40 MiB."""
    footprint, requested = 45e6, 4.5e9
    work = synthetic(dram_bytes_read=footprint, l2_sectors_read=requested / 32)
    on_b200, _ = retarget(work, gpu("h100"), gpu("b200"))
    on_a100, notes = retarget(work, gpu("h100"), gpu("a100"))
    assert on_b200.counts["dram_bytes_read"] == footprint
    expected = footprint + (requested - footprint) * (1 - gpu("a100").value("l2_bytes") / footprint)
    assert on_a100.counts["dram_bytes_read"] == pytest.approx(expected)
    assert on_a100.counts["dram_bytes_read"] > 5 * footprint
    assert any("DRAM reads re-estimated" in note and "keeps 93%" in note for note in notes)


def test_dram_writes_are_kept():
    work = synthetic(dram_bytes_read=45e6, dram_bytes_write=30e6, l2_sectors_read=4.5e9 / 32, l2_sectors_write=1e6)
    out, _ = retarget(work, gpu("h100"), gpu("mi250x"))
    assert out.counts["dram_bytes_write"] == 30e6 and out.counts["l2_sectors_write"] == 1e6


def test_without_an_l2_size_dram_is_kept_with_a_note():
    work = replace(synthetic(dram_bytes_read=45e6, l2_sectors_read=1e8), l2_bytes_of_source_gpu=None)
    no_l2 = replace(gpu("h100"), id="h100-without-l2", params={k: v for k, v in gpu("h100").params.items() if k != "l2_bytes"})
    out, notes = retarget(work, no_l2, gpu("a100"))
    assert out.counts["dram_bytes_read"] == 45e6 and any("no L2 size" in note for note in notes)


def test_retargeted_features_name_the_target_so_retargeting_again_is_a_no_op():
    work = synthetic(instructions=1000.0, dram_bytes_read=45e6, l2_sectors_read=1e8)
    once, _ = retarget(work, gpu("h100"), gpu("mi300x"))
    assert source_gpu(once).id == "mi300x"
    twice, _ = retarget(once, source_gpu(once), gpu("mi300x"))
    assert twice is once


# ------------------------------------------------------------------ the real zoo (H100 profiles)


def test_source_gpu_of_the_zoo_is_h100(zoo):
    assert source_gpu(zoo["triad_kernel"]).id == "h100"
    assert zoo["triad_kernel"].l2_bytes_of_source_gpu == gpu("h100").value("l2_bytes")


def test_l2_resident_kernel_stays_resident_on_larger_caches_and_spills_on_mi250x(zoo):
    """l2_reread re-reads a 16 MiB buffer 1024 times: DRAM sees one pass on H100 (50 MiB L2). B200
    (126 MiB), A100 (40 MiB, still larger than the buffer) and MI300X (L2 + 256 MiB MALL) hold it;
    MI250X's 8 MiB L2 per GCD holds half of it, so about half of the 4 GiB of re-reads go to HBM."""
    work = zoo["l2_reread_kernel"]
    dram, requested = work.counts["dram_bytes_read"], work.counts["l2_sectors_read"] * 32
    assert dram < 20 * MB and requested > 4e9
    for target in ("b200", "a100", "mi300x", "h200"):
        out, _ = retarget(work, gpu("h100"), gpu(target))
        assert out.counts["dram_bytes_read"] == dram, target
    spilled, notes = retarget(work, gpu("h100"), gpu("mi250x"))
    assert 0.4 * requested < spilled.counts["dram_bytes_read"] < 0.6 * requested
    assert any("keeps 50%" in note for note in notes)
    # The model sees it: DRAM time on MI250X exceeds the whole L2-resident prediction on MI300X.
    on_mi250x = predict(gpu("mi250x"), spilled)
    assert on_mi250x.breakdown["dram"] > predict(gpu("mi300x"), retarget(work, gpu("h100"), gpu("mi300x"))[0]).predicted_ns


def test_streaming_kernels_keep_their_dram_traffic_everywhere(zoo):
    for name in ("triad_kernel", "softmax_kernel", "transpose_smem_padded_kernel", "uncoalesced_gather_kernel"):
        work = zoo[name]
        for target in ("b200", "a100", "mi300a", "mi300x", "mi250x"):
            out, _ = retarget(work, gpu("h100"), gpu(target))
            assert out.counts["dram_bytes_read"] == pytest.approx(work.counts["dram_bytes_read"], rel=1e-3), (name, target)
            assert out.counts["dram_bytes_write"] == work.counts["dram_bytes_write"]


def test_triad_on_amd_keeps_its_bytes_and_halves_its_instructions(zoo):
    work = zoo["triad_kernel"]
    out, notes = retarget(work, gpu("h100"), gpu("mi300x"))
    assert out.counts["instructions"] == pytest.approx(work.counts["instructions"] / 2)
    assert out.counts["global_load_sectors"] == work.counts["global_load_sectors"]
    assert any("no reuse for a cache to capture" in note for note in notes)
    # Lane-operations per pipe are conserved: warp instructions x warp size.
    lanes = sum(work.warp_instructions_by_pipe.values()) * 32
    assert sum(out.warp_instructions_by_pipe.values()) * 64 == pytest.approx(lanes)


def test_cdna3_targets_estimate_traffic_beyond_the_xcd_private_l2(zoo):
    work = zoo["l2_reread_kernel"]
    out, notes = retarget(work, gpu("h100"), gpu("mi300x"))
    requested = work.counts["l2_sectors_read"] * 32
    assert 0 < out.counts["mall_bytes_read"] <= requested
    assert any("private to each of its 8 XCDs" in note for note in notes)
    assert "mall_bytes_read" not in retarget(work, gpu("h100"), gpu("mi250x"))[0].counts


def test_launches_that_do_not_fit_a_cdna_cu_are_reported(zoo):
    """occupancy_smem asks for 128 KiB of shared memory per block; a CDNA CU has 64 KiB of LDS."""
    _, notes = retarget(zoo["occupancy_smem_kernel"], gpu("h100"), gpu("mi300x"))
    assert any("cannot run on mi300x" in note for note in notes)
    _, notes = retarget(zoo["occupancy_smem_kernel"], gpu("h100"), gpu("b200"))
    assert not any("cannot run" in note for note in notes)


def test_one_warp_blocks_fill_cdna_wave_slots(zoo):
    """32-thread blocks: 32 blocks per SM on H100 (block limit, 50%); on CDNA one half-empty
    wavefront each, no barrier, so 32 per CU: all wave slots."""
    work = zoo["occupancy_blocks_kernel"]
    out, notes = retarget(work, gpu("h100"), gpu("mi300x"))
    assert out.counts["instructions"] == work.counts["instructions"]  # factor 1: one wave per warp
    assert any("32 blocks per CU (100% theoretical" in note and "50% on h100" in note for note in notes)


@pytest.mark.parametrize("target", ["b200", "a100", "mi300a", "mi300x", "mi250x", "h200"])
def test_every_zoo_kernel_retargets_and_predicts(zoo, target):
    """No kernel crashes; DRAM reads stay between the source's and the L2 request traffic; the model
    runs on the result (a launch that cannot fit the target is a ValueError, not a crash)."""
    hardware = gpu(target)
    for name, work in zoo.items():
        out, notes = retarget(work, gpu("h100"), hardware)
        assert notes, name
        before, after = work.counts.get("dram_bytes_read", 0.0), out.counts.get("dram_bytes_read", 0.0)
        ceiling = max(before, work.counts.get("l2_sectors_read", 0.0) * 32)
        assert before - 1 <= after <= ceiling + 1, (name, before, after)
        try:
            prediction = predict(hardware, out)
        except ValueError as exc:
            assert "cannot launch" in str(exc), name
            continue
        assert prediction.predicted_ns > 0, name
