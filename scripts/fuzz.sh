#!/usr/bin/env bash
# Long fuzzing runs, for a developer (CI keeps its bounded ctest runs, fuzz_*).
# Builds the sanitizer+fuzz configuration, runs each fuzzer for FUZZ_SECONDS
# (default 600) with its dictionary and seed corpus, and prints one line per
# fuzzer: executions, exec/s, coverage (cov/ft) when the seeds were loaded
# (INITED) and at the end, and findings (crash-*, oom-*, timeout-*, leak-*).
# New inputs and findings go to build-fuzz/fuzz-runs/<name>/, never into the
# repository. Exits 1 when any fuzzer found something.
#
#   scripts/fuzz.sh                     every fuzzer, one at a time
#   scripts/fuzz.sh -j 2 checker npy    two fuzzers, both at once
#   FUZZ_SECONDS=60 scripts/fuzz.sh -n  a minute each, without building
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FUZZ_BUILD:-$ROOT/build-fuzz}"
SECONDS_EACH="${FUZZ_SECONDS:-600}"
JOBS=1
BUILD_FIRST=1

# name  seed corpus (tests/fuzz/...)  dictionary (tests/fuzz/dict/...)  max_len  [options]
# checker: -entropic=0, since libFuzzer's entropic schedule spent three
# quarters of each run updating feature frequencies (~80k features).
FUZZERS=(
  "tokenizer     corpus_tokenizer    json.dict         65536"
  "safetensors   corpus_safetensors  safetensors.dict  65536"
  "npy           corpus_npy          npy.dict          65536"
  "arguments     corpus_arguments    arguments.dict    1024"
  "checker       corpus              linnet.dict       4096   -entropic=0"
  "parser        corpus              linnet.dict       4096"
  "lsp           corpus_lsp          linnet.dict       4096   -entropic=0"
  "chat          corpus_chat         jinja.dict        65536"
  "gguf          corpus_gguf         gguf.dict         65536"
)

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -j) JOBS="$2"; shift 2 ;;
    -s) SECONDS_EACH="$2"; shift 2 ;;
    -n|--no-build) BUILD_FIRST=0; shift ;;
    -h|--help) usage ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
WANTED=("$@")

# Whether word $1 is among the rest of the arguments.
among() { local w="$1"; shift; for x in "$@"; do [ "$x" = "$w" ] && return 0; done; return 1; }
names=()
for row in "${FUZZERS[@]}"; do read -r name _ <<<"$row"; names+=("$name"); done
for w in "${WANTED[@]}"; do
  among "$w" "${names[@]}" || { echo "fuzz.sh: no fuzzer named $w (there are: ${names[*]})" >&2; exit 2; }
done
selected=()
for row in "${FUZZERS[@]}"; do
  read -r name _ <<<"$row"
  if [ ${#WANTED[@]} -eq 0 ] || among "$name" "${WANTED[@]}"; then selected+=("$row"); fi
done

if [ "$BUILD_FIRST" = 1 ]; then
  if [ ! -f "$BUILD/build.ninja" ]; then
    launcher=()
    command -v ccache >/dev/null &&
      launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DLINNET_SANITIZE=ON -DLINNET_FUZZ=ON -DLINNET_MLIR=OFF \
      "${launcher[@]}"
  fi
  targets=()
  for row in "${selected[@]}"; do read -r name _ <<<"$row"; targets+=("${name}_fuzzer"); done
  ninja -C "$BUILD" "${targets[@]}"
fi

# One fuzzer: a fresh scratch corpus plus the seeds, so INITED is the seeds' coverage.
run_one() {
  local name="$1" corpus="$2" dict="$3" maxlen="$4"
  shift 4  # the rest: this fuzzer's own options
  local dir="$BUILD/fuzz-runs/$name"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/findings"
  local exe="$BUILD/bin/${name}_fuzzer"
  [ -x "$exe" ] || { echo "fuzz.sh: $exe is missing (build it first)" >"$dir/log"; return 1; }
  "$exe" -max_total_time="$SECONDS_EACH" -max_len="$maxlen" -timeout=10 -rss_limit_mb=1024 \
    -dict="$ROOT/tests/fuzz/dict/$dict" -artifact_prefix="$dir/findings/" -print_final_stats=1 \
    "$@" "$dir/corpus" "$ROOT/tests/fuzz/$corpus" >"$dir/log" 2>&1 || true
}

# The summary line of one finished run, from its log and findings folder.
summarize() {
  local name="$1" dir="$BUILD/fuzz-runs/$1"
  local log="$dir/log"
  local start end execs rate findings
  start=$(grep -m1 'INITED' "$log" | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/\1\/\2/p')
  end=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/\1\/\2/p')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  findings=$(find "$dir/findings" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' \
    -o -name 'leak-*' \) | wc -l)
  printf '%-14s %12s %8s %14s %14s %9s\n' "$name" "${execs:-?}" "${rate:-?}" "${start:-?}" \
    "${end:-?}" "$findings"
  [ "$findings" = 0 ] && [ -n "$execs" ]
}

echo "fuzz.sh: ${#selected[@]} fuzzer(s), ${SECONDS_EACH} s each, $JOBS at a time; logs in $BUILD/fuzz-runs/"
running=0
for row in "${selected[@]}"; do
  read -r name corpus dict maxlen options <<<"$row"
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  echo "fuzz.sh: $name started $(date -u +%H:%M:%S)"
  # shellcheck disable=SC2086  # options are words
  run_one "$name" "$corpus" "$dict" "$maxlen" $options &
  running=$((running + 1))
done
wait

status=0
printf '%-14s %12s %8s %14s %14s %9s\n' fuzzer executions exec/s "cov/ft start" "cov/ft end" findings
for row in "${selected[@]}"; do
  read -r name _ <<<"$row"
  summarize "$name" || status=1
done
exit $status
