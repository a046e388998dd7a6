"""The ONNX export checked by the programs that consume it (PyPI onnx and
onnxruntime), run by check_onnx_with_onnxruntime.sh.

First the entries of tests/data/export/onnx_ops (the emitters the card does
not reach), each result and state equal to the reference backend's. Then for
each model (the llama card's two-layer f32 fixture, SmolLM2-135M-Instruct
bound as f32): `linnet export onnx` writes forward and prefill with their own
generics as dynamic axes (forward's B and S, prefill's S; no sizes given),
forward again with --static-axes at B=1 S=8, and decode;
onnx.checker.check_model(full_check=True) accepts each, and the dynamic
exports declare those axes by name; ONNX Runtime's logits on the dynamic
forward, at (B, S) = (1, 8), (2, 5), (1, 1) and (3, 13), and on the static
one, are compared with `linnet call`'s for the same tokens; then
prefill and four decode steps run through ONNX Runtime, each step's
`present.*` fed back as the next one's `past.*`, and its logits and every
cache after every step are compared with the reference backend's for the same
sequence (linnet_reference_run, which writes states as well as results).
Writes a JSON report; exits 1 when a difference passes --tolerance times
the compared values' scale (max(1, max |value|): ONNX Runtime sums in f32,
the reference in double, so on SmolLM2's logits of ~30 the f32 rounding
alone is some 1e-6 relative), or a greedy id differs.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

GQA2_GENERICS = ["Vocab=64", "H=64", "Heads=4", "KvHeads=2", "Inner=96", "Layers=2", "MaxSeq=64", "T=f32"]
PROMPT = [47, 19, 38, 53, 12, 52, 24, 57]


def sets(generics):
    return [a for g in generics for a in ("--set", g)]


def export(args, model, entry, extra, out, flags=()):
    cmd = [args.linnet, "export", "onnx", model["package"], *model["weights"], *sets(model["generics"] + extra),
           "--entry", entry, *flags, "--force", "-o", out]
    t0 = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.time() - t0
    data = glob.glob(glob.escape(out) + ".*.data")  # FILE.onnx.<16 hex digits>.data, when external
    size = os.path.getsize(out) + sum(os.path.getsize(d) for d in data)
    onnx.checker.check_model(out, full_check=True)
    return {"file": out, "seconds": round(seconds, 2), "bytes": size, "checker": "full_check passed"}


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def check_model(args, model, scratch):
    report = {"name": model["name"], "exports": {}}
    tokens = np.array([PROMPT], dtype=np.int32)
    steps = model["decode_tokens"]
    paths = {}
    for key, entry, extra in (("forward", "forward", []), ("forward_static", "forward", ["B=1", f"S={len(PROMPT)}"]),
                              ("prefill", "prefill", []), ("decode", "decode", [])):
        paths[key] = os.path.join(scratch, f"{model['name']}.{key}.onnx")
        flags = ["--static-axes"] if key == "forward_static" else []
        report["exports"][key] = export(args, model, entry, extra, paths[key], flags)
    axes = {k: [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
                for i in onnx.load(paths[k], load_external_data=False).graph.input]
            for k in ("forward", "forward_static", "prefill")}
    report["axes"] = {k: v[0] for k, v in axes.items()}
    axes_ok = axes["forward"][0] == ["B", "S"] and axes["forward_static"][0] == [1, len(PROMPT)] and \
        axes["prefill"][0] == [1, "S"]

    # forward: ONNX Runtime against `linnet call`, the dynamic export at
    # several sizes, the static one at its own.
    rng = np.random.default_rng(5)
    runs = [("forward", tokens), ("forward_static", tokens)]
    for b, n in ((2, 5), (1, 1), (3, 13)):
        runs.append(("forward", rng.integers(0, 64, size=(b, n), dtype=np.int32)))
    report["forward"] = []
    for key, t in runs:
        np.save(os.path.join(scratch, "tokens.npy"), t)
        linnet_logits = os.path.join(scratch, "forward.npy")
        subprocess.run([args.linnet, "call", model["package"], *model["weights"], *sets(model["generics"]),
                        "--backend", args.backend, "--entry", "forward", "--input",
                        f"tokens=@{os.path.join(scratch, 'tokens.npy')}", "--output", f"@{linnet_logits}"],
                       check=True, stdout=subprocess.DEVNULL)
        want = np.load(linnet_logits)
        got = session(paths[key]).run(None, {"tokens": t})[0]
        report["forward"].append({"export": key, "shape": list(got.shape), "max_abs_diff": float(np.abs(got - want).max()),
                                  "max_abs_logit": float(np.abs(want).max()),
                                  "argmax_equal": bool(got.shape == want.shape and (got.argmax(-1) == want.argmax(-1)).all())})
    np.save(os.path.join(scratch, "tokens.npy"), tokens)

    # prefill, then four decode steps: ONNX Runtime against the reference backend, caches included.
    ref = os.path.join(scratch, "reference")
    cmd = [args.reference_run, model["package"], *model["weights"], *sets(model["generics"]), "--out", ref]
    np.save(os.path.join(scratch, "pos0.npy"), np.array(0, dtype=np.int32))
    cmd += ["--entry", "prefill", "--generic", f"S={len(PROMPT)}", "--input", f"tokens={scratch}/tokens.npy",
            "--input", f"pos={scratch}/pos0.npy"]
    for i, t in enumerate(steps):
        np.save(os.path.join(scratch, f"token{i}.npy"), np.array([[t]], dtype=np.int32))
        np.save(os.path.join(scratch, f"pos{i + 1}.npy"), np.array(len(PROMPT) + i, dtype=np.int32))
        cmd += ["--entry", "decode", "--input", f"token={scratch}/token{i}.npy", "--input", f"pos={scratch}/pos{i + 1}.npy"]
    subprocess.run(cmd, check=True)
    prefill, decode = session(paths["prefill"]), session(paths["decode"])
    state_names = [o.name[len("present."):] for o in prefill.get_outputs() if o.name.startswith("present.")]
    caches = {f"past.{s}": np.zeros(i.shape, dtype=np.float32)
              for s, i in zip(state_names, [i for i in prefill.get_inputs() if i.name.startswith("past.")])}
    sequence = []
    for step in range(1 + len(steps)):
        if step == 0:
            feeds = {"tokens": tokens, "pos": np.array(0, dtype=np.int32)}
            run = prefill
        else:
            feeds = {"token": np.array([[steps[step - 1]]], dtype=np.int32),
                     "pos": np.array(len(PROMPT) + step - 1, dtype=np.int32)}
            run = decode
        outputs = dict(zip([o.name for o in run.get_outputs()], run.run(None, {**feeds, **caches})))
        logits = np.load(os.path.join(ref, f"{step}.result0.npy"))
        cache_diff, cache_scale = 0.0, 0.0
        for s in state_names:
            want_cache = np.load(os.path.join(ref, f"{step}.{s}.npy"))
            cache_diff = max(cache_diff, float(np.abs(outputs[f"present.{s}"] - want_cache).max()))
            cache_scale = max(cache_scale, float(np.abs(want_cache).max()))
        sequence.append({"entry": "prefill" if step == 0 else "decode",
                         "logits_max_abs_diff": float(np.abs(outputs["result"] - logits).max()),
                         "max_abs_logit": float(np.abs(logits).max()),
                         "caches_max_abs_diff": cache_diff, "caches_max_abs": cache_scale,
                         "argmax": int(outputs["result"].argmax()), "reference_argmax": int(logits.argmax())})
        caches = {f"past.{s}": outputs[f"present.{s}"] for s in state_names}
    report["prefill_decode"] = {"caches": len(state_names), "steps": sequence}
    def relative(diff, scale):
        return diff / max(1.0, scale)
    worst = max([f["max_abs_diff"] for f in report["forward"]] +
                [max(s["logits_max_abs_diff"], s["caches_max_abs_diff"]) for s in sequence])
    worst_relative = max([relative(f["max_abs_diff"], f["max_abs_logit"]) for f in report["forward"]] +
                         [max(relative(s["logits_max_abs_diff"], s["max_abs_logit"]),
                              relative(s["caches_max_abs_diff"], s["caches_max_abs"])) for s in sequence])
    report["max_abs_diff"] = worst
    report["max_relative_diff"] = worst_relative
    report["passed"] = (axes_ok and worst_relative <= args.tolerance and all(f["argmax_equal"] for f in report["forward"])
                        and all(s["argmax"] == s["reference_argmax"] for s in sequence))
    return report


# tests/data/export/onnx_ops: the emitters the card does not reach, on edge
# cases (division by zero, negative operands, indices out of range).
OPS_CALLS = [
    ("reductions", {"x": np.array([[1.5, -2.0, 3.25, 0.5], [-1.0, -4.0, 2.0, 2.0]], np.float32)}),
    ("binders", {"x": np.array([[1.0, -2.0, 0.5, 3.0], [2.0, 1.5, -1.0, 0.25], [-0.5, 2.0, 4.0, 1.0]], np.float32),
                 "flags": np.array([[1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]], bool)}),
    ("integers", {"a": np.array([7, -7, 7, -7, 5, 9], np.int32), "b": np.array([2, 2, -2, -2, 0, -1], np.int32)}),
    ("pick", {"x": np.arange(-10, 10, dtype=np.float32).reshape(4, 5) / 4,
              "rows": np.array([0, 3, 9], np.int32), "cols": np.array([4, -2, 1], np.int32)}),
    ("ramp", {"x": np.array([0.5, -1.0, 2.0], np.float32)}),  # one export, N a dynamic axis: two sizes
    ("ramp", {"x": np.arange(7, dtype=np.float32) / 3}),
    ("accumulate", {"x": np.array([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -3.0, 0.25]], np.float32)}),
    ("accumulate", {"x": np.array([[1.0, 0.5, -0.5, 2.0], [0.0, -1.0, 1.0, 1.0]], np.float32)}),
]


def check_ops(args, scratch):
    package = "tests/data/export/onnx_ops"
    ref = os.path.join(scratch, "ops-reference")
    cmd = [args.reference_run, package, "--random-weights", "--out", ref]
    for k, (entry, inputs) in enumerate(OPS_CALLS):
        cmd += ["--entry", entry]
        for name, value in inputs.items():
            path = os.path.join(scratch, f"ops{k}.{name}.npy")
            np.save(path, value)
            cmd += ["--input", f"{name}={path}"]
    subprocess.run(cmd, check=True)
    sessions, state, results, worst = {}, {}, [], 0.0
    for k, (entry, inputs) in enumerate(OPS_CALLS):
        if entry not in sessions:
            path = os.path.join(scratch, f"ops.{entry}.onnx")
            subprocess.run([args.linnet, "export", "onnx", package, "--random-weights", "--entry", entry, "--force",
                            "-o", path], check=True, stdout=subprocess.DEVNULL)
            onnx.checker.check_model(path, full_check=True)
            sessions[entry] = session(path)
        run = sessions[entry]
        feeds = dict(inputs)
        for i in run.get_inputs():
            if i.name.startswith("past."):
                feeds[i.name] = state.get(i.name[5:], np.zeros(i.shape, np.float32))
        outputs = dict(zip([o.name for o in run.get_outputs()], run.run(None, feeds)))
        names = sorted(n for n in outputs if n.startswith("result"))
        exact = True
        for r, n in enumerate(names):
            want, got = np.load(os.path.join(ref, f"{k}.result{r}.npy")), outputs[n]
            if got.dtype.kind in "fc":
                worst = max(worst, float(np.abs(got - want).max()))
            else:
                exact &= bool((got == want).all()) and got.dtype == want.dtype
        for n, v in outputs.items():
            if n.startswith("present."):
                state[n[len("present."):]] = v
                worst = max(worst, float(np.abs(v - np.load(os.path.join(ref, f"{k}.{n[len('present.'):]}.npy"))).max()))
        results.append({"entry": entry, "outputs": len(names), "integers_and_bools_equal": exact})
    return {"name": "onnx_ops", "calls": results, "max_abs_diff": worst, "max_relative_diff": worst,
            "passed": worst <= args.tolerance and all(r["integers_and_bools_equal"] for r in results)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--linnet", required=True)
    p.add_argument("--reference-run", required=True)
    p.add_argument("--backend", default="reference", help="the backend `linnet call` runs forward on")
    p.add_argument("--tolerance", type=float, default=1e-5)
    p.add_argument("--json", required=True)
    p.add_argument("--smollm2", help="SmolLM2-135M-Instruct's GGUF (scripts/fetch-smollm2.sh)")
    p.add_argument("--scratch", default=None)
    args = p.parse_args()
    models = [{"name": "gqa2", "package": "nest/llama-3.1-8b-instruct",
               "weights": ["--weights", "tests/data/llama/gqa2/model.safetensors"], "generics": GQA2_GENERICS,
               "decode_tokens": [56, 16, 48, 7]}]
    if args.smollm2:
        models.append({"name": "smollm2", "package": "nest/smollm2-135m-instruct",
                       "weights": ["--weights", args.smollm2], "generics": [], "decode_tokens": [28, 1234, 42, 7]})
    report = {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__,
              "tolerance": args.tolerance, "models": []}
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        r = check_ops(args, scratch)
        report["models"].append(r)
        print(json.dumps({k: r[k] for k in ("name", "max_abs_diff", "passed")}), flush=True)
        for m in models:
            r = check_model(args, m, scratch)
            report["models"].append(r)
            print(json.dumps({k: r[k] for k in ("name", "max_abs_diff", "max_relative_diff", "passed")}), flush=True)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print(f"report: {args.json}")
    sys.exit(0 if all(m["passed"] for m in report["models"]) else 1)


if __name__ == "__main__":
    main()
