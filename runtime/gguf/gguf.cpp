#include "gguf/gguf.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>

namespace linnet::gguf {

std::string valueTypeName(std::uint32_t type) {
  static constexpr std::string_view names[] = {"UINT8", "INT8",   "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                               "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64", "FLOAT64"};
  if (type < std::size(names)) return std::string(names[type]);
  return fmt::format("unknown value type {}", type);
}

std::string shapeString(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// ------------------------------------------------------------------ values

std::size_t Array::size() const {
  return std::visit([](const auto& v) { return v.size(); }, items);
}

bool Value::isInteger() const {
  switch (type()) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64: return true;
    default: return false;
  }
}

std::optional<std::int64_t> Value::asInt() const {
  return std::visit(
      [](const auto& v) -> std::optional<std::int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::uint64_t>) {
          if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
          return static_cast<std::int64_t>(v);
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return static_cast<std::int64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      data);
}

std::optional<double> Value::asFloat() const {
  if (const float* f = std::get_if<float>(&data)) return *f;
  if (const double* d = std::get_if<double>(&data)) return *d;
  return std::nullopt;
}

namespace {

std::string quoteText(std::string_view s, std::size_t maxChars = 64) {
  std::string out = "\"";
  std::size_t n = 0;
  for (char c : s) {
    if (n++ == maxChars) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <class T>
std::string scalarText(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>) return quoteText(v);
  else if constexpr (std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int8_t>) return fmt::format("{}", static_cast<int>(v));
  else return fmt::format("{}", v);
}

std::string arrayText(const Array& a, std::size_t maxItems) {
  return std::visit(
      [&](const auto& vec) {
        std::string s = "[";
        std::size_t i = 0;
        for (const auto& x : vec) {
          if (i) s += ", ";
          if (i == maxItems) {
            s += fmt::format("... ({} in all)", vec.size());
            break;
          }
          using E = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<E, Array>) s += arrayText(x, maxItems);
          else s += scalarText(static_cast<E>(x));
          ++i;
        }
        return s + "]";
      },
      a.items);
}

}  // namespace

std::string Value::toString(std::size_t maxItems) const {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Array>) return arrayText(v, maxItems);
        else return scalarText(v);
      },
      data);
}

// ---------------------------------------------------------------- metadata

const Value* Metadata::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

namespace {
[[noreturn]] void wrongType(const std::string& label, std::string_view key, const Value& v, std::string_view expected) {
  std::string found = valueTypeName(v.type());
  if (const Array* a = std::get_if<Array>(&v.data)) found = fmt::format("ARRAY of {}", valueTypeName(a->type()));
  throw Error(fmt::format("{}: metadata '{}' is {} ({}), expected {}", label, key, found, v.toString(4), expected));
}
[[noreturn]] void missingKey(const std::string& label, std::string_view key) {
  throw Error(fmt::format("{}: metadata key '{}' is missing", label, key));
}
}  // namespace

const std::string* Metadata::findString(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return nullptr;
  if (const std::string* s = std::get_if<std::string>(&v->data)) return s;
  wrongType(label_, key, *v, "a STRING");
}

const std::string& Metadata::getString(std::string_view key) const {
  if (const std::string* s = findString(key)) return *s;
  missingKey(label_, key);
}

std::optional<std::int64_t> Metadata::findInt(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (!v->isInteger()) wrongType(label_, key, *v, "an integer");
  auto i = v->asInt();
  if (!i) throw Error(fmt::format("{}: metadata '{}' = {} is too large", label_, key, v->toString()));
  return i;
}

std::int64_t Metadata::getInt(std::string_view key) const {
  if (auto i = findInt(key)) return *i;
  missingKey(label_, key);
}

std::optional<double> Metadata::findFloat(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto f = v->asFloat()) return f;
  if (auto i = v->asInt()) return static_cast<double>(*i);
  wrongType(label_, key, *v, "a number");
}

double Metadata::getFloat(std::string_view key) const {
  if (auto f = findFloat(key)) return *f;
  missingKey(label_, key);
}

std::optional<bool> Metadata::findBool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (const bool* b = std::get_if<bool>(&v->data)) return *b;
  wrongType(label_, key, *v, "a BOOL");
}

bool Metadata::getBool(std::string_view key) const {
  if (auto b = findBool(key)) return *b;
  missingKey(label_, key);
}

const Array* Metadata::findArray(std::string_view key, ValueType element) const {
  const Value* v = find(key);
  if (!v) return nullptr;
  const Array* a = std::get_if<Array>(&v->data);
  if (!a || a->type() != element) wrongType(label_, key, *v, fmt::format("an ARRAY of {}", valueTypeName(element)));
  return a;
}

const Array& Metadata::getArray(std::string_view key, ValueType element) const {
  if (const Array* a = findArray(key, element)) return *a;
  missingKey(label_, key);
}

// ------------------------------------------------------------------- state

struct File::State {
  std::string label;
  std::uint32_t version = 0;
  Metadata metadata;
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::size_t, std::less<>> index;
  std::uint64_t alignment = kDefaultAlignment;
  std::uint64_t dataOffset = 0;
  std::span<const std::byte> bytes;

  std::vector<std::byte> owned;  // parseCopy
  void* map = nullptr;           // open
  std::size_t mapSize = 0;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (map) ::munmap(map, mapSize);
  }
};

// ------------------------------------------------------------------ parser

class Parser {
 public:
  Parser(File::State& st) : st_(st), b_(st.bytes), label_(st.label) {}

  void run();

 private:
  // What is being read, for messages.
  enum class Part { Header, Key, Value, TensorInfo };

  [[noreturn]] void fail(const std::string& msg) const { throw Error(fmt::format("{}: {}", label_, msg)); }

  std::string context() const {
    switch (part_) {
      case Part::Header: return "the header";
      case Part::Key: return fmt::format("metadata entry #{}", item_);
      case Part::Value: {
        std::string s = fmt::format("metadata '{}'", name_);
        for (std::uint64_t i : path_) s += fmt::format("[{}]", i);
        return s;
      }
      case Part::TensorInfo:
        return name_.empty() ? fmt::format("tensor info #{}", item_) : fmt::format("tensor info #{} ('{}')", item_, name_);
    }
    return "";
  }

  std::size_t left() const { return b_.size() - pos_; }

  void need(std::uint64_t n, std::string_view what, std::string_view suffix = {}) const {
    if (n > left())
      fail(fmt::format("truncated: the {}{} of {} needs {} bytes at offset {}, but the file ends at {}", what, suffix,
                       context(), n, pos_, b_.size()));
  }

  template <class T>
  T read(std::string_view what, std::string_view suffix = {}) {
    need(sizeof(T), what, suffix);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string readString(std::string_view what) {
    const auto n = read<std::uint64_t>(what, " length");
    if (n > left())
      fail(fmt::format("the {} of {} at offset {} claims {} bytes, but only {} bytes are left in the file", what,
                       context(), pos_ - 8, n, left()));
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  static std::uint64_t minEncodedSize(ValueType t) {
    switch (t) {
      case ValueType::U8:
      case ValueType::I8:
      case ValueType::Bool: return 1;
      case ValueType::U16:
      case ValueType::I16: return 2;
      case ValueType::U32:
      case ValueType::I32:
      case ValueType::F32: return 4;
      case ValueType::String: return 8;           // length
      case ValueType::Array: return 4 + 8;        // element type, count
      default: return 8;                          // U64, I64, F64
    }
  }

  static bool knownValueType(std::uint32_t t) { return t <= static_cast<std::uint32_t>(ValueType::F64); }

  template <class T>
  std::vector<T> readScalars(std::uint64_t n) {
    std::vector<T> v(static_cast<std::size_t>(n));
    if (n) std::memcpy(v.data(), b_.data() + pos_, static_cast<std::size_t>(n) * sizeof(T));
    pos_ += static_cast<std::size_t>(n) * sizeof(T);
    return v;
  }

  Value readValue(ValueType t);
  Array readArray(int depth);
  void readTensorInfo(std::size_t i);

  File::State& st_;
  std::span<const std::byte> b_;
  const std::string& label_;
  std::size_t pos_ = 0;
  Part part_ = Part::Header;
  std::uint64_t item_ = 0;
  std::string name_;
  std::vector<std::uint64_t> path_;
};

Value Parser::readValue(ValueType t) {
  Value v;
  switch (t) {
    case ValueType::U8: v.data = read<std::uint8_t>("UINT8 value"); break;
    case ValueType::I8: v.data = read<std::int8_t>("INT8 value"); break;
    case ValueType::U16: v.data = read<std::uint16_t>("UINT16 value"); break;
    case ValueType::I16: v.data = read<std::int16_t>("INT16 value"); break;
    case ValueType::U32: v.data = read<std::uint32_t>("UINT32 value"); break;
    case ValueType::I32: v.data = read<std::int32_t>("INT32 value"); break;
    case ValueType::F32: v.data = read<float>("FLOAT32 value"); break;
    case ValueType::Bool: v.data = read<std::uint8_t>("BOOL value") != 0; break;
    case ValueType::String: v.data = readString("string"); break;
    case ValueType::Array: v.data = readArray(1); break;
    case ValueType::U64: v.data = read<std::uint64_t>("UINT64 value"); break;
    case ValueType::I64: v.data = read<std::int64_t>("INT64 value"); break;
    case ValueType::F64: v.data = read<double>("FLOAT64 value"); break;
  }
  return v;
}

Array Parser::readArray(int depth) {
  const auto et = read<std::uint32_t>("array element type");
  if (!knownValueType(et))
    fail(fmt::format("{} is an array of unknown value type {} (known: 0-12, UINT8 to FLOAT64)", context(), et));
  const auto type = static_cast<ValueType>(et);
  if (type == ValueType::Array && depth >= kMaxArrayDepth)
    fail(fmt::format("{} nests arrays more than {} levels deep", context(), kMaxArrayDepth));
  const auto n = read<std::uint64_t>("array length");
  const std::uint64_t min = minEncodedSize(type);
  if (n > left() / min)
    fail(fmt::format("{} at offset {} claims {} elements of {}, but the {} bytes left in the file hold at most {}",
                     context(), pos_ - 12, n, valueTypeName(type), left(), left() / min));
  Array a;
  auto& items = a.items;
  switch (type) {
    case ValueType::U8: items = readScalars<std::uint8_t>(n); break;
    case ValueType::I8: items = readScalars<std::int8_t>(n); break;
    case ValueType::U16: items = readScalars<std::uint16_t>(n); break;
    case ValueType::I16: items = readScalars<std::int16_t>(n); break;
    case ValueType::U32: items = readScalars<std::uint32_t>(n); break;
    case ValueType::I32: items = readScalars<std::int32_t>(n); break;
    case ValueType::F32: items = readScalars<float>(n); break;
    case ValueType::U64: items = readScalars<std::uint64_t>(n); break;
    case ValueType::I64: items = readScalars<std::int64_t>(n); break;
    case ValueType::F64: items = readScalars<double>(n); break;
    case ValueType::Bool: {
      std::vector<bool> v(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = b_[pos_ + i] != std::byte{0};
      pos_ += static_cast<std::size_t>(n);
      items = std::move(v);
      break;
    }
    case ValueType::String: {
      std::vector<std::string> v;
      v.reserve(static_cast<std::size_t>(n));
      path_.push_back(0);
      for (std::uint64_t i = 0; i < n; ++i) {
        path_.back() = i;
        v.push_back(readString("string"));
      }
      path_.pop_back();
      items = std::move(v);
      break;
    }
    case ValueType::Array: {
      std::vector<Array> v;
      v.reserve(static_cast<std::size_t>(n));
      path_.push_back(0);
      for (std::uint64_t i = 0; i < n; ++i) {
        path_.back() = i;
        v.push_back(readArray(depth + 1));
      }
      path_.pop_back();
      items = std::move(v);
      break;
    }
  }
  return a;
}

void Parser::readTensorInfo(std::size_t i) {
  part_ = Part::TensorInfo;
  item_ = i;
  name_.clear();
  TensorInfo t;
  t.index = i;
  t.name = readString("name");
  name_ = t.name;
  const auto nd = read<std::uint32_t>("number of dimensions");
  if (nd > kMaxDims) fail(fmt::format("{} has {} dimensions; GGUF allows at most {}", context(), nd, kMaxDims));
  t.dims.resize(nd);
  for (std::uint32_t d = 0; d < nd; ++d) {
    t.dims[d] = read<std::uint64_t>("dimensions");
    if (t.dims[d] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(fmt::format("{} has dimension {} = {}, larger than the int64 maximum", context(), d, t.dims[d]));
  }
  const auto typeId = read<std::uint32_t>("ggml type");
  const TypeTraits* tr = typeTraits(typeId);
  if (!tr)
    fail(fmt::format("{} has unknown ggml type {} (not a type ggml defines; the file may be newer than this reader "
                     "or damaged)",
                     context(), typeId));
  t.type = tr->type;
  t.offset = read<std::uint64_t>("data offset");

  // Row-major shape, and the element count with overflow checks (zero dims
  // make an empty tensor, but the other dims must still multiply safely).
  t.shape.assign(t.dims.rbegin(), t.dims.rend());
  std::uint64_t nonzero = 1;
  bool empty = false;
  for (std::uint64_t d : t.dims) {
    if (d == 0) {
      empty = true;
      continue;
    }
    if (nonzero > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / d)
      fail(fmt::format("{} has shape {} whose element count overflows int64", context(), shapeString(t.shape)));
    nonzero *= d;
  }
  t.elementCount = empty ? 0 : nonzero;
  const std::uint64_t inner = nd ? t.dims[0] : 1;
  if (inner % tr->blockSize != 0)
    fail(fmt::format("{} is {} with shape {}: its rows of {} elements are not a whole number of {}-element blocks",
                     context(), tr->name, shapeString(t.shape), inner, tr->blockSize));
  if (t.offset % st_.alignment != 0)
    fail(fmt::format("{} has data offset {}, not a multiple of the alignment {}", context(), t.offset,
                     st_.alignment));
  if (st_.index.count(t.name))
    fail(fmt::format("tensor '{}' appears twice (tensor infos #{} and #{})", t.name, st_.index.at(t.name), i));
  st_.index.emplace(t.name, i);
  st_.tensors.push_back(std::move(t));
}

void Parser::run() {
  // Header.
  if (b_.size() < 4)
    fail(fmt::format("not a GGUF file: only {} bytes long (a GGUF file starts with the 4 bytes \"GGUF\")", b_.size()));
  if (std::memcmp(b_.data(), "GGUF", 4) != 0) {
    std::string seen;
    for (int k = 0; k < 4; ++k) seen += fmt::format("{}{:02x}", k ? " " : "", static_cast<unsigned>(b_[k]));
    std::string hint;
    if (std::memcmp(b_.data(), "lmgg", 4) == 0 || std::memcmp(b_.data(), "fmgg", 4) == 0 ||
        std::memcmp(b_.data(), "tjgg", 4) == 0)
      hint = "; this is a legacy GGML/GGJT file, convert it to GGUF with llama.cpp first";
    else if (std::memcmp(b_.data(), "FUGG", 4) == 0)
      hint = "; the magic is byte-swapped (a big-endian file?)";
    fail(fmt::format("not a GGUF file: starts with bytes {} where \"GGUF\" (47 47 55 46) was expected{}", seen, hint));
  }
  pos_ = 4;
  const auto version = read<std::uint32_t>("version");
  const std::uint32_t swapped = ((version & 0xffu) << 24) | ((version & 0xff00u) << 8) | ((version >> 8) & 0xff00u) |
                                (version >> 24);
  if (version == 1)
    fail("GGUF version 1 is not supported (only versions 2 and 3); reconvert the model with a current llama.cpp");
  if (version != 2 && version != 3) {
    if (swapped >= 1 && swapped <= 3)
      fail(fmt::format("big-endian GGUF file (version {} byte-swapped); only little-endian files are supported",
                       swapped));
    fail(fmt::format("unsupported GGUF version {} (this reader reads versions 2 and 3)", version));
  }
  st_.version = version;
  const auto tensorCount = read<std::uint64_t>("tensor count");
  const auto kvCount = read<std::uint64_t>("metadata count");
  // A key/value takes at least 13 bytes, a tensor info at least 24.
  if (kvCount > left() / 13)
    fail(fmt::format("the header claims {} metadata entries, but the {} bytes after it hold at most {}", kvCount,
                     left(), left() / 13));
  if (tensorCount > left() / 24)
    fail(fmt::format("the header claims {} tensors, but the {} bytes after it hold at most {} tensor infos",
                     tensorCount, left(), left() / 24));

  // Metadata.
  Metadata& md = st_.metadata;
  md.label_ = label_;
  md.entries_.reserve(static_cast<std::size_t>(kvCount));
  for (std::uint64_t i = 0; i < kvCount; ++i) {
    part_ = Part::Key;
    item_ = i;
    std::string key = readString("key");
    part_ = Part::Value;
    name_ = key;
    const auto t = read<std::uint32_t>("value type");
    if (!knownValueType(t)) fail(fmt::format("{} has unknown value type {} (known: 0-12, UINT8 to FLOAT64)", context(), t));
    Value v = readValue(static_cast<ValueType>(t));
    if (auto it = md.index_.find(key); it != md.index_.end())
      fail(fmt::format("metadata key '{}' appears twice (entries #{} and #{})", key, it->second, i));
    md.index_.emplace(key, md.entries_.size());
    md.entries_.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = md.find("general.alignment")) {
    const auto* u = std::get_if<std::uint32_t>(&a->data);
    if (!u)
      fail(fmt::format("general.alignment must be a UINT32, found {} ({})", valueTypeName(a->type()), a->toString()));
    if (*u == 0 || (*u & (*u - 1)) != 0)
      fail(fmt::format("general.alignment = {} is not a power of two", *u));
    st_.alignment = *u;
  }

  // Tensor infos.
  part_ = Part::TensorInfo;
  if (tensorCount > left() / 24)
    fail(fmt::format("the header claims {} tensors, but the {} bytes after the metadata hold at most {} tensor infos",
                     tensorCount, left(), left() / 24));
  st_.tensors.reserve(static_cast<std::size_t>(tensorCount));
  for (std::uint64_t i = 0; i < tensorCount; ++i) readTensorInfo(static_cast<std::size_t>(i));

  // Data section.
  const std::uint64_t a = st_.alignment;
  const std::uint64_t dataOffset = (static_cast<std::uint64_t>(pos_) + a - 1) / a * a;
  st_.dataOffset = dataOffset;
  const std::uint64_t dataSize = dataOffset < b_.size() ? b_.size() - dataOffset : 0;
  for (TensorInfo& t : st_.tensors) {
    const TypeTraits& tr = typeTraits(t.type);
    const std::uint64_t blocks = t.elementCount / tr.blockSize;
    if (blocks > std::numeric_limits<std::uint64_t>::max() / tr.typeSize)
      fail(fmt::format("tensor '{}' ({}, shape {}) is too large to address", t.name, tr.name, shapeString(t.shape)));
    const std::uint64_t nbytes = blocks * tr.typeSize;
    if (t.offset > dataSize || nbytes > dataSize - t.offset)
      fail(fmt::format("tensor '{}' ({}, shape {}) needs bytes [{}, {}) of the data section, which starts at offset "
                       "{} and holds {} bytes: the file is truncated or the tensor's offset is wrong",
                       t.name, tr.name, shapeString(t.shape), t.offset,
                       t.offset > std::numeric_limits<std::uint64_t>::max() - nbytes
                           ? std::string("overflow")
                           : std::to_string(t.offset + nbytes),
                       dataOffset, dataSize));
    if (nbytes) t.data = b_.subspan(static_cast<std::size_t>(dataOffset + t.offset), static_cast<std::size_t>(nbytes));
  }
  std::vector<const TensorInfo*> order;
  for (const TensorInfo& t : st_.tensors)
    if (!t.data.empty()) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& p = *order[k - 1];
    const TensorInfo& c = *order[k];
    if (p.offset + p.data.size() > c.offset)
      fail(fmt::format("tensors '{}' (data bytes [{}, {})) and '{}' (data bytes [{}, {})) overlap", p.name, p.offset,
                       p.offset + p.data.size(), c.name, c.offset, c.offset + c.data.size()));
  }
}

// -------------------------------------------------------------------- file

namespace {

std::shared_ptr<File::State> newState(std::string label) {
  auto st = std::make_shared<File::State>();
  st->label = std::move(label);
  return st;
}

}  // namespace

File File::parse(std::span<const std::byte> bytes, std::string label) {
  auto st = newState(std::move(label));
  st->bytes = bytes;
  Parser(*st).run();
  File f;
  f.state_ = std::move(st);
  return f;
}

File File::parseCopy(std::span<const std::byte> bytes, std::string label) {
  auto st = newState(std::move(label));
  st->owned.assign(bytes.begin(), bytes.end());
  st->bytes = st->owned;
  Parser(*st).run();
  File f;
  f.state_ = std::move(st);
  return f;
}

File File::open(const std::filesystem::path& path) {
  const std::string p = path.string();
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw Error(fmt::format("{}: no such file", p));
  if (std::filesystem::is_directory(status))
    throw Error(fmt::format("{}: is a directory; pass the .gguf file inside it", p));
  if (!std::filesystem::is_regular_file(status))
    throw Error(fmt::format("{}: not a regular file (a device, FIFO or socket cannot be memory-mapped)", p));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open for reading: {}", p, std::strerror(errno)));
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(fmt::format("{}: cannot stat: {}", p, std::strerror(e)));
  }
  auto st = newState(p);
  if (sb.st_size > 0) {
    void* m = ::mmap(nullptr, static_cast<std::size_t>(sb.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw Error(fmt::format("{}: cannot memory-map {} bytes: {}", p, sb.st_size, std::strerror(e)));
    }
    st->map = m;
    st->mapSize = static_cast<std::size_t>(sb.st_size);
    st->bytes = {static_cast<const std::byte*>(m), st->mapSize};
  }
  ::close(fd);
  Parser(*st).run();
  File f;
  f.state_ = std::move(st);
  return f;
}

namespace {
const File::State& emptyState() {
  static const File::State s;
  return s;
}
}  // namespace

#define LINNET_GGUF_STATE (state_ ? *state_ : emptyState())

const std::string& File::label() const { return LINNET_GGUF_STATE.label; }
std::uint32_t File::version() const { return LINNET_GGUF_STATE.version; }
const Metadata& File::metadata() const { return LINNET_GGUF_STATE.metadata; }
const std::vector<TensorInfo>& File::tensors() const { return LINNET_GGUF_STATE.tensors; }
std::uint64_t File::alignment() const { return LINNET_GGUF_STATE.alignment; }
std::uint64_t File::dataOffset() const { return LINNET_GGUF_STATE.dataOffset; }
std::span<const std::byte> File::bytes() const { return LINNET_GGUF_STATE.bytes; }

const TensorInfo* File::find(std::string_view name) const {
  const State& s = LINNET_GGUF_STATE;
  auto it = s.index.find(name);
  return it == s.index.end() ? nullptr : &s.tensors[it->second];
}

const TensorInfo& File::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw Error(fmt::format("{}: no tensor '{}' (the file has {} tensors)", label(), name, tensors().size()));
}

std::string File::architecture() const {
  const std::string* a = metadata().findString("general.architecture");
  return a ? *a : std::string();
}

void File::dequantize(const TensorInfo& t, std::span<float> out) const {
  const TypeTraits& tr = typeTraits(t.type);
  if (!tr.dequantizable)
    throw Error(fmt::format("{}: tensor '{}' has type {}, which this reader cannot dequantize (supported: {})", label(),
                            t.name, tr.name, dequantizableTypes()));
  if (out.size() != t.elementCount)
    throw Error(fmt::format("{}: tensor '{}' has {} elements, but the output holds {}", label(), t.name,
                            t.elementCount, out.size()));
  try {
    gguf::dequantize(t.type, t.data, out);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: tensor '{}': {}", label(), t.name, e.what()));
  }
  // Quantized values are small integers times a block's scale (and minus its
  // minimum): a value that is not finite means a scale that is not.
  if (tr.blockSize > 1)
    for (std::size_t i = 0; i < out.size(); ++i)
      if (!std::isfinite(out[i]))
        throw Error(fmt::format("{}: tensor '{}' has a {} block ({} of {}) whose scale is not finite (value {} at "
                                "element {}): the file is damaged",
                                label(), t.name, tr.name, i / tr.blockSize, out.size() / tr.blockSize, out[i], i));
}

std::vector<float> File::dequantize(const TensorInfo& t) const {
  const TypeTraits& tr = typeTraits(t.type);
  if (!tr.dequantizable)
    throw Error(fmt::format("{}: tensor '{}' has type {}, which this reader cannot dequantize (supported: {})", label(),
                            t.name, tr.name, dequantizableTypes()));
  std::vector<float> out(static_cast<std::size_t>(t.elementCount));
  dequantize(t, out);
  return out;
}

std::vector<std::byte> convertF32(std::span<const float> values, DType dtype) {
  if (!isHandOutDType(dtype))
    throw Error(fmt::format("cannot hand out tensors in {}: only f32, bf16 and f16", linnet::name(dtype)));
  std::vector<std::byte> out(values.size() * linnet::byteSize(dtype));
  if (dtype == DType::F32) {
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = dtype == DType::BF16 ? f32ToBf16(values[i]) : f32ToF16(values[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

std::vector<std::byte> File::read(const TensorInfo& t, DType dtype) const {
  if (isHandOutDType(dtype) && plainDType(t.type) == dtype) return std::vector<std::byte>(t.data.begin(), t.data.end());
  return convertF32(dequantize(t), dtype);
}

}  // namespace linnet::gguf
