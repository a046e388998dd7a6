#!/usr/bin/env python3
"""Re-indents Linnet sources whose indentation was lost: four spaces per open
brace, parenthesis or bracket, and one more level for a line that continues
an expression (after a trailing operator or `=`). Only layout changes."""
import re
import sys

OPEN, CLOSE = "{([", "})]"
CONTINUES = re.compile(r"(=|\+|-|\*|/|&&|\|\||,|where)$")


def strip_comment(line):
    return line.split("//", 1)[0].rstrip()


def reindent(text):
    out, depth, continued, in_where = [], 0, False, False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            out.append("")
            continue
        code = strip_comment(line)
        # A generic parameter list opened at a line's end (`block X<`) nests
        # like a bracket; its `>` closes it at the start of a line.
        closers = CLOSE + (">" if line.startswith(">") else "")
        leading_close = len(line) - len(line.lstrip(closers))
        level = max(depth - leading_close, 0)
        if in_where and (line == "{" or line.startswith("{")):
            in_where = False
        extra = 1 if (continued or in_where) and not line.startswith(tuple(closers)) else 0
        out.append("    " * (level + extra) + line)
        for ch in code:
            if ch in OPEN:
                depth += 1
            elif ch in CLOSE:
                depth -= 1
        if code.endswith("<"):
            depth += 1
        if code.startswith(">"):
            depth -= 1
        if code == "where":
            in_where = True
        elif in_where and code.endswith("{"):
            in_where = False
        continued = bool(code) and bool(CONTINUES.search(code)) and not code.endswith(",") \
            and not code.startswith("//")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(reindent(text))
