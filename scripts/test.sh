#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test:
#   1. Release build (g++): unit tests and the golden corpus, through ctest.
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build (clang): the same
#      tests again, then the fuzzers for a bounded time. Without the MLIR
#      code generator: LLVM's libraries are not instrumented, and the
#      compiled path's tests run in the release build.
#  ctest runs as many tests at once as there are cores (LINNET_TEST_JOBS
#  overrides): the slow ones (a real model, whole cards) overlap.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=${LINNET_TEST_JOBS:-$(nproc)}

echo "== release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build
(cd build && ctest --output-on-failure -j"$jobs")

echo "== sanitizer build (ASan + UBSan) and fuzzing"
# A unity build: each target's sources compiled in batches, so the
# instrumented templates (fmt, JSON, Catch2) are compiled once a batch
# rather than once a file (docs/testing.md, "CI's time").
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DLINNET_SANITIZE=ON -DLINNET_FUZZ=ON -DLINNET_MLIR=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
ninja -C build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$jobs")
