#include "tools/grad_command.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/output_file.h"
#include "gguf/architecture.h"
#include "tools/arguments.h"
#include "weights/bindings.h"

namespace linnet::tools {

namespace {

namespace fs = std::filesystem;

// A param's checkpoint name through the package's bindings.json, or its
// path when the package binds none.
std::function<std::string(const std::string&)> checkpointNames(const std::string& package) {
  fs::path file = fs::path(package) / "bindings.json";
  if (!fs::exists(file)) return [](const std::string& path) { return path; };
  auto bindings = std::make_shared<weights::Bindings>(weights::Bindings::load(file));
  return [bindings](const std::string& path) { return bindings->find(path).value_or(path); };
}

bool matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

std::function<bool(const std::string&)> chooseParams(const nest::Model& model, const std::string& package,
                                                     const std::vector<std::string>& patterns) {
  if (patterns.empty()) return [](const std::string&) { return true; };
  auto name = checkpointNames(package);
  std::map<std::string, bool> chosen;  // by path
  const std::vector<nest::ParamInfo> params = model.params();
  for (const std::string& pattern : patterns) {
    bool any = false;
    for (const nest::ParamInfo& p : params)
      if (matches(pattern, p.path) || matches(pattern, name(p.path))) any = chosen[p.path] = true;
    if (!any) {
      const nest::ParamInfo& first = params.front();
      throw Usage(fmt::format("--wrt `{}` matches no param: patterns (with * and ?) match a path like `{}` or its "
                              "checkpoint name `{}`",
                              pattern, first.path, name(first.path)));
    }
  }
  return [chosen](const std::string& path) { return chosen.count(path) > 0; };
}

void requireGradientOutput(const std::string& output) {
  if (auto why = unwritableOutput(output)) throw Usage(fmt::format("-o {}", *why));
  fs::path folder = fs::absolute(output).parent_path();
  if (!fs::is_directory(folder))
    throw Usage(fmt::format("-o {}: the folder {} does not exist; make it first", output, folder.string()));
}

void writeGradient(const nest::Gradient& gradient, const std::string& entry, const std::string& package,
                   const std::string& output) {
  requireGradientOutput(output);
  auto name = checkpointNames(package);
  std::map<std::string, gguf::Tensor> tensors;
  for (size_t k = 0; k < gradient.params.size(); ++k) {
    const nest::Tensor& g = gradient.grads[k];
    gguf::Tensor t;
    t.shape = g.shape;
    t.dtype = g.dtype;
    t.data.assign(g.data(), g.data() + g.byteSize());
    tensors[name(gradient.params[k])] = std::move(t);
  }
  std::vector<std::byte> bytes = gguf::toSafetensors(tensors, {{"format", "pt"}, {"entry", entry}});
  // Beside the output, renamed over it once whole.
  fs::path temp = fs::path(output).concat(fmt::format(".tmp-{}", getpid()));
  {
    std::ofstream f(temp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      throw nest::Error(fmt::format("{}: cannot write the gradients here", output));
    }
  }
  std::error_code ec;
  fs::rename(temp, output, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw nest::Error(fmt::format("{}: cannot write the gradients here ({})", output, ec.message()));
  }
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
