// The per-op suite's gradient mode (docs/train.md, "Gradients"):
//   linnet_ops_gradient_tests [--filter TEXT]... [--verbose]
// Every case of tests/ops whose value is one float tensor is differentiated
// with respect to its float inputs (compiler/autodiff, on the reference
// backend, the value weighed by a seeded random cotangent) and checked
// against central differences of the same entry. Both run in float64 (the
// reference backend's WideFloats: no rounding to the case's dtype), so the
// rule is tight: |derived - differences| <= 1e-6 of the input's largest
// gradient. An element where the entry is not smooth (a kink of abs, a tie
// of max, a step of floor: the one-sided differences disagree) or whose
// magnitude passes 1e5 (no step fits) is skipped and counted; a case whose gradient the compiler refuses (`prod`,
// `%`, a `while`, a state write) is listed with the reason. Exit 1 on any
// mismatch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "base/diagnostics.h"
#include "ops_cases.h"
#include "ops_package.h"
#include "sema/checker.h"
#include "sema/program.h"
#include "targets/reference/model.h"

namespace fs = std::filesystem;
using namespace linnet::ops;
using linnet::reference::Model;
using RTensor = linnet::reference::Tensor;

namespace {

constexpr double kRule = 1e-6;
constexpr int kElementsPerInput = 6;

RTensor toReference(const Values& v) {
  RTensor t = RTensor::zeros(v.dtype, v.shape);
  if (t.isFloat()) t.f = v.f;
  else t.i = v.i;
  return t;
}

bool finite(const RTensor& t) {
  return std::all_of(t.f.begin(), t.f.end(), [](double v) { return std::isfinite(v); });
}

struct Tally {
  int cases = 0, elements = 0, kinks = 0, failures = 0;
  std::map<std::string, std::string> refused;  // family -> reason
};

// One case on one run of inputs.
class GradientCheck {
 public:
  GradientCheck(Model& model, const Case& c, std::vector<RTensor> args, Tally& tally, bool verbose)
      : model_(model), c_(c), args_(std::move(args)), tally_(tally), verbose_(verbose) {}

  void run() {
    std::vector<RTensor> y = model_.call(c_.name, args_);
    if (y.size() != 1 || !y[0].isFloat() || !finite(y[0])) return;
    std::mt19937_64 rng(std::hash<std::string>{}(c_.name));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    if (y[0].size() != 1) {
      cotangent_ = RTensor::zeros(y[0].dtype, y[0].shape);
      for (double& v : cotangent_->f) v = u(rng);
    }
    if (verbose_) fmt::print(stderr, "case {}\n", c_.name);
    Model::Gradient g;
    try {
      g = model_.gradient(c_.name, args_, {}, [](const std::string&) { return false; }, cotangent_, true);
    } catch (const linnet::reference::EvalError& e) {
      tally_.refused[c_.family] = e.what();
      return;
    }
    ++tally_.cases;
    for (size_t k = 0; k < g.inputs.size(); ++k) checkInput(g.inputs[k], g.inputGrads[k], rng);
  }

 private:
  Model& model_;
  const Case& c_;
  std::vector<RTensor> args_;
  Tally& tally_;
  bool verbose_;
  std::optional<RTensor> cotangent_;

  // The value with argument `input`'s element `at` moved by `step`.
  RTensor value(size_t input, int64_t at, double step) {
    std::vector<RTensor> args = args_;
    args[input].f[at] += step;
    return model_.call(c_.name, args).at(0);
  }
  // The cotangent-weighed change of the value between two moves, element
  // by element first: a large value elsewhere (1e30) must not swallow it.
  double change(const RTensor& to, const RTensor& from) const {
    double s = 0;
    for (int64_t k = 0; k < to.size(); ++k) s += (to.f[k] - from.f[k]) * (cotangent_ ? cotangent_->f[k] : 1.0);
    return s;
  }

  void checkInput(size_t input, const RTensor& grad, std::mt19937_64& rng) {
    const RTensor& x = args_[input];
    double scale = 1e-3;
    for (double v : grad.f) scale = std::max(scale, std::abs(v));
    std::vector<int64_t> elements;
    for (int64_t k = 0; k < x.size(); ++k) elements.push_back(k);
    std::shuffle(elements.begin(), elements.end(), rng);
    elements.resize(std::min<size_t>(elements.size(), kElementsPerInput));
    for (int64_t at : elements) {
      // A step of 1e-4: small enough for the curvature of sin at any x (a
      // step relative to x is not), large against the spacing of doubles
      // below 1e5 (past it, not checked).
      if (std::abs(x.f[at]) > 1e5) {
        ++tally_.kinks;
        continue;
      }
      const double step = 1e-4;
      RTensor here = value(input, at, 0), up = value(input, at, step), down = value(input, at, -step);
      double forward = change(up, here) / step, backward = change(here, down) / step;
      double central = change(up, down) / (2 * step);
      // One-sided slopes that disagree: a kink (abs at 0, a tie of max) or a step (floor).
      if (!std::isfinite(central) || std::abs(forward - backward) > 1e-2 * scale) {
        ++tally_.kinks;
        continue;
      }
      ++tally_.elements;
      double derived = grad.f[at];
      bool ok = std::abs(derived - central) <= kRule * scale;
      if (!ok) ++tally_.failures;
      if (!ok || verbose_)
        fmt::print("{} {}: input {} element {} (x = {}): derived {:.12g}, differences {:.12g} (scale {:.3g})\n",
                   ok ? "ok  " : "FAIL", c_.name, input, at, x.f[at], derived, central, scale);
    }
  }
};

// The cases of one group, checked on their first run of inputs.
void checkGroup(const fs::path& dir, const std::vector<const Case*>& cases, Tally& tally, bool verbose) {
  linnet::SourceManager sources;
  linnet::Diagnostics diags(sources);
  linnet::sema::Program program(sources, diags, LINNET_STDLIB_DIR);
  program.loadPackage(dir.string());
  linnet::sema::Checker checker(program, diags);
  checker.checkDefinitions();
  if (diags.hasErrors() || !checker.instantiateRoot()) {
    fmt::print("FAIL {}: does not check:\n{}\n", dir.string(), diags.render());
    ++tally.failures;
    return;
  }
  Model model(program);
  model.bind([](const linnet::reference::ParamSpec& p) { return RTensor::zeros(p.dtype, p.shape); });
  for (const Case* c : cases) {
    if (c->runs.empty()) continue;
    std::vector<RTensor> args;
    bool anyFloat = false, allFinite = true;
    for (const Values& v : c->runs[0]) {
      args.push_back(toReference(v));
      anyFloat |= args.back().isFloat();
      if (args.back().isFloat()) allFinite &= finite(args.back());
    }
    if (!anyFloat || !allFinite) continue;
    GradientCheck(model, *c, std::move(args), tally, verbose).run();
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> filters;
  bool verbose = false;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--filter" && k + 1 < argc) filters.push_back(argv[++k]);
    else if (a == "--verbose" || a == "-v") verbose = true;
    else {
      fmt::print(stderr, "usage: linnet_ops_gradient_tests [--filter TEXT]... [--verbose]\n");
      return 2;
    }
  }
  linnet::reference::WideFloats wide;
  Suite suite = generateSuite();
  std::map<std::string, std::vector<const Case*>> groups;
  for (const Case& c : suite.cases) {
    bool keep = filters.empty();
    for (const auto& f : filters) keep = keep || c.name.find(f) != std::string::npos || c.family == f;
    if (keep && linnet::isFloat(c.dtype) && !c.result.empty() && c.result[0] != '(' && c.unspecified.empty())
      groups[c.group].push_back(&c);
  }
  fs::path work = fs::absolute(fs::path(LINNET_OPS_WORK) / "gradients");
  Tally tally;
  for (auto& [g, cs] : groups) {
    writePackage(work / g, "ops_" + g, cs);
    checkGroup(work / g, cs, tally, verbose);
  }
  for (const auto& [family, why] : tally.refused) fmt::print("no gradient: {}: {}\n", family, why);
  fmt::print("gradients: {} cases, {} elements checked, {} skipped (the entry not smooth there, or past 1e5), {} "
             "families refused, {} failures\n",
             tally.cases, tally.elements, tally.kinks, tally.refused.size(), tally.failures);
  return tally.failures == 0 && tally.cases > 0 ? 0 : 1;
}
