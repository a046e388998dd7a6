#!/usr/bin/env python3
"""Reference fixtures for the C++ tokenizer, made with Hugging Face's own
`tokenizers` library (pip install tokenizers).

    python3 tests/tokenizer/make_fixtures.py [--check]

Writes, under tests/data/tokenizer/:
  spbpe/tokenizer.json, spbpe/tokenizer_config.json
      A SentencePiece-style BPE with byte fallback, trained here on generated
      multilingual text, with exactly the pipeline of Llama 2's tokenizer.json
      (normalizer Sequence[Prepend("▁"), Replace(" ", "▁")], no pre-tokenizer,
      BPE with byte_fallback + fuse_unk, <0x00>..<0xFF> at ids 3..258,
      TemplateProcessing "<s> $A", decoder Sequence[Replace("▁", " "),
      ByteFallback, Fuse, Strip(" ", 1, 0)]) and a LlamaTokenizer config.
  bytebpe/tokenizer.json
      A byte-level BPE trained here, SmolLM-style pipeline (NFC, Digits +
      ByteLevel), with added tokens using lstrip / rstrip / single_word /
      normalized, and a "$A <|endoftext|>" template.
  fixtures/strings.jsonl.xz
      The test strings (one JSON string per line), deterministic (fixed seed).
  fixtures/unicode.jsonl.xz
      tokenizers' NFC/NFD/NFKC/NFKD and Lowercase normalizers, and lossy
      UTF-8 decoding of random bytes, for the C++ Unicode helpers.
  fixtures/long.jsonl.xz
      Long inputs (100k spaces, newlines, one 100k-letter word, 200k chars of
      prose...) with their ids for llama3, spbpe and bytebpe.
  fixtures/<name>.jsonl.xz
      For each tokenizer (and variants made by JSON patches): a header line,
      then one line per string: {"i": index, "ids": [...]} plus, only where they
      differ, "ids_special" (add_special_tokens=True), "ids_plain" (special
      tokens in the text not parsed: encode_special_tokens=True), "decoded"
      (decode(ids, skip_special_tokens=False), when != the text), "decoded_skip"
      (skip_special_tokens=True, when != decoded); then lines {"decode": [ids],
      "decoded": ..., "decoded_skip": ...} for random id sequences.

The header: {"fixture", "tokenizer" (path under tests/data/tokenizer; .xz is
decompressed), "config" (or null), "patch" ([{"path": JSON pointer, "value"}],
applied in order), "strings" (count), "tokenizers_version", "seed"}.

With --check nothing is written: the fixtures are regenerated in memory and
compared with the committed ones.
"""
import argparse
import copy
import io
import json
import lzma
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import textgen  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
DATA = os.path.join(REPO, "tests", "data", "tokenizer")
SEED = 20240611

try:
    import tokenizers
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
except ImportError:
    sys.exit("make_fixtures.py needs Hugging Face tokenizers: pip install tokenizers")


# ---------------------------------------------------------------- strings

def make_strings():
    rng = random.Random(SEED)
    specials = textgen.SPECIALS_LLAMA3 + textgen.SPECIALS_OTHER
    out = [""]
    out += [chr(c) for c in range(128)]
    out += ["é", "€", "😀", "𝔘", "\U0010ffff", "\ufffd", "\ufffe", "\uffff", "\ue000", "\u00ad", "\u200d", "\u2581",
            "▁▁", "Ġ", "ĠĠ", "Ċ", "<0x41>", "<0xFF>", "\u0300"]
    for k in list(range(1, 21)) + [31, 32, 33, 50, 100, 257, 1000, 20000]:
        out.append(" " * k)
    for ch in ["\n", "\t", "\r\n", " \n", "\n ", "\u3000", "\u00a0"]:
        for k in [1, 2, 3, 4, 7, 16, 40]:
            out.append(ch * k)
    for k in [1, 2, 3, 5, 8, 17]:
        out.append("a" + " " * k + "b")
        out.append(" " * k + "a")
        out.append("a" + " " * k)
        out.append("a" + " " * k + "\n" + " " * k + "b")
        out.append("x\t" * k + "\n")
    for n in range(1, 41):
        out.append("".join(str((i * 7 + n) % 10) for i in range(n)))
    out += ["a1", "1a", "a12345b", "12 345 6789", "3.14", "-1", "(123)", "1,234,567.89", "12a34b56"]
    for c in textgen.CONTRACTIONS:
        out += [c, "it" + c, "IT" + c, "x " + c, c + " x"]
    out += textgen.WORDS_EN_CONTR
    for s in specials + textgen.SPECIAL_NEAR:
        out += [s, " " + s, s + " ", "  " + s + "  ", "a" + s + "b", "a " + s + " b", s + s, s + "\n" + s,
                "Hello" + s + "world", "\n" + s]
    out += ["<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n"]
    out += ["[SW] x", "x[SW]", "x [SW] y", "_[SW]_", "é[SW]", "1[SW]2", "[SW][SW]", "hello world!", "hello  world",
            "Hello world", "a<mask>b", "a   <mask>   b", "<rs>   x", "x<rs>\n\ny", "<mask><mask>", "  <mask>"]
    out += textgen.NORMALIZATION + [n + "x" for n in textgen.NORMALIZATION] + ["x " + n for n in textgen.NORMALIZATION]
    out += textgen.NEWER + ["a" + n + " 1" + n for n in textgen.NEWER] + ["!" + n + "'s" for n in textgen.NEWER]
    out += textgen.EMOJI + ["".join(textgen.EMOJI)]
    out += textgen.NUM_FORMS
    out += textgen.CODE
    out += textgen.SPACES
    out += ["Hello world!", "Hello, world!", " Hello world", "hello", "HELLO", "Hello", "world", "The quick brown fox "
            "jumps over the lazy dog.", "I'm", "Don't", "naïve café", "ÀÉÎÕÜ àéîõü", "ﬁnance", "Ⅻ", "x²"]
    for _ in range(120):
        out.append(textgen.sentence(rng))
    for _ in range(60):
        out.append(textgen.random_codepoints(rng, rng.randrange(1, 12)))
    for _ in range(30):
        out.append("".join(rng.choice(textgen.PUNCT) for _ in range(rng.randrange(1, 12))))
    for _ in range(40):
        out.append("".join(chr(rng.randrange(32, 127)) for _ in range(rng.randrange(1, 40))))
    for _ in range(6):
        out.append(textgen.prose(rng, rng.randrange(1500, 5000)))
    while len(out) < 2600:
        out.append(textgen.mixed(rng, specials, rng.randrange(1, 12)))
    return out


def make_corpus(seed, lines):
    rng = random.Random(seed)
    corpus = []
    for i in range(lines):
        r = rng.random()
        if r < 0.6:
            corpus.append(" ".join(textgen.sentence(rng) for _ in range(rng.randrange(1, 4))))
        elif r < 0.8:
            corpus.append(textgen.prose(rng, 200))
        else:
            corpus.append(textgen.mixed(rng, ["\n"], rng.randrange(1, 6)))
    return corpus


# ---------------------------------------------------------------- tokenizers

SP_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"},
    {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}


def added(id_, content, special, **kw):
    d = {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": not special, "special": special}
    d.update(kw)
    return d


def build_spbpe():
    """A Llama-2-shaped tokenizer.json: train a SentencePiece-like BPE (pieces
    start with ▁), then lay it out exactly as Llama 2's file."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    # Keep the 250 most frequent characters (ties by code point; the trainer's
    # own limit_alphabet breaks ties arbitrarily): the rest is left to byte
    # fallback, like the rare characters of Llama 2.
    corpus = make_corpus(SEED + 1, 12000)
    freq = {}
    for line in corpus:
        for c in line.replace(" ", "\u2581"):
            freq[c] = freq.get(c, 0) + 1
    keep = set(sorted(freq, key=lambda c: (-freq[c], ord(c)))[:250])
    corpus = ["".join(c for c in line if c == " " or c in keep) for line in corpus]
    trainer = trainers.BpeTrainer(vocab_size=3000, min_frequency=2, special_tokens=["<unk>", "<s>", "</s>"],
                                  show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    trained = json.loads(tok.to_str())
    tv = trained["model"]["vocab"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = 3 + b
    for t, _ in sorted(tv.items(), key=lambda kv: kv[1]):
        if t not in vocab:
            vocab[t] = len(vocab)
    merges = [m if isinstance(m, str) else m[0] + " " + m[1] for m in trained["model"]["merges"]]
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<unk>", True), added(1, "<s>", True), added(2, "</s>", True)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": SP_DECODER,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                  "merges": merges},
    }


SPBPE_CONFIG = {
    "add_bos_token": True,
    "add_eos_token": False,
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False, "normalized": False, "rstrip": False,
                  "single_word": False},
    "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": False, "rstrip": False,
                  "single_word": False},
    "unk_token": {"__type": "AddedToken", "content": "<unk>", "lstrip": False, "normalized": False, "rstrip": False,
                  "single_word": False},
    "chat_template": "{% for message in messages %}{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}{% endfor %}",
    "clean_up_tokenization_spaces": False,
    "legacy": False,
    "model_max_length": 2048,
    "pad_token": None,
    "sp_model_kwargs": {},
    "tokenizer_class": "LlamaTokenizer",
}


def build_bytebpe():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    trainer = trainers.BpeTrainer(vocab_size=3000, min_frequency=2,
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(make_corpus(SEED + 2, 12000), trainer)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="$A <|endoftext|>", pair="$A <|endoftext|> $B:1 <|endoftext|>:1",
                                      special_tokens=[("<|endoftext|>", 0)])])
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, normalized=False, special=True)])
    tok.add_tokens([AddedToken("[SW]", single_word=True, normalized=True),
                    AddedToken("<rs>", rstrip=True, normalized=False),
                    AddedToken("hello world", normalized=True),
                    AddedToken("A\u0308x", normalized=True),
                    AddedToken("café", normalized=False)])
    return json.loads(tok.to_str())


LLAMA31_POST = {"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    {"type": "TemplateProcessing",
     "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
              {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
     "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
                                              "tokens": ["<|begin_of_text|>"]}}}]}

# (name, tokenizer file, config file, patch, which strings: "all" or a stride)
FIXTURES = [
    ("llama3", "llama3/tokenizer.json.xz", "llama3/tokenizer_config.json", [], "all"),
    ("llama31_template", "llama3/tokenizer.json.xz", None, [{"path": "/post_processor", "value": LLAMA31_POST}], 7),
    ("spbpe", "spbpe/tokenizer.json", "spbpe/tokenizer_config.json", [], "all"),
    ("spbpe_metaspace", "spbpe/tokenizer.json", None, [
        {"path": "/normalizer", "value": None},
        {"path": "/pre_tokenizer", "value": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                             "split": False}}], "all"),
    ("spbpe_metaspace_split", "spbpe/tokenizer.json", None, [
        {"path": "/normalizer", "value": None},
        {"path": "/pre_tokenizer", "value": {"type": "Metaspace", "replacement": "\u2581",
                                             "prepend_scheme": "always", "split": True}},
        {"path": "/decoder", "value": {"type": "Sequence", "decoders": [
            {"type": "ByteFallback"},
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}]}}], 3),
    ("spbpe_unk", "spbpe/tokenizer.json", None, [{"path": "/model/byte_fallback", "value": False}], 3),
    ("bytebpe", "bytebpe/tokenizer.json", None, [], "all"),
    ("bytebpe_gpt2", "bytebpe/tokenizer.json", None, [
        {"path": "/normalizer", "value": None},
        {"path": "/pre_tokenizer", "value": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                             "use_regex": True}},
        {"path": "/post_processor", "value": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                              "use_regex": True}}], 2),
    ("bytebpe_misc1", "bytebpe/tokenizer.json", None, [
        {"path": "/normalizer", "value": {"type": "Sequence", "normalizers": [
            {"type": "Nmt"}, {"type": "NFKC"}, {"type": "Lowercase"},
            {"type": "Replace", "pattern": {"Regex": "\\d+"}, "content": "#"},
            {"type": "Strip", "strip_left": True, "strip_right": True}]}},
        {"path": "/pre_tokenizer", "value": {"type": "Sequence", "pretokenizers": [
            {"type": "Punctuation", "behavior": "MergedWithPrevious"},
            {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "MergedWithNext", "invert": False},
            {"type": "Split", "pattern": {"String": "e"}, "behavior": "Contiguous", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": False}]}},
        {"path": "/model/ignore_merges", "value": True}], 3),
    ("bytebpe_misc2", "bytebpe/tokenizer.json", None, [
        {"path": "/normalizer", "value": {"type": "Sequence", "normalizers": [
            {"type": "NFD"}, {"type": "StripAccents"}, {"type": "NFC"},
            {"type": "Replace", "pattern": {"String": "  "}, "content": " "}]}},
        {"path": "/pre_tokenizer", "value": {"type": "Sequence", "pretokenizers": [
            {"type": "Whitespace"}, {"type": "Digits", "individual_digits": False},
            {"type": "CharDelimiterSplit", "delimiter": "x"},
            {"type": "Split", "pattern": {"Regex": "(?i:[aeiou])"}, "behavior": "Removed", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}},
        {"path": "/decoder", "value": {"type": "Sequence", "decoders": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            {"type": "Replace", "pattern": {"String": "a"}, "content": "A"}]}}], 3),
    ("bytebpe_misc3", "bytebpe/tokenizer.json", None, [
        {"path": "/normalizer", "value": {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Prepend",
                                                                                          "prepend": "_"}]}},
        {"path": "/pre_tokenizer", "value": {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "BertPreTokenizer"},
            {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "MergedWithPrevious", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}},
        {"path": "/decoder", "value": {"type": "WordPiece", "prefix": "Ġ", "cleanup": True}},
        {"path": "/post_processor", "value": {"type": "RobertaProcessing", "sep": ["<|im_end|>", 2],
                                              "cls": ["<|im_start|>", 1], "trim_offsets": True,
                                              "add_prefix_space": False}}], 3),
]


def apply_patch(doc, patch):
    doc = copy.deepcopy(doc)
    for p in patch:
        parts = [x.replace("~1", "/").replace("~0", "~") for x in p["path"].split("/")[1:]]
        node = doc
        for k in parts[:-1]:
            node = node[k]
        node[parts[-1]] = copy.deepcopy(p["value"])
    return doc


def load_json(path):
    if path.endswith(".xz"):
        with lzma.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def random_id_sequences(rng, tok, count):
    vocab = sorted(tok.get_vocab(with_added_tokens=True).items(), key=lambda kv: (kv[1], kv[0]))
    ids = sorted(set(i for _, i in vocab))
    specials = [i for t, i in vocab if t.startswith("<") and t.endswith(">") and len(t) > 2]
    byte_like = [i for t, i in vocab if t.startswith("<0x")] or [i for t, i in vocab if len(t) == 1]
    top = max(ids) + 1
    seqs = []
    for _ in range(count):
        seq = []
        for _ in range(rng.randrange(1, 13)):
            r = rng.random()
            if r < 0.45:
                seq.append(rng.choice(ids))
            elif r < 0.75:
                seq.append(rng.choice(byte_like))
            elif r < 0.92:
                seq.append(rng.choice(specials) if specials else rng.choice(ids))
            else:
                seq.append(top + rng.randrange(5))  # not in the vocabulary: skipped
        seqs.append(seq)
    return seqs


def make_fixture(name, tok_file, config, patch, which, strings):
    doc = apply_patch(load_json(os.path.join(DATA, tok_file)), patch)
    tok = Tokenizer.from_str(json.dumps(doc))
    header = {"fixture": name, "tokenizer": tok_file, "config": config, "patch": patch,
              "tokenizers_version": tokenizers.__version__, "seed": SEED}
    lines = []
    indices = range(len(strings)) if which == "all" else [i for i in range(len(strings)) if i < 200 or i % which == 0]
    for i in indices:
        s = strings[i]
        tok.encode_special_tokens = False
        ids = tok.encode(s, add_special_tokens=False).ids
        rec = {"i": i, "ids": ids}
        ids_special = tok.encode(s, add_special_tokens=True).ids
        if ids_special != ids:
            rec["ids_special"] = ids_special
        tok.encode_special_tokens = True
        ids_plain = tok.encode(s, add_special_tokens=False).ids
        tok.encode_special_tokens = False
        if ids_plain != ids:
            rec["ids_plain"] = ids_plain
        decoded = tok.decode(ids, skip_special_tokens=False)
        if decoded != s:
            rec["decoded"] = decoded
        decoded_skip = tok.decode(ids, skip_special_tokens=True)
        if decoded_skip != decoded:
            rec["decoded_skip"] = decoded_skip
        lines.append(dumps(rec))
    rng = random.Random(SEED + sum(map(ord, name)))
    for seq in random_id_sequences(rng, tok, 300):
        lines.append(dumps({"decode": seq, "decoded": tok.decode(seq, skip_special_tokens=False),
                            "decoded_skip": tok.decode(seq, skip_special_tokens=True)}))
    header["strings"] = len(indices)
    return "\n".join([dumps(header)] + lines) + "\n"


def make_unicode_fixture(strings):
    """tokenizers' own NFC/NFD/NFKC/NFKD and Lowercase normalizers (whose
    Unicode data is not Python's: see runtime/tokenizer/gen_unicode_data.py),
    and Rust's lossy UTF-8 decoding (through the ByteLevel decoder), for the
    C++ Unicode helpers."""
    import unicodedata
    norms = {"nfc": normalizers.NFC(), "nfd": normalizers.NFD(), "nfkc": normalizers.NFKC(),
             "nfkd": normalizers.NFKD(), "lower": normalizers.Lowercase()}
    rng = random.Random(SEED + 3)
    lines = [dumps({"tokenizers_version": tokenizers.__version__})]
    samples = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if (unicodedata.decomposition(ch) or unicodedata.combining(ch) or ch.lower() != ch) and rng.random() < 0.5:
            samples.append(ch)
    samples += strings[:: 3] + textgen.NEWER
    for _ in range(300):  # runs of combining marks in random order, with starters
        samples.append("".join(rng.choice(["a", "e", "\u1100", "\u1161", "\u11a8", "\uac00", "\u0300", "\u0301",
                                           "\u0323", "\u0327", "\u05b0", "\u0591", "\u3099", "\u0f72", "\u0f71",
                                           "\u0345", "\u1dce", "\u1aca", "\u05ad"]) for _ in range(rng.randrange(1, 10))))
    for s in samples:
        rec = {"s": s}
        for key, n in norms.items():
            out = n.normalize_str(s)
            if out != s:
                rec[key] = out
        lines.append(dumps(rec))
    pieces = [b"\x80", b"\xbf", b"\xc0", b"\xc1", b"\xc2", b"\xdf", b"\xe0", b"\xe0\xa0", b"\xe0\x80", b"\xed\x9f",
              b"\xed\xa0", b"\xef\xbf", b"\xf0", b"\xf0\x90", b"\xf0\x80", b"\xf4\x8f\xbf", b"\xf4\x90", b"\xf5",
              b"\xff", b"a", b" ", "é".encode(), "€".encode(), "😀".encode(), b"\x00"]
    byte_level = decoders.ByteLevel()
    table = byte_level_table()
    for _ in range(1500):
        bs = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 8)))
        if rng.random() < 0.3:
            bs = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 10)))
        lossy = byte_level.decode(["".join(table[b] for b in bs)])
        assert lossy == bs.decode("utf-8", "replace")
        lines.append(dumps({"bytes": bs.hex(), "lossy": lossy}))
    return "\n".join(lines) + "\n"


def byte_level_table():
    """GPT-2's bytes_to_unicode."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


LONG_FIXTURES = [("llama3", "llama3/tokenizer.json.xz"), ("spbpe", "spbpe/tokenizer.json"),
                 ("bytebpe", "bytebpe/tokenizer.json")]


def long_strings():
    rng = random.Random(SEED + 4)
    return [
        " " * 100000,
        "x" + " " * 100000 + "y",
        "\n" * 100000,
        " \t" * 50000 + "\n",
        "a" * 100000,
        "1" * 100000,
        "😀" * 20000,
        "".join(rng.choice([" ", "  ", "\t", "\n", "\r\n", "\u3000"]) for _ in range(50000)) + "end",
        textgen.prose(rng, 200000),
    ]


def make_long_fixture():
    """Long inputs (quadratic blowups would show): ids for each tokenizer."""
    strings = long_strings()
    lines = [dumps({"fixture": "long", "tokenizers_version": tokenizers.__version__, "strings": strings})]
    for name, tok_file in LONG_FIXTURES:
        tok = Tokenizer.from_str(json.dumps(load_json(os.path.join(DATA, tok_file))))
        for i, s in enumerate(strings):
            lines.append(dumps({"tokenizer": tok_file, "i": i, "ids": tok.encode(s, add_special_tokens=False).ids}))
    return "\n".join(lines) + "\n"


def xz_bytes(text):
    return lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)


def write(path, data, check, mismatches):
    if check:
        old = None
        if os.path.exists(path):
            with open(path, "rb") as f:
                old = f.read()
        if path.endswith(".xz"):
            same = old is not None and lzma.decompress(old) == lzma.decompress(data)
        else:
            same = old == data
        if not same:
            mismatches.append(path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print("wrote %s (%d bytes)" % (os.path.relpath(path, REPO), len(data)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = ap.parse_args()
    mismatches = []

    sp = build_spbpe()
    write(os.path.join(DATA, "spbpe", "tokenizer.json"),
          (json.dumps(sp, ensure_ascii=False, indent=1) + "\n").encode("utf-8"), args.check, mismatches)
    write(os.path.join(DATA, "spbpe", "tokenizer_config.json"),
          (json.dumps(SPBPE_CONFIG, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), args.check, mismatches)
    bb = build_bytebpe()
    write(os.path.join(DATA, "bytebpe", "tokenizer.json"),
          (json.dumps(bb, ensure_ascii=False, indent=1) + "\n").encode("utf-8"), args.check, mismatches)
    if args.check and mismatches:
        sys.exit("differs from the committed files: " + ", ".join(mismatches))

    strings = make_strings()
    assert len(set(strings)) > 2000, len(set(strings))
    write(os.path.join(DATA, "fixtures", "strings.jsonl.xz"),
          xz_bytes("".join(dumps(s) + "\n" for s in strings)), args.check, mismatches)
    write(os.path.join(DATA, "fixtures", "unicode.jsonl.xz"), xz_bytes(make_unicode_fixture(strings)), args.check,
          mismatches)
    write(os.path.join(DATA, "fixtures", "long.jsonl.xz"), xz_bytes(make_long_fixture()), args.check, mismatches)
    for name, tok_file, config, patch, which in FIXTURES:
        text = make_fixture(name, tok_file, config, patch, which, strings)
        write(os.path.join(DATA, "fixtures", name + ".jsonl.xz"), xz_bytes(text), args.check, mismatches)
    if args.check:
        if mismatches:
            sys.exit("differs from the committed files: " + ", ".join(mismatches))
        print("fixtures are up to date")


if __name__ == "__main__":
    main()
