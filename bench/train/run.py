"""Training speed: `linnet finetune` against torch on the same model, rows,
batch and threads, in the same run (bench/train/README.md).

    .cache/torch-venv/bin/python bench/train/run.py --linnet build/bin/linnet [--threads 2]
        [--set H=64 --set Layers=2 ...] [--steps 6] [--batch-tokens 128]

Both train the Llama card at the given generics from the same seeded random
values (exported with `linnet export hf`), full and LoRA (r 8 on all seven
projections), on a synthetic text set, and print tokens per second of
training steps and the ratio Linnet / torch (torch's after one untimed
step; Linnet's over its whole run, as `linnet finetune` reports it).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import torch
from transformers import LlamaForCausalLM

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CARD = os.path.join(ROOT, "nest", "llama-3.1-8b-instruct")
TOKENIZER = os.path.join(ROOT, "tests", "data", "tokenizer", "spbpe")
DEFAULT_SETS = ["Vocab=4000", "H=128", "Heads=4", "KvHeads=2", "Inner=256", "Layers=2", "MaxSeq=256", "T=f32"]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def rows(path, count=64):
    words = "the sea is wide and the sky is grey while a small model learns one small thing at a time".split()
    with open(path, "w") as f:
        for k in range(count):
            text = " ".join(words[(k + j) % len(words)] for j in range(40))
            f.write('{"text": "%s"}\n' % text)


def linnet_speed(args, sets, data, kind, out):
    command = [args.linnet, "finetune", CARD, "--random-weights", *[a for s in sets for a in ("--set", s)],
               "--tokenizer", TOKENIZER, "--data", data, f"--{kind}", "--steps", str(args.steps + 1),
               "--batch-tokens", str(args.batch_tokens), "--report-every", "1", "--lr", "1e-4", "-o", out]
    if kind == "lora":
        command += ["--lora-rank", "8"]
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": str(args.threads)})
    if run.returncode != 0:
        sys.exit(run.stderr)
    # The last line's tokens/s covers the whole run, its first step included.
    last = re.findall(r"^step (\d+):.* ([0-9.]+) tokens/s, peak memory (\d+) MB", run.stdout, re.M)[-1]
    return float(last[1]), int(last[2])


def torch_speed(args, folder, kind):
    torch.set_num_threads(args.threads)
    model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
    if kind == "lora":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS, lora_dropout=0.0))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)
    ids = torch.randint(0, 4000, (1, args.batch_tokens))
    def step():
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    return args.steps * args.batch_tokens / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--linnet", required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--batch-tokens", type=int, default=128)
    args = p.parse_args()
    sets = DEFAULT_SETS + args.set
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.jsonl")
        rows(data)
        folder = os.path.join(tmp, "hf")
        subprocess.run([args.linnet, "export", "hf", CARD, "--random-weights", *[a for s in sets for a in ("--set", s)],
                        "--tokenizer", TOKENIZER, "-o", folder], check=True, stdout=subprocess.DEVNULL)
        print(f"model: {' '.join(sets)}; {args.batch_tokens} tokens a step, {args.threads} threads")
        for kind in ("full", "lora"):
            out = os.path.join(tmp, f"out-{kind}" + (".safetensors" if kind == "full" else ""))
            ours, peak = linnet_speed(args, sets, data, kind, out)
            theirs = torch_speed(args, folder, kind)
            print(f"{kind:5s} linnet (reference backend) {ours:9.1f} tokens/s (peak {peak} MB)   "
                  f"torch {theirs:9.1f} tokens/s   ratio {ours / theirs:.4f}")


if __name__ == "__main__":
    main()
