#include "nest/nest.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <random>

#include <unistd.h>

#include "base/diagnostics.h"
#include "nest/compiled.h"
#include "sema/checker.h"
#include "sema/program.h"
#include "targets/reference/model.h"
#include "weights/bindings.h"
#include "weights/convert.h"
#include "weights/safetensors.h"

#ifdef LINNET_HAVE_GGUF
#include <unistd.h>

#include "gguf/llama.h"
#endif

#ifndef LINNET_STDLIB_DIR
#define LINNET_STDLIB_DIR "stdlib"
#endif

namespace linnet::nest {

std::string GenericValue::str() const {
  if (auto* n = std::get_if<int64_t>(&value)) return std::to_string(*n);
  return std::get<std::string>(value);
}

struct Model::Impl {
  SourceManager sources;
  Diagnostics diags{sources};
  std::unique_ptr<sema::Program> program;
  std::unique_ptr<reference::Model> model;      // instantiated shapes; the values too on "reference"
  std::unique_ptr<CompiledModel> compiled;      // "cpu": compiled entries over raw buffers
  weights::Checkpoint checkpoint;  // keeps the mapped bytes alive
  std::string name;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Tensor tensorFromBytes(Scalar dtype, const std::vector<int64_t>& shape, std::span<const std::byte> data) {
  Tensor t = Tensor::zeros(dtype, shape);
  for (int64_t k = 0; k < t.size(); ++k) {
    switch (dtype) {
      case Scalar::F32: {
        float v;
        std::memcpy(&v, data.data() + 4 * k, 4);
        t.f[k] = v;
        break;
      }
      case Scalar::BF16: {
        uint16_t v;
        std::memcpy(&v, data.data() + 2 * k, 2);
        t.f[k] = weights::bf16ToF32(v);
        break;
      }
      case Scalar::F16: {
        uint16_t v;
        std::memcpy(&v, data.data() + 2 * k, 2);
        t.f[k] = weights::f16ToF32(v);
        break;
      }
      case Scalar::I32: {
        int32_t v;
        std::memcpy(&v, data.data() + 4 * k, 4);
        t.i[k] = v;
        break;
      }
      case Scalar::I64: {
        int64_t v;
        std::memcpy(&v, data.data() + 8 * k, 8);
        t.i[k] = v;
        break;
      }
      case Scalar::Bool:
        t.i[k] = static_cast<uint8_t>(data[k]) != 0;
        break;
      default: throw Error(fmt::format("a tensor cannot be {}", sema::name(dtype)));
    }
  }
  return t;
}

std::vector<std::byte> tensorToBytes(const Tensor& t) {
  std::vector<std::byte> out(t.size() * sema::byteSize(t.dtype));
  for (int64_t k = 0; k < t.size(); ++k) {
    std::byte* at = out.data() + k * sema::byteSize(t.dtype);
    switch (t.dtype) {
      case Scalar::F32: { float v = static_cast<float>(t.f[k]); std::memcpy(at, &v, 4); break; }
      case Scalar::BF16: {
        float v = static_cast<float>(t.f[k]);
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        uint16_t hi = static_cast<uint16_t>(bits >> 16);  // values are already bf16-rounded
        std::memcpy(at, &hi, 2);
        break;
      }
      case Scalar::F16: { uint16_t v = weights::f32ToF16(static_cast<float>(t.f[k])); std::memcpy(at, &v, 2); break; }
      case Scalar::I32: { int32_t v = static_cast<int32_t>(t.i[k]); std::memcpy(at, &v, 4); break; }
      case Scalar::I64: { std::memcpy(at, &t.i[k], 8); break; }
      case Scalar::Bool: { *at = static_cast<std::byte>(t.i[k] != 0); break; }
      default: throw Error(fmt::format("a tensor cannot be {}", sema::name(t.dtype)));
    }
  }
  return out;
}


namespace {

// A checkpoint from a safetensors file or index, or from a GGUF file: its
// tensors are dequantized to f32 under their Hugging Face names and layout,
// written to a temporary safetensors file that is mapped and then unlinked,
// so that the same binding checks apply to both.
weights::Checkpoint openCheckpoint(const std::string& path) {
  if (!path.ends_with(".gguf")) return weights::Checkpoint::open(path);
#ifdef LINNET_HAVE_GGUF
  auto tensors = gguf::loadAsHuggingFace(std::filesystem::path(path));
  auto temp = std::filesystem::temp_directory_path() /
              fmt::format("linnet-{}-{}.safetensors", ::getpid(), std::filesystem::path(path).stem().string());
  gguf::writeSafetensors(temp, tensors, {{"converted_from", path}});
  weights::Checkpoint checkpoint = weights::Checkpoint::open(temp);
  std::filesystem::remove(temp);  // the mapping stays valid
  return checkpoint;
#else
  throw Error(fmt::format("{}: this build has no GGUF reader", path));
#endif
}


// A one-line progress bar on stderr while weights are bound, only when
// stderr is a terminal (logs and pipes get nothing).
class Progress {
 public:
  Progress(const char* what, size_t total) : what_(what), total_(total), on_(isatty(2) && total > 0) {}
  void step() {
    if (!on_) return;
    ++done_;
    int width = 30, filled = static_cast<int>(width * done_ / total_);
    fmt::print(stderr, "\r{} [{}{}] {}/{}", what_, std::string(filled, '#'), std::string(width - filled, ' '), done_,
               total_);
    if (done_ == total_) fmt::print(stderr, "\r{}\r", std::string(std::string(what_).size() + width + 24, ' '));
  }

 private:
  const char* what_;
  size_t total_, done_ = 0;
  bool on_;
};

std::unique_ptr<CompiledModel> makeCompiled(const std::string& package, const LoadOptions& options,
                                            const std::string& stdlib, const reference::Model& model,
                                            std::vector<Buffer> buffers) {
  CompileSettings settings;
  settings.package = std::filesystem::absolute(package).string();
  settings.stdlib = std::filesystem::absolute(stdlib).string();
  for (const auto& [k, v] : options.generics) settings.sets.push_back(k + "=" + v.str());
  settings.cacheDir = options.cacheDir;
  settings.progress = isatty(2) || std::getenv("LINNET_PROGRESS");
  std::vector<NamedBuffer> params;
  auto specs = model.params();
  for (size_t k = 0; k < specs.size(); ++k) params.push_back({specs[k].path, std::move(buffers[k])});
  return std::make_unique<CompiledModel>(std::move(settings), std::move(params));
}

}  // namespace

Model load(const std::string& package, const LoadOptions& options) {
  auto impl = std::make_unique<Model::Impl>();
  std::string stdlib = options.stdlib;
  if (stdlib.empty()) stdlib = std::getenv("LINNET_STDLIB") ? std::getenv("LINNET_STDLIB") : LINNET_STDLIB_DIR;
  impl->program = std::make_unique<sema::Program>(impl->sources, impl->diags, stdlib);
  sema::Program& program = *impl->program;
  for (const auto& [k, v] : options.generics) program.setGeneric(k + "=" + v.str());
  program.loadPackage(package);
  std::optional<sema::Summary> summary;
  if (program.root() && !impl->diags.hasErrors()) {
    sema::Checker checker(program, impl->diags);
    checker.checkDefinitions();
    if (!impl->diags.hasErrors()) summary = checker.instantiateRoot();
  }
  if (impl->diags.hasErrors()) throw Error(impl->diags.render());
  if (!summary) throw Error(fmt::format("{}: no root block to run (nest.toml [source] root)", package));
  impl->name = program.package().name;

  try {
    impl->model = std::make_unique<reference::Model>(program);
  } catch (const reference::EvalError& e) {
    throw Error(e.what());
  }
  if (options.backend != "reference" && options.backend != "cpu")
    throw Error(fmt::format("unknown backend `{}` (reference, cpu)", options.backend));
  bool compiled = options.backend == "cpu";
  std::vector<Buffer> buffers;  // "cpu": the params as compiled code reads them
  if (options.randomWeights) {
    std::mt19937_64 rng(options.seed);
    std::normal_distribution<double> normal(0.0, 0.02);
    auto random = [&](const reference::ParamSpec& spec) {
      Tensor t = Tensor::zeros(spec.dtype, spec.shape);
      bool norm = spec.shape.size() == 1;  // norm scales: near 1, as trained models have
      for (auto& v : t.f) v = reference::roundTo(spec.dtype, norm ? 1.0 + normal(rng) : normal(rng));
      return t;
    };
    if (!compiled) {
      impl->model->bind(random);
      return Model(std::move(impl));
    }
    for (const auto& p : impl->model->params()) {
      Buffer b = Buffer::zeros(p.dtype, p.shape);
      std::vector<std::byte> bytes = tensorToBytes(random(p));
      if (!bytes.empty()) std::memcpy(b.data, bytes.data(), bytes.size());
      buffers.push_back(std::move(b));
    }
    impl->compiled = makeCompiled(package, options, stdlib, *impl->model, std::move(buffers));
    return Model(std::move(impl));
  }
  if (options.weights.empty())
    throw Error(fmt::format("{}: no weights given: pass a .safetensors file or index.json "
                            "(--weights), or ask for random weights (--random-weights)",
                            package));
  try {
    std::vector<weights::ParamSpec> specs;
    for (const auto& p : impl->model->params()) specs.push_back({p.path, p.shape, p.dtype});
    impl->checkpoint = openCheckpoint(options.weights);
    std::filesystem::path bindingsPath = std::filesystem::path(package) / "bindings.json";
    weights::BindOptions bindOptions;
    if (options.convertDTypes && !specs.empty()) bindOptions.convertTo = specs.front().dtype;
    auto bound = std::make_shared<weights::BoundWeights>(
        weights::bind(specs, weights::Bindings::load(bindingsPath), impl->checkpoint, bindOptions));
    Progress progress("linnet: binding weights", impl->model->params().size());
    if (compiled) {
      for (const auto& p : impl->model->params()) {
        progress.step();
        const weights::BoundTensor& t = bound->at(p.path);
        Buffer b;
        b.dtype = p.dtype;
        b.shape = p.shape;
        if (reinterpret_cast<uintptr_t>(t.data.data()) % sema::byteSize(p.dtype) == 0) {
          // Read in place from the mapping (or the converted copy) that `bound` keeps.
          b.data = const_cast<std::byte*>(t.data.data());
          b.owner = bound;
        } else {
          b = Buffer::zeros(p.dtype, p.shape);
          std::memcpy(b.data, t.data.data(), t.data.size());
        }
        buffers.push_back(std::move(b));
      }
      impl->compiled = makeCompiled(package, options, stdlib, *impl->model, std::move(buffers));
    } else {
      impl->model->bind([&](const reference::ParamSpec& spec) {
        progress.step();
        const weights::BoundTensor& b = bound->at(spec.path);
        return tensorFromBytes(spec.dtype, spec.shape, b.data);
      });
    }
  } catch (const std::exception& e) {
    // The library's hint names its own option; say what a loader user sets.
    std::string message = e.what();
    for (size_t at; (at = message.find("set BindOptions.convertTo = ")) != std::string::npos;) {
      size_t end = message.find(' ', at + 28);
      message.replace(at, end - at, "convert them (linnet --convert, LoadOptions::convertDTypes)");
    }
    throw Error(message);
  }
  return Model(std::move(impl));
}

std::vector<Tensor> Model::call(const std::string& entry, const std::vector<Tensor>& args,
                                const std::map<std::string, int64_t>& generics) {
  try {
    if (impl_->compiled) return impl_->compiled->call(entry, args, generics);
    return impl_->model->call(entry, args, generics);
  } catch (const reference::EvalError& e) {
    throw Error(e.what());
  }
}

std::vector<std::string> Model::entries() const {
  std::vector<std::string> out;
  const sema::Item* item = impl_->program->lookup(*impl_->program->root(), impl_->program->package().rootBlock);
  for (const auto& fn : item->block->fns)
    if (fn->isEntry) out.push_back(fn->name.name);
  return out;
}

std::vector<std::string> Model::parameterNames(const std::string& entry) const {
  const sema::Item* item = impl_->program->lookup(*impl_->program->root(), impl_->program->package().rootBlock);
  for (const auto& fn : item->block->fns)
    if (fn->isEntry && fn->name.name == entry) {
      std::vector<std::string> out;
      for (const auto& p : fn->params) out.push_back(p.name.name);
      return out;
    }
  throw Error(fmt::format("`{}` has no entry `{}` (entries: {})", impl_->name, entry,
                          fmt::join(entries(), ", ")));
}

std::vector<ParamInfo> Model::params() const {
  std::vector<ParamInfo> out;
  for (const auto& p : impl_->model->params()) out.push_back({p.path, p.shape, p.dtype});
  return out;
}

void Model::resetState() {
  if (impl_->compiled) impl_->compiled->resetState();
  else impl_->model->resetState();
}
const std::string& Model::name() const { return impl_->name; }

}  // namespace linnet::nest
