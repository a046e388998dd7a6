#!/usr/bin/env bash
# Linnet against llama.cpp, side by side on the same files and threads:
#   bash bench/peers/run.sh [THREADS]
# Installs llama-cpp-python (built from source for this CPU, ~10 minutes
# the first time), gguf and numpy into .cache/peers-venv (never needed by
# CI or the tests), fetches SmolLM2-135M's Q4_1 GGUF, writes F32 and Q8_0
# GGUFs from its tensors, builds linnet if needed, and runs bench/peers/run.py
# on the three files; then the same for Gemma 3 270M's Q4_K_M GGUF
# (scripts/fetch-gemma3.sh) with the Gemma card at T = f32.
# Results: .cache/peers/results.json, .cache/peers/gemma-results.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-$(nproc)}
venv=.cache/peers-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import llama_cpp, gguf, numpy" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q gguf numpy llama-cpp-python
fi
source_gguf=$(bash scripts/fetch-smollm2.sh)
mkdir -p .cache/peers
mapfile -t made < <("$venv/bin/python" bench/peers/make_ggufs.py "$source_gguf" .cache/peers)
[ -x build/bin/linnet ] || { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C build linnet linnetc; }
"$venv/bin/python" bench/peers/run.py --linnet build/bin/linnet --package nest/smollm2-135m-instruct \
  --threads "$threads" --json .cache/peers/results.json "$source_gguf" "${made[@]}"
gemma_gguf=$(bash scripts/fetch-gemma3.sh)
mapfile -t gemma_made < <("$venv/bin/python" bench/peers/make_ggufs.py "$gemma_gguf" .cache/peers)
"$venv/bin/python" bench/peers/run.py --linnet build/bin/linnet --package nest/gemma-3-270m --set T=f32 \
  --threads "$threads" --json .cache/peers/gemma-results.json "$gemma_gguf" "${gemma_made[@]}"
