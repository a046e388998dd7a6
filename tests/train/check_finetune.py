"""`linnet finetune --full` against torch, step by step: runs the command on
tests/data/train/finetune (written by make_finetune_fixture.py) with the
fixture's settings and checks every step's training loss against torch's.
Rule: within 1e-3 at every step (issue 35's rule for a training run);
measured 2e-6 at most. Then half the steps with --state, and --resume for
the rest: the same losses and, byte for byte, the same trained params as the
run in one go; and a resume with another seed is refused. Then `--lora`
against torch with peft (expected_lora.json, make_lora_fixture.py), same
rule, and the adapter it wrote read back by `--adapter`.

    python3 tests/train/check_finetune.py build/bin/linnet [BACKEND]

BACKEND (default: reference) runs the same checks on compiled gradients
(`cpu`).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
DATA = os.path.join(ROOT, "tests", "data", "train", "finetune")
RULE = 1e-3
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "reference"


def finetune(linnet, expected, out, *extra):
    return subprocess.run(finetune_command(linnet, expected, out, *extra), capture_output=True, text=True)


def finetune_command(linnet, expected, out, *extra):
    s = expected["settings"]
    lr = [] if "--lr" in extra else ["--lr", str(s["lr"])]
    kind = [] if "--lora" in extra else ["--full"]
    command = [linnet, "finetune", os.path.join(ROOT, "nest", "llama-3.1-8b-instruct"), "--random-weights",
               *[a for v in expected["sets"] for a in ("--set", v)],
               "--tokenizer", os.path.join(ROOT, "tests", "data", "tokenizer", "spbpe"),
               "--data", os.path.join(DATA, "train.jsonl"), *kind, "--batch-tokens", str(s["batch_tokens"]),
               *lr, "--warmup", str(s["warmup"]), "--weight-decay", str(s["weight_decay"]),
               "--max-grad-norm", str(s["max_grad_norm"]), "--report-every", "1", "-o", out, *extra]
    return command + ["--backend", BACKEND]


def losses(run):
    if run.returncode != 0:
        sys.exit(f"linnet finetune failed ({run.returncode}):\n{run.stderr}")
    return [float(m) for m in re.findall(r"^step \d+: train loss ([0-9.]+)", run.stdout, re.M)]


def check_resume(run, steps, ours, whole, tmp, trained=lambda out: out, kind=""):
    """Half the steps with --state, then --resume for the rest: the losses `ours` of the run in one go, and its
    trained tensors (the file `trained(out)` of its output `whole`), byte for byte. `run(out, *flags)` runs linnet
    finetune and returns its losses. The state."""
    what = f"--{kind}:" if kind else ""
    state, half = os.path.join(tmp, f"state{kind}.safetensors"), steps // 2
    first = run(os.path.join(tmp, f"half{kind}"), "--steps", str(half), "--state", state)
    resumed = os.path.join(tmp, f"resumed{kind}")
    rest = run(resumed, "--steps", str(steps), "--resume", state)
    if first + rest != ours:
        sys.exit(f"{what} {half} steps, --resume, {steps - half} more gave losses {first + rest}, one run {ours}")
    with open(trained(whole), "rb") as a, open(trained(resumed), "rb") as b:
        if a.read() != b.read():
            sys.exit(f"{what} the resumed run's trained tensors differ from the run in one go")
    print(f"{what} {half} steps, --resume, {steps - half} more: the same losses and the same trained tensors, "
          "byte for byte".strip())
    return state


def main():
    linnet = sys.argv[1]
    with open(os.path.join(DATA, "expected.json")) as f:
        expected = json.load(f)
    steps, seed = expected["settings"]["steps"], str(expected["settings"]["seed"])
    with tempfile.TemporaryDirectory() as tmp:
        whole = os.path.join(tmp, "whole.safetensors")
        ours = losses(finetune(linnet, expected, whole, "--steps", str(steps), "--seed", seed))
        if len(ours) != len(expected["losses"]):
            sys.exit(f"{len(ours)} steps reported, expected {len(expected['losses'])}")
        worst = 0.0
        for step, (a, b) in enumerate(zip(ours, expected["losses"]), 1):
            worst = max(worst, abs(a - b))
            if abs(a - b) > RULE:
                sys.exit(f"step {step}: loss {a:.6f}, torch {b:.6f} (rule {RULE})")
        print(f"{len(ours)} steps: every loss within {worst:.1e} of torch's ({expected['torch']}); "
              f"{ours[0]:.4f} -> {ours[-1]:.4f}")

        state = check_resume(lambda out, *extra: losses(finetune(linnet, expected, out, "--seed", seed, *extra)),
                             steps, ours, whole, tmp)
        half = steps // 2

        # Killed after its save at half the steps (--save-every): what it left is whole, and resumes.
        killed_out, killed_state = os.path.join(tmp, "killed.safetensors"), os.path.join(tmp, "killed.state")
        command = finetune_command(linnet, expected, killed_out, "--steps", str(steps), "--seed", seed,
                                   "--save-every", str(half), "--state", killed_state)
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            if f"at step {half}" in line:
                proc.kill()
                break
        proc.wait()
        again = os.path.join(tmp, "again.safetensors")
        losses(finetune(linnet, expected, again, "--steps", str(steps), "--seed", seed, "--resume", killed_state))
        with open(whole, "rb") as a, open(again, "rb") as b:
            if a.read() != b.read():
                sys.exit("a run killed after its save at a step and resumed differs from the run in one go")
        print(f"killed after its save at step {half} (--save-every), resumed: the same params")

        other = finetune(linnet, expected, os.path.join(tmp, "other.safetensors"), "--steps", str(steps),
                         "--seed", "6", "--resume", state)
        if other.returncode != 1 or "resume with the same data, seed and batch size" not in other.stderr:
            sys.exit(f"a resume with another seed: exit {other.returncode}, {other.stderr!r}")

        with open(os.path.join(DATA, "expected_lora.json")) as f:
            lora = json.load(f)
        adapter = os.path.join(tmp, "adapter")
        lora_flags = ["--seed", seed, "--lora", "--lora-rank", str(lora["lora"]["rank"]),
                      "--lora-alpha", str(lora["lora"]["alpha"]), "--lr", str(lora["lora"]["lr"])]
        got = losses(finetune(linnet, expected, adapter, "--steps", str(steps), *lora_flags))
        worst = max(abs(a - b) for a, b in zip(got, lora["losses"]))
        if len(got) != len(lora["losses"]) or worst > RULE:
            sys.exit(f"--lora losses {got}, torch with peft {lora['losses']}")
        print(f"--lora: {len(got)} steps, every loss within {worst:.1e} of torch with peft")
        lora_state = check_resume(lambda out, *extra: losses(finetune(linnet, expected, out, *lora_flags, *extra)),
                                  steps, got, adapter, tmp,
                                  lambda out: os.path.join(out, "adapter_model.safetensors"), "lora")
        full_into_lora = finetune(linnet, expected, os.path.join(tmp, "mixed.safetensors"), "--steps", str(steps),
                                  "--seed", seed, "--resume", lora_state)
        if full_into_lora.returncode != 1 or "resume with the same kind of run" not in full_into_lora.stderr:
            sys.exit(f"--full resuming a --lora state: exit {full_into_lora.returncode}, {full_into_lora.stderr!r}")
        with open(os.path.join(adapter, "adapter_config.json")) as f:
            config = json.load(f)
        if config["peft_type"] != "LORA" or config["r"] != lora["lora"]["rank"]:
            sys.exit(f"adapter_config.json: {config}")
        back = subprocess.run([linnet, "generate", os.path.join(ROOT, "nest", "llama-3.1-8b-instruct"),
                               "--backend", "reference", "--random-weights",
                               *[a for v in expected["sets"] for a in ("--set", v)], "--adapter", adapter,
                               "--prompt-ids", "1,415,3014", "--max-new", "2"], capture_output=True, text=True)
        if back.returncode != 0:
            sys.exit(f"--adapter on the written adapter: {back.stderr}")


if __name__ == "__main__":
    main()
