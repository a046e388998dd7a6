#include "weights/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "common/output_file.h"
#include "weights/error.h"
#include "weights/mapped_file.h"

namespace linnet::weights {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::size_t kMaxNpyHeader = 1 << 20;

// A tiny reader for the Python literal in the header:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view label) : s_(text), label_(label) {}

  struct Value {
    enum Kind { Str, Bool, Tuple, Other } kind = Other;
    std::string str;
    bool b = false;
    Shape tuple;
  };

  std::map<std::string, Value> parseDict() {
    std::map<std::string, Value> out;
    ws();
    expect('{');
    for (;;) {
      ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      std::string key = parseString();
      ws();
      expect(':');
      ws();
      Value v = parseValue();
      if (!out.emplace(key, std::move(v)).second) fail(fmt::format("key '{}' appears twice", key));
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      ws();
      expect('}');
      break;
    }
    ws();
    if (i_ != s_.size()) fail("unexpected text after the header dictionary");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::string shown;
    for (char c : s_.substr(0, 120)) shown += (c >= 32 && c < 127) ? c : '?';
    throw Error(fmt::format("{}: .npy header \"{}\" is malformed: {} (at character {}); the file is corrupt or not "
                            "written by numpy.save",
                            label_, shown, what, i_));
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++i_;
  }
  std::string parseString() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') fail("escapes in header strings are not supported");
      out += s_[i_++];
    }
    expect(q);
    return out;
  }
  Value parseValue() {
    Value v;
    char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = Value::Str;
      v.str = parseString();
    } else if (s_.substr(i_).starts_with("True")) {
      v.kind = Value::Bool;
      v.b = true;
      i_ += 4;
    } else if (s_.substr(i_).starts_with("False")) {
      v.kind = Value::Bool;
      i_ += 5;
    } else if (c == '(') {
      v.kind = Value::Tuple;
      ++i_;
      for (;;) {
        ws();
        if (peek() == ')') {
          ++i_;
          break;
        }
        if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in the shape");
        std::int64_t d = 0;
        while (peek() >= '0' && peek() <= '9') {
          int digit = peek() - '0';
          if (d > (INT64_MAX - digit) / 10) fail("shape dimension too large");
          d = d * 10 + digit;
          ++i_;
        }
        if (peek() == 'L') ++i_;  // Python 2 long
        v.tuple.push_back(d);
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        ws();
        expect(')');
        break;
      }
    } else if (c == '[') {
      fail("structured (record) dtypes are not supported; save each field as its own array");
    } else {
      fail("expected a string, True, False or a tuple");
    }
    return v;
  }

  std::string_view s_;
  std::string_view label_;
  std::size_t i_ = 0;
};

std::optional<DType> dtypeFromDescr(const std::string& descr, std::string_view label, const NpyReadOptions& opt) {
  auto refuse = [&](const std::string& why) {
    return Error(fmt::format("{}: .npy dtype '{}' {}", label, descr, why));
  };
  if (descr.size() < 3) throw refuse("is not a dtype Linnet reads");
  char order = descr[0];
  std::string kind = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    throw refuse("is not a simple numeric dtype; Linnet reads '<f4', '<f2', '<f8', '<i8', '<i4', '<i2', '|i1', '|u1', "
                 "'|b1' (and '<u2' as bf16 bits)");
  bool single = kind == "b1" || kind == "i1" || kind == "u1";
  if (order == '>' && !single)
    throw refuse(fmt::format("is big-endian; Linnet reads little-endian files: save a.astype('<{}') instead", kind));
  if (order == '|' && !single && kind != "V2")
    throw refuse("has no byte order; expected a little-endian '<' dtype");
  static const std::pair<const char*, DType> kMap[] = {
      {"f4", DType::F32}, {"f2", DType::F16}, {"f8", DType::F64}, {"i4", DType::I32}, {"i8", DType::I64},
      {"i2", DType::I16}, {"i1", DType::I8},  {"u1", DType::U8},  {"b1", DType::Bool},
  };
  for (const auto& [k, t] : kMap)
    if (kind == k) {
      if (opt.languageTypesOnly && !linnet::isLanguageType(t)) {
        std::vector<std::string_view> names;
        for (DType d : linnet::kAllDTypes)
          if (linnet::isLanguageType(d)) names.push_back(linnet::name(d));
        const bool isFloat = kind[0] == 'f';
        throw refuse(fmt::format("({}) is a storage type, not a Linnet value type ({}); save a.astype('{}') instead",
                                 linnet::name(t), fmt::join(names, ", "), isFloat ? "<f4" : "<i4"));
      }
      return t;
    }
  if (kind == "u2" || kind == "V2") {
    if (opt.u2IsBF16) return DType::BF16;
    throw refuse(
        "(16-bit unsigned) is not a Linnet dtype. Linnet stores bf16 arrays in .npy as '<u2' raw bfloat16 bits, and "
        "reads them so only where a bf16 value is expected; for other data use '<i4' or '<f4'");
  }
  if (kind == "u4" || kind == "u8")
    throw refuse("(unsigned) is not a Linnet dtype; save a.astype('<i8') (or '<i4') instead");
  if (kind[0] == 'c') throw refuse("(complex) is not supported; save the real and imaginary parts separately");
  if (kind[0] == 'O') throw refuse("(Python objects) cannot be read; save a numeric array");
  if (kind[0] == 'U' || kind[0] == 'S') throw refuse("(strings) is not supported; save a numeric array");
  throw refuse("is not a dtype Linnet reads; use '<f4', '<f2', '<f8', '<i8', '<i4', '<i2', '|i1', '|u1' or '|b1'");
}

std::size_t readLe(const std::byte* p, int n) {
  std::size_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::size_t>(p[i]);
  return v;
}

}  // namespace

std::int64_t NpyArray::elementCount() const { return weights::elementCount(shape).value_or(-1); }

NpyArray parseNpy(std::span<const std::byte> bytes, std::string_view label, NpyReadOptions options) {
  if (bytes.empty()) throw Error(fmt::format("{}: file is empty; expected a NumPy .npy file", label));
  if (bytes.size() < kMagicLen + 2 ||
      std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    throw Error(fmt::format("{}: not a NumPy .npy file (it does not start with \\x93NUMPY); save the array with "
                            "numpy.save",
                            label));
  int major = std::to_integer<int>(bytes[6]);
  int minor = std::to_integer<int>(bytes[7]);
  int lenBytes;
  if (major == 1 && minor == 0)
    lenBytes = 2;
  else if ((major == 2 || major == 3) && minor == 0)
    lenBytes = 4;
  else
    throw Error(fmt::format("{}: .npy format version {}.{} is not supported (1.0, 2.0 and 3.0 are)", label, major,
                            minor));
  std::size_t prefix = 8 + static_cast<std::size_t>(lenBytes);
  if (bytes.size() < prefix)
    throw Error(fmt::format("{}: .npy file is truncated inside its header ({} bytes)", label, bytes.size()));
  std::size_t hlen = readLe(bytes.data() + 8, lenBytes);
  if (hlen > kMaxNpyHeader || hlen > bytes.size() - prefix)
    throw Error(fmt::format("{}: .npy header length {} runs past the end of the file ({} bytes); the file is "
                            "truncated",
                            label, hlen, bytes.size()));
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + prefix), hlen);
  auto dict = HeaderParser(header, label).parseDict();
  for (const char* key : {"descr", "fortran_order", "shape"})
    if (!dict.count(key))
      throw Error(fmt::format("{}: .npy header has no '{}'; the file is corrupt or not written by numpy.save", label,
                              key));
  if (dict.size() != 3) {
    for (const auto& [k, v] : dict)
      if (k != "descr" && k != "fortran_order" && k != "shape")
        throw Error(fmt::format("{}: .npy header has an unexpected key '{}'", label, k));
  }
  const auto& descr = dict["descr"];
  const auto& fortran = dict["fortran_order"];
  const auto& shape = dict["shape"];
  if (descr.kind != HeaderParser::Value::Str)
    throw Error(fmt::format("{}: .npy descr is not a simple dtype string (structured arrays are not supported)", label));
  if (fortran.kind != HeaderParser::Value::Bool) throw Error(fmt::format("{}: .npy fortran_order must be True or False", label));
  if (shape.kind != HeaderParser::Value::Tuple) throw Error(fmt::format("{}: .npy shape must be a tuple", label));
  NpyArray out;
  out.dtype = *dtypeFromDescr(descr.str, label, options);
  out.shape = shape.tuple;
  auto count = weights::elementCount(out.shape);
  std::size_t esize = linnet::byteSize(out.dtype);
  if (!count || static_cast<std::uint64_t>(*count) > SIZE_MAX / esize)
    throw Error(fmt::format("{}: .npy shape {} is too large", label, shapeString(out.shape)));
  if (fortran.b && out.shape.size() > 1 && *count > 1)
    throw Error(fmt::format("{}: .npy array is in Fortran (column-major) order; Linnet reads C order: save "
                            "np.ascontiguousarray(a) instead",
                            label));
  std::size_t nbytes = static_cast<std::size_t>(*count) * esize;
  std::size_t have = bytes.size() - prefix - hlen;
  if (have < nbytes)
    throw Error(fmt::format("{}: .npy data is truncated: shape {} of {} needs {} bytes, the file holds {}", label,
                            shapeString(out.shape), descr.str, nbytes, have));
  if (have > nbytes)
    throw Error(fmt::format("{}: .npy file has {} bytes after the data for shape {} of {} ({} bytes); the file is "
                            "corrupt or several arrays were concatenated (use one file per array)",
                            label, have - nbytes, shapeString(out.shape), descr.str, nbytes));
  auto data = bytes.subspan(prefix + hlen, nbytes);
  if (out.dtype == DType::Bool)
    for (std::size_t i = 0; i < data.size(); ++i)
      if (std::to_integer<unsigned>(data[i]) > 1)
        throw Error(fmt::format("{}: .npy bool element {} holds byte {}, not 0 or 1; the file is corrupt", label, i,
                                std::to_integer<unsigned>(data[i])));
  out.data.assign(data.begin(), data.end());
  return out;
}

NpyArray readNpy(const std::filesystem::path& path, NpyReadOptions options) {
  MappedFile m = MappedFile::open(path);
  return parseNpy(m.bytes(), path.string(), options);
}

std::string_view npyDescr(DType dtype) {
  switch (dtype) {
    case DType::F32: return "<f4";
    case DType::BF16: return "<u2";
    case DType::F16: return "<f2";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
    case DType::Bool: return "|b1";
    case DType::F64: return "<f8";
    case DType::I8: return "|i1";
    case DType::U8: return "|u1";
    case DType::I16: return "<i2";
  }
  throw Error("npyDescr: unknown dtype");
}

std::vector<std::byte> encodeNpy(DType dtype, const Shape& shape, std::span<const std::byte> data) {
  auto count = weights::elementCount(shape);
  if (!count) throw Error(fmt::format("encodeNpy: invalid shape {}", shapeString(shape)));
  std::size_t esize = linnet::byteSize(dtype);
  if (static_cast<std::uint64_t>(*count) > SIZE_MAX / esize || data.size() != static_cast<std::size_t>(*count) * esize)
    throw Error(fmt::format("encodeNpy: shape {} of {} needs {} bytes, got {}", shapeString(shape), linnet::name(dtype),
                            static_cast<std::uint64_t>(*count) * esize, data.size()));
  // Exactly numpy.save's header: sorted keys, repr'd values, spare spaces
  // for growing the first axis, then padding to 64 bytes and a newline.
  std::string tuple;
  if (shape.size() == 1)
    tuple = fmt::format("({},)", shape[0]);
  else
    tuple = fmt::format("({})", fmt::join(shape, ", "));
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npyDescr(dtype), tuple);
  if (!shape.empty()) {
    std::size_t digits = fmt::formatted_size("{}", shape[0]);
    if (digits < 21) header.append(21 - digits, ' ');
  }
  std::size_t hlen = header.size() + 1;
  int major = 1;
  std::size_t lenBytes = 2;
  std::size_t padlen = 64 - ((8 + lenBytes + hlen) % 64);
  if (hlen + padlen > 0xffff) {
    major = 2;
    lenBytes = 4;
    padlen = 64 - ((8 + lenBytes + hlen) % 64);
  }
  header.append(padlen, ' ');
  header += '\n';
  std::vector<std::byte> out;
  out.reserve(8 + lenBytes + header.size() + data.size());
  for (std::size_t i = 0; i < kMagicLen; ++i) out.push_back(static_cast<std::byte>(kMagic[i]));
  out.push_back(static_cast<std::byte>(major));
  out.push_back(std::byte{0});
  std::size_t total = header.size();
  for (std::size_t i = 0; i < lenBytes; ++i) out.push_back(static_cast<std::byte>((total >> (8 * i)) & 0xff));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void writeNpy(const std::filesystem::path& path, DType dtype, const Shape& shape, std::span<const std::byte> data) {
  if (auto why = unwritableOutput(path)) throw Error(*why);
  std::vector<std::byte> bytes = encodeNpy(dtype, shape, data);
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp{}", static_cast<long>(::getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(fmt::format("{}: cannot create the file (does its folder exist and is it writable?)", path.string()));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw Error(fmt::format("{}: writing {} bytes failed (disk full?)", path.string(), bytes.size()));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();  // before remove() reuses ec
    std::filesystem::remove(tmp, ec);
    throw Error(fmt::format("{}: cannot move the written file into place: {}", path.string(), why));
  }
}

void writeNpy(const std::filesystem::path& path, const NpyArray& array) {
  writeNpy(path, array.dtype, array.shape, array.data);
}

}  // namespace linnet::weights
