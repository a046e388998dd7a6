#!/usr/bin/env bash
# The main job on its embedded default: build, then check the llama card and
# print its summary. Extra arguments go to `linnetc check` (e.g. --set Layers=2).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
exec build/bin/linnetc check nest/llama-3.1-8b-instruct "$@"
