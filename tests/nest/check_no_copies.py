#!/usr/bin/env python3
"""The zoo holds one source per architecture: no `.linnet` file under nest/
repeats a run of another's lines. A card for another model of a family
depends on the family's package (linnet.toml [dependencies]) and configures
it (nest.toml [constants], [replace]) instead of copying it.

Two files of different cards share a copy when RUN consecutive lines,
compared without indentation and skipping blank lines, appear in both
(repeats within one card's own sources are that card's business).

Usage: check_no_copies.py [RUN] (default 8)"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lines_of(path):
    return [line.strip() for line in open(path, encoding="utf-8") if line.strip()]


def card_of(path):
    return os.path.relpath(path, os.path.join(ROOT, "nest")).split(os.sep)[0]


def main():
    run = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(ROOT, "nest"))
                   for f in fs if f.endswith(".linnet"))
    seen = {}  # a run of lines -> the file it was first seen in
    copies = set()
    for path in files:
        lines = lines_of(path)
        for i in range(len(lines) - run + 1):
            key = tuple(lines[i:i + run])
            first = seen.setdefault(key, path)
            if card_of(first) != card_of(path):
                copies.add((os.path.relpath(first, ROOT), os.path.relpath(path, ROOT)))
    print(f"{len(files)} .linnet files under nest/")
    for a, b in sorted(copies):
        print(f"FAIL {b} repeats {run} or more lines of {a}: depend on its package instead")
    return 1 if copies else 0


if __name__ == "__main__":
    sys.exit(main())
