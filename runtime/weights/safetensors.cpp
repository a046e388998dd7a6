#include "weights/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "weights/error.h"
#include "weights/json_util.h"
#include "weights/mapped_file.h"
#include "weights/suggest.h"

namespace linnet::weights {

namespace fs = std::filesystem;

std::int64_t TensorInfo::elementCount() const { return weights::elementCount(shape).value_or(-1); }

namespace {

// The reference implementation refuses headers above 100 MB as well.
constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

std::string_view asText(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Why a file that fails the header-length check might be something else.
std::string guessOtherFormat(std::span<const std::byte> file) {
  std::string_view t = asText(file.first(std::min<std::size_t>(file.size(), 64)));
  if (t.starts_with("version https://git-lfs"))
    return " It is a Git LFS pointer, not the data: fetch the real file (git lfs pull).";
  if (t.starts_with("GGUF")) return " It is a GGUF file, not safetensors: load it with the GGUF reader.";
  if (t.starts_with("\x93NUMPY")) return " It is a NumPy .npy file, not safetensors.";
  if (t.starts_with("PK\x03\x04"))
    return " It is a zip archive (a PyTorch .bin/.pt checkpoint?): convert it to safetensors first.";
  auto first = t.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && t[first] == '{')
    return " It looks like JSON: a sharded checkpoint's index must be named *.index.json.";
  return "";
}

std::uint64_t readLe64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

struct Parsed {
  TensorInfo info;
  std::uint64_t begin = 0, end = 0;
};

Parsed parseEntry(const std::string& name, const nlohmann::json& entry, std::uint64_t dataSize,
                  std::string_view label) {
  auto fail = [&](const std::string& what) {
    return Error(fmt::format("{}: tensor '{}': {}", label, name, what));
  };
  if (!entry.is_object())
    throw fail(fmt::format("header entry must be an object with dtype, shape and data_offsets, got {}",
                           jsonSnippet(entry)));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key)) throw fail(fmt::format("header entry has no \"{}\"", key));

  Parsed p;
  p.info.name = name;
  const auto& dt = entry["dtype"];
  if (!dt.is_string()) throw fail(fmt::format("dtype must be a string, got {}", jsonSnippet(dt)));
  auto dtype = parseSafetensorsDType(dt.get<std::string>());
  if (!dtype)
    throw fail(fmt::format("unsupported dtype \"{}\"; Linnet reads {}. Convert the tensor (e.g. to F32 or BF16) "
                           "when exporting the checkpoint",
                           dt.get<std::string>(), supportedSafetensorsDTypes()));
  p.info.dtype = *dtype;

  const auto& shape = entry["shape"];
  if (!shape.is_array()) throw fail(fmt::format("shape must be an array of integers, got {}", jsonSnippet(shape)));
  for (const auto& d : shape) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw fail(fmt::format("shape {} has an entry that is not a non-negative integer ({})", jsonSnippet(shape),
                             jsonSnippet(d)));
    p.info.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
  }

  const auto& off = entry["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw fail(fmt::format("data_offsets must be [begin, end] with non-negative integers, got {}", jsonSnippet(off)));
  p.begin = off[0].get<std::uint64_t>();
  p.end = off[1].get<std::uint64_t>();
  if (p.begin > p.end) throw fail(fmt::format("data_offsets [{}, {}] end before they begin", p.begin, p.end));

  auto count = elementCount(p.info.shape);
  std::uint64_t size = linnet::byteSize(p.info.dtype);
  if (!count || static_cast<std::uint64_t>(*count) > std::numeric_limits<std::uint64_t>::max() / size)
    throw fail(fmt::format("shape {} has too many elements to address", shapeString(p.info.shape)));
  std::uint64_t nbytes = static_cast<std::uint64_t>(*count) * size;
  if (p.end > dataSize)
    throw fail(fmt::format("data_offsets [{}, {}] run past the end of the data section ({} bytes); the file is "
                           "truncated (re-download or re-export it)",
                           p.begin, p.end, dataSize));
  if (p.end - p.begin != nbytes)
    throw fail(fmt::format("data_offsets [{}, {}] span {} bytes, but shape {} x {} needs {} bytes", p.begin, p.end,
                           p.end - p.begin, shapeString(p.info.shape), safetensorsName(p.info.dtype), nbytes));
  return p;
}

}  // namespace

SafetensorsHeader parseSafetensors(std::span<const std::byte> file, std::string_view label) {
  if (file.empty())
    throw Error(fmt::format("{}: file is empty; a safetensors file starts with an 8-byte header length "
                            "(re-download or re-export it)",
                            label));
  if (file.size() < 8)
    throw Error(fmt::format("{}: file is {} bytes, too short for the 8-byte header length; it is truncated or "
                            "not a safetensors file.{}",
                            label, file.size(), guessOtherFormat(file)));
  std::uint64_t headerLen = readLe64(file.data());
  std::uint64_t available = file.size() - 8;
  if (headerLen > kMaxSafetensorsHeader || headerLen > available)
    throw Error(fmt::format("{}: header length {} {} ({} bytes follow the length field); the file is truncated or "
                            "not a safetensors file.{}",
                            label, headerLen, headerLen > kMaxSafetensorsHeader ? "exceeds the 100 MB limit" : "is past the end",
                            available, guessOtherFormat(file)));
  if (headerLen < 2)
    throw Error(fmt::format("{}: header length {} is too small for a JSON object; the file is corrupt", label,
                            headerLen));
  std::string_view headerText = asText(file.subspan(8, headerLen));
  auto doc = parseJsonStrict(headerText, fmt::format("{}: header", label));
  if (!doc.is_object())
    throw Error(fmt::format("{}: header must be a JSON object of tensor entries, got {}", label, jsonSnippet(doc)));

  std::uint64_t dataStart = 8 + headerLen;
  std::uint64_t dataSize = file.size() - dataStart;
  SafetensorsHeader out;
  std::vector<Parsed> entries;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object())
        throw Error(fmt::format("{}: __metadata__ must be an object of strings, got {}", label, jsonSnippet(it.value())));
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          throw Error(fmt::format("{}: __metadata__ entry \"{}\" must be a string, got {}", label, m.key(),
                                  jsonSnippet(m.value())));
        out.metadata.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    entries.push_back(parseEntry(it.key(), it.value(), dataSize, label));
  }

  // Overlaps: sort by start; an entry that starts before the furthest end
  // seen so far shares bytes with the entry owning that end.
  std::vector<const Parsed*> order;
  for (const auto& e : entries)
    if (e.end > e.begin) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Parsed* a, const Parsed* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  const Parsed* furthest = nullptr;
  for (const Parsed* e : order) {
    if (furthest && e->begin < furthest->end)
      throw Error(fmt::format("{}: tensors '{}' (bytes [{}, {})) and '{}' (bytes [{}, {})) overlap; the header is "
                              "corrupt (re-export the checkpoint)",
                              label, furthest->info.name, furthest->begin, furthest->end, e->info.name, e->begin,
                              e->end));
    if (!furthest || e->end > furthest->end) furthest = e;
  }

  out.tensors.reserve(entries.size());
  for (auto& e : entries) {
    e.info.data = file.subspan(dataStart + e.begin, e.end - e.begin);
    out.tensors.push_back(std::move(e.info));
  }
  std::sort(out.tensors.begin(), out.tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return out;
}

// ---------------------------------------------------------------------------

struct Checkpoint::State {
  fs::path source;
  bool indexed = false;
  std::vector<fs::path> files;
  std::vector<MappedFile> maps;
  std::vector<std::map<std::string, std::string>> metadata;
  std::vector<TensorInfo> tensors;  // sorted by name
};

namespace {

std::string shardLabel(const fs::path& shard, std::size_t i, std::size_t n, const fs::path* index) {
  if (n <= 1 && !index) return shard.string();
  if (index)
    return fmt::format("{} (shard {} of {} in {})", shard.string(), i + 1, n, index->filename().string());
  return fmt::format("{} (shard {} of {})", shard.string(), i + 1, n);
}

// Maps and parses each file, then merges; a name in two files is an error.
void loadShards(Checkpoint::State& st, const fs::path* index) {
  std::size_t n = st.files.size();
  for (std::size_t i = 0; i < n; ++i) {
    std::string label = shardLabel(st.files[i], i, n, index);
    MappedFile m;
    try {
      m = MappedFile::open(st.files[i]);
    } catch (const Error& e) {
      if (!index) throw;
      throw Error(fmt::format("{}: shard {} of {} named by its weight_map cannot be opened: {}", index->string(),
                              i + 1, n, e.what()));
    }
    auto header = parseSafetensors(m.bytes(), label);
    for (auto& t : header.tensors) {
      t.file = i;
      st.tensors.push_back(std::move(t));
    }
    st.metadata.push_back(std::move(header.metadata));
    st.maps.push_back(std::move(m));
  }
  std::stable_sort(st.tensors.begin(), st.tensors.end(),
                   [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < st.tensors.size(); ++i)
    if (st.tensors[i].name == st.tensors[i - 1].name)
      throw Error(fmt::format("tensor '{}' appears in two shards, {} and {}; a checkpoint must hold each tensor "
                              "once (drop one of the files, or mixed checkpoints were put together)",
                              st.tensors[i].name, st.files[st.tensors[i - 1].file].string(),
                              st.files[st.tensors[i].file].string()));
}

std::string readSmallFile(const fs::path& p) {
  MappedFile m = MappedFile::open(p);
  return std::string(asText(m.bytes()));
}

}  // namespace

Checkpoint Checkpoint::openFiles(const std::vector<fs::path>& shards) {
  if (shards.empty()) throw Error("no checkpoint files given; pass one .safetensors file, several shards, or an index");
  for (std::size_t i = 0; i < shards.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (shards[i] == shards[j] || fs::equivalent(shards[i], shards[j], ec))
        throw Error(fmt::format("{}: the same file is given twice as a shard (as {} and {}); pass each shard once",
                                shards[i].string(), shards[j].string(), shards[i].string()));
    }
  auto st = std::make_shared<State>();
  st->source = shards.front();
  st->files = shards;
  loadShards(*st, nullptr);
  Checkpoint c;
  c.state_ = std::move(st);
  return c;
}

Checkpoint Checkpoint::open(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> candidates;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      std::string f = e.path().filename().string();
      if (f.ends_with(".index.json") || f.ends_with(".safetensors")) candidates.push_back(f);
    }
    std::sort(candidates.begin(), candidates.end());
    auto index = std::find_if(candidates.begin(), candidates.end(),
                              [](const std::string& f) { return f.ends_with(".index.json"); });
    std::string hint;
    if (index != candidates.end())
      hint = fmt::format("pass its index, {}", (path / *index).string());
    else if (!candidates.empty())
      hint = fmt::format("pass one of its files, e.g. {}", (path / candidates.front()).string());
    else
      hint = "it holds no .safetensors or .index.json file";
    throw Error(fmt::format("{}: is a directory, not a checkpoint file; {}", path.string(), hint));
  }
  std::string name = path.filename().string();
  if (!name.ends_with(".json")) return openFiles({path});

  // An index: {"metadata": {...}, "weight_map": {tensor: shard file}}.
  std::string label = path.string();
  auto doc = parseJsonStrict(readSmallFile(path), label);
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object())
    throw Error(fmt::format("{}: not a safetensors index: expected an object with a \"weight_map\" object mapping "
                            "tensor names to shard files",
                            label));
  const auto& wm = doc["weight_map"];
  if (wm.empty()) throw Error(fmt::format("{}: weight_map is empty; the index names no tensors", label));
  std::vector<std::string> shardNames;
  std::map<std::string, std::string> wanted;  // tensor -> shard file name as written
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    if (!it.value().is_string() || it.value().get<std::string>().empty())
      throw Error(fmt::format("{}: weight_map[\"{}\"] must be a shard file name, got {}", label, it.key(),
                              jsonSnippet(it.value())));
    std::string shard = it.value().get<std::string>();
    if (fs::path(shard).is_absolute())
      throw Error(fmt::format("{}: weight_map[\"{}\"] names the absolute path {}; shard names are relative to the "
                              "index's folder",
                              label, it.key(), shard));
    const fs::path normal = fs::path(shard).lexically_normal();
    if (normal.empty() || *normal.begin() == ".." || normal == ".")
      throw Error(fmt::format("{}: weight_map[\"{}\"] names {}, which leaves the index's folder; shard names must "
                              "be files in (or below) the folder of the index",
                              label, it.key(), shard));
    wanted.emplace(it.key(), shard);
    if (std::find(shardNames.begin(), shardNames.end(), shard) == shardNames.end()) shardNames.push_back(shard);
  }
  std::sort(shardNames.begin(), shardNames.end());

  auto st = std::make_shared<State>();
  st->source = path;
  st->indexed = true;
  for (const auto& s : shardNames) st->files.push_back(path.parent_path() / s);
  loadShards(*st, &path);

  // The index and the shards must agree, both ways.
  std::map<std::string, std::size_t> shardIndex;
  for (std::size_t i = 0; i < shardNames.size(); ++i) shardIndex[shardNames[i]] = i;
  std::map<std::string_view, const TensorInfo*> have;
  for (const auto& t : st->tensors) have.emplace(t.name, &t);
  for (const auto& [tensor, shard] : wanted) {
    auto h = have.find(tensor);
    if (h == have.end())
      throw Error(fmt::format("{}: weight_map says tensor '{}' is in {}, but no shard holds it; the index and the "
                              "shards are from different exports (re-download them together)",
                              label, tensor, shard));
    if (h->second->file != shardIndex[shard])
      throw Error(fmt::format("{}: weight_map says tensor '{}' is in {}, but it is in {}; the index and the shards "
                              "are from different exports (re-download them together)",
                              label, tensor, shard, shardNames[h->second->file]));
  }
  for (const auto& t : st->tensors)
    if (!wanted.count(t.name))
      throw Error(fmt::format("{}: shard {} holds tensor '{}', which the weight_map does not list; the index and "
                              "the shards are from different exports (re-download them together, or add it to "
                              "the weight_map)",
                              label, shardNames[t.file], t.name));
  Checkpoint c;
  c.state_ = std::move(st);
  return c;
}

namespace {
const std::vector<TensorInfo> kNoTensors;
const std::vector<fs::path> kNoFiles;
}  // namespace

const std::vector<TensorInfo>& Checkpoint::tensors() const { return state_ ? state_->tensors : kNoTensors; }

const std::vector<fs::path>& Checkpoint::files() const { return state_ ? state_->files : kNoFiles; }

const std::map<std::string, std::string>& Checkpoint::metadata(std::size_t file) const {
  if (!state_ || file >= state_->metadata.size())
    throw Error(fmt::format("checkpoint {}: no file number {}", description(), file));
  return state_->metadata[file];
}

const TensorInfo* Checkpoint::find(std::string_view name) const {
  const auto& ts = tensors();
  auto it = std::lower_bound(ts.begin(), ts.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != ts.end() && it->name == name ? &*it : nullptr;
}

const TensorInfo& Checkpoint::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  std::vector<std::string_view> names;
  for (const auto& t : tensors()) names.push_back(t.name);
  std::string near = closestName(name, names);
  throw Error(fmt::format("checkpoint {}: no tensor '{}'{}", description(), name,
                          near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near)));
}

std::string Checkpoint::description() const {
  if (!description_.empty()) return description_;
  if (!state_) return "(empty)";
  if (state_->indexed)
    return fmt::format("{} ({} shard{})", state_->source.string(), state_->files.size(),
                       state_->files.size() == 1 ? "" : "s");
  if (state_->files.size() == 1) return state_->source.string();
  return fmt::format("{} and {} more shard{}", state_->source.string(), state_->files.size() - 1,
                     state_->files.size() == 2 ? "" : "s");
}

}  // namespace linnet::weights
