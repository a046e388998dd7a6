#!/usr/bin/env python3
"""Golden tests for `linnetc explain`, in the manner of tests/check: each
test holds its expected output inline, written by --update.

Test kinds:
  *.linnet  a program, explained as a single-file package (a copy without
            the expectations, shown under its path in the repository).
  *.card    `linnetc explain` of the llama card (nest/llama-3.1-8b-instruct),
            shown as `<card>`; keep these to a few `--at` places.

Header lines (anywhere in the file):
  // ARGS: --json               extra arguments for `linnetc explain`
  // AT: FILE:LINE[:COL]        passed as --at; FILE `%file` is the test's own
                                program, `stdlib/...` a standard library
                                file, else a path inside the card
  // AT-TEXT: FILE: TEXT        --at FILE:LINE:COL of the line holding TEXT
                                (FILE as for AT), at TEXT's first column, so
                                a card edit that moves lines needs only
                                --update, not a new line number
  // AT-LINE: FILE: TEXT        the same without the column: --at FILE:LINE
  // OCCURRENCE: 2              which line holding TEXT, when not unique
Expected results, at the end of the file:
  // EXIT: 1
  // CHECK:STDOUT: <line>
  // CHECK:STDERR: <line>

The standard library is given as `--stdlib stdlib`, so its paths read
`stdlib/std/...` whatever the build's default.

Usage: run_golden.py LINNETC [--update] [TEST...]"""
import difflib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CARD = os.path.join("nest", "llama-3.1-8b-instruct")
sys.path.insert(0, os.path.join(ROOT, "tests", "check"))
from run_golden import directives, split_expected  # noqa: E402  (tests/check's runner)


def find_text(path, text, occurrence):
    """LINE:COL of TEXT in a file, skipping `//` comment lines."""
    hits = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("//"):
                continue
            col = line.find(text)
            if col >= 0:
                hits.append(f"{number}:{col + 1}")
    if occurrence == 0 and len(hits) != 1:
        return None, f"`{text}` is on {len(hits)} lines of {path}, not one (name one with `// OCCURRENCE: N`)"
    if occurrence > len(hits):
        return None, f"`{text}` is on {len(hits)} lines of {path}, not {occurrence}"
    return hits[max(occurrence, 1) - 1], None


def run(linnetc, path, text):
    args = ["--stdlib", "stdlib"]
    for a in directives(text, "ARGS"):
        args += a.split()
    workdir = None
    try:
        if path.endswith(".card"):
            subject, shown, base = CARD, "<card>", os.path.join(ROOT, CARD)
        else:
            workdir = tempfile.mkdtemp(prefix="linnet-explain-")
            subject = os.path.join(workdir, os.path.basename(path))
            body, _ = split_expected(text)
            with open(subject, "w") as f:
                f.write("\n".join(body) + "\n")
            shown, base = os.path.relpath(path, ROOT), None

        def place_file(name):
            if name == "%file":
                return subject, subject
            if name.startswith("stdlib/"):
                return name, os.path.join(ROOT, name)
            if base is None:
                return None, None
            return os.path.join(subject, name), os.path.join(base, name)

        occurrence = int((directives(text, "OCCURRENCE") or ["0"])[0])
        for at in directives(text, "AT"):
            name, _, rest = at.partition(":")
            given, _ = place_file(name)
            if given is None:
                return None, f"`// AT: {at}`: a program's own file is `%file`"
            args += ["--at", f"{given}:{rest}"]
        for kind in ("AT-TEXT", "AT-LINE"):
            for at in directives(text, kind):
                name, _, needle = at.partition(": ")
                given, real = place_file(name)
                if given is None:
                    return None, f"`// {kind}: {at}`: a program's own file is `%file`"
                where, problem = find_text(real, needle, occurrence)
                if problem:
                    return None, problem
                if kind == "AT-LINE":
                    where = where.split(":")[0]
                args += ["--at", f"{given}:{where}"]
        proc = subprocess.run([linnetc, "explain", subject] + args, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        out, err = proc.stdout.replace(subject, shown), proc.stderr.replace(subject, shown)
        lines = [f"// EXIT: {proc.returncode}"]
        lines += [f"// CHECK:STDOUT: {l}".rstrip() for l in out.splitlines()]
        lines += [f"// CHECK:STDERR: {l}".rstrip() for l in err.splitlines()]
        return lines, None
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def main():
    linnetc, rest = sys.argv[1], sys.argv[2:]
    update = "--update" in rest
    tests = [t for t in rest if t != "--update"]
    if not tests:
        tests = [os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith((".linnet", ".card"))]
    tests.sort()
    passed = failed = 0
    for path in tests:
        with open(path) as f:
            text = f.read()
        actual, problem = run(linnetc, path, text)
        body, expected = split_expected(text)
        name = os.path.relpath(path, HERE)
        if problem:
            print(f"FAIL {name}: {problem}")
            failed += 1
            continue
        if update:
            with open(path, "w") as f:
                f.write("\n".join(body + [""] + actual) + "\n")
            passed += 1
            continue
        if actual == expected:
            passed += 1
            continue
        failed += 1
        print(f"FAIL {name}")
        for line in difflib.unified_diff(expected, actual, "expected", "actual", lineterm=""):
            print("   ", line)
    print(f"explain golden: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
