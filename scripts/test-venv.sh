#!/usr/bin/env bash
# A Python virtual environment for tests that drive the server with the
# official `openai` client (tests/serve): .cache/test-venv, never in git, with
# pip's cache in .cache/pip. Prints the venv's python on stdout (messages go
# to stderr). Idempotent, and quiet once installed.
set -euo pipefail
cd "$(dirname "$0")/.."
openai_version=3.57.0
venv=.cache/test-venv
py=$venv/bin/python
stamp=$venv/.openai-$openai_version
if [ ! -e "$stamp" ]; then
  mkdir -p .cache/pip
  [ -x "$py" ] || python3 -m venv "$venv" >&2
  PIP_CACHE_DIR=$PWD/.cache/pip "$py" -m pip install --quiet --disable-pip-version-check \
    "openai==$openai_version" >&2
  touch "$stamp"
fi
echo "$PWD/$py"
