#!/usr/bin/env bash
# The GPU check's benchmark (docs/cuda.md, "The benchmark"): the 8B card
# with seeded random weights, scaled like trained ones, drawn on the GPU
# itself (nothing of 16 GB is carried there or uploaded). scripts/cuda-check.sh runs it
# last; alone:
#
#   bash scripts/cuda-bench.sh [BUNDLE]        BUNDLE: .cache/cuda-bundle
#
# On the bundle's linnet (its prebuilt artifacts), `--backend cuda`:
#   decode at batch 1 after a prompt of 128 tokens, 256 steps: with CUDA
#     graphs, without, and with decode's products on cuBLASLt instead of
#     the warp kernels (LINNET_PRODUCTS=library); tokens/s, bytes/s against
#     the device's copy bandwidth measured in the same run, and the share
#     of the 319.8 tok/s bound (15.01 GB a token at 4.8 TB/s);
#   TTFT: prefill of 512 tokens, best of 5;
#   the split of device time by kernel family (LINNET_CUDA_PROFILE), for a
#     decode step and for the 512-token prefill;
#   transformers' LlamaForCausalLM on the same weights (linnet export hf
#     writes them for it), decode with a static cache under torch.compile
#     (scripts/cuda_bench_torch.py), and its logits against linnet's.
# Figures go to $OUT/bench (else BUNDLE/results/bench) as bench.json, the
# checks into results.jsonl beside it (scripts/cuda_bench_report.py).
#
# Environment:
#   LINNET_CHECK_BACKEND=cuda-emulated   the same runs on the CPU (the test
#       of this script, with LINNET_BENCH_SETS for a small stand-in);
#       speeds are then reported, not judged
#   LINNET_BENCH_SETS     generics over the card's own ("--set Layers=2 ...")
#   LINNET_BENCH_STEPS (256), LINNET_BENCH_PROMPT (128), LINNET_BENCH_PREFILL (512)
#   LINNET_BENCH_TORCH    more arguments of cuda_bench_torch.py ("--device
#       cpu --no-compile" on a machine without a GPU), or "skip"
#
# Internal: `cuda-bench.sh --runs BACKEND DIR [--compile-only]` makes
# linnet's runs alone; with --compile-only they only build their artifacts
# (the bundle calls it so, on the fake libcuda, to prebuild them: no 16 GB
# of weights on the build machine).
set -euo pipefail
cd "$(dirname "$0")/.."

CARD=nest/llama-3.1-8b-instruct
read -r -a SETS <<< "${LINNET_BENCH_SETS:-}"
STEPS=${LINNET_BENCH_STEPS:-256}
PROMPT=${LINNET_BENCH_PROMPT:-128}
PREFILL=${LINNET_BENCH_PREFILL:-512}
export LINNET_STDLIB=$PWD/stdlib

# runs BACKEND DIR [--compile-only]: every run of linnet the benchmark
# times, as JSON in DIR.
runs() {
  local backend=$1 dir=$2 linnet=${LINNET_BIN:-build/bin/linnet}
  local common=("$CARD" --random-weights "${SETS[@]}" --backend "$backend" ${3:+"$3"})
  local decode=(bench decode "${common[@]}" --prompt-len "$PROMPT" --warmup 2 --json)
  local prefill=(bench prefill "${common[@]}" --prompt-len "$PREFILL" --json)
  mkdir -p "$dir"
  step() { echo "cuda-bench: $1" >&2; }
  step "decode, graphs on"
  "$linnet" "${decode[@]}" --steps "$STEPS" > "$dir/decode.json"
  step "decode, graphs off"
  LINNET_CUDA_GRAPHS=0 "$linnet" "${decode[@]}" --steps "$STEPS" > "$dir/decode_nographs.json"
  step "decode, products on cuBLASLt"
  LINNET_PRODUCTS=library "$linnet" "${decode[@]}" --steps "$STEPS" > "$dir/decode_cublaslt.json"
  step "prefill of $PREFILL tokens"
  "$linnet" "${prefill[@]}" --steps 5 --warmup 1 > "$dir/prefill.json"
  step "profiles"
  LINNET_CUDA_PROFILE=$dir/profile_decode.json "$linnet" "${decode[@]}" --steps 32 > "$dir/decode_profiled.json"
  LINNET_CUDA_PROFILE=$dir/profile_prefill.json "$linnet" "${prefill[@]}" --steps 2 --warmup 1 \
    > "$dir/prefill_profiled.json"
  step "logits of a $PROMPT-token prompt"
  python3 scripts/cuda_check.py ids "$dir/logit_ids.npy" \
    "$(python3 -c "print(','.join(str((7 * k + 3) % 61) for k in range($PROMPT)))")"
  "$linnet" call "${common[@]}" --entry prefill --input tokens=@"$dir/logit_ids.npy" --input pos=0 \
    --output @"$dir/logits.npy"
}

if [[ "${1:-}" == --runs ]]; then
  runs "$2" "$3" "${4:-}"
  exit 0
fi

BUNDLE=$(realpath -m "${1:-.cache/cuda-bundle}")
BACKEND=${LINNET_CHECK_BACKEND:-cuda}
DIR=${OUT:-$BUNDLE/results}/bench
RESULTS=$DIR/results.jsonl
mkdir -p "$DIR"
: > "$RESULTS"
if [[ "$BACKEND" == cuda ]]; then
  export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LINNETC=$BUNDLE/bin/linnetc LINNET_CACHE=$BUNDLE/cache LINNET_BIN=$BUNDLE/bin/linnet
else
  export LINNET_CACHE=${LINNET_CACHE:-$PWD/.cache/cuda-check-$BACKEND}
fi
LINNET=${LINNET_BIN:-build/bin/linnet}

# Bounded, so that a hang cannot spend a lent GPU's time: linnet's runs were
# estimated at about two minutes on an H200 when each drew 16 GB of random
# weights on the host (now drawn on the GPU; not yet measured),
# transformers' about three (loading, then compiling two shapes).
start=$SECONDS
if timeout "${LINNET_BENCH_TIMEOUT:-420}" bash scripts/cuda-bench.sh --runs "$BACKEND" "$DIR" > "$DIR/runs.log" 2>&1; then
  python3 scripts/cuda_check.py note "bench: linnet's runs" pass "in $((SECONDS - start)) s" "$RESULTS"
else
  tail -5 "$DIR/runs.log"
  python3 scripts/cuda_check.py note "bench: linnet's runs" fail "failed, see $DIR/runs.log" "$RESULTS"
fi

if [[ "${LINNET_BENCH_TORCH:-}" != skip ]]; then
  # The weights for transformers: the same random values, as a Hugging Face
  # folder in memory if /dev/shm has room for it, else on disk.
  weights=${TMPDIR:-/tmp}/linnet-bench-hf
  if [[ -d /dev/shm ]] && (($(df --output=avail -k /dev/shm | tail -1) > 24 * 1024 * 1024)); then
    weights=/dev/shm/linnet-bench-hf
  fi
  rm -rf "$weights"
  start=$SECONDS
  read -r -a TORCH_ARGS <<< "${LINNET_BENCH_TORCH:-}"
  if "$LINNET" export hf "$CARD" --random-weights "${SETS[@]}" -o "$weights" > "$DIR/torch.log" 2>&1 &&
    timeout "${LINNET_BENCH_TORCH_TIMEOUT:-420}" python3 scripts/cuda_bench_torch.py --model "$weights" --json "$DIR/torch.json" --prompt-len "$PROMPT" \
      --steps "$STEPS" --logits-ids "$DIR/logit_ids.npy" --logits-out "$DIR/torch_logits.npy" "${TORCH_ARGS[@]}" \
      >> "$DIR/torch.log" 2>&1; then
    python3 scripts/cuda_check.py note "bench: transformers' runs" pass "in $((SECONDS - start)) s" "$RESULTS"
  else
    tail -5 "$DIR/torch.log"
    python3 scripts/cuda_check.py note "bench: transformers' runs" fail "failed, see $DIR/torch.log" "$RESULTS"
  fi
  rm -rf "$weights"
fi

python3 scripts/cuda_bench_report.py "$DIR" "$RESULTS" "$([[ "$BACKEND" == cuda ]] && echo judge || echo report)"
