#!/usr/bin/env python3
"""Writes the fixtures of the GGUF export's tests (tests/export/export_*.cpp)
into tests/data/export/, with llama.cpp's own code as the oracle:

    bash tests/export/check_gguf_with_llama_cpp.sh --fixtures   # venv + this script

or, in an environment with gguf and numpy (and llama-cpp-python for the K-quants):

    python3 tests/export/make_gguf_fixtures.py

Everything is seeded: rerunning gives the same bytes for the same versions.

  quant_input.f32.bin   12 rows of 512 little-endian f32 values: normal
                        weights at several scales, outliers, zero blocks (one
                        starting with -0.0), tiny values, ties (multiples of
                        1/8), all-positive and all-negative rows, values past
                        f16's range
  quant_<type>.bin      those rows encoded: f16 (numpy astype), bf16, q8_0,
                        q4_0, q5_0 by PyPI gguf's gguf.quants.quantize;
                        q4_k, q6_k by ggml's own ggml_quantize_chunk (the
                        reference quantizers llama-quantize runs without an
                        importance matrix), called through ctypes in the
                        libggml-base that llama-cpp-python builds, since
                        gguf.quants cannot quantize K-quants. Without that
                        library the committed q4_k/q6_k files are kept.
  quant.json            the row length, row count, and which tool wrote each
  rope_factors.json     Llama 3.1 rope scaling factors (rope_freqs.weight)
                        computed in float32 as convert_hf_to_gguf.py's
                        LlamaModel.generate_extra_tensors does (numpy for
                        torch), for the head sizes the tests use
  tokenizer/            a 62-token byte-level BPE tokenizer.json (SmolLM2's
                        pre-tokenizer: digits split, then ByteLevel), its
                        tokenizer_config.json (special tokens, chat template)
                        for the llama card's two-layer fixture (Vocab = 64)
"""
from __future__ import annotations

import ctypes
import glob
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import quantize

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "export"
ROW, ROWS = 512, 12


def quant_input() -> np.ndarray:
    rng = np.random.default_rng(14)
    x = np.zeros((ROWS, ROW), dtype=np.float32)
    x[0] = rng.normal(0, 0.02, ROW)
    x[1] = rng.normal(0, 1.0, ROW)
    x[2] = rng.normal(0, 0.02, ROW) * np.repeat(rng.uniform(0.1, 10, ROW // 32), 32)
    x[3] = rng.normal(0, 0.05, ROW)
    x[3, ::37] *= 50  # outliers
    x[4] = rng.normal(0, 0.02, ROW)
    x[4, 0:32] = 0  # a zero block
    x[4, 32:64] = 0
    x[4, 32] = -0.0  # a zero block starting with -0.0
    x[4, 64:96] = 1e-30  # tiny values
    x[4, 256:288] = 0  # a zero block in the second super-block
    x[5] = rng.integers(-16, 17, ROW) / 8.0  # ties for the rounding
    x[6] = np.abs(rng.normal(0, 0.1, ROW))  # all positive
    x[7] = -np.abs(rng.normal(0, 0.1, ROW))  # all negative
    x[8] = rng.normal(0, 3e4, ROW)  # past f16's range
    x[9] = rng.uniform(-1, 1, ROW) ** 3
    x[10] = rng.normal(0, 0.02, ROW)
    x[10, ::2] = 0.0
    x[11] = rng.normal(1.0, 0.1, ROW)  # norm-like, far from zero
    return x.astype(np.float32)


def find_ggml() -> ctypes.CDLL | None:
    for venv in (ROOT / ".cache" / "export-venv",):
        for lib in sorted(glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "llama_cpp" / "lib" / "libggml-base.so*"))):
            try:
                return ctypes.CDLL(lib)
            except OSError:
                pass
    try:
        import llama_cpp  # noqa: F401
        d = Path(llama_cpp.__file__).parent / "lib"
        for lib in sorted(d.glob("libggml-base.so*")):
            return ctypes.CDLL(str(lib))
    except ImportError:
        pass
    return None


def ggml_quantize(lib: ctypes.CDLL, qtype: T, x: np.ndarray) -> np.ndarray:
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rows, n = x.shape
    out = np.zeros(rows * n // block * size, dtype=np.uint8)
    f = lib.ggml_quantize_chunk
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                  ctypes.c_void_p]
    src = np.ascontiguousarray(x, dtype=np.float32)
    wrote = f(int(qtype), src.ctypes.data, out.ctypes.data, 0, rows, n, None)
    assert wrote == out.size, (wrote, out.size)
    return out


def rope_factors(theta: float, dim: int, factor: float, low: float, high: float, old: float) -> list[float]:
    """convert_hf_to_gguf.py's llama3 rope factors, torch float32 as numpy float32."""
    f32 = np.float32
    freqs = f32(1.0) / (f32(theta) ** (np.arange(0, dim, 2, dtype=np.float32) / f32(dim)))
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for freq in freqs:
        wavelen = f32(2 * math.pi) / freq
        if wavelen < f32(high_wavelen):
            out.append(f32(1))
        elif wavelen > f32(low_wavelen):
            out.append(f32(factor))
        else:
            smooth = (f32(old) / wavelen - f32(low)) / f32(high - low)
            out.append(f32(1) / ((f32(1) - smooth) / f32(factor) + smooth))
    return [float(v) for v in np.array(out, dtype=np.float32)]


def tokenizer_fixture() -> None:
    """62 tokens: 3 special, 26 letters, the byte-level space, merges up to 62."""
    d = OUT / "tokenizer"
    d.mkdir(parents=True, exist_ok=True)
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab: dict[str, int] = {t: i for i, t in enumerate(special)}
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab[c] = len(vocab)
    vocab["\u0120"] = len(vocab)  # "Ġ": the byte-level form of a space
    merges = []
    for a, b in [("t", "h"), ("th", "e"), ("\u0120", "the"), ("i", "n"), ("\u0120", "c"), ("\u0120c", "a"),
                 ("\u0120ca", "t"), ("\u0120", "a"), ("o", "n"), ("e", "r"), ("\u0120", "s"), ("a", "t"),
                 ("\u0120", "in"), ("e", "n"), ("r", "e"), ("\u0120", "o"), ("\u0120o", "n"), ("\u0120", "d"),
                 ("\u0120d", "o"), ("\u0120do", "g"), ("s", "t"), ("\u0120", "m"), ("\u0120m", "a"),
                 ("\u0120ma", "t"), ("h", "e"), ("\u0120", "the"[:1]), ("a", "n"), ("\u0120", "t"),
                 ("\u0120t", "o"), ("o", "u"), ("\u0120", "y"), ("\u0120y", "ou"), ("\u0120", "w"), ("\u0120w", "a"),
                 ("\u0120", "b"), ("l", "l"), ("\u0120", "h"), ("\u0120h", "e")]:
        if a + b in vocab or len(vocab) >= 62:
            continue
        if a not in vocab or b not in vocab:
            continue
        merges.append(f"{a} {b}")
        vocab[a + b] = len(vocab)
    assert len(vocab) == 62, len(vocab)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(special)]
    tj = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    (d / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False, indent=1) + "\n")
    template = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                "{% endif %}")
    config = {"add_prefix_space": False, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
              "pad_token": "<|im_end|>", "unk_token": "<|endoftext|>", "chat_template": template,
              "clean_up_tokenization_spaces": False, "model_max_length": 64,
              "tokenizer_class": "GPT2Tokenizer"}
    (d / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    x = quant_input()
    (OUT / "quant_input.f32.bin").write_bytes(x.tobytes())
    made = {}
    for qtype in (T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q5_0):
        q = np.asarray(quantize(x, qtype))
        (OUT / f"quant_{qtype.name.lower()}.bin").write_bytes(q.tobytes())
        made[qtype.name] = "gguf.quants.quantize"
    lib = find_ggml()
    if lib is None:
        print("no libggml-base (llama-cpp-python): keeping the committed Q4_K and Q6_K vectors", file=sys.stderr)
        old = json.loads((OUT / "quant.json").read_text()) if (OUT / "quant.json").exists() else {}
        for name in ("Q4_K", "Q6_K"):
            made[name] = old.get("types", {}).get(name, "missing")
    else:
        for qtype in (T.Q4_K, T.Q6_K):
            (OUT / f"quant_{qtype.name.lower()}.bin").write_bytes(ggml_quantize(lib, qtype, x).tobytes())
            made[qtype.name] = "ggml_quantize_chunk (llama-cpp-python's libggml-base)"
        # gguf.quants and ggml agree on the 32-value types too.
        # (They part only on a block of zeros that starts with -0.0: ggml's
        # scale is -0.0 there, gguf.quants' +0.0; both decode to zeros.)
        for qtype in (T.Q8_0, T.Q4_0, T.Q5_0):
            size = gguf.GGML_QUANT_SIZES[qtype][1]
            a = np.asarray(quantize(x, qtype)).reshape(-1, size)
            b = ggml_quantize(lib, qtype, x).reshape(-1, size)
            bad = np.nonzero((a != b).any(axis=1))[0]
            zero_sign = [i for i in bad if not x.reshape(-1, 32)[i].any() and np.array_equal(a[i, 2:], b[i, 2:])
                         and (a[i, :2].view(np.uint16) ^ b[i, :2].view(np.uint16))[0] == 0x8000]
            what = "equals ggml_quantize_chunk" if not len(bad) else (
                f"differs from ggml_quantize_chunk only in the sign of the zero scale of {len(zero_sign)} all-zero "
                "block(s)" if len(zero_sign) == len(bad) else f"DIFFERS from ggml_quantize_chunk in {len(bad)} blocks")
            print(f"{qtype.name}: gguf.quants {what}", file=sys.stderr)
    try:
        from importlib.metadata import version
        made["_versions"] = {"gguf": version("gguf"), "numpy": version("numpy")}
        try:
            made["_versions"]["llama-cpp-python"] = version("llama-cpp-python")
        except Exception:
            pass
    except Exception:
        pass
    versions = made.pop("_versions", {})
    (OUT / "quant.json").write_text(json.dumps({"row_length": ROW, "rows": ROWS, "types": made,
                                                "versions": versions}, indent=1) + "\n")
    ropes = []
    for theta, dim, factor in ((500000.0, 128, 8.0), (500000.0, 64, 32.0), (500000.0, 16, 8.0)):
        ropes.append({"theta": theta, "head_dim": dim, "factor": factor, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192.0,
                      "factors": rope_factors(theta, dim, factor, 1.0, 4.0, 8192.0)})
    (OUT / "rope_factors.json").write_text(json.dumps(ropes, indent=1) + "\n")
    tokenizer_fixture()
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
