"""A LoRA adapter `linnet finetune --lora` wrote, loaded by peft: no missing
or unexpected keys, and peft's logits equal Linnet's with `--adapter` on the
same base weights (rule: 1e-5 of the logits' scale, f32 over layers). Needs
torch, transformers and peft (.cache/torch-venv); not part of ctest.

    .cache/torch-venv/bin/python tests/train/check_lora_with_peft.py build/bin/linnet ADAPTER_DIR
(the adapter from the fixture's LoRA run: see docs/train.md)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_finetune_fixture as base  # noqa: E402

TOKENS = [[1, 415, 3014, 349, 2335, 304, 272, 3212]]


def main():
    linnet, adapter = sys.argv[1], sys.argv[2]
    card = os.path.join(base.ROOT, "nest", "llama-3.1-8b-instruct")
    sets = [a for v in base.SETS for a in ("--set", v)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "hf")
        subprocess.run([linnet, "export", "hf", card, "--random-weights", *sets, "--tokenizer", base.TOKENIZER,
                        "-o", folder], check=True, stdout=subprocess.DEVNULL)
        model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
        peft = PeftModel.from_pretrained(model, adapter)
        peft.eval()
        # Every adapter param of the peft model is a key of the file, and the reverse.
        ours = set(load_file(os.path.join(adapter, "adapter_model.safetensors")))
        theirs = {k.replace(".default", "") for k in peft.state_dict() if "lora_" in k}
        if ours != theirs:
            sys.exit(f"missing keys {sorted(theirs - ours)[:4]}, unexpected keys {sorted(ours - theirs)[:4]}")
        with torch.no_grad():
            want = peft(input_ids=torch.tensor(TOKENS)).logits.numpy()
        np.save(os.path.join(tmp, "tokens.npy"), np.array(TOKENS, dtype=np.int32))
        subprocess.run([linnet, "call", card, "--backend", "reference", "--random-weights", *sets, "--adapter", adapter,
                        "--entry", "forward", "--input", f"tokens=@{tmp}/tokens.npy", "--output",
                        f"@{tmp}/logits.npy"], check=True)
        got = np.load(os.path.join(tmp, "logits.npy"))
    scale = float(np.abs(want).max())
    worst = float(np.abs(got - want).max())
    print(f"peft loaded {adapter} ({len(ours)} tensors, no missing or unexpected key); logits within {worst:.2e} of a scale {scale:.2f} ({worst / scale:.1e} relative)")
    if worst > 1e-5 * scale:
        sys.exit("peft's logits differ from Linnet's --adapter")


if __name__ == "__main__":
    main()
