// What a linnet::nest::Model runs on, and the registry of them. Model and
// load() name no backend: load() looks LoadOptions::backend up in backends().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nest/nest.h"

namespace linnet::nest {

class Backend {
 public:
  virtual ~Backend() = default;
  // As Model::call; failures are nest::Error.
  virtual std::vector<Tensor> call(const std::string& entry, const std::vector<Tensor>& args,
                                   const std::map<std::string, int64_t>& generics) = 0;
  // As Model::gradient; a backend that runs no gradients keeps this one.
  virtual Gradient gradient(const std::string& entry, const std::vector<Tensor>& args,
                            const std::map<std::string, int64_t>& generics,
                            const std::function<bool(const std::string&)>& wrt,
                            const std::optional<Tensor>& cotangent, const LowRank& lowRank) {
    (void)entry, (void)args, (void)generics, (void)wrt, (void)cotangent, (void)lowRank;
    throw Error("gradients run on the reference backend only so far: pass --backend reference");
  }
  // A param's values, and replacing them (an optimizer step): the reference
  // backend only so far.
  virtual Tensor param(const std::string& path) {
    (void)path;
    throw Error("training runs on the reference backend only so far: pass --backend reference");
  }
  virtual void setParam(const std::string& path, const Tensor& value) {
    (void)path, (void)value;
    throw Error("training runs on the reference backend only so far: pass --backend reference");
  }
  // As Model::hostParam: empty where params are not in host memory.
  virtual std::span<std::byte> hostParam(const std::string& path) {
    (void)path;
    return {};
  }
  // The root block's entries, in declaration order.
  virtual std::vector<std::string> entries() const = 0;
  // An entry's parameter names; nullptr when there is no such entry.
  virtual const std::vector<std::string>* parameterNames(const std::string& entry) const = 0;
  // Every param, per layer (`layers.3.mlp.up.weight`), as bindings.json names them.
  virtual const std::vector<ParamInfo>& params() const = 0;
  virtual void resetState() = 0;
  virtual const std::string& modelName() const = 0;
  // The root block's dimension generics as bound (nest.toml, then --set).
  virtual const std::map<std::string, int64_t>& dims() const = 0;
  // Threads entries run on.
  virtual int threads() const = 0;
  // The device's copy bandwidth (device::Device::copyBandwidth); nullopt
  // where entries run in host memory.
  virtual std::optional<double> deviceCopyBandwidth(std::size_t bytes, int reps) {
    (void)bytes, (void)reps;
    return std::nullopt;
  }
};

struct BackendKind {
  std::string name;     // LoadOptions::backend
  std::string summary;  // one line, for messages
  std::function<std::unique_ptr<Backend>(const std::string& package, const LoadOptions& options)> open;
};

// The reference backend first, then compiled code on each device of
// runtime/device's registry (nest/backends.cpp).
const std::vector<BackendKind>& backends();
// What an empty LoadOptions::backend runs on: the first compiled backend
// where linnetc compiles code (LINNET_MLIR), else the reference one.
const BackendKind& defaultBackendKind();

// The standard library folder: LoadOptions::stdlib, else $LINNET_STDLIB, else the
// installed one beside this code, else the build's (common/install.h).
std::string stdlibFor(const LoadOptions& options);

}  // namespace linnet::nest
