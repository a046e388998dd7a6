#!/usr/bin/env bash
# The memory a gradient's tape takes: `linnet grad` of the card's
# loss_packed (one 512-token batch, four prompts of 128) with each layer
# recomputed from its saved input (--tape recompute), with the layer loop
# kept and each layer's values stacked (--tape saved, the default) and with
# every value kept (--tape unrolled), against the forward pass alone (`linnet call`),
# on compiled code. Activation memory is taken as a run's peak resident
# memory less the forward pass's; prints both and their ratio.
#
#   bash bench/train/tape_memory.sh [LAYERS=16] [LINNET=build/bin/linnet]
#
# Needs numpy (.cache/torch-venv). The unrolled tape's build takes minutes
# at 16 layers (one function of every layer's code).
set -euo pipefail
layers=${1:-16}
root=$(cd "$(dirname "$0")/../.." && pwd)
linnet=${2:-$root/build/bin/linnet}
python=${PYTHON:-$root/.cache/torch-venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LINNET_CACHE=${LINNET_CACHE:-$work/cache}
cd "$work"
"$python" - <<'EOF'
import numpy as np
rng = np.random.default_rng(0)
np.save("tokens.npy", rng.integers(0, 4000, 512).astype(np.int32))
np.save("positions.npy", np.tile(np.arange(128), 4).astype(np.int32))
np.save("segments.npy", np.repeat(np.arange(4), 128).astype(np.int32))
np.save("targets.npy", rng.integers(0, 4000, 512).astype(np.int64))
np.save("weights.npy", np.ones(512, np.float32))
EOF
sets=(--set Vocab=4000 --set H=128 --set Heads=4 --set KvHeads=2 --set Inner=256 --set "Layers=$layers"
      --set MaxSeq=256 --set T=f32)
inputs=(--input tokens=@tokens.npy --input positions=@positions.npy --input segments=@segments.npy
        --input targets=@targets.npy --input weights=@weights.npy)
card=$root/nest/llama-3.1-8b-instruct
peak() {  # the command's peak resident memory in KB, after a run that compiles its entry
  "$@" > /dev/null 2>&1
  /usr/bin/time -f "%M" "$@" 2>&1 > /dev/null | tail -1
}
forward=$(peak "$linnet" call "$card" --random-weights "${sets[@]}" --entry loss_packed "${inputs[@]}" --backend cpu)
recompute=$(peak "$linnet" grad "$card" --random-weights "${sets[@]}" --entry loss_packed "${inputs[@]}" \
             -o g.safetensors --backend cpu --tape recompute)
saved=$(peak "$linnet" grad "$card" --random-weights "${sets[@]}" --entry loss_packed "${inputs[@]}" \
         -o g.safetensors --backend cpu --tape saved)
unrolled=$(peak "$linnet" grad "$card" --random-weights "${sets[@]}" --entry loss_packed \
           "${inputs[@]}" -o g.safetensors --backend cpu --tape unrolled)
echo "Layers=$layers, 512 tokens: peak forward $((forward / 1024)) MB, gradient recomputing $((recompute / 1024)) MB," \
     "saved $((saved / 1024)) MB, unrolled $((unrolled / 1024)) MB"
awk -v f="$forward" -v r="$recompute" -v s="$saved" -v u="$unrolled" 'BEGIN {
  printf "activations (peak less the forward pass): recomputing %.1f MB, saved %.1f MB (%.2fx), unrolled %.1f MB (%.2fx)\n",
         (r - f) / 1024, (s - f) / 1024, (s - f) / (r - f), (u - f) / 1024, (u - f) / (r - f) }'
