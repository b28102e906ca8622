"""Launch overhead: the kernel is so short that launching it costs about as much as running it.

Every launch pays a fixed cost outside the kernel's own GPU time: the host-side
cudaLaunchKernel call, the push through the stream to the GPU front end, and block
dispatch and teardown. For a kernel of a few microseconds that cost is a large share of
its wall time, whatever its grid or bottleneck inside; only fewer launches help.
"""

from __future__ import annotations

from keet.rules.base import Finding, KernelView, clamp, num, rule
from perfmodel.hardware import gpu, gpu_id_for_device_name, reference_gpu_id

# Fixed cost of one launch beyond the kernel's measured duration (cudaLaunchKernel on the host
# plus front-end dispatch): the hardware file's launch_overhead_ns, measured by microbench's
# launch suite (3.3 us on the H100). A GPU whose file has none is judged with the reference
# GPU's; graphs and persistent kernels get below it.
LAUNCH_COST_NS = gpu(reference_gpu_id()).require("launch_overhead_ns")
# Launch overhead is worth a finding from this share of launch + run time on: a kernel
# shorter than three launch costs (~10 us) spends at least a quarter of its time launching.
MIN_SHARE = 0.25
MAX_DURATION_NS = LAUNCH_COST_NS * (1 / MIN_SHARE - 1)


def launch_cost_ns(k: KernelView) -> float:
    """The launch cost on the profile's GPU: its hardware file's, else the reference GPU's."""
    gpu_id = gpu_id_for_device_name(k.device.name)
    measured = gpu(gpu_id).value("launch_overhead_ns") if gpu_id else None
    return measured or LAUNCH_COST_NS


def max_duration_ns(cost_ns: float = LAUNCH_COST_NS) -> float:
    """The longest kernel whose launch cost is still MIN_SHARE of its wall time."""
    return cost_ns * (1 / MIN_SHARE - 1)


def launch_share(duration_ns: float, cost_ns: float = LAUNCH_COST_NS) -> float:
    """The launch cost's share of one launch's wall time: L / (L + duration)."""
    return cost_ns / (cost_ns + max(duration_ns, 0.0))


@rule(
    "launch-overhead",
    "launch_overhead",
    "Kernel duration of a few microseconds: the fixed launch cost is a large share of its time",
    needs=("duration",),
    collect="--section SpeedOfLight",
)
def apply(k: KernelView) -> Finding | None:
    duration = k.metric("duration")
    cost = launch_cost_ns(k)
    if duration <= 0 or duration > max_duration_ns(cost):
        return None
    share = launch_share(duration, cost)
    below = duration < cost
    evidence = [k.evidence("duration", cost, "<" if below else ">=")]
    work = ""
    if k.has("launch.grid_size", "launch.block_size"):
        evidence += [k.evidence("launch.grid_size"), k.evidence("launch.block_size")]
        grid, block = k.metric("launch.grid_size"), k.metric("launch.block_size")
        work = (
            f" The launch itself is small ({num(grid)} block{'s' if grid != 1 else ''} of {num(block)} threads), "
            "so there is little work per launch to amortise that cost."
        )
    compare = "less than" if below else "within a few multiples of"
    # impact = L / (L + duration), L = cost: the share of each launch's wall time
    # spent launching rather than running.
    return Finding(
        category="launch_overhead",
        rule="launch-overhead",
        impact=clamp(share),
        confidence=0.85 if below else 0.65,
        evidence=evidence,
        explanation=(
            f"The kernel runs for only {num(duration / 1000)} us on the GPU, {compare} the roughly "
            f"{num(cost / 1000)} us that a launch costs on the host and the GPU front end, so launching takes "
            f"{'more than half' if below else 'a large share'} of the time each call of this kernel occupies.{work} "
            "Making the kernel itself faster cannot recover that time; launching it less often can."
        ),
        suggestions=[
            (
                f"Fuse this kernel into its producer or consumer: at {duration / 1000:.3g} us of work per launch, the "
                f"~{cost / 1000:.0f} us launch cost disappears only with the launch."
            ),
            (
                "Batch: process many independent items in one launch (a grid over items, or a loop over them) instead of one "
                "launch per item."
            ),
            (
                "Capture repeated sequences of short kernels in a CUDA graph (cudaStreamBeginCapture / cudaGraphLaunch), which "
                "submits them as one unit and cuts the per-kernel launch cost to around a microsecond or less."
            ),
            (
                "For a loop of dependent tiny steps, a persistent kernel that loops on the device (grid-wide sync or a "
                "work queue) replaces thousands of launches with one."
            ),
        ],
    )
