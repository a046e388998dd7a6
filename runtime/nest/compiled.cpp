#include "nest/compiled.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <thread>

#include "artifact/manifest.h"
#include "nest/artifact_cache.h"
#include "nest/memory.h"
#include "nest/params.h"

namespace linnet::nest {

namespace {

namespace fs = std::filesystem;
using artifact::TensorSpec;

// The per-layer paths a manifest param holds: `layers.*.x` of shape
// [L, ...] holds `layers.0.x` ... `layers.{L-1}.x`, each in a slot of
// layerBytes; any other param is its own path, one slot.
std::vector<std::string> layerPaths(const TensorSpec& spec) {
  size_t star = spec.name.find(".*.");
  if (star == std::string::npos) return {spec.name};
  std::vector<std::string> out;
  for (int64_t k = 0; k < spec.shape.at(0); ++k)
    out.push_back(spec.name.substr(0, star) + "." + std::to_string(k) + spec.name.substr(star + 2));
  return out;
}
size_t layerBytes(const TensorSpec& spec) {
  return spec.byteCount() / std::max<size_t>(layerPaths(spec).size(), 1);
}

// A gradient's output names for param `path`: its own, or a low-rank
// gradient's two (autodiff/low_rank.h).
std::vector<std::string> gradientNames(const std::string& path, const LowRank& lowRank) {
  if (lowRank.rank == 0) return {path};
  return lowRankNames(path);
}

// The factor a low-rank gradient artifact takes as input `want`.
const Tensor& factorInput(const LowRank& lowRank, const TensorSpec& want) {
  auto it = lowRank.factors.find(want.name);
  if (it == lowRank.factors.end())
    throw Error(fmt::format("the gradient takes `{}` ({}), which was not given", want.name,
                            artifact::describe(want.dtype, want.shape)));
  if (it->second.dtype != want.dtype || it->second.shape != want.shape)
    throw Error(fmt::format("LoRA factor `{}` is {}, but the gradient takes {}", want.name,
                            it->second.describe(), artifact::describe(want.dtype, want.shape)));
  return it->second;
}

// The per-layer params of manifest params: `layers.*.x` of shape [L, ...]
// is `layers.0.x` ... `layers.{L-1}.x`. Listed layer by layer, as the model
// declares them (a stacked array's members are consecutive in the manifest).
std::vector<ParamInfo> perLayer(const std::vector<TensorSpec>& params) {
  std::vector<ParamInfo> out;
  for (size_t i = 0; i < params.size();) {
    size_t star = params[i].name.find(".*.");
    if (star == std::string::npos) {
      out.push_back({params[i].name, params[i].shape, params[i].dtype});
      ++i;
      continue;
    }
    std::string array = params[i].name.substr(0, star);
    size_t end = i;
    while (end < params.size() && params[end].name.starts_with(array + ".*.")) ++end;
    int64_t layers = params[i].shape.at(0);
    for (int64_t k = 0; k < layers; ++k)
      for (size_t j = i; j < end; ++j) {
        std::string path = array + "." + std::to_string(k) + params[j].name.substr(star + 2);
        out.push_back({path, {params[j].shape.begin() + 1, params[j].shape.end()}, params[j].dtype});
      }
    i = end;
  }
  return out;
}

class CompiledBackend : public Backend {
 public:
  CompiledBackend(const device::Driver& driver, const std::string& package, const LoadOptions& options)
      : driver_(driver), device_(driver.create()), cache_(settings(driver, package, options)) {
    threads_ = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    device_->setThreads(threads_);
    fs::path dir = cache_.modelDir();
    model_ = readManifest(dir);
    params_ = perLayer(model_.params);
    for (const auto& [k, v] : model_.generics)
      if (auto* n = std::get_if<int64_t>(&v)) dims_[k] = *n;
    Footprint footprint{params_, {}, dims_};
    for (const TensorSpec& s : model_.states) footprint.states.push_back({s.name, s.shape, s.dtype});
    checkFootprint(footprint);
    compileOnly_ = options.compileOnly;
    if (compileOnly_) return;
    try {
      if (drawsRandomApart(options)) {
        // Drawn by the device into each param's buffer on first use
        // (Device::fillRandom): a GPU draws them itself.
        randomSeed_ = options.seed;
        for (const ParamInfo& p : params_) randomParams_.emplace(p.path, p);
      } else {
        std::vector<ParamBytes> bytes = bindParams(package, params_, dims_, options);
        for (size_t k = 0; k < params_.size(); ++k) hostParams_.emplace(params_[k].path, bytes[k]);
      }
      planStorage();
      for (const TensorSpec& s : model_.states) states_.push_back(device_->allocate(byteCount(s)));
    } catch (const std::bad_alloc&) {
      throw allocationFailure(footprint, "binding params and allocating state");
    }
  }

  std::vector<Tensor> call(const std::string& entry, const std::vector<Tensor>& args,
                           const std::map<std::string, int64_t>& generics) override {
    if (compileOnly_) {
      cache_.entryDir(entry, args, generics);
      return {};
    }
    Loaded& art = artifactFor(entry, args, generics);
    return run(art, entry, args);
  }

  // The entry's gradient artifact (`linnetc build --gradient`), run as an
  // entry: its outputs are the value, then each param's gradient by path.
  Gradient gradient(const std::string& entry, const std::vector<Tensor>& args,
                    const std::map<std::string, int64_t>& generics,
                    const std::function<bool(const std::string&)>& wrt,
                    const std::optional<Tensor>& cotangent, const LowRank& lowRank) override {
    GradientOf of;
    of.lowRank = lowRank.rank;
    size_t floats = 0;
    for (const ParamInfo& p : params_) {
      if (!isFloat(p.dtype)) continue;
      ++floats;
      if (wrt(p.path)) of.wrt.push_back(p.path);
    }
    if (of.wrt.empty()) throw Error(fmt::format("the gradient of `{}` is asked for no float param", entry));
    of.all = of.wrt.size() == floats && lowRank.rank == 0;
    if (compileOnly_) {
      cache_.entryDir(entry, args, generics, of);
      return {};
    }
    Loaded& art = artifactFor(entry, args, generics, of);
    const artifact::Entry& e = art.manifest.entries[art.entry];
    std::vector<Tensor> inputs = args;
    const size_t factors = lowRank.rank > 0 ? 2 * of.wrt.size() : 0;
    if (e.inputs.size() == args.size() + 1 + factors) {
      const TensorSpec& want = e.inputs[args.size()];
      if (!cotangent)
        throw Error(fmt::format("entry `{}` returns {}: its gradient needs a cotangent of that type", entry,
                                artifact::describe(want.dtype, want.shape)));
      inputs.push_back(*cotangent);
    } else if (cotangent) {
      throw Error(fmt::format("entry `{}` returns one value: its gradient takes no cotangent", entry));
    }
    for (size_t k = inputs.size(); k < e.inputs.size(); ++k) inputs.push_back(factorInput(lowRank, e.inputs[k]));
    std::vector<Tensor> outputs = run(art, entry, inputs);
    std::map<std::string, Tensor> byName;
    for (size_t k = 1; k < outputs.size(); ++k) byName.emplace(e.outputs[k].name, std::move(outputs[k]));
    Gradient g{std::move(outputs.at(0)), {}, {}};
    for (const std::string& path : of.wrt)
      for (const std::string& name : gradientNames(path, lowRank)) {
        auto it = byName.find(name);
        if (it == byName.end())
          throw Error(fmt::format("{}: the gradient artifact has no output `{}`", art.dir.string(), name));
        g.params.push_back(name);
        g.grads.push_back(std::move(it->second));
      }
    return g;
  }

  Tensor param(const std::string& path) override {
    Located at = locate(path);
    Tensor out = Tensor::zeros(at.info->dtype, at.info->shape);
    device_->readAt(*at.buffer, at.offset, out.bytes());
    return out;
  }

  // Written in place: into a buffer of ours (a stacked param's, one drawn
  // at random), or first into a copy of an imported one, which may be the
  // checkpoint's read-only mapping.
  void setParam(const std::string& path, const Tensor& value) override {
    Located at = locate(path);
    if (value.shape != at.info->shape || value.dtype != at.info->dtype)
      throw Error(fmt::format("param `{}` is {}, but the new values are {}", path,
                              artifact::describe(at.info->dtype, at.info->shape), value.describe()));
    device_->write(owned(at), at.offset, value.bytes());
  }

  std::span<std::byte> hostParam(const std::string& path) override {
    if (!device_->hostAddressable()) return {};
    Located at = locate(path);
    if (at.info->storage) return {};  // rows in a storage format, not elements of its dtype
    device::Buffer& buffer = owned(at);
    return {static_cast<std::byte*>(buffer.address()) + at.offset, static_cast<size_t>(at.info->heldBytes())};
  }

  std::vector<std::string> entries() const override {
    std::vector<std::string> out;
    for (const auto& s : model_.signatures) out.push_back(s.name);
    return out;
  }
  const std::vector<std::string>* parameterNames(const std::string& entry) const override {
    const artifact::Signature* s = model_.signature(entry);
    return s ? &s->params : nullptr;
  }
  const std::vector<ParamInfo>& params() const override { return params_; }
  void resetState() override {
    for (auto& s : states_) device_->zero(*s);
  }
  const std::string& modelName() const override { return model_.package; }
  const std::map<std::string, int64_t>& dims() const override { return dims_; }
  int threads() const override { return threads_; }
  std::optional<double> deviceCopyBandwidth(std::size_t bytes, int reps) override {
    return device_->copyBandwidth(bytes, reps);
  }

 private:
  struct Loaded {
    std::filesystem::path dir;
    artifact::Manifest manifest;
    size_t entry = 0;  // in manifest.entries
    std::vector<device::BufferPtr> params;  // in the manifest's order
    std::vector<std::vector<int64_t>> paramShapes;  // as the code takes them (TensorSpec::storedShape)
    std::unique_ptr<device::Executable> executable;
  };

  // Runs a loaded artifact's entry on `args`, checked against its inputs.
  std::vector<Tensor> run(Loaded& art, const std::string& entry, const std::vector<Tensor>& args) {
    const artifact::Entry& e = art.manifest.entries[art.entry];
    if (args.size() != e.inputs.size())
      throw Error(fmt::format("entry `{}` takes {} arguments, {} were given", entry, e.inputs.size(), args.size()));
    std::vector<std::string> problems;
    for (size_t k = 0; k < args.size(); ++k) {
      const TensorSpec& want = e.inputs[k];
      if (args[k].shape != want.shape || (args[k].dtype != want.dtype && !args[k].weak))
        problems.push_back(fmt::format("argument `{}` must be {}, but it is {}", want.name,
                                       artifact::describe(want.dtype, want.shape), args[k].describe()));
    }
    if (!problems.empty()) throw Error(fmt::format("entry `{}`: {}", entry, fmt::join(problems, "; ")));

    // Inputs as they are; only a literal of another dtype is converted (one element).
    std::vector<Tensor> converted;
    converted.reserve(args.size());
    std::vector<device::BufferPtr> buffers;
    std::vector<device::Argument> arguments;
    for (size_t k = 0; k < args.size(); ++k) {
      const Tensor* a = &args[k];
      if (a->dtype != e.inputs[k].dtype) {
        // A literal must fit its parameter's dtype: no wrapping, no truncation.
        std::string misfit = a->size() != 1  ? std::string()
                             : a->isFloat() ? literalMisfit(e.inputs[k].dtype, a->asDouble(0))
                                            : literalMisfit(e.inputs[k].dtype, a->asInt(0));
        if (!misfit.empty())
          throw Error(fmt::format("entry `{}`: argument `{}` is {}, but the literal {}", entry, e.inputs[k].name,
                                  linnet::name(e.inputs[k].dtype), misfit));
        converted.push_back(Tensor::zeros(e.inputs[k].dtype, a->shape));
        for (int64_t i = 0; i < a->size(); ++i) {
          if (a->isFloat()) converted.back().set(i, a->asDouble(i));
          else converted.back().setInt(i, a->asInt(i));
        }
        a = &converted.back();
      }
      buffers.push_back(device_->import(a->bytes(), nullptr, linnet::byteSize(a->dtype)));
      arguments.push_back({buffers.back().get(), e.inputs[k].shape});
    }
    for (size_t k = 0; k < art.params.size(); ++k)
      arguments.push_back({art.params[k].get(), art.paramShapes[k]});
    for (size_t k = 0; k < states_.size(); ++k) arguments.push_back({states_[k].get(), model_.states[k].shape});
    std::vector<Tensor> outputs;
    outputs.reserve(e.outputs.size());
    for (const TensorSpec& s : e.outputs) {
      outputs.push_back(Tensor::zeros(s.dtype, s.shape));
      buffers.push_back(device_->importOutput(outputs.back().bytes()));
      arguments.push_back({buffers.back().get(), s.shape});
    }
    art.executable->call(art.entry, arguments);
    for (size_t k = 0; k < outputs.size(); ++k) device_->read(*buffers[args.size() + k], outputs[k].bytes());
    return outputs;
  }


  static CacheSettings settings(const device::Driver& driver, const std::string& package, const LoadOptions& options) {
    CacheSettings s;
    s.package = package;  // as given: linnetc runs here, and its messages name the files as the user does
    s.stdlib = stdlibFor(options);
    for (const auto& [k, v] : options.generics) s.sets.push_back(k + "=" + v.str());
    s.target = driver.target;
    s.cacheDir = options.cacheDir;
    s.progress = isatty(2) || std::getenv("LINNET_PROGRESS");
    s.numerics = options.numerics;
    // Every product the target's library takes goes to it (cuda: cuBLASLt
    // instead of decode's warp kernels), to compare the two.
    if (const char* products = std::getenv("LINNET_PRODUCTS"); products && std::string_view(products) == "library")
      s.products = "library";
    s.tape = !options.tape.empty() ? options.tape : driver.target == "cpu" ? "saved" : "recompute";
    return s;
  }

  static size_t byteCount(const TensorSpec& s) {
    size_t n = linnet::byteSize(s.dtype);
    for (int64_t d : s.shape) n *= static_cast<size_t>(d);
    return n;
  }

  artifact::Manifest readManifest(const fs::path& dir) const {
    try {
      artifact::Manifest m = artifact::read(dir);
      if (m.target != driver_.target)
        throw Error(fmt::format("{}: an artifact for target `{}`, not `{}`", dir.string(), m.target, driver_.target));
      return m;
    } catch (const artifact::ManifestError& e) {
      throw Error(e.what());
    }
  }

  Loaded& artifactFor(const std::string& entry, const std::vector<Tensor>& args,
                      const std::map<std::string, int64_t>& generics,
                      const std::optional<GradientOf>& gradient = std::nullopt) {
    // Loaded already: no look at the cache (entryDir checks the code's checksum).
    if (auto known = loaded_.find(cache_.entryPath(entry, args, generics, gradient).string());
        known != loaded_.end())
      return *known->second;
    fs::path dir = cache_.entryDir(entry, args, generics, gradient);
    auto [it, fresh] = loaded_.try_emplace(dir.string());
    if (!fresh) return *it->second;
    try {
      auto art = std::make_unique<Loaded>();
      art->dir = dir;
      art->manifest = readManifest(dir);
      std::string entryName = gradient ? entry + ".gradient" : entry;  // MLIRGen::addGradient's name
      const artifact::Entry* e = art->manifest.entry(entryName);
      if (!e) throw Error(fmt::format("{}: the artifact has no entry `{}`", dir.string(), entryName));
      art->entry = static_cast<size_t>(e - art->manifest.entries.data());
      if (art->manifest.numerics != cache_.numerics())
        throw Error(fmt::format("{}: an artifact of `{}` numerics, but the model was loaded with `{}`", dir.string(),
                                art->manifest.numerics, cache_.numerics()));
      // Its states live here, between calls: they must be the model's.
      if (art->manifest.states != model_.states)
        throw Error(fmt::format("{}: the artifact's state members differ from the model's (delete the cache "
                                "folder {} to rebuild them all)",
                                dir.string(), cache_.root().string()));
      for (const TensorSpec& p : art->manifest.params) {
        auto planned = storage_.find(p.name);
        if (p.storage != (planned == storage_.end() ? std::nullopt : std::optional(planned->second)))
          throw Error(fmt::format("{}: the artifact reads param `{}` as {}, but it was bound as {}", dir.string(),
                                  p.name, p.storage ? name(*p.storage) : "plain elements",
                                  planned == storage_.end() ? "plain elements" : name(planned->second)));
        art->params.push_back(param(p, dir));
        art->paramShapes.push_back(p.storedShape());
      }
      try {
        art->executable = device_->load(art->manifest, dir);
      } catch (const std::runtime_error& e) {
        throw Error(e.what());
      }
      it->second = std::move(art);
    } catch (...) {
      loaded_.erase(it);
      throw;
    }
    return *it->second;
  }

  // A param on the device, imported or stacked on first use.
  device::BufferPtr param(const TensorSpec& spec, const fs::path& dir) {
    if (auto it = deviceParams_.find(spec.name); it != deviceParams_.end()) {
      if (it->second.spec != spec)
        throw Error(fmt::format("{}: param `{}` is {} in the artifact, {} in the model", dir.string(), spec.name,
                                artifact::describe(spec.dtype, spec.shape),
                                artifact::describe(it->second.spec.dtype, it->second.spec.shape)));
      return it->second.buffer;
    }
    device::BufferPtr buffer;
    size_t star = spec.name.find(".*.");
    bool stored = spec.storage.has_value();
    size_t bytes = spec.byteCount();
    const std::vector<std::string> paths = layerPaths(spec);
    const size_t slot = layerBytes(spec);
    if (randomSeed_) {
      buffer = device_->allocate(bytes);
      for (size_t k = 0; k < paths.size(); ++k) {
        const ParamInfo& info = randomParam(paths[k], slot, dir);
        if (randomFillable(info.dtype)) device_->fillRandom(*buffer, k * slot, randomFill(info, *randomSeed_));
      }
    } else if (star == std::string::npos) {
      const ParamBytes& host = hostParam(spec.name, bytes, stored, dir);
      buffer = stored ? device_->import(host.stored, host.storedOwner, 1)
                      : device_->import(host.bytes, host.owner, linnet::byteSize(spec.dtype));
      hostParams_.erase(spec.name);
    } else {
      // `layers.*.x` [L, ...]: layer k's `layers.k.x` at slot k. The
      // per-layer bytes (and the mapping or copy behind them) go once copied.
      buffer = device_->allocate(bytes);
      for (size_t k = 0; k < paths.size(); ++k) {
        const ParamBytes& host = hostParam(paths[k], slot, stored, dir);
        device_->write(*buffer, k * slot, stored ? host.stored : host.bytes);
        hostParams_.erase(paths[k]);
      }
    }
    deviceParams_.emplace(spec.name, DeviceParam{spec, buffer, randomSeed_ || star != std::string::npos});
    return buffer;
  }

  // The param `path` the artifact reads with `bytes`, for random values.
  const ParamInfo& randomParam(const std::string& path, size_t bytes, const fs::path& dir) const {
    auto it = randomParams_.find(path);
    if (it == randomParams_.end() || randomFill(it->second, 0).count * linnet::byteSize(it->second.dtype) != bytes)
      throw Error(fmt::format("{}: the artifact reads a param `{}` that the model does not have (or of another "
                              "size)",
                              dir.string(), path));
    return it->second;
  }

  const ParamBytes& hostParam(const std::string& path, size_t bytes, bool stored, const fs::path& dir) const {
    auto it = hostParams_.find(path);
    if (it == hostParams_.end() || (stored ? it->second.stored : it->second.bytes).size() != bytes)
      throw Error(fmt::format("{}: the artifact reads a param `{}` that the model does not have (or of another "
                              "size)",
                              dir.string(), path));
    return it->second;
  }

  // Which manifest params the entries read in the checkpoint's storage: a
  // param whose bound bytes have one (every layer the same, for a stacked
  // one), on a device whose target reads storage formats. Handed to linnetc
  // with each entry (ArtifactCache::setParamStorage).
  void planStorage() {
    std::vector<std::string> flags;
    if (!driver_.storageFormats) return cache_.setParamStorage(flags);  // plain elements for every param
    for (const TensorSpec& spec : model_.params) {
      std::vector<std::string> paths = layerPaths(spec);
      std::optional<Storage> common;
      for (size_t i = 0; i < paths.size(); ++i) {
        auto it = hostParams_.find(paths[i]);
        std::optional<Storage> s = it == hostParams_.end() ? std::nullopt : it->second.storage;
        if (!s || (i > 0 && s != common)) {
          common.reset();
          break;
        }
        common = s;
      }
      if (!common) continue;
      storage_[spec.name] = *common;
      for (ParamInfo& p : params_)
        if (std::find(paths.begin(), paths.end(), p.path) != paths.end()) p.storage = common;
      flags.push_back(fmt::format("{}={}", spec.name, name(*common)));
    }
    cache_.setParamStorage(flags);
  }

  struct DeviceParam {
    TensorSpec spec;
    device::BufferPtr buffer;
    bool owned = false;  // allocated here (stacked, drawn), not the checkpoint's bytes imported
  };

  // A param by its path (`layers.3.mlp.up.weight`): its manifest spec
  // (`layers.*.mlp.up.weight`), its buffer on the device (put there now if
  // it is not yet) and the byte offset of its layer in it.
  struct Located {
    const ParamInfo* info = nullptr;
    const TensorSpec* spec = nullptr;
    device::BufferPtr buffer;
    size_t offset = 0;
  };
  // The buffer `at` lies in, made ours first where it was imported (it
  // may be the checkpoint's read-only mapping): written in place after.
  device::Buffer& owned(const Located& at) {
    DeviceParam& held = deviceParams_.at(at.spec->name);
    if (!held.owned) {
      std::vector<std::byte> bytes(held.buffer->size());
      device_->read(*held.buffer, bytes);
      device::BufferPtr copy = device_->allocate(bytes.size());
      device_->write(*copy, 0, bytes);
      for (auto& [dir, art] : loaded_)
        for (device::BufferPtr& b : art->params)
          if (b == held.buffer) b = copy;
      held.buffer = copy;
      held.owned = true;
    }
    return *held.buffer;
  }

  Located locate(const std::string& path) {
    if (compileOnly_) throw Error("the model was loaded to compile only: it holds no params");
    Located at;
    for (const ParamInfo& p : params_)
      if (p.path == path) at.info = &p;
    if (!at.info) throw Error(fmt::format("the model has no param `{}`", path));
    size_t layer = 0;
    for (const TensorSpec& spec : model_.params) {
      std::vector<std::string> paths = layerPaths(spec);
      auto it = std::find(paths.begin(), paths.end(), path);
      if (it == paths.end()) continue;
      at.spec = &spec;
      layer = static_cast<size_t>(it - paths.begin());
    }
    if (!at.spec) throw Error(fmt::format("internal: param `{}` is not in the model's manifest", path));
    std::optional<Storage> held = at.spec->storage;
    if (auto planned = storage_.find(at.spec->name); planned != storage_.end()) held = planned->second;
    if (held)
      throw Error(fmt::format("param `{}` is held as {} rows; training reads and writes plain elements (load f32 "
                              "weights, or a checkpoint that is not quantized)",
                              path, name(*held)));
    at.buffer = param(*at.spec, cache_.modelDir());
    at.offset = layer * layerBytes(*at.spec);
    return at;
  }

  const device::Driver& driver_;
  std::unique_ptr<device::Device> device_;
  ArtifactCache cache_;
  artifact::Manifest model_;
  std::vector<ParamInfo> params_;                  // per layer, as bound
  std::map<std::string, ParamBytes> hostParams_;   // bound, not yet on the device
  std::optional<uint64_t> randomSeed_;             // --random-weights: drawn on the device, not bound
  std::map<std::string, ParamInfo> randomParams_;  // then: each param by path
  std::map<std::string, DeviceParam> deviceParams_;  // by manifest path, stacked ones included
  std::map<std::string, Storage> storage_;           // manifest params read in a storage format
  std::map<std::string, int64_t> dims_;
  int threads_ = 1;
  bool compileOnly_ = false;  // LoadOptions::compileOnly: calls build artifacts, nothing more
  std::vector<device::BufferPtr> states_;          // in the manifest's order
  std::map<std::string, std::unique_ptr<Loaded>> loaded_;  // by artifact folder
};

}  // namespace

BackendKind compiledBackend(const device::Driver& driver) {
  return {std::string(driver.name), std::string(driver.summary),
          [&driver](const std::string& package, const LoadOptions& options) -> std::unique_ptr<Backend> {
            return std::make_unique<CompiledBackend>(driver, package, options);
          }};
}

}  // namespace linnet::nest
