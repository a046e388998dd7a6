#!/usr/bin/env python3
"""Reference fixtures for the llama card, made by an implementation we did not
write: Hugging Face transformers' LlamaForCausalLM with `rope_scaling` of type
`llama3`, as in the card, on random weights.

For each small config this writes, under tests/data/llama/<name>/:
  model.safetensors   the weights under the checkpoint names of the card's
                      bindings.json (f32)
  expected.safetensors  inputs and transformers' outputs, for two prompts k = 1, 2:
      tokens<k> [1, S] i32, logits<k> [1, S, V] f32 (forward),
      hidden<k> [S, H] (the last hidden states, after the final norm),
      greedy<k> [1, N] i32 (greedy continuation, N steps),
      full_logits<k> [1, S + N, V] (forward over the prompt and its continuation),
      token_logp<k> [S - 1] (log-probability of each next prompt token),
      inv_freq [D/2] f32 (the rotary table after llama3 scaling),
      greedy_bf16 [1, N], gap_bf16 [N] (prompt 1 in bf16: greedy ids, top-2 logit gaps)
  generics.txt        the card's generics for this config (`--set` lines)
  config.json         transformers' config of the model, as a Hugging Face
                      folder has it (`--weights DIR --generics-from-config`);
                      the committed ones are transformers 4.55's, in the
                      form the Hub's checkpoints have (rope_theta,
                      rope_scaling, torch_dtype; 5.x writes rope_parameters
                      and dtype instead, which the cards read too)

Run: python3 tests/reference/make_llama_fixtures.py   (needs torch, transformers,
safetensors from PyPI; CI only reads the committed files).
`--config-only` writes config.json alone (needs transformers, not torch)."""
import os
import sys

from transformers import LlamaConfig

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data", "llama")

ROPE_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}

# head_dim 16: wavelengths 2*pi*500000^(i/8) cover all three llama3 bands
# (i <= 3 below 2048, i = 4 between 2048 and 8192, i >= 5 above 8192).
CONFIGS = {
    "gqa2": dict(vocab=64, hidden=64, heads=4, kv_heads=2, inner=96, layers=2, seq=8, seq2=5, steps=30),
    "mqa3": dict(vocab=96, hidden=48, heads=3, kv_heads=1, inner=64, layers=3, seq=6, seq2=9, steps=30),
}


def llama_config(c):
    return LlamaConfig(
        vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["inner"],
        num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
        num_key_value_heads=c["kv_heads"], max_position_embeddings=131072,
        rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=dict(ROPE_SCALING),
        tie_word_embeddings=False, initializer_range=0.2, attention_bias=False,
        mlp_bias=False, torch_dtype="float32", architectures=["LlamaForCausalLM"])


def write_config(name, c):
    """config.json beside the weights, as save_pretrained writes it."""
    llama_config(c).save_pretrained(os.path.join(OUT, name))


def make(name, c, seed):
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    config = llama_config(c)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        # Non-trivial norms, so that a wrong weight shows in the logits.
        for n, p in model.named_parameters():
            if n.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(folder, "model.safetensors"))

    g = torch.Generator().manual_seed(seed)
    out = {}
    # Two prompts of different lengths, for the entries that serve several
    # requests at once; each is also run on its own as the reference.
    for k, length in (("1", c["seq"]), ("2", c["seq2"])):
        tokens = torch.randint(0, c["vocab"], (1, length), generator=g)
        with torch.no_grad():
            run = model(tokens, output_hidden_states=True)
            # Greedy by repeated forward passes: `generate` would suppress the
            # config's end token (2) under min_new_tokens, which is not greedy.
            seq = tokens
            for _ in range(c["steps"]):
                seq = torch.cat([seq, model(seq).logits[:, -1:].argmax(-1)], dim=1)
            greedy = seq[:, length:]
            full = model(torch.cat([tokens, greedy], dim=1)).logits
            logp = torch.log_softmax(run.logits[0].double(), dim=-1)
            token_logp = logp[torch.arange(length - 1), tokens[0, 1:]].float()
        out["tokens" + k] = tokens.to(torch.int32)
        out["logits" + k] = run.logits.contiguous()
        out["hidden" + k] = run.hidden_states[-1][0].contiguous()  # after the final norm
        out["greedy" + k] = greedy.to(torch.int32).contiguous()
        out["full_logits" + k] = full.contiguous()
        out["token_logp" + k] = token_logp.contiguous()  # log p(tokens[t + 1] | tokens[..t])
    out["inv_freq"] = model.model.rotary_emb.inv_freq.float().contiguous()
    # The same weights in bf16: greedy ids, and the gap between the two best
    # logits at each step (a gap of 0 is a tie that rounding may break either way).
    half = LlamaForCausalLM(config).eval()
    half.load_state_dict(model.state_dict())
    half = half.to(torch.bfloat16)
    seq = out["tokens1"].long()
    gaps = []
    with torch.no_grad():
        for _ in range(c["steps"]):
            last = half(seq).logits[0, -1].float()
            top = torch.topk(last, 2).values
            gaps.append(float(top[0] - top[1]))
            seq = torch.cat([seq, last.argmax().view(1, 1)], dim=1)
    out["greedy_bf16"] = seq[:, out["tokens1"].shape[1]:].to(torch.int32).contiguous()
    out["gap_bf16"] = torch.tensor(gaps, dtype=torch.float32)
    save_file(out, os.path.join(folder, "expected.safetensors"))
    tokens, logits, greedy = out["tokens1"], out["logits1"], out["greedy1"]
    with open(os.path.join(folder, "generics.txt"), "w") as f:
        for k, v in [("Vocab", c["vocab"]), ("H", c["hidden"]), ("Heads", c["heads"]),
                     ("KvHeads", c["kv_heads"]), ("Inner", c["inner"]), ("Layers", c["layers"]),
                     ("MaxSeq", 64), ("T", "f32")]:
            f.write(f"{k}={v}\n")
    write_config(name, c)
    print(f"{name}: logits {tuple(logits.shape)}, greedy {greedy.tolist()[0][:8]}...")


if __name__ == "__main__":
    for i, (name, c) in enumerate(sorted(CONFIGS.items())):
        if "--config-only" in sys.argv[1:]:
            write_config(name, c)
        else:
            make(name, c, seed=1234 + i)
