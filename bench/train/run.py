"""Training speed: `linnet finetune` against torch on the same model, rows,
batch and threads, in the same run (bench/train/README.md).

    .cache/torch-venv/bin/python bench/train/run.py --linnet build/bin/linnet [--threads 2]
        [--backend cpu] [--set H=64 --set Layers=2 ...] [--steps 4] [--batch-tokens 128]
    .cache/torch-venv/bin/python bench/train/run.py --linnet build/bin/linnet \
        --gguf .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf --batch-tokens 512

Without --gguf both train the Llama card at the given generics from the
same seeded random values (exported with `linnet export hf`); with it,
SmolLM2-135M from its GGUF dequantized to f32 (`linnet export hf --set
T=f32`, the folder both load). Full and LoRA (r 8 on all seven
projections), on a synthetic text set; prints tokens per second of training
steps, each side's peak memory, and the ratio Linnet / torch. Linnet's
entries are compiled by a one-step run first; then each side runs one
untimed step and --steps timed ones, Linnet's from its own report (the
difference of two lines' totals), torch's in a process of its own so that
its peak is its own. The two alternate for --rounds rounds, each round's
ratio of runs side by side, and the median and range of the ratios close
the table: this machine's speed drifts by tens of percent within minutes.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LLAMA = os.path.join(ROOT, "nest", "llama-3.1-8b-instruct")
SMOLLM2 = os.path.join(ROOT, "nest", "smollm2-135m-instruct")
TOKENIZER = os.path.join(ROOT, "tests", "data", "tokenizer", "spbpe")
DEFAULT_SETS = ["Vocab=4000", "H=128", "Heads=4", "KvHeads=2", "Inner=256", "Layers=2", "MaxSeq=256", "T=f32"]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def rows(path, count=64):
    # Longer than any step: each row is cut to --batch-tokens (a note per row on
    # stderr), so Linnet's steps hold exactly as many tokens as torch's.
    words = "the sea is wide and the sky is grey while a small model learns one small thing at a time".split()
    with open(path, "w") as f:
        for k in range(count):
            text = " ".join(words[(k + j) % len(words)] for j in range(1200))
            f.write('{"text": "%s"}\n' % text)


def linnet_speed(args, model, data, kind, out, steps):
    """Tokens/s of steps 2 .. steps+1 (step 1 untimed, as torch's is) and the peak memory in MB."""
    command = [args.linnet, "finetune", *model, "--data", data, f"--{kind}", "--steps", str(steps + 1),
               "--batch-tokens", str(args.batch_tokens), "--report-every", "1", "--lr", "1e-4",
               "--backend", args.backend, "-o", out]
    if kind == "lora":
        command += ["--lora-rank", "8"]
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": str(args.threads)})
    if run.returncode != 0:
        sys.exit(run.stderr)
    # Each line's tokens/s covers steps 1 .. its own: the seconds of the
    # later steps are the difference of two lines' totals.
    lines = re.findall(r"^step (\d+):.* ([0-9.]+) tokens/s, peak memory (\d+) MB", run.stdout, re.M)
    if steps == 0:
        return None, int(lines[-1][2])
    seconds = [int(step) * args.batch_tokens / float(rate) for step, rate, _ in lines]
    return steps * args.batch_tokens / (seconds[-1] - seconds[0]), int(lines[-1][2])


def torch_child(folder, kind, threads, steps, batch_tokens, vocab):
    """Run in a process of its own: prints tokens/s and its peak memory in MB."""
    import torch
    from transformers import LlamaForCausalLM
    torch.set_num_threads(threads)
    model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
    if kind == "lora":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS, lora_dropout=0.0))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)
    ids = torch.randint(0, vocab, (1, batch_tokens))

    def step():
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    rate = steps * batch_tokens / (time.perf_counter() - start)
    print(f"{rate} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}")


def torch_speed(args, folder, kind, vocab):
    run = subprocess.run([sys.executable, __file__, "--torch-child", folder, kind, str(args.threads), str(args.steps),
                          str(args.batch_tokens), str(vocab)], capture_output=True, text=True, check=True)
    rate, peak = run.stdout.split()[-2:]
    return float(rate), int(peak)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-child":
        folder, kind, threads, steps, batch, vocab = sys.argv[2:8]
        return torch_child(folder, kind, int(threads), int(steps), int(batch), int(vocab))
    p = argparse.ArgumentParser()
    p.add_argument("--linnet", required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--backend", default="cpu")
    p.add_argument("--gguf", help="SmolLM2-135M's GGUF: train that model (dequantized to f32)")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--batch-tokens", type=int, default=128)
    p.add_argument("--kind", choices=("full", "lora"), action="append", help="only these (default: both)")
    p.add_argument("--rounds", type=int, default=3,
                   help="Linnet then torch, this many times over: this machine's speed drifts by tens of percent "
                        "within minutes, so each round's ratio is of runs side by side")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.jsonl")
        rows(data)
        folder = os.path.join(tmp, "hf")
        if args.gguf:
            sets, vocab = ["T=f32"] + args.set, 49152
            export = [args.linnet, "export", "hf", SMOLLM2, "--weights", args.gguf, "--set", "T=f32", "-o", folder]
            model = [SMOLLM2, "--weights", folder, "--tokenizer", folder, "--set", "T=f32"]
            what = "SmolLM2-135M (GGUF dequantized to f32)"
        else:
            sets, vocab = DEFAULT_SETS + args.set, 4000
            flags = [a for s in sets for a in ("--set", s)]
            export = [args.linnet, "export", "hf", LLAMA, "--random-weights", *flags, "--tokenizer", TOKENIZER,
                      "-o", folder]
            model = [LLAMA, "--random-weights", *flags, "--tokenizer", TOKENIZER]
            what = " ".join(sets)
        subprocess.run(export, check=True, stdout=subprocess.DEVNULL)
        print(f"model: {what}; {args.batch_tokens} tokens a step, {args.threads} threads, backend {args.backend}")
        for kind in args.kind or ("full", "lora"):
            out = os.path.join(tmp, f"out-{kind}" + (".safetensors" if kind == "full" else ""))
            linnet_speed(args, model, data, kind, out, 0)  # compiles the gradient (one step)
            ratios = []
            for round in range(1, args.rounds + 1):
                ours, peak = linnet_speed(args, model, data, kind, out, args.steps)
                theirs, theirs_peak = torch_speed(args, folder, kind, vocab)
                ratios.append(ours / theirs)
                print(f"{kind:5s} round {round}: linnet {ours:7.1f} tokens/s (peak {peak} MB)   "
                      f"torch {theirs:7.1f} tokens/s (peak {theirs_peak} MB)   ratio {ours / theirs:.3f}", flush=True)
            print(f"{kind:5s} ratio median {statistics.median(ratios):.3f} (range {min(ratios):.3f} .. {max(ratios):.3f} "
                  f"over {len(ratios)} rounds)", flush=True)


if __name__ == "__main__":
    main()
