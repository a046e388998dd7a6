#!/usr/bin/env python3
"""Linnet against llama.cpp on the same GGUF files and threads, one engine
after the other in this process's run: prefill of 128 and 512 tokens and
the decode after each, and decode at a context of 512 and 8192 at the same
position. Prints a table of tokens/s with the ratio Linnet / llama.cpp and
writes the figures as JSON. With --rounds N each row runs N times, the two
engines alternating, and prints medians (and the range of the rounds'
decode ratios): on a shared machine one pair of runs moves by 15-40%.

Usage (through run.sh, which makes the venv and the files):
  run.py --linnet build/bin/linnet --package nest/smollm2-135m-instruct
         --threads 2 [--set K=V]... --json out.json FILE.gguf...
Needs llama-cpp-python (the venv under .cache/peers-venv)."""
import argparse
import json
import statistics
import os
import subprocess
import sys
import time

DECODE_STEPS = 64


def llama_cpp_run(path, threads, prompt_len, context, steps=DECODE_STEPS):
    """(prefill tokens/s, decode tokens/s) of llama.cpp: one eval of the
    prompt, then `steps` evals of one token each."""
    from llama_cpp import Llama
    llm = Llama(model_path=path, n_ctx=context, n_threads=threads, n_threads_batch=threads, n_batch=512,
                n_ubatch=512, verbose=False)
    vocab = llm.n_vocab()
    prompt = [(k * 7919 + 11) % vocab for k in range(prompt_len)]
    llm.eval(prompt[:8])  # warm-up: weights paged in, buffers made
    llm.reset()
    start = time.perf_counter()
    llm.eval(prompt)
    prefill = prompt_len / (time.perf_counter() - start)
    llm.eval([prompt[-1]])  # one untimed step, as linnet bench's warm-up
    start = time.perf_counter()
    for k in range(steps):
        llm.eval([(k * 31 + 5) % vocab])
    decode = steps / (time.perf_counter() - start)
    del llm
    return prefill, decode


def linnet_bench(args, path, mode, prompt_len, context, steps, numerics="exact"):
    cmd = [args.linnet, "bench", mode, args.package, "--weights", path, "--backend", "cpu", "--threads",
           str(args.threads), "--set", f"MaxSeq={context}", "--prompt-len", str(prompt_len), "--steps", str(steps),
           "--numerics", numerics, "--json"] + [a for kv in args.sets for a in ("--set", kv)]
    env = dict(os.environ, LINNET_CACHE=args.cache)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])["tokens_per_s"]


def linnet_run(args, path, prompt_len, context):
    prefill = linnet_bench(args, path, "prefill", prompt_len, context, 3)
    decode = linnet_bench(args, path, "decode", prompt_len, context, DECODE_STEPS)
    return prefill, decode


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--linnet", required=True)
    p.add_argument("--package", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="K=V",
                   help="a generic for linnet (repeatable): Gemma's card computes in bf16 by default, llama.cpp in f32")
    p.add_argument("--cache", default=".cache/peers/linnet-cache", help="LINNET_CACHE for the compiled entries")
    p.add_argument("--json", dest="json_out", required=True)
    p.add_argument("--rounds", type=int, default=1, help="runs of each row, alternating engines; medians printed")
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    rows = []
    # (what, prompt length, context): prefill then decode after it; decode at two contexts.
    runs = [("prompt 128", 128, 1024), ("prompt 512", 512, 1024), ("context 512", 128, 512),
            ("context 8192", 128, 8192)]
    for path in args.files:
        for what, prompt_len, context in runs:
            rounds = []
            for _ in range(max(1, args.rounds)):
                lp, ld = llama_cpp_run(path, args.threads, prompt_len, context)
                np_, nd = linnet_run(args, path, prompt_len, context)
                # `fast` numerics (8-bit activations, as llama.cpp computes): decode only, where it applies.
                nf = linnet_bench(args, path, "decode", prompt_len, context, DECODE_STEPS, "fast")
                rounds.append({"llama_cpp_prefill": lp, "linnet_prefill": np_, "llama_cpp_decode": ld,
                               "linnet_decode": nd, "linnet_decode_fast": nf})
            row = {"file": os.path.basename(path), "run": what, "prompt": prompt_len, "context": context,
                   "threads": args.threads}
            row.update({k: statistics.median(r[k] for r in rounds) for k in rounds[0]})
            row["rounds"] = rounds
            rows.append(row)
            lp, np_, ld, nd, nf = (row[k] for k in ("llama_cpp_prefill", "linnet_prefill", "llama_cpp_decode",
                                                    "linnet_decode", "linnet_decode_fast"))
            spread = ""
            if len(rounds) > 1:
                ratios = [r["linnet_decode"] / r["llama_cpp_decode"] for r in rounds]
                spread = f"   decode ratio by round {min(ratios):4.2f}-{max(ratios):4.2f}"
            print(f"{row['file']:<36} {what:<13} prefill {np_:7.1f} vs {lp:7.1f} ({np_ / lp:4.2f}x)   "
                  f"decode {nd:6.1f} vs {ld:6.1f} ({nd / ld:4.2f}x)   decode fast {nf:6.1f} ({nf / ld:4.2f}x)   "
                  f"[linnet vs llama.cpp, tokens/s{', medians of ' + str(len(rounds)) if len(rounds) > 1 else ''}]"
                  f"{spread}", flush=True)
    import llama_cpp
    with open(args.json_out, "w") as f:
        json.dump({"threads": args.threads, "llama_cpp_version": llama_cpp.__version__,
                   "decode_steps": DECODE_STEPS, "rounds": max(1, args.rounds), "rows": rows}, f, indent=1)
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
