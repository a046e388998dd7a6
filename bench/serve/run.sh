#!/usr/bin/env bash
# Serving benchmark, Linnet's `linnet serve` against llama.cpp's `llama-server`
# on the same GGUF (SmolLM2-135M-Instruct Q4_1), the same threads, one server
# at a time:
#   bash bench/serve/run.sh [THREADS]          (default 2; RUNS=3)
# Per run, each server in turn:
#   linnet serve nest/smollm2-135m-instruct --weights M --backend cpu --rows 8 \
#     --context 1024 --threads T --port 0
#   llama-server -m M -np 8 -c 8192 -t T --host 127.0.0.1 --port P --metrics
# is started, waited for (/health 200; the time is printed), driven by
#   client.py --base-url URL/v1 --token-pool POOL --run K
# (64 requests, 2 warm-up, prompts 128-512 tokens, 64 new tokens, 8 in
# flight), and stopped. Runs alternate the servers (K = 0..RUNS-1, each K the
# same prompts on both, different K disjoint prompts); medians over runs.
# Builds/installs what is missing: llama-server (build_llama_server.sh,
# ~10+ minutes), the openai client venv, the model (scripts/fetch-smollm2.sh),
# the token pool. Results: .cache/serve-bench/results.json (not in git).
# Environment: LINNET, LINNET_PACKAGE, CLIENT_PY (lib.sh), LLAMA_SERVER, RUNS,
# ONLY=linnet|llama (one server only), MODEL (another GGUF of the same model,
# e.g. bench/peers' F32 one), OUT (default .cache/serve-bench), LINNET_ARGS
# (more `linnet serve` flags, e.g. "--set MaxSeq=4672": a pool sized to the
# workload, 8 x 576 positions and the scratch page).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/serve/lib.sh
threads=${1:-2}
runs=${RUNS:-3}
only=${ONLY:-}
out=${OUT:-.cache/serve-bench}
mkdir -p "$out"

MODEL=${MODEL:-$(bash scripts/fetch-smollm2.sh)}
py=$(client_python)
[ "$only" = llama ] || ensure_linnet
if [ "$only" != linnet ]; then
  LLAMA_SERVER=${LLAMA_SERVER:-$(bash bench/serve/build_llama_server.sh)}
fi

pool=$out/token-pool.json
if [ ! -s "$pool" ]; then
  if [ -x .cache/peers-venv/bin/python ] && .cache/peers-venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    .cache/peers-venv/bin/python bench/serve/token_pool.py "$MODEL" "$pool" >&2
  else
    bash bench/serve/build_llama_server.sh >/dev/null
    python3 bench/serve/token_pool.py "$MODEL" "$pool" \
      --llama-tokenize .cache/llama-server/build/bin/llama-tokenize >&2
  fi
fi

servers=(linnet llama)
[ -z "$only" ] || servers=("$only")
trap 'stop_server' EXIT
specs=()
declare -A cmds ready
for ((k = 0; k < runs; k++)); do
  for s in "${servers[@]}"; do
    if [ "$s" = linnet ]; then
      # shellcheck disable=SC2086
      start_linnet "$out/linnet-$k.log" "$threads" ${LINNET_ARGS:-}
    else
      start_llama "$out/llama-$k.log" "$threads"
    fi
    cmds[$s]=$server_cmd
    ready[$s]="${ready[$s]:-}${ready[$s]:+,}$server_ready_s"
    client_cmd="$py bench/serve/client.py --base-url $server_url/v1 --token-pool $pool --run $k --pid $server_pid --label $s-run$k --json $out/$s-$k.json"
    log "$client_cmd"
    $client_cmd
    stop_server
    [ "$server_rc" = 0 ] || log "$s exited with status $server_rc"
    specs+=("$s:$out/$s-$k.json")
  done
done
trap - EXIT

meta=$out/meta.json
meta_args=()
for s in "${servers[@]}"; do meta_args+=("$s" "${cmds[$s]}" "${ready[$s]}"); done
python3 - "$meta" "$threads" "$runs" "$MODEL" "$py bench/serve/client.py --base-url URL/v1 --token-pool $pool --run K" \
  "${meta_args[@]}" <<'PY'
import json, sys
out, threads, runs, model, client, *rest = sys.argv[1:]
meta = {"threads": int(threads), "runs": int(runs), "model": model, "commands": [], "ready_s": {}}
for i in range(0, len(rest), 3):
    name, cmd, ready = rest[i:i + 3]
    meta["commands"].append(f"{name}: {cmd}")
    meta["ready_s"][name] = [float(x) for x in ready.split(",") if x]
meta["commands"].append(f"client: {client}")
json.dump(meta, open(out, "w"), indent=1)
PY
echo
echo "# bash bench/serve/run.sh $threads   ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, RUNS=$runs)"
"$py" bench/serve/summarize.py --out "$out/results.json" --meta "$meta" "${specs[@]}"
