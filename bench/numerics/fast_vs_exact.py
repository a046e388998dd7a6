#!/usr/bin/env python3
"""The `fast` numerics against the exact ones on SmolLM2-135M-Instruct.

    python3 bench/numerics/fast_vs_exact.py [--bin build/bin] [--weights GGUF] [--threads N]

For each of the five chat prompts of tests/data/smollm2/greedy.json (the
fixture whose exact greedy ids equal transformers'), it prints the 32 greedy
ids with `--numerics exact` and with `--numerics fast` on the CPU backend,
and the largest logit difference between the two along the exact answer's
tokens (both models fed the same tokens: prefill, then one decode per token,
in one `linnet call` process each). Not a test: `fast` is allowed to differ
within its documented bound (compiler/targets/cpu/kernels/linnet_fast_kernels.c);
this reports by how much, and whether the greedy answers change.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PACKAGE = os.path.join(ROOT, "nest", "smollm2-135m-instruct")


def logits_along(args, numerics, ids, answer, tmp):
    """Logits after the prompt and after each answer token but the last."""
    cmd = [os.path.join(args.bin, "linnet"), "call", PACKAGE, "--weights", args.weights, "--backend", "cpu",
           "--numerics", numerics, "--threads", str(args.threads)]
    np.save(os.path.join(tmp, "prompt.npy"), np.array([ids], dtype=np.int32))
    outs = [os.path.join(tmp, f"{numerics}-0.npy")]
    cmd += ["--entry", "prefill", "--input", f"tokens=@{tmp}/prompt.npy", "--input", "pos=0", "--output", f"@{outs[0]}"]
    for k, token in enumerate(answer[:-1]):
        path = os.path.join(tmp, f"token-{k}.npy")
        np.save(path, np.array([[token]], dtype=np.int32))
        outs.append(os.path.join(tmp, f"{numerics}-{k + 1}.npy"))
        cmd += ["--entry", "decode", "--input", f"token=@{path}", "--input", f"pos={len(ids) + k}",
                "--output", f"@{outs[-1]}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return [np.load(p).reshape(-1) for p in outs]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--weights", default=os.path.join(ROOT, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()
    fixture = json.load(open(os.path.join(ROOT, "tests", "data", "smollm2", "greedy.json")))
    worst = 0.0
    changed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in fixture["cases"]:
            ids, want = case["ids"], case["greedy"]
            exact = logits_along(args, "exact", ids, want, tmp)
            fast = logits_along(args, "fast", ids, want, tmp)
            exact_ids = [int(np.argmax(l)) for l in exact]
            # fast's own greedy answer: argmax along the exact path, up to the first difference
            fast_ids = [int(np.argmax(l)) for l in fast]
            diff = max(float(np.max(np.abs(a - b))) for a, b in zip(exact, fast))
            scale = max(float(np.max(np.abs(a))) for a in exact)
            worst = max(worst, diff)
            first = next((k for k, (a, b) in enumerate(zip(exact_ids, fast_ids)) if a != b), None)
            changed += first is not None
            print(f"prompt: {case['prompt']!r}")
            print(f"  exact greedy  {exact_ids}{'  (= transformers)' if exact_ids == want else '  (differs from transformers!)'}")
            print(f"  fast argmax   {fast_ids}")
            print(f"  first differing step: {first if first is not None else 'none'}; "
                  f"largest |logit difference| {diff:.4f} (logits up to {scale:.1f})")
    print(f"largest |logit difference| over the five prompts: {worst:.4f}; prompts whose greedy answer changes: {changed}")


if __name__ == "__main__":
    sys.exit(main())
