#!/usr/bin/env bash
# Soak test of `linnet serve` on loopback:
#   bash bench/serve/soak.sh [MINUTES]        (default 10; THREADS=2, WARMUP=60 s)
# Starts
#   linnet serve nest/smollm2-135m-instruct --weights M --backend cpu --rows 8 \
#     --context 1024 --threads T --port 0 --max-queue 64 --queue-timeout 600
# (the queue holds all 64 streams: with the default 2 x rows a 64-stream load
# is mostly 503s by design), then keeps 64 streams busy (client.py --soak-seconds:
# each stream sends the benchmark's request, 128-512 prompt tokens, 64 new
# tokens with ignore_eos, as soon as its last one ended) for WARMUP seconds
# and then MINUTES, sampling the server's VmRSS (/proc/PID/status) every 10 s.
# Reports requests completed, failures, RSS after the warm-up and at the end.
# Fails if a request failed or came back short, if the server died or did not
# exit 0 on SIGINT, or if RSS grew more than 10% after the warm-up.
# Results: .cache/serve-bench/soak.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/serve/lib.sh
minutes=${1:-10}
threads=${THREADS:-2}
warmup=${WARMUP:-60}
out=.cache/serve-bench
mkdir -p "$out"
MODEL=$(bash scripts/fetch-smollm2.sh)
py=$(client_python)
ensure_linnet
pool=$out/token-pool.json
pool_args=()
[ -s "$pool" ] && pool_args=(--token-pool "$pool")

trap 'stop_server' EXIT
start_linnet "$out/soak-server.log" "$threads" --max-queue 64 --queue-timeout 600
pid=$server_pid
log "command: $server_cmd"
rc=0
"$py" bench/serve/client.py --base-url "$server_url/v1" "${pool_args[@]}" --seed 1 \
  --soak-seconds "$(awk -v m="$minutes" 'BEGIN { print m * 60 }')" --warmup-seconds "$warmup" \
  --concurrency 64 --pid "$pid" --rss-interval 10 --max-rss-growth 0.10 --json "$out/soak.json" || rc=$?
if ! kill -0 "$pid" 2>/dev/null; then
  log "FAIL: the server died during the soak"; rc=1
fi
stop_server
trap - EXIT
if [ "$server_rc" != 0 ]; then
  log "FAIL: linnet serve exited with status $server_rc on SIGINT"; rc=1
fi
log "$( [ $rc = 0 ] && echo PASS || echo FAIL ) (results: $out/soak.json, server log: $out/soak-server.log)"
exit $rc
