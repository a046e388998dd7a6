#!/usr/bin/env bash
# Builds and runs the kernel micro-benchmark (not part of CI).
#   bash bench/kernels/run.sh             the table: GFLOP/s, FMA peak and bandwidth ratios
#   bash bench/kernels/run.sh threshold   decode vs prefill path for small M
#   bash bench/kernels/run.sh attention   attention_f32: causal prefill and decode
#   bash bench/kernels/run.sh train       a gradient's f32 products (transposed x, W as [K, N])
#   bash bench/kernels/run.sh fast [m]    exact vs `fast` numerics (bench_fast.c)
# Extra compiler flags via CFLAGS, e.g. CFLAGS=-DLINNET_KERNELS_DECODE_MAX_M=8.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
llvm=${LINNET_LLVM_ROOT:-/usr/lib/llvm-22}
out=${BENCH_OUT:-/tmp/linnet-kernels-bench}
if [ "${1:-}" = fast ]; then # bench_fast.c: exact vs `fast` numerics (bash run.sh fast [m])
  shift; k="$here/../../compiler/targets/cpu/kernels"
  "$llvm/bin/clang" -O3 -march=native -fopenmp ${CFLAGS:-} "$here/bench_fast.c" "$k/linnet_kernels.c" "$k/linnet_fast_kernels.c" -o "$out-fast" -L"$llvm/lib" -lomp -Wl,-rpath,"$llvm/lib" -lm
  exec "$out-fast" "$@"
fi
"$llvm/bin/clang" -O3 -march=native -fopenmp ${CFLAGS:-} "$here/bench.c" -o "$out" \
  -L"$llvm/lib" -lomp -Wl,-rpath,"$llvm/lib" -lm
exec "$out" "$@"
