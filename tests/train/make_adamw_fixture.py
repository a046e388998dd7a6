"""Writes tests/data/train/adamw.json: torch.optim.AdamW and
torch.nn.utils.clip_grad_norm_ on three small f32 params over six steps
(a warm-up then a decaying learning rate; one step's gradients large
enough to be clipped), for runtime/train's optimizer test
(tests/runtime/train_adamw.cpp).

    .cache/torch-venv/bin/python tests/train/make_adamw_fixture.py
"""
import json
import os

import torch

SHAPES = [(7,), (3, 4), (33,)]
STEPS = 6
SETTINGS = {"beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1, "max_norm": 1.0}
LRS = [1e-3 * (s + 1) / 3 if s < 3 else 1e-3 * 0.5 ** (s - 2) for s in range(STEPS)]


def main():
    g = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in SHAPES]
    initial = [p.detach().clone() for p in params]
    opt = torch.optim.AdamW(params, lr=LRS[0], betas=(SETTINGS["beta1"], SETTINGS["beta2"]), eps=SETTINGS["eps"],
                            weight_decay=SETTINGS["weight_decay"], foreach=False)
    steps = []
    for s in range(STEPS):
        scale = 50.0 if s == 2 else 0.1  # step 2's norm is past max_norm: clipped
        grads = [torch.randn(p.shape, generator=g) * scale for p in params]
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, SETTINGS["max_norm"], foreach=False)
        for group in opt.param_groups:
            group["lr"] = LRS[s]
        opt.step()
        steps.append({"lr": LRS[s], "grads": [gr.flatten().tolist() for gr in grads], "norm": norm.item(),
                      "params": [p.detach().flatten().tolist() for p in params]})
    out = {"torch": torch.__version__, "settings": SETTINGS, "shapes": SHAPES,
           "initial": [p.flatten().tolist() for p in initial], "steps": steps}
    path = os.path.join(os.path.dirname(__file__), "..", "data", "train", "adamw.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print(f"wrote {os.path.normpath(path)}: {STEPS} steps, norms {[round(x['norm'], 4) for x in steps]}")


if __name__ == "__main__":
    main()
