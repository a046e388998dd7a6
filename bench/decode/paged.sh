#!/usr/bin/env bash
# decode_paged against decode_rows at the same rows and positions, in one
# script: ROWS requests at positions START.., each with CONTEXT positions of
# its own (decode_rows: Batch = ROWS caches of MaxSeq = CONTEXT; decode_paged:
# one pool of ROWS x CONTEXT positions, each request its own pages of
# PAGE_SIZE). Prints both and the ratio. Not part of CI.
#   bash bench/decode/paged.sh [ROWS] [CONTEXT] [START]
set -euo pipefail
cd "$(dirname "$0")/../.."
rows=${1:-4} context=${2:-1024} start=${3:-128} page=64 steps=16
config=$(grep -v -e '--set Batch=' -e '--set MaxSeq=' bench/decode/config-1gb.txt)
common=(nest/llama-3.1-8b-instruct --random-weights $config --backend cpu --prompt-len "$start" --steps "$steps" --json)
r=$(build/bin/linnet bench rows "${common[@]}" --set Batch="$rows" --set MaxSeq="$context" | tail -1)
p=$(build/bin/linnet bench paged "${common[@]}" --set Batch=1 --set MaxSeq=$((rows * context)) --set PageSize=$page \
    --rows "$rows" | tail -1)
python3 - "$r" "$p" <<'PY'
import json, sys
r, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"decode_rows   {r['tokens_per_s']:8.1f} tokens/s, best step {r['best_step_s'] * 1e3:6.2f} ms ({r['rows']} rows from position {r['first_position']})")
print(f"decode_paged  {p['tokens_per_s']:8.1f} tokens/s, best step {p['best_step_s'] * 1e3:6.2f} ms")
print(f"paged / rows  {p['tokens_per_s'] / r['tokens_per_s']:.3f} (tokens/s), {r['best_step_s'] / p['best_step_s']:.3f} (best step)")
PY
