#include "driver/generate.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <map>

namespace linnet::driver {

namespace {

using sema::Scalar;

// A whole decimal integer in int64, or std::nullopt: never saturated, wrapped
// or cut short (std::stoll takes `12abc` as 12).
std::optional<int64_t> parseInt64(const std::string& text) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// `x=i32:1x8` -> (i32, [1, 8]); `pos=i32:` is a scalar; `pos=int:` a literal.
ir::TensorSpec parseArg(const std::string& text) {
  auto eq = text.find('=');
  std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
  std::string rest = eq == std::string::npos ? text : text.substr(eq + 1);
  auto colon = rest.find(':');
  if (colon == std::string::npos) throw std::runtime_error(fmt::format("--arg `{}`: expected NAME=DTYPE:D0xD1...", text));
  // `int` and `float`: a literal that takes the parameter's declared dtype.
  std::string dtName = rest.substr(0, colon);
  bool weak = dtName == "int" || dtName == "float";
  auto dt = weak ? std::optional(dtName == "int" ? Scalar::I64 : Scalar::F32) : sema::scalarNamed(dtName);
  if (!dt) throw std::runtime_error(fmt::format("--arg `{}`: unknown element type", text));
  ir::TensorSpec s{name, *dt, {}, weak};
  std::string dims = rest.substr(colon + 1);
  size_t at = 0;
  while (at < dims.size()) {
    size_t x = dims.find('x', at);
    std::string d = dims.substr(at, x == std::string::npos ? std::string::npos : x - at);
    auto n = parseInt64(d);
    if (!n)
      throw std::runtime_error(fmt::format("--arg `{}`: `{}` is not a dimension (an integer from "
                                           "0 to {})",
                                           text, d, INT64_MAX));
    s.shape.push_back(*n);
    if (x == std::string::npos) break;
    at = x + 1;
  }
  return s;
}

const syntax::BlockDecl& rootBlock(const sema::Program& program) {
  return *program.lookup(*program.root(), program.package().rootBlock)->block;
}

}  // namespace

std::vector<artifact::Signature> signatures(const sema::Program& program) {
  std::vector<artifact::Signature> out;
  for (const auto& fn : rootBlock(program).fns) {
    if (!fn->isEntry) continue;
    artifact::Signature s{fn->name.name, {}};
    for (const auto& p : fn->params) s.params.push_back(p.name.name);
    out.push_back(std::move(s));
  }
  return out;
}

Generated generate(ir::MLIRGen& gen, const sema::Program& program, const BuildArgs& args, bool attentionKernel) {
  // Entry generics: --generic, then nest.toml's [check].
  // With --arg the argument shapes bind them instead of [check].
  std::map<std::string, int64_t> generics;
  if (args.argSpecs.empty())
    for (const auto& [k, v] : program.package().check)
      if (v.number) generics[k] = *v.number;
  for (const auto& g : args.generics) {
    auto eq = g.find('=');
    if (eq == std::string::npos) throw std::runtime_error(fmt::format("--generic `{}`: expected NAME=VALUE", g));
    auto n = parseInt64(g.substr(eq + 1));
    if (!n)
      throw std::runtime_error(fmt::format("--generic `{}`: `{}` is not an integer in 64 bits "
                                           "signed ({} to {})",
                                           g, g.substr(eq + 1), INT64_MIN, INT64_MAX));
    // Entry generics are dimensions: a negative one would reach MLIR as a
    // negative size (an internal error), not a message.
    if (*n < 0)
      throw std::runtime_error(fmt::format("--generic `{}`: `{}` is a dimension and needs a non-negative integer, "
                                           "not `{}`",
                                           g, g.substr(0, eq), *n));
    generics[g.substr(0, eq)] = *n;
  }
  std::vector<std::string> names = args.entries;
  if (names.empty())
    for (const auto& s : signatures(program)) names.push_back(s.name);
  Generated out;
  for (const std::string& name : names) {
    try {
      std::vector<ir::TensorSpec> specs;
      if (!args.argSpecs.empty()) {
        for (const auto& a : args.argSpecs) specs.push_back(parseArg(a));
      } else {
        specs = gen.entryParams(name, generics);
      }
      autodiff::Policy tape = autodiff::policyNamed(args.tape);
      out.entries.push_back(args.gradient ? gen.addGradient(name, specs, generics, args.wrt, tape, args.lowRank,
                                                            attentionKernel)
                                          : gen.addEntry(name, specs, generics));
    } catch (const ir::GenError& e) {
      if (!args.entries.empty()) throw;
      out.skipped.push_back({name, e.what()});
      fmt::print(stderr, "linnetc: entry `{}` not compiled: {}\n", name, e.what());
    }
  }
  return out;
}

}  // namespace linnet::driver
