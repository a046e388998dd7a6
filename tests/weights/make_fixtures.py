#!/usr/bin/env python3
"""Writes the fixtures of linnet_weights_tests into tests/data/weights/.

Uses PyPI `safetensors` and `numpy` as an independent writer (not Linnet's
code). Run from anywhere:  pip install safetensors numpy
                           python3 tests/weights/make_fixtures.py
The output is deterministic; the files are committed, so the tests do not
need Python. Values follow simple formulas that the C++ tests recompute.

bfloat16 has no numpy dtype: bf16 tensors are passed to safetensors as raw
uint16 bit patterns with dtype "bfloat16", and bf16 .npy files hold '<u2'
bits (Linnet's documented convention, see runtime/weights/npy.h).
"""
import json
import math
import os
import shutil
import struct

import numpy as np
from safetensors import TensorSpec, serialize_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "weights")
OUT = os.path.normpath(OUT)


def save(path, tensors, metadata=None):
    """tensors: name -> numpy array, or (uint16 array, "bfloat16")."""
    keep = []
    specs = {}
    for name, t in tensors.items():
        if isinstance(t, tuple):
            arr, dtype = t
        else:
            arr, dtype = t, t.dtype.name
        arr = np.array(arr, order="C", copy=True)  # (ascontiguousarray would make 0-d arrays 1-d)
        keep.append(arr)
        specs[name] = TensorSpec(dtype=dtype, shape=arr.shape, data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    serialize_file(specs, path, metadata=metadata)


def f32_to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bfloat16, computed with exact float
    arithmetic (independent of the bit trick the C++ code uses)."""
    x = np.float32(x)
    if math.isnan(x):
        return 0x7FC0
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    lo = u >> 16
    hi = lo + 1

    def val(bits):
        return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]

    if math.isinf(x):
        return lo
    dlo = abs(float(x) - val(lo))
    vhi = val(hi)
    dhi = abs(float(x) - vhi) if not math.isinf(vhi) else abs(float(x) - math.copysign(2.0 ** 128, float(x)))
    if dlo < dhi or (dlo == dhi and lo % 2 == 0):
        return lo
    return hi & 0xFFFF


def pattern(n, seed):
    """Small multiples of 1/8 in [-1, 1]: exact in bf16, f16 and f32."""
    return np.array([((i * 7 + seed) % 17 - 8) / 8.0 for i in range(n)], dtype=np.float32)


def bf16_bits_exact(a):
    return (a.astype("<f4").view("<u4") >> 16).astype("<u2")


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(os.path.join(OUT, "npy"))
    os.makedirs(os.path.join(OUT, "tiny"))

    # --- single.safetensors ------------------------------------------------
    save(os.path.join(OUT, "single.safetensors"), {
        "embed.weight": np.arange(12, dtype="<f4").reshape(4, 3),
        "norm.weight": np.array([1.0, 0.5, -2.0], dtype="<f4"),
        "bias": np.array([[0.25, -0.5], [1.5, 2.0]], dtype="<f2"),
    }, metadata={"format": "pt", "note": "linnet test"})

    # --- dtypes.safetensors: one tensor per dtype ----------------------------
    arrays = {
        "f32": (np.arange(6, dtype="<f4") * 0.5 - 1.0).reshape(2, 3),
        "f16": np.array([[0.5, -1.25], [65504.0, 6.103515625e-05]], dtype="<f2"),
        "f64": np.array([math.pi, -1e300, 0.1], dtype="<f8"),
        "i8": np.array([-128, -1, 0, 127], dtype="|i1"),
        "u8": np.array([0, 1, 128, 255], dtype="|u1"),
        "i16": np.array([-32768, 7, 32767], dtype="<i2"),
        "i32": np.array([[-2147483648, -1], [0, 2147483647]], dtype="<i4"),
        "i64": np.array([-(2 ** 63), 42, 2 ** 63 - 1], dtype="<i8"),
        "bool": np.array([True, False, True, True, False], dtype="|b1"),
        "empty": np.zeros((0, 3), dtype="<f4"),
        "scalar": np.array(3.5, dtype="<f4"),
    }
    bf16 = np.array([1.0, -2.0, 0.5, 3.140625, -0.0], dtype="<f4")
    tensors = dict(arrays)
    tensors["bf16"] = (bf16_bits_exact(bf16), "bfloat16")
    save(os.path.join(OUT, "dtypes.safetensors"), tensors)

    # --- .npy files written by numpy -----------------------------------------
    for name, arr in arrays.items():
        np.save(os.path.join(OUT, "npy", name + ".npy"), arr)
    np.save(os.path.join(OUT, "npy", "bf16_bits.npy"), bf16_bits_exact(bf16))
    big = np.arange(24, dtype="<f4").reshape(2, 3, 4)
    np.save(os.path.join(OUT, "npy", "f32_3d.npy"), big)
    with open(os.path.join(OUT, "npy", "f32_3d_v2.npy"), "wb") as f:
        np.lib.format.write_array(f, big, version=(2, 0))
    # Arrays Linnet refuses, each with its own message.
    np.save(os.path.join(OUT, "npy", "fortran.npy"), np.asfortranarray(big))
    np.save(os.path.join(OUT, "npy", "big_endian.npy"), big.astype(">f4"))
    np.save(os.path.join(OUT, "npy", "u4.npy"), np.arange(3, dtype="<u4"))
    np.save(os.path.join(OUT, "npy", "complex.npy"), np.array([1 + 2j], dtype="<c8"))

    # --- tiny: a 3-layer llama-like checkpoint in 2 shards with an index ------
    V, H, HEADS, KV, INNER, LAYERS = 16, 8, 2, 1, 12, 3
    HD = H // HEADS
    shapes = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,), "lm_head.weight": (V, H)}
    bindings = {"embedding.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
                "lm_head.weight": "lm_head.weight"}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (H,),
            p + "post_attention_layernorm.weight": (H,),
            p + "self_attn.q_proj.weight": (H, H),
            p + "self_attn.k_proj.weight": (KV * HD, H),
            p + "self_attn.v_proj.weight": (KV * HD, H),
            p + "self_attn.o_proj.weight": (H, H),
            p + "mlp.gate_proj.weight": (INNER, H),
            p + "mlp.up_proj.weight": (INNER, H),
            p + "mlp.down_proj.weight": (H, INNER),
        })
        l = f"layers.{i}."
        bindings.update({
            l + "attention_norm.weight": p + "input_layernorm.weight",
            l + "mlp_norm.weight": p + "post_attention_layernorm.weight",
            l + "attention.q_proj.weight": p + "self_attn.q_proj.weight",
            l + "attention.k_proj.weight": p + "self_attn.k_proj.weight",
            l + "attention.v_proj.weight": p + "self_attn.v_proj.weight",
            l + "attention.o_proj.weight": p + "self_attn.o_proj.weight",
            l + "mlp.gate.weight": p + "mlp.gate_proj.weight",
            l + "mlp.up.weight": p + "mlp.up_proj.weight",
            l + "mlp.down.weight": p + "mlp.down_proj.weight",
        })
    names = sorted(shapes)
    values = {n: pattern(int(np.prod(shapes[n])), seed=k).reshape(shapes[n]) for k, n in enumerate(names)}
    shard_of = {n: ("model-00001-of-00002.safetensors" if ("layers.2." not in n and n != "lm_head.weight")
                    else "model-00002-of-00002.safetensors") for n in names}
    for shard in sorted(set(shard_of.values())):
        save(os.path.join(OUT, "tiny", shard),
             {n: (bf16_bits_exact(values[n]), "bfloat16") for n in names if shard_of[n] == shard},
             metadata={"format": "pt"})
    with open(os.path.join(OUT, "tiny", "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(v.size * 2 for v in values.values())},
                   "weight_map": {n: shard_of[n] for n in names}}, f, indent=2)
    with open(os.path.join(OUT, "tiny", "bindings.json"), "w") as f:
        json.dump(bindings, f, indent=1)

    # --- conversion: f32 values whose bf16/f16 roundings are interesting ------
    conv = np.array([
        1.0, 1.0 + 2.0 ** -8, 1.0 + 2.0 ** -9, 1.0 + 3 * 2.0 ** -9, 1.0 + 2.0 ** -9 + 2.0 ** -20,  # bf16 ties
        1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,          # f16 ties
        65504.0, 65519.0, 65520.0, 1e6, -1e6,            # f16 max / overflow
        2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -14 - 2.0 ** -25, 1e-10,  # f16 subnormals
        3.4028234663852886e38, -0.0, math.inf, -math.inf, 0.1, -3.14159265, 1234.5678,
    ], dtype="<f4")
    save(os.path.join(OUT, "convert.safetensors"), {"x": conv})
    with np.errstate(over="ignore"):  # 65520 and 1e6 overflow to inf, as intended
        np.save(os.path.join(OUT, "npy", "convert_f16.npy"), conv.astype("<f2"))  # numpy's own RNE
    np.save(os.path.join(OUT, "npy", "convert_bf16.npy"),
            np.array([f32_to_bf16_bits(v) for v in conv], dtype="<u2"))

    total = 0
    for root, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print(f"wrote {OUT}: {total} bytes")


if __name__ == "__main__":
    main()
