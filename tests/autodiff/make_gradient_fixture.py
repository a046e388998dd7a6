"""Writes tests/data/autodiff/: torch autograd's gradient of the card's
`loss_packed` on the llama gqa2 fixture (tests/data/llama/gqa2, f32), for
tests/autodiff/torch_gradient_test.cpp and the `linnet grad` test.

The packed batch holds three prompts; attention never crosses a prompt, so
torch runs each prompt alone and sums: loss = -sum_p weights[p] *
log_softmax(logits[p])[targets[p]], with some weights 0.

    .cache/torch-venv/bin/python tests/autodiff/make_gradient_fixture.py

Writes gqa2_gradients.safetensors (every param's gradient under its
checkpoint name, and `loss`), the five inputs as .npy files, and a token
for `decode` (tests/bad_inputs: grad_through_state_write).
"""
import os

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "data", "llama", "gqa2")
OUT = os.path.join(HERE, "..", "data", "autodiff")

PROMPTS = [[47, 19, 38, 53, 12], [5, 60, 2, 33], [8, 8, 41, 17, 29, 63]]
# weights[k][i]: whether position i's next token counts (the last never does).
WEIGHTS = [[1, 1, 0, 1, 0], [0, 1, 1, 0], [1, 0, 1, 1, 1, 0]]


def packed_inputs():
    tokens, positions, segments, targets, weights = [], [], [], [], []
    for s, (prompt, w) in enumerate(zip(PROMPTS, WEIGHTS)):
        for i, t in enumerate(prompt):
            tokens.append(t)
            positions.append(i)
            segments.append(s)
            targets.append(prompt[i + 1] if i + 1 < len(prompt) else 0)
            weights.append(float(w[i]))
    return {
        "tokens": np.array(tokens, dtype=np.int32),
        "positions": np.array(positions, dtype=np.int32),
        "segments": np.array(segments, dtype=np.int32),
        "targets": np.array(targets, dtype=np.int64),
        "weights": np.array(weights, dtype=np.float32),
    }


def main():
    torch.manual_seed(0)
    model = LlamaForCausalLM.from_pretrained(MODEL, torch_dtype=torch.float32, attn_implementation="eager")
    model.train(False)
    total = torch.zeros((), dtype=torch.float32)
    for prompt, w in zip(PROMPTS, WEIGHTS):
        ids = torch.tensor([prompt])
        logits = model(input_ids=ids).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        targets = torch.tensor(prompt[1:] + [0])
        picked = logp.gather(1, targets[:, None])[:, 0]
        total = total - (torch.tensor(w, dtype=torch.float32) * picked).sum()
    total.backward()
    os.makedirs(OUT, exist_ok=True)
    tensors = {name: p.grad.detach().clone().contiguous() for name, p in model.named_parameters()}
    tensors["loss"] = total.detach().reshape(())
    save_file(tensors, os.path.join(OUT, "gqa2_gradients.safetensors"))
    for name, array in packed_inputs().items():
        np.save(os.path.join(OUT, f"{name}.npy"), array)
    # `decode`'s token, for the bad-input case that differentiates it.
    np.save(os.path.join(OUT, "decode_token.npy"), np.array([[47]], dtype=np.int32))
    print(f"loss {total.item():.6f}; {len(tensors) - 1} gradients in {OUT}")


if __name__ == "__main__":
    main()
