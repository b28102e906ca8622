"""The corpus's PyTorch cases: operators as people call them, at the sizes people run them.

Each case is one call of one operator (eager, cuBLAS/cuDNN/CUB through ATen, flash attention,
or torch.compile's Triton) on inputs made once; a case launches one or more kernels, and every
kernel it launches is a corpus kernel. Imported on the GPU machine by capture_torch.py (needs
torch) and, for the case table only, nowhere else.

A case is (case_id, group, setup): setup() allocates the inputs on the GPU and returns the
zero-argument callable that runs the operator once. `group` is what the validation split is
drawn over (operator and dtype: every size of one operator and dtype lands on the same side,
so a size tuned on cannot leak into the validation set; split.py). pairs.py lists
before/after pairs among these cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Case:
    case_id: str
    group: str
    family: str
    setup: Callable[[], Callable[[], object]]
    notes: str = ""


def _randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def _size_label(shape) -> str:
    return "x".join(str(s) for s in shape)


def _tf32(enabled: bool, fn):
    """Run fn with TF32 matmul/conv on or off (the flag is read at call time by cuBLAS/cuDNN)."""
    def call():
        old_mm, old_conv = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
        try:
            return fn()
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old_mm, old_conv
    return call


def cases() -> list[Case]:
    out: list[Case] = []

    def add(case_id, group, family, setup, notes=""):
        out.append(Case(case_id, group, family, setup, notes))

    # --- elementwise and fused elementwise -------------------------------------------------
    for dt in ("fp32", "bf16", "fp16"):
        for n in (1 << 16, 1 << 22, 1 << 26):
            def s(n=n, dt=dt):
                a, b = _randn(n, dtype=DTYPES[dt]), _randn(n, dtype=DTYPES[dt])
                return lambda: torch.add(a, b)
            add(f"add/{dt}/{n}", f"add/{dt}", "elementwise", s)
    for dt in ("fp32", "bf16"):
        for n in (1 << 16, 1 << 22, 1 << 26):
            def s(n=n, dt=dt):
                a = _randn(n, dtype=DTYPES[dt])
                return lambda: F.gelu(a)
            add(f"gelu/{dt}/{n}", f"gelu/{dt}", "elementwise", s)
    for n in (1 << 18, 1 << 22, 1 << 26):
        def s(n=n):
            a, b, c = _randn(n), _randn(n), _randn(n)
            return lambda: torch.addcmul(a, b, c, value=0.5)
        add(f"addcmul/fp32/{n}", "addcmul/fp32", "elementwise", s)
        def s2(n=n):
            a = _randn(n)
            return lambda: torch.exp(a)
        add(f"exp/fp32/{n}", "exp/fp32", "elementwise", s2)
        def s3(n=n):
            a = _randn(n)
            return lambda: a.to(torch.bfloat16)
        add(f"cast_fp32_bf16/{n}", "cast/fp32_bf16", "elementwise", s3)
        def s4(n=n):
            a, m = _randn(n), torch.rand(n, device="cuda") > 0.5
            return lambda: a.masked_fill(m, 0.0)
        add(f"masked_fill/fp32/{n}", "masked_fill/fp32", "elementwise", s4)
    # strided (non-contiguous) input vs contiguous: the same sum of two tensors
    for rows, cols in ((1024, 1024), (4096, 4096), (8192, 8192)):
        def s(rows=rows, cols=cols):
            a, b = _randn(cols, rows).t(), _randn(rows, cols)
            return lambda: torch.add(a, b)
        add(f"add_transposed/fp32/{rows}x{cols}", "add_transposed/fp32", "elementwise", s,
            "first operand is a transposed view: a strided read")
        def s2(rows=rows, cols=cols):
            a, b = _randn(rows, cols), _randn(rows, cols)
            return lambda: torch.add(a, b)
        add(f"add_2d/fp32/{rows}x{cols}", "add_2d/fp32", "elementwise", s2)
    for n in (1 << 20, 1 << 24, 1 << 27):
        def s(n=n):
            g = torch.Generator(device="cuda")
            g.manual_seed(0)
            return lambda: torch.randn(n, device="cuda", generator=g)
        add(f"randn/fp32/{n}", "randn/fp32", "elementwise", s)

    # --- reductions ---------------------------------------------------------------------------
    for dt in ("fp32", "bf16"):
        for n in (1 << 16, 1 << 22, 1 << 26):
            def s(n=n, dt=dt):
                a = _randn(n, dtype=DTYPES[dt])
                return lambda: a.sum()
            add(f"sum_all/{dt}/{n}", f"sum_all/{dt}", "reduction", s)
    for rows, cols in ((4096, 1024), (16384, 4096), (65536, 2048)):
        def s(rows=rows, cols=cols):
            a = _randn(rows, cols)
            return lambda: a.sum(dim=1)
        add(f"sum_rows/fp32/{rows}x{cols}", "sum_rows/fp32", "reduction", s)
        def s2(rows=rows, cols=cols):
            a = _randn(rows, cols)
            return lambda: a.sum(dim=0)
        add(f"sum_cols/fp32/{rows}x{cols}", "sum_cols/fp32", "reduction", s2)
        def s3(rows=rows, cols=cols):
            a = _randn(rows, cols)
            return lambda: a.amax(dim=1)
        add(f"amax_rows/fp32/{rows}x{cols}", "amax_rows/fp32", "reduction", s3)

    # --- softmax, norms ---------------------------------------------------------------------
    norm_shapes = ((4096, 1024), (8192, 4096), (32768, 8192))
    for dt in ("fp32", "bf16", "fp16"):
        for shape in norm_shapes:
            def s(shape=shape, dt=dt):
                a = _randn(*shape, dtype=DTYPES[dt])
                return lambda: torch.softmax(a, dim=-1)
            add(f"softmax/{dt}/{_size_label(shape)}", f"softmax/{dt}", "softmax", s)
    for dt in ("fp32", "bf16"):
        for shape in norm_shapes:
            def s(shape=shape, dt=dt):
                a = _randn(*shape, dtype=DTYPES[dt])
                w, b = _randn(shape[1], dtype=DTYPES[dt]), _randn(shape[1], dtype=DTYPES[dt])
                return lambda: F.layer_norm(a, (shape[1],), w, b)
            add(f"layer_norm/{dt}/{_size_label(shape)}", f"layer_norm/{dt}", "norm", s)
            def s2(shape=shape, dt=dt):
                a = _randn(*shape, dtype=DTYPES[dt])
                w = _randn(shape[1], dtype=DTYPES[dt])
                return lambda: F.rms_norm(a, (shape[1],), w)
            add(f"rms_norm/{dt}/{_size_label(shape)}", f"rms_norm/{dt}", "norm", s2)

    # --- gather / scatter / embedding ---------------------------------------------------------
    for dt in ("fp32", "bf16"):
        for vocab, dim, tokens in ((32000, 1024, 2048), (50304, 2048, 8192), (128256, 4096, 16384)):
            def s(vocab=vocab, dim=dim, tokens=tokens, dt=dt):
                table = _randn(vocab, dim, dtype=DTYPES[dt])
                idx = torch.randint(0, vocab, (tokens,), device="cuda")
                return lambda: F.embedding(idx, table)
            add(f"embedding/{dt}/{vocab}x{dim}x{tokens}", f"embedding/{dt}", "gather", s)
    for rows, cols in ((4096, 1024), (16384, 4096), (65536, 1024)):
        def s(rows=rows, cols=cols):
            a = _randn(rows, cols)
            idx = torch.randint(0, cols, (rows, cols // 4), device="cuda")
            return lambda: torch.gather(a, 1, idx)
        add(f"gather/fp32/{rows}x{cols}", "gather/fp32", "gather", s)
        def s2(rows=rows, cols=cols):
            out = torch.zeros(rows, cols, device="cuda")
            src = _randn(rows, cols)
            idx = torch.randint(0, cols, (rows, cols), device="cuda")
            return lambda: out.scatter_add_(1, idx, src)
        add(f"scatter_add/fp32/{rows}x{cols}", "scatter_add/fp32", "scatter", s2)
        def s3(rows=rows, cols=cols):
            out = torch.zeros(rows // 4, cols, device="cuda")
            src = _randn(rows, cols)
            idx = torch.randint(0, rows // 4, (rows,), device="cuda")
            return lambda: out.index_add_(0, idx, src)
        add(f"index_add/fp32/{rows}x{cols}", "index_add/fp32", "scatter", s3)
        def s4(rows=rows, cols=cols):
            a = _randn(rows, cols)
            idx = torch.randint(0, rows, (rows // 2,), device="cuda")
            return lambda: a.index_select(0, idx)
        add(f"index_select/fp32/{rows}x{cols}", "index_select/fp32", "gather", s4)

    # --- sort / topk / cumsum -----------------------------------------------------------------
    for n in (1 << 16, 1 << 20, 1 << 24):
        def s(n=n):
            a = _randn(n)
            return lambda: torch.sort(a)
        add(f"sort/fp32/{n}", "sort/fp32", "sort", s)
        def s2(n=n):
            a = _randn(n)
            return lambda: torch.cumsum(a, 0)
        add(f"cumsum/fp32/{n}", "cumsum/fp32", "scan", s2)
    for rows, cols, k in ((64, 32768, 8), (512, 32000, 50), (4096, 4096, 64)):
        def s(rows=rows, cols=cols, k=k):
            a = _randn(rows, cols)
            return lambda: torch.topk(a, k, dim=-1)
        add(f"topk/fp32/{rows}x{cols}k{k}", "topk/fp32", "sort", s)
    for rows, cols in ((256, 4096), (4096, 4096), (1024, 65536)):
        def s(rows=rows, cols=cols):
            a = _randn(rows, cols)
            return lambda: torch.sort(a, dim=-1)
        add(f"sort_rows/fp32/{rows}x{cols}", "sort_rows/fp32", "sort", s)

    # --- matmul / bmm (cuBLAS, cuBLASLt) ------------------------------------------------------
    mm_sizes = ((512, 512, 512), (2048, 2048, 2048), (8192, 8192, 4096), (4096, 4096, 4095))
    for label, dt, tf32 in (("fp32", "fp32", False), ("tf32", "fp32", True), ("bf16", "bf16", False), ("fp16", "fp16", False)):
        for m, n, k in mm_sizes:
            def s(m=m, n=n, k=k, dt=dt, tf32=tf32):
                a, b = _randn(m, k, dtype=DTYPES[dt]), _randn(k, n, dtype=DTYPES[dt])
                return _tf32(tf32, lambda: torch.mm(a, b))
            add(f"mm/{label}/{m}x{n}x{k}", f"mm/{label}", "matmul", s)
    for m, n, k in ((512, 512, 512), (2048, 2048, 2048), (8192, 8192, 4096)):
        def s(m=m, n=n, k=k):
            a = _randn(m, k).to(torch.float8_e4m3fn)
            bt = _randn(n, k).to(torch.float8_e4m3fn)
            one = torch.ones((), device="cuda")
            return lambda: torch._scaled_mm(a, bt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        add(f"mm/fp8/{m}x{n}x{k}", "mm/fp8", "matmul", s)
    for label, dt, tf32 in (("bf16", "bf16", False), ("fp32", "fp32", False), ("tf32", "fp32", True)):
        for bsz, m, n, k in ((32, 128, 128, 64), (64, 512, 512, 64), (16, 2048, 2048, 128)):
            def s(bsz=bsz, m=m, n=n, k=k, dt=dt, tf32=tf32):
                a, b = _randn(bsz, m, k, dtype=DTYPES[dt]), _randn(bsz, k, n, dtype=DTYPES[dt])
                return _tf32(tf32, lambda: torch.bmm(a, b))
            add(f"bmm/{label}/{bsz}x{m}x{n}x{k}", f"bmm/{label}", "matmul", s)
    for m, n, k in ((2048, 2048, 2048), (8192, 8192, 4096)):
        def s(m=m, n=n, k=k):
            a, b = _randn(k, m, dtype=torch.bfloat16).t(), _randn(n, k, dtype=torch.bfloat16).t()
            return lambda: torch.mm(a, b)
        add(f"mm_tt/bf16/{m}x{n}x{k}", "mm_tt/bf16", "matmul", s, "both operands transposed views")
    for m, n, k in ((4096, 4096, 4096),):
        def s(m=m, n=n, k=k):
            x, w, bias = _randn(m, k, dtype=torch.bfloat16), _randn(n, k, dtype=torch.bfloat16), _randn(n, dtype=torch.bfloat16)
            return lambda: F.linear(x, w, bias)
        add(f"linear_bias/bf16/{m}x{n}x{k}", "linear_bias/bf16", "matmul", s)

    # --- convolution (cuDNN) -------------------------------------------------------------------
    conv_shapes = ((32, 64, 56, 56, 64, 3), (32, 256, 14, 14, 256, 3), (16, 3, 224, 224, 64, 7), (64, 128, 28, 28, 128, 1))
    for label, dt, tf32, fmt in (("fp32", "fp32", False, "nchw"), ("tf32", "fp32", True, "nchw"),
                                 ("fp16", "fp16", False, "nchw"), ("fp16", "fp16", False, "nhwc"),
                                 ("bf16", "bf16", False, "nhwc")):
        for n, c, h, w, k, r in conv_shapes:
            def s(n=n, c=c, h=h, w=w, k=k, r=r, dt=dt, tf32=tf32, fmt=fmt):
                x, wt = _randn(n, c, h, w, dtype=DTYPES[dt]), _randn(k, c, r, r, dtype=DTYPES[dt])
                if fmt == "nhwc":
                    x, wt = x.to(memory_format=torch.channels_last), wt.to(memory_format=torch.channels_last)
                return _tf32(tf32, lambda: F.conv2d(x, wt, padding=r // 2))
            add(f"conv2d_{fmt}/{label}/{n}x{c}x{h}x{w}k{k}r{r}", f"conv2d_{fmt}/{label}", "conv", s)

    # --- attention -------------------------------------------------------------------------------
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = (("flash", SDPBackend.FLASH_ATTENTION, "bf16"), ("efficient", SDPBackend.EFFICIENT_ATTENTION, "fp16"),
                ("cudnn", SDPBackend.CUDNN_ATTENTION, "bf16"), ("math", SDPBackend.MATH, "bf16"))
    for name, backend, dt in backends:
        for b, h, s_len, d in ((4, 16, 512, 64), (8, 16, 2048, 64), (2, 32, 4096, 128)):
            def s(b=b, h=h, s_len=s_len, d=d, backend=backend, dt=dt):
                q, k_, v = (_randn(b, h, s_len, d, dtype=DTYPES[dt]) for _ in range(3))
                def call():
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(q, k_, v, is_causal=True)
                return call
            add(f"sdpa_{name}/{dt}/{b}x{h}x{s_len}x{d}", f"sdpa_{name}/{dt}", "attention", s)

    # --- copies with transposes ----------------------------------------------------------------
    for dt in ("fp32", "bf16"):
        for rows, cols in ((1024, 1024), (4096, 4096), (16384, 8192)):
            def s(rows=rows, cols=cols, dt=dt):
                a = _randn(rows, cols, dtype=DTYPES[dt])
                return lambda: a.t().contiguous()
            add(f"transpose_copy/{dt}/{rows}x{cols}", f"transpose_copy/{dt}", "copy", s)
    for b, s_len, h, d in ((8, 512, 16, 64), (16, 2048, 16, 64), (4, 4096, 32, 128)):
        def s(b=b, s_len=s_len, h=h, d=d):
            a = _randn(b, s_len, h, d, dtype=torch.bfloat16)
            return lambda: a.permute(0, 2, 1, 3).contiguous()
        add(f"permute_0213/bf16/{b}x{s_len}x{h}x{d}", "permute_0213/bf16", "copy", s)

    # --- optimizer steps -----------------------------------------------------------------------
    for opt_name, kwargs in (("adam_foreach", {"foreach": True}), ("adam_fused", {"fused": True}),
                             ("adamw_foreach", {"foreach": True}), ("sgd_momentum_foreach", {"foreach": True})):
        # the foreach optimizers' largest size launches 21-56 kernels, most of them repeats of
        # one kernel: too many for the profiling time, and no new kernel for the corpus
        sizes = ((16, 1 << 16), (32, 1 << 20)) + (((8, 1 << 24),) if opt_name == "adam_fused" else ())
        for n_params, numel in sizes:
            def s(opt_name=opt_name, kwargs=kwargs, n_params=n_params, numel=numel):
                params = [torch.nn.Parameter(_randn(numel)) for _ in range(n_params)]
                for p in params:
                    p.grad = _randn(numel)
                if opt_name.startswith("adamw"):
                    opt = torch.optim.AdamW(params, lr=1e-3, **kwargs)
                elif opt_name.startswith("adam"):
                    opt = torch.optim.Adam(params, lr=1e-3, **kwargs)
                else:
                    opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9, **kwargs)
                opt.step()  # creates the state, so a timed step is a steady-state step
                return opt.step
            add(f"{opt_name}/fp32/{n_params}x{numel}", f"{opt_name}/fp32", "optimizer", s)

    # --- torch.compile (Triton) ----------------------------------------------------------------
    def compiled(fn):
        return torch.compile(fn, dynamic=False, fullgraph=True)
    for shape in norm_shapes:
        def s(shape=shape):
            a = _randn(*shape)
            f = compiled(lambda x: torch.softmax(x, dim=-1))
            return lambda: f(a)
        add(f"compiled_softmax/fp32/{_size_label(shape)}", "compiled_softmax/fp32", "softmax", s)
        def s2(shape=shape):
            a, w, b = _randn(*shape, dtype=torch.bfloat16), _randn(shape[1], dtype=torch.bfloat16), _randn(shape[1], dtype=torch.bfloat16)
            f = compiled(lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b))
            return lambda: f(a, w, b)
        add(f"compiled_layer_norm/bf16/{_size_label(shape)}", "compiled_layer_norm/bf16", "norm", s2)
        def s3(shape=shape):
            a, w = _randn(*shape, dtype=torch.bfloat16), _randn(shape[1], dtype=torch.bfloat16)
            f = compiled(lambda x, w: F.rms_norm(x, (x.shape[1],), w))
            return lambda: f(a, w)
        add(f"compiled_rms_norm/bf16/{_size_label(shape)}", "compiled_rms_norm/bf16", "norm", s3)
    for n in (1 << 18, 1 << 22, 1 << 26):
        def s(n=n):
            a, b = _randn(n), _randn(n)
            f = compiled(lambda x, y: F.gelu(x + y) * y)
            return lambda: f(a, b)
        add(f"compiled_gelu_add_mul/fp32/{n}", "compiled_gelu_add_mul/fp32", "elementwise", s)
        def s2(n=n):
            a, b = _randn(n), _randn(n)
            return lambda: F.gelu(a + b) * b
        add(f"eager_gelu_add_mul/fp32/{n}", "eager_gelu_add_mul/fp32", "elementwise", s2,
            "three eager kernels for what compiles into one")
    for rows, cols in ((1024, 1024), (4096, 4096), (16384, 8192)):
        def s(rows=rows, cols=cols):
            a = _randn(rows, cols)
            f = compiled(lambda x: x.t().contiguous())
            return lambda: f(a)
        add(f"compiled_transpose_copy/fp32/{rows}x{cols}", "compiled_transpose_copy/fp32", "copy", s)
    for rows, cols in ((4096, 1024), (16384, 4096), (65536, 2048)):
        def s(rows=rows, cols=cols):
            a = _randn(rows, cols)
            f = compiled(lambda x: x.sum(dim=1))
            return lambda: f(a)
        add(f"compiled_sum_rows/fp32/{rows}x{cols}", "compiled_sum_rows/fp32", "reduction", s)
    return out


if __name__ == "__main__":  # the case table, for a look without a GPU run
    for c in cases():
        print(c.case_id, c.group, c.family, sep="\t")
    print(len(cases()), "cases")
