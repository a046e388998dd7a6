#!/usr/bin/env bash
# The installed package, used from outside the source and build trees (ctest
# install_package; docs/testing.md):
#   1. `cmake --install` into a scratch prefix, which is then moved: a
#      relocated install must find its own standard library and linnetc;
#   2. the moved prefix's stdlib gets a module the source tree's lacks
#      (std.install_probe), used by a package `probe`: it checks and runs only
#      where the prefix's stdlib is the one read;
#   3. copies of examples/, the cards and the gqa2 fixture outside the trees:
#      examples/ is configured with find_package(Linnet), built and run;
#      greedy's ids and tally's sums equal the in-tree build's programs' (and
#      transformers' ids, as example_greedy's);
#   4. tests/install's host project: every installed header compiles alone
#      with only the installed include folder, and `probe` calls an entry
#      through liblinnet.so;
#   5. the installed linnetc and linnet run with a clean environment (no
#      LINNET_STDLIB, LINNETC or LINNET_CACHE; the working folder and HOME in
#      the scratch folder).
# With a cpu backend, the prefix's bin/linnetc is a wrapper that logs each
# run: compiled entries must come from the prefix's linnetc, not the build's.
#
#   run.sh BUILD_DIR SOURCE_DIR CMAKE CXX GENERATOR PYTHON HAVE_CPU(0|1)
set -euo pipefail
build=$1 source=$2 cmake=$3 cxx=$4 generator=$5 python=$6 cpu=$7

work=$(mktemp -d "${TMPDIR:-/tmp}/linnet-install.XXXXXX")
trap 'status=$?; if [ $status = 0 ]; then rm -rf "$work"; else echo "install_package: kept $work" >&2; fi' EXIT
step() { echo "== $*"; }
fail() { echo "install_package: $*" >&2; exit 1; }
# A program with nothing of the trees in its environment, run from the scratch folder.
clean() { (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work/home" "$@"); }
expect() {  # expect WHAT EXPECTED ACTUAL
  [ "$2" = "$3" ] || fail "$1: expected
$2
got
$3"
}

step "install, then move the prefix"
"$cmake" --install "$build" --prefix "$work/staged" >"$work/install.log"
mv "$work/staged" "$work/prefix"
P=$work/prefix
for f in bin/linnetc bin/linnet lib/cmake/Linnet/LinnetConfig.cmake lib/cmake/Linnet/LinnetConfigVersion.cmake \
         include/linnet/nest/nest.h share/linnet/stdlib/std/nn/linear.linnet; do
  [ -e "$P/$f" ] || fail "the prefix has no $f"
done
if grep -rIl -e "$source" -e "$build" "$P" >"$work/mentions"; then
  fail "installed files name the source or build tree: $(tr '\n' ' ' <"$work/mentions")"
fi
mkdir -p "$work/home"
cat >"$P/share/linnet/stdlib/std/install_probe.linnet" <<'LINNET'
// Only in the installed copy (tests/install/run.sh).
module std.install_probe

pub const PROBE: f32 = 42.5
LINNET
mkdir -p "$work/probe/src"
printf '[package]\nname = "probe"\nversion = "0.1.0"\nlanguage = "0.1"\n' >"$work/probe/linnet.toml"
printf '[source]\npath = "src/lib.linnet"\nroot = "Probe"\n' >"$work/probe/nest.toml"
cat >"$work/probe/src/lib.linnet" <<'LINNET'
module probe

use std.install_probe::{PROBE}

pub block Probe {
    pub entry value() -> Tensor[2; f32] {
        return fill<f32>([2], PROBE)
    }
}
LINNET
if [ "$cpu" = 1 ]; then
  mv "$P/bin/linnetc" "$P/bin/linnetc.real"
  printf '#!/bin/sh\necho "$0 $*" >>%s/linnetc.log\nexec "$(dirname "$0")/linnetc.real" "$@"\n' "$work" >"$P/bin/linnetc"
  chmod +x "$P/bin/linnetc"
fi

step "the installed linnetc and linnet"
out=$(clean "$P/bin/linnetc" check probe)
[[ $out == "probe: ok"* ]] || fail "linnetc check probe: $out"
cp -r "$source/nest" "$work/nest"
mkdir -p "$work/gqa2" && cp "$source/tests/data/llama/gqa2/model.safetensors" "$work/gqa2/"
out=$(clean "$P/bin/linnetc" check nest/llama-3.1-8b-instruct)
[[ $out == *"parameters: 291 tensors, 8,030,261,248 values"* ]] || fail "linnetc check of the card: $out"
backends=reference
[ "$cpu" = 1 ] && backends="reference cpu"
for backend in $backends; do
  rm -rf "$work/linnetc.log" "$work/value.npy" "$work/home/.cache"  # nothing compiled yet
  clean "$P/bin/linnet" call probe --random-weights --backend $backend --entry value --output @value.npy
  expect "linnet call probe on $backend" "[42.5, 42.5]" "$("$python" "$source/tests/data/call/npy.py" read "$work/value.npy")"
  if [ $backend = cpu ]; then
    grep -q "^$P/bin/linnetc build" "$work/linnetc.log" || fail "linnet --backend cpu did not run the prefix's linnetc"
  fi
done

step "examples/ against the installed package"
cp -r "$source/examples" "$work/examples"
"$cmake" -S "$work/examples" -B "$work/examples-build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" >"$work/examples-configure.log"
"$cmake" --build "$work/examples-build" >"$work/examples-build.log"
sets="Vocab=64 H=64 Heads=4 KvHeads=2 Inner=96 Layers=2 MaxSeq=64 T=f32 -- 47 19 38 53 12 52 24 57"
# shellcheck disable=SC2086
# On the reference backend, as the in-tree example_greedy: the compiled path is probe's below.
greedy=$(clean "$work/examples-build/greedy" nest/llama-3.1-8b-instruct gqa2/model.safetensors --backend=reference $sets)
expect "greedy (installed)" "llama: 56 16 48 7 13 14 13 28" "$greedy"
# shellcheck disable=SC2086
expect "greedy (installed) against the build's" \
  "$(cd "$source" && "$build/bin/greedy" nest/llama-3.1-8b-instruct tests/data/llama/gqa2/model.safetensors \
    --backend=reference $sets)" \
  "$greedy"
tally=$(clean "$work/examples-build/tally" examples/tally --backend=reference)
expect "tally (installed) against the build's" "$("$build/bin/tally" "$source/examples/tally" --backend=reference)" "$tally"
[[ $tally == *"means: 1.75 4.75 7.75" ]] || fail "tally: $tally"
# The tutorial shows the files of examples/tally and tally.cpp whole.
for f in tally/linnet.toml tally/nest.toml tally/src/lib.linnet tally.cpp; do
  "$python" -c 'import sys; sys.exit(open(sys.argv[1]).read() not in open(sys.argv[2]).read())' \
    "$source/examples/$f" "$source/docs/tutorial.md" || fail "docs/tutorial.md does not show examples/$f as it is"
done

step "the public headers alone, and liblinnet.so's own stdlib and linnetc"
cp -r "$source/tests/install" "$work/host"
"$cmake" -S "$work/host" -B "$work/host-build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" >"$work/host-configure.log"
"$cmake" --build "$work/host-build" >"$work/host-build.log"
for backend in $backends; do
  rm -rf "$work/linnetc.log" "$work/home/.cache"
  expect "probe through liblinnet.so on $backend" "value: 42.5 42.5" "$(clean "$work/host-build/probe" probe $backend value)"
  if [ $backend = cpu ]; then
    grep -q "^$P/bin/linnetc build" "$work/linnetc.log" || fail "liblinnet.so (cpu) did not run the prefix's linnetc"
  fi
done
step "ok"
