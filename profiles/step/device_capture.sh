#!/usr/bin/env bash
# Capture profiles/step/ on one GPU machine (run from the repository root):
#   bash profiles/step/device_capture.sh OUTDIR GPU_TAG
# writes OUTDIR/GPU_TAG_step.ncu-rep.xz (`ncu --set full --nvtx --import-source yes` of one
# forward step of capture_step.py) and OUTDIR/GPU_TAG_step.log. --clock-control none: the lent
# GPUs' clocks must not be changed.
set -euo pipefail
out=${1:?usage: device_capture.sh OUTDIR GPU_TAG}; gpu=${2:?GPU tag (h100, h200)}
here=$(dirname "$0"); mkdir -p "$out"; work=$(mktemp -d)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$ncu" --set full --import-source yes --clock-control none --profile-from-start off --nvtx --target-processes all \
  -f -o "$work/${gpu}_step" python3 "$here/capture_step.py" > "$out/${gpu}_step.log" 2>&1 \
  || { tail -n 30 "$out/${gpu}_step.log"; exit 1; }
grep -c '==PROF== Profiling' "$out/${gpu}_step.log" | sed 's/^/kernels profiled: /'
ls -la "$work"
xz -T0 -9 -c "$work/${gpu}_step.ncu-rep" > "$out/${gpu}_step.ncu-rep.xz"
ls -la "$out"
