#!/usr/bin/env python3
"""Every card of the zoo checks clean, and binds as many parameters as
transformers counts for the model's published config.

`linnetc check CARD --params` lists the parameter tensors the card
instantiates. Each is bound through the card's bindings.json (patterns
expanded) to a checkpoint tensor; the values of the distinct checkpoint
tensors (a tied head binds the embedding's again, and transformers counts it
once) must equal tests/data/nest/param_counts.json, which
tests/nest/make_param_counts.py wrote from transformers on the meta device.

Usage: check_param_counts.py LINNETC [CARD...] (default: every card in
tests/data/nest/param_counts.json)"""
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def checkpoint_name(path, bindings):
    """The tensor a Linnet path binds: an exact key, else a `*` pattern."""
    if path in bindings:
        return bindings[path]
    parts = path.split(".")
    for key, value in bindings.items():
        want = key.split(".")
        if "*" not in want or len(want) != len(parts):
            continue
        if all(w == p or (w == "*" and p.isdigit()) for w, p in zip(want, parts)):
            indices = iter(p for w, p in zip(want, parts) if w == "*")
            return re.sub(r"\*", lambda _: next(indices), value)
    return None


def check(linnetc, card, expected):
    folder = os.path.join(ROOT, "nest", card)
    run = subprocess.run([linnetc, "check", folder, "--params"], capture_output=True, text=True)
    if run.returncode != 0:
        return [f"{card}: linnetc check failed:\n{run.stdout}{run.stderr}"]
    params = re.findall(r"^    (\S+) \[([\d, ]*)\] \w+$", run.stdout, re.M)
    bindings = json.load(open(os.path.join(folder, "bindings.json")))
    sizes, problems = {}, []
    for path, shape in params:
        name = checkpoint_name(path, bindings)
        if name is None:
            problems.append(f"{card}: {path} has no binding in bindings.json")
            continue
        size = math.prod(int(d) for d in shape.split(",")) if shape else 1
        if sizes.setdefault(name, size) != size:
            problems.append(f"{card}: {name} is bound with two shapes")
    total = sum(sizes.values())
    print(f"{card}: {len(params)} parameter tensors, {len(sizes)} checkpoint tensors, {total:,} values "
          f"(transformers: {expected:,})")
    if total != expected:
        problems.append(f"{card}: the card binds {total:,} values, transformers counts {expected:,}")
    return problems


def main():
    linnetc = sys.argv[1]
    counts = json.load(open(os.path.join(ROOT, "tests", "data", "nest", "param_counts.json")))["counts"]
    cards = sys.argv[2:] or sorted(counts)
    problems = []
    for card in cards:
        problems += check(linnetc, card, counts[card]["parameters"])
    for p in problems:
        print("FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
