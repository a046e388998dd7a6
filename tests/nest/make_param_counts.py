#!/usr/bin/env python3
"""Parameter counts of the zoo's models as transformers gives them.

Each model's published config.json (its architecture fields, transcribed
here: these machines cannot reach the Hugging Face hub) is instantiated on
PyTorch's meta device, so no memory is allocated and no weights are needed,
and its parameters are counted the way the model's own card reports them:
tied embeddings once. Writes tests/data/nest/param_counts.json, which
tests/nest/check_param_counts.py compares with `linnetc check` of each card,
and each model's config.json as the Hub publishes it (transformers 4's keys:
rope_theta, rope_scaling, torch_dtype) into tests/data/nest/configs/, which
the cards' [config] tables must accept (tests/runtime/model_config_test.cpp).

    python3 -m venv .cache/hf-venv && .cache/hf-venv/bin/pip install torch transformers
    .cache/hf-venv/bin/python tests/nest/make_param_counts.py
"""
import json
import pathlib

import torch
import transformers

LLAMA = "LlamaConfig"
CONFIGS = {
    "llama-3.1-8b-instruct": (LLAMA, dict(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
        rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
        rope_scaling={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"})),
    "llama-3.2-1b-instruct": (LLAMA, dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
        rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=True,
        rope_scaling={"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"})),
    "smollm2-135m-instruct": (LLAMA, dict(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
        rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True)),
    "smollm2-1.7b-instruct": (LLAMA, dict(
        vocab_size=49152, hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
        num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=8192,
        rms_norm_eps=1e-5, rope_theta=130000.0, tie_word_embeddings=True)),
    "tinyllama-1.1b-chat": (LLAMA, dict(
        vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
        num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)),
    "mistral-7b-instruct-v0.3": ("MistralConfig", dict(
        vocab_size=32768, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=32768,
        rms_norm_eps=1e-5, rope_theta=1000000.0, sliding_window=None, tie_word_embeddings=False)),
    "qwen3-0.6b": ("Qwen3Config", dict(
        vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
        rms_norm_eps=1e-6, rope_theta=1000000.0, attention_bias=False, tie_word_embeddings=True)),
    "qwen2.5-0.5b-instruct": ("Qwen2Config", dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
        rms_norm_eps=1e-6, rope_theta=1000000.0, sliding_window=32768, max_window_layers=21,
        use_sliding_window=False, tie_word_embeddings=True)),
    "phi-3-mini-4k-instruct": ("Phi3Config", dict(
        vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
        original_max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=10000.0,
        sliding_window=2047, tie_word_embeddings=False, bos_token_id=1, eos_token_id=32000,
        pad_token_id=32000)),
    "gemma-3-270m": ("Gemma3TextConfig", dict(
        vocab_size=262144, hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
        num_attention_heads=4, num_key_value_heads=1, head_dim=256, max_position_embeddings=32768,
        rms_norm_eps=1e-6, rope_theta=1000000.0, rope_local_base_freq=10000.0, sliding_window=512,
        query_pre_attn_scalar=256, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
        bos_token_id=2, eos_token_id=1, pad_token_id=0)),
}
# Where the Hub's config.json names a class or type otherwise than the config class does.
PUBLISHED = {"Gemma3TextConfig": ("Gemma3ForCausalLM", "gemma3_text")}


def main():
    out = {"transformers": transformers.__version__, "counts": {}}
    for card, (config_class, fields) in CONFIGS.items():
        config = getattr(transformers, config_class)(**fields)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        # parameters() yields a tied tensor once, as the model cards count.
        count = sum(p.numel() for p in model.parameters())
        out["counts"][card] = {"class": type(model).__name__, "parameters": count}
        print(f"{card}: {type(model).__name__} {count:,}")
    data = pathlib.Path(__file__).resolve().parents[1] / "data" / "nest"
    (data / "configs").mkdir(parents=True, exist_ok=True)
    (data / "param_counts.json").write_text(json.dumps(out, indent=1) + "\n")
    for card, (config_class, fields) in CONFIGS.items():
        architecture, model_type = PUBLISHED.get(
            config_class, (config_class.replace("Config", "ForCausalLM"), config_class.replace("Config", "").lower()))
        published = {"architectures": [architecture], "model_type": model_type,
                     "rope_scaling": None, "torch_dtype": "bfloat16", **fields}
        (data / "configs" / f"{card}.json").write_text(json.dumps(published, indent=2) + "\n")


if __name__ == "__main__":
    main()
