#!/usr/bin/env python3
"""Generates unicode_data.inc: the Unicode tables of the tokenizer, made to
behave exactly like the Hugging Face `tokenizers` library.

    pip install tokenizers unicodedata2==16.0.0
    python3 runtime/tokenizer/gen_unicode_data.py

tokenizers does not use one Unicode version throughout:
- its normalizers (NFC/NFD/NFKC/NFKD, StripAccents) use the Rust crate
  unicode-normalization-alignments, whose data is Unicode 9.0: characters
  encoded since then neither decompose nor reorder;
- Lowercase is Rust's char::to_lowercase (the compiler's Unicode version);
- its regexes (Oniguruma) know Unicode 16.0 categories, while PCRE2 10.42
  knows Unicode 14.0.

So the normalization and lowercase tables here are read off tokenizers'
own normalizers, character by character (starting from Python's
`unicodedata`, Unicode 14.0, for the combining classes and the candidate
compositions), and the regex translation adds the letters, marks and
numbers of Unicode 15.0-16.0 (from `unicodedata2` 16.0.0) to \\p{L}, \\p{N}...

Tables (sorted by code point; binary search):
  kCombiningClass   {cp, ccc}: non-zero canonical combining classes that
                    tokenizers' NFD honours.
  kDecomp           {cp, canonOffset, canonLen, compatOffset, compatLen}: NFD and
                    NFKD of single characters (as tokenizers gives them) where they
                    differ from the character; Hangul syllables are algorithmic.
  kDecompPool       the code points those point into.
  kCompose          {first, second, composite}: the pairs tokenizers' NFC composes.
  kLower            {cp, offset, len} + kLowerPool: tokenizers' Lowercase of each
                    character, where it changes.
  kStripMarks       {first, last}: ranges StripAccents removes.
  kNewerCategories  {first, last, category}: characters unassigned in Unicode
                    14.0 with their Unicode 16.0 general category (L*, M*, N*).
"""
import os
import sys
import unicodedata

try:
    import tokenizers
    from tokenizers import normalizers
except ImportError:
    sys.exit("needs Hugging Face tokenizers: pip install tokenizers")
try:
    import unicodedata2
except ImportError:
    sys.exit("needs unicodedata2 16.0.0: pip install unicodedata2==16.0.0")
if unicodedata2.unidata_version != "16.0.0":
    sys.exit("needs unicodedata2 16.0.0 (the Unicode version of tokenizers' Oniguruma), found %s"
             % unicodedata2.unidata_version)

HANGUL_S_BASE, HANGUL_S_COUNT = 0xAC00, 11172
NFD, NFKD, NFC = normalizers.NFD(), normalizers.NFKD(), normalizers.NFC()
LOWER, STRIP = normalizers.Lowercase(), normalizers.StripAccents()


def is_surrogate(cp):
    return 0xD800 <= cp <= 0xDFFF


def hf_knows_ccc(ch, ccc):
    """Whether tokenizers' NFD reorders marks around `ch` (class `ccc`)."""
    if ccc > 1:  # U+0334 (class 1) must move in front of it
        return NFD.normalize_str("a" + ch + "\u0334").startswith("a\u0334")
    # class 1: it must move in front of U+0301 (class 230)
    return NFD.normalize_str("a\u0301" + ch) == "a" + NFD.normalize_str(ch) + "\u0301"


def ranges(cps):
    out = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def main():
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unicode_data.inc")
    ccc, decomp, pool, compose, lower, lower_pool, marks = [], [], [], [], [], [], []
    newer = {}
    for cp in range(0x110000):
        if is_surrogate(cp):
            continue
        ch = chr(cp)
        c = unicodedata.combining(ch)
        if c and hf_knows_ccc(ch, c):
            ccc.append((cp, c))
        if not HANGUL_S_BASE <= cp < HANGUL_S_BASE + HANGUL_S_COUNT:
            nfd = NFD.normalize_str(ch)
            nfkd = NFKD.normalize_str(ch)
            if nfd != ch or nfkd != ch:
                canon = [ord(x) for x in nfd] if nfd != ch else []
                compat = [ord(x) for x in nfkd] if nfkd != ch else []
                co = len(pool)
                pool.extend(canon)
                ko = len(pool)
                pool.extend(compat)
                decomp.append((cp, co, len(canon), ko, len(compat)))
            d = unicodedata.decomposition(ch)
            if d and not d.startswith("<"):
                parts = [int(x, 16) for x in d.split()]
                if len(parts) == 2 and NFC.normalize_str(chr(parts[0]) + chr(parts[1])) == ch:
                    compose.append((parts[0], parts[1], cp))
        lo = LOWER.normalize_str(ch)
        if lo != ch:
            lower.append((cp, len(lower_pool), len(lo)))
            lower_pool.extend(ord(x) for x in lo)
        if STRIP.normalize_str(ch) == "":
            marks.append(cp)
        cat16 = unicodedata2.category(ch)
        if unicodedata.category(ch) == "Cn" and cat16[0] in "LMN":
            newer.setdefault(cat16, []).append(cp)
    compose.sort()
    newer_ranges = sorted((a, b, cat) for cat, cps in newer.items() for a, b in ranges(cps))

    def rows(items, per_line):
        return "\n".join("  " + " ".join(items[i:i + per_line]) for i in range(0, len(items), per_line))

    with open(out_path, "w", encoding="utf-8") as f:
        f.write("// Generated by gen_unicode_data.py (Python %s unicodedata %s, tokenizers %s, unicodedata2 %s).\n"
                % (sys.version.split()[0], unicodedata.unidata_version, tokenizers.__version__,
                   unicodedata2.unidata_version))
        f.write("// Do not edit by hand.\n// NOLINTBEGIN\n")
        f.write("static constexpr const char* kTablesVersion = \"Unicode %s as tokenizers %s normalizes; "
                "regex categories %s\";\n\n" % (unicodedata.unidata_version, tokenizers.__version__,
                                                unicodedata2.unidata_version))
        f.write("struct CccEntry { uint32_t cp; uint8_t ccc; };\n")
        f.write("static constexpr CccEntry kCombiningClass[] = {\n%s\n};\n\n" % rows(["{0x%X,%d}," % e for e in ccc], 8))
        f.write("struct DecompEntry { uint32_t cp; uint16_t canonOffset; uint8_t canonLen; uint16_t compatOffset; "
                "uint8_t compatLen; };\n")
        f.write("static constexpr DecompEntry kDecomp[] = {\n%s\n};\n\n" % rows(["{0x%X,%d,%d,%d,%d}," % e for e in decomp], 4))
        f.write("static constexpr uint32_t kDecompPool[] = {\n%s\n};\n\n" % rows(["0x%X," % x for x in pool], 12))
        f.write("struct ComposeEntry { uint32_t first; uint32_t second; uint32_t composite; };\n")
        f.write("static constexpr ComposeEntry kCompose[] = {\n%s\n};\n\n" % rows(["{0x%X,0x%X,0x%X}," % e for e in compose], 4))
        f.write("struct LowerEntry { uint32_t cp; uint16_t offset; uint8_t len; };\n")
        f.write("static constexpr LowerEntry kLower[] = {\n%s\n};\n\n" % rows(["{0x%X,%d,%d}," % e for e in lower], 6))
        f.write("static constexpr uint32_t kLowerPool[] = {\n%s\n};\n\n" % rows(["0x%X," % x for x in lower_pool], 12))
        f.write("struct CodeRange { uint32_t first; uint32_t last; };\n")
        f.write("static constexpr CodeRange kStripMarks[] = {\n%s\n};\n\n"
                % rows(["{0x%X,0x%X}," % tuple(r) for r in ranges(marks)], 6))
        f.write("struct CategoryRange { uint32_t first; uint32_t last; char category[3]; };\n")
        f.write("static constexpr CategoryRange kNewerCategories[] = {\n%s\n};\n"
                % rows(["{0x%X,0x%X,\"%s\"}," % r for r in newer_ranges], 4))
        f.write("// NOLINTEND\n")
    assert len(pool) < 65536 and len(lower_pool) < 65536
    print("wrote %s: %d ccc, %d decompositions (%d pool), %d compositions, %d lowercase, %d mark ranges, "
          "%d newer category ranges" % (out_path, len(ccc), len(decomp), len(pool), len(compose), len(lower),
                                       len(ranges(marks)), len(newer_ranges)))


if __name__ == "__main__":
    main()
