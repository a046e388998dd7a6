#!/usr/bin/env python3
"""Writes the small seed corpora of the safetensors, npy, tokenizer and
arguments fuzzers (tests/fuzz/corpus_*), well-formed files and the malformed
variants issue 9's probe tried, and issue 9's reproducers for the other
corpora. Rerun after changing it; the files are committed."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(corpus, name, data):
    os.makedirs(os.path.join(HERE, corpus), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(HERE, corpus, name), "wb") as f:
        f.write(data)


# -- safetensors: u64 header length, JSON header, data ------------------------
def safetensors(header, data=b"", length=None, raw=None):
    text = raw if raw is not None else json.dumps(header, separators=(",", ":"))
    text = text.encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


F32 = struct.pack("<4f", 1, 2, 3, 4)
ok = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
      "__metadata__": {"format": "pt"}}
write("corpus_safetensors", "f32.safetensors", safetensors(ok, F32))
write("corpus_safetensors", "dtypes.safetensors", safetensors(
    {"h": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
     "b": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 8]},
     "i": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]},
     "u": {"dtype": "U8", "shape": [], "data_offsets": [16, 17]},
     "z": {"dtype": "BOOL", "shape": [0, 5], "data_offsets": [17, 17]}},
    bytes(range(17))))
write("corpus_safetensors", "empty_header.safetensors", safetensors({}))
bad = {
    "length_past_end": safetensors(ok, F32, length=1 << 40),
    "length_max": safetensors(ok, F32, length=(1 << 64) - 1),
    "offsets_past_end": safetensors({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 32]}}, F32),
    "offsets_reversed": safetensors({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, F32),
    "size_mismatch": safetensors({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, F32),
    "overlap": safetensors({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, F32),
    "unknown_dtype": safetensors({"a": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, F32),
    "negative_dim": safetensors({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, F32),
    "huge_shape": safetensors({"a": {"dtype": "F32", "shape": [1 << 62, 1 << 62], "data_offsets": [0, 16]}}, F32),
    "float_dim": safetensors({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}}, F32),
    "metadata_not_string": safetensors({"__metadata__": {"n": 1}}),
    "duplicate_key": safetensors(None, F32, raw='{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                                '"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'),
    "not_object": safetensors(None, raw="[1,2,3]"),
    "bad_utf8": safetensors(None, raw='{"\udcff":1}'.encode("utf-8", "surrogateescape").decode("latin-1")),
    "truncated_json": safetensors(None, raw='{"a":{"dtype":"F32","sha'),
    "short": b"\x10\x00\x00",
}
for name, data in bad.items():
    write("corpus_safetensors", name + ".safetensors", data)


# -- .npy ---------------------------------------------------------------------
def npy(descr, shape, data, version=1, fortran=False, header=None):
    h = header or "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", "(%s)" % "".join("%d, " % d for d in shape)
        if len(shape) != 1 else "(%d,)" % shape[0])
    size = 4 if version > 1 else 2
    pad = (-(6 + 2 + size + len(h) + 1)) % 64
    h = h + " " * pad + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + length + h.encode("latin-1") + data


write("corpus_npy", "f32.npy", npy("<f4", [2, 2], F32))
write("corpus_npy", "scalar_i64.npy", npy("<i8", [], struct.pack("<q", -5)))
write("corpus_npy", "bool.npy", npy("|b1", [3], b"\x00\x01\x01"))
write("corpus_npy", "bf16_bits.npy", npy("<u2", [2], b"\x80\x3f\x00\x40"))
write("corpus_npy", "v2_f16.npy", npy("<f2", [1], b"\x00\x3c", version=2))
write("corpus_npy", "v3_u8.npy", npy("|u1", [0, 4], b"", version=3))
bad = {
    "big_endian": npy(">f4", [1], b"\x3f\x80\x00\x00"),
    "fortran": npy("<f4", [2, 2], F32, fortran=True),
    "truncated_data": npy("<f4", [4], F32[:8]),
    "extra_data": npy("<f4", [1], F32),
    "huge_shape": npy("<f4", [1 << 62, 1 << 62], F32),
    "negative_shape": npy("<f4", [-1], F32),
    "bool_byte_2": npy("|b1", [1], b"\x02"),
    "complex": npy("<c8", [1], F32[:8]),
    "object": npy("|O", [1], b"\x00" * 8),
    "structured": npy("<f4", [1], F32[:4], header="{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"),
    "header_not_dict": npy("<f4", [1], F32[:4], header="[1, 2]"),
    "missing_key": npy("<f4", [1], F32[:4], header="{'descr': '<f4', 'shape': (1,), }"),
    "long_int": npy("<f4", [1], F32[:4], header="{'descr': '<f4', 'fortran_order': False, 'shape': (1L,), }"),
    "bad_magic": b"\x93NUMPZ\x01\x00" + npy("<f4", [1], F32[:4])[8:],
    "header_len_past_end": b"\x93NUMPY\x01\x00\xff\xff{'descr'",
    "version_9": npy("<f4", [1], F32[:4], version=9),
}
for name, data in bad.items():
    write("corpus_npy", name + ".npy", data)


# -- tokenizer.json -----------------------------------------------------------
def byte_level_vocab():
    # GPT-2's byte-to-unicode table: printable bytes map to themselves.
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return [chars[b] for b in range(256)]


def tokenizer(model, normalizer=None, pre=None, post=None, decoder=None, added=()):
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": list(added),
                       "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post,
                       "decoder": decoder, "model": model}, ensure_ascii=False)


def special(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


chars = byte_level_vocab()
vocab = {c: i + 1 for i, c in enumerate(chars)}
merges = [("Ġ", "w"), ("h", "e"), ("l", "l"), ("he", "ll"), ("Ġw", "o")]
for a, b in merges:
    vocab[a + b] = len(vocab) + 1
byte_bpe = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": [a + " " + b for a, b in merges]}
byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
write("corpus_tokenizer", "bytebpe.json", tokenizer(
    byte_bpe, {"type": "NFC"},
    {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level]},
    {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                                              {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
     "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [0], "tokens": ["<|endoftext|>"]}}},
    byte_level, [special(0, "<|endoftext|>")]))

sp_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
for b in range(256):
    sp_vocab["<0x%02X>" % b] = len(sp_vocab)
for piece in ["▁", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "▁h", "▁w", "hell"]:
    sp_vocab[piece] = len(sp_vocab)
sp_bpe = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
          "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
          "vocab": sp_vocab, "merges": ["h e", "l l", "▁ h", "▁ w", "he ll"]}
sp_decoder = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                               {"type": "ByteFallback"}, {"type": "Fuse"},
                                               {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
write("corpus_tokenizer", "spbpe.json", tokenizer(
    sp_bpe, {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    None, None, sp_decoder, [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")]))
write("corpus_tokenizer", "metaspace.json", tokenizer(
    sp_bpe, None, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
    None, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True}))
write("corpus_tokenizer", "split_regex.json", tokenizer(
    byte_bpe, {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Strip",
               "strip_left": True, "strip_right": True}]},
    {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re)|\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+|\\s+"},
         "behavior": "Isolated", "invert": False}, {"type": "Punctuation", "behavior": "Isolated"},
        {"type": "WhitespaceSplit"}, byte_level]},
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}, byte_level,
    [special(0, "<|endoftext|>"), dict(special(len(vocab) + 1, "<mask>"), lstrip=True, special=False)]))
# Issue 9's reproducers: one id of 10^9 (a dense id table would be 32 GB)
# and 12 chained Replace normalizers, each doubling the text.
huge = dict(byte_bpe, vocab=dict(vocab, big=1000000000))
write("corpus_tokenizer", "vocab_id_1e9.json", tokenizer(huge, None, byte_level, None, byte_level))
write("corpus_tokenizer", "replace_x12.json", tokenizer(
    sp_bpe, {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": "e"}, "content": "ee"}
                                                 for _ in range(12)]}, None, None, sp_decoder))
write("corpus_tokenizer", "added_id_1e9.json", tokenizer(byte_bpe, None, byte_level, None, byte_level,
                                                        [special(1000000000, "<big>")]))
write("corpus_tokenizer", "not_bpe.json", tokenizer({"type": "WordPiece", "vocab": {"a": 0}}))
write("corpus_tokenizer", "truncated.json", tokenizer(byte_bpe)[:300])
# A number past double's range (nlohmann's out_of_range, found by the fuzzer).
write("corpus_tokenizer", "number_1e999.json", tokenizer(byte_bpe).replace('"dropout": null', '"dropout": 1e999'))

# -- command-line values: first byte picks the parser (arguments_fuzzer.cpp) --
args = {
    "int": (0, "42"), "int_min": (0, "-9223372036854775808"), "int_over": (0, "9223372036854775808"),
    "int_saturated": (0, "99999999999999999999"), "int_blank": (0, "  +7"), "int_junk": (0, "12abc"),
    "list": (1, "1,2,3"), "list_empty_piece": (1, "1,,2"), "list_big_id": (1, "64,1000,99999"),
    "list_skip": (2, "1,,2,"), "generic": (3, "4096"), "generic_name": (3, "bf16"),
    "generic_over": (3, "99999999999999999999"), "literal_bool": (4, "true"), "literal_float": (4, "1.5"),
    "literal_pos_wraps": (4, "4294967296"), "literal_inf": (4, "1e999"), "literal_junk": (4, "@x.npy"),
    "number": (5, "0.9"), "number_nan": (5, "nan"), "number_big": (5, "5"), "assign": (6, "tokens=@a.npy"),
    "assign_empty": (6, "=3"), "set": (7, "Layers=2"), "set_dtype": (7, "T=bf16"),
    "set_maxseq_huge": (7, "MaxSeq=4611686018427387904"), "set_over": (7, "H=99999999999999999999"),
    "set_sign": (7, "K=+-1"),
}
for name, (kind, text) in args.items():
    write("corpus_arguments", name, bytes([kind]) + text.encode())

# -- issue 9's reproducers for the Linnet and chat template corpora -----------
write("corpus", "reshape_overflow.linnet",
      "module m\n\nfn f(x: Tensor[4; f32]) -> Tensor[1099511627776, 1099511627776; f32] {\n"
      "    return reshape(x, [1099511627776, 1099511627776])\n}\n")
# A flat sum, not nested: 1900 terms keep it under the fuzzers' 4096 bytes.
write("corpus", "flat_sum.linnet",
      "module m\n\nfn f(x: Tensor[4; f32]) -> Tensor[4; f32] {\n    return " + "+".join(["x"] * 1900) + "\n}\n")
write("corpus", "nul_byte.linnet", "module m\n\nfn f(x: Tensor[4; f32]) -> Tensor[4; f32] {\n"
      "    return x\x00 + y\n}\n\nfn g() -> i32 {\n    return z\n}\n")
write("corpus_chat", "tojson_string_indent.jinja", "{{ messages | tojson(indent='" + " " * 64 + "') }}")
write("corpus_chat", "raise_exception.jinja", "{% if messages %}{{ raise_exception('x') }}{% endif %}")
