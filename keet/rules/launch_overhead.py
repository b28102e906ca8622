"""Launch overhead: the kernel is so short that launching it costs about as much as running it.

Every launch pays a fixed cost outside the kernel's own GPU time: the host-side
cudaLaunchKernel call, the push through the stream to the GPU front end, and block
dispatch and teardown. For a kernel of a few microseconds that cost is a large share of
its wall time, whatever its grid or bottleneck inside; only fewer launches help.
"""

from __future__ import annotations

from keet.rules.base import Finding, KernelView, clamp, num, rule

# Fixed cost of one launch beyond the kernel's measured duration: ~2-5 us on H100/H200
# (cudaLaunchKernel on the host plus front-end dispatch; back-to-back launches of an empty
# kernel run at ~3-4 us each). A middle value; graphs and persistent kernels get below it.
LAUNCH_COST_NS = 3000.0
# Launch overhead is worth a finding from this share of launch + run time on: a kernel
# shorter than three launch costs (~9 us) spends at least a quarter of its time launching.
MIN_SHARE = 0.25
MAX_DURATION_NS = LAUNCH_COST_NS * (1 / MIN_SHARE - 1)


def launch_share(duration_ns: float) -> float:
    """The launch cost's share of one launch's wall time: L / (L + duration)."""
    return LAUNCH_COST_NS / (LAUNCH_COST_NS + max(duration_ns, 0.0))


@rule(
    "launch-overhead",
    "launch_overhead",
    "Kernel duration of a few microseconds: the fixed launch cost is a large share of its time",
    needs=("duration",),
    collect="--section SpeedOfLight",
)
def apply(k: KernelView) -> Finding | None:
    duration = k.metric("duration")
    if duration <= 0 or duration > MAX_DURATION_NS:
        return None
    share = launch_share(duration)
    below = duration < LAUNCH_COST_NS
    evidence = [k.evidence("duration", LAUNCH_COST_NS, "<" if below else ">=")]
    work = ""
    if k.has("launch.grid_size", "launch.block_size"):
        evidence += [k.evidence("launch.grid_size"), k.evidence("launch.block_size")]
        grid, block = k.metric("launch.grid_size"), k.metric("launch.block_size")
        work = (
            f" The launch itself is small ({num(grid)} block{'s' if grid != 1 else ''} of {num(block)} threads), "
            "so there is little work per launch to amortise that cost."
        )
    compare = "less than" if below else "within a few multiples of"
    # impact = L / (L + duration), L = LAUNCH_COST_NS: the share of each launch's wall time
    # spent launching rather than running.
    return Finding(
        category="launch_overhead",
        rule="launch-overhead",
        impact=clamp(share),
        confidence=0.85 if below else 0.65,
        evidence=evidence,
        explanation=(
            f"The kernel runs for only {num(duration / 1000)} us on the GPU, {compare} the roughly "
            f"{num(LAUNCH_COST_NS / 1000)} us that a launch costs on the host and the GPU front end, so launching takes "
            f"{'more than half' if below else 'a large share'} of the time each call of this kernel occupies.{work} "
            "Making the kernel itself faster cannot recover that time; launching it less often can."
        ),
        suggestions=[
            (
                f"Fuse this kernel into its producer or consumer: at {duration / 1000:.3g} us of work per launch, the "
                f"~{LAUNCH_COST_NS / 1000:.0f} us launch cost disappears only with the launch."
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
