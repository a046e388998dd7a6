#!/usr/bin/env python3
"""The SmolLM2 tokenizer and chat template, as transformers builds them from
the GGUF file's metadata (scripts/fetch-smollm2.sh), on generated text:
  tests/data/smollm2/tokenizer_cases.jsonl.xz  {"text", "ids", "decoded"} x 2,000
  tests/data/smollm2/chat_cases.json           conversations and their rendering
Run: python3 tests/smollm2/make_text_fixtures.py  (needs transformers, gguf)."""
import json
import lzma
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "tokenizer"))
import textgen  # noqa: E402  (the tokenizer fixtures' own text generator)

from tokenizers import pre_tokenizers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]


def main():
    path = subprocess.check_output(["bash", os.path.join(ROOT, "scripts", "fetch-smollm2.sh")],
                                   text=True).strip()
    folder, name = os.path.split(os.path.join(ROOT, path))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    # transformers' GGUF converter gives a plain ByteLevel pre-tokenizer and
    # drops the Digits step of SmolLM2's own tokenizer.json (which llama.cpp's
    # "smollm" pre-tokenizer, named in the file, keeps): restore the model's
    # published pipeline, so the reference is the tokenizer it was trained with.
    assert tok.backend_tokenizer.pre_tokenizer.__class__.__name__ == "ByteLevel"
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    rng = random.Random(20261129)
    texts = ["", " ", "Hello world!", "Explain in two sentences why the sky is blue."]
    while len(texts) < 2000:
        kind = rng.randrange(4)
        if kind == 0:
            texts.append(textgen.sentence(rng))
        elif kind == 1:
            texts.append(textgen.fragment(rng, SPECIALS))
        elif kind == 2:
            texts.append(textgen.mixed(rng, SPECIALS, rng.randrange(1, 6)))
        else:
            texts.append(textgen.random_codepoints(rng, rng.randrange(1, 40)))
    out = os.path.join(ROOT, "tests", "data", "smollm2", "tokenizer_cases.jsonl.xz")
    with lzma.open(out, "wt", encoding="utf-8") as f:
        for t in texts:
            ids = tok(t, add_special_tokens=False)["input_ids"]
            f.write(json.dumps({"text": t, "ids": ids, "decoded": tok.decode(ids)}, ensure_ascii=False) + "\n")

    conversations = [
        [{"role": "user", "content": "Explain in two sentences why the sky is blue."}],
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi!"}],
        [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."},
         {"role": "user", "content": "And 3+3?"}],
        [{"role": "user", "content": "  spaces\tand\nnewlines  "}],
        [{"role": "user", "content": "Ünïcödé 😀 中文"}],
        [{"role": "user", "content": ""}],
    ]
    cases = []
    for messages in conversations:
        for prompt in (True, False):
            cases.append({"messages": messages, "add_generation_prompt": prompt,
                          "text": tok.apply_chat_template(messages, tokenize=False,
                                                          add_generation_prompt=prompt)})
    with open(os.path.join(ROOT, "tests", "data", "smollm2", "chat_cases.json"), "w") as f:
        json.dump({"special_tokens": {"bos_token": tok.bos_token, "eos_token": tok.eos_token},
                   "cases": cases}, f, indent=1, ensure_ascii=False)
    print(f"{len(texts)} strings, {len(cases)} chat renderings")


if __name__ == "__main__":
    main()
