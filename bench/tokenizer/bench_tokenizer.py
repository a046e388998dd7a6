#!/usr/bin/env python3
"""Encoding speed of linnet's C++ tokenizer vs Hugging Face tokenizers (PyPI)
on the same ~1 MB text, in one run.

    python3 bench/tokenizer/bench_tokenizer.py [--build build] [--size 1000000] [--repeats 5]

Needs a build of linnet_tokenizer (ninja -C build linnet_tokenizer_tests) and
`pip install tokenizers`. The C++ driver bench/tokenizer/bench_tokenizer.cpp is
compiled here with g++ against build/runtime/liblinnet_tokenizer.a (into
BUILD/bench_tokenizer, rebuilt when older than the library or the source).

For each tokenizer (Llama 3 from tests/data/tokenizer/llama3, and the
SentencePiece-style spbpe test tokenizer) and each mode (the text as one
string; line by line) it prints tokens/s of both and the ratio, and checks
that both produced the same ids. Both run single-threaded: one encode() call
per string, best of --repeats.
"""
import argparse
import json
import lzma
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "tokenizer"))
import textgen  # noqa: E402

TOKENIZERS = [
    ("llama3", os.path.join(REPO, "tests", "data", "tokenizer", "llama3", "tokenizer.json.xz")),
    ("spbpe", os.path.join(REPO, "tests", "data", "tokenizer", "spbpe", "tokenizer.json")),
]


def build_driver(build_dir):
    lib = os.path.join(build_dir, "runtime", "liblinnet_tokenizer.a")
    if not os.path.exists(lib):
        sys.exit("missing %s: build it first (ninja -C %s linnet_tokenizer_tests)" % (lib, build_dir))
    src = os.path.join(HERE, "bench_tokenizer.cpp")
    exe = os.path.join(build_dir, "bench_tokenizer")
    if os.path.exists(exe) and os.path.getmtime(exe) > max(os.path.getmtime(lib), os.path.getmtime(src)):
        return exe
    pcre = subprocess.run(["pkg-config", "--cflags", "--libs", "libpcre2-8"], capture_output=True, text=True,
                          check=True).stdout.split()
    cmd = ["g++", "-std=c++20", "-O2", "-DNDEBUG", "-I" + os.path.join(REPO, "runtime"), src, lib, "-lfmt"] + pcre + \
          ["-o", exe]
    print("compiling:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return exe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--size", type=int, default=1_000_000, help="characters of text (default 1,000,000)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    try:
        import tokenizers
        from tokenizers import Tokenizer
    except ImportError:
        sys.exit("needs Hugging Face tokenizers: pip install tokenizers")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    exe = build_driver(os.path.abspath(args.build))

    text = textgen.prose(random.Random(1234), args.size)
    tmp = tempfile.mkdtemp(prefix="linnet-tok-bench-")
    try:
        text_path = os.path.join(tmp, "text.txt")
        with open(text_path, "w", encoding="utf-8") as f:
            f.write(text)
        lines = text.splitlines(keepends=True)
        print("text: %d characters, %d bytes, %d lines; tokenizers %s; %s" % (
            len(text), len(text.encode()), len(lines), tokenizers.__version__, os.uname().machine))
        fast = hasattr(Tokenizer, "encode_batch_fast")
        print("HF: encode() computes offsets and token strings too; encode_batch_fast() (tokenizers >= 0.21) "
              "skips offsets; both single-threaded (TOKENIZERS_PARALLELISM=false). ratio = linnet / faster HF.")
        print("%-8s %-6s %10s %14s %14s %14s %7s" % ("model", "mode", "tokens", "linnet tok/s", "HF encode",
                                                     "HF batch_fast", "ratio"))
        for name, path in TOKENIZERS:
            if path.endswith(".xz"):
                plain = os.path.join(tmp, name + ".json")
                with lzma.open(path, "rb") as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                path = plain
            hf = Tokenizer.from_file(path)
            for mode in ("whole", "lines"):
                ids_path = os.path.join(tmp, "ids.txt")
                out = subprocess.run([exe, path, text_path, str(args.repeats), mode, ids_path], capture_output=True,
                                     text=True, check=True).stdout
                ours = json.loads(out)
                best = 1e30
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    if mode == "whole":
                        ids = hf.encode(text, add_special_tokens=False).ids
                    else:
                        ids = []
                        for line in lines:
                            ids.extend(hf.encode(line, add_special_tokens=False).ids)
                    best = min(best, time.perf_counter() - t0)
                hf_rate = len(ids) / best
                fast_rate = 0.0
                if fast:
                    best_fast = 1e30
                    inputs = [text] if mode == "whole" else lines
                    for _ in range(args.repeats):
                        t0 = time.perf_counter()
                        encs = hf.encode_batch_fast(inputs, add_special_tokens=False)
                        best_fast = min(best_fast, time.perf_counter() - t0)
                    fast_ids = [i for e in encs for i in e.ids]
                    assert fast_ids == ids
                    fast_rate = len(ids) / best_fast
                with open(ids_path) as f:
                    same = [int(x) for x in f.read().split()] == ids
                print("%-8s %-6s %10d %14.0f %14.0f %14.0f %6.2fx%s" % (
                    name, mode, ours["tokens"], ours["tokens_per_s"], hf_rate, fast_rate,
                    ours["tokens_per_s"] / max(hf_rate, fast_rate), "" if same else "  (IDS DIFFER!)"))
                if mode == "whole":
                    print("         (linnet: load %.3f s, decode %.4f s, round trip %s)" % (
                        ours["load_s"], ours["decode_s"], "ok" if ours["roundtrip"] else "lossy"))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
