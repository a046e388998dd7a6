#!/usr/bin/env python3
"""F32 and Q8_0 GGUFs of one model from the same tensors: every tensor of
the source GGUF (SmolLM2's Q4_1 file) dequantized with PyPI `gguf`'s own
`quants`, written as f32 (norms and all) and as Q8_0 (2-D weights; 1-D
tensors stay f32, as llama.cpp's converter does). The metadata (tokenizer,
chat template, hyperparameters) is copied unchanged.

Usage: make_ggufs.py SOURCE.gguf OUT_DIR   (needs `gguf` and `numpy`)"""
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize, quantize

Q = GGMLQuantizationType


def field_value(field):
    """A metadata field's value as GGUFWriter takes it."""
    kind = field.types[0]
    if kind == GGUFValueType.ARRAY:
        item = field.types[1]
        if item == GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8", errors="surrogateescape") for i in field.data]
        return [field.parts[i].tolist()[0] for i in field.data]
    if kind == GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return field.parts[field.data[0]].tolist()[0]


def write(reader, out_path, target):
    arch = field_value(reader.fields["general.architecture"])
    writer = GGUFWriter(out_path, arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = field.types[0]
        sub = field.types[1] if kind == GGUFValueType.ARRAY else None
        writer.add_key_value(name, field_value(field), kind, sub_type=sub)
    for t in reader.tensors:
        # Row-major values, outermost first (numpy order is ggml's reversed).
        values = dequantize(t.data, t.tensor_type).astype(np.float32)
        values = values.reshape([int(d) for d in reversed(t.shape.tolist())])
        if target == Q.Q8_0 and values.ndim == 2 and values.shape[-1] % 32 == 0:
            writer.add_tensor(t.name, quantize(values, Q.Q8_0), raw_dtype=Q.Q8_0)
        else:
            writer.add_tensor(t.name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    source, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    reader = GGUFReader(source)
    stem = os.path.basename(source).split(".")[0]
    for label, target in (("F32", Q.F32), ("Q8_0", Q.Q8_0)):
        path = os.path.join(out_dir, f"{stem}.{label}.gguf")
        if not os.path.exists(path):
            write(reader, path + ".part", target)
            os.replace(path + ".part", path)
        print(path)


if __name__ == "__main__":
    main()
