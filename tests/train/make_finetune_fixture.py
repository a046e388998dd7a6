"""Writes tests/data/train/finetune/: a short full fine-tuning run in torch,
step by step as `linnet finetune --full` runs it, for the ctest
`cli_finetune_torch` (tests/train/check_finetune.py compares the losses).

The model is the Llama card at small generics with `--random-weights`
(seed 0), exported by `linnet export hf` so that torch starts from the very
values Linnet binds; the tokenizer is tests/data/tokenizer/spbpe. Rows are
tokenized as runtime/train/examples.cpp does ({"text"}: BOS, text, EOS, all
but the first token learned; {"prompt", "completion"}: the completion and
EOS learned), ordered per epoch by data_order_reference.py (the same
permutation as runtime/train/data_order.cpp), packed greedily into batches
of at most BATCH_TOKENS positions, each prompt on its own positions from 0.
Each step: the sum of the learned tokens' negative log-likelihoods over the
learned-token count, backward, clip_grad_norm_(MAX_NORM), AdamW with a
linear warm-up. transformers 4.55 (its tokenizer reads tokenizer.json as the
tokenizers library does).

    .cache/torch-venv/bin/python tests/train/make_finetune_fixture.py build/bin/linnet
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
from transformers import AutoTokenizer, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_order_reference import epoch_order  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
OUT = os.path.join(ROOT, "tests", "data", "train", "finetune")
TOKENIZER = os.path.join(ROOT, "tests", "data", "tokenizer", "spbpe")
SETS = ["Vocab=4000", "H=64", "Heads=4", "KvHeads=2", "Inner=96", "Layers=2", "MaxSeq=64", "T=f32"]
SETTINGS = {"steps": 12, "batch_tokens": 48, "lr": 1e-3, "warmup": 3, "weight_decay": 0.01, "max_grad_norm": 1.0,
            "seed": 5}
ROWS = [
    {"text": "The sea is wide and the sky is grey."},
    {"prompt": "Translate to French: cat", "completion": " chat"},
    {"text": "A small model learns a small thing."},
    {"prompt": "Two plus two is", "completion": " four."},
    {"text": "Every gradient is checked against torch."},
    {"prompt": "The colour of grass:", "completion": " green"},
]


def example(tok, row):
    eos = tok.convert_tokens_to_ids(tok.eos_token)
    prompt, learned_text = (row["prompt"], row["completion"]) if "prompt" in row else ("", row["text"])
    ids = tok.encode(prompt, add_special_tokens=True)
    start = len(ids)
    ids += tok.encode(learned_text, add_special_tokens=start == 0) + [eos]
    learned = [0] * len(ids)
    for i in range(max(start, 1), len(ids)):
        learned[i] = 1
    return ids, learned


def batches(examples, settings=SETTINGS):
    epoch = 0
    while True:
        current = []
        for k in epoch_order(len(examples), settings["seed"], epoch):
            n = len(examples[k][0])
            if not current or sum(len(examples[j][0]) for j in current[-1]) + n > settings["batch_tokens"]:
                current.append([])
            current[-1].append(k)
        yield from current
        epoch += 1


def main():
    linnet = sys.argv[1]
    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    examples = [example(tok, r) for r in ROWS]
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "hf")
        card = os.path.join(ROOT, "nest", "llama-3.1-8b-instruct")
        sets = [a for s in SETS for a in ("--set", s)]
        subprocess.run([linnet, "export", "hf", card, "--random-weights", *sets, "--tokenizer", TOKENIZER,
                        "-o", folder], check=True, stdout=subprocess.DEVNULL)
        model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
    losses = train(model, examples, SETTINGS)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "train.jsonl"), "w") as f:
        for r in ROWS:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump({"sets": SETS, "settings": SETTINGS, "torch": torch.__version__, "losses": losses}, f, indent=1)
    print("losses", " ".join(f"{v:.6f}" for v in losses))


def train(model, examples, settings):
    """`settings["steps"]` steps as `linnet finetune --full` takes them; the losses."""
    model.train(False)
    opt = torch.optim.AdamW(model.parameters(), lr=settings["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=settings["weight_decay"], foreach=False)
    losses = []
    stream = batches(examples, settings)
    for step in range(settings["steps"]):
        lr = settings["lr"] * min(1.0, (step + 1) / settings["warmup"])
        for group in opt.param_groups:
            group["lr"] = lr
        total = torch.zeros(())
        learned = 0
        for k in next(stream):
            ids, mask = examples[k]
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
            for i in range(len(ids) - 1):
                if mask[i + 1]:
                    total = total - logp[i, ids[i + 1]]
                    learned += 1
        loss = total / learned
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), settings["max_grad_norm"])
        opt.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    main()
