"""Input files for the bad-input suite (run.py), made from a case's spec:
  { text = "..." }                  the text as written
  { text = "...", fill = true }     the text with {card}, {tmp}... filled in
  { copy = "{data}/..." }           a copy of a committed fixture
  { gen = "NAME", ... }             a generator below, with the spec's other keys
  { fifo = true }                   a FIFO (an output path that is not a regular file)
  { symlink = "..." }               a symbolic link to that path (filled in; it may not exist)
  { directory = true }              an empty folder
Paths in specs may use {data}, {card}, {gqa2} and {tmp}."""
import json
import os
import shutil
import struct



def fill(value, places):
    """`{data}`, `{tmp}`... replaced in a string; other braces (JSON, Jinja) kept."""
    if not isinstance(value, str):
        return value
    for key, path in places.items():
        value = value.replace("{" + key + "}", path)
    return value


def text(spec, places):
    """stdin of a case: a string, or a generated text ({ gen = "repeat" })."""
    if isinstance(spec, str):
        return spec
    return GENERATORS[spec["gen"]](**{k: v for k, v in spec.items() if k != "gen"})


def make(spec, path, places):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if "text" in spec:
        with open(path, "w") as f:
            f.write(fill(spec["text"], places) if spec.get("fill") else spec["text"])
    elif "copy" in spec:
        shutil.copy(fill(spec["copy"], places), path)
    elif spec.get("fifo"):
        os.mkfifo(path)  # an output path that is not a regular file
    elif "symlink" in spec:
        os.symlink(fill(spec["symlink"], places), path)
    elif spec.get("directory"):
        os.makedirs(path)
    else:
        kwargs = {k: fill(v, places) for k, v in spec.items() if k != "gen"}
        data = GENERATORS[spec["gen"]](**kwargs)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)


def repeat(piece, times):
    return piece * times


def long_chain(module, terms, op="+"):
    """`return x + x + ... + x`: a flat chain, not nesting."""
    return (f"module {module}\n\npub fn f<N: Dim>(x: Tensor[N; f32]) -> Tensor[N; f32] {{\n"
            f"    return x{f' {op} x' * (terms - 1)}\n}}\n")


def nested(module, depth):
    """`((((x))))`: real nesting, `depth` parentheses deep."""
    return (f"module {module}\n\npub fn f<N: Dim>(x: Tensor[N; f32]) -> Tensor[N; f32] {{\n"
            f"    return {'(' * depth}x{')' * depth}\n}}\n")


def with_nul(module):
    """A source with a NUL byte inside an expression, and an error after it."""
    return (f"module {module}\n\npub fn f(x: Tensor[4; f32]) -> Tensor[4; f32] {{\n    return x \0+ x\n}}\n"
            "fn g() -> i32 {\n    return missing\n}\n")


def tokenizer(base, edit, **params):
    """A tokenizer.json read from `base`, changed by one of EDITS."""
    with open(base) as f:
        tok = json.load(f)
    EDITS[edit](tok, **params)
    return json.dumps(tok)


def _add_token(tok, id):
    tok["model"]["vocab"]["\u2581zz_bad_input"] = id


def _replace_chain(tok, count):
    # Each Replace turns one `a` into ten: 10^count times the input.
    tok["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * 10} for _ in range(count)]}


def _merge_unknown(tok):
    tok["model"]["merges"].append("\u2581zz_not_a_token q")


def _no_post_processor(tok):
    tok["post_processor"] = None  # encodes "" as no tokens at all


EDITS = {"add_token": _add_token, "replace_chain": _replace_chain, "merge_unknown": _merge_unknown,
         "no_post_processor": _no_post_processor}


def tokenizer_config(template):
    return json.dumps({"chat_template": template, "bos_token": "<s>", "eos_token": "</s>"})


def npy(descr, shape, fill=0):
    """A well-formed .npy of `shape`, every element `fill`, of numpy type
    `descr` ('<f8', '|u1', '<i4', ...)."""
    count = 1
    for d in shape:
        count *= d
    code = {"f": "d" if descr[2:] == "8" else "f", "i": "q" if descr[2:] == "8" else "i", "u": "B"}[descr[1]]
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    return npy_header(header) + struct.pack(f"<{count}{code}", *([fill] * count))


def npy_header(header, payload=0):
    """A .npy file with the given header dict text and `payload` zero bytes."""
    h = header.encode("latin1")
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + b"\0" * payload


def safetensors_header(header, payload=0, length=None):
    """A .safetensors file with the given JSON header text; `length`, when
    given, is the header length the file claims instead of the true one."""
    h = header.encode()
    return struct.pack("<Q", len(h) if length is None else length) + h + b"\0" * payload


def index_json(weight_map):
    return json.dumps({"metadata": {}, "weight_map": weight_map})


def gguf_set(base, key, value):
    """A copy of the GGUF file `base` with its metadata value `key` (f32 or
    u32) set to `value` (same size: the bytes after the key's name are
    replaced)."""
    with open(base, "rb") as f:
        data = bytearray(f.read())
    name = key.encode()
    at = data.find(struct.pack("<Q", len(name)) + name)
    if at < 0:
        raise ValueError(f"{base}: no metadata key {key}")
    at += 8 + len(name)
    (kind,) = struct.unpack_from("<I", data, at)
    formats = {4: "<I", 6: "<f"}  # GGUF_TYPE_UINT32, GGUF_TYPE_FLOAT32
    if kind not in formats:
        raise ValueError(f"{base}: {key} is of type {kind}, not u32 or f32")
    struct.pack_into(formats[kind], data, at + 4, value)
    return bytes(data)


def json_set(base, key, value):
    """A copy of the JSON object in `base` with `key` set to `value` (a
    dotted key sets a member of a nested object: "rope_scaling.rope_type")."""
    with open(base) as f:
        data = json.load(f)
    *outer, last = key.split(".")
    at = data
    for k in outer:
        at = at[k]
    at[last] = value
    return json.dumps(data, indent=2)


def safetensors_rows(base, tensor, rows):
    """A copy of the .safetensors file `base` whose tensor `tensor` keeps
    only its first `rows` rows (the header and offsets rewritten to fit)."""
    with open(base, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out, blobs = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            out[name] = info
            continue
        start, end = info["data_offsets"]
        blob = body[start:end]
        if name == tensor:
            blob = blob[:len(blob) // info["shape"][0] * rows]
            info = dict(info, shape=[rows] + info["shape"][1:])
        offset = sum(len(b) for b in blobs)
        out[name] = dict(info, data_offsets=[offset, offset + len(blob)])
        blobs.append(blob)
    h = json.dumps(out).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def safetensors_poke(base, tensor, element, value):
    """A copy of the .safetensors file `base` with element `element` of its
    f32 tensor `tensor` set to `value` ("nan", "inf", or a number)."""
    with open(base, "rb") as f:
        data = bytearray(f.read())
    (n,) = struct.unpack_from("<Q", data)
    info = json.loads(data[8:8 + n])[tensor]
    assert info["dtype"] == "F32", info
    struct.pack_into("<f", data, 8 + n + info["data_offsets"][0] + 4 * element, float(value))
    return bytes(data)


GENERATORS = {
    "repeat": repeat, "long_chain": long_chain, "nested": nested, "with_nul": with_nul,
    "tokenizer": tokenizer, "tokenizer_config": tokenizer_config, "npy": npy, "npy_header": npy_header,
    "safetensors_header": safetensors_header, "index_json": index_json, "gguf_set": gguf_set,
    "safetensors_rows": safetensors_rows, "json_set": json_set, "safetensors_poke": safetensors_poke,
}
