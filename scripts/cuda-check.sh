#!/usr/bin/env bash
# The CUDA target checked on a GPU machine that has no MLIR, no network and
# no working linnetc (docs/cuda.md, "The GPU check"). Run from the
# repository root there, with the bundle scripts/cuda-bundle.sh made on a
# build machine:
#
#   bash scripts/cuda-check.sh [BUNDLE]        BUNDLE: .cache/cuda-bundle
#
# The bundle's linnet runs the card's entries on the gqa2 fixture (f32, and
# bf16 converted at load) on `--backend cuda` from the bundle's prebuilt
# artifacts, and compares with what the CPU backend computed on the build
# machine: forward logits, prefill (8 tokens, and 20: cuBLASLt's products)
# and 8 decode steps (relative 1e-5), prefill of 20 over a cache of 256 at
# positions 0 and 45 (a key prefix read on the host), the
# same calls with CUDA graphs off (bit-identical), greedy ids over 32 steps
# in f32 and bf16 (equal), and all of them once more under compute-sanitizer's
# memcheck where it runs (else reported skipped). A run that fails is run
# again with LINNET_CUDA_SYNC=1, whose message names the failing kernel. Results go to $OUT (else BUNDLE/results) as
# results.jsonl, ending with a table. Then the 8B benchmark,
# scripts/cuda-bench.sh (LINNET_CHECK_BENCH=0 leaves it out), into
# bench/ there. The exit status is 1 if a check failed.
#
# `LINNET_CHECK_BACKEND=cuda-emulated` runs the same checks on this machine
# (the cuda target's host/device split on the CPU, compiled on first use),
# which is how the script itself is tested where there is no GPU.
#
# Internal: `cuda-check.sh --outputs BACKEND DIR` writes the outputs of one
# backend into DIR (the bundle calls it for the CPU's expected outputs and to
# prebuild the cuda artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."

CARD=nest/llama-3.1-8b-instruct
FIXTURE=tests/data/llama/gqa2
PROMPT=47,19,38,53,12,52,24,57
# 20 tokens: prefill's products then have 20 rows, which cuBLASLt runs.
LONG_PROMPT=47,19,38,53,12,52,24,57,3,1,4,1,5,9,2,6,5,3,5,8
DECODE_IDS=(3 1 4 1 5 9 2 6)
HELP=scripts/cuda_check.py
export LINNET_STDLIB=$PWD/stdlib

sets() {  # the fixture's generics as --set flags; each K=V argument overrides one
  local -A over=()
  local a
  for a in "$@"; do over[${a%%=*}]=${a#*=}; done
  while IFS='=' read -r k v; do
    [[ -z "$k" ]] && continue
    [[ -n "${over[$k]:-}" ]] && v=${over[$k]}
    printf -- '--set %s=%s ' "$k" "$v"
  done < "$FIXTURE/generics.txt"
}

# outputs BACKEND DIR: every output of the checks, from one backend. Each
# linnet run goes through $LINNET_CHECK_WRAP when set (compute-sanitizer).
outputs() {
  local backend=$1 dir=$2
  local -a linnet
  read -r -a linnet <<< "${LINNET_CHECK_WRAP:-}"
  linnet+=("${LINNET_BIN:-build/bin/linnet}")
  mkdir -p "$dir"
  python3 $HELP ids "$dir/prompt.npy" $PROMPT
  local common="$CARD --weights $FIXTURE/model.safetensors --backend $backend"
  # shellcheck disable=SC2046
  "${linnet[@]}" call $common $(sets) --entry forward --input tokens=@"$dir/prompt.npy" --output @"$dir/forward.npy"
  local steps=() pos=8 k=1
  for id in "${DECODE_IDS[@]}"; do
    python3 $HELP ids "$dir/token$k.npy" "$id"
    steps+=(--entry decode --input token=@"$dir/token$k.npy" --input pos=$pos --output @"$dir/decode$k.npy")
    pos=$((pos + 1)) k=$((k + 1))
  done
  # shellcheck disable=SC2046
  "${linnet[@]}" call $common $(sets) --entry prefill --input tokens=@"$dir/prompt.npy" --input pos=0 \
    --output @"$dir/prefill.npy" "${steps[@]}"
  python3 $HELP ids "$dir/prompt20.npy" $LONG_PROMPT
  # shellcheck disable=SC2046
  "${linnet[@]}" call $common $(sets) --entry prefill --input tokens=@"$dir/prompt20.npy" --input pos=0 \
    --output @"$dir/prefill20.npy"
  # Over a cache of 256, prefill's attention runs on a key prefix whose
  # length the host reads from the device: 64 keys at position 0, 128 at
  # 45 (the mask reaches 65).
  for pos in 0 45; do
    # shellcheck disable=SC2046
    "${linnet[@]}" call $common $(sets MaxSeq=256) --entry prefill --input tokens=@"$dir/prompt20.npy" \
      --input pos=$pos --output @"$dir/prefill20_seq256_at$pos.npy"
  done
  # shellcheck disable=SC2046
  "${linnet[@]}" generate $common $(sets) --prompt-ids $PROMPT --max-new 32 > "$dir/ids_f32.txt"
  # shellcheck disable=SC2046
  "${linnet[@]}" generate $common --convert $(sets T=bf16) --prompt-ids $PROMPT --max-new 32 > "$dir/ids_bf16.txt"
}

if [[ "${1:-}" == --outputs ]]; then
  outputs "$2" "$3"
  exit 0
fi

BUNDLE=$(realpath -m "${1:-.cache/cuda-bundle}")
if [[ ! -d "$BUNDLE/expected" ]]; then
  echo "cuda-check: no bundle at $BUNDLE: build one with bash scripts/cuda-bundle.sh" >&2
  exit 2
fi
BACKEND=${LINNET_CHECK_BACKEND:-cuda}
RESULTS_DIR=${OUT:-$BUNDLE/results}
mkdir -p "$RESULTS_DIR"
RESULTS=$RESULTS_DIR/results.jsonl
: > "$RESULTS"
if [[ "$BACKEND" == cuda ]]; then
  # The bundle's programs and prebuilt artifacts; linnetc is there only as
  # the cache's key (it cannot run without MLIR, and a cache hit never does).
  export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LINNETC=$BUNDLE/bin/linnetc LINNET_CACHE=$BUNDLE/cache LINNET_BIN=$BUNDLE/bin/linnet
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$RESULTS_DIR/gpu.txt" 2>&1 || true
  # cuBLASLt for prefill's products: the toolkit's, or the one PyTorch's
  # nvidia-cublas package installed.
  if [[ -z "${LINNET_CUBLASLT:-}" ]]; then
    LINNET_CUBLASLT=$({ ls /usr/local/cuda/lib64/libcublasLt.so.1[23] 2>/dev/null
      python3 -c "import glob, site
for d in site.getsitepackages(): print('\n'.join(sorted(glob.glob(d + '/nvidia/**/libcublasLt.so.1*', recursive=True))))"
    } | grep . | paste -sd: -)
    export LINNET_CUBLASLT
  fi
  echo "cuBLASLt: ${LINNET_CUBLASLT:-none found}"
  echo "GPU: $(cat "$RESULTS_DIR/gpu.txt")"
else
  export LINNET_CACHE=${LINNET_CACHE:-$PWD/.cache/cuda-check-$BACKEND}
fi

run() {  # run NAME DIR [VAR=VALUE...]: the outputs, recorded as one check
  local name=$1 dir=$2
  shift 2
  local start=$SECONDS
  if env "$@" bash "$0" --outputs "$BACKEND" "$dir" > "$dir.log" 2>&1; then
    python3 $HELP note "$name runs" pass "in $((SECONDS - start)) s" "$RESULTS"
  else
    tail -5 "$dir.log"
    python3 $HELP note "$name runs" fail "failed, see $dir.log" "$RESULTS"
    if [[ "$BACKEND" == cuda ]]; then locate "$name" "$dir" "$@"; fi
  fi
}

# locate NAME DIR [VAR=VALUE...]: a failed run once more with the stream
# waited for after each operation (LINNET_CUDA_SYNC=1), so that a fault
# names the kernel that made it; recorded as a failing check with that
# message, or as skipped when the run then passes (a fault that timing hides).
locate() {
  local name=$1 dir=$2
  shift 2
  if env "$@" LINNET_CUDA_SYNC=1 bash "$0" --outputs "$BACKEND" "$dir-sync" > "$dir-sync.log" 2>&1; then
    python3 $HELP note "$name, each operation waited for" skip "it ran: see $dir-sync.log" "$RESULTS"
  else
    python3 $HELP note "$name, each operation waited for" fail \
      "$(grep -m1 -o 'entry `.*' "$dir-sync.log" || tail -1 "$dir-sync.log"), see $dir-sync.log" "$RESULTS"
  fi
}

EXPECTED=$BUNDLE/expected
GOT=$RESULTS_DIR/$BACKEND
run "$BACKEND (graphs on)" "$GOT"
run "$BACKEND (graphs off)" "$GOT-nographs" LINNET_CUDA_GRAPHS=0
for f in forward prefill prefill20 prefill20_seq256_at0 prefill20_seq256_at45 decode1 decode2 decode3 decode4 decode5 \
  decode6 decode7 decode8; do
  python3 $HELP compare "f32 $f vs cpu" "$EXPECTED/$f.npy" "$GOT/$f.npy" 1e-5 "$RESULTS"
  python3 $HELP same "f32 $f graphs on = off" "$GOT/$f.npy" "$GOT-nographs/$f.npy" "$RESULTS"
done
python3 $HELP equal "f32 greedy ids (32)" "$EXPECTED/ids_f32.txt" "$GOT/ids_f32.txt" "$RESULTS"
python3 $HELP equal "bf16 greedy ids (32)" "$EXPECTED/ids_bf16.txt" "$GOT/ids_bf16.txt" "$RESULTS"
# compute-sanitizer's memcheck over the same runs (graphs on), where the tool
# can run (it refuses the device under gVisor): an error it reports, or a
# run that fails under it, fails the check; a tool that never completes a
# run is reported as skipped, with its last words.
if [[ "$BACKEND" == cuda ]]; then
  SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
  if [[ ! -x "$SANITIZER" ]]; then
    python3 $HELP note "compute-sanitizer memcheck" skip "no compute-sanitizer at $SANITIZER" "$RESULTS"
  else
    start=$SECONDS rc=0
    LINNET_CHECK_WRAP="$SANITIZER --tool memcheck --error-exitcode 86 --print-limit 20" \
      bash "$0" --outputs "$BACKEND" "$GOT-memcheck" > "$GOT-memcheck.log" 2>&1 || rc=$?
    # The tool reports on stdout: the greedy runs' reports are in their ids files.
    cat "$GOT-memcheck.log" "$GOT-memcheck"/ids_*.txt > "$GOT-memcheck.all" 2>/dev/null || true
    clean=$(grep -c "ERROR SUMMARY: 0 errors" "$GOT-memcheck.all" || true)
    if grep -q "ERROR SUMMARY: [1-9]" "$GOT-memcheck.all"; then
      python3 $HELP note "compute-sanitizer memcheck" fail "$(grep -m1 'ERROR SUMMARY: [1-9]' "$GOT-memcheck.all"), see $GOT-memcheck.all" "$RESULTS"
    elif ((rc == 0)); then
      python3 $HELP note "compute-sanitizer memcheck" pass "0 errors in $clean runs, in $((SECONDS - start)) s" "$RESULTS"
    elif ((clean > 0)); then
      python3 $HELP note "compute-sanitizer memcheck" fail "a run failed under it (exit $rc), see $GOT-memcheck.log" "$RESULTS"
    else
      python3 $HELP note "compute-sanitizer memcheck" skip "it did not run: $(grep . "$GOT-memcheck.log" | tail -1)" "$RESULTS"
    fi
  fi
fi
status=0
python3 $HELP report "$RESULTS" || status=1
# The 8B benchmark (scripts/cuda-bench.sh), unless LINNET_CHECK_BENCH=0.
if [[ "${LINNET_CHECK_BENCH:-1}" != 0 ]]; then
  bash scripts/cuda-bench.sh "$BUNDLE" || status=1
fi
exit $status
