# Helpers sourced by bench/serve/run.sh and soak.sh (from the repository root).
#
# Environment:
#   LINNET          the linnet binary (default build/bin/linnet, built if missing)
#   LINNET_PACKAGE  the package (default nest/smollm2-135m-instruct)
#   CLIENT_PY       python with `openai` (default: .cache/test-venv when
#                   scripts/test-venv.sh makes one, else .cache/bench-venv)

LINNET=${LINNET:-build/bin/linnet}
LINNET_PACKAGE=${LINNET_PACKAGE:-nest/smollm2-135m-instruct}
OPENAI_VERSION=3.57.0
server_pid=""

log() { echo "[serve-bench] $*" >&2; }

# The client's python: the test venv if the repository has one, else
# .cache/bench-venv with openai pinned.
client_python() {
  if [ -n "${CLIENT_PY:-}" ]; then echo "$CLIENT_PY"; return; fi
  if [ -f scripts/test-venv.sh ]; then
    bash scripts/test-venv.sh >/dev/null 2>&1 || true
    local py=.cache/test-venv/bin/python
    if [ -x "$py" ] && "$py" -c "import openai" 2>/dev/null; then echo "$py"; return; fi
  fi
  local venv=.cache/bench-venv
  if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import openai" 2>/dev/null; then
    log "installing openai==$OPENAI_VERSION into $venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "openai==$OPENAI_VERSION" >&2
  fi
  echo "$venv/bin/python"
}

ensure_linnet() {
  if [ ! -x "$LINNET" ]; then
    log "building linnet"
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C build linnet linnetc >&2
  fi
  if ! "$LINNET" --help 2>&1 | grep -qE "^ +serve( |$)"; then
    log "$LINNET has no serve subcommand"; return 1
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

now() { date +%s.%N; }

# wait_health URL PID TIMEOUT: polls URL/health until 200; fails if PID dies.
wait_health() {
  local url=$1 pid=$2 limit=$3 t0
  t0=$(now)
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then log "server $pid exited while loading"; return 1; fi
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health" 2>/dev/null)" = 200 ]; then return 0; fi
    if awk -v a="$(now)" -v b="$t0" -v l="$limit" 'BEGIN { exit !(a - b > l) }'; then
      log "server not healthy after $limit s"; return 1
    fi
    sleep 0.2
  done
}

# start_linnet LOG THREADS [extra linnet serve args...]: sets server_pid,
# server_url, server_cmd, server_ready_s.
start_linnet() {
  local logf=$1 threads=$2; shift 2
  server_cmd="$LINNET serve $LINNET_PACKAGE --weights $MODEL --backend cpu --rows 8 --context 1024 --threads $threads --port 0${*:+ $*}"
  local t0; t0=$(now)
  # shellcheck disable=SC2086
  $server_cmd >"$logf" 2>&1 &
  server_pid=$!
  local port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's|.*linnet serve: listening on http://[^:]*:\([0-9]*\).*|\1|p' "$logf" | head -1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then log "linnet serve did not print its port:"; tail -20 "$logf" >&2; stop_server; return 1; fi
  server_url=http://127.0.0.1:$port
  wait_health "$server_url" "$server_pid" 600 || { tail -20 "$logf" >&2; stop_server; return 1; }
  server_ready_s=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
  log "linnet serve ready at $server_url after $server_ready_s s (pid $server_pid)"
}

# start_llama LOG THREADS: llama.cpp's server on the same GGUF, 8 slots of
# 1024 positions (continuous batching is its default).
start_llama() {
  local logf=$1 threads=$2 port
  port=$(free_port)
  server_cmd="$LLAMA_SERVER -m $MODEL -np 8 -c 8192 -t $threads --host 127.0.0.1 --port $port --metrics"
  local t0; t0=$(now)
  # shellcheck disable=SC2086
  $server_cmd >"$logf" 2>&1 &
  server_pid=$!
  server_url=http://127.0.0.1:$port
  wait_health "$server_url" "$server_pid" 600 || { tail -20 "$logf" >&2; stop_server; return 1; }
  server_ready_s=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
  log "llama-server ready at $server_url after $server_ready_s s (pid $server_pid)"
}

# stop_server: SIGINT, then SIGKILL after 30 s; server_rc is its exit status.
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill -INT "$server_pid" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2>/dev/null; then
    log "server $server_pid still running 30 s after SIGINT: SIGKILL"
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  server_rc=0
  wait "$server_pid" 2>/dev/null || server_rc=$?
  server_pid=""
}
