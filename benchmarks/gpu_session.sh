#!/usr/bin/env bash
# One script for a lent-GPU session: sets up kdiff on the device machine, then runs the
# phases named on the command line, each under its own time budget (seconds, from the
# environment: T_TESTS, T_CAL, T_COST, T_GDN, T_ALT, T_PROFILE, T_GDN_GATES, T_AUDIT, T_TB, T_CUDA,
# T_FLA, T_HOSTILE, T_HONEST, T_GPUMODE, T_GPUMODE_GDN, T_TP, T_M3_CHECK, T_M3_BENCH,
# T_M3_PROFILE, T_M3_SANITIZE, T_FIRST, T_PRECISION, T_PROV, T_TUNE, T_CAP, T_CUDA_CODE; the training runs keep h200.sh's BUDGET),
# logged to $OUT/session.log.
# Usage (from the repo root):
#   bash benchmarks/gpu_session.sh tests calibrate cost        # one device call
#   bash benchmarks/gpu_session.sh gdn audit tritonbench       # the next
#   bash benchmarks/gpu_session.sh cudapaths                   # CUDA C++ (load_inline) candidates
#   bash benchmarks/gpu_session.sh mamba3_gates mamba3_bench    # kernels/mamba3 (carry .fetched/mamba)
#   TRAIN="big fla" bash benchmarks/gpu_session.sh train        # examples/train/h200.sh's phases
#   bash benchmarks/gpu_session.sh tune                         # kdiff tune on kernels/gdn
# Artifacts (JSON, plots, Markdown, the audit store) are packed after every phase into
# $OUT/artifacts.tgz, since the device tool returns at most 8 files.
# Carried folders: .whl (the fla-core wheel), .audit (fetched public runs; never committed):
#   .audit/kbf  KernelBenchFiltered checkout       .audit/yh  yenhao-huang/KernelBench (KernelBench/, runs/)
#   .audit/tb   TritonBench (data/, LLM_generated/)
set -uo pipefail
OUT=${OUT:-/tmp/kdiff-out}
ART=/tmp/kdiff-artifacts
JOBS=${JOBS:-8}  # judges sharing the one GPU (16 cores on the H200 machine)
# ART holds this device call's artifacts. A warm machine keeps /tmp between calls while each
# call empties $OUT, so the call's first invocation (no session.log yet) starts ART afresh:
# otherwise an earlier call's logs and JSON were packed again as this call's (a benchmark-only
# call returned the call before's gdn_spot verdicts and A/B JSON), and gdn_spot's summary
# reads every gdn_spot_*.log in ART.
[ -f "$OUT/session.log" ] || rm -rf "$ART"
mkdir -p "$OUT" "$ART"
export PYTHONUNBUFFERED=1 KDIFF_CACHE=/tmp/kdiff-cache TORCH_EXTENSIONS_DIR=/tmp/torch-ext
log() { echo "== $(date +%T) $*" | tee -a "$OUT/session.log"; }
# The audit store lives in the carried .audit folder, so the next device call resumes from it
# (copy artifacts' audit.sqlite back to .audit/ on the machine that calls the device).
STORE=${STORE:-.audit/audit.sqlite}
pack() { [ -f "$STORE" ] && cp "$STORE" "$ART/"; tar czf "$OUT/artifacts.tgz" -C "$ART" . 2>/dev/null; }
run_logged() { "$@" 2>&1 | tee -a "$OUT/session.log" | tail -n 60; }
# A kdiff run past its budget gets SIGINT: it reports (and stores) the kernels judged so far.
budget() { timeout -s INT -k 30 "$@"; }

setup() {
  # Once per machine: a second invocation in the same device call skips the installs.
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  if [ -f /tmp/kdiff-setup-done ]; then log "setup: done earlier on this machine"; return; fi
  log setup
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee -a "$OUT/session.log"
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee -a "$OUT/session.log"
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  fi
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -n 2
  kdiff gates | tee -a "$OUT/session.log"
  touch /tmp/kdiff-setup-done
}

tests() {  # TESTS: a subset (pytest node ids or -k ...); all GPU-marked tests by default
  log "tests: GPU-marked ${TESTS:-}"
  # SIGINT at the budget: pytest stops and still prints its summary (failures included)
  # shellcheck disable=SC2086
  run_logged budget "${T_TESTS:-150}" python3 -m pytest -q -m gpu -p no:cacheprovider -rfEs \
    --tb=short --junitxml="$ART/tests_gpu.xml" ${TESTS:-}
  pack
}

calibrate() {
  log "calibrate on cuda ($JOBS judges)"
  run_logged timeout "${T_CAL:-330}" kdiff calibrate --device cuda --jobs "$JOBS" \
    --json "$ART/calibrate_cuda.json" --plot "$ART/calibrate_cuda.png"
  pack
}

cost() {
  log "verifier cost against the native check"
  # KernelBenchFiltered's CUDA (load_inline) solutions, then the corpus's Triton controls on
  # the same upstream problems (full level-1 sizes). Kernels run in discovery order (by
  # problem id); the matmul (problem 1, 47 s of gates) is left out.
  run_logged budget "${T_COST:-120}" python3 benchmarks/cost.py --device cuda \
    --problems 19,23,36,38,40,47,88 --json "$ART/cost.json"
  run_logged budget "${T_COST:-120}" python3 benchmarks/cost.py --device cuda \
    --runs kernels/runs/controls --problems 19,36,38 --json "$ART/cost_triton.json"
  # --profile quick, the cheap screen (issue 30: at most 1.5x the native check)
  run_logged budget "${T_COST:-120}" python3 benchmarks/cost.py --device cuda --profile quick \
    --problems 19,23,36,38,40,47,88 --json "$ART/cost_quick.json"
  pack
}

cost_profile() {  # where a verdict's time goes on CUDA: benchmarks/cost.py under py-spy (carry
  # .whl2, its wheel), judge and workers sampled; COST_PROFILE_ARGS picks the kernels
  log "cost under py-spy: ${COST_PROFILE_ARGS:=--runs kernels/runs/controls --problems 19}"
  python3 -m pip install -q --no-index --no-deps --target /tmp/spy .whl2/*.whl
  # shellcheck disable=SC2086
  run_logged budget "${T_COST:-120}" /tmp/spy/bin/py-spy record -r 250 --subprocesses -f raw \
    -o "$ART/cost_profile.raw" -- python3 benchmarks/cost.py --device cuda $COST_PROFILE_ARGS \
    --json "$ART/cost_profile.json"
  pack
}

oracle_contention() {  # the float64 oracle of a sequential reference, 1 and N processes on
  # one GPU (benchmarks/oracle_contention.py); CONTENTION_TREE: another kdiff tree to time
  # (an unmerged branch exported there), CONTENTION_ARGS its flags, under T_CONTENTION (240 s)
  local tree=${CONTENTION_TREE:-.}
  log "oracle contention, kdiff from $tree: ${CONTENTION_ARGS:=--procs 1,8 --trusting}"
  # shellcheck disable=SC2086
  PYTHONPATH=$tree${PYTHONPATH:+:$PYTHONPATH} run_logged budget "${T_CONTENTION:-240}" \
    python3 "$tree/benchmarks/oracle_contention.py" --devices cuda \
    --problem kernels/mamba3/kernelbench/KernelBench/level3/1_Mamba3SISO.py $CONTENTION_ARGS
}

throughput_gpu() {  # issue 30: kernels judged an hour on one GPU at --max-elements 2^20, the
  # real command into a fresh store per file; TP_FILES are TritonBench-T answer files in
  # .audit/tbs, a slim copy of a checkout (.audit/tb is over the 64 MiB a call carries):
  #   mkdir -p .audit/tbs/data && cp -r .audit/tb/data/TritonBench_T_v1* .audit/tbs/data/ &&
  #   cp .audit/tb/LLM_generated/Bench_T_general_purpose/output_{gpt-4o,claude-3-5-sonnet-20240620}.jsonl .audit/tbs/
  # The first file pays the gold tests' recording, the next reads it from the cache (the
  # steady rate of an audit). `all` names every answer file in .audit/tbs, in one command.
  local f start report generated
  for f in ${TP_FILES:-output_claude-3-5-sonnet-20240620 output_gpt-4o}; do
    log "throughput: $f, $JOBS judges"
    report=$ART/throughput_$f.json start=$(date +%s.%N) generated=.audit/tbs/$f.jsonl
    [ "$f" = all ] && generated=.audit/tbs
    # What the machine runs, every 10 s: the busiest processes, and how many there are
    ( while sleep 10; do date +%T; ps -eo pid,ppid,uid,stat,etimes,pcpu,rss,args --sort=-pcpu \
        | cut -c1-160 | head -n 25; echo "processes: $(ps -e --no-headers | wc -l)"; done \
      > "$ART/ps_$f.log" 2>&1 ) & local sampler=$!
    run_logged budget "${T_TP:-100}" kdiff run --bench tritonbench --root .audit/tbs \
      --generated "$generated" --device cuda --jobs "$JOBS" --fail-on never \
      --max-elements 1048576 --store "$ART/throughput_$f.sqlite" --json "$report"
    python3 - "$report" "$start" "$(date +%s.%N)" <<'PY' | tee -a "$OUT/session.log"
import json, sys
kernels = json.load(open(sys.argv[1]))["kernels"]
seconds = float(sys.argv[3]) - float(sys.argv[2])
print(f"throughput {sys.argv[1]}: {len(kernels)} kernels in {seconds:.1f} s, "
      f"{3600 * len(kernels) / seconds:.0f} an hour (wall clock, the command's start included)")
PY
    kill "$sampler" 2>/dev/null
  done
  pack
}

first_call() {  # a case's first seconds in its worker on CUDA: start, build, recorded calls
  log "first call: 1 and $JOBS workers at once, recorded, then unrecorded"
  run_logged budget "${T_FIRST:-120}" python3 benchmarks/first_call.py --device cuda \
    --jobs "1,$JOBS" --json "$ART/first_call.json"
  run_logged budget "${T_FIRST:-120}" python3 benchmarks/first_call.py --device cuda \
    --jobs "$JOBS" --unrecorded --json "$ART/first_call_unrecorded.json"
  pack
}

gdn() {  # GDN_ARGS: extra gdn_bench.py flags (e.g. --shapes 1x8192x96 --state-bv 64);
  # GDN_LAUNCH: launch settings chosen by an earlier gdn_profile --sweep in this call
  # (/tmp/kdiff-artifacts/gdn_chosen.json), applied to the current kernels only
  log "GDN benchmark ${GDN_ARGS:-} ${GDN_LAUNCH:+launch settings from $GDN_LAUNCH}"
  # shellcheck disable=SC2086
  OUT=$ART run_logged timeout "${T_GDN:-240}" python3 benchmarks/gdn_bench.py \
    ${GDN_LAUNCH:+--launch "$GDN_LAUNCH"} ${GDN_ARGS:-}
  pack
}

gdn_ab() {  # the current kernels against a baseline: AB_OLD holds older copies of kernels/gdn files
  # (e.g. `git show REV:kernels/gdn/chunk.py > .ab/chunk.py`, `.ab` carried); the baseline is
  # timed by swapping them in, without fla (PYTHONPATH without its wheel) and without checks
  local f kept=/tmp/kdiff-ab-current
  GDN_ARGS="--fla-forward-only ${GDN_ARGS:-}" gdn
  mv "$ART"/gdn_bench_bv*.json "$ART/gdn_bench_current.json"
  mkdir -p "$kept"
  for f in "${AB_OLD:-.ab}"/*.py; do cp "kernels/gdn/$(basename "$f")" "$kept/" && cp "$f" kernels/gdn/; done
  log "GDN benchmark, baseline files: $(ls "${AB_OLD:-.ab}" | tr '\n' ' ')"
  PYTHONPATH= OUT=$ART run_logged timeout "${T_GDN:-240}" python3 benchmarks/gdn_bench.py --skip-check ${GDN_ARGS:-}
  mv "$ART"/gdn_bench_bv*.json "$ART/gdn_bench_baseline.json"
  cp "$kept"/*.py kernels/gdn/
  pack
}

provenance() {  # issue 29: did each kernel compute its answer itself (device time, streams)
  log "provenance: GPU tests (own by device time, a side-stream hack left outstanding)"
  run_logged budget "${T_PROV:-300}" python3 -m pytest -q -m "gpu or not gpu" -p no:cacheprovider \
    -rfEs tests/test_provenance.py -k "cuda or four_states or worker"
  # The shipped corpus on CUDA, one cheap gate: provenance comes from the native check's calls.
  log "provenance: the shipped corpus"
  run_logged budget "${T_PROV:-300}" kdiff run --bench kernelbench --device cuda --jobs "$JOBS" \
    --gates ORD-02 --fail-on never --json "$ART/provenance_corpus.json" \
    --markdown "$ART/provenance_corpus.md"
  provenance_table "$ART/provenance_corpus.json"
  pack
}

provenance_table() {  # one line per kernel of a JSON report: verdict, library share, top kernels
  python3 - "$1" <<'PY' | tee -a "$OUT/session.log"
import json, sys
report = json.load(open(sys.argv[1]))
print(sys.argv[1], json.dumps(report["summary"]["provenance"]))
for k in report["kernels"]:
    p = k.get("provenance") or {}
    top = ", ".join(f"{x['name'][:50]} {x['origin']} {x['seconds']}" for x in p.get("kernels", [])[:3])
    print(k["id"], k.get("native_accept"), p.get("verdict"), p.get("library_share"), p.get("outstanding"), top)
PY
}

gdn_spot() {  # GDN_SPOT_GATES (default EXC-01,ORD-02) on each of GDN_PROBLEMS at once, in
  # GDN_SPOT_DTYPES (default float32). The files are named by problem and gates, so spots of
  # other gates may run beside this one (e.g. CMP-03 beside the PRC gates); run
  # `gpu_session.sh setup` first, so the concurrent invocations neither install at once nor
  # empty each other's ART.
  local p gates=${GDN_SPOT_GATES:-EXC-01,ORD-02} name
  for p in ${GDN_PROBLEMS:-1}; do
    name="gdn_spot_${p}_$(echo "$gates" | tr -d '-' | tr ',' '_' | tr 'A-Z' 'a-z')"
    log "kdiff verify on cuda: kernels/gdn problem $p, gates $gates"
    budget "${T_GDN_GATES:-200}" kdiff verify --device cuda --fail-on never \
      --gates "$gates" --dtypes "${GDN_SPOT_DTYPES:-float32}" \
      --problem "$(gdn_problem "$p")" \
      --candidate "kernels/gdn/kernelbench/runs/chunked/level_3_problem_${p}_sample_0_kernel.py" \
      --json "$ART/$name.json" >"$ART/$name.log" 2>&1 &
  done
  wait
  tail -n 25 "$ART"/gdn_spot_*.log | tee -a "$OUT/session.log"
  pack
}

gdn_alt() {  # where the in-scan P^T dO backward raised an illegal memory access
  log "GDN backward settings, one child each, launches blocking"
  run_logged timeout "${T_ALT:-200}" python3 benchmarks/gdn_alt_probe.py --memcheck
  pack
}

gdn_profile() {  # per-kernel device times, ours beside fla's; PROFILE_ARGS e.g. --sweep
  log "GDN profile ${PROFILE_ARGS:-}"
  # shellcheck disable=SC2086
  OUT=$ART run_logged timeout "${T_PROFILE:-200}" python3 benchmarks/gdn_profile.py ${PROFILE_ARGS:-}
  pack
}

gdn_bv64() {  # the wider state scan prepared for the large-H shapes
  GDN_ARGS="${GDN_ARGS:-} --state-bv 64 --state-fwd-warps 8" gdn
}

spot() {  # single kernels whose CUDA behaviour a phase above could not show
  log "spot check: the one-pass variance (ORD-01 misses it on CUDA, catches it on the CPU)"
  run_logged timeout "${T_SPOT:-90}" kdiff verify --device cuda --fail-on never --gates ORD-01,PRC-03 \
    --problem kernels/KernelBench/level1/9_Var_reduction_over_a_dimension.py \
    --candidate kernels/runs/redteam/level_1_problem_9_sample_0_kernel.py --json "$ART/spot_9_0.json"
  run_logged timeout "${T_SPOT:-90}" python3 benchmarks/ord01_probe.py --device cuda \
    --problem kernels/KernelBench/level1/9_Var_reduction_over_a_dimension.py \
    --candidate kernels/runs/redteam/level_1_problem_9_sample_0_kernel.py
  pack
}

cudapaths() {  # CUDA candidates: extension resources (RES-02), flush to zero (EXC-02)
  log "cudapaths: cuobjdump $(command -v cuobjdump || echo 'not on PATH (CUDA_HOME or Triton copy)')"
  # Three load_inline builds (the resource probe, the IEEE and the fast-math Swish).
  run_logged timeout "${T_CUDA:-480}" python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/test_extension_resources.py tests/test_gate_res02.py
  local sample
  # Expected: the native check accepts all three; both red-team kernels (fast-math CUDA,
  # inline mul.ftz Triton) fail EXC-02 with subnormal_flushed; the control passes every gate.
  for sample in redteam/level_1_problem_41_sample_1 redteam/level_1_problem_41_sample_2 \
                controls/level_1_problem_41_sample_0; do
    log "cudapaths: kdiff verify $sample"
    run_logged timeout "${T_CUDA:-480}" kdiff verify --device cuda --fail-on never \
      --problem kernels/KernelBench/level1/41_Swish.py \
      --candidate "kernels/runs/${sample}_kernel.py" --json "$ART/cudapaths_${sample//\//_}.json"
  done
  pack
}

# kernels/gdn's KernelBench problem file with id $1 (1 GDN, ..., 5 packed varlen GDN)
gdn_problem() { ls kernels/gdn/kernelbench/KernelBench/level3/"$1"_*.py; }

fla_gates() {  # kdiff's gates on flash-linear-attention's GDN (fp32: its tl.dot precision)
  # FLA_PROBLEMS: kernels/gdn problems (1 fixed-length, 5 packed varlen); FLA_GATES: a subset
  # (fla autotunes at every new shape, and CMP-03/PRC-02 change shapes)
  local p
  for p in ${FLA_PROBLEMS:-1}; do
    log "kdiff verify: fla-core's chunk_gated_delta_rule on GDN problem $p (Hopper guard bypassed)"
    run_logged budget "${T_FLA:-240}" kdiff verify --device cuda --fail-on never \
      ${FLA_GATES:+--gates "$FLA_GATES"} \
      --problem "$(gdn_problem "$p")" \
      --candidate benchmarks/fla_candidates/fla_chunk_gated_delta_rule.py \
      --json "$ART/fla_gates_$p.json"
    pack
  done
}

gdn_gates_one() {  # one problem: CMP-03 beside the other eleven gates
  local p=$1 gates=EXC-01,EXC-02,ORD-02,RES-01,RES-02,CMP-01,CMP-02,ORD-01,PRC-01,PRC-02,PRC-03
  log "kdiff verify on cuda: kernels/gdn problem $p, dtypes float32,float16,bfloat16"
  # every JIT launch over 0.3 s (a compile) of the judges and workers, logged by the probe
  local verify=(env PROBE_LOG="$ART/compiles_$p.log" PYTHONPATH="$PWD/benchmarks/jit_probe:$PYTHONPATH"
                kdiff verify --device cuda --fail-on never --problem "$(gdn_problem "$p")"
                --candidate "kernels/gdn/kernelbench/runs/chunked/level_3_problem_${p}_sample_0_kernel.py")
  budget "${T_GDN_GATES:-400}" "${verify[@]}" --gates CMP-03 \
    --json "$ART/gdn_gates_${p}_cmp03.json" >"$ART/gdn_gates_${p}_cmp03.log" 2>&1 &
  budget "${T_GDN_GATES:-400}" "${verify[@]}" --gates "$gates" \
    --dtypes float32,float16,bfloat16 --json "$ART/gdn_gates_${p}.json" >"$ART/gdn_gates_${p}.log" 2>&1
  wait
  tail -n 40 "$ART/gdn_gates_${p}_cmp03.log" "$ART/gdn_gates_${p}.log" | tee -a "$OUT/session.log"
}

gdn_gates() {  # kdiff's gates on the chunked kernels, compiled, in fp32, fp16 and bf16
  # CMP-03 (33 sizes, 331 s for problem 1 on the H200) runs beside the other eleven gates
  # (355 s), each verify in its own judge and worker, so two cores compile at once. The
  # problems of GDN_PROBLEMS run one after another, or all at once with GDN_PARALLEL=1
  # (two verifies per problem; each judge and worker computes on one CPU thread, and the
  # machine has 16 cores). All five at once no longer fit one call: at 4abd145 the ten
  # verifies compiled slower, and a 490 s budget cut the PRC gates and three CMP-03s; gdn_spot
  # (beside itself, other gates) judges what a budget cut.
  local p
  for p in ${GDN_PROBLEMS:-1}; do
    if [ -n "${GDN_PARALLEL:-}" ]; then gdn_gates_one "$p" & else gdn_gates_one "$p"; fi
  done
  wait
  pack
}

gdn_corpus() {  # CMP-02's three states on the packed varlen problem: the memoised packing plan
  local run
  for run in redteam controls; do
    log "kdiff run on cuda: kernels/gdn/kernelbench/runs/$run, CMP-02"
    run_logged budget "${T_GDN_CORPUS:-200}" kdiff run --bench kernelbench \
      --root kernels/gdn/kernelbench --runs "kernels/gdn/kernelbench/runs/$run" --device cuda \
      --gates CMP-02 --fail-on never --store "$ART/gdn_corpus.sqlite" \
      --json "$ART/gdn_corpus_$run.json"
  done
  pack
}

audit_one() {  # name root runs [level]; AUDIT_GATES: a gate subset (default all twelve)
  local name=${AUDIT_PREFIX:-}$1 root=$2 runs=$3 level=${4:-1}
  log "audit $name: $runs level $level ${AUDIT_GATES:-}"
  # Upstream level-1 inputs reach 4.3e9 elements: judged at sizes scaled to 2^20 elements per
  # input and per reference output (the report lists them), which also bounds host memory.
  run_logged budget "${T_AUDIT:-200}" kdiff run --bench kernelbench --root "$root" --runs "$runs" \
    --level "$level" --device cuda --jobs "$JOBS" --store "$STORE" --fail-on never \
    --max-elements "${MAX_ELEMENTS:-1048576}" ${AUDIT_GATES:+--gates "$AUDIT_GATES"} \
    --json "$ART/audit_$name.json" --markdown "$ART/audit_$name.md"
  pack
}

audit_kbf() { audit_one kbf_l1 .audit/kbf .audit/kbf/best_agent_solutions 1; }
# The run's kernel files are links into runs/ralph_codex_cuda_all/generated_kernels/level_1.
audit_yh() { audit_one yh_codex_l1 .audit/yh .audit/yh/runs/codex_gpt55_retime_l1 1; }
audit() { audit_kbf; audit_yh; }

# TB_FILE: one LLM_generated file (T by default); TB_TAG names its reports.
tritonbench() {
  local file="${TB_FILE:-.audit/tb/LLM_generated/Bench_T_general_purpose/output_claude-3-5-sonnet-20240620.jsonl}"
  log "audit: TritonBench, $file ${AUDIT_GATES:-}"
  run_logged budget "${T_TB:-120}" kdiff run --bench tritonbench --root .audit/tb \
    --generated "$file" \
    --device cuda --jobs "$JOBS" --store "$STORE" --fail-on never ${AUDIT_GATES:+--gates "$AUDIT_GATES"} \
    --json "$ART/audit_${AUDIT_PREFIX:-}${TB_TAG:-tb_t}.json" \
    --markdown "$ART/audit_${AUDIT_PREFIX:-}${TB_TAG:-tb_t}.md"
  pack
}
# TritonBench-G: its gold tests are written for CUDA at their real sizes (on the CPU most do
# not run, or run for minutes in the interpreter): one general-purpose file a call.
tritonbench_g() {
  TB_FILE=".audit/tb/LLM_generated/Bench_G_general_purpose/${TB_G:-output_gpt-4o_simp}.jsonl" \
    TB_TAG="tb_g_${TB_G:-output_gpt-4o_simp}" tritonbench
}

# issue 29 on the audit corpora: provenance comes from the native check's calls and ORD-02's,
# so one cheap gate suffices; the stores, kept apart from the full audits', are carried in
# .audit (copy them back from the artifacts) so that a later call resumes.
prov_kbf() { AUDIT_GATES=ORD-02 AUDIT_PREFIX=prov_ STORE=.audit/prov_kbf.sqlite audit_kbf; provenance_table "$ART/audit_prov_kbf_l1.json"; }
prov_yh() { AUDIT_GATES=ORD-02 AUDIT_PREFIX=prov_ STORE=.audit/prov_yh.sqlite audit_yh; provenance_table "$ART/audit_prov_yh_codex_l1.json"; }
prov_tb() { AUDIT_GATES=ORD-02 AUDIT_PREFIX=prov_ STORE=.audit/prov_tb.sqlite tritonbench; provenance_table "$ART/audit_prov_tb_t.json"; }

capability() {  # what a CUDA worker can do with no capability (benchmarks/capability_probe.py)
  log "capability: CUDA, cuBLAS, Triton, inductor, load_inline as another uid, no capability"
  run_logged timeout "${T_CAP:-180}" python3 benchmarks/capability_probe.py
}

hostile() {  # the hostile suite and the containment tests with --device cuda workers
  log "hostile suite on cuda (uid, seccomp, cgroups; no namespaces or Landlock there)"
  { id; ls -l /dev/nvidia* 2>&1; grep -E "memory|pids|^0::" /proc/self/cgroup; } \
    2>&1 | tee -a "$OUT/session.log"
  KDIFF_TEST_DEVICE=cuda run_logged budget "${T_HOSTILE:-420}" python3 -m pytest -q \
    -p no:cacheprovider -rfEs --tb=short --junitxml="$ART/hostile_cuda.xml" \
    tests/test_hostile.py tests/test_containment.py tests/test_integrity.py
  pack
}

cuda_code() {  # the CPU device's code-written-for-a-GPU pairs (tests/test_cuda_on_cpu.py's
  # PAIRS) judged with CUDA workers: the verdicts the CPU device stands in for
  TESTS="tests/test_cuda_on_cpu.py" T_TESTS="${T_CUDA_CODE:-240}" tests
}

honest() {  # issue 26's honest corpus: KernelBench references as their own candidates
  # (sample 0 torch.compile'd, 1 plain; .audit/kb holds levels 1 and 2 of a checkout), judged
  # on the GPU. HONEST_ARGS narrows it (e.g. --samples 0 --problems 1 5 9).
  log "honest corpus: KernelBench references, levels ${HONEST_LEVELS:-1 2} ${HONEST_ARGS:-}"
  rm -rf /tmp/kb && cp -r .audit/kb /tmp/kb
  # shellcheck disable=SC2086
  run_logged python3 benchmarks/honest_corpus.py --root /tmp/kb --out /tmp/kb/runs/honest \
    --levels ${HONEST_LEVELS:-1 2} ${HONEST_ARGS:-}
  for level in ${HONEST_LEVELS:-1 2}; do
    run_logged budget "${T_HONEST:-240}" kdiff run --bench kernelbench --root /tmp/kb \
      --runs /tmp/kb/runs/honest --level "$level" --device cuda --jobs "$JOBS" \
      --store "$ART/honest.sqlite" --max-elements "${MAX_ELEMENTS:-1048576}" --fail-on never \
      --json "$ART/honest_l$level.json" --markdown "$ART/honest_l$level.md"
  done
  pack
}

gpumode() {  # GPU MODE's labelled solutions (.audit/gpumode: reference-kernels' problems)
  log "GPU MODE labelled solutions: ${GPUMODE_PROBLEMS:-pmpp_v2/*}"
  run_logged budget "${T_GPUMODE:-200}" python3 benchmarks/gpumode_labelled.py \
    --root .audit/gpumode --problems "${GPUMODE_PROBLEMS:-pmpp_v2/*}" --device cuda \
    --jobs "$JOBS" --case-timeout 300 --out "$ART/gpumode"
  pack
}

gpumode_gdn() {  # kernels/gdn as submissions to GPU MODE's helion gated-deltanet problems
  for name in chunk_fwd_h chunk_fwd_o recompute_w_u; do
    log "GPU MODE helion gated_deltanet_${name}_py: kernels/gdn as the candidate"
    run_logged budget "${T_GPUMODE_GDN:-120}" kdiff verify --bench gpumode --device cuda \
      --problem ".audit/gpumode/problems/helion/gated_deltanet_${name}_py" \
      --candidate "benchmarks/gpumode_gdn/${name}.py" --json "$ART/gpumode_gdn_${name}.json"
  done
  pack
}

mamba3() { mamba3_gates; mamba3_bench; }  # issue 31 in one call of at most 6 minutes

# A carried mamba_ssm source checkout (`git archive HEAD mamba_ssm` of state-spaces/mamba)
M3_SRC=${MAMBA_SSM_SRC:-$PWD/.fetched/mamba}

mamba3_gates() {  # kernels/mamba3: kdiff's twelve gates, fp32 and bf16, on problems
  # M3_PROBLEMS (1 2 3) for the candidate sets M3_SETS (triton: ours; mamba_ssm: upstream's
  # kernels, needs MAMBA_SSM_SRC), every gate in a judge of its own, M3_JOBS (14) at once, all
  # within T_M3_CHECK (480 s) from the phase's start: one judge compiles a kernel's every
  # held-out size on one core, so twelve gates one after another outlast a device call.
  # M3_TESTS=1 adds the GPU-marked tests beside them; M3_DEVICE=cpu tries the phase here;
  # M3_GATES narrows the gates (all twelve by default); M3_SKIP names judges an earlier call
  # finished (set_problem_gate, e.g. triton_3_EXC-01).
  local problems=kernels/mamba3/kernelbench/KernelBench/level3
  export M3_END=$(( $(date +%s) + ${T_M3_CHECK:-480} )) M3_RUNS=kernels/mamba3/kernelbench/runs \
    M3_PROBLEM_DIR=$problems M3_SKIP ART MAMBA_SSM_SRC=$M3_SRC
  log "mamba3: gates ${M3_GATES:-all twelve}, one judge each, on problems ${M3_PROBLEMS:-1 2 3} of ${M3_SETS:-triton mamba_ssm}"
  if [ "${M3_TESTS:-0}" = 1 ]; then
    timeout -s INT -k 10 "${T_M3_CHECK:-480}" python3 -m pytest -q -m gpu -p no:cacheprovider \
      -rfEs --tb=short --junitxml="$ART/mamba3_tests.xml" tests/test_mamba3.py \
      tests/test_mamba3_problems.py > "$OUT/mamba3_tests.log" 2>&1 &
  fi
  # The slowest gates first, so that each gets the most of the budget.
  local g s p
  for g in ${M3_GATES:-CMP-03 EXC-01 PRC-02 CMP-01 PRC-01 PRC-03 ORD-01 CMP-02 RES-02 RES-01 ORD-02 EXC-02}; do
    for s in ${M3_SETS:-triton mamba_ssm}; do
      for p in ${M3_PROBLEMS:-1 2 3}; do echo "$s $p $g"; done
    done
  done | xargs -P "${M3_JOBS:-14}" -L 1 bash -c '
    case " ${M3_SKIP:-} " in *" $0_$1_$2 "*) exit 0 ;; esac
    left=$(( M3_END - $(date +%s) - 30 )); [ "$left" -gt 30 ] || exit 0
    timeout -s INT -k 30 "$left" kdiff verify --device "${M3_DEVICE:-cuda}" --fail-on never --gates "$2" \
      --dtypes float32,bfloat16 --problem "$(ls "$M3_PROBLEM_DIR/$1"_*.py)" \
      --candidate "$M3_RUNS/$0/level_3_problem_$1_sample_0_kernel.py" \
      --json "$ART/m3_$0_$1_$2.json" > "$ART/m3_$0_$1_$2.log" 2>&1
    echo "$(date +%T) $0 problem $1 $2: exit $?"' | tee -a "$OUT/session.log"
  wait
  [ -f "$OUT/mamba3_tests.log" ] && tail -n 15 "$OUT/mamba3_tests.log" | tee -a "$OUT/session.log"
  python3 benchmarks/gate_table.py "$ART"/m3_*.json --markdown "$ART/mamba3_gates.md" \
    | tee "$OUT/mamba3_gates.md" >/dev/null
  pack
}

# The timing phases' own Triton cache (compiled kernels and autotuning results), carried from
# one device call to the next: restored from .devcache/bench-triton.tgz (carry .devcache),
# saved as $OUT/bench-triton.tgz (copy it back there). mamba_ssm's backward autotunes for
# minutes at a new shape. Only the timing commands run with it (BENCH_ENV): the judges'
# environment stays as it was.
BENCH_TRITON=/tmp/bench-triton
BENCH_ENV=(env "TRITON_CACHE_DIR=$BENCH_TRITON" TRITON_CACHE_AUTOTUNING=1)
bench_cache() {
  mkdir -p "$BENCH_TRITON"
  if [ -f .devcache/bench-triton.tgz ] && [ ! -f "$BENCH_TRITON/.restored" ]; then
    tar xzf .devcache/bench-triton.tgz -C "$BENCH_TRITON" && touch "$BENCH_TRITON/.restored"
    log "bench cache: restored $(du -sh "$BENCH_TRITON" | cut -f1)"
  fi
}
bench_cache_save() {  # at most the device tool's 16 MiB a file: over it, the autotuning
  # results alone (*.autotune.json, in their cache folders), which spare the next call the
  # benchmarking of every configuration and leave it one compile a kernel
  tar czf "$OUT/bench-triton.tgz" -C "$BENCH_TRITON" --exclude=.restored .
  if [ "$(stat -c %s "$OUT/bench-triton.tgz")" -gt 16000000 ]; then
    (cd "$BENCH_TRITON" && find . -name '*.autotune.json' -print0 |
      tar czf "$OUT/bench-triton.tgz" --null -T -)
    log "bench cache: over 16 MB; returned its $(tar tzf "$OUT/bench-triton.tgz" | wc -l) autotuning results alone"
  fi
}

mamba3_bench() {  # timings beside mamba_ssm's kernels at the paper's shapes, T_M3_BENCH (110 s);
  # M3_BENCH_ARGS=--warm-only: untimed, to fill the compile caches beside other work
  if [ -d "$M3_SRC/mamba_ssm" ]; then
    log "mamba3: timings beside mamba_ssm ($M3_SRC), bf16, the paper's shapes"
    bench_cache
    MAMBA_SSM_SRC=$M3_SRC timeout -s INT -k 10 "${T_M3_BENCH:-110}" "${BENCH_ENV[@]}" python3 -m \
      kdiff.kernels.mamba3.bench ${M3_BENCH_ARGS:-} --json "$ART/mamba3_bench${M3_BENCH_ARGS:+_warm}.json" \
      2>&1 | tee "$OUT/mamba3_bench${M3_BENCH_ARGS:+_warm}.log" | tee -a "$OUT/session.log"
    bench_cache_save
  else
    log "mamba3: no mamba_ssm checkout at $M3_SRC: the timings skipped"
  fi
  pack
}

mamba3_profile() {  # where kernels/mamba3's time goes: M3_PROFILE_PARTS (decode,sequence),
  # under T_M3_PROFILE (150 s); run it alone on the machine (its host-side timings count)
  log "mamba3: profile, ${M3_PROFILE_PARTS:=decode,sequence}"
  bench_cache
  MAMBA_SSM_SRC=$M3_SRC run_logged timeout -s INT -k 10 \
    "${T_M3_PROFILE:-150}" "${BENCH_ENV[@]}" python3 benchmarks/mamba3_profile.py --parts "$M3_PROFILE_PARTS"
  bench_cache_save
  pack
}

mamba3_ab() {  # M3_AB_FILE (kernels/mamba3/forward.py; several, space-separated) on this
  # tree, then with M3_AB_FROM (carried files in the same order, e.g. `git show
  # <commit>:kernels/mamba3/backward.py > .ab/backward.py`) in their place, the files put back
  # after; M3_PROFILE_PARTS as mamba3_profile's
  local here=(${M3_AB_FILE:-kernels/mamba3/forward.py}) from=(${M3_AB_FROM:-}) i
  [ "${#here[@]}" = "${#from[@]}" ] || { log "mamba3_ab: ${#here[@]} files, ${#from[@]} in M3_AB_FROM, nothing run"; return; }
  for i in "${!from[@]}"; do
    [ -f "${from[$i]}" ] || { log "mamba3_ab: no file ${from[$i]}, nothing run"; return; }
  done
  log "mamba3 A/B: this tree's ${here[*]}"
  mamba3_profile
  for i in "${!here[@]}"; do cp "${here[$i]}" "/tmp/ab.this.$i.py" && cp "${from[$i]}" "${here[$i]}"; done
  log "mamba3 A/B: ${from[*]} as ${here[*]}"
  mamba3_profile
  for i in "${!here[@]}"; do cp "/tmp/ab.this.$i.py" "${here[$i]}"; done
}

mamba3_sanitize() {  # the illegal access of kernels/mamba3's forward fallback at 2 warps
  # (NOTES.md): problem 2's PRC-03 with recurrent_forward at 2 warps, first with
  # CUDA_LAUNCH_BLOCKING (the faulting launch named), then under compute-sanitizer; each
  # within T_M3_SANITIZE (150 s). The source is put back afterwards.
  local src=kernels/mamba3/recurrent.py mode
  sed -i 's/num_warps: int = 4) -> None:/num_warps: int = 2) -> None:/' "$src"
  grep -q 'num_warps: int = 2) -> None:' "$src" || { log "mamba3_sanitize: $src changed, nothing run"; return; }
  for mode in blocking sanitizer; do
    log "mamba3: problem 2 PRC-03, the fallback at 2 warps, $mode"
    local run=(kdiff verify --device cuda --fail-on never --gates PRC-03 --dtypes float32,bfloat16
      --problem "$(ls kernels/mamba3/kernelbench/KernelBench/level3/2_*.py)"
      --candidate kernels/mamba3/kernelbench/runs/triton/level_3_problem_2_sample_0_kernel.py -v)
    if [ $mode = blocking ]; then
      CUDA_LAUNCH_BLOCKING=1 run_logged budget "${T_M3_SANITIZE:-150}" "${run[@]}"
    else
      run_logged budget "${T_M3_SANITIZE:-150}" "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --target-processes all \
        --print-limit 20 "${run[@]}"
    fi
  done
  sed -i 's/num_warps: int = 2) -> None:/num_warps: int = 4) -> None:/' "$src"
  pack
}

precision() {  # the corpus's bf16 (101), fp8 (102), int8 (103) and int4 (104) GEMMs:
  # at their own precision, their controls and red team, every gate, on cuda
  log "precision: bf16, fp8, int8 and int4 problems, controls and red team, all gates on cuda"
  run_logged budget "${T_PRECISION:-150}" kdiff run --bench kernelbench --device cuda \
    --problems "${PRECISION_PROBLEMS:-101,102,103,104}" --jobs "$JOBS" --fail-on never --store "$ART/precision.sqlite" \
    --json "$ART/precision.json" --markdown "$ART/precision.md" -v
  pack
}

tune() {  # kdiff tune on kernels/gdn (docs/tune.md): TUNE_ARGS, under T_TUNE (460 s)
  log "tune: ${TUNE_ARGS:=--methods grpo,random --group 6 --budget 12 --seconds 400 --judges 6}"
  # shellcheck disable=SC2086
  OUT=$ART run_logged budget "${T_TUNE:-460}" python3 benchmarks/tune_gdn.py $TUNE_ARGS
  pack
}

train() {  # examples/train/h200.sh's phases (docs/training.md), e.g. TRAIN="family kda"
  log "train: ${TRAIN:?set TRAIN to a phase of examples/train/h200.sh}"
  # shellcheck disable=SC2086
  OUT=$ART SETUP=0 run_logged bash examples/train/h200.sh $TRAIN
  pack
}

setup
for phase in "$@"; do
  [ "$phase" = setup ] && continue
  "$phase"
done
log done
