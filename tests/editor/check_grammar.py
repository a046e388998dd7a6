#!/usr/bin/env python3
"""The TextMate grammar (editors/vscode/syntaxes/linnet.tmLanguage.json):
generated from the compiler's current lists, every pattern a valid regex,
and, scanned as a TextMate engine scans (at each position the earliest
match of the patterns in order, block comments across lines), every
keyword and primitive of the card and the standard library coloured as
what it is, and nothing of a comment coloured as code.

  python3 tests/editor/check_grammar.py
"""
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAMMAR = os.path.join(ROOT, "editors", "vscode", "syntaxes", "linnet.tmLanguage.json")
sys.path.insert(0, os.path.join(ROOT, "editors"))
import make_grammar  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def flatten(g):
    """The grammar's match rules in order, each (regex, scope, captures), and the block-comment rule."""
    rules, block = [], None

    def visit(p):
        nonlocal block
        if "include" in p:
            for q in g["repository"][p["include"][1:]]["patterns"]:
                visit(q)
        elif "begin" in p:
            block = (re.compile(p["begin"]), re.compile(p["end"]), p["name"])
        else:
            rules.append((re.compile(p["match"]), p.get("name"), p.get("captures", {})))

    for p in g["patterns"]:
        visit(p)
    return rules, block


def scan(lines, rules, block):
    """(line, column, text, scope) for every token the grammar colours."""
    tokens, in_block = [], False
    for n, line in enumerate(lines):
        pos = 0
        while pos <= len(line):
            if in_block:
                m = block[1].search(line, pos)
                end = m.end() if m else len(line)
                tokens.append((n, pos, line[pos:end], block[2]))
                in_block, pos = m is None, end
                if m is None:
                    break
                continue
            best = None
            for regex, scope, captures in rules + [(block[0], "begin-block", {})]:
                m = regex.search(line, pos)
                if m and m.end() > m.start() and (best is None or m.start() < best[0].start()):
                    best = (m, scope, captures)
            if best is None:
                break
            m, scope, captures = best
            if scope == "begin-block":
                in_block, pos = True, m.start()
                tokens.append((n, m.start(), m.group(), block[2]))
                pos = m.end()
                continue
            if captures:
                for k, c in captures.items():
                    tokens.append((n, m.start(int(k)), m.group(int(k)), c["name"]))
            else:
                tokens.append((n, m.start(), m.group(), scope))
            pos = m.end()
    return tokens


def main():
    up_to_date = subprocess.run([sys.executable, os.path.join(ROOT, "editors", "make_grammar.py"), "--check"])
    check(up_to_date.returncode == 0, "the grammar is what make_grammar.py writes from the compiler's lists")
    g = json.load(open(GRAMMAR))
    try:
        rules, block = flatten(g)
        check(True, f"{len(rules) + 1} patterns compile")
    except re.error as e:
        check(False, f"a pattern does not compile: {e}")
        return 1

    keywords = set(make_grammar.keywords())
    primitives = set(make_grammar.primitives())
    files = sorted(glob.glob(os.path.join(ROOT, "nest", "llama-3.1-8b-instruct", "src", "*.linnet")) +
                   glob.glob(os.path.join(ROOT, "stdlib", "**", "*.linnet"), recursive=True))
    wrong, counted = [], {"keyword": 0, "primitive": 0, "comment": 0}
    for path in files:
        lines = open(path).read().split("\n")
        tokens = scan(lines, rules, block)
        scope_at = {}
        for n, col, text, scope in tokens:
            for i in range(len(text)):
                scope_at[(n, col + i)] = scope
        for n, line in enumerate(lines):
            code = re.sub(r"//.*", "", line)
            comment = line.find("//")
            if comment >= 0 and "/*" not in line[:comment]:
                counted["comment"] += 1
                if not (scope_at.get((n, comment)) or "").startswith("comment."):
                    wrong.append(f"{path}:{n + 1}: a comment not coloured as one")
            for m in re.finditer(r"\b[A-Za-z_]\w*\b", code):
                word, scope = m.group(), scope_at.get((n, m.start())) or ""
                if scope.startswith("comment."):
                    continue  # inside a block comment
                if word in keywords:
                    counted["keyword"] += 1
                    if not re.match(r"(keyword|storage|constant\.language)\.", scope):
                        wrong.append(f"{path}:{n + 1}: keyword `{word}` coloured `{scope}`")
                elif word in primitives and re.match(r"\s*[<(\[]", code[m.end():]):
                    counted["primitive"] += 1
                    if scope != "support.function.primitive.linnet":
                        wrong.append(f"{path}:{n + 1}: primitive `{word}` coloured `{scope}`")
    for w in wrong[:20]:
        print("     " + w)
    check(not wrong, f"{len(files)} files: {counted['keyword']} keywords, {counted['primitive']} primitive calls, "
                     f"{counted['comment']} comments coloured as what they are")
    # A few spots by hand.
    sample = ["pub block GroupedQueryAttention<H: Dim, T: Float>", "    let y = reshape(x, [B, S, 2 * H]) // note",
              "    sub q_proj: Linear<H, H, T>", "fn f(x: Tensor[N; bf16]) -> Tensor[N; bf16] { return x }"]
    t = {(n, text): scope for n, _, text, scope in scan(sample, rules, block)}
    check(t.get((0, "GroupedQueryAttention")) == "entity.name.type.linnet" and
          t.get((0, "block")) == "storage.type.block.linnet" and t.get((0, "Dim")) == "support.type.generic-kind.linnet"
          and t.get((1, "reshape")) == "support.function.primitive.linnet" and
          t.get((1, "// note")) == "comment.line.double-slash.linnet" and
          t.get((2, "q_proj")) == "variable.other.member.linnet" and t.get((3, "f")) == "entity.name.function.linnet"
          and t.get((3, "bf16")) == "support.type.dtype.linnet" and t.get((3, "Tensor")) == "support.type.tensor.linnet",
          "spot checks: declarations, generic kinds, dtypes, primitives, comments")
    if failures:
        print(f"{len(failures)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
