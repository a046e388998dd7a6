"""The peer of the GPU check's benchmark (scripts/cuda-check.sh): transformers'
LlamaForCausalLM on the very weights linnet runs (the folder that
`linnet export hf --random-weights` wrote), in the same run.

  cuda_bench_torch.py --model DIR --json OUT [--prompt-len 128] [--steps 256]
                      [--device cuda] [--no-compile]
                      [--logits-ids IDS.npy --logits-out LOGITS.npy]

Decode: greedy generation at batch 1 after a prompt of --prompt-len tokens,
with a static KV cache and the model's forward under torch.compile
(mode "reduce-overhead": CUDA graphs), transformers' recipe for fast
decoding. The decode rate is --steps tokens over the difference between
generating --steps + 1 tokens and generating 1, each the best of a few
runs after warm-ups that compile both shapes. The prompt's ids are the
bench's (`linnet bench`: 7k + 1 mod Vocab).

Logits: the last position's logits for the ids in IDS.npy (int32 [1, n]),
as f32, for comparing with linnet's `prefill` on the same ids.
"""
import argparse
import json
import sys
import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM


def load(path, device):
    # In the checkpoint's dtype (config.json's), as linnet runs it.
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype="auto", local_files_only=True)
    except TypeError:  # transformers before `dtype`
        model = AutoModelForCausalLM.from_pretrained(path, torch_dtype="auto", local_files_only=True)
    return model.to(device).eval()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--logits-ids")
    ap.add_argument("--logits-out")
    args = ap.parse_args()

    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    t0 = time.perf_counter()
    model = load(args.model, device)
    load_seconds = time.perf_counter() - t0
    vocab = model.config.vocab_size
    out = {"peer": "transformers", "dtype": str(model.dtype).replace("torch.", ""), "transformers": __import__("transformers").__version__,
           "torch": torch.__version__, "device": str(device),
           "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None,
           "load_seconds": load_seconds}

    if args.logits_ids:
        ids = torch.from_numpy(np.load(args.logits_ids).astype(np.int64)).to(device)
        with torch.no_grad():
            logits = model(ids).logits[0, -1].float().cpu().numpy()
        np.save(args.logits_out, logits.reshape(1, -1))

    if not args.no_compile:
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    prompt = torch.tensor([[(7 * k + 1) % vocab for k in range(args.prompt_len)]], device=device)
    kwargs = dict(do_sample=False, cache_implementation="static", pad_token_id=0)

    def generate(n):
        sync()
        start = time.perf_counter()
        with torch.no_grad():
            try:
                ids = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, disable_compile=True, **kwargs)
            except (TypeError, ValueError):  # a transformers without disable_compile
                ids = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, **kwargs)
        sync()
        assert ids.shape[1] == args.prompt_len + n, ids.shape
        return time.perf_counter() - start

    t0 = time.perf_counter()
    for _ in range(3):  # compiles the prompt's shape and decode's
        generate(4)
    out["warmup_seconds"] = time.perf_counter() - t0
    first = min(generate(1) for _ in range(3))
    whole = min(generate(args.steps + 1) for _ in range(2))
    out.update({"compiled": not args.no_compile, "compile_mode": None if args.no_compile else "reduce-overhead",
                "cache": "static", "prompt_tokens": args.prompt_len, "steps": args.steps,
                "first_token_seconds": first, "generate_seconds": whole,
                "tokens_per_s": args.steps / (whole - first)})
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
