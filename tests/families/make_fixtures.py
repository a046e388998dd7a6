#!/usr/bin/env python3
"""Fixtures for the zoo's decoder families beside Llama, made by transformers
(an implementation we did not write) on tiny random configs: for each family
card, a Hugging Face folder under tests/data/families/<card>/ as
save_pretrained writes it (config.json, model.safetensors; a tied output head
is not stored), and expected.safetensors:

  tokens<k> [1, S] i32, logits<k> [1, S, V] f32   forward, two prompts k = 1, 2
  greedy<k> [1, N] i32                              N greedy ids after prompt k
  full_logits<k> [1, S + N, V] f32                  forward over prompt k and its ids
  hidden<k> [S, H] f32                              the last hidden states, after the final norm
  token_logp<k> [S - 1] f32                         log p(tokens[t + 1] | tokens[..t])

The cards load these folders with `--weights DIR --generics-from-config`
(tests/reference/llama_reference_test.cpp, built as the families_* tests:
every entry the Llama card's fixtures check, on each family). The configs are chosen so that each
family's differences show: Qwen3's head dimension is not hidden / heads and
its q_norm/k_norm weights are not ones; Qwen2's q/k/v biases are not zeros;
Phi-3's weights are fused; Gemma 3's prompts are longer than its
sliding window, and its greedy steps run past it.

Run: python3 tests/families/make_fixtures.py   (needs torch, transformers 4.55,
safetensors from PyPI; CI only reads the committed files)."""
import os
import zlib

import torch
import transformers
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data", "families")

COMMON = dict(vocab_size=96, num_hidden_layers=2, max_position_embeddings=4096, rope_theta=1000000.0,
              rms_norm_eps=1e-6, tie_word_embeddings=True, initializer_range=0.2, torch_dtype="float32")

FAMILIES = {
    # head_dim 16 with 4 heads over a hidden size of 48: D is its own generic.
    "qwen3-0.6b": ("Qwen3Config", "Qwen3ForCausalLM",
                   dict(COMMON, hidden_size=48, intermediate_size=80, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=16, attention_bias=False)),
    "qwen2.5-0.5b-instruct": ("Qwen2Config", "Qwen2ForCausalLM",
                              dict(COMMON, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                                   num_key_value_heads=2, use_sliding_window=False)),
    # Fused qkv_proj and gate_up_proj, grouped heads (Phi-3 Mini has as many
    # key/value heads as query heads; Phi-3 Medium groups them).
    "phi-3-mini-4k-instruct": ("Phi3Config", "Phi3ForCausalLM",
                               dict(COMMON, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                                    num_key_value_heads=2, rope_theta=10000.0, rms_norm_eps=1e-5,
                                    tie_word_embeddings=False, sliding_window=2047,
                                    bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    # Seven layers: a pattern of five local and one global, then one more
    # local; a window of 4 positions under prompts of 9 and 5 tokens; the
    # scores scaled by 24^-0.5, not head_dim's 16^-0.5.
    "gemma-3-270m": ("Gemma3TextConfig", "Gemma3ForCausalLM",
                     dict(COMMON, hidden_size=48, intermediate_size=80, num_attention_heads=4,
                          num_key_value_heads=1, head_dim=16, num_hidden_layers=7, sliding_window=4,
                          query_pre_attn_scalar=24, rope_local_base_freq=10000.0, initializer_range=0.05,
                          hidden_activation="gelu_pytorch_tanh", attn_implementation="eager")),
}
PROMPTS = (("1", 9), ("2", 5))
STEPS = 12


def greedy(model, tokens, steps):
    """Greedy ids by repeated forward passes (generate() may suppress an end token)."""
    seq = tokens
    for _ in range(steps):
        seq = torch.cat([seq, model(seq).logits[:, -1:].argmax(-1)], dim=1)
    return seq[:, tokens.shape[1]:]


def make(card, config_class, model_class, fields, seed):
    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**fields)
    model = getattr(transformers, model_class)(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Norm weights away from one and biases away from zero, so that a
            # weight bound to the wrong place, or not applied, shows.
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn_like(p))
    folder = os.path.join(OUT, card)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    os.remove(os.path.join(folder, "generation_config.json"))

    g = torch.Generator().manual_seed(seed)
    out = {}
    with torch.no_grad():
        for k, length in PROMPTS:
            tokens = torch.randint(0, config.vocab_size, (1, length), generator=g)
            ids = greedy(model, tokens, STEPS)
            run = model(tokens, output_hidden_states=True)
            logp = torch.log_softmax(run.logits[0].double(), dim=-1)
            out["tokens" + k] = tokens.to(torch.int32)
            out["logits" + k] = run.logits.contiguous()
            out["hidden" + k] = run.hidden_states[-1][0].contiguous()
            out["token_logp" + k] = logp[torch.arange(length - 1), tokens[0, 1:]].float().contiguous()
            out["greedy" + k] = ids.to(torch.int32).contiguous()
            out["full_logits" + k] = model(torch.cat([tokens, ids], dim=1)).logits.contiguous()
    save_file(out, os.path.join(folder, "expected.safetensors"))
    print(f"{card}: {config_class}, greedy {out['greedy1'].tolist()[0]}")


if __name__ == "__main__":
    for card, (config_class, model_class, fields) in sorted(FAMILIES.items()):
        # A seed of the card's own, so that adding a family changes no other fixture.
        make(card, config_class, model_class, fields, seed=zlib.crc32(card.encode()))
