#include "driver/param_storage.h"

#include <fmt/format.h>

#include <stdexcept>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace linnet::driver {

std::map<std::string, Storage> parseParamStorage(const std::vector<std::string>& flags,
                                                 const std::vector<ir::TensorSpec>& params) {
  std::map<std::string, Storage> plan;
  for (const std::string& flag : flags) {
    auto eq = flag.find('=');
    if (eq == std::string::npos)
      throw std::runtime_error(fmt::format("--param-storage `{}`: expected PATH=FORMAT", flag));
    std::string path = flag.substr(0, eq), format = flag.substr(eq + 1);
    auto storage = storageNamed(format);
    if (!storage)
      throw std::runtime_error(
          fmt::format("--param-storage `{}`: unknown format `{}` (known: {})", flag, format, storageNames()));
    const ir::TensorSpec* param = nullptr;
    for (const auto& p : params)
      if (p.name == path) param = &p;
    if (!param) throw std::runtime_error(fmt::format("--param-storage `{}`: the model has no param `{}`", flag, path));
    if (param->dtype != DType::F32 || param->shape.size() < 2)
      throw std::runtime_error(fmt::format("--param-storage `{}`: only f32 params of rank 2 or more have a storage "
                                           "format, and `{}` is {} of rank {}",
                                           flag, path, linnet::name(param->dtype), param->shape.size()));
    if (!storageRowBytes(*storage, param->shape.back()))
      throw std::runtime_error(fmt::format("--param-storage `{}`: rows of {} elements are not whole {} blocks of {}",
                                           flag, param->shape.back(), format,
                                           storageInfo(*storage).blockElements));
    plan[path] = *storage;
  }
  return plan;
}

void markParamStorage(mlir::ModuleOp module, const Generated& generated, const std::vector<ir::TensorSpec>& params,
                      const std::map<std::string, Storage>& plan) {
  mlir::Builder b(module.getContext());
  for (const ir::EntryInstance& e : generated.entries) {
    auto fn = module.lookupSymbol<mlir::func::FuncOp>(e.symbol);
    if (!fn) continue;
    for (size_t j = 0; j < params.size(); ++j) {
      const ir::TensorSpec& p = params[j];
      auto it = plan.find(p.name);
      bool plainWeight = p.dtype == DType::F32 && p.shape.size() >= 2;
      if (it == plan.end() && !plainWeight) continue;
      Storage s = it == plan.end() ? Storage::F32 : it->second;
      fn.setArgAttr(static_cast<unsigned>(e.inputs.size() + j), "linnet.storage",
                    b.getStringAttr(std::string(name(s))));
    }
  }
}

}  // namespace linnet::driver
