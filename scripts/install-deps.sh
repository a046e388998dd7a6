#!/usr/bin/env bash
# Installs the Debian packages that building and testing Linnet needs.
# Idempotent: quiet when everything is already there.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3
  clang libclang-rt-14-dev llvm-14   # sanitizers, libFuzzer, FileCheck-14
  catch2 libfmt-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev
  libpcre2-dev pkg-config xz-utils
  # The MLIR dialect and CPU code generation (linnetc build), and the clang
  # that turns the generated LLVM IR into shared objects.
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22
  # LLVM's OpenMP runtime: the compiled code's parallel loops.
  libomp-22-dev
  # `linnet serve`'s HTTP server; its pkg-config file asks for OpenSSL, zlib and brotli.
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
  # `linnet export onnx`: ONNX's protobuf classes, checker and shape inference.
  libonnx-dev libprotobuf-dev
  # The CUDA device's tests check its column-major products against OpenBLAS.
  libopenblas-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
