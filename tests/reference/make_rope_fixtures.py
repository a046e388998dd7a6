#!/usr/bin/env python3
"""Reference rope frequencies for the llama card, made by an implementation we
did not write: Hugging Face transformers' `_compute_llama3_parameters` (the
`ROPE_INIT_FUNCTIONS["llama3"]` entry), with the card's `rope_scaling` and
`rope_theta`.

For each head dim D this writes, under tests/data/rope/:
  inv_freq_d<D>.npy        [D/2] f32  transformers' inv_freq after llama3 scaling
  inv_freq_exact_d<D>.npy  [D/2] f64  the same formula in float64 (for messages:
                                      how far each side is from the exact value)
  bands_d<D>.npy           [D/2] i32  each frequency's band, by transformers'
                                      comparisons: 0 high (left alone),
                                      1 medium (blended), 2 low (divided by factor)

D = 128 is the card's head dim (H / Heads = 4096 / 32); D = 16 is the head dim
of the llama fixtures (tests/reference/make_llama_fixtures.py: hidden 64,
4 heads), whose frequencies cover all three bands.

Run: python3 tests/reference/make_rope_fixtures.py   (needs torch and
transformers from PyPI; CI only reads the committed files)."""
import math
import os

import numpy as np
import torch
import transformers
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS, _compute_llama3_parameters

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data", "rope")

# The card's config.json values (nest/llama-3.1-8b-instruct/src/rope.linnet).
THETA = 500000.0
ROPE_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}

# head dim -> (hidden_size, num_attention_heads), the way transformers derives it.
HEAD_DIMS = {128: (4096, 32), 16: (64, 4)}


def config_for(hidden, heads):
    return LlamaConfig(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=heads,
                       max_position_embeddings=131072, rope_theta=THETA,
                       rope_scaling=dict(ROPE_SCALING))


def exact(dim):
    """The llama3 formula in float64, from the exact base frequencies."""
    s = ROPE_SCALING
    low_wavelen = s["original_max_position_embeddings"] / s["low_freq_factor"]
    high_wavelen = s["original_max_position_embeddings"] / s["high_freq_factor"]
    out = []
    for i in range(0, dim, 2):
        f = THETA ** (-i / dim)
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(f)
        elif wavelen > low_wavelen:
            out.append(f / s["factor"])
        else:
            smooth = (s["original_max_position_embeddings"] / wavelen - s["low_freq_factor"]) / (
                s["high_freq_factor"] - s["low_freq_factor"])
            out.append((1 - smooth) * f / s["factor"] + smooth * f)
    return np.array(out, dtype=np.float64)


def bands(config, dim):
    """Each frequency's band, by the comparisons `_compute_llama3_parameters`
    makes on its own (f32) base frequencies."""
    p = config.rope_parameters
    base = p["rope_theta"]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))
    wavelen = 2 * math.pi / inv_freq
    old = p["original_max_position_embeddings"]
    low = wavelen > old / p["low_freq_factor"]
    high = wavelen < old / p["high_freq_factor"]
    return torch.where(low, 2, torch.where(high, 0, 1)).to(torch.int32).numpy()


def main():
    assert ROPE_INIT_FUNCTIONS["llama3"] is _compute_llama3_parameters
    os.makedirs(OUT, exist_ok=True)
    for dim, (hidden, heads) in sorted(HEAD_DIMS.items()):
        config = config_for(hidden, heads)
        config.standardize_rope_params()
        p = config.rope_parameters
        # Guard against a transformers version reading the config differently.
        assert p["rope_type"] == "llama3" and p["rope_theta"] == THETA, p
        for k, v in ROPE_SCALING.items():
            assert p[k] == v, (k, p)
        inv_freq, attention_factor = ROPE_INIT_FUNCTIONS["llama3"](config, torch.device("cpu"))
        assert attention_factor == 1.0 and inv_freq.dtype == torch.float32
        assert inv_freq.shape == (dim // 2,)
        inv_freq = inv_freq.numpy().astype("<f4")
        ex = exact(dim)
        b = bands(config, dim)
        np.save(os.path.join(OUT, f"inv_freq_d{dim}.npy"), inv_freq)
        np.save(os.path.join(OUT, f"inv_freq_exact_d{dim}.npy"), ex.astype("<f8"))
        np.save(os.path.join(OUT, f"bands_d{dim}.npy"), b.astype("<i4"))
        rel = np.abs(inv_freq.astype(np.float64) - ex) / ex
        print(f"D={dim}: {dim // 2} frequencies, bands high/medium/low = "
              f"{(b == 0).sum()}/{(b == 1).sum()}/{(b == 2).sum()}, "
              f"transformers f32 vs float64 max rel {rel.max():.3e} "
              f"(transformers {transformers.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
