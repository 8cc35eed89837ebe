#!/bin/bash
# Every lesson, solution and exercise notebook (nbval-lax) on a machine with a CUDA GPU, run twice in
# parallel with the machine's own torch: once with the GPU visible (the lessons' cuda paths) and once
# with it hidden (the same torch on the CPU), so a failure on the GPU alone is a cuda-path failure.
#
#   bash tests/device/run_lessons_on_gpu.sh [OUT]      # run from the repository's root
#
# The machine's python3 needs torch, pytest, pytest-xdist and pytest-timeout; the course's kernel
# packages (nbval, ipykernel, ipywidgets, nbclient, ...) come from wheels in .whl/ when that folder
# exists (a machine with no registry), else they must be installed. Logs and a summary go to OUT
# (default: ./gpu-run).
set -u
OUT=${1:-${OUT:-gpu-run}}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
unset MPLBACKEND MPS_DETECTIVE_DEVICE  # the learner's path: the device the course picks
export HOME=${HOME:-/tmp/home} OMP_NUM_THREADS=2
{ nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, sys; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
} > "$OUT/env.txt" 2>&1
run() { name=$1; shift; export MPS_DETECTIVE_HOME=/tmp/mdhome-$name
  timeout 400 python3 -m pytest -p no:cacheprovider -q -n 5 --dist loadfile --nbval-lax --nbval-current-env \
    --nbval-cell-timeout 180 -rfE "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?" >> "$OUT/summary.txt"; }
(export CUDA_VISIBLE_DEVICES=; run cpu notebooks solutions) &
run cuda notebooks solutions exercises &
wait
cat "$OUT/env.txt" "$OUT/summary.txt"
grep -h -E "passed|failed" "$OUT/cpu.log" "$OUT/cuda.log" | tail -2
! grep -q "rc=[^0]" "$OUT/summary.txt"
