#!/usr/bin/env bash
# One script for a lent-GPU session: sets up kdiff on the device machine, then runs the
# phases named on the command line, each logged under $OUT. Usage (from the repo root):
#   bash benchmarks/gpu_session.sh setup tests calibrate gdn cost audit
# Everything printed goes to $OUT/session.log; artifacts (at most 7 more files, the device
# tool's limit is 8) are the calibration JSON and plot, the cost JSON, the audit store and
# reports. Carried folders: .whl (fla-core wheel), .audit (fetched public runs; never committed).
set -uo pipefail
OUT=${OUT:-/tmp/kdiff-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
export KDIFF_CACHE=/tmp/kdiff-cache TORCH_EXTENSIONS_DIR=/tmp/torch-ext
log() { echo "== $(date +%T) $*" | tee -a "$OUT/session.log"; }

setup() {
  log setup
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee -a "$OUT/session.log"
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee -a "$OUT/session.log"
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  fi
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -n 2
  kdiff gates | tee -a "$OUT/session.log"
}

tests() {
  log "tests (GPU-marked and the CUDA paths)"
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider 2>&1 | tee -a "$OUT/session.log" | tail -n 25
}

calibrate() {
  log "calibrate on cuda"
  timeout 420 kdiff calibrate --device cuda --json "$OUT/calibrate_cuda.json" \
    --plot "$OUT/calibrate_cuda.png" 2>&1 | tee -a "$OUT/session.log" | tail -n 60
}

gdn() {
  log "GDN benchmark"
  timeout 420 python3 benchmarks/gdn_bench.py 2>&1 | tee -a "$OUT/session.log" | tail -n 40
}

cost() {
  log "verifier cost against the native check"
  timeout 300 python3 benchmarks/cost.py --device cuda --json "$OUT/cost.json" 2>&1 \
    | tee -a "$OUT/session.log" | tail -n 40
}

audit() {
  log "audit: public runs of generated kernels"
  local budget=${AUDIT_SECONDS:-500}
  timeout "$budget" kdiff run --bench kernelbench --root .audit/kbf --runs .audit/kbf/best_agent_solutions \
    --level 1 --device cuda --jobs 4 --store "$OUT/audit.sqlite" --fail-on never \
    --json "$OUT/audit_kbf_l1.json" --markdown "$OUT/audit_kbf_l1.md" 2>&1 | tee -a "$OUT/session.log" | tail -n 40
}

setup
for phase in "$@"; do
  [ "$phase" = setup ] && continue
  "$phase"
done
log done
