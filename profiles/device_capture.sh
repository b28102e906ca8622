#!/usr/bin/env bash
# Capture the zoo on a GPU machine, ready to commit under profiles/<gpu>/.
#
#   bash profiles/device_capture.sh OUTDIR GPU_TAG programs
#       capture.json              timings (CUDA events, 25 runs, cold L2), ptxas resources, clocks
#       ncu/<program>.ncu-rep.xz  one `ncu --set full --import-source yes` report per program
#   bash profiles/device_capture.sh OUTDIR GPU_TAG combined
#       zoo_all.ncu-rep.xz        every program's kernels in ONE report (multi-kernel tests, benchmarks)
#       csv/zoo_all_*.csv.xz      that report as ncu CSV: details and raw pages, auto and base units
#   bash profiles/device_capture.sh OUTDIR GPU_TAG reduced
#       reduced/zoo20_full.ncu-rep.xz      the first 20 launches, full set (the ingest benchmark's report)
#       reduced/zoo_all_sol.ncu-rep.xz     every launch, --section SpeedOfLight only
#       reduced/zoo_all_basic.ncu-rep.xz   every launch, ncu's default (basic) set
#       reduced/zoo_all_metrics.ncu-rep.xz every launch, a short --metrics list
#       (captures with less evidence, for diagnoses that must say what is missing)
#
# Two steps because each fits one 10-minute device call; the second reuses the first's
# build when the machine is still the same one. Results are packed as OUTDIR/GPU_TAG-STEP.tar.NN
# (parts of at most 15 MiB). Run from the repository root.
set -euo pipefail
out=${1:?usage: device_capture.sh OUTDIR GPU_TAG programs|combined|reduced}
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
reduced)
  [ -d "$work/build" ] || python3 profiles/capture.py --out "$work" --build-only
  mkdir -p "$work/reduced"
  every_program='for b in "$0"/build/*; do if [ -f "$b" ] && [ -x "$b" ]; then "$b" --profile > /dev/null; fi; done'
  common=(--clock-control none --target-processes all -f)
  "$ncu" "${common[@]}" --set full --import-source yes --launch-count 20 -o "$work/reduced/zoo20_full" bash -c "$every_program" "$work"
  "$ncu" "${common[@]}" --section SpeedOfLight -o "$work/reduced/zoo_all_sol" bash -c "$every_program" "$work"
  "$ncu" "${common[@]}" -o "$work/reduced/zoo_all_basic" bash -c "$every_program" "$work"
  "$ncu" "${common[@]}" --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,smsp__inst_executed.sum \
    -o "$work/reduced/zoo_all_metrics" bash -c "$every_program" "$work"
  xz -T0 -9 -f "$work"/reduced/*.ncu-rep
  tar -C "$work" -cf - reduced | split -b 15M -d - "$out/$gpu-reduced.tar."
  ;;
*)
  echo "unknown step $step" >&2
  exit 2
  ;;
esac
ls -la "$out"
