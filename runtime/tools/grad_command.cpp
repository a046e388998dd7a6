#include "tools/grad_command.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "tools/arguments.h"
#include "tools/checkpoint_output.h"

namespace linnet::tools {

namespace {

bool matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

std::function<bool(const std::string&)> chooseParams(const nest::Model& model, const std::string& package,
                                                     const std::vector<std::string>& patterns) {
  if (patterns.empty()) return [](const std::string&) { return true; };
  auto name = checkpointNames(package);
  std::set<std::string> chosen;  // paths
  const std::vector<nest::ParamInfo> params = model.params();
  for (const std::string& pattern : patterns) {
    bool any = false;
    for (const nest::ParamInfo& p : params)
      if (matches(pattern, p.path) || matches(pattern, name(p.path))) {
        chosen.insert(p.path);
        any = true;
      }
    if (!any) {
      const nest::ParamInfo& first = params.front();
      throw Usage(fmt::format("--wrt `{}` matches no param: patterns (with * and ?) match a path like `{}` or its "
                              "checkpoint name `{}`",
                              pattern, first.path, name(first.path)));
    }
  }
  return [chosen](const std::string& path) { return chosen.count(path) > 0; };
}

void writeGradient(const nest::Gradient& gradient, const std::string& entry, const std::string& package,
                   const std::string& output) {
  auto name = checkpointNames(package);
  std::map<std::string, nest::Tensor> tensors;
  // Params bound to one checkpoint tensor (a tied output head) add up, as
  // that tensor's gradient in torch does.
  for (size_t k = 0; k < gradient.params.size(); ++k) {
    auto [it, fresh] = tensors.emplace(name(gradient.params[k]), gradient.grads[k]);
    if (!fresh)
      for (int64_t i = 0; i < it->second.size(); ++i)
        it->second.set(i, static_cast<float>(it->second.asDouble(i)) + static_cast<float>(gradient.grads[k].asDouble(i)));
  }
  writeSafetensors(output, tensors, {{"format", "pt"}, {"entry", entry}});
  nlohmann::ordered_json line = {{"entry", entry}};
  const nest::Tensor& v = gradient.value;
  if (v.size() == 1) {
    line["value"] = v.asDouble(0);
  } else {
    std::vector<double> values;
    for (int64_t k = 0; k < v.size(); ++k) values.push_back(v.asDouble(k));
    line["value"] = values;
  }
  line["params"] = gradient.params.size();
  line["output"] = output;
  fmt::print("{}\n", line.dump());
}

}  // namespace linnet::tools
