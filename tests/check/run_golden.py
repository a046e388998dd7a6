#!/usr/bin/env python3
"""Golden tests for `linnetc check`, in the manner of lit/FileCheck and
Carbon's toolchain tests: each test holds its expected output inline.

Test kinds:
  *.linnet    a program, checked as a single-file package.
  *.mutation  an edit of the llama card (nest/llama-3.1-8b-instruct): the
              package is copied, `// FROM:` is replaced by `// TO:` in
              `// MUTATE: <file>` (it must occur exactly once), then checked.

Header lines (anywhere in the file):
  // ARGS: --set Layers=2      extra arguments for `linnetc check`
  // FROM: / // TO:            (mutations) text to replace, indentation kept
  // OCCURRENCE: 2             (mutations) which occurrence of FROM, when not unique
Expected results, at the end of the file (written by --update):
  // EXIT: 1
  // CHECK:STDOUT: <line>
  // CHECK:STDERR: <line>

Usage: run_golden.py LINNETC [--update] [TEST...]"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CARD = os.path.join(ROOT, "nest", "llama-3.1-8b-instruct")
EXPECT = re.compile(r"^// (EXIT|CHECK:STDOUT|CHECK:STDERR):( ?)(.*)$")
# Timings vary from run to run.
VOLATILE = re.compile(r"checked in [0-9.]+ s")


def directives(text, name, keep_indent=False):
    """The values of `// NAME: value` lines; FROM/TO keep their indentation."""
    values = [m.group(1) for m in re.finditer(r"^// %s:(.*)$" % name, text, re.M)]
    if keep_indent:
        return [v[1:] if v.startswith(" ") else v for v in values]
    return [v.strip() for v in values]


def run(linnetc, path, text):
    args = []
    for a in directives(text, "ARGS"):
        args += a.split()
    workdir = None
    try:
        if path.endswith(".mutation"):
            workdir = tempfile.mkdtemp(prefix="linnet-mutation-")
            target = os.path.join(workdir, "card")
            shutil.copytree(CARD, target)
            (rel,) = directives(text, "MUTATE")
            before = "\n".join(directives(text, "FROM", keep_indent=True))
            after = "\n".join(directives(text, "TO", keep_indent=True))
            occurrence = int((directives(text, "OCCURRENCE") or ["0"])[0])
            file = os.path.join(target, rel)
            with open(file) as f:
                source = f.read()
            count = source.count(before)
            if occurrence == 0 and count != 1:
                return None, f"`// FROM: {before}` occurs {count} times in {rel}, not once " \
                             "(name one with `// OCCURRENCE: N`)"
            if occurrence > count:
                return None, f"`// FROM: {before}` occurs {count} times in {rel}, not {occurrence}"
            at = -1
            for _ in range(max(occurrence, 1)):
                at = source.index(before, at + 1)
            with open(file, "w") as f:
                f.write(source[:at] + after + source[at + len(before):])
            subject, shown = target, "<card>"
        else:
            # Check a copy without the expectations, so that what they quote
            # (an unterminated `/*`, say) cannot change the program.
            workdir = tempfile.mkdtemp(prefix="linnet-golden-")
            subject = os.path.join(workdir, os.path.basename(path))
            body, _ = split_expected(text)
            with open(subject, "w") as f:
                f.write("\n".join(body) + "\n")
            shown = os.path.relpath(path, ROOT)
        proc = subprocess.run([linnetc, "check", subject] + args, cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        out, err = proc.stdout, proc.stderr
        if shown:
            out, err = out.replace(subject, shown), err.replace(subject, shown)
        out, err = VOLATILE.sub("checked in <time> s", out), VOLATILE.sub("checked in <time> s", err)
        lines = [f"// EXIT: {proc.returncode}"]
        lines += [f"// CHECK:STDOUT: {l}".rstrip() for l in out.splitlines()]
        lines += [f"// CHECK:STDERR: {l}".rstrip() for l in err.splitlines()]
        return lines, None
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def split_expected(text):
    body, expected = [], []
    for line in text.splitlines():
        if EXPECT.match(line):
            expected.append(line.rstrip())
        else:
            body.append(line)
    while body and not body[-1].strip():
        body.pop()
    return body, expected


def main():
    linnetc, rest = sys.argv[1], sys.argv[2:]
    update = "--update" in rest
    tests = [t for t in rest if t != "--update"]
    if not tests:
        for dirpath, _, files in os.walk(HERE):
            tests += [os.path.join(dirpath, f) for f in files
                      if f.endswith((".linnet", ".mutation"))]
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
        import difflib
        for line in difflib.unified_diff(expected, actual, "expected", "actual", lineterm=""):
            print("   ", line)
    print(f"golden: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
