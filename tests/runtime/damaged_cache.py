#!/usr/bin/env python3
"""A damaged compile cache is rebuilt, not fatal (issue 40). Generates with
compiled code once into a fresh LINNET_CACHE, then damages the cached
`decode` artifact four ways (its model.so truncated, one byte of it
flipped, it deleted, its manifest.json cut short) and generates again each
time: the run must exit 0 with the same ids, say on stderr which folder was
damaged and that it is built again, and leave a whole artifact behind.
Also: LINNET_CACHE empty, or naming a file, is refused with a message that
names it; and a `linnet` killed mid-compile takes its linnetc with it, and
the next run removes the build folder it left. Linux only (/proc).
Usage: damaged_cache.py LINNET CARD GQA2_FOLDER SCRATCH"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

linnet, card, gqa2, scratch = sys.argv[1:5]
cache = os.path.join(scratch, "cache")
sets = ["--set", "Vocab=64", "--set", "H=64", "--set", "Heads=4", "--set", "KvHeads=2", "--set", "Inner=96",
        "--set", "Layers=2", "--set", "MaxSeq=64", "--set", "T=f32"]
command = [linnet, "generate", card, "--weights", os.path.join(gqa2, "model.safetensors"), *sets,
           "--prompt-ids", "47,19,38,53,12,52,24,57", "--max-new", "6", "--backend", "cpu"]
failures = []


def run(cache_value):
    env = dict(os.environ, LINNET_CACHE=cache_value)
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
first = run(cache)
check(first.returncode == 0, f"first run exits 0 ({first.stderr.strip()[-300:]})")
expected = first.stdout.strip().splitlines()[-1] if first.stdout.strip() else ""
decode = glob.glob(os.path.join(cache, "decode-*"))
check(len(decode) == 1, f"one cached decode artifact ({decode})")


def truncate(d):
    path = os.path.join(d, "model.so")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def flip(d):
    path = os.path.join(d, "model.so")
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))


def delete(d):
    os.remove(os.path.join(d, "model.so"))


def cut_manifest(d):
    path = os.path.join(d, "manifest.json")
    with open(path, "r+b") as f:
        f.truncate(40)


for name, damage in [("model.so truncated", truncate), ("a byte of model.so flipped", flip),
                     ("model.so deleted", delete), ("manifest.json cut short", cut_manifest)]:
    if len(decode) != 1:
        break
    damage(decode[0])
    r = run(cache)
    got = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    check(r.returncode == 0 and got == expected, f"{name}: exit {r.returncode}, ids {got} (first run: {expected})")
    check(f"the cached artifact {decode[0]} is damaged" in r.stderr and "building it again" in r.stderr,
          f"{name}: stderr names the folder and the rebuild ({r.stderr.strip()[:300]})")
    check(os.path.exists(os.path.join(decode[0], "model.so")), f"{name}: the artifact is whole again")

empty = run("")
check(empty.returncode == 1 and "LINNET_CACHE is set but empty" in empty.stderr,
      f"LINNET_CACHE empty: exit {empty.returncode}, {empty.stderr.strip()}")
a_file = os.path.join(scratch, "a-file")
open(a_file, "w").close()
not_dir = run(a_file)
check(not_dir.returncode == 1 and f"LINNET_CACHE={a_file}: not a folder" in not_dir.stderr,
      f"LINNET_CACHE a file: exit {not_dir.returncode}, {not_dir.stderr.strip()}")



def children(pid, comm):
    """PIDs of live processes named `comm` whose parent is `pid`."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)
            name = fields[0].split("(", 1)[1]
            state, ppid = fields[1].split()[0:2]
        except (OSError, IndexError):
            continue
        if name == comm and int(ppid) == pid and state != "Z":
            found.append(int(stat.split("/")[2]))
    return found


def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


killed_cache = os.path.join(scratch, "killed")
parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=dict(os.environ, LINNET_CACHE=killed_cache))

def compiling_entry(pid):
    """A linnetc child of `pid` compiling an entry (seconds of work) whose
    build folder exists."""
    for child in children(pid, "linnetc"):
        try:
            if b"--entry" in open(f"/proc/{child}/cmdline", "rb").read() and \
                    glob.glob(os.path.join(killed_cache, f".tmp-{pid}-*")):
                return child
        except OSError:
            pass
    return None


compiler = None
deadline = time.time() + 120
while compiler is None and time.time() < deadline and parent.poll() is None:
    compiler = compiling_entry(parent.pid)
    time.sleep(0.01)
check(compiler is not None, "a linnetc compiling an entry under linnet was seen")
if compiler is not None:
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    # Killed with its parent (an entry's compile takes seconds; before, it ran on to the end).
    deadline = time.time() + 0.5
    while alive(compiler) and time.time() < deadline:
        time.sleep(0.01)
    check(not alive(compiler), f"linnetc {compiler} ended within 0.5 s of its linnet being killed")
    left = glob.glob(os.path.join(killed_cache, f".tmp-{parent.pid}-*"))
    again = run(killed_cache)
    gone = not glob.glob(os.path.join(killed_cache, f".tmp-{parent.pid}-*"))
    check(again.returncode == 0 and left and gone,
          f"the next run exits {again.returncode} and removes the killed run's build folder ({left})")

print("all checks hold" if not failures else f"{len(failures)} check(s) failed")
sys.exit(1 if failures else 0)
