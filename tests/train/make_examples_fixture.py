"""Writes tests/data/train/examples.json: training rows of the three shapes
and, for each, the token ids and learned tokens as Hugging Face computes
them, for tests/runtime/train_examples.cpp. transformers tokenizes (the
SentencePiece-style fixture tokenizer tests/data/tokenizer/spbpe, with a
Mistral's template): a `messages` row is apply_chat_template(tokenize=True);
assistant turn k is what rendering messages[:k+1] adds to rendering
messages[:k] with the generation prompt (tokens past their common prefix);
`prompt`/`completion` is TRL's tokenization: tok(prompt) +
tok(completion, add_special_tokens=False) + eos; `text` is tok(text) + eos, all but the first token learned.

Run with transformers 4.55 (.cache/torch-venv), whose LlamaTokenizerFast
reads tokenizer.json as the tokenizers library does (Linnet's reference).
transformers 5 rebuilds a Llama tokenizer without the file's Prepend
normalizer, so after `<s>` it writes `[` where the file's rules give `▁[`.

    .cache/torch-venv/bin/python tests/train/make_examples_fixture.py
"""
import json
import os

from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
# Mistral's template: each assistant turn ends in the end-of-text token, a
# special token, so a conversation's tokens up to a turn are a prefix of the
# whole conversation's.
TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
            "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
            "{{ message['content'] + eos_token }}{% endif %}{% endfor %}")
ROWS = [
    {"messages": [{"role": "user", "content": "What is the capital of France?"},
                  {"role": "assistant", "content": "Paris."}]},
    {"messages": [{"role": "user", "content": "Two plus two?"},
                  {"role": "assistant", "content": "Four."},
                  {"role": "user", "content": "And three plus three?"},
                  {"role": "assistant", "content": "Six, of course."}]},
    {"prompt": "Translate to French: cat", "completion": " chat"},
    {"text": "The sea is wide and the sky is grey."},
]


def common_prefix(a, b):
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def chat_example(tok, messages):
    def tokens(part, generation_prompt):
        if not part:
            return tok.encode(tok.apply_chat_template([], tokenize=False, add_generation_prompt=generation_prompt)
                              if generation_prompt else "", add_special_tokens=False)
        got = tok.apply_chat_template(part, tokenize=True, add_generation_prompt=generation_prompt)
        return list(got["input_ids"] if hasattr(got, "keys") else got)  # transformers 5: a BatchEncoding

    ids = tokens(messages, False)
    learned = [0] * len(ids)
    for k, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        before, through = tokens(messages[:k], True), tokens(messages[:k + 1], False)
        assert ids[:len(through)] == through
        for i in range(max(common_prefix(before, through), 1), len(through)):
            learned[i] = 1
    return ids, learned


def plain_example(tok, prompt, text):
    if prompt is None:  # {"text"}
        ids, start = tok(text)["input_ids"], 1
    else:
        ids = tok(prompt)["input_ids"]
        start = len(ids)
        ids += tok(text, add_special_tokens=False)["input_ids"]
    ids.append(tok.eos_token_id)
    learned = [0] * len(ids)
    for i in range(max(start, 1), len(ids)):
        learned[i] = 1
    return ids, learned


def main():
    tok = AutoTokenizer.from_pretrained(os.path.join(HERE, "..", "data", "tokenizer", "spbpe"))
    tok.chat_template = TEMPLATE
    out = []
    for row in ROWS:
        if "messages" in row:
            ids, learned = chat_example(tok, row["messages"])
        elif "prompt" in row:
            ids, learned = plain_example(tok, row["prompt"], row["completion"])
        else:
            ids, learned = plain_example(tok, None, row["text"])
        out.append({"row": row, "ids": ids, "learned": learned})
    path = os.path.join(HERE, "..", "data", "train", "examples.json")
    with open(path, "w") as f:
        json.dump({"chat_template": TEMPLATE, "examples": out}, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.normpath(path)}: {len(out)} rows, {sum(len(e['ids']) for e in out)} tokens")


if __name__ == "__main__":
    main()
