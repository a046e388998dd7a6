#!/usr/bin/env bash
# Configures and builds Linnet into build/ (Release). Installs missing Debian
# packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build
