#!/usr/bin/env python3
"""Medians over runs of client.py's JSON files, Linnet against llama.cpp.

    summarize.py --out RESULTS.json --meta META.json linnet:RUN0.json ... llama:RUN0.json ...

Each metric's median is taken over the runs on its own. Ratios are
Linnet / llama.cpp: above 1 is better for output tok/s, below 1 is better for
the latencies.
"""

import argparse
import json
import statistics

ROWS = [  # (label, key path, unit, higher is better)
    ("output tok/s", ("output_throughput",), "", True),
    ("total tok/s", ("total_token_throughput",), "", True),
    ("TTFT p50", ("ttft_ms", "p50"), "ms", False),
    ("TTFT p99", ("ttft_ms", "p99"), "ms", False),
    ("ITL p50", ("itl_ms", "p50"), "ms", False),
    ("ITL p99", ("itl_ms", "p99"), "ms", False),
    ("TPOT mean", ("tpot_ms", "mean"), "ms", False),
    ("TPOT p50", ("tpot_ms", "p50"), "ms", False),
    ("e2e p50", ("e2e_ms", "p50"), "ms", False),
    ("e2e p99", ("e2e_ms", "p99"), "ms", False),
    ("wall", ("duration_s",), "s", False),
    ("failed", ("failed",), "", False),
    ("short", ("short",), "", False),
]
RATIOS = ("output tok/s", "TTFT p50", "ITL p50")


def get(m, path):
    for k in path:
        m = m[k]
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", help="JSON with the commands, threads, ready times")
    ap.add_argument("runs", nargs="+", help="SERVER:FILE.json")
    args = ap.parse_args()
    by = {}
    for spec in args.runs:
        name, path = spec.split(":", 1)
        with open(path) as f:
            by.setdefault(name, []).append(json.load(f))
    meta = {}
    if args.meta:
        with open(args.meta) as f:
            meta = json.load(f)
    names = list(by)
    med = {}
    for name in names:
        med[name] = {}
        for label, path, unit, _ in ROWS:
            xs = [get(r["metrics"], path) for r in by[name]]
            med[name][label] = {"median": statistics.median(xs), "runs": xs, "unit": unit}
    ratios = {}
    if "linnet" in med and "llama" in med:
        for label, *_ in ROWS:
            a, b = med["linnet"][label]["median"], med["llama"][label]["median"]
            ratios[label] = a / b if b else None
    same_prompts = all(len({r["prompts_sha256"] for r in runs}) == len(runs) for runs in by.values())
    same_prompts = same_prompts and len({tuple(r["prompts_sha256"] for r in runs) for runs in by.values()}) == 1
    res = {"meta": meta, "medians": med, "ratios_linnet_over_llama": ratios,
           "same_prompts_across_servers": same_prompts,
           "runs": {n: [r["metrics"] for r in rs] for n, rs in by.items()},
           "config": next(iter(by.values()))[0]["config"]}
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)

    for c in meta.get("commands", []):
        print(f"# {c}")
    cfg = res["config"]
    print(f"# {cfg['requests']} requests (+{cfg['warmup']} warm-up), prompts {cfg['prompt_len'][0]}-"
          f"{cfg['prompt_len'][1]} tokens ({cfg['prompts']}), {cfg['max_tokens']} new tokens, ignore_eos, "
          f"temperature 0, {cfg['concurrency']} in flight; median of {min(len(v) for v in by.values())} runs"
          f"{'' if same_prompts else '; WARNING: prompts differ between servers'}")
    for name in names:
        ready = meta.get("ready_s", {}).get(name)
        if ready:
            print(f"# {name}: start to /health 200: {', '.join(f'{x:.1f}' for x in ready)} s")
    head = f"{'metric':<14}" + "".join(f"{n:>14}" for n in names) + ("   linnet/llama" if ratios else "")
    print(head)
    for label, _, unit, higher in ROWS:
        cells = "".join(f"{med[n][label]['median']:>14.1f}" if unit or label.endswith("tok/s")
                        else f"{med[n][label]['median']:>14g}" for n in names)
        r = ratios.get(label)
        tail = ""
        if r is not None and label in RATIOS:
            better = (r > 1) == higher
            tail = f"   {r:.2f}x ({'Linnet better' if better else 'Linnet worse'})"
        print(f"{label + (' (' + unit + ')' if unit else ''):<14}{cells}{tail}")
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
