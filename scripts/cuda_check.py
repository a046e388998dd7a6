"""Helpers of scripts/cuda-check.sh, in plain Python (no numpy: the build
machine has none), so the check runs the same here and on the GPU machine.

  cuda_check.py ids PATH 3,5,7          writes token ids as i32 [1, n] .npy
  cuda_check.py compare NAME EXPECTED ACTUAL RTOL RESULTS
                                        max |a - e| / max |e| <= RTOL, no NaN
  cuda_check.py same NAME A B RESULTS   the two files hold the same bytes
  cuda_check.py equal NAME EXPECTED ACTUAL RESULTS
                                        two text files (printed ids) are equal
  cuda_check.py note NAME pass|fail|skip DETAIL RESULTS
                                        records a check decided elsewhere
  cuda_check.py report RESULTS          the table of every check, exit 1 if one failed

RESULTS is a JSON-lines file; each check appends one line
{"check", "ok", "detail"} (and "skipped": true for a check that could not run,
which counts as neither passed nor failed) and prints it.
"""
import json
import math
import os
import struct
import sys

# The token-id writer the `linnet call` tests use.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "call"))
from npy import ids as write_ids  # noqa: E402


def read_floats(path):
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        length, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        length, start = struct.unpack("<I", data[8:12])[0], 12
    header = data[start:start + length].decode()
    body = data[start + length:]
    if "'<f4'" in header:
        return list(struct.unpack("<%df" % (len(body) // 4), body))
    if "'<f2'" in header:
        return list(struct.unpack("<%de" % (len(body) // 2), body))
    if "'<u2'" in header:  # linnet writes bf16 as its bits
        bits = struct.unpack("<%dH" % (len(body) // 2), body)
        return list(struct.unpack("<%df" % len(bits), struct.pack("<%dI" % len(bits), *(b << 16 for b in bits))))
    raise ValueError(f"{path}: unsupported element type in {header.strip()}")


def record(results, check, ok, detail, skipped=False):
    line = {"check": check, "ok": bool(ok) or skipped, "detail": detail}
    if skipped:
        line["skipped"] = True
    with open(results, "a") as f:
        f.write(json.dumps(line) + "\n")
    print(("SKIP " if skipped else "PASS " if ok else "FAIL ") + check + ": " + detail, flush=True)


def compare(name, expected, actual, rtol, results):
    try:
        e, a = read_floats(expected), read_floats(actual)
    except (OSError, ValueError) as err:
        return record(results, name, False, str(err))
    if len(e) != len(a):
        return record(results, name, False, f"{len(a)} values, expected {len(e)}")
    nan = sum(1 for x in a if math.isnan(x) or math.isinf(x))
    scale = max((abs(x) for x in e), default=0.0) or 1.0
    worst = max((abs(x - y) for x, y in zip(a, e)), default=0.0)
    ok = nan == 0 and worst / scale <= float(rtol)
    record(results, name, ok, f"max abs diff {worst:.3g}, relative {worst / scale:.3g} (bar {rtol}), {nan} NaN/inf")


def same(name, a, b, results):
    try:
        x, y = open(a, "rb").read(), open(b, "rb").read()
    except OSError as err:
        return record(results, name, False, str(err))
    record(results, name, x == y, "bit-identical" if x == y else f"{a} and {b} differ")


def equal(name, expected, actual, results):
    try:
        e, a = open(expected).read().strip(), open(actual).read().strip()
    except OSError as err:
        return record(results, name, False, str(err))
    record(results, name, e == a, e if e == a else f"got {a}, expected {e}")


def report(results):
    lines = [json.loads(l) for l in open(results) if l.strip()]
    width = max((len(l["check"]) for l in lines), default=5)
    print(f"\n{'check':<{width}}  result  detail")
    for l in lines:
        result = "skip" if l.get("skipped") else "pass" if l["ok"] else "FAIL"
        print(f"{l['check']:<{width}}  {result:<6}  {l['detail']}")
    failed = sum(1 for l in lines if not l["ok"])
    skipped = sum(1 for l in lines if l.get("skipped"))
    print(f"\n{len(lines) - failed - skipped} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "ids" and len(argv) == 4:
        return write_ids(argv[2], argv[3])
    if cmd == "compare" and len(argv) == 7:
        return compare(*argv[2:])
    if cmd == "same" and len(argv) == 6:
        return same(*argv[2:])
    if cmd == "equal" and len(argv) == 6:
        return equal(*argv[2:])
    if cmd == "note" and len(argv) == 6 and argv[3] in ("pass", "fail", "skip"):
        return record(argv[5], argv[2], argv[3] == "pass", argv[4], skipped=argv[3] == "skip")
    if cmd == "report" and len(argv) == 3:
        return report(argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv) or 0)
