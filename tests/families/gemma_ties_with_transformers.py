#!/usr/bin/env python3
"""Where Linnet's and llama.cpp's greedy ids part on Gemma 3 270M's F32 GGUF
(check_gemma_with_llama_cpp.sh's report), which token exact arithmetic
picks: the file exported by `linnet export hf` and run by transformers in
float64 (eager attention) on the prompt and the ids both engines agreed
on. Prints, at each first difference, transformers' top three and its
logit gap between llama.cpp's token and Linnet's.

Run (after check_gemma_with_llama_cpp.sh):
  .cache/torch-venv/bin/python tests/families/gemma_ties_with_transformers.py
(needs torch, transformers 4.55 and gguf from PyPI; CI does not run it)."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_gemma_with_llama_cpp import PROMPTS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--linnet", default=str(ROOT / "build" / "bin" / "linnet"))
    ap.add_argument("--report", default=str(ROOT / ".cache" / "families" / "gemma-report.json"))
    ap.add_argument("--tokenizer", default=str(ROOT / ".cache" / "models" / "gemma-3-270m-q4_k_m.gguf"))
    args = ap.parse_args()
    report = json.loads(Path(args.report).read_text())["f32"]
    lines = subprocess.run([args.linnet, "tokenize", "--tokenizer", args.tokenizer, "--jsonl"],
                           input="".join(json.dumps(t) + "\n" for t in PROMPTS), capture_output=True, text=True,
                           check=True).stdout.splitlines()
    prompts = [[2] + json.loads(line) for line in lines]  # <bos>, as the check does
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gemma"
        subprocess.run([args.linnet, "export", "hf", str(ROOT / "nest" / "gemma-3-270m"), "--weights",
                        report["file"], "--set", "T=f32", "--set", "MaxSeq=4096", "-o", str(folder)],
                       check=True, capture_output=True)
        model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float64,
                                                     attn_implementation="eager").eval()
        for i, k in enumerate(report["first_differences"]):
            if k < 0:
                continue
            peer, ours = report["llama_cpp"][i], report["linnet"][i]
            with torch.no_grad():
                logits = model(torch.tensor([prompts[i] + peer[:k]])).logits[0, -1]
            top = torch.topk(logits, 3)
            pick = "Linnet's" if int(top.indices[0]) == ours[k] else (
                "llama.cpp's" if int(top.indices[0]) == peer[k] else "neither's")
            print(f"prompt {i + 1}, step {k + 1}: llama.cpp {peer[k]}, Linnet {ours[k]}; transformers (f64) top "
                  f"{top.indices.tolist()} at {[round(v, 5) for v in top.values.tolist()]}: {pick}; its gap "
                  f"llama.cpp's - Linnet's = {float(logits[peer[k]] - logits[ours[k]]):+.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
