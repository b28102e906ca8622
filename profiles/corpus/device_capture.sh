#!/usr/bin/env bash
# Capture the corpus's PyTorch cases on one GPU machine, ready to commit under
# profiles/corpus/<gpu>/ (run from the repository root; the outputs land in OUTDIR):
#
#   bash profiles/corpus/device_capture.sh OUTDIR GPU_TAG time
#       times_GPU_TAG.json     per kernel: isolated cold-L2 and back-to-back CUPTI durations,
#                              launch configuration; per call: CUDA-event times; device facts
#   bash profiles/corpus/device_capture.sh OUTDIR GPU_TAG profile I N
#       GPU_TAG_partI.ncu-rep.xz  `ncu --set full --import-source yes` of one call of every N-th
#                              case from I, each inside an NVTX range named by its case id
#       GPU_TAG_partI.json     the cases profiled, in order, and those that failed
#       GPU_TAG_partI.log      ncu's and the script's output
#   bash profiles/corpus/device_capture.sh OUTDIR GPU_TAG profile NAME CASES_FILE
#       the same for the case ids listed in CASES_FILE (GPU_TAG_partNAME.*)
#   (NCU_SECTIONS=model in the environment: a smaller section list instead of --set full)
#
# Split into parts so that each fits one 10-minute device call. ncu runs with
# --clock-control none: the lent GPUs' clocks must not be changed, so kernels run at the
# default (boost) clocks in both timing and profiling; no base-clock capture is made.
set -euo pipefail
out=${1:?usage: device_capture.sh OUTDIR GPU_TAG time|profile I N}
gpu=${2:?GPU tag (h100, h200)}
step=${3:?time|profile}
here=$(dirname "$0")
export TORCHINDUCTOR_CACHE_DIR=/tmp/corpus_inductor_cache PYTHONUNBUFFERED=1
mkdir -p "$out"
case "$step" in
time)
  python3 "$here/capture_torch.py" time --out "$out/times_$gpu.json"
  ;;
profile)
  part=${4:?part index or name}; parts=${5:?part count or a file of case ids}
  if [ -f "$parts" ]; then selection=(--cases-file "$parts"); else selection=(--part "$part/$parts"); fi
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  work=$(mktemp -d)
  # NCU_SECTIONS=model: the sections keet's rules and the model read, without the source
  # counters, PM sampling and roofline charts (a tenth of the size; the H200 capture, which
  # the 60 MB budget of the corpus cannot hold at --set full)
  if [ "${NCU_SECTIONS:-full}" = model ]; then
    sections=(); for s in SpeedOfLight LaunchStats Occupancy ComputeWorkloadAnalysis InstructionStats MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables SchedulerStats WarpStateStats WorkloadDistribution; do sections+=(--section "$s"); done
  else
    sections=(--set full)
  fi
  "$ncu" "${sections[@]}" --import-source yes --clock-control none --profile-from-start off --nvtx \
    --target-processes all -f -o "$work/${gpu}_part$part" \
    python3 "$here/capture_torch.py" profile "${selection[@]}" --out "$out/${gpu}_part$part.json" > "$out/${gpu}_part$part.log" 2>&1 \
    || { tail -n 30 "$out/${gpu}_part$part.log"; exit 1; }
  grep -c '==PROF== Profiling' "$out/${gpu}_part$part.log" | sed 's/^/kernels profiled: /'
  "$ncu" --version | tail -n 1 > "$out/ncu_version.txt"
  xz -T0 -9 -c "$work/${gpu}_part$part.ncu-rep" > "$out/${gpu}_part$part.ncu-rep.xz"
  ls -la "$out"
  ;;
*) echo "unknown step $step" >&2; exit 2 ;;
esac
