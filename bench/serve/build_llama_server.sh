#!/usr/bin/env bash
# Builds llama.cpp's own OpenAI-compatible server, `llama-server`, from the
# llama.cpp sources vendored in PyPI's llama-cpp-python 0.3.36 sdist (the
# same llama.cpp that bench/peers measures through its Python binding):
#   bash bench/serve/build_llama_server.sh
# Prints the binary's path. Idempotent: a built binary is reused.
#
# Layout, under the repository root (never in git):
#   .cache/pip/llama_cpp_python-0.3.36.tar.gz  the sdist (pip download, reused if present)
#   .cache/llama-server/src/                   vendor/llama.cpp out of it
#   .cache/llama-server/build/bin/llama-server the server
#   .cache/llama-server/build/bin/llama-tokenize  its tokenizer tool (token_pool.py
#                                              falls back on it)
#
# The sdist has the web UI's Svelte sources but not its built assets
# (tools/ui/dist), and llama.cpp's scripts/ui-assets.cmake would then try npm
# and a download. LLAMA_BUILD_UI=OFF and LLAMA_USE_PREBUILT_UI=OFF make it
# take neither and embed an empty asset table: the server is built without
# a web UI (`/` answers 404), which a benchmark does not need. No tests, no
# examples, no CURL, no OpenSSL (plain HTTP on loopback).
#
# Takes ~10+ minutes on 2 cores. Environment: JOBS (default 2), NICE (10).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
version=0.3.36
dir=.cache/llama-server
bin=$dir/build/bin/llama-server
if [ -x "$bin" ] && [ -x "$dir/build/bin/llama-tokenize" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$root/$bin"
  exit 0
fi
mkdir -p .cache/pip "$dir"
sdist=.cache/pip/llama_cpp_python-$version.tar.gz
if [ ! -s "$sdist" ]; then
  python3 -m pip download --quiet --no-binary :all: --no-deps --dest .cache/pip \
    "llama-cpp-python==$version" >&2
fi
if [ ! -f "$dir/src/CMakeLists.txt" ]; then
  rm -rf "$dir/src" "$dir/src.part"
  mkdir -p "$dir/src.part"
  tar -xzf "$sdist" -C "$dir/src.part" --strip-components=3 \
    "llama_cpp_python-$version/vendor/llama.cpp"
  mv "$dir/src.part" "$dir/src"
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
nice -n "${NICE:-10}" cmake -S "$dir/src" -B "$dir/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF >&2
nice -n "${NICE:-10}" cmake --build "$dir/build" --target llama-server llama-tokenize -j "${JOBS:-2}" >&2
"$bin" --version >&2
echo "$root/$bin"
