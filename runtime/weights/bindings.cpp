#include "weights/bindings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "weights/convert.h"
#include "weights/error.h"
#include "weights/json_util.h"
#include "weights/mapped_file.h"
#include "weights/suggest.h"

namespace linnet::weights {

// --- bindings.json -----------------------------------------------------------

namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    std::size_t dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

bool isIndex(std::string_view part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Empty when `key -> value` is a plain binding or a well-formed pattern.
std::string patternProblem(std::string_view key, std::string_view value) {
  std::size_t keyStars = std::count(key.begin(), key.end(), '*');
  std::size_t valueStars = std::count(value.begin(), value.end(), '*');
  if (keyStars == 0 && valueStars == 0) return {};
  for (std::string_view part : components(key))
    if (part.find('*') != std::string_view::npos && part != "*")
      return fmt::format("a `*` must be a whole component of the path (as in \"layers.*.mlp.up.weight\"), not part "
                         "of \"{}\"",
                         part);
  if (keyStars != valueStars)
    return fmt::format("the path has {} `*` and the checkpoint name \"{}\" has {}; each index of the path goes "
                       "to one `*` of the name",
                       keyStars, value, valueStars);
  return {};
}

}  // namespace

Bindings Bindings::parse(std::string_view json, std::string_view source) {
  auto doc = parseJsonStrict(json, source);
  if (!doc.is_object())
    throw Error(fmt::format("{}: bindings must be a JSON object mapping Linnet parameter paths to checkpoint tensor "
                            "names, got {}",
                            source, jsonSnippet(doc)));
  std::vector<std::string> problems;
  Bindings b;
  b.source_ = std::string(source);
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key().empty()) {
      problems.push_back(fmt::format("an entry has an empty Linnet path (value {})", jsonSnippet(it.value())));
      continue;
    }
    if (!it.value().is_string()) {
      problems.push_back(fmt::format("\"{}\": value must be a checkpoint tensor name (a string), got {}", it.key(),
                                     jsonSnippet(it.value())));
      continue;
    }
    std::string name = it.value().get<std::string>();
    if (name.empty()) {
      problems.push_back(fmt::format("\"{}\": the checkpoint tensor name is empty", it.key()));
      continue;
    }
    if (std::string why = patternProblem(it.key(), name); !why.empty()) {
      problems.push_back(fmt::format("\"{}\": {}", it.key(), why));
      continue;
    }
    b.entries_.emplace(it.key(), std::move(name));
  }
  if (!problems.empty())
    throw Error(fmt::format("{}: {} invalid binding{}:\n  {}", source, problems.size(), problems.size() == 1 ? "" : "s",
                            fmt::join(problems, "\n  ")));
  return b;
}

Bindings Bindings::load(const std::filesystem::path& path) {
  MappedFile m = MappedFile::open(path);
  std::string_view text(reinterpret_cast<const char*>(m.bytes().data()), m.size());
  return parse(text, path.string());
}

Bindings Bindings::fromEntries(std::map<std::string, std::string> entries, std::string source) {
  Bindings b;
  b.entries_.insert(entries.begin(), entries.end());
  b.source_ = std::move(source);
  return b;
}

std::optional<std::vector<std::string_view>> matchPattern(std::string_view pattern, std::string_view path) {
  auto want = components(pattern), have = components(path);
  if (want.size() != have.size()) return std::nullopt;
  std::vector<std::string_view> indices;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] == "*") {
      if (!isIndex(have[i])) return std::nullopt;
      indices.push_back(have[i]);
    } else if (want[i] != have[i]) {
      return std::nullopt;
    }
  }
  return indices;
}

std::string fillPattern(std::string_view name, const std::vector<std::string_view>& indices) {
  std::string out;
  std::size_t next = 0;
  for (char c : name) {
    if (c == '*' && next < indices.size()) out += indices[next++];
    else out += c;
  }
  return out;
}

std::optional<std::string> Bindings::find(std::string_view path) const {
  if (auto it = entries_.find(path); it != entries_.end()) return it->second;
  for (const auto& [key, value] : entries_) {
    if (key.find('*') == std::string::npos) continue;
    if (auto indices = matchPattern(key, path)) return fillPattern(value, *indices);
  }
  return std::nullopt;
}

// --- binding -----------------------------------------------------------------

std::string pathPattern(std::string_view path) {
  std::string out;
  bool first = true;
  for (std::string_view part : components(path)) {
    if (!first) out += '.';
    first = false;
    out += isIndex(part) ? std::string_view("*") : part;
  }
  return out;
}

namespace {

struct Plan {
  const ParamSpec* param;
  std::string name;
  const TensorInfo* tensor;
};

std::string describe(const Shape& s, DType t) { return fmt::format("{} {}", shapeString(s), linnet::name(t)); }

std::vector<std::string> analyze(const std::vector<ParamSpec>& expected, const Bindings& bindings,
                                 const Checkpoint& ckpt, const BindOptions& options, std::vector<Plan>* plans) {
  if (options.convertTo && *options.convertTo != DType::F32 && *options.convertTo != DType::BF16 &&
      *options.convertTo != DType::F16)
    throw Error(fmt::format("BindOptions.convertTo = {} is not supported; weights convert only to f32, bf16 or f16",
                            linnet::name(*options.convertTo)));
  std::vector<std::string> problems;
  std::vector<std::string_view> ckptNames;
  auto ckptNameList = [&]() -> const std::vector<std::string_view>& {
    if (ckptNames.empty())
      for (const auto& t : ckpt.tensors()) ckptNames.push_back(t.name);
    return ckptNames;
  };

  // Patterns of the model's paths, and the bindings matching none of them.
  std::set<std::string> patterns;
  std::set<std::string_view> expectedPaths;
  for (const ParamSpec& p : expected) {
    patterns.insert(pathPattern(p.path));
    expectedPaths.insert(p.path);
  }
  std::vector<std::string_view> unknownPaths;
  for (const auto& [path, name] : bindings.entries())
    if (!expectedPaths.count(path) && !patterns.count(pathPattern(path))) unknownPaths.push_back(path);

  std::set<std::string_view> seen;
  for (const ParamSpec& p : expected) {
    std::string want = describe(p.shape, p.dtype);
    if (!seen.insert(p.path).second) {
      problems.push_back(fmt::format("{}: the model lists this parameter twice (a compiler bug)", p.path));
      continue;
    }
    std::optional<std::string> name = bindings.find(p.path);
    if (!name) {
      std::string near = closestName(p.path, unknownPaths);
      problems.push_back(fmt::format("{} -> (none): no binding in {}; model expects {}. {}", p.path, bindings.source(),
                                     want,
                                     near.empty() ? fmt::format("Add \"{}\": \"<checkpoint tensor name>\"", p.path)
                                                  : fmt::format("Is \"{}\" a misspelling of it?", near)));
      continue;
    }
    const TensorInfo* t = ckpt.find(*name);
    if (!t) {
      std::string near = closestName(*name, ckptNameList());
      problems.push_back(fmt::format("{} -> {}: not in the checkpoint; model expects {}{}", p.path, *name, want,
                                     near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near)));
      continue;
    }
    std::string have = describe(t->shape, t->dtype);
    std::string where = ckpt.files().size() > 1 ? fmt::format(" (in {})", ckpt.files()[t->file].filename().string())
                                                 : std::string();
    bool shapeOk = t->shape == p.shape;
    bool dtypeOk = t->dtype == p.dtype;
    bool convert = !dtypeOk && options.convertTo && *options.convertTo == p.dtype && canConvert(t->dtype, p.dtype);
    if (shapeOk && (dtypeOk || convert)) {
      if (plans) plans->push_back({&p, *name, t});
      continue;
    }
    std::string what = !shapeOk && !dtypeOk ? "shape and dtype mismatch" : !shapeOk ? "shape mismatch" : "dtype mismatch";
    std::string hint;
    if (!dtypeOk && !convert) {
      if (!canConvert(t->dtype, p.dtype))
        hint = fmt::format("; {} does not convert to {} (only f32, bf16 and f16 convert)", linnet::name(t->dtype),
                           linnet::name(p.dtype));
      else if (options.convertTo)
        hint = fmt::format("; conversion was asked to {}, but this parameter is {}", linnet::name(*options.convertTo),
                           linnet::name(p.dtype));
      else
        hint = fmt::format("; set BindOptions.convertTo = {} to convert at load, or instantiate the model with {} parameters",
                           linnet::name(p.dtype), linnet::name(t->dtype));
    }
    problems.push_back(fmt::format("{} -> {}: {}: model expects {}, checkpoint has {}{}{}", p.path, *name, what, want,
                                   have, where, hint));
  }

  // Bindings for parameters the model does not have for any index (those
  // matching a pattern are e.g. layers beyond the instantiated count). The
  // suggestion prefers parameters left without a binding: the likely
  // intended spelling.
  std::vector<std::string_view> unbound, all;
  for (const ParamSpec& p : expected) {
    all.push_back(p.path);
    if (!bindings.find(p.path)) unbound.push_back(p.path);
  }
  for (std::string_view path : unknownPaths) {
    const std::string& name = bindings.entries().find(path)->second;
    std::string pattern = pathPattern(path);
    std::string near = closestName(path, unbound);
    if (near.empty()) near = closestName(path, all);
    problems.push_back(fmt::format("{} -> {}: {} binds a parameter the model does not have{}{}", path, name,
                                   bindings.source(),
                                   pattern != path ? fmt::format(" (no {} for any index)", pattern) : std::string(),
                                   near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near)));
  }
  return problems;
}

}  // namespace

std::vector<std::string> bindingProblems(const std::vector<ParamSpec>& expected, const Bindings& bindings,
                                         const Checkpoint& checkpoint, BindOptions options) {
  return analyze(expected, bindings, checkpoint, options, nullptr);
}

BoundWeights bind(const std::vector<ParamSpec>& expected, const Bindings& bindings, const Checkpoint& checkpoint,
                  BindOptions options) {
  std::vector<Plan> plans;
  auto problems = analyze(expected, bindings, checkpoint, options, &plans);
  if (!problems.empty())
    throw Error(fmt::format("cannot bind the model's {} parameter{} to checkpoint {} through {}: {} problem{}:\n  {}",
                            expected.size(), expected.size() == 1 ? "" : "s", checkpoint.description(),
                            bindings.source(), problems.size(), problems.size() == 1 ? "" : "s",
                            fmt::join(problems, "\n  ")));
  BoundWeights out;
  out.checkpoint_ = checkpoint;
  out.tensors_.reserve(plans.size());
  for (const Plan& plan : plans) {
    BoundTensor b;
    b.param = *plan.param;
    b.checkpointName = plan.name;
    b.storedDType = plan.tensor->dtype;
    b.file = plan.tensor->file;
    b.converted = plan.tensor->dtype != plan.param->dtype;
    if (b.converted) {
      std::size_t n = plan.tensor->data.size() / linnet::byteSize(plan.tensor->dtype) * linnet::byteSize(plan.param->dtype);
      auto buf = std::make_unique<std::byte[]>(n);
      convertElements(plan.tensor->dtype, plan.tensor->data, plan.param->dtype, {buf.get(), n});
      b.data = {buf.get(), n};
      out.owned_.push_back(std::move(buf));
    } else {
      b.data = plan.tensor->data;
    }
    out.index_.emplace(b.param.path, out.tensors_.size());
    out.tensors_.push_back(std::move(b));
  }
  return out;
}

const BoundTensor* BoundWeights::find(std::string_view path) const {
  auto it = index_.find(path);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const BoundTensor& BoundWeights::at(std::string_view path) const {
  if (const BoundTensor* t = find(path)) return *t;
  throw Error(fmt::format("no bound parameter '{}' (the model did not ask for it)", path));
}

std::size_t BoundWeights::totalBytes() const {
  std::size_t n = 0;
  for (const auto& t : tensors_) n += t.data.size();
  return n;
}

std::size_t BoundWeights::convertedCount() const {
  return static_cast<std::size_t>(
      std::count_if(tensors_.begin(), tensors_.end(), [](const BoundTensor& t) { return t.converted; }));
}

}  // namespace linnet::weights
