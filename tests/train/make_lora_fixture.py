"""Writes tests/data/train/finetune/expected_lora.json: the LoRA run of
`linnet finetune --lora` repeated in torch with peft, step by step, for
tests/train/check_finetune.py.

The same model, rows, order, packing and schedule as
make_finetune_fixture.py (imported from it). peft's LoRA (r = 4,
lora_alpha = 8, no dropout) on all seven projections, A set to the values
Linnet draws (runtime/train/lora_trainer.cpp, loraInitialA: written again
below), B zero; AdamW and clipping over the adapters' params only.

    .cache/torch-venv/bin/python tests/train/make_lora_fixture.py build/bin/linnet
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoTokenizer, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_finetune_fixture as base  # noqa: E402

MASK = (1 << 64) - 1
LORA = {"rank": 4, "alpha": 8, "lr": 1e-2, "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                      "down_proj"]}


def splitmix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def fnv1a(text):
    h = 0xCBF29CE484222325
    for c in text.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK
    return h


def initial_a(seed, module, rank, fan_in):
    key = splitmix64(splitmix64(seed) ^ fnv1a(module))
    bound = 1.0 / math.sqrt(fan_in)
    values = [(2 * ((splitmix64((key + k) & MASK) >> 11) * 2.0 ** -53) - 1) * bound for k in range(rank * fan_in)]
    return torch.tensor(values, dtype=torch.float32).reshape(rank, fan_in)


def main():
    linnet = sys.argv[1]
    s = base.SETTINGS
    tok = AutoTokenizer.from_pretrained(base.TOKENIZER)
    examples = [base.example(tok, r) for r in base.ROWS]
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "hf")
        sets = [a for v in base.SETS for a in ("--set", v)]
        subprocess.run([linnet, "export", "hf", os.path.join(base.ROOT, "nest", "llama-3.1-8b-instruct"),
                        "--random-weights", *sets, "--tokenizer", base.TOKENIZER, "-o", folder], check=True,
                       stdout=subprocess.DEVNULL)
        model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
    config = LoraConfig(r=LORA["rank"], lora_alpha=LORA["alpha"], target_modules=LORA["targets"], lora_dropout=0.0)
    peft = get_peft_model(model, config)
    with torch.no_grad():
        for name, module in peft.named_modules():
            if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
                checkpoint = name.removeprefix("base_model.model.")
                a = module.lora_A["default"].weight
                a.copy_(initial_a(s["seed"], checkpoint, LORA["rank"], a.shape[1]))
                module.lora_B["default"].weight.zero_()
    trained = [p for p in peft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trained, lr=LORA["lr"], betas=(0.9, 0.999), eps=1e-8, weight_decay=s["weight_decay"],
                            foreach=False)
    losses, stream = [], base.batches(examples)
    for step in range(s["steps"]):
        for group in opt.param_groups:
            group["lr"] = LORA["lr"] * min(1.0, (step + 1) / s["warmup"])
        total, learned = torch.zeros(()), 0
        for k in next(stream):
            ids, mask = examples[k]
            logp = torch.log_softmax(peft(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
            for i in range(len(ids) - 1):
                if mask[i + 1]:
                    total, learned = total - logp[i, ids[i + 1]], learned + 1
        loss = total / learned
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, s["max_grad_norm"])
        opt.step()
        losses.append(loss.item())
    with open(os.path.join(base.OUT, "expected_lora.json"), "w") as f:
        json.dump({"lora": LORA, "torch": torch.__version__, "losses": losses}, f, indent=1)
    print("losses", " ".join(f"{v:.6f}" for v in losses))


if __name__ == "__main__":
    main()
