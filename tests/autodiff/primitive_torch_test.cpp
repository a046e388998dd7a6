// Every differentiable primitive's and operator's VJP (compiler/autodiff/
// vjp.cpp) against torch autograd, one small entry at a time: the fixture
// tests/data/autodiff/primitives/ (written by
// tests/autodiff/make_primitive_fixtures.py) holds a package of one entry
// per case, and per case its seeded inputs, cotangent, torch's value and
// torch's gradient of sum(value * cotangent) with respect to each float
// input, all float64. The derived gradient runs on the reference backend
// with WideFloats (f32 evaluated in float64, never rounded), so both sides
// compute the same function in the same precision and differ only in the
// order of their sums and in libm's last bits (exp, erf, pow). Rule: max
// |derived - torch| <= 1e-9 * (max |torch| + 1) per gradient, and the same
// for the value (so a case whose torch side computes another function
// fails as such, not as a wrong gradient).
//
// ops_gradients checks the same rules against finite differences on the
// per-op suite; this one pins the choices where finite differences see a
// kink (abs at 0, ties of maximum/max, pow at a base of 0, clamped indices)
// to torch's.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "sema/checker.h"
#include "sema/program.h"
#include "targets/reference/model.h"

using linnet::reference::Model;
using linnet::reference::Tensor;
using nlohmann::json;

namespace {

const std::string kDir = std::string(LINNET_TEST_DATA) + "/autodiff/primitives";

// 1e-9: both sides are float64; the differences measured are at most 2e-15
// of the scale (docs/train.md, "Gradients"), so 1e-9 leaves room for
// another libm while a wrong rule (a factor, a sign, a missing term of a
// broadcast or a scatter) is off by O(1).
constexpr double kRule = 1e-9;

// The keys a case's `covers` may name that this test requires at least one
// case for, each with a token its entry's text must contain (so a case
// cannot claim a primitive it does not call); empty where no one token
// tells (operators, broadcasting, indexing by tensors of indices).
const std::map<std::string, std::string> kExpected = {
    // Every PRIMITIVE row that is differentiable, or (iota, fill, options,
    // collectives) passes a float through or makes a constant.
    {"exp", "exp("}, {"log", "log("}, {"sin", "sin("}, {"cos", "cos("}, {"tanh", "tanh("}, {"sqrt", "sqrt("},
    {"rsqrt", "rsqrt("}, {"sigmoid", "sigmoid("}, {"abs", "abs("}, {"floor", "floor("}, {"erf", "erf("},
    {"maximum", "maximum("}, {"minimum", "minimum("}, {"pow", "pow("},
    {"sum", "sum("}, {"mean", "mean("}, {"max", "max("}, {"min", "min("},
    {"reshape", "reshape("}, {"permute", "permute("}, {"concat", "concat("}, {"iota", "iota<"}, {"fill", "fill<"},
    {"cast", "cast<"}, {"select", "select("}, {"gather", "gather("}, {"attention", "attention("},
    {"matmul", "matmul("}, {"some", "some("}, {"unwrap_or", "unwrap_or("},
    {"shard_sum", "shard_sum("}, {"shard_max", "shard_max("}, {"shard_shared", "shard_shared("},
    {"shard_concat", "shard_concat<"},
    // Forms of their own: the binder reductions, batched products,
    // slicing, indexing by tensors of indices, other comprehensions,
    // broadcasting.
    {"sum[]", "sum["}, {"max[]", "max["}, {"min[]", "min["}, {"matmul_batched", "matmul("}, {"slice", "["},
    {"index", "["}, {"comprehension", "let "}, {"broadcast", ""},
    // Operators.
    {"+", ""}, {"-", ""}, {"*", ""}, {"/", ""}, {"unary -", ""},
};

// Rows of the primitive and operator tables with no case, and why: each
// is refused by the compiler on a differentiated path, or has an integer
// or bool result (nothing to differentiate).
const std::map<std::string, std::string> kNotDifferentiable = {
    {"prod", "refused: `prod` has no gradient yet (vjp.cpp)"},
    {"write_slice", "refused (vjp.cpp)"},
    {"write_points", "refused (vjp.cpp)"},
    {"%", "integers only, and refused (vjp.cpp)"},
    {"index_of_max", "i32 result"}, {"all", "bool result"}, {"any", "bool result"},
    {"shard_index", "i64 result"},
    {"||", "bool"}, {"&&", "bool"}, {"!", "bool"}, {"|", "integers"}, {"^", "integers"}, {"&", "integers"},
    {"<<", "integers"}, {">>", "integers"}, {"==", "bool result"}, {"!=", "bool result"}, {"<", "bool result"},
    {"<=", "bool result"}, {">", "bool result"}, {">=", "bool result"},
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Each `pub entry NAME(` of the package's source, with its text up to the
// next entry.
std::map<std::string, std::string> entryTexts(const std::string& source) {
  std::map<std::string, std::string> out;
  const std::string mark = "pub entry ";
  for (size_t at = source.find(mark); at != std::string::npos;) {
    size_t next = source.find(mark, at + 1);
    size_t nameAt = at + mark.size();
    std::string name = source.substr(nameAt, source.find('(', nameAt) - nameAt);
    out[name] = source.substr(at, next == std::string::npos ? std::string::npos : next - at);
    at = next;
  }
  return out;
}

// The package checked and loaded once; the cases as the fixture lists them.
struct Fixture {
  json cases;
  std::map<std::string, std::string> entries;
  linnet::SourceManager sources;
  linnet::Diagnostics diags{sources};
  linnet::sema::Program program{sources, diags, LINNET_STDLIB_DIR};
  std::unique_ptr<Model> model;

  Fixture() {
    cases = json::parse(readFile(kDir + "/cases.json")).at("cases");
    entries = entryTexts(readFile(kDir + "/src/lib.linnet"));
    REQUIRE(program.loadPackage(kDir));
    linnet::sema::Checker checker(program, diags);
    checker.checkDefinitions();
    bool ok = checker.instantiateRoot().has_value();
    INFO(diags.render());
    REQUIRE(ok);
    REQUIRE_FALSE(diags.hasErrors());
    model = std::make_unique<Model>(program);
    model->bind([](const linnet::reference::ParamSpec& p) { return Tensor::zeros(p.dtype, p.shape); });
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

std::vector<int64_t> shapeOf(const json& j) { return j.get<std::vector<int64_t>>(); }

Tensor input(const json& in) {
  auto dtype = linnet::sema::scalarNamed(in.at("dtype").get<std::string>());
  REQUIRE(dtype.has_value());
  Tensor t = Tensor::zeros(*dtype, shapeOf(in.at("shape")));
  if (t.isFloat()) t.f = in.at("values").get<std::vector<double>>();
  else t.i = in.at("values").get<std::vector<int64_t>>();
  REQUIRE(t.size() == static_cast<int64_t>(t.isFloat() ? t.f.size() : t.i.size()));
  return t;
}

// How far `ours` is from torch's `want`, as a fraction of the rule's scale
// (max |want| + 1): the rule holds when this is at most kRule.
double difference(const Tensor& ours, const std::vector<double>& want) {
  REQUIRE(ours.isFloat());
  REQUIRE(ours.f.size() == want.size());
  double scale = 1, diff = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    scale = std::max(scale, std::abs(want[k]) + 1);
    diff = std::max(diff, std::abs(ours.f[k] - want[k]));
    if (!std::isfinite(ours.f[k])) diff = INFINITY;
  }
  return diff / scale;
}

struct Largest {
  double diff = 0;
  std::string where;
  void see(double d, const std::string& at) {
    if (d >= diff) diff = d, where = at;
  }
};

}  // namespace

// On the saved tape as well: attention's rule then recomputes its
// probabilities from the row statistics (autodiff/attention.h), also for
// the case of a row that sees no key.
TEST_CASE("every case's derived gradient equals torch autograd's") {
  using linnet::autodiff::Policy;
  const Policy policy = GENERATE(Policy::Scan, Policy::Saved);
  INFO("tape " << linnet::autodiff::policyName(policy));
  linnet::reference::WideFloats wide;
  Fixture& fx = fixture();
  REQUIRE(fx.cases.size() > 0);
  Largest largest;
  int grads = 0;
  for (const json& c : fx.cases) {
    const std::string name = c.at("name");
    INFO("case " << name);
    REQUIRE(fx.entries.count(name) == 1);
    std::vector<Tensor> args;
    std::vector<size_t> floats;  // the float arguments, whose gradients the entry's derivative returns
    std::vector<std::string> names;
    for (const json& in : c.at("inputs")) {
      args.push_back(input(in));
      names.push_back(in.at("name"));
      if (args.back().isFloat()) floats.push_back(args.size() - 1);
    }
    std::optional<Tensor> cotangent;
    if (!c.at("cotangent").is_null()) {
      cotangent = Tensor::zeros(linnet::sema::Scalar::F32, shapeOf(c.at("value").at("shape")));
      cotangent->f = c.at("cotangent").get<std::vector<double>>();
    }
    Model::Gradient g;
    try {
      g = fx.model->gradient(name, args, {}, [](const std::string&) { return false; }, cotangent, true, policy);
    } catch (const linnet::reference::EvalError& e) {
      FAIL_CHECK("no gradient: " << e.what());
      continue;
    }
    double dv = difference(g.value, c.at("value").at("values").get<std::vector<double>>());
    INFO("value differs by " << dv << " of its scale");
    CHECK(dv <= kRule);
    REQUIRE(g.inputs == floats);
    for (size_t k = 0; k < floats.size(); ++k) {
      const std::string& in = names[floats[k]];
      double d = difference(g.inputGrads[k], c.at("grads").at(in).get<std::vector<double>>());
      INFO("d value / d " << in << " differs from torch's by " << d << " of its scale");
      CHECK(d <= kRule);
      largest.see(d, name + "/" + in);
      ++grads;
    }
  }
  fmt::print("autodiff_primitives_torch: {} cases, {} input gradients; largest difference {:.3g} of the scale "
             "({})\n",
             fx.cases.size(), grads, largest.diff, largest.where);
}

TEST_CASE("every differentiable primitive and operator has a case, and every entry is a case") {
  Fixture& fx = fixture();
  std::map<std::string, int> covered;
  std::set<std::string> named;
  for (const json& c : fx.cases) {
    const std::string name = c.at("name");
    named.insert(name);
    INFO("case " << name);
    REQUIRE(fx.entries.count(name) == 1);
    for (const std::string& key : c.at("covers")) {
      INFO("covers " << key);
      REQUIRE(kExpected.count(key) == 1);
      // A case must call what it claims to cover.
      CHECK(fx.entries.at(name).find(kExpected.at(key)) != std::string::npos);
      ++covered[key];
    }
  }
  for (const auto& [key, token] : kExpected) {
    INFO("expected key " << key);
    CHECK(covered[key] > 0);
  }
  for (const auto& [entry, text] : fx.entries) {
    INFO("entry " << entry << " has no case in cases.json");
    CHECK(named.count(entry) == 1);
  }
  // Every row of the primitive and operator tables is either expected
  // above or listed as not differentiable: a new row fails here until it
  // has a case or a reason.
  std::vector<std::string> rows;
#define PRIMITIVE(Name, spelling) rows.push_back(spelling);
#include "syntax/primitives.def"
#define BINARY_OP(Name, Spelling, Precedence) rows.push_back(Spelling);
#define UNARY_OP(Name, Spelling) rows.push_back(std::string(Spelling) == "-" ? "unary -" : Spelling);
#include "syntax/operators.def"
  for (const std::string& row : rows) {
    INFO("table row " << row);
    CHECK(kExpected.count(row) + kNotDifferentiable.count(row) == 1);
  }
}
