"""One forward step of a small transformer (PyTorch operators as a model runs them), for the big-
report benchmarks and the run-to-run comparison of keet (issue 23). Run on the GPU machine by
device_capture.sh, not by users of keet:

    ncu --set full --nvtx --profile-from-start off ... python3 capture_step.py

Two identical encoder layers (d_model 1024, 16 heads, feed-forward 4096, batch 8 x 512 tokens,
bf16 autocast, eval mode) run one after the other: every kernel of a layer is launched twice
with the same configuration (identical launches), each layer inside an NVTX range ("step/layer0",
"step/layer1"). Two warm-up steps run outside the profiled range. Default clocks: nothing here
changes the GPU's settings.
"""

from __future__ import annotations

import torch

LAYERS = 2
BATCH, TOKENS, WIDTH, HEADS, HIDDEN = 8, 512, 1024, 16, 4096


def main() -> None:
    torch.manual_seed(0)
    layers = [torch.nn.TransformerEncoderLayer(WIDTH, HEADS, HIDDEN, dropout=0.0, batch_first=True).cuda().eval()
              for _ in range(LAYERS)]
    for layer in layers[1:]:
        layer.load_state_dict(layers[0].state_dict())  # the same weights: the same work per layer
    tokens = torch.randn(BATCH, TOKENS, WIDTH, device="cuda")

    def step() -> torch.Tensor:
        x = tokens
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            for index, layer in enumerate(layers):
                torch.cuda.nvtx.range_push(f"step/layer{index}")
                x = layer(x)
                torch.cuda.nvtx.range_pop()
        return x

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
