"""Before/after pairs of the corpus: two cases doing the same work, the second the faster way
a user can choose (a compiler, a library path, a layout, a precision mode). The capture
measures which is faster; build_manifest.py records the measured speedup of each pair on
each GPU (isolated, cold-L2 kernel times summed over the call's kernels), so a pair whose
'after' turned out slower stays visible as such. Used to check the time a diagnosis calls
recoverable.
"""

from __future__ import annotations


def _pairs() -> list[dict]:
    """Before/after pairs over case ids: the same work, the second the faster way a user can
    choose (a compiler, a library path, a layout, a precision mode). Which one is faster is
    what the capture measures; a pair whose 'after' is not faster is reported as such."""
    out = []
    for shape in ("4096x1024", "8192x4096", "32768x8192"):
        out.append({"before": f"softmax/fp32/{shape}", "after": f"compiled_softmax/fp32/{shape}", "lever": "torch.compile"})
        out.append({"before": f"layer_norm/bf16/{shape}", "after": f"compiled_layer_norm/bf16/{shape}", "lever": "torch.compile"})
        out.append({"before": f"rms_norm/bf16/{shape}", "after": f"compiled_rms_norm/bf16/{shape}", "lever": "torch.compile"})
    for n in (1 << 18, 1 << 22, 1 << 26):
        out.append({"before": f"eager_gelu_add_mul/fp32/{n}", "after": f"compiled_gelu_add_mul/fp32/{n}", "lever": "fusion"})
    for shape in ("1024x1024", "4096x4096", "16384x8192"):
        out.append({"before": f"transpose_copy/fp32/{shape}", "after": f"compiled_transpose_copy/fp32/{shape}", "lever": "torch.compile"})
    for shape in ("1024x1024", "4096x4096", "8192x8192"):
        out.append({"before": f"add_transposed/fp32/{shape}", "after": f"add_2d/fp32/{shape}", "lever": "contiguous layout"})
    for size in ("512x512x512", "2048x2048x2048", "8192x8192x4096"):
        out.append({"before": f"mm/fp32/{size}", "after": f"mm/tf32/{size}", "lever": "TF32"})
        out.append({"before": f"mm/bf16/{size}", "after": f"mm/fp8/{size}", "lever": "FP8"})
    for shape in ("32x64x56x56k64r3", "32x256x14x14k256r3", "16x3x224x224k64r7", "64x128x28x28k128r1"):
        out.append({"before": f"conv2d_nchw/fp16/{shape}", "after": f"conv2d_nhwc/fp16/{shape}", "lever": "channels_last"})
        out.append({"before": f"conv2d_nchw/fp32/{shape}", "after": f"conv2d_nchw/tf32/{shape}", "lever": "TF32"})
    for size in ("16x65536", "32x1048576"):
        out.append({"before": f"adam_foreach/fp32/{size}", "after": f"adam_fused/fp32/{size}", "lever": "fused optimizer"})
    for shape in ("4x16x512x64", "8x16x2048x64", "2x32x4096x128"):
        out.append({"before": f"sdpa_math/bf16/{shape}", "after": f"sdpa_flash/bf16/{shape}", "lever": "flash attention"})
    for shape in ("4096x1024", "16384x4096", "65536x2048"):
        out.append({"before": f"sum_rows/fp32/{shape}", "after": f"compiled_sum_rows/fp32/{shape}", "lever": "torch.compile"})
    return out



PAIRS = _pairs()
