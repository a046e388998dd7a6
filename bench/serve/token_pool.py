#!/usr/bin/env python3
"""Writes the token pool the serving benchmark draws its prompts from: the
tokens of a fixed text (default: the repository's LICENSE, ~2200 tokens),
tokenized by llama.cpp (llama-cpp-python, vocabulary only) from the GGUF
itself, so both servers get the same ids and neither tokenizer is on the
measured path.

    token_pool.py MODEL.gguf OUT.json [--text FILE]

Run it with .cache/peers-venv/bin/python (llama-cpp-python 0.3.36); without
llama_cpp, `--llama-tokenize BIN` uses llama.cpp's own llama-tokenize tool
(bench/serve/build_llama_server.sh builds it beside llama-server).
"""

import argparse
import json
import os
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--llama-tokenize", help="llama.cpp's llama-tokenize, when llama_cpp is not importable")
    ap.add_argument("--text", default=os.path.join(os.path.dirname(__file__), "..", "..", "LICENSE"))
    args = ap.parse_args()
    with open(args.text, "rb") as f:
        text = f.read()
    try:
        import llama_cpp
    except ImportError:
        if not args.llama_tokenize:
            raise
        out = subprocess.run([args.llama_tokenize, "-m", args.model, "-f", args.text, "--ids", "--no-bos",
                              "--no-parse-special", "--log-disable"],
                             check=True, capture_output=True, text=True).stdout
        tokens = json.loads(out.strip().splitlines()[-1])
        via = "llama-tokenize"
    else:
        llm = llama_cpp.Llama(model_path=args.model, vocab_only=True, verbose=False)
        tokens = llm.tokenize(text, add_bos=False, special=False)
        via = f"llama-cpp-python {llama_cpp.__version__}"
    with open(args.out + ".part", "w") as f:
        json.dump({"text": os.path.basename(args.text), "model": os.path.basename(args.model),
                   "tokenizer": via, "tokens": tokens}, f)
    os.replace(args.out + ".part", args.out)
    print(f"{args.out}: {len(tokens)} tokens of {os.path.basename(args.text)}")


if __name__ == "__main__":
    main()
