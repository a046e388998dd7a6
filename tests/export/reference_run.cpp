// linnet_reference_run: entries of a nest package run one after another on
// the reference backend (the oracle), writing each result and every state
// after each call as .npy, for tests/export/check_onnx_with_onnxruntime.py
// to compare ONNX Runtime's outputs and `present` caches with. (`linnet
// call` writes results but not states.)
//
//   linnet_reference_run PACKAGE (--weights PATH | --random-weights) [--set K=V]... --out DIR
//       (--entry NAME [--generic K=N]... [--input NAME=FILE.npy]...)...
// writes DIR/<step>.result<k>.npy and DIR/<step>.<state path>.npy for step 0, 1, ...
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "export/checked_package.h"
#include "nest/params.h"
#include "nest/tensor.h"
#include "targets/reference/model.h"
#include "weights/npy.h"

using namespace linnet;
namespace fs = std::filesystem;

namespace {

reference::Tensor fromBytes(DType dtype, const std::vector<int64_t>& shape, std::span<const std::byte> bytes) {
  reference::Tensor r = reference::Tensor::zeros(dtype, shape);
  for (int64_t k = 0; k < r.size(); ++k) {
    const std::byte* at = bytes.data() + k * byteSize(dtype);
    if (r.isFloat()) r.f[k] = nest::loadElement(dtype, at);
    else r.i[k] = nest::loadIntElement(dtype, at);
  }
  return r;
}

void save(const fs::path& p, const reference::Tensor& t) {
  nest::Tensor n = nest::Tensor::zeros(t.dtype, t.shape);
  for (int64_t k = 0; k < t.size(); ++k) {
    if (t.isFloat()) n.set(k, t.f[k]);
    else n.setInt(k, t.i[k]);
  }
  weights::writeNpy(p, t.dtype, t.shape, n.bytes());
}

struct Step {
  std::string entry;
  std::map<std::string, int64_t> generics;
  std::vector<std::string> inputs;  // .npy files, in the entry's parameter order
};

std::pair<std::string, std::string> split(const std::string& s) {
  auto eq = s.find('=');
  if (eq == std::string::npos) throw std::runtime_error(fmt::format("`{}`: expected K=V", s));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.empty()) throw std::runtime_error("usage: see the top of tests/export/reference_run.cpp");
  std::string package = a[0];
  nest::LoadOptions load;
  fs::path out;
  std::vector<Step> steps;
  for (size_t k = 1; k < a.size(); ++k) {
    auto value = [&] {
      if (k + 1 >= a.size()) throw std::runtime_error(a[k] + " needs a value");
      return a[++k];
    };
    if (a[k] == "--weights") load.weights = value();
    else if (a[k] == "--random-weights") load.randomWeights = true;
    else if (a[k] == "--convert") load.convertDTypes = true;
    else if (a[k] == "--set") {
      auto [n, v] = split(value());
      if (!v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-'))
        load.generics.insert_or_assign(n, nest::GenericValue(static_cast<int64_t>(std::stoll(v))));
      else
        load.generics.insert_or_assign(n, v);
    } else if (a[k] == "--out") out = value();
    else if (a[k] == "--entry") steps.push_back({value(), {}, {}});
    else if (a[k] == "--generic") {
      auto [n, v] = split(value());
      steps.at(steps.size() - 1).generics[n] = std::stoll(v);
    } else if (a[k] == "--input") steps.at(steps.size() - 1).inputs.push_back(split(value()).second);
    else throw std::runtime_error(fmt::format("unknown argument `{}`", a[k]));
  }
  fs::create_directories(out);
  auto checked = exporter::checkPackage(package, load);
  reference::Model model(*checked->program);
  std::vector<nest::ParamInfo> params;
  for (const reference::ParamSpec& p : model.params()) params.push_back({p.path, p.shape, p.dtype, std::nullopt});
  std::map<std::string, int64_t> dims;
  for (const auto& [n, v] : checked->program->package().generics)
    if (v.number) dims[n] = *v.number;
  std::vector<nest::ParamBytes> bytes = nest::bindParams(package, params, dims, load);
  size_t next = 0;
  model.bind([&](const reference::ParamSpec& s) { return fromBytes(s.dtype, s.shape, bytes[next++].bytes); });
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<reference::Tensor> args;
    for (const std::string& f : steps[s].inputs) {
      weights::NpyArray x = weights::readNpy(f);
      args.push_back(fromBytes(x.dtype, x.shape, x.data));
    }
    std::vector<reference::Tensor> results = model.call(steps[s].entry, args, steps[s].generics);
    for (size_t r = 0; r < results.size(); ++r) save(out / fmt::format("{}.result{}.npy", s, r), results[r]);
    for (const reference::ParamSpec& st : model.states())
      save(out / fmt::format("{}.{}.npy", s, st.path), model.state(st.path));
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "linnet_reference_run: {}\n", e.what());
  return 1;
}
