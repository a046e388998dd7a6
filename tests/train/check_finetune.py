"""`linnet finetune --full` against torch, step by step: runs the command on
tests/data/train/finetune (written by make_finetune_fixture.py) with the
fixture's settings and checks every step's training loss against torch's.
Rule: within 1e-3 at every step (issue 35's rule for a training run);
measured 2e-6 at most.

    python3 tests/train/check_finetune.py build/bin/linnet
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
DATA = os.path.join(ROOT, "tests", "data", "train", "finetune")
RULE = 1e-3


def main():
    linnet = sys.argv[1]
    with open(os.path.join(DATA, "expected.json")) as f:
        expected = json.load(f)
    s = expected["settings"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "trained.safetensors")
        command = [linnet, "finetune", os.path.join(ROOT, "nest", "llama-3.1-8b-instruct"), "--random-weights",
                   *[a for v in expected["sets"] for a in ("--set", v)],
                   "--tokenizer", os.path.join(ROOT, "tests", "data", "tokenizer", "spbpe"),
                   "--data", os.path.join(DATA, "train.jsonl"), "--full", "--steps", str(s["steps"]),
                   "--batch-tokens", str(s["batch_tokens"]), "--lr", str(s["lr"]), "--warmup", str(s["warmup"]),
                   "--weight-decay", str(s["weight_decay"]), "--max-grad-norm", str(s["max_grad_norm"]),
                   "--seed", str(s["seed"]), "--report-every", "1", "-o", out]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"linnet finetune failed ({run.returncode}):\n{run.stderr}")
        if not os.path.exists(out):
            sys.exit("no trained params written")
    ours = [float(m) for m in re.findall(r"^step \d+: train loss ([0-9.]+)", run.stdout, re.M)]
    if len(ours) != len(expected["losses"]):
        sys.exit(f"{len(ours)} steps reported, expected {len(expected['losses'])}:\n{run.stdout}")
    worst = 0.0
    for step, (a, b) in enumerate(zip(ours, expected["losses"]), 1):
        worst = max(worst, abs(a - b))
        if abs(a - b) > RULE:
            sys.exit(f"step {step}: loss {a:.6f}, torch {b:.6f} (rule {RULE})")
    print(f"{len(ours)} steps: every loss within {worst:.1e} of torch's ({expected['torch']}); "
          f"{ours[0]:.4f} -> {ours[-1]:.4f}")


if __name__ == "__main__":
    main()
