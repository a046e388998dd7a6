#include "artifact/manifest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <optional>
#include <tuple>
#include <vector>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/hash.h"

namespace linnet::artifact {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const Entry* Manifest::entry(std::string_view name) const {
  for (const Entry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

const Signature* Manifest::signature(std::string_view name) const {
  for (const Signature& s : signatures)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<int64_t> TensorSpec::storedShape() const {
  std::vector<int64_t> out = shape;
  if (storage && !out.empty()) out.back() = storageRowBytes(*storage, out.back()).value_or(0);
  return out;
}

std::size_t TensorSpec::byteCount() const {
  std::size_t n = storage ? 1 : linnet::byteSize(dtype);
  for (int64_t d : storedShape()) n *= static_cast<std::size_t>(d);
  return n;
}

std::string describe(DType dtype, const std::vector<int64_t>& shape) {
  return fmt::format("Tensor[{}{}{}]", fmt::join(shape, ", "), shape.empty() ? "" : "; ", linnet::name(dtype));
}

namespace {

Json specJson(const TensorSpec& s) {
  Json j = {{"name", s.name}, {"dtype", linnet::name(s.dtype)}, {"shape", s.shape}};
  if (s.storage) j["storage"] = std::string(linnet::name(*s.storage));
  return j;
}

Json specsJson(const std::vector<TensorSpec>& specs) {
  Json out = Json::array();
  for (const auto& s : specs) out.push_back(specJson(s));
  return out;
}

TensorSpec specFrom(const Json& j) {
  auto name = j.at("dtype").get<std::string>();
  auto dt = dtypeNamed(name);
  if (!dt) throw ManifestError(fmt::format("unknown dtype `{}`", name));
  TensorSpec spec{j.at("name").get<std::string>(), *dt, j.at("shape").get<std::vector<int64_t>>()};
  if (j.contains("storage")) {
    auto storage = storageNamed(j.at("storage").get<std::string>());
    if (!storage) throw ManifestError(fmt::format("unknown storage `{}`", j.at("storage").get<std::string>()));
    spec.storage = *storage;
  }
  return spec;
}

std::vector<TensorSpec> specsFrom(const Json& j) {
  std::vector<TensorSpec> out;
  for (const auto& s : j) out.push_back(specFrom(s));
  return out;
}

// The schema version a manifest says it has; 1 for the unversioned first format.
int schemaOf(const Json& m) {
  std::string format = m.value("format", "");
  if (format == "linnet-artifact-1") return 1;
  if (format != kFormat) return -1;
  return m.at("schema").get<int>();
}

}  // namespace

std::string serialize(const Manifest& m) {
  Json j;
  j["format"] = kFormat;
  j["schema"] = kSchemaVersion;
  j["package"] = m.package;
  j["target"] = m.target;
  j["library"] = m.library;
  j["library_bytes"] = m.libraryBytes;
  j["library_fnv1a"] = m.libraryHash;
  j["init"] = m.init;
  Json g = Json::object();
  for (const auto& [k, v] : m.generics) {
    if (auto* n = std::get_if<int64_t>(&v)) g[k] = *n;
    else g[k] = std::get<std::string>(v);
  }
  j["generics"] = g;
  j["numerics"] = m.numerics;
  j["params"] = specsJson(m.params);
  j["states"] = specsJson(m.states);
  j["signatures"] = Json::array();
  for (const auto& s : m.signatures) j["signatures"].push_back({{"name", s.name}, {"params", s.params}});
  j["entries"] = Json::array();
  for (const auto& e : m.entries) {
    Json x;
    x["name"] = e.name;
    x["symbol"] = e.symbol;
    x["generics"] = e.generics;
    x["inputs"] = specsJson(e.inputs);
    x["outputs"] = specsJson(e.outputs);
    j["entries"].push_back(x);
  }
  j["skipped"] = Json::array();
  for (const auto& s : m.skipped) j["skipped"].push_back({{"name", s.name}, {"reason", s.reason}});
  j["build_seconds"] = m.buildSeconds;
  j["kernels"] = Json::array();
  for (const auto& k : m.kernels)
    j["kernels"].push_back({{"name", k.name}, {"block", k.block}, {"registers", k.registers},
                            {"shared_bytes", k.sharedBytes}, {"spill_bytes", k.spillBytes},
                            {"family", k.family}});
  return j.dump(2) + "\n";
}

Manifest parse(std::string_view text, const std::string& where) {
  Manifest m;
  try {
    Json j = Json::parse(text);
    int schema = schemaOf(j);
    if (schema < 0)
      throw ManifestError(fmt::format("{}: not a Linnet artifact manifest (format {})", where,
                                      j.contains("format") ? j["format"].dump() : "missing"));
    if (schema != kSchemaVersion)
      throw ManifestError(fmt::format("{}: an artifact of schema {}, but this build reads schema {}: rebuild it "
                                      "with this linnetc (delete the folder; a cached one is rebuilt on next use)",
                                      where, schema, kSchemaVersion));
    m.package = j.at("package").get<std::string>();
    m.target = j.at("target").get<std::string>();
    m.library = j.at("library").get<std::string>();
    m.libraryBytes = j.at("library_bytes").get<int64_t>();
    m.libraryHash = j.at("library_fnv1a").get<std::string>();
    m.init = j.at("init").get<std::string>();
    m.numerics = j.at("numerics").get<std::string>();
    if (m.numerics != "exact" && m.numerics != "fast")
      throw ManifestError(fmt::format("unknown numerics `{}`", m.numerics));
    for (const auto& [k, v] : j.at("generics").items()) {
      if (v.is_number_integer()) m.generics.emplace_back(k, v.get<int64_t>());
      else m.generics.emplace_back(k, v.get<std::string>());
    }
    m.params = specsFrom(j.at("params"));
    m.states = specsFrom(j.at("states"));
    for (const auto& s : j.at("signatures"))
      m.signatures.push_back({s.at("name").get<std::string>(), s.at("params").get<std::vector<std::string>>()});
    for (const auto& x : j.at("entries")) {
      Entry e;
      e.name = x.at("name").get<std::string>();
      e.symbol = x.at("symbol").get<std::string>();
      e.generics = x.at("generics").get<std::map<std::string, int64_t>>();
      e.inputs = specsFrom(x.at("inputs"));
      e.outputs = specsFrom(x.at("outputs"));
      m.entries.push_back(std::move(e));
    }
    for (const auto& s : j.at("skipped"))
      m.skipped.push_back({s.at("name").get<std::string>(), s.at("reason").get<std::string>()});
    m.buildSeconds = j.value("build_seconds", 0.0);
    if (j.contains("kernels"))
      for (const auto& k : j.at("kernels"))
        m.kernels.push_back({k.at("name").get<std::string>(), k.at("block").get<std::vector<int64_t>>(),
                             k.at("registers").get<int64_t>(), k.at("shared_bytes").get<int64_t>(),
                             k.at("spill_bytes").get<int64_t>(), k.value("family", std::string())});
  } catch (const nlohmann::json::exception& e) {
    throw ManifestError(fmt::format("{}: bad manifest: {} (delete the folder to rebuild it)", where, e.what()));
  } catch (const ManifestError& e) {
    if (std::string_view(e.what()).starts_with(where)) throw;
    throw ManifestError(fmt::format("{}: {} (delete the folder to rebuild it)", where, e.what()));
  }
  return m;
}

Manifest read(const fs::path& dir) {
  fs::path file = dir / kManifestFile;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ManifestError(fmt::format("{}: cannot read the artifact's manifest", file.string()));
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), file.string());
}

namespace {

// (size, FNV-1a as 16 hex digits) of a file; nullopt when it cannot be read.
std::optional<std::pair<int64_t, std::string>> fingerprint(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::uint64_t h = kFnvOffset;
  int64_t bytes = 0;
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    std::streamsize n = in.gcount();
    h = fnv1a(std::string_view(buffer.data(), static_cast<size_t>(n)), h);
    bytes += n;
  }
  if (in.bad()) return std::nullopt;
  return std::pair(bytes, fmt::format("{:016x}", h));
}

}  // namespace

std::optional<std::string> checkLibrary(const Manifest& m, const fs::path& dir) {
  if (m.library.empty()) return std::nullopt;
  fs::path file = dir / m.library;
  auto print = fingerprint(file);
  if (!print) return fmt::format("{}: the compiled code is missing or unreadable", file.string());
  if (print->first != m.libraryBytes)
    return fmt::format("{}: {} bytes, but the manifest says {} (a truncated or replaced file)", file.string(),
                       print->first, m.libraryBytes);
  if (print->second != m.libraryHash)
    return fmt::format("{}: checksum {}, but the manifest says {} (an altered file)", file.string(), print->second,
                       m.libraryHash);
  return std::nullopt;
}

void requireLibrary(const Manifest& m, const fs::path& dir) {
  if (auto damage = checkLibrary(m, dir))
    throw ManifestError(fmt::format("{}; delete {} (a cached artifact is rebuilt on next use)", *damage, dir.string()));
}

void recordLibrary(Manifest& manifest, const fs::path& dir) {
  if (manifest.library.empty()) return;
  auto print = fingerprint(dir / manifest.library);
  if (!print) throw ManifestError(fmt::format("{}: cannot read the compiled code", (dir / manifest.library).string()));
  std::tie(manifest.libraryBytes, manifest.libraryHash) = *print;
}

void write(const Manifest& given, const fs::path& dir) {
  Manifest manifest = given;
  recordLibrary(manifest, dir);
  fs::path file = dir / kManifestFile;
  fs::path tmp = dir / (std::string(kManifestFile) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    out << serialize(manifest);
    if (!out) throw ManifestError(fmt::format("{}: cannot write the manifest", tmp.string()));
  }
  fs::rename(tmp, file);
}

}  // namespace linnet::artifact
