#!/usr/bin/env python3
"""Serving workload against an OpenAI-compatible server, with the official
`openai` client (AsyncOpenAI, streaming /v1/completions).

Benchmark (default):
    client.py --base-url http://127.0.0.1:PORT/v1 [--token-pool POOL.json]
              [--run K] [--json OUT.json]
  64 requests, prompt lengths uniform in [128, 512] (seeded), each prompt a
  list of token ids, 64 new tokens with ignore_eos, temperature 0, at most 8
  in flight; 2 warm-up requests first (not timed). Prompts are windows of a
  token pool (the tokens of a fixed text, see token_pool.py) at distinct
  offsets, so no two requests of a run, nor of runs 0..R-1, share a prefix
  and neither server's prefix cache helps; without a pool, random ids in
  [1000, 40000).

Soak (`--soak-seconds S`): --concurrency streams send requests back to back
  for --warmup-seconds, then for S seconds; with --pid, the server's VmRSS is
  sampled every --rss-interval seconds. Exits 1 if a request failed or came
  back short, or RSS grew more than --max-rss-growth after the warm-up.

Metrics as vLLM's `vllm bench serve` defines them (vllm/benchmarks/serve.py,
calculate_metrics and the OpenAI completions request function): per request,
TTFT = first chunk with text - send; ITL = gaps between successive chunks with
text; TPOT = (e2e - TTFT) / (output tokens - 1); e2e = end - send; output
tokens from the stream's usage (stream_options include_usage), else counted
chunks. Output tok/s = sum of output tokens / wall time of the timed requests.
Percentiles interpolate linearly (numpy's default).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import sys
import time
import urllib.request

import openai
from openai import AsyncOpenAI

PROMPT_MIN, PROMPT_MAX = 128, 512
RANDOM_IDS = (1000, 40000)


def percentile(values, p):
    """numpy.percentile(values, p) with its default linear interpolation."""
    if not values:
        return float("nan")
    xs = sorted(values)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def mean(values):
    return sum(values) / len(values) if values else float("nan")


class Prompts:
    """Seeded prompts: request j of run k gets a length uniform in
    [lo, hi] and a window of the pool at offset perm[k * per_run + j]."""

    def __init__(self, pool, seed, lo=PROMPT_MIN, hi=PROMPT_MAX):
        self.pool, self.seed, self.lo, self.hi = pool, seed, lo, hi
        self.perm = list(range(len(pool))) if pool else []
        random.Random(seed).shuffle(self.perm)

    def make(self, run, index, per_run):
        rng = random.Random(f"{self.seed}/{run}/{index}")
        n = rng.randint(self.lo, self.hi)
        if not self.pool:
            return [rng.randrange(*RANDOM_IDS) for _ in range(n)]
        start = self.perm[(run * per_run + index) % len(self.perm)]
        return [self.pool[(start + i) % len(self.pool)] for i in range(n)]


async def one_request(client, model, prompt, args, usage_ok):
    """Sends one streaming completion; returns its record (times are
    time.perf_counter() seconds)."""
    rec = {"prompt_len": len(prompt), "ok": False, "error": None, "chunks": [],
           "output_tokens": None, "finish_reason": None}
    extra = {"ignore_eos": True} if args.ignore_eos else {}
    kwargs = {}
    if usage_ok:
        kwargs["stream_options"] = {"include_usage": True}
    rec["send"] = time.perf_counter()
    try:
        stream = await client.completions.create(
            model=model, prompt=prompt, max_tokens=args.max_tokens, temperature=0.0,
            stream=True, extra_body=extra, **kwargs)
        async for chunk in stream:
            now = time.perf_counter()
            if chunk.choices:
                choice = chunk.choices[0]
                if choice.text:
                    rec["chunks"].append(now)
                if choice.finish_reason:
                    rec["finish_reason"] = choice.finish_reason
            if getattr(chunk, "usage", None) is not None and chunk.usage.completion_tokens is not None:
                rec["output_tokens"] = chunk.usage.completion_tokens
        rec["end"] = time.perf_counter()
        rec["usage_from"] = "usage" if rec["output_tokens"] is not None else "chunks"
        if rec["output_tokens"] is None:
            rec["output_tokens"] = len(rec["chunks"])
        if not rec["chunks"]:
            rec["error"] = "no content chunk"
        else:
            rec["ok"] = True
    except Exception as e:  # a failure, as vLLM counts one: recorded, not raised
        rec["end"] = time.perf_counter()
        cause = f" ({type(e.__cause__).__name__}: {e.__cause__})" if e.__cause__ else ""
        rec["error"] = f"{type(e).__name__}: {e}{cause}"[:500]
    return rec


def request_metrics(rec):
    ch = rec["chunks"]
    rec["ttft"] = ch[0] - rec["send"]
    rec["itl"] = [b - a for a, b in zip(ch, ch[1:])]
    rec["e2e"] = rec["end"] - rec["send"]
    n = rec["output_tokens"]
    rec["tpot"] = (rec["e2e"] - rec["ttft"]) / (n - 1) if n and n > 1 else None


def summarize(records, wall, args):
    ok = [r for r in records if r["ok"]]
    for r in ok:
        request_metrics(r)
    short = [r for r in ok if args.ignore_eos and r["output_tokens"] != args.max_tokens]
    out_tokens = sum(r["output_tokens"] for r in ok)
    in_tokens = sum(r["prompt_len"] for r in ok)
    ttft = [r["ttft"] * 1e3 for r in ok]
    itl = [x * 1e3 for r in ok for x in r["itl"]]
    tpot = [r["tpot"] * 1e3 for r in ok if r["tpot"] is not None]
    e2e = [r["e2e"] * 1e3 for r in ok]
    m = {
        "requests": len(records), "completed": len(ok), "failed": len(records) - len(ok),
        "short": len(short), "duration_s": wall,
        "input_tokens": in_tokens, "output_tokens": out_tokens,
        "request_throughput": len(ok) / wall, "output_throughput": out_tokens / wall,
        "total_token_throughput": (in_tokens + out_tokens) / wall,
        "usage_from": sorted({r.get("usage_from", "-") for r in ok}),
    }
    for name, xs in (("ttft_ms", ttft), ("tpot_ms", tpot), ("itl_ms", itl), ("e2e_ms", e2e)):
        m[name] = {"mean": mean(xs), "p50": percentile(xs, 50), "p90": percentile(xs, 90),
                   "p99": percentile(xs, 99)}
    m["errors"] = sorted({r["error"] for r in records if r["error"]})[:10]
    return m


def print_table(m, file=sys.stdout):
    p = lambda *a: print(*a, file=file)
    p(f"requests {m['requests']}  completed {m['completed']}  failed {m['failed']}  "
      f"short {m['short']}  wall {m['duration_s']:.2f} s  (output tokens from {','.join(m['usage_from'])})")
    p(f"output tok/s {m['output_throughput']:.1f}  total tok/s {m['total_token_throughput']:.1f}  "
      f"req/s {m['request_throughput']:.3f}")
    p(f"{'ms':<6}{'mean':>10}{'p50':>10}{'p90':>10}{'p99':>10}")
    for k, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2e_ms", "e2e")):
        v = m[k]
        p(f"{name:<6}{v['mean']:>10.1f}{v['p50']:>10.1f}{v['p90']:>10.1f}{v['p99']:>10.1f}")
    c = m.get("cpu")
    if c:
        p(f"cores busy: server {c['server_cores']:.2f}, client {c['client_cores']:.2f}, "
          f"other work {c['other_cores']:.2f}, steal {c['steal_cores']:.2f}")
    for e in m["errors"]:
        p(f"error: {e}")


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_snapshot(pid):
    """Jiffies: the machine's busy and steal time (/proc/stat), the server's
    (/proc/PID/stat) and this client's."""
    def proc(p):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        except OSError:
            return 0
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    idle = cpu[3] + cpu[4]
    steal = cpu[7] if len(cpu) > 7 else 0
    return {"busy": sum(cpu[:8]) - idle - steal, "steal": steal, "server": proc(pid) if pid else 0,
            "client": proc("self"), "t": time.perf_counter()}


def cpu_report(a, b):
    """Cores busy on average between two snapshots: the server, this client,
    everything else on the machine (other work), and steal (the host)."""
    import os
    hz = os.sysconf("SC_CLK_TCK")
    wall = b["t"] - a["t"]
    cores = lambda k: (b[k] - a[k]) / hz / wall
    r = {"server_cores": cores("server"), "client_cores": cores("client"), "steal_cores": cores("steal")}
    r["other_cores"] = max(0.0, cores("busy") - r["server_cores"] - r["client_cores"])
    return {k: round(v, 2) for k, v in r.items()}


def detect_model(base_url, api_key):
    req = urllib.request.Request(base_url.rstrip("/") + "/models",
                                 headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["data"][0]["id"]


async def bench(args, client, model, prompts):
    per_run = args.requests + args.warmup
    warm = []
    for j in range(args.warmup):
        warm.append(await one_request(client, model, prompts.make(args.run, args.requests + j, per_run),
                                      args, args.usage))
    bad = [r["error"] for r in warm if not r["ok"]]
    if bad:
        print(f"warm-up failed: {bad[0]}", file=sys.stderr)
    todo = [prompts.make(args.run, j, per_run) for j in range(args.requests)]
    sem = asyncio.Semaphore(args.concurrency)

    async def limited(prompt):
        async with sem:
            return await one_request(client, model, prompt, args, args.usage)

    cpu0 = cpu_snapshot(args.pid)
    t0 = time.perf_counter()
    records = await asyncio.gather(*(limited(p) for p in todo))
    wall = time.perf_counter() - t0
    m = summarize(records, wall, args)
    m["cpu"] = cpu_report(cpu0, cpu_snapshot(args.pid))
    digest = hashlib.sha256(json.dumps(todo).encode()).hexdigest()[:16]
    return {"metrics": m, "prompts_sha256": digest,
            "warmup_s": [r["end"] - r["send"] for r in warm],
            "requests": [{k: r.get(k) for k in ("prompt_len", "ok", "error", "output_tokens", "finish_reason",
                                                 "send", "end", "chunks")} for r in records]}


async def soak(args, client, model, prompts):
    stop_at = {"warm": time.perf_counter() + args.warmup_seconds}
    stop_at["end"] = stop_at["warm"] + args.soak_seconds
    phase = {"name": "warmup"}
    counts = {"warmup": [0, 0], "soak": [0, 0]}  # completed, failed-or-short
    records = []
    errors = []
    samples = []
    counter = [0]

    async def worker():
        while time.perf_counter() < stop_at["end"]:
            j = counter[0]
            counter[0] += 1
            rec = await one_request(client, model, prompts.make(0, j, 1 << 30), args, args.usage)
            good = rec["ok"] and (not args.ignore_eos or rec["output_tokens"] == args.max_tokens)
            name = "soak" if rec["send"] >= stop_at["warm"] else "warmup"
            counts[name][0 if good else 1] += 1
            if not good:
                errors.append(rec["error"] or f"short: {rec['output_tokens']} of {args.max_tokens} tokens")
            if rec["ok"] and name == "soak":
                request_metrics(rec)
                records.append((rec["ttft"], rec["e2e"]))

    async def sampler():
        t0 = time.perf_counter()
        while True:
            now = time.perf_counter()
            if now >= stop_at["warm"] and phase["name"] == "warmup":
                phase["name"] = "soak"
            if args.pid:
                samples.append({"t": round(now - t0, 1), "phase": phase["name"], "rss_kib": rss_kib(args.pid)})
                last = samples[-1]
                mib = last["rss_kib"] / 1024 if last["rss_kib"] else float("nan")
                print(f"  t={last['t']:7.1f}s  {last['phase']:<6}  rss {mib:8.1f} MiB"
                      f"  completed {counts['warmup'][0] + counts['soak'][0]}"
                      f"  failed {counts['warmup'][1] + counts['soak'][1]}", flush=True)
            if now >= stop_at["end"]:
                return
            wait = min(args.rss_interval, max(0.0, stop_at["end"] - now) + 0.01)
            if phase["name"] == "warmup":  # a sample right at the end of the warm-up: the baseline
                wait = min(wait, max(0.0, stop_at["warm"] - now) + 0.01)
            await asyncio.sleep(wait)

    t0 = time.perf_counter()
    samp = asyncio.create_task(sampler())
    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    wall = time.perf_counter() - t0
    samp.cancel()
    if args.pid:
        samples.append({"t": round(wall, 1), "phase": "end", "rss_kib": rss_kib(args.pid)})
    soak_samples = [s["rss_kib"] for s in samples if s["phase"] in ("soak", "end") and s["rss_kib"]]
    base = soak_samples[0] if soak_samples else None
    final = soak_samples[-1] if soak_samples else None
    peak = max(soak_samples) if soak_samples else None
    growth = (final - base) / base if base and final else None
    ttfts = [t * 1e3 for t, _ in records]
    e2es = [e * 1e3 for _, e in records]
    res = {
        "concurrency": args.concurrency, "warmup_seconds": args.warmup_seconds,
        "soak_seconds": args.soak_seconds, "wall_s": wall,
        "warmup_completed": counts["warmup"][0], "warmup_failed": counts["warmup"][1],
        "completed": counts["soak"][0], "failed": counts["soak"][1],
        "errors": sorted(set(errors))[:10],
        "rss_after_warmup_kib": base, "rss_end_kib": final, "rss_peak_kib": peak,
        "rss_growth": growth, "max_rss_growth": args.max_rss_growth,
        "ttft_ms_p50": percentile(ttfts, 50), "ttft_ms_p99": percentile(ttfts, 99),
        "e2e_ms_p50": percentile(e2es, 50), "e2e_ms_p99": percentile(e2es, 99),
        "samples": samples,
    }
    lost = counts["warmup"][1] + counts["soak"][1]
    res["pass"] = lost == 0 and counts["soak"][0] > 0 and (growth is None or growth <= args.max_rss_growth)
    if args.pid and growth is None:
        res["pass"] = False
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("--api-key", default="none")
    ap.add_argument("--model", help="default: the first of /v1/models")
    ap.add_argument("--token-pool", help="JSON list of token ids (token_pool.py); default random ids")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run", type=int, default=0, help="run index: runs use disjoint prompt offsets")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=8, help="requests in flight at most")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-min", type=int, default=PROMPT_MIN)
    ap.add_argument("--prompt-max", type=int, default=PROMPT_MAX)
    ap.add_argument("--no-ignore-eos", dest="ignore_eos", action="store_false")
    ap.add_argument("--no-usage", dest="usage", action="store_false",
                    help="do not send stream_options (count chunks as tokens)")
    ap.add_argument("--label", default="")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--soak-seconds", type=float, help="soak mode (see above)")
    ap.add_argument("--warmup-seconds", type=float, default=60.0)
    ap.add_argument("--pid", type=int, help="the server's pid: soak, its VmRSS; benchmark, its CPU time")
    ap.add_argument("--rss-interval", type=float, default=10.0)
    ap.add_argument("--max-rss-growth", type=float, default=0.10)
    args = ap.parse_args()

    pool = None
    if args.token_pool:
        with open(args.token_pool) as f:
            pool = json.load(f)
            pool = pool["tokens"] if isinstance(pool, dict) else pool
    prompts = Prompts(pool, args.seed, args.prompt_min, args.prompt_max)
    model = args.model or detect_model(args.base_url, args.api_key)

    async def go():
        client = AsyncOpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0,
                             timeout=openai.Timeout(900.0, connect=10.0))
        try:
            if args.soak_seconds is not None:
                return await soak(args, client, model, prompts)
            return await bench(args, client, model, prompts)
        finally:
            await client.close()

    res = asyncio.run(go())
    res["config"] = {"label": args.label, "base_url": args.base_url, "model": model,
                     "requests": args.requests, "warmup": args.warmup, "concurrency": args.concurrency,
                     "max_tokens": args.max_tokens, "prompt_len": [args.prompt_min, args.prompt_max],
                     "ignore_eos": args.ignore_eos, "stream_options_include_usage": args.usage,
                     "seed": args.seed, "run": args.run,
                     "prompts": "token pool" if pool else f"random ids in {list(RANDOM_IDS)}",
                     "openai": openai.__version__}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if args.soak_seconds is not None:
        r = res
        mib = lambda k: f"{r[k] / 1024:.1f} MiB" if r[k] else "-"
        print(f"soak: {r['concurrency']} streams, warm-up {r['warmup_seconds']:.0f} s "
              f"({r['warmup_completed']} completed, {r['warmup_failed']} failed), "
              f"soak {r['soak_seconds']:.0f} s: {r['completed']} completed, {r['failed']} failed or short")
        growth = "-" if r["rss_growth"] is None else f"{r['rss_growth'] * 100:+.1f}%"
        print(f"RSS after warm-up {mib('rss_after_warmup_kib')}, at the end {mib('rss_end_kib')}, "
              f"peak {mib('rss_peak_kib')}, growth {growth} (limit {r['max_rss_growth'] * 100:.0f}%)")
        print(f"TTFT p50 {r['ttft_ms_p50']:.0f} ms p99 {r['ttft_ms_p99']:.0f} ms, e2e p50 {r['e2e_ms_p50']:.0f} ms "
              f"p99 {r['e2e_ms_p99']:.0f} ms")
        for e in r["errors"]:
            print(f"error: {e}")
        print("PASS" if r["pass"] else "FAIL")
        sys.exit(0 if r["pass"] else 1)
    if not args.quiet:
        if args.label:
            print(f"== {args.label}")
        print_table(res["metrics"])
    sys.exit(0 if res["metrics"]["completed"] else 1)


if __name__ == "__main__":
    main()
