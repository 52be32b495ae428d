#!/usr/bin/env bash
# The H200 runs of docs/training.md, one phase per device call (each under 8 minutes):
#   bash examples/train/h200.sh family gdn     # ours, ours-again, ref, ours-seed1: ~100M model
#   bash examples/train/h200.sh family simple_gla | gla | kda | mamba3
#   bash examples/train/h200.sh families gdn simple_gla gla kda   # side by side, one call
#   bash examples/train/h200.sh others gdn     # the runs after an earlier call's first run
#   T_RUN=420 bash examples/train/h200.sh together gla kda   # each member's 4 runs at once
#   bash examples/train/h200.sh big ours       # 1.1B GDN on our kernels (resumes when warm)
#   bash examples/train/h200.sh big fla        # the same model on fla's kernels: tokens/s
# Runs live in $RUNS (/tmp/train-runs: a warm machine keeps /tmp between calls, so the 1.1B
# run resumes from its checkpoint there); logs, summaries and figures come back in $OUT/train.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/train-out}
RUNS=${RUNS:-/tmp/train-runs}
REF=${REF:-fla}               # the reference mixer: fla, or torch (chunked PyTorch); mamba3
                              # always takes torch (fla has no Mamba-3)
STEPS=${STEPS:-300}           # ~100M runs: steps planned (the first run stops at T_RUN seconds)
T_RUN=${T_RUN:-60}            # seconds of the first ~100M run (4 runs, fla's autotuning, setup)
T_AUTOTUNE=${T_AUTOTUNE:-240}  # more seconds for the reference run: fla autotunes at step 0
T_BIG=${T_BIG:-330}           # seconds of the 1.1B run in this call (then a ~13 GB checkpoint:
                              # keep BUDGET 60 s above it, or the run dies writing it)
WARMUP=${WARMUP:-50} CONFIG=${CONFIG:-100m} BATCH=${BATCH:-8} SEQ_LEN=${SEQ_LEN:-2048}
PYTHON=${PYTHON:-python3}
BUDGET=${BUDGET:-450}         # seconds for this call's runs; each is killed at what is left
SETUP=${SETUP:-1}             # 0: no installs (the CPU demonstration in docs/training.md)
mkdir -p "$OUT" "$RUNS"
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
DEADLINE=$(($(date +%s) + BUDGET))
# a run killed at the deadline keeps its log (flushed every step); 20 s are kept for the rest
train() {
  local left=$((DEADLINE - $(date +%s) - 20))
  if [ "$left" -le 0 ]; then echo "no time left for: $*" >&2; return 124; fi
  timeout -k 5 "$left" "$PYTHON" examples/train/train.py --corpus-cache /tmp/train-corpus "$@"
}

setup() {
  { [ "$SETUP" = 0 ] || [ -f /tmp/train-setup-done ]; } && return
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  fi
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -n 2
  nvidia-smi --query-gpu=name,memory.total --format=csv
  touch /tmp/train-setup-done
}

family_args() {  # $1: the member
  echo "--family $1 --config $CONFIG --steps $STEPS --batch-size $BATCH --seq-len $SEQ_LEN" \
    "--lr 1e-3 --warmup $WARMUP --eval-every 50 --checkpoint-every 100000"
}

family() {  # $1: gdn | simple_gla | gla | kda | mamba3
  local f=$1
  rm -rf "$RUNS/$f-"*
  train $(family_args "$f") --mixer-impl ours --seed 0 --time-limit "$T_RUN" \
    --out "$RUNS/$f-ours"
  others "$f"
}

# The three runs beside a member's first (ours-again, the reference, ours at seed 1), in the
# background with the runs' arguments after $1 (the member), $2 (their seconds) and $3 (the
# reference's seconds more); the caller waits for them. Mamba-3's reference is always the
# chunked PyTorch: fla has none.
beside() {
  local f=$1 limit=$2 extra=$3 ref=$REF
  shift 3
  [ "$f" = mamba3 ] && ref=torch
  train "$@" --mixer-impl ours --seed 0 --time-limit "$limit" --out "$RUNS/$f-ours-again" &
  train "$@" --mixer-impl "$ref" --seed 0 --time-limit $((limit + extra)) --out "$RUNS/$f-ref" &
  train "$@" --mixer-impl ours --seed 1 --time-limit "$limit" --out "$RUNS/$f-ours-seed1" &
}
compared() {  # $1: the member, once its runs have ended
  $PYTHON examples/train/compare.py --runs "$RUNS" --out "$RUNS/figures-$1" --families "$1"
}
# the other three runs of a member after its first run ($RUNS/<member>-ours): each runs
# exactly as many steps as the first reached in its time, same schedule, and is also stopped
# at T_RUN + 60 s (compilation); fla's first step autotunes its forward and backward kernels
# (127 s for GDN on the H200), so the reference gets T_AUTOTUNE more. compare.py judges the
# steps all four logged, once past the warm-up.
others() {
  local f=$1 reached
  reached=$(cat "$RUNS/$f-ours/log.jsonl" 2>/dev/null | wc -l)
  [ "$reached" -gt 0 ] || { echo "$f: the first run logged no step" >&2; return 1; }
  # shellcheck disable=SC2046
  beside "$f" $((T_RUN + 60)) "$T_AUTOTUNE" $(family_args "$f") --until "$reached"
  wait
  compared "$f"
}
# a member's four runs started at once, for a member too slow for `family` in one call (our
# GLA and KDA): ours stops at T_RUN (or STEPS), the other three run the same schedule for 60 s
# more, so that they cover the steps ours logged.
together() {  # $1: the member; BUDGET: at least T_RUN + 100
  local f=$1
  rm -rf "$RUNS/$f-"*
  # shellcheck disable=SC2046
  train $(family_args "$f") --mixer-impl ours --seed 0 --time-limit "$T_RUN" --out "$RUNS/$f-ours" &
  # shellcheck disable=SC2046
  beside "$f" $((T_RUN + 60)) 0 $(family_args "$f")
  wait
  compared "$f"
}
big() {  # $1: ours | fla, each in its own call (fla's backward autotunes for minutes)
  local common="--family gdn --config 1.1b --steps 2000 --batch-size 8 --seq-len 2048"
  common+=" --lr 3e-4 --warmup 100 --eval-every 100 --checkpoint-every 200"
  train $common --mixer-impl "$1" --time-limit "$T_BIG" --out "$RUNS/gdn-1b-$1"
  if [ -d "$RUNS/gdn-1b-ours" ] && [ -d "$RUNS/gdn-1b-fla" ]; then
    $PYTHON examples/train/compare.py --runs "$RUNS" --out "$RUNS/figures-1b" --families none \
      --throughput "$RUNS/gdn-1b-ours" "$RUNS/gdn-1b-fla"
  fi
}

setup
case "${1:-}" in
  family) family "$2" ;;
  others) others "$2" ;;  # the three runs after a first run carried in $RUNS
  # several members side by side on the one GPU (their tokens/s are then not comparable)
  families) shift; for f in "$@"; do family "$f" > "$RUNS/family-$f.log" 2>&1 & done; wait
    cat "$RUNS"/family-*.log ;;
  # several members' runs all at once (their tokens/s are then not comparable)
  together) shift; for f in "$@"; do together "$f" > "$RUNS/together-$f.log" 2>&1 & done; wait
    cat "$RUNS"/together-*.log ;;
  big) big "$2" ;;
  *) echo "usage: $0 family <member> | families <member>... | together <member>... | big <ours|fla>" >&2; exit 2 ;;
esac
# everything but checkpoints comes back
tar czf "$OUT/train.tgz" --exclude='*.pt' --exclude='*.tmp' -C "$RUNS" .
