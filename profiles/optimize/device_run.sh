#!/bin/bash
# One device call: probe the machine, check the planted kernels, tune the optimize problems.
# Usage (on the GPU machine, repository root): bash profiles/optimize/device_run.sh "PROBLEMS" [PLANTED]
# Results go to $OUT/optimize.tar.xz (run folders without scratch) and $OUT/summary.txt.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
PROBLEMS=${1:-"transpose gather small_grid occupancy_regs sgemm"}
PLANTED=${2:-yes}
RUNS=/tmp/optimize-runs
mkdir -p $RUNS
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 --version; which nvcc ncu; nvcc --version | tail -1; ncu --version | tail -1
  for m in click numpy pandas scipy matplotlib jinja2 ncu_report; do
    python3 -c "import $m; print('$m', getattr($m, '__version__', 'present'))" 2>/dev/null || echo "$m MISSING"
  done
} > $RUNS/environment.txt 2>&1
cat $RUNS/environment.txt
if [ "$PLANTED" = yes ]; then
  for f in tests/data/optimize/planted/*.cu; do
    name=$(basename $f .cu)
    timeout 120 python3 -m keet.optimize $f --kernel scale_kernel --reference tests/data/optimize/reference.cu \
      --problem tests/data/optimize/problem.toml --rounds 0 --no-profile --out $RUNS/planted/$name > $RUNS/planted-$name.log 2>&1
    python3 - $RUNS/planted/$name/run.json $name <<'PY' | tee -a $RUNS/planted.txt
import json, sys
try:
    c = json.load(open(sys.argv[1]))["candidates"][0]
    print(f"{sys.argv[2]:20s} {c['status']:9s} failed_stage={c['failed_stage']}  {c['reason'][:150]}")
except Exception as exc:
    print(f"{sys.argv[2]:20s} NO RESULT ({exc})")
PY
  done
fi
for p in $PROBLEMS; do
  d=profiles/optimize/$p
  kernel=$(python3 -c "import tomllib;print(tomllib.load(open('$d/problem.toml','rb'))['kernel'])")
  timeout ${PROBLEM_TIMEOUT:-400} python3 -m keet.optimize $d/kernel.cu --kernel $kernel --reference $d/reference.cu --rounds 8 \
    --out $RUNS/$p > $RUNS/$p.log 2>&1
  echo "== $p (exit $?)"; tail -4 $RUNS/$p.log
done 2>&1 | tee $RUNS/summary.txt
cp $RUNS/summary.txt $RUNS/environment.txt $OUT/ 2>/dev/null
[ -f $RUNS/planted.txt ] && cp $RUNS/planted.txt $OUT/
tar -C $RUNS -cJf $OUT/optimize.tar.xz --exclude=scratch .
ls -la $OUT
