#!/usr/bin/env python3
"""Medians over runs of client.py's JSON files, Linnet against llama.cpp.

    summarize.py --out RESULTS.json --meta META.json linnet:RUN0.json ... llama:RUN0.json ...

Each metric's median is taken over the runs on its own, and its best run
(the highest throughput, the lowest latency: on a machine shared with other
work, the run least disturbed); failures are summed over runs. Ratios are
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
SUMMED = ("failed", "short")  # over all runs, not a median


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
        for label, path, unit, higher in ROWS:
            xs = [get(r["metrics"], path) for r in by[name]]
            if label in SUMMED:
                med[name][label] = {"median": sum(xs), "best": sum(xs), "runs": xs, "unit": unit}
                continue
            med[name][label] = {"median": statistics.median(xs), "best": max(xs) if higher else min(xs),
                                "runs": xs, "unit": unit}
    ratios, best_ratios = {}, {}
    if "linnet" in med and "llama" in med:
        for label, *_ in ROWS:
            for out, key in ((ratios, "median"), (best_ratios, "best")):
                a, b = med["linnet"][label][key], med["llama"][label][key]
                out[label] = a / b if b else None
    same_prompts = all(len({r["prompts_sha256"] for r in runs}) == len(runs) for runs in by.values())
    same_prompts = same_prompts and len({tuple(r["prompts_sha256"] for r in runs) for runs in by.values()}) == 1
    res = {"meta": meta, "medians": med, "ratios_linnet_over_llama": ratios,
           "best_ratios_linnet_over_llama": best_ratios,
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
    for name in names:
        cpu = [r["metrics"].get("cpu") for r in by[name]]
        if all(cpu):
            col = lambda k: ", ".join(f"{c[k]:.2f}" for c in cpu)
            print(f"# {name}: cores busy with other work during each run: {col('other_cores')} "
                  f"(steal {col('steal_cores')}); the server used {col('server_cores')}")
    print("# median of the runs, then the best run (failed, short: all runs); ratios Linnet / llama.cpp")
    head = f"{'metric':<15}" + "".join(f"{n + ' med':>13}{n + ' best':>13}" for n in names)
    if ratios:
        head += f"{'ratio med':>11}{'ratio best':>11}"
    print(head)
    for label, _, unit, higher in ROWS:
        cells = ""
        for n in names:
            for key in ("median", "best"):
                v = med[n][label][key]
                cells += f"{v:>13.1f}" if unit or label.endswith("tok/s") else f"{v:>13g}"
        tail = ""
        if ratios and ratios.get(label) is not None and label not in SUMMED:
            tail = f"{ratios[label]:>10.2f}x{best_ratios[label]:>10.2f}x"
            if label in RATIOS:
                better = (ratios[label] > 1) == higher
                tail += f"  (Linnet {'better' if better else 'worse'})"
        print(f"{label + (' (' + unit + ')' if unit else ''):<15}{cells}{tail}")
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
