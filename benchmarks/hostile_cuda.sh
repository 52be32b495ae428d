#!/usr/bin/env bash
# The hostile suite on CUDA, where workers run without namespaces and Landlock (the driver
# fails under them): what contains them there is the cgroups, a uid of their own and the
# seccomp filter. Run from the repo root on the GPU machine, as root (as the H200 runs):
#   bash benchmarks/hostile_cuda.sh
# Log: $OUT/hostile_cuda.log (device files' modes, then pytest's summary with failures).
set -uo pipefail
OUT=${OUT:-/tmp/kdiff-out}
mkdir -p "$OUT"
bash benchmarks/gpu_session.sh  # setup only (installs kdiff once per machine)
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
{
  id; uname -r; ls -l /dev/nvidia* 2>&1
  grep -E "memory|pids|^0::" /proc/self/cgroup
} 2>&1 | tee "$OUT/hostile_cuda.log"
KDIFF_TEST_DEVICE=cuda timeout -s INT -k 30 "${T_HOSTILE:-480}" python3 -m pytest -q \
  -p no:cacheprovider -rfEs --tb=short tests/test_hostile.py tests/test_containment.py \
  2>&1 | tee -a "$OUT/hostile_cuda.log" | tail -n 80
