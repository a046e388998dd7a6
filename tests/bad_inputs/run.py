#!/usr/bin/env python3
"""The bad-input suite: every case in cases.toml runs one `linnet` or
`linnetc` command on a malformed source, checkpoint, tokenizer, template or
argument, and must end with the case's exit code (1: the input is refused,
2: a command-line usage error) and a first line of output (stderr folded
into stdout) matching the case's regular expression, within the time and
memory bounds: 10 s and 1 GiB of peak resident memory by default. A crash,
a hang or an allocation that takes the machine down fails the case.

Input files a case needs are made by make_inputs.py into a scratch folder,
so that large ones (a 1 MB chat message, a 700,000-term sum) are not
committed.

Usage: run.py --bin DIR --scratch DIR [--have cpu,text] [--timeout S]
              [--max-rss-mib M] [CASE...]"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib

import make_inputs

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
# The tiny two-layer Llama of tests/data/llama/gqa2 (the card at these generics).
GQA2_SETS = ["--set", "Vocab=64", "--set", "H=64", "--set", "Heads=4", "--set", "KvHeads=2",
             "--set", "Inner=96", "--set", "Layers=2", "--set", "MaxSeq=64", "--set", "T=f32"]


def expand(arg, places):
    """`{gqa2_sets}` becomes the GQA2 flags; other `{name}`s their paths."""
    if arg == "{gqa2_sets}":
        return GQA2_SETS
    if isinstance(arg, dict):  # a generated argument, e.g. a long --prompt
        return [make_inputs.text(arg, places)]
    return [make_inputs.fill(arg, places)]


def spawn(argv, stdin, env, cwd, timeout):
    """Runs argv; returns (exit code or -signal, output, peak RSS in MiB,
    timed out). The child's own rusage (wait4) gives its peak memory."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, cwd=cwd, start_new_session=True)
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()))
    reader.start()
    try:
        proc.stdin.write(stdin or b"")
        proc.stdin.close()
    except BrokenPipeError:
        pass
    timed_out = []

    def kill():
        timed_out.append(True)
        os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    # ru_maxrss is in KiB on Linux.
    return proc.returncode, b"".join(chunks), usage.ru_maxrss / 1024, bool(timed_out)


def run_case(case, args, places):
    """Returns None when the case passes, else what went wrong."""
    tmp = places["tmp"]
    for name, spec in case.get("inputs", {}).items():
        make_inputs.make(spec, os.path.join(tmp, name), places)
    argv = [os.path.join(args.bin, case["run"][0])]
    for a in case["run"][1:]:
        argv += expand(a, places)
    stdin = case.get("stdin")
    if stdin is not None:
        stdin = make_inputs.text(stdin, places).encode()
    env = dict(os.environ, LINNET_CACHE=os.path.join(args.scratch, "linnet-cache"))
    start = time.monotonic()
    code, out, rss_mib, timed_out = spawn(argv, stdin, env, tmp, args.timeout)
    seconds = time.monotonic() - start
    if timed_out:
        return f"still running after {args.timeout} s (killed)"
    text = out.decode(errors="replace")
    first = text.split("\n", 1)[0]
    problems = []
    if code != case["exit"]:
        problems.append(f"exit {code}, expected {case['exit']}")
    pattern = case["first"].format(**{k: re.escape(v) for k, v in places.items()})
    if not re.fullmatch(pattern, first):
        problems.append(f"first line\n      {first!r}\n    does not match\n      {pattern!r}")
    if "output" in case and not re.search(case["output"], text):
        problems.append(f"the output has no match for {case['output']!r}")
    if args.max_rss_mib and rss_mib > args.max_rss_mib:
        problems.append(f"peak memory {rss_mib:.0f} MiB, above {args.max_rss_mib} MiB")
    if problems:
        tail = "\n".join(text.splitlines()[:12])
        return "; ".join(problems) + f"\n    command: {' '.join(argv)}\n    output:\n{tail}"
    print(f"  ok   {case['name']} ({seconds:.2f} s, {rss_mib:.0f} MiB)")
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="folder with linnet and linnetc")
    p.add_argument("--scratch", required=True, help="a folder for generated inputs")
    p.add_argument("--have", default="", help="optional parts built: cpu (compiled backend), text (chat), onnx (linnet export onnx), cuda (the cuda target)")
    p.add_argument("--timeout", type=float, default=10)
    p.add_argument("--max-rss-mib", type=float, default=1024, help="0: no memory bound (sanitizers)")
    p.add_argument("cases", nargs="*", help="run only these")
    args = p.parse_args()
    args.bin, args.scratch = os.path.abspath(args.bin), os.path.abspath(args.scratch)
    have = set(filter(None, args.have.split(",")))
    with open(os.path.join(HERE, "cases.toml"), "rb") as f:
        cases = tomllib.load(f)["case"]
    names = [c["name"] for c in cases]
    if len(set(names)) != len(names):
        sys.exit("cases.toml: duplicate case names")
    unknown = set(args.cases) - set(names)
    if unknown:
        sys.exit(f"no such case: {', '.join(sorted(unknown))}")
    failed, skipped = [], 0
    for case in cases:
        if args.cases and case["name"] not in args.cases:
            continue
        missing = set(case.get("needs", [])) - have
        if missing or not os.path.exists(os.path.join(args.bin, case["run"][0])):
            skipped += 1
            continue
        tmp = os.path.join(args.scratch, case["name"])
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        places = {"tmp": tmp, "data": os.path.join(SOURCE, "tests", "data"),
                  "card": os.path.join(SOURCE, "nest", "llama-3.1-8b-instruct"),
                  "nest": os.path.join(SOURCE, "nest"),
                  "gqa2": os.path.join(SOURCE, "tests", "data", "llama", "gqa2")}
        problem = run_case(case, args, places)
        if problem:
            print(f"  FAIL {case['name']} ({case['class']}): {problem}")
            failed.append(case["name"])
    ran = len(args.cases or names) - skipped
    print(f"{ran - len(failed)} of {ran} bad-input cases passed ({skipped} skipped: parts not built)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
