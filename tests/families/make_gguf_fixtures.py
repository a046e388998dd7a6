#!/usr/bin/env python3
"""GGUF files of the families' fixtures, written as llama.cpp's converter
(convert_hf_to_gguf.py) writes them: for each folder that make_fixtures.py
made under tests/data/families/<card>/, a model.gguf beside it, F32.

What comes from llama.cpp rather than from us:
  * tensor names: gguf-py's own map (gguf.get_tensor_name_map, the table the
    converter uses), Hugging Face name to GGUF name, per architecture;
  * metadata keys: gguf-py's GGUFWriter.add_* methods, called with the
    values the converter's set_gguf_parameters passes for that family;
  * Gemma 3's norms: stored as 1 + w (the converter's norm_shift).
The vocabulary is a placeholder of the fixture's size (three control
tokens, then bytes): the fixtures test numbers, not text.

With llama-cpp-python installed (bench/peers' .cache/peers-venv), each file
but Gemma's is then run by llama.cpp on the fixture's first prompt and its
logits compared with transformers' (expected.safetensors): the files are
what llama.cpp reads as these models. Gemma's fixture scales queries by
query_pre_attn_scalar = 24, which a GGUF cannot say (llama.cpp uses
key_length, 16): its file is checked by the families tests against the card
on the same weights at 16 instead.

Run: .cache/peers-venv/bin/python tests/families/make_gguf_fixtures.py
(needs gguf and numpy from PyPI; CI only reads the committed files)."""
from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "families"

ARCH = {
    "qwen3-0.6b": gguf.MODEL_ARCH.QWEN3,
    "qwen2.5-0.5b-instruct": gguf.MODEL_ARCH.QWEN2,
    "phi-3-mini-4k-instruct": gguf.MODEL_ARCH.PHI3,
    "gemma-3-270m": gguf.MODEL_ARCH.GEMMA3,
}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    dtypes = {"F32": np.float32, "I32": np.int32}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    return out


def add_vocab(w: gguf.GGUFWriter, size: int) -> None:
    """SentencePiece-style: <unk>, <s>, </s>, then byte tokens, two of them
    replaced by what llama.cpp looks up at load: the word boundary "\u2581",
    and "<|endoftext|>" in a model named Phi-3."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(size - 3)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * (size - 3)
    tokens[3 + 32], types[3 + 32] = "\u2581", gguf.TokenType.NORMAL
    tokens[-1], types[-1] = "<|endoftext|>", gguf.TokenType.CONTROL
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * size)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def add_parameters(w: gguf.GGUFWriter, arch: gguf.MODEL_ARCH, c: dict) -> None:
    """What the converter's set_gguf_parameters writes for these configs."""
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_rope_freq_base(c["rope_theta"])
    if "head_dim" in c:
        w.add_key_length(c["head_dim"])
        w.add_value_length(c["head_dim"])
    if arch == gguf.MODEL_ARCH.PHI3:
        w.add_rope_scaling_orig_ctx_len(c.get("original_max_position_embeddings", c["max_position_embeddings"]))
        w.add_rope_dimension_count(c["hidden_size"] // c["num_attention_heads"])
        w.add_sliding_window(c.get("sliding_window") or 0)
    if arch == gguf.MODEL_ARCH.GEMMA3:
        w.add_sliding_window(c["sliding_window"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)


def gguf_name(names: gguf.TensorNameMap, hf: str) -> str:
    stem = hf.removesuffix(".weight").removesuffix(".bias")
    mapped = names.get_name(stem)
    if mapped is None:
        raise SystemExit(f"gguf-py has no GGUF name for {hf}")
    return mapped + hf[len(stem):]


def write(card: str) -> Path:
    folder = DATA / card
    arch = ARCH[card]
    config = json.loads((folder / "config.json").read_text())
    tensors = read_safetensors(folder / "model.safetensors")
    names = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    out = folder / "model.gguf"
    w = gguf.GGUFWriter(str(out) + ".part", gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(card)
    add_parameters(w, arch, config)
    add_vocab(w, config["vocab_size"])
    for hf in sorted(tensors):
        data = tensors[hf].astype(np.float32)
        if arch == gguf.MODEL_ARCH.GEMMA3 and hf.endswith("norm.weight"):
            data = data + np.float32(1.0)
        w.add_tensor(gguf_name(names, hf), np.ascontiguousarray(data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(str(out) + ".part", out)
    return out


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def llama_cpp_logits(path: Path, tokens: list[int]) -> np.ndarray:
    from llama_cpp import Llama
    # An f32 key/value cache (type 0: GGML_TYPE_F32), not llama.cpp's f16 default.
    llm = Llama(model_path=str(path), n_ctx=64, n_batch=64, logits_all=True, verbose=False, type_k=0, type_v=0)
    llm.eval(tokens)
    got = np.array(llm.scores[:len(tokens)], dtype=np.float32)
    llm.close()
    return got


def check_with_llama_cpp(card: str, path: Path) -> bool:
    """llama.cpp's logits on the fixture's first prompt: against
    transformers' where the file says all the config does; else (Gemma)
    kept as llama_cpp.safetensors for the families tests."""
    expected = read_safetensors(DATA / card / "expected.safetensors")
    tokens = expected["tokens1"]
    got = llama_cpp_logits(path, tokens[0].tolist())
    if ARCH[card] == gguf.MODEL_ARCH.GEMMA3:
        # logits1 [1, S, V]: after expected.safetensors' tokens1.
        write_safetensors(DATA / card / "llama_cpp.safetensors", {"logits1": got[None]})
        print(f"  llama.cpp's logits on {path.name}: llama_cpp.safetensors")
        return True
    want = expected["logits1"][0]
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    scale = float(np.max(np.abs(want)))
    ok = diff <= 1e-5 * scale  # the f32 rule: relative to the logits' scale
    print(f"  llama.cpp on {path.name}: max |logit difference| {diff:.2e} (logits' scale {scale:.2f}) "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def main() -> int:
    try:
        import llama_cpp  # noqa: F401
        peer = True
    except ImportError:
        peer = False
        print("llama-cpp-python is not installed: the files are written, not run by llama.cpp")
    ok = True
    for card in sorted(ARCH):
        path = write(card)
        print(f"{card}: {path.relative_to(HERE.parent.parent)} ({path.stat().st_size} bytes)")
        if peer:
            ok = check_with_llama_cpp(card, path) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
