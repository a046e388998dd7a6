#include "tools/checkpoint_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/output_file.h"
#include "gguf/architecture.h"
#include "tools/arguments.h"
#include "weights/bindings.h"

namespace linnet::tools {

namespace fs = std::filesystem;

void requireOutputFile(const std::string& output) {
  if (auto why = unwritableOutput(output)) throw Usage(fmt::format("-o {}", *why));
  fs::path folder = fs::absolute(output).parent_path();
  if (!fs::is_directory(folder))
    throw Usage(fmt::format("-o {}: the folder {} does not exist; make it first", output, folder.string()));
}

std::function<std::string(const std::string&)> checkpointNames(const std::string& package) {
  fs::path file = fs::path(package) / "bindings.json";
  if (!fs::exists(file)) return [](const std::string& path) { return path; };
  auto bindings = std::make_shared<weights::Bindings>(weights::Bindings::load(file));
  return [bindings](const std::string& path) { return bindings->find(path).value_or(path); };
}

void writeSafetensors(const std::string& output, const std::map<std::string, nest::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  requireOutputFile(output);
  std::map<std::string, gguf::Tensor> stored;
  for (const auto& [name, t] : tensors) {
    gguf::Tensor& s = stored[name];
    s.shape = t.shape;
    s.dtype = t.dtype;
    s.data.assign(t.data(), t.data() + t.byteSize());
  }
  std::vector<std::byte> bytes = gguf::toSafetensors(stored, metadata);
  fs::path temp = besideOutput(output);
  std::ofstream f(temp, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw nest::Error(fmt::format("{}: cannot write here", output));
  }
  renameIntoPlace(temp, output);
}

fs::path besideOutput(const std::string& output) { return fs::path(output).concat(fmt::format(".tmp-{}", getpid())); }

void renameIntoPlace(const fs::path& temp, const std::string& output) {
  std::error_code ec;
  if (fs::is_directory(output)) fs::remove_all(output, ec);  // a folder is not renamed over
  fs::rename(temp, output, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    throw nest::Error(fmt::format("{}: cannot write here ({})", output, ec.message()));
  }
}

}  // namespace linnet::tools
