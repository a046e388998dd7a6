#!/usr/bin/env python3
"""`linnet export hf` and `linnet export onnx` of every family, checked by
their consumers: each family's fixture (tests/data/families/<card>, made by
transformers) bound to its card and exported
  * as a Hugging Face folder, loaded by transformers' AutoModelForCausalLM
    (offline): each shape key the exported config.json has equal to the
    fixture's, and the logits on the fixture's two prompts;
  * as ONNX (`forward`, dynamic B and S), run by ONNX Runtime on the same
    prompts;
logits within 1e-5 of their scale of the fixture's (the f32 rule). (The
GGUF export is checked in CI against files llama.cpp's own tables wrote:
tests/export/export_gguf.cpp, make_gguf_fixtures.py.)

Run: .cache/torch-venv/bin/python tests/families/check_exports.py
(needs torch, transformers 4.55, safetensors and onnxruntime from PyPI, and
a built build/bin/linnet; CI does not run it)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "families"
CARDS = ["qwen3-0.6b", "qwen2.5-0.5b-instruct", "phi-3-mini-4k-instruct", "gemma-3-270m"]
SHAPE_KEYS = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "head_dim", "sliding_window", "query_pre_attn_scalar", "rope_theta",
              "rms_norm_eps", "rope_local_base_freq", "tie_word_embeddings", "model_type"]


def generics(card: str, config: dict) -> list[str]:
    """--set K=V for each generic the card's [config] maps, from config.json."""
    import tomllib
    table = tomllib.loads((ROOT / "nest" / card / "nest.toml").read_text())["config"]
    out = []
    for name, keys in table.items():
        if "." in name or name in ("absent", "expect"):
            continue
        for key in [keys] if isinstance(keys, str) else keys:
            if " / " in key:
                a, b = key.split(" / ")
                if a in config and b in config:
                    out += ["--set", f"{name}={config[a] // config[b]}"]
                    break
            elif config.get(key) is not None:
                value = {"float32": "f32", "bfloat16": "bf16"}.get(config[key], config[key])
                out += ["--set", f"{name}={value}"]
                break
    return out + ["--set", "MaxSeq=4096"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--linnet", default=str(ROOT / "build" / "bin" / "linnet"))
    args = ap.parse_args()
    failures = []
    for card in CARDS:
        fixture = DATA / card
        config = json.loads((fixture / "config.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / card
            cmd = [args.linnet, "export", "hf", str(ROOT / "nest" / card), "--weights",
                   str(fixture / "model.safetensors"), *generics(card, config), "-o", str(out)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"FAIL {card}: export failed:\n{p.stderr}")
                failures.append(card)
                continue
            written = json.loads((out / "config.json").read_text())
            differ = [k for k in SHAPE_KEYS if k in config and k in written and written[k] != config[k]]
            model = AutoModelForCausalLM.from_pretrained(out, local_files_only=True, torch_dtype=torch.float32)
            model.eval()
            expected = load_file(str(fixture / "expected.safetensors"))
            worst = 0.0
            for k in ("1", "2"):
                with torch.no_grad():
                    logits = model(expected["tokens" + k].long()).logits
                want = expected["logits" + k]
                worst = max(worst, float((logits - want).abs().max() / want.abs().max()))
            ok = worst <= 1e-5 and not differ
            print(f"{'ok  ' if ok else 'FAIL'} {card} hf: {type(model).__name__} from the export, logits within "
                  f"{worst:.1e} of the scale of transformers' on the fixture"
                  + (f"; config.json differs at {differ}" if differ else ""))
            if not ok:
                failures.append(card + " hf")
            onnx = Path(tmp) / (card + ".onnx")
            cmd = [args.linnet, "export", "onnx", str(ROOT / "nest" / card), "--weights",
                   str(fixture / "model.safetensors"), *generics(card, config), "--entry", "forward",
                   "--generic", "B=1", "--generic", "S=1", "-o", str(onnx)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"FAIL {card} onnx: export failed:\n{p.stderr}")
                failures.append(card + " onnx")
                continue
            session = onnxruntime.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
            worst = 0.0
            for k in ("1", "2"):
                (logits,) = session.run(None, {"tokens": expected["tokens" + k].numpy()})
                want = expected["logits" + k].numpy()
                worst = max(worst, float(np.abs(logits - want).max() / np.abs(want).max()))
            ok = worst <= 1e-5
            print(f"{'ok  ' if ok else 'FAIL'} {card} onnx: ONNX Runtime {onnxruntime.__version__} on the export, "
                  f"logits within {worst:.1e} of the scale of transformers' on the fixture")
            if not ok:
                failures.append(card + " onnx")
    print("every export agrees with transformers" if not failures else f"failed: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
