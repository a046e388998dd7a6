#!/usr/bin/env python3
"""Writes the GGUF fixtures in tests/data/gguf/ with llama.cpp's own Python
package (PyPI `gguf`), and the values a correct reader must produce, computed
by that package too (`gguf.quants.dequantize`).

    pip install gguf numpy
    python3 tests/gguf/make_fixtures.py            # rewrites tests/data/gguf/

Everything is seeded, so rerunning gives the same bytes (for the same gguf
and numpy versions). Files written:

  types.gguf            one tensor per tensor type (F32, F16, BF16, F64, Q8_0,
                        Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K),
                        some quantized from seeded random data with
                        gguf.quants.quantize, some (every K-quant, which
                        gguf.quants cannot quantize, and a `.random` copy of
                        each 32-block type) made of random block bytes with
                        finite f16 scales; plus an IQ2_XXS tensor that the
                        reader does not dequantize.
  types.json            per tensor: name, type, row-major shape, and where its
                        expected values start in the .bin files (in elements)
  types.f32.bin         expected values, little-endian f32, from
                        gguf.quants.dequantize (F64: numpy's astype(float32))
  types.f16.bin         the same rounded to f16 (numpy astype, RNE)
  types.bf16.bin        the same rounded to bf16 (gguf.quants' BF16, RNE)
  metadata.gguf         a metadata key of every value type, arrays of every
                        element type, nested arrays, general.alignment = 64
  llama.gguf            a 2-layer llama (GQA: 4 heads, 2 kv heads) written as
                        convert_hf_to_gguf.py writes it: q/k rows permuted for
                        llama.cpp's rope, layer 1's projections in Q8_0, an
                        attn_q bias, a SentencePiece ("llama") tokenizer and a
                        chat template
  llama.json            the Hugging Face name, shape and offset into
                        llama.hf.bin of every tensor
  llama.hf.bin          the Hugging Face layout values (f32) a reader must
                        return for the q/k projections (the arrays before
                        permutation; for the Q8_0 ones: dequantized, then
                        un-permuted with numpy), the q bias and a few others
                        (offset -1 in llama.json: no values stored)
  tied.gguf             a 1-layer llama without output.weight (tied
                        embeddings) and a byte-level BPE ("gpt2") tokenizer
and seeds for the fuzzer in tests/fuzz/corpus_gguf/.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V
from gguf.quants import quantize, dequantize

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "gguf"
CORPUS = ROOT / "tests" / "fuzz" / "corpus_gguf"


def writer_to(path: Path, arch: str) -> gguf.GGUFWriter:
    return gguf.GGUFWriter(str(path), arch)


def finish(w: gguf.GGUFWriter) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------- types.gguf

# Byte offsets of the f16 scale fields in one block of each block type, so
# random blocks get finite, moderate scales (NaN or huge scales would make
# the expected values NaN/inf and test nothing).
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def random_blocks(rng: np.random.Generator, qtype: T, rows: int, cols: int) -> np.ndarray:
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    assert cols % block == 0
    nblocks = rows * cols // block
    raw = rng.integers(0, 256, size=(nblocks, size), dtype=np.uint8)
    for off in F16_FIELDS[qtype]:
        scales = (rng.uniform(-0.08, 0.08, size=nblocks)).astype(np.float16)
        raw[:, off:off + 2] = scales.view(np.uint8).reshape(nblocks, 2)
    return raw.reshape(rows, cols // block * size)


def make_types(rng: np.random.Generator) -> None:
    w = writer_to(OUT / "types.gguf", "linnet-test")
    manifest = []
    expected: list[np.ndarray] = []
    offset = 0

    def add(name: str, qtype: T, stored: np.ndarray, want: np.ndarray) -> None:
        nonlocal offset
        if qtype in (T.F32, T.F16, T.F64):
            w.add_tensor(name, stored)
        else:
            w.add_tensor(name, stored, raw_shape=stored.shape if qtype == T.BF16 else None, raw_dtype=qtype)
        want = np.ascontiguousarray(want, dtype=np.float32)
        manifest.append({"name": name, "type": qtype.name, "shape": list(want.shape),
                         "offset": offset, "count": int(want.size)})
        expected.append(want.reshape(-1))
        offset += want.size

    # F32 with the values a float path can get wrong.
    specials = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-45, -3e-39,
                         3.4028235e38, 65504.0, 65520.0, 1e-8, 0.1, 0.2, 0.3,
                         1.00390625, 1.001953125, 3.0e-41, -7.0], dtype=np.float32)
    f32 = np.concatenate([specials, rng.standard_normal(22).astype(np.float32)]).reshape(6, 7)
    add("f32", T.F32, f32, dequantize(f32, T.F32))

    f16vals = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6.0e-8, -6.1e-5, 65504.0, 0.333],
                                       dtype=np.float16),
                              rng.standard_normal(9).astype(np.float16)]).reshape(2, 9)
    add("f16", T.F16, f16vals, dequantize(f16vals, T.F16))

    bf = quantize(rng.standard_normal((2, 5)).astype(np.float32) * 3, T.BF16)
    add("bf16", T.BF16, bf, dequantize(bf, T.BF16))

    f64 = np.array([1.0, -1e-300, 1e300, 0.1, np.pi, 2.0 ** -149, 1.0 + 2.0 ** -24, -(1.0 + 3 * 2.0 ** -24)],
                   dtype=np.float64)
    add("f64", T.F64, f64, f64.astype(np.float32))

    # Shapes of 3 and 4 dimensions (GGUF stores them innermost first).
    t3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    add("f32.3d", T.F32, t3, t3)
    t4 = rng.standard_normal((2, 1, 3, 2)).astype(np.float32)
    add("f32.4d", T.F32, t4, t4)

    for qtype in (T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1):
        data = (rng.standard_normal((3, 64)) * rng.uniform(0.1, 2.0)).astype(np.float32)
        data[0, :32] = 0.0  # an all-zero block (d = 0)
        q = quantize(data, qtype)
        add(qtype.name.lower(), qtype, q, dequantize(q, qtype))
        r = random_blocks(rng, qtype, 2, 64)
        add(qtype.name.lower() + ".random", qtype, r, dequantize(r, qtype))

    for qtype, rows in ((T.Q2_K, 2), (T.Q3_K, 2), (T.Q4_K, 3), (T.Q5_K, 2), (T.Q6_K, 3)):
        r = random_blocks(rng, qtype, rows, 256)
        add(qtype.name.lower(), qtype, r, dequantize(r, qtype))
    r = random_blocks(rng, T.Q4_K, 2, 512).reshape(2, 1, 2 * 144)
    add("q4_k.3d", T.Q4_K, r, dequantize(r, T.Q4_K))

    # A type the reader knows but does not dequantize.
    w.add_tensor("iq2_xxs", rng.integers(0, 256, size=(1, 66), dtype=np.uint8), raw_dtype=T.IQ2_XXS)
    finish(w)

    allf32 = np.concatenate(expected).astype("<f4")
    allf32.tofile(OUT / "types.f32.bin")
    allf32.astype("<f2").tofile(OUT / "types.f16.bin")
    quantize(allf32.reshape(1, -1), T.BF16).tofile(OUT / "types.bf16.bin")
    (OUT / "types.json").write_text(json.dumps({"tensors": manifest}, indent=1) + "\n")


# ------------------------------------------------------------- metadata.gguf

def make_metadata() -> None:
    w = writer_to(OUT / "metadata.gguf", "linnet-test")
    w.add_custom_alignment(64)
    w.add_name("metadata fixture")
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 65000)
    w.add_int16("test.i16", -32000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.1)
    w.add_bool("test.bool.true", True)
    w.add_bool("test.bool.false", False)
    w.add_string("test.string", "héllo wörld ☃")
    w.add_key_value("test.string.empty", "", V.STRING)  # add_string skips empty strings
    w.add_uint64("test.u64", 18000000000000000000)
    w.add_int64("test.i64", -9000000000000000000)
    w.add_float64("test.f64", 2.718281828459045)
    arrays = [
        ("test.array.u8", [0, 1, 255], V.UINT8),
        ("test.array.i8", [-128, 0, 127], V.INT8),
        ("test.array.u16", [0, 65535], V.UINT16),
        ("test.array.i16", [-32768, 32767], V.INT16),
        ("test.array.u32", [0, 4294967295], V.UINT32),
        ("test.array.i32", [-2147483648, 2147483647, 5], V.INT32),
        ("test.array.f32", [0.5, -1.25, 3.0e38], V.FLOAT32),
        ("test.array.bool", [True, False, True], V.BOOL),
        ("test.array.string", ["a", "", "ünï", "x y"], V.STRING),
        ("test.array.u64", [0, 18446744073709551615], V.UINT64),
        ("test.array.i64", [-9223372036854775808, 9223372036854775807], V.INT64),
        ("test.array.f64", [0.1, -2.5e-300], V.FLOAT64),
    ]
    for key, vals, sub in arrays:
        w.add_key_value(key, vals, V.ARRAY, sub_type=sub)
    w.add_key_value("test.array.nested", [[1, 2], [3, 4, 5]], V.ARRAY, sub_type=V.ARRAY)
    w.add_key_value("test.array.nested.strings", [["a", "b"], ["c"]], V.ARRAY, sub_type=V.ARRAY)
    w.add_key_value("test.array.nested3", [[[1.5], [2.5, 3.5]], [[4.5]]], V.ARRAY, sub_type=V.ARRAY)
    # Two small tensors, so the alignment shows in their offsets.
    w.add_tensor("a", np.arange(3, dtype=np.float32))
    w.add_tensor("b", np.arange(4, dtype=np.float16).reshape(2, 2))
    finish(w)


# ---------------------------------------------------------------- llama.gguf

def permute(w: np.ndarray, n_head: int, n_head_kv: int | None) -> np.ndarray:
    # convert_hf_to_gguf.py, LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape))


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape))


def spm_vocab() -> tuple[list[str], list[float], list[int]]:
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    scores = [0.0, 0.0, 0.0] + [0.0] * 256
    pieces = ["▁", "e", "t", "h", "l", "o", "▁t", "he", "▁the", "ll", "▁he", "llo", "▁hello",
              "w", "r", "d", "▁w", "or", "▁wor", "ld", "▁world", "a", "n", "▁a", "s", "i", "!", ","]
    for i, p in enumerate(pieces):
        tokens.append(p)
        types.append(1)
        scores.append(-float(i))
    return tokens, scores, types


def bpe_vocab() -> tuple[list[str], list[str], list[int]]:
    # Byte-level alphabet (GPT-2's bytes_to_unicode) and a few merges.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    alphabet = [chr(c) for _, c in sorted(zip(bs, cs))]
    merges = ["Ġ t", "h e", "Ġt he", "l l", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "Ġ h", "Ġh e", "ll o"]
    tokens = alphabet + [m.replace(" ", "") for m in merges] + ["<|begin_of_text|>", "<|end_of_text|>", "<think>"]
    types = [1] * (len(tokens) - 3) + [3, 3, 4]
    return tokens, merges, types


CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token }}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}")


def generate_merges(vocab: dict[str, int], vocab_scores: dict[str, float]) -> list[tuple[str, str]]:
    # transformers.tokenization_utils_base.generate_merges, which transformers
    # uses to give SentencePiece vocabularies (GGUF "llama") BPE merges.
    merges = []
    for merge, piece_score in vocab_scores.items():
        local = []
        for index in range(1, len(merge)):
            piece_l, piece_r = merge[:index], merge[index:]
            if piece_l in vocab and piece_r in vocab:
                local.append((piece_l, piece_r, piece_score))
        local = sorted(local, key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges = sorted(merges, key=lambda val: (val[2], len(val[0]), len(val[1])), reverse=True)
    return [(val[0], val[1]) for val in merges]


def make_llama(rng: np.random.Generator, path: Path, manifest_path: Path | None, n_layer: int,
               tied: bool, tokenizer: str) -> None:
    hidden, n_head, n_head_kv, inter = 32, 4, 2, 64
    head_dim = hidden // n_head
    if tokenizer == "llama":
        tokens, scores, types = spm_vocab()
    else:
        tokens, merges, types = bpe_vocab()
    vocab = len(tokens)

    w = writer_to(path, "llama")
    w.add_name("linnet tiny llama")
    w.add_block_count(n_layer)
    w.add_context_length(128)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(inter)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_vocab_size(vocab)
    w.add_file_type(1)
    if tokenizer == "llama":
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)
        w.add_add_space_prefix(True)
    else:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("llama-bpe")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(len(tokens) - 3)
        w.add_eos_token_id(len(tokens) - 2)
        w.add_pad_token_id(len(tokens) - 2)
        w.add_add_bos_token(True)
    w.add_chat_template(CHAT_TEMPLATE)

    hf: list[tuple[str, np.ndarray]] = []

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    def put(gguf_name: str, hf_name: str, data: np.ndarray, qtype: T = T.F32, heads: int | None = None) -> None:
        stored = data if heads is None else permute(data, n_head, heads if heads != n_head else None)
        if qtype == T.F32:
            w.add_tensor(gguf_name, stored)
            want = data
        elif qtype == T.F16:
            w.add_tensor(gguf_name, stored.astype(np.float16))
            want = data.astype(np.float16).astype(np.float32)
        else:
            q = quantize(stored, qtype)
            w.add_tensor(gguf_name, q, raw_dtype=qtype)
            got = dequantize(q, qtype)
            want = got if heads is None else unpermute(got, heads)
        hf.append((hf_name, want))

    put("token_embd.weight", "model.embed_tokens.weight", rand(vocab, hidden), T.F16)
    for i in range(n_layer):
        q8 = T.Q8_0 if i == 1 else T.F32
        p = f"model.layers.{i}."
        put(f"blk.{i}.attn_norm.weight", p + "input_layernorm.weight", 1.0 + rand(hidden))
        put(f"blk.{i}.attn_q.weight", p + "self_attn.q_proj.weight", rand(n_head * head_dim, hidden), q8, n_head)
        if i == 0:
            put(f"blk.{i}.attn_q.bias", p + "self_attn.q_proj.bias", rand(n_head * head_dim), T.F32, n_head)
        put(f"blk.{i}.attn_k.weight", p + "self_attn.k_proj.weight", rand(n_head_kv * head_dim, hidden), q8,
            n_head_kv)
        put(f"blk.{i}.attn_v.weight", p + "self_attn.v_proj.weight", rand(n_head_kv * head_dim, hidden), q8)
        put(f"blk.{i}.attn_output.weight", p + "self_attn.o_proj.weight", rand(hidden, n_head * head_dim), q8)
        put(f"blk.{i}.ffn_norm.weight", p + "post_attention_layernorm.weight", 1.0 + rand(hidden))
        put(f"blk.{i}.ffn_gate.weight", p + "mlp.gate_proj.weight", rand(inter, hidden), T.Q8_0)
        put(f"blk.{i}.ffn_up.weight", p + "mlp.up_proj.weight", rand(inter, hidden), T.Q8_0)
        put(f"blk.{i}.ffn_down.weight", p + "mlp.down_proj.weight", rand(hidden, inter), T.Q8_0)
    put("output_norm.weight", "model.norm.weight", 1.0 + rand(hidden))
    if not tied:
        put("output.weight", "lm_head.weight", rand(vocab, hidden), T.Q8_0)
    finish(w)

    if manifest_path is not None:
        entries, offset, blobs = [], 0, []
        for name, arr in hf:
            # Values only where the layout changes (q/k) and for a few others, to keep the fixture small.
            keep = any(s in name for s in ("q_proj", "k_proj", "input_layernorm", "layers.1.mlp.down_proj"))
            entries.append({"name": name, "shape": list(arr.shape), "offset": offset if keep else -1,
                            "count": int(arr.size)})
            if keep:
                offset += arr.size
                blobs.append(arr.reshape(-1).astype("<f4"))
        np.concatenate(blobs).tofile(manifest_path.with_suffix(".hf.bin"))
        merges = generate_merges({t: i for i, t in enumerate(tokens)}, dict(zip(tokens, scores)))
        manifest_path.write_text(json.dumps({"n_head": n_head, "n_head_kv": n_head_kv, "tensors": entries,
                                             "generated_merges": [f"{a} {b}" for a, b in merges]},
                                            indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    np.seterr(over="ignore")  # f64 -> f32 and f32 -> f16 overflow to inf on purpose
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20240611)
    make_types(rng)
    make_metadata()
    make_llama(rng, OUT / "llama.gguf", OUT / "llama.json", n_layer=2, tied=False, tokenizer="llama")
    make_llama(rng, OUT / "tied.gguf", None, n_layer=1, tied=True, tokenizer="gpt2")

    # Fuzzer seeds: the small files whole (the fuzzer's inputs are limited to 64 KiB).
    CORPUS.mkdir(parents=True, exist_ok=True)
    for name in ("metadata.gguf", "types.gguf", "tied.gguf"):
        data = (OUT / name).read_bytes()
        if len(data) <= 65536:
            shutil.copyfile(OUT / name, CORPUS / name)
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {OUT} ({total} bytes)")


if __name__ == "__main__":
    main()
