#include "nest/reference_backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/diagnostics.h"
#include "nest/memory.h"
#include "nest/params.h"
#include "sema/checker.h"
#include "sema/program.h"
#include "targets/reference/model.h"

namespace linnet::nest {

namespace {

reference::Tensor toReference(const Tensor& t) {
  reference::Tensor r = reference::Tensor::zeros(t.dtype, t.shape);
  r.weak = t.weak;
  for (int64_t k = 0; k < t.size(); ++k) {
    if (r.isFloat()) r.f[k] = t.asDouble(k);
    else r.i[k] = t.asInt(k);
  }
  return r;
}

reference::Tensor fromBytes(DType dtype, const std::vector<int64_t>& shape, std::span<const std::byte> bytes) {
  reference::Tensor r = reference::Tensor::zeros(dtype, shape);
  size_t size = linnet::byteSize(dtype);
  for (int64_t k = 0; k < r.size(); ++k) {
    if (r.isFloat()) r.f[k] = loadElement(dtype, bytes.data() + k * size);
    else r.i[k] = loadIntElement(dtype, bytes.data() + k * size);
  }
  return r;
}

// Exact: the reference backend's values are already rounded to their dtype.
Tensor fromReference(const reference::Tensor& r) {
  Tensor t = Tensor::zeros(r.dtype, r.shape);
  t.weak = r.weak;
  for (int64_t k = 0; k < r.size(); ++k) {
    if (r.isFloat()) t.set(k, r.f[k]);
    else t.setInt(k, r.i[k]);
  }
  return t;
}

class ReferenceBackend : public Backend {
 public:
  ReferenceBackend(const std::string& package, const LoadOptions& options) {
    // The oracle computes the language's definition and nothing else.
    if (options.numerics != "exact")
      throw Error(fmt::format("the reference backend computes only the language's exact numerics, not `{}`; run "
                              "`{}` numerics on compiled code (--backend cpu)",
                              options.numerics, options.numerics));
    if (options.compileOnly)
      throw Error("the reference backend compiles nothing: --compile-only needs a compiled backend (--backend cpu, "
                  "cuda)");
    program_ = std::make_unique<sema::Program>(sources_, diags_, stdlibFor(options));
    for (const auto& [k, v] : options.generics) program_->setGeneric(k + "=" + v.str());
    program_->loadPackage(package);
    std::optional<sema::Summary> summary;
    if (program_->root() && !diags_.hasErrors()) {
      sema::Checker checker(*program_, diags_);
      checker.checkDefinitions();
      if (!diags_.hasErrors()) summary = checker.instantiateRoot();
    }
    if (diags_.hasErrors()) throw Error(diags_.render());
    if (!summary) throw Error(fmt::format("{}: no root block to run (nest.toml [source] root)", package));
    name_ = program_->package().name;
    for (const auto& [k, v] : program_->package().generics)
      if (v.number) dims_[k] = *v.number;
    const sema::Item* item = program_->lookup(*program_->root(), program_->package().rootBlock);
    for (const auto& fn : item->block->fns) {
      if (!fn->isEntry) continue;
      entries_.push_back(fn->name.name);
      auto& names = parameterNames_[fn->name.name];
      for (const auto& p : fn->params) names.push_back(p.name.name);
    }
    try {
      model_ = std::make_unique<reference::Model>(*program_);
    } catch (const reference::EvalError& e) {
      throw Error(e.what());
    }
    for (const auto& p : model_->params()) params_.push_back({p.path, p.shape, p.dtype});
    Footprint footprint{params_, {}, dims_};
    for (const auto& s : model_->states()) footprint.states.push_back({s.path, s.shape, s.dtype});
    checkFootprint(footprint);
    try {
      std::vector<ParamBytes> bytes = bindParams(package, params_, dims_, options);
      Progress progress("linnet: binding weights", options.randomWeights ? 0 : params_.size());
      size_t k = 0;
      model_->bind([&](const reference::ParamSpec& spec) {
        progress.step();
        return fromBytes(spec.dtype, spec.shape, bytes[k++].bytes);
      });
    } catch (const std::bad_alloc&) {
      // The reference backend holds every value as a double or an int64.
      throw allocationFailure(footprint, "binding params and zeroing state on the reference backend (8 bytes a value)");
    }
  }

  std::vector<Tensor> call(const std::string& entry, const std::vector<Tensor>& args,
                           const std::map<std::string, int64_t>& generics) override {
    std::vector<reference::Tensor> in;
    for (const Tensor& a : args) in.push_back(toReference(a));
    try {
      std::vector<Tensor> out;
      for (const reference::Tensor& r : model_->call(entry, in, generics)) out.push_back(fromReference(r));
      return out;
    } catch (const reference::EvalError& e) {
      throw Error(e.what());
    }
  }

  Gradient gradient(const std::string& entry, const std::vector<Tensor>& args,
                    const std::map<std::string, int64_t>& generics,
                    const std::function<bool(const std::string&)>& wrt,
                    const std::optional<Tensor>& cotangent, const LowRank& lowRank) override {
    std::vector<reference::Tensor> in;
    for (const Tensor& a : args) in.push_back(toReference(a));
    std::optional<reference::Tensor> seed;
    if (cotangent) seed = toReference(*cotangent);
    reference::LowRank factors{lowRank.rank, {}};
    for (const auto& [name, t] : lowRank.factors) factors.factors.emplace(name, toReference(t));
    try {
      reference::Model::Gradient g =
          model_->gradient(entry, in, generics, wrt, seed, false, autodiff::Policy::Scan, factors);
      Gradient out{fromReference(g.value), g.params, {}};
      for (const reference::Tensor& t : g.grads) out.grads.push_back(fromReference(t));
      return out;
    } catch (const reference::EvalError& e) {
      throw Error(e.what());
    }
  }
  Tensor param(const std::string& path) override {
    try {
      return fromReference(model_->param(path));
    } catch (const reference::EvalError& e) {
      throw Error(e.what());
    }
  }
  void setParam(const std::string& path, const Tensor& value) override {
    try {
      model_->setParam(path, toReference(value));
    } catch (const reference::EvalError& e) {
      throw Error(e.what());
    }
  }
  std::vector<std::string> entries() const override { return entries_; }
  const std::vector<std::string>* parameterNames(const std::string& entry) const override {
    auto it = parameterNames_.find(entry);
    return it == parameterNames_.end() ? nullptr : &it->second;
  }
  const std::vector<ParamInfo>& params() const override { return params_; }
  void resetState() override { model_->resetState(); }
  const std::string& modelName() const override { return name_; }
  const std::map<std::string, int64_t>& dims() const override { return dims_; }
  int threads() const override { return 1; }  // op by op on the calling thread

 private:
  SourceManager sources_;
  Diagnostics diags_{sources_};
  std::unique_ptr<sema::Program> program_;
  std::unique_ptr<reference::Model> model_;
  std::string name_;
  std::map<std::string, int64_t> dims_;
  std::vector<std::string> entries_;
  std::map<std::string, std::vector<std::string>> parameterNames_;
  std::vector<ParamInfo> params_;
};

}  // namespace

BackendKind referenceBackend() {
  return {"reference", "the op-by-op oracle: exact, slow (compiler/targets/reference)",
          [](const std::string& package, const LoadOptions& options) -> std::unique_ptr<Backend> {
            return std::make_unique<ReferenceBackend>(package, options);
          }};
}

}  // namespace linnet::nest
