#include "nest/compiled.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "artifact/abi.h"
#include "artifact/manifest.h"
#include "nest/nest.h"

#ifndef LINNET_LINNETC
#define LINNET_LINNETC "linnetc"
#endif

namespace linnet::nest {

namespace fs = std::filesystem;

int64_t Buffer::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}
size_t Buffer::bytes() const { return static_cast<size_t>(size()) * sema::byteSize(dtype); }

Buffer Buffer::zeros(Scalar dtype, std::vector<int64_t> shape) {
  Buffer b;
  b.dtype = dtype;
  b.shape = std::move(shape);
  size_t n = std::max<size_t>(b.bytes(), 1);
  // 64-byte alignment: what the compiled code's own allocations use.
  void* p = std::aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) throw Error(fmt::format("out of memory allocating {} bytes", n));
  std::memset(p, 0, n);
  b.data = static_cast<std::byte*>(p);
  b.owner = std::shared_ptr<void>(p, std::free);
  return b;
}

namespace {

using Spec = artifact::TensorSpec;

std::string describe(Scalar dt, const std::vector<int64_t>& shape) {
  return fmt::format("Tensor[{}{}{}]", fmt::join(shape, ", "), shape.empty() ? "" : "; ", sema::name(dt));
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// FNV-1a, 64-bit: a stable key for the cache (std::hash is not stable across builds).
uint64_t fnv(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Every .linnet file under `dir`, in a stable order, with its contents.
std::string sourcesOf(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->path().extension() == ".linnet" || it->path().filename() == "nest.toml" ||
        it->path().filename() == "linnet.toml")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& f : files) out += f.lexically_relative(dir).string() + "\n" + readFile(f) + "\n";
  return out;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

struct CompiledModel::Artifact {
  fs::path dir;
  void* library = nullptr;
  void (*fn)(void**) = nullptr;
  std::vector<Spec> inputs, outputs, params, states;
  std::vector<const Buffer*> paramBuffers;  // in the manifest's order
  ~Artifact() {
    if (library) dlclose(library);
  }
};

CompiledModel::CompiledModel(CompileSettings settings, std::vector<NamedBuffer> params)
    : settings_(std::move(settings)) {
  for (auto& p : params) params_.emplace(p.path, std::move(p.buffer));
  if (settings_.linnetc.empty()) settings_.linnetc = std::getenv("LINNETC") ? std::getenv("LINNETC") : LINNET_LINNETC;
  if (settings_.cacheDir.empty()) {
    if (const char* c = std::getenv("LINNET_CACHE")) settings_.cacheDir = c;
    else if (const char* h = std::getenv("HOME")) settings_.cacheDir = fs::path(h) / ".cache" / "linnet";
    else settings_.cacheDir = fs::temp_directory_path() / "linnet-cache";
  }
  // The key covers the compiler, the package's and the stdlib's sources, and the generics.
  std::string key = settings_.linnetc + "\n";
  std::error_code ec;
  auto stamp = fs::last_write_time(settings_.linnetc, ec);
  if (!ec) key += std::to_string(stamp.time_since_epoch().count());
  key += sourcesOf(settings_.package) + sourcesOf(settings_.stdlib);
  for (const auto& s : settings_.sets) key += "\nset " + s;
  sourceHash_ = fmt::format("{:016x}", fnv(key));
}

CompiledModel::~CompiledModel() = default;

void CompiledModel::resetState() {
  for (Buffer& s : states_) std::memset(s.data, 0, s.bytes());
}

fs::path CompiledModel::artifactDir(const std::string& entry, const std::vector<reference::Tensor>& args,
                                    const std::map<std::string, int64_t>& generics) const {
  std::string key = sourceHash_ + "|" + entry;
  for (const auto& a : args) key += "|" + describe(a.dtype, a.shape) + (a.weak ? "weak" : "");
  for (const auto& [k, v] : generics) key += fmt::format("|{}={}", k, v);
  return settings_.cacheDir / fmt::format("{}-{:016x}", entry, fnv(key));
}

CompiledModel::Artifact& CompiledModel::artifactFor(const std::string& entry,
                                                    const std::vector<reference::Tensor>& args,
                                                    const std::map<std::string, int64_t>& generics) {
  fs::path dir = artifactDir(entry, args, generics);
  std::string key = dir.string();
  if (auto it = loaded_.find(key); it != loaded_.end()) return *it->second;

  if (!fs::exists(dir / "manifest.json")) {
    // Compile into a private folder, then rename: a concurrent run never sees half an artifact.
    fs::create_directories(settings_.cacheDir);
    fs::path tmp = settings_.cacheDir / fmt::format(".tmp-{}-{}", ::getpid(), dir.filename().string());
    std::string cmd = fmt::format("{} build {} --stdlib {} --entry {} -o {}", quote(settings_.linnetc),
                                  quote(settings_.package), quote(settings_.stdlib), quote(entry), quote(tmp.string()));
    for (const auto& s : settings_.sets) cmd += " --set " + quote(s);
    for (const auto& [k, v] : generics) cmd += fmt::format(" --generic {}={}", k, v);
    for (const auto& a : args) {
      std::string dt = !a.weak ? sema::name(a.dtype) : a.isFloat() ? "float" : "int";
      cmd += fmt::format(" --arg {}", quote(fmt::format("{}:{}", dt, fmt::join(a.shape, "x"))));
    }
    fs::path log = settings_.cacheDir / fmt::format(".log-{}", ::getpid());
    if (settings_.progress) fmt::print(stderr, "linnet: compiling `{}` for cpu ...\n", entry);
    int rc = std::system((cmd + " > " + quote(log.string()) + " 2>&1").c_str());
    std::string output = readFile(log);
    fs::remove(log);
    if (rc != 0) {
      fs::remove_all(tmp);
      throw Error(fmt::format("entry `{}` could not be compiled for cpu:\n{}", entry, output));
    }
    std::error_code ec;
    fs::rename(tmp, dir, ec);
    if (ec) fs::remove_all(tmp);  // another process got there first
  }

  auto art = std::make_unique<Artifact>();
  art->dir = dir;
  try {
    artifact::Manifest m = artifact::read(dir);
    art->params = m.params;
    art->states = m.states;
    const artifact::Entry* e = m.entry(entry);
    if (!e) throw Error(fmt::format("{}: the artifact has no entry `{}`", dir.string(), entry));
    art->inputs = e->inputs;
    art->outputs = e->outputs;
    std::string lib = (dir / m.library).string();
    art->library = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!art->library) throw Error(fmt::format("{}: cannot load: {}", lib, dlerror()));
    // Argument-independent tensors (hoisted constants) are computed once, now.
    if (!m.init.empty()) {
      auto init = reinterpret_cast<void (*)()>(dlsym(art->library, m.init.c_str()));
      if (!init) throw Error(fmt::format("{}: no symbol {}", lib, m.init));
      init();
    }
    art->fn = reinterpret_cast<void (*)(void**)>(dlsym(art->library, e->symbol.c_str()));
    if (!art->fn) throw Error(fmt::format("{}: no symbol {}", lib, e->symbol));
  } catch (const artifact::ManifestError& e) {
    throw Error(e.what());
  }
  // The artifact's params must be this model's, and its states the same
  // for every entry (they live here, between calls).
  for (const Spec& p : art->params) art->paramBuffers.push_back(&param(p.name, p.dtype, p.shape, dir));
  if (stateNames_.empty() && states_.empty()) {
    for (const Spec& st : art->states) {
      stateNames_.push_back(st.name);
      states_.push_back(Buffer::zeros(st.dtype, st.shape));
    }
  }
  bool sameStates = art->states.size() == states_.size();
  for (size_t k = 0; sameStates && k < states_.size(); ++k)
    sameStates = art->states[k].name == stateNames_[k] && art->states[k].shape == states_[k].shape &&
                 art->states[k].dtype == states_[k].dtype;
  if (!sameStates)
    throw Error(fmt::format("{}: the artifact's state members differ from the other entries' (delete the "
                            "cache folder {} to rebuild them all)",
                            dir.string(), settings_.cacheDir.string()));
  return *loaded_.emplace(key, std::move(art)).first->second;
}

const Buffer& CompiledModel::param(const std::string& path, Scalar dtype, const std::vector<int64_t>& shape,
                                   const fs::path& dir) {
  auto it = params_.find(path);
  if (it == params_.end()) {
    // `layers.*.x` of shape [L, ...]: layer k's `layers.k.x` at slot k.
    auto star = path.find(".*.");
    if (star == std::string::npos || shape.empty())
      throw Error(fmt::format("{}: the artifact reads a param `{}` that the model does not have", dir.string(), path));
    Buffer stackedBuffer = Buffer::zeros(dtype, shape);
    size_t slot = stackedBuffer.bytes() / static_cast<size_t>(std::max<int64_t>(shape[0], 1));
    for (int64_t k = 0; k < shape[0]; ++k) {
      std::string one = path.substr(0, star) + "." + std::to_string(k) + path.substr(star + 2);
      auto el = params_.find(one);
      if (el == params_.end() || el->second.bytes() != slot || el->second.dtype != dtype)
        throw Error(fmt::format("{}: cannot stack `{}`: `{}` is missing or has another shape", dir.string(), path, one));
      std::memcpy(stackedBuffer.data + k * slot, el->second.data, slot);
    }
    // The per-layer buffers (and the mapping or copy behind them) are no longer needed.
    for (int64_t k = 0; k < shape[0]; ++k)
      params_.erase(path.substr(0, star) + "." + std::to_string(k) + path.substr(star + 2));
    it = params_.emplace(path, std::move(stackedBuffer)).first;
  }
  if (it->second.shape != shape || it->second.dtype != dtype)
    throw Error(fmt::format("{}: param `{}` is {} in the artifact, {} in the model", dir.string(), path,
                            describe(dtype, shape), describe(it->second.dtype, it->second.shape)));
  return it->second;
}

std::vector<reference::Tensor> CompiledModel::call(const std::string& entry,
                                                   const std::vector<reference::Tensor>& args,
                                                   const std::map<std::string, int64_t>& generics) {
  Artifact& art = artifactFor(entry, args, generics);
  if (args.size() != art.inputs.size())
    throw Error(fmt::format("entry `{}` takes {} arguments, {} were given", entry, art.inputs.size(), args.size()));
  std::vector<Buffer> inputs, outputs;
  std::vector<std::string> problems;
  for (size_t k = 0; k < args.size(); ++k) {
    const Spec& want = art.inputs[k];
    if (args[k].shape != want.shape || (args[k].dtype != want.dtype && !args[k].weak))
      problems.push_back(fmt::format("argument `{}` must be {}, but it is {}", want.name,
                                     describe(want.dtype, want.shape), args[k].describe()));
  }
  if (!problems.empty()) throw Error(fmt::format("entry `{}`: {}", entry, fmt::join(problems, "; ")));
  for (size_t k = 0; k < args.size(); ++k) {
    const Spec& want = art.inputs[k];
    Buffer b = Buffer::zeros(want.dtype, want.shape);
    reference::Tensor t = args[k].dtype == want.dtype ? args[k] : reference::cast(args[k], want.dtype);
    std::vector<std::byte> bytes = tensorToBytes(t);
    if (!bytes.empty()) std::memcpy(b.data, bytes.data(), bytes.size());
    inputs.push_back(std::move(b));
  }
  for (const Spec& s : art.outputs) outputs.push_back(Buffer::zeros(s.dtype, s.shape));

  std::vector<std::vector<int64_t>> descriptors;
  for (const Buffer& b : inputs) descriptors.push_back(artifact::descriptor(b.data, b.shape));
  for (const Buffer* b : art.paramBuffers) descriptors.push_back(artifact::descriptor(b->data, b->shape));
  for (const Buffer& b : states_) descriptors.push_back(artifact::descriptor(b.data, b.shape));
  for (const Buffer& b : outputs) descriptors.push_back(artifact::descriptor(b.data, b.shape));
  std::vector<void*> pointers;
  for (auto& d : descriptors) pointers.push_back(d.data());
  art.fn(pointers.data());

  std::vector<reference::Tensor> out;
  for (const Buffer& b : outputs)
    out.push_back(tensorFromBytes(b.dtype, b.shape, std::span<const std::byte>(b.data, b.bytes())));
  return out;
}

}  // namespace linnet::nest
