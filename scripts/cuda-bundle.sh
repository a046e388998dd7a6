#!/usr/bin/env bash
# Makes the bundle scripts/cuda-check.sh runs on a GPU machine (no MLIR, no
# network, no linnetc that runs, at most 64 MiB carried; docs/cuda.md):
#
#   bash scripts/cuda-bundle.sh [DIR]          DIR: .cache/cuda-bundle
#
#   DIR/bin/linnet     the runtime, with DIR/lib: the shared libraries it
#                      needs beyond the C/C++ runtime
#   DIR/bin/linnetc    the cache's key only (a cache hit never runs it)
#   DIR/cache          the check's cuda artifacts, prebuilt here by running
#                      the check's calls on the fake libcuda and cuBLASLt of
#                      the tests (they compute nothing: only the artifacts
#                      are kept), and the benchmark's for the 8B card
#                      (scripts/cuda-bench.sh, its runs with --compile-only)
#   DIR/expected       the check's outputs on the CPU backend
#
# Needs a release build with the cuda target (ptxas found at configure time).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.cache/cuda-bundle}
BUILD=${BUILD:-build}
ninja -C "$BUILD" linnet linnetc linnet_cuda_fake_driver linnet_cuda_fake_cublaslt > /dev/null
FAKE=$(ls "$BUILD"/tests/liblinnet_cuda_fake_driver.so)
FAKE_BLAS=$(ls "$BUILD"/tests/liblinnet_cuda_fake_cublaslt.so)

rm -rf "$DIR"
mkdir -p "$DIR/bin" "$DIR/lib"
cp -p "$BUILD/bin/linnet" "$BUILD/bin/linnetc" "$DIR/bin/"
# Libraries beyond glibc and the compiler's runtime, which every Linux has.
ldd "$BUILD/bin/linnet" | awk '/=> \// {print $3}' |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*|libpthread|libdl|librt)\.so' |
  while read -r lib; do cp -L "$lib" "$DIR/lib/"; done

export LINNET_STDLIB=$PWD/stdlib
echo "cuda-bundle: expected outputs on the CPU backend"
LINNET_CACHE=$PWD/.cache/cuda-bundle-cpu LINNET_BIN=$DIR/bin/linnet LD_LIBRARY_PATH=$DIR/lib \
  bash scripts/cuda-check.sh --outputs cpu "$DIR/expected" > "$DIR/expected.log" 2>&1 ||
  { cat "$DIR/expected.log"; exit 1; }
echo "cuda-bundle: cuda artifacts, built through the runtime on the fake libcuda"
LINNETC=$PWD/$DIR/bin/linnetc LINNET_CACHE=$PWD/$DIR/cache LINNET_BIN=$DIR/bin/linnet LD_LIBRARY_PATH=$DIR/lib \
  LINNET_CUDA_DRIVER=$PWD/$FAKE LINNET_CUBLASLT=$PWD/$FAKE_BLAS FAKE_CUDA_ANY_KERNEL=1 \
  bash scripts/cuda-check.sh --outputs cuda "$DIR/fake" > "$DIR/fake.log" 2>&1 || { cat "$DIR/fake.log"; exit 1; }
echo "cuda-bundle: the benchmark's 8B artifacts (linnet --compile-only on the fake libcuda: no weights)"
LINNETC=$PWD/$DIR/bin/linnetc LINNET_CACHE=$PWD/$DIR/cache LINNET_BIN=$DIR/bin/linnet LD_LIBRARY_PATH=$DIR/lib \
  LINNET_CUDA_DRIVER=$PWD/$FAKE LINNET_CUBLASLT=$PWD/$FAKE_BLAS FAKE_CUDA_ANY_KERNEL=1 LINNET_BENCH_STEPS=2 \
  bash scripts/cuda-bench.sh --runs cuda "$DIR/fake-bench" --compile-only > "$DIR/fake-bench.log" 2>&1 ||
  { cat "$DIR/fake-bench.log"; exit 1; }
rm -rf "$DIR/fake" "$DIR/fake.log" "$DIR/fake-bench" "$DIR/fake-bench.log" "$DIR"/cache/.tmp-*
bytes=$(du -sb "$DIR" | cut -f1)
echo "cuda-bundle: $DIR, $((bytes / 1048576)) MiB ($(ls "$DIR/cache" | wc -l) cached artifacts)"
if ((bytes > 64 * 1048576)); then
  echo "cuda-bundle: over the 64 MiB a GPU machine is carried" >&2
  exit 1
fi
