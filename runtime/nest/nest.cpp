#include "nest/nest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nest/backend.h"
#include "nest/conventions.h"
#include "nest/memory.h"
#include "nest/model_config.h"

namespace linnet::nest {

std::string GenericValue::str() const {
  if (auto* n = std::get_if<int64_t>(&value)) return std::to_string(*n);
  return std::get<std::string>(value);
}

struct Model::Impl {
  std::unique_ptr<Backend> backend;
  std::string backendName;
};

int64_t ParamInfo::heldBytes() const {
  int64_t rows = 1;
  for (size_t a = 0; a + 1 < shape.size(); ++a) rows *= shape[a];
  int64_t last = shape.empty() ? 1 : shape.back();
  if (storage && !shape.empty()) return rows * storageRowBytes(*storage, last).value_or(0);
  return rows * last * static_cast<int64_t>(linnet::byteSize(dtype));
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model load(const std::string& package, const LoadOptions& asGiven) {
  const BackendKind* kind = asGiven.backend.empty() ? &defaultBackendKind() : nullptr;
  for (const BackendKind& b : backends())
    if (b.name == asGiven.backend) kind = &b;
  if (!kind) throw Error(fmt::format("unknown backend `{}` (this build has: {})", asGiven.backend, backendNames()));
  // A weights folder resolved to its checkpoint, and its config checked
  // against the card (or its generics taken), before anything is compiled or bound.
  const LoadOptions options = prepareLoad(package, asGiven);
  auto impl = std::make_unique<Model::Impl>();
  // --set Vocab=0 and the like, before anything is built or allocated.
  std::map<std::string, int64_t> given;
  for (const auto& [k, v] : options.generics)
    if (auto* n = std::get_if<int64_t>(&v.value)) given[k] = *n;
  checkLimits(textLimits(given));
  try {
    impl->backend = kind->open(package, options);
  } catch (const std::bad_alloc&) {
    // Where a backend could not say more (nest/memory.h words the rest).
    throw Error(fmt::format("out of memory loading {} on the {} backend (this machine has {} of memory); try "
                            "smaller generics (--set)",
                            package, kind->name, formatBytes(physicalMemory())));
  }
  checkLimits(textLimits(impl->backend->dims()));
  impl->backendName = kind->name;
  return Model(std::move(impl));
}

std::vector<Tensor> Model::call(const std::string& entry, const std::vector<Tensor>& args,
                                const std::map<std::string, int64_t>& generics) {
  if (const auto* names = impl_->backend->parameterNames(entry))
    checkCall(textLimits(impl_->backend->dims()), entry, *names, args);
  return impl_->backend->call(entry, args, generics);
}

Gradient Model::gradient(const std::string& entry, const std::vector<Tensor>& args,
                         const std::map<std::string, int64_t>& generics,
                         const std::function<bool(const std::string&)>& wrt, const std::optional<Tensor>& cotangent,
                         const LowRank& lowRank) {
  if (const auto* names = impl_->backend->parameterNames(entry))
    checkCall(textLimits(impl_->backend->dims()), entry, *names, args);
  return impl_->backend->gradient(entry, args, generics, wrt, cotangent, lowRank);
}

Tensor Model::param(const std::string& path) { return impl_->backend->param(path); }
void Model::setParam(const std::string& path, const Tensor& value) { impl_->backend->setParam(path, value); }
std::span<std::byte> Model::hostParam(const std::string& path) { return impl_->backend->hostParam(path); }

std::vector<std::string> Model::entries() const { return impl_->backend->entries(); }

std::vector<std::string> Model::parameterNames(const std::string& entry) const {
  if (const auto* names = impl_->backend->parameterNames(entry)) return *names;
  throw Error(fmt::format("`{}` has no entry `{}` (entries: {})", name(), entry, fmt::join(entries(), ", ")));
}

std::vector<ParamInfo> Model::params() const { return impl_->backend->params(); }
void Model::resetState() { impl_->backend->resetState(); }
const std::string& Model::name() const { return impl_->backend->modelName(); }
const std::string& Model::backend() const { return impl_->backendName; }
const std::map<std::string, int64_t>& Model::dims() const { return impl_->backend->dims(); }
int Model::threads() const { return impl_->backend->threads(); }
std::optional<double> Model::deviceCopyBandwidth(std::size_t bytes, int reps) {
  return impl_->backend->deviceCopyBandwidth(bytes, reps);
}

}  // namespace linnet::nest
