"""The table and the checks of the GPU check's benchmark (scripts/cuda-bench.sh),
in plain Python (no numpy) like cuda_check.py:

  cuda_bench_report.py DIR RESULTS judge|report

DIR holds the runs' JSON (linnet bench's decode*.json and prefill.json,
the profiles, torch.json) and the two prompts' logits. Writes DIR/bench.json
and prints a table; appends its checks to RESULTS (cuda_check.py's format).
`judge` holds the figures to the issue's bars (decode at >= 60% of the
bound, ahead of torch.compile, TTFT <= 13 ms); `report` (a run that is not
on a GPU) records them without judging. The logits against transformers'
are checked either way.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_check  # noqa: E402

# The H200's memory bandwidth by its datasheet: 4.8 TB/s; with the 8B card's
# 15.01 GB a token, the 319.8 tok/s bound of the issue.
PEAK_BYTES_PER_S = float(os.environ.get("LINNET_BENCH_PEAK_BYTES_PER_S", 4.8e12))
BAR, GOAL, TTFT_BAR_S = 0.60, 0.85, 0.013
# bf16 logits of two programs that round differently: relative to the largest.
LOGITS_RTOL = 3e-2


def load(dir, name):
    try:
        with open(os.path.join(dir, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def family_split(profile, entry):
    """[(family, ms per call, share)] of one entry's profile, largest first."""
    if not profile or entry not in profile.get("entries", {}):
        return []
    calls = profile["entries"][entry]
    rows = [(f["family"], f["ms"] / calls) for f in profile["families"] if f["entry"] == entry]
    total = sum(ms for _, ms in rows) or 1.0
    return sorted(((f, ms, ms / total) for f, ms in rows), key=lambda r: -r[1])


def main():
    dir, results, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    judge = mode == "judge"
    decode, nographs, cublaslt = (load(dir, n) for n in ("decode.json", "decode_nographs.json", "decode_cublaslt.json"))
    prefill, torch = load(dir, "prefill.json"), load(dir, "torch.json")
    out = {"peak_bytes_per_s": PEAK_BYTES_PER_S, "judged": judge}
    lines = []

    def rate_row(label, d):
        if not d:
            lines.append(f"  {label:<34} (no run)")
            return None
        weights = d["weight_bytes_read_per_token"]
        bound = PEAK_BYTES_PER_S / weights
        moved = (weights + d["cache_bytes_read_per_token"]) * d["tokens_per_s"]
        lines.append(f"  {label:<34} {d['tokens_per_s']:8.1f} tok/s  {d['ms_per_step']:7.3f} ms/token  "
                     f"{moved / 1e9:7.1f} GB/s ({moved / d['bandwidth_bytes_per_s']:.0%} of measured)  "
                     f"{d['tokens_per_s'] / bound:.1%} of {bound:.1f} tok/s")
        return {"tokens_per_s": d["tokens_per_s"], "ms_per_token": d["ms_per_step"], "bytes_per_s": moved,
                "copy_bandwidth_bytes_per_s": d["bandwidth_bytes_per_s"], "bound_tokens_per_s": bound,
                "bound_fraction": d["tokens_per_s"] / bound}

    lines.append("decode, batch 1, %s-token prompt, %s steps:" % (
        decode["prompt_tokens"] if decode else "?", decode["steps"] if decode else "?"))
    out["decode"] = rate_row("linnet, CUDA graphs", decode)
    out["decode_nographs"] = rate_row("linnet, no graphs", nographs)
    out["decode_cublaslt"] = rate_row("linnet, products on cuBLASLt", cublaslt)
    if torch:
        lines.append(f"  {'transformers ' + ('torch.compile' if torch['compiled'] else 'eager') + ', static cache':<34} "
                     f"{torch['tokens_per_s']:8.1f} tok/s  (torch {torch['torch']}, transformers "
                     f"{torch['transformers']})")
        out["torch"] = torch
    if decode:
        lines.append(f"  bandwidth {decode['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s ({decode['bandwidth_kind']}, this "
                     f"run); {decode['weight_bytes_read_per_token'] / 1e9:.2f} GB of weights a token")
    if prefill:
        ttft = prefill["best_call_seconds"]
        lines.append(f"prefill of {prefill['prompt_tokens']} tokens (TTFT): best {ttft * 1e3:.2f} ms, "
                     f"mean {prefill['seconds'] / prefill['calls'] * 1e3:.2f} ms, {prefill['tokens_per_s']:.0f} tok/s")
        out["ttft_seconds"] = ttft
        out["prefill_tokens"] = prefill["prompt_tokens"]
    for entry, file in (("decode", "profile_decode.json"), ("prefill", "profile_prefill.json")):
        split = family_split(load(dir, file), entry)
        out[f"{entry}_split"] = [{"family": f, "ms_per_call": ms, "share": s} for f, ms, s in split]
        if split:
            lines.append(f"{entry}, device time by kernel family (profiled, graphs off): " +
                         ", ".join(f"{f} {ms:.3f} ms ({s:.0%})" for f, ms, s in split))
        else:
            lines.append(f"{entry}: no profile (LINNET_CUDA_PROFILE profiles the cuda backend only)")

    with open(os.path.join(dir, "bench.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("\n".join(lines), flush=True)

    # The checks.
    if os.path.exists(os.path.join(dir, "torch_logits.npy")):
        cuda_check.compare("bench: logits vs transformers (same weights)", os.path.join(dir, "torch_logits.npy"),
                           os.path.join(dir, "logits.npy"), LOGITS_RTOL, results)
    verdict = (lambda ok: ok) if judge else (lambda ok: True)
    note = "" if judge else " (not judged: not on a GPU)"
    if out.get("decode"):
        f = out["decode"]["bound_fraction"]
        cuda_check.record(results, "bench: decode at >= 60% of the bound", verdict(f >= BAR),
                          f"{out['decode']['tokens_per_s']:.1f} tok/s, {f:.1%} of "
                          f"{out['decode']['bound_tokens_per_s']:.1f} (goal {GOAL:.0%}){note}")
    if out.get("decode") and torch:
        ahead = out["decode"]["tokens_per_s"] / torch["tokens_per_s"]
        peer = "torch.compile" if torch["compiled"] else "eager transformers"
        cuda_check.record(results, f"bench: decode ahead of {peer}", verdict(ahead > 1),
                          f"{ahead:.2f}x transformers' {torch['tokens_per_s']:.1f} tok/s{note}")
    if "ttft_seconds" in out:
        cuda_check.record(results, f"bench: TTFT of {out['prefill_tokens']} tokens <= 13 ms",
                          verdict(out["ttft_seconds"] <= TTFT_BAR_S), f"{out['ttft_seconds'] * 1e3:.2f} ms{note}")
    return cuda_check.report(results)


if __name__ == "__main__":
    sys.exit(main())
