"""Writes tests/data/adapter/: a LoRA adapter peft saved for the llama gqa2
fixture (tests/data/llama/gqa2) and the logits peft computes with it, for
the `adapter` test (linnet's --adapter merges it at load).

r = 4, lora_alpha = 8 on q_proj, v_proj and down_proj; A and B drawn at
random (seed 0, std 0.05; peft would start B at zero, which tests nothing).

    .cache/torch-venv/bin/python tests/train/make_adapter_fixture.py
"""
import os

import torch
from peft import LoraConfig, get_peft_model
from safetensors.torch import save_file
from transformers import LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "data", "llama", "gqa2")
OUT = os.path.join(HERE, "..", "data", "adapter")
TOKENS = [47, 19, 38, 53, 12, 52, 24, 57]


def main():
    torch.manual_seed(0)
    model = LlamaForCausalLM.from_pretrained(MODEL, torch_dtype=torch.float32, attn_implementation="eager")
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], lora_dropout=0.0,
                        task_type="CAUSAL_LM")
    peft = get_peft_model(model, config)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn_like(p) * 0.05)
    peft.save_pretrained(os.path.join(OUT, "gqa2_lora"))
    peft.eval()
    with torch.no_grad():
        logits = peft(input_ids=torch.tensor([TOKENS])).logits.contiguous()
    save_file({"tokens": torch.tensor([TOKENS], dtype=torch.int32), "logits": logits},
              os.path.join(OUT, "expected.safetensors"))
    print("wrote", OUT, tuple(logits.shape))


if __name__ == "__main__":
    main()
