#!/usr/bin/env bash
# llama-cpp-python 0.3.36 with exact f32 GELU, in .cache/peers-exact-gelu-venv:
#   bash tests/families/build_llama_cpp_exact_gelu.sh
#   LLAMA_CPP_VENV=.cache/peers-exact-gelu-venv bash tests/families/check_gemma_with_llama_cpp.sh --exact-gelu
# Stock ggml's CPU backend defines GGML_GELU_FP16, so its GELU (and GEGLU)
# reads an f16 lookup table (~1e-3 error), and on the F32 GGUF llama.cpp's
# greedy ids part from Linnet's at exact ties. This builds the same sdist with
# that define removed, so the check compares against llama.cpp computing GELU
# in f32. ~10 minutes on 2 cores; idempotent (skips when the venv already
# imports llama_cpp). Needs PyPI.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.cache/peers-exact-gelu-venv
version=0.3.36
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import gguf, numpy, llama_cpp" 2>/dev/null; then
  echo "$venv already imports llama_cpp"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q gguf numpy
work=.cache/exact-gelu-src
rm -rf "$work"
mkdir -p "$work"
"$venv/bin/pip" download -q --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$work"
tar -xzf "$work"/llama_cpp_python-"$version".tar.gz -C "$work"
src="$work/llama_cpp_python-$version"
files=$(grep -rlE '^[[:space:]]*#[[:space:]]*define[[:space:]]+GGML_GELU_FP16\b' "$src/vendor/llama.cpp/ggml/src" || true)
[ -n "$files" ] || { echo "error: no '#define GGML_GELU_FP16' in $src/vendor/llama.cpp/ggml/src" >&2; exit 1; }
for f in $files; do
  echo "removing GGML_GELU_FP16 from $f"
  sed -i -E 's|^([[:space:]]*)#([[:space:]]*)define[[:space:]]+GGML_GELU_FP16\b.*$|\1// exact f32 GELU: GGML_GELU_FP16 removed by build_llama_cpp_exact_gelu.sh|' "$f"
done
if grep -rqE '^[[:space:]]*#[[:space:]]*define[[:space:]]+GGML_GELU_FP16\b' "$src/vendor/llama.cpp/ggml/src"; then
  echo "error: GGML_GELU_FP16 still defined after the edit" >&2
  exit 1
fi
CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-2}" nice -n "${NICE:-10}" "$venv/bin/pip" install -q "./$src"
"$venv/bin/python" -c "import llama_cpp; print('llama_cpp', llama_cpp.__version__, 'with exact f32 GELU in', '$venv')"
