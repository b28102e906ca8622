#!/usr/bin/env bash
# Capture the zoo on a GPU machine, ready to commit under profiles/<gpu>/.
#
#   bash profiles/device_capture.sh OUTDIR GPU_TAG programs
#       capture.json              timings (CUDA events, 25 runs, cold L2), ptxas resources, clocks
#       ncu/<program>.ncu-rep.xz  one `ncu --set full --import-source yes` report per program
#   bash profiles/device_capture.sh OUTDIR GPU_TAG combined
#       zoo_all.ncu-rep.xz        every program's kernels in ONE report (multi-kernel tests, benchmarks)
#       csv/zoo_all_*.csv.xz      that report as ncu CSV: details and raw pages, auto and base units
#
# Two steps because each fits one 10-minute device call; the second reuses the first's
# build when the machine is still the same one. Results are packed as OUTDIR/GPU_TAG-STEP.tar.NN
# (parts of at most 15 MiB). Run from the repository root.
set -euo pipefail
out=${1:?usage: device_capture.sh OUTDIR GPU_TAG programs|combined}
gpu=${2:?usage: device_capture.sh OUTDIR GPU_TAG programs|combined}
step=${3:?usage: device_capture.sh OUTDIR GPU_TAG programs|combined}
work=/tmp/zoo_capture/$gpu
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p "$work"

case "$step" in
programs)
  python3 profiles/capture.py --out "$work"
  ncu_reports=("$work"/ncu/*.ncu-rep)
  xz -T0 -9 -k "${ncu_reports[@]}"
  "$ncu" --version > "$work/ncu_version.txt"
  tar -C "$work" -cf - capture.json ncu_version.txt $(cd "$work" && ls ncu/*.xz) | split -b 15M -d - "$out/$gpu-programs.tar."
  ;;
combined)
  [ -d "$work/build" ] || python3 profiles/capture.py --out "$work" --build-only
  mkdir -p "$work/csv"
  # One Nsight Compute session over every program's --profile run: one report, many kernels.
  # --clock-control none: the lent GPU's clocks must not be changed (kernels run at default clocks).
  "$ncu" --set full --import-source yes --clock-control none --target-processes all -f -o "$work/zoo_all" \
    bash -c 'for b in "$0"/build/*; do if [ -f "$b" ] && [ -x "$b" ]; then "$b" --profile > /dev/null; fi; done' "$work"
  for page in details raw; do
    "$ncu" --import "$work/zoo_all.ncu-rep" --csv --page "$page" > "$work/csv/zoo_all_${page}.csv"
    "$ncu" --import "$work/zoo_all.ncu-rep" --csv --page "$page" --print-units base > "$work/csv/zoo_all_${page}_base.csv"
  done
  xz -T0 -9 -f "$work/zoo_all.ncu-rep" "$work"/csv/*.csv
  tar -C "$work" -cf - zoo_all.ncu-rep.xz csv | split -b 15M -d - "$out/$gpu-combined.tar."
  ;;
*)
  echo "unknown step $step" >&2
  exit 2
  ;;
esac
ls -la "$out"
