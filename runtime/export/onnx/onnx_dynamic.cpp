#include "export/onnx/onnx_dynamic.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace linnet::exporter::onnx_export {

namespace {

// A multilinear polynomial in n generics with integer coefficients:
// coef[mask] multiplies the product of the generics whose bits mask has.
using Poly = std::vector<int64_t>;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The values of an integer tensor, or nullopt for any other element type.
std::optional<std::vector<int64_t>> integerValues(const onnx::TensorProto& t) {
  int width = 0;
  bool isSigned = true;
  switch (t.data_type()) {
    case onnx::TensorProto::INT64: width = 8; break;
    case onnx::TensorProto::INT32: width = 4; break;
    case onnx::TensorProto::INT16: width = 2; break;
    case onnx::TensorProto::INT8: width = 1; break;
    case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL: width = 1, isSigned = false; break;
    default: return std::nullopt;
  }
  std::vector<int64_t> out;
  if (t.data_type() == onnx::TensorProto::INT64 && t.int64_data_size() > 0) {
    out.assign(t.int64_data().begin(), t.int64_data().end());
    return out;
  }
  if (t.int32_data_size() > 0) {
    out.assign(t.int32_data().begin(), t.int32_data().end());
    return out;
  }
  const std::string& raw = t.raw_data();
  for (size_t k = 0; k + width <= raw.size(); k += width) {
    uint64_t u = 0;
    std::memcpy(&u, raw.data() + k, width);  // little-endian
    if (isSigned && width < 8 && (u >> (8 * width - 1)) & 1) u |= ~uint64_t(0) << (8 * width);
    out.push_back(static_cast<int64_t>(u));
  }
  return out;
}

const onnx::TensorProto* constantValue(const onnx::NodeProto& n) {
  if (n.op_type() != "Constant" || n.attribute_size() != 1 || n.attribute(0).name() != "value") return nullptr;
  return &n.attribute(0).t();
}

std::string describeSizes(const Sizes& s) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : s) parts.push_back(fmt::format("{}={}", k, v));
  return fmt::format("{}", fmt::join(parts, " "));
}

class Unifier {
 public:
  Unifier(const std::vector<std::string>& generics, const Sizes& fixed) : names_(generics), n_(generics.size()) {
    for (const std::string& g : generics) {
      auto it = fixed.find(g);
      base_.push_back(std::max<int64_t>(it == fixed.end() ? 0 : it->second, 3));
    }
    // The fitting grid {p, p + 1}^n, then sizes that confirm the fit: all
    // at p + 2, all at 2p + 5, the two mixed, and the sizes asked for.
    for (size_t mask = 0; mask < (size_t{1} << n_); ++mask) samples_.push_back(at(fixed, [&](size_t i) {
      return base_[i] + ((mask >> i) & 1);
    }));
    samples_.push_back(at(fixed, [&](size_t i) { return base_[i] + 2; }));
    samples_.push_back(at(fixed, [&](size_t i) { return 2 * base_[i] + 5; }));
    if (n_ > 1) samples_.push_back(at(fixed, [&](size_t i) { return i % 2 ? base_[i] + 2 : 2 * base_[i] + 5; }));
    Sizes asked = fixed;
    bool inGrid = true;
    for (size_t i = 0; i < n_; ++i) {
      if (!fixed.count(names_[i])) asked[names_[i]] = base_[i];
      inGrid = inGrid && (asked[names_[i]] == base_[i] || asked[names_[i]] == base_[i] + 1);
    }
    if (!inGrid) samples_.push_back(asked);
  }

  // The graph with the dynamic generics' constants computed; throws Failure.
  DynamicAxes run(const LowerAt& lower) {
    for (const Sizes& s : samples_) {
      try {
        graphs_.push_back(lower(s));
      } catch (const std::exception& e) {
        throw Failure(fmt::format("the entry does not lower at {}: {}", describeSizes(s), e.what()));
      }
    }
    const onnx::GraphProto& g0 = graphs_[0];
    for (const onnx::GraphProto& g : graphs_)
      if (g.node_size() != g0.node_size() || g.input_size() != g0.input_size() || g.output_size() != g0.output_size())
        throw Failure(fmt::format("the graph has {} nodes at {} but {} at {}", g0.node_size(),
                                  describeSizes(samples_[0]), g.node_size(), describeSizes(samples_[&g - &graphs_[0]])));
    DynamicAxes out;
    out.graph = g0;
    out.graph.clear_node();
    std::vector<onnx::NodeProto> rewritten;
    for (int k = 0; k < g0.node_size(); ++k) rewriteNode(k, rewritten);
    // Every dynamic generic is read from an input axis of exactly its size.
    Poly one(size_t{1} << n_, 0);
    for (size_t i = 0; i < n_; ++i) {
      Poly xi = one;
      xi[size_t{1} << i] = 1;
      bool found = false;
      for (int k = 0; k < g0.input_size() && !found; ++k)
        for (int a = 0; a < rank(g0.input(k)); ++a)
          if (fitDim(&onnx::GraphProto::input, k, a) == xi) {
            axisOf_.push_back({g0.input(k).name(), a});
            out.dynamic[names_[i]] = fmt::format("{}, axis {}", g0.input(k).name(), a);
            found = true;
            break;
          }
      if (!found) throw Failure(fmt::format("no input of the entry has an axis of size {}", names_[i]));
    }
    // The shared values first (they read only inputs), then the graph's nodes.
    std::vector<onnx::NodeProto> prelude;
    materialize(prelude);
    for (onnx::NodeProto& n : prelude) *out.graph.add_node() = std::move(n);
    for (onnx::NodeProto& n : rewritten) *out.graph.add_node() = std::move(n);
    for (int k = 0; k < g0.input_size(); ++k) nameDims(*out.graph.mutable_input(k), &onnx::GraphProto::input, k);
    for (int k = 0; k < g0.output_size(); ++k) nameDims(*out.graph.mutable_output(k), &onnx::GraphProto::output, k);
    return out;
  }

 private:
  using ValueList = const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& (onnx::GraphProto::*)() const;

  template <class F>
  Sizes at(const Sizes& fixed, F size) const {
    Sizes s = fixed;
    for (size_t i = 0; i < n_; ++i) s[names_[i]] = size(i);
    return s;
  }

  static int rank(const onnx::ValueInfoProto& v) { return v.type().tensor_type().shape().dim_size(); }

  // The polynomial through the grid's values, checked at the other samples.
  Poly fit(const std::vector<int64_t>& values, const std::string& what) const {
    const size_t m = size_t{1} << n_;
    // f = sum_mask c[mask] prod_{i in mask} (x_i - p_i): c by inclusion-exclusion.
    Poly c(m, 0);
    for (size_t mask = 0; mask < m; ++mask)
      for (size_t s = mask;; s = (s - 1) & mask) {
        c[mask] += ((std::popcount(mask) - std::popcount(s)) % 2 ? -1 : 1) * values[s];
        if (s == 0) break;
      }
    // In the plain basis: a[s] = sum_{mask >= s} c[mask] prod_{i in mask \ s} (-p_i).
    Poly a(m, 0);
    for (size_t mask = 0; mask < m; ++mask)
      for (size_t s = mask;; s = (s - 1) & mask) {
        int64_t term = c[mask];
        for (size_t i = 0; i < n_; ++i)
          if (((mask & ~s) >> i) & 1) term *= -base_[i];
        a[s] += term;
        if (s == 0) break;
      }
    for (size_t k = m; k < samples_.size(); ++k)
      if (eval(a, samples_[k]) != values[k])
        throw Failure(fmt::format("{} is {} at {}, not the {} that its values at {} and the sizes next to it give "
                                  "(it is not multilinear in {})",
                                  what, values[k], describeSizes(samples_[k]), eval(a, samples_[k]),
                                  describeSizes(samples_[0]), fmt::join(names_, ", ")));
    return a;
  }

  int64_t eval(const Poly& a, const Sizes& s) const {
    int64_t v = 0;
    for (size_t mask = 0; mask < a.size(); ++mask) {
      int64_t t = a[mask];
      for (size_t i = 0; i < n_; ++i)
        if ((mask >> i) & 1) t *= s.at(names_[i]);
      v += t;
    }
    return v;
  }

  std::string text(const Poly& a) const {
    std::string out;
    for (size_t mask = a.size(); mask-- > 0;) {  // S before its constant: "S - 1"
      if (a[mask] == 0) continue;
      std::vector<std::string> factors;
      if (a[mask] != 1 || mask == 0) factors.push_back(std::to_string(a[mask] < 0 && !out.empty() ? -a[mask] : a[mask]));
      for (size_t i = 0; i < n_; ++i)
        if ((mask >> i) & 1) factors.push_back(names_[i]);
      std::string term = fmt::format("{}", fmt::join(factors, "*"));
      out += out.empty() ? term : (a[mask] < 0 ? " - " : " + ") + term;
    }
    return out.empty() ? "0" : out;
  }

  Poly fitDim(ValueList list, int k, int axis) const {
    std::vector<int64_t> values;
    for (const onnx::GraphProto& g : graphs_) {
      const onnx::ValueInfoProto& v = (g.*list)().Get(k);
      if (rank(v) != rank((graphs_[0].*list)().Get(k)))
        throw Failure(fmt::format("`{}` changes rank with the sizes", v.name()));
      values.push_back(v.type().tensor_type().shape().dim(axis).dim_value());
    }
    return fit(values, fmt::format("axis {} of `{}`", axis, (graphs_[0].*list)().Get(k).name()));
  }

  void nameDims(onnx::ValueInfoProto& v, ValueList list, int k) const {
    onnx::TensorShapeProto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int a = 0; a < shape->dim_size(); ++a) {
      Poly p = fitDim(list, k, a);
      if (std::all_of(p.begin() + 1, p.end(), [](int64_t c) { return c == 0; })) continue;
      shape->mutable_dim(a)->set_dim_param(text(p));
    }
  }

  void rewriteNode(int k, std::vector<onnx::NodeProto>& out) {
    const onnx::NodeProto& n0 = graphs_[0].node(k);
    const onnx::TensorProto* t0 = constantValue(n0);
    std::vector<std::vector<int64_t>> values;
    for (size_t s = 0; s < graphs_.size(); ++s) {
      const onnx::NodeProto& n = graphs_[s].node(k);
      const std::string where = fmt::format("node {} ({}, output `{}`)", n0.name(), n0.op_type(),
                                            n0.output_size() ? n0.output(0) : "");
      if (n.op_type() != n0.op_type() || n.name() != n0.name() ||
          n.input().size() != n0.input().size() || !std::equal(n.input().begin(), n.input().end(), n0.input().begin()) ||
          n.output().size() != n0.output().size() || !std::equal(n.output().begin(), n.output().end(), n0.output().begin()))
        throw Failure(fmt::format("the graph at {} has {} where the graph at {} has {}", describeSizes(samples_[s]),
                                  n.name(), describeSizes(samples_[0]), where));
      if (!t0) {
        if (n.SerializeAsString() != n0.SerializeAsString())
          throw Failure(fmt::format("{} has other attributes at {}", where, describeSizes(samples_[s])));
        continue;
      }
      const onnx::TensorProto* t = constantValue(n);
      if (!t || t->data_type() != t0->data_type() || t->dims_size() != t0->dims_size() ||
          !std::equal(t->dims().begin(), t->dims().end(), t0->dims().begin()))
        throw Failure(fmt::format("{} has another shape at {}", where, describeSizes(samples_[s])));
      if (t->SerializeAsString() == t0->SerializeAsString()) {
        values.push_back({});
        continue;
      }
      std::optional<std::vector<int64_t>> v = integerValues(*t);
      if (!v) throw Failure(fmt::format("{} holds other non-integer values at {}", where, describeSizes(samples_[s])));
      values.push_back(std::move(*v));
    }
    if (!t0 || std::all_of(values.begin(), values.end(), [](const auto& v) { return v.empty(); })) {
      out.push_back(n0);
      return;
    }
    const std::vector<int64_t> v0 = *integerValues(*t0);
    for (auto& v : values)
      if (v.empty()) v = v0;
    // Each element: a literal, or its polynomial.
    std::vector<std::string> pieces;
    std::vector<int64_t> literals;
    auto flush = [&] {
      if (literals.empty()) return;
      pieces.push_back(constant(literals, out));
      literals.clear();
    };
    for (size_t e = 0; e < v0.size(); ++e) {
      std::vector<int64_t> at;
      for (const auto& v : values) at.push_back(v[e]);
      if (std::all_of(at.begin(), at.end(), [&](int64_t x) { return x == at[0]; })) {
        literals.push_back(at[0]);
        continue;
      }
      flush();
      pieces.push_back(valueOf(fit(at, fmt::format("element {} of constant `{}`", e, n0.output(0)))));
    }
    flush();
    std::string value = pieces.size() == 1 ? pieces[0] : add(out, "Concat", pieces, [](onnx::NodeProto& n) {
      onnx::AttributeProto* a = n.add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(0);
    });
    std::vector<int64_t> dims(t0->dims().begin(), t0->dims().end());
    if (dims.size() != 1) value = add(out, "Reshape", {value, constant(dims, out)});
    if (t0->data_type() != onnx::TensorProto::INT64)
      value = add(out, "Cast", {value}, [&](onnx::NodeProto& n) {
        onnx::AttributeProto* a = n.add_attribute();
        a->set_name("to");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(t0->data_type());
      });
    onnx::NodeProto& last = out.emplace_back();
    last.set_op_type("Identity");
    last.set_name(n0.name());
    last.add_input(value);
    last.add_output(n0.output(0));
  }

  std::string fresh() { return fmt::format("dyn.{}", next_++); }

  std::string add(std::vector<onnx::NodeProto>& out, const char* type, const std::vector<std::string>& inputs,
                  const std::function<void(onnx::NodeProto&)>& attributes = {}) {
    onnx::NodeProto& n = out.emplace_back();
    n.set_op_type(type);
    std::string name = fresh();
    n.set_name(name);
    for (const std::string& i : inputs) n.add_input(i);
    n.add_output(name);
    if (attributes) attributes(n);
    return name;
  }

  std::string constant(const std::vector<int64_t>& values, std::vector<onnx::NodeProto>& out) {
    return add(out, "Constant", {}, [&](onnx::NodeProto& n) {
      onnx::AttributeProto* a = n.add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      onnx::TensorProto* t = a->mutable_t();
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(static_cast<int64_t>(values.size()));
      for (int64_t v : values) t->add_int64_data(v);
    });
  }

  // A 1-element int64 tensor holding the polynomial, computed once in the
  // prelude (materialize), after the input axes are known.
  std::string valueOf(const Poly& p) {
    auto [it, added] = polyNames_.try_emplace(p, std::string());
    if (added) it->second = fmt::format("dyn.value.{}", polyNames_.size());
    return it->second;
  }

  void materialize(std::vector<onnx::NodeProto>& out) {
    std::vector<std::string> dims;
    for (size_t i = 0; i < n_; ++i)
      dims.push_back(add(out, "Shape", {axisOf_[i].first}, [&](onnx::NodeProto& n) {
        for (const char* key : {"start", "end"}) {
          onnx::AttributeProto* a = n.add_attribute();
          a->set_name(key);
          a->set_type(onnx::AttributeProto::INT);
          a->set_i(axisOf_[i].second + (key[0] == 'e'));
        }
      }));
    std::map<size_t, std::string> monomials;
    auto monomial = [&](size_t mask) {
      auto it = monomials.find(mask);
      if (it != monomials.end()) return it->second;
      std::string v;
      for (size_t i = 0; i < n_; ++i)
        if ((mask >> i) & 1) v = v.empty() ? dims[i] : add(out, "Mul", {v, dims[i]});
      return monomials[mask] = v;
    };
    for (const auto& [p, name] : polyNames_) {
      std::string sum = constant({p[0]}, out);
      for (size_t mask = 1; mask < p.size(); ++mask) {
        if (p[mask] == 0) continue;
        std::string term = p[mask] == 1 ? monomial(mask) : add(out, "Mul", {constant({p[mask]}, out), monomial(mask)});
        sum = add(out, "Add", {sum, term});
      }
      onnx::NodeProto& n = out.emplace_back();
      n.set_op_type("Identity");
      n.set_name(name);
      n.add_input(sum);
      n.add_output(name);
    }
  }

  std::vector<std::string> names_;
  size_t n_;
  std::vector<int64_t> base_;
  std::vector<Sizes> samples_;
  std::vector<onnx::GraphProto> graphs_;
  std::vector<std::pair<std::string, int>> axisOf_;  // generic i: (input, axis)
  std::map<Poly, std::string> polyNames_;
  int64_t next_ = 0;
};

}  // namespace

DynamicAxes makeDynamic(const LowerAt& lower, const std::vector<std::string>& generics, const Sizes& fixed) {
  DynamicAxes best;
  bool haveBest = false;
  std::vector<std::string> chosen;
  std::map<std::string, std::string> why;
  for (const std::string& g : generics) {
    std::vector<std::string> trial = chosen;
    trial.push_back(g);
    try {
      best = Unifier(trial, fixed).run(lower);
      haveBest = true;
      chosen = trial;
    } catch (const Failure& e) {
      why[g] = e.what();
    }
  }
  if (!haveBest) best.graph = lower(fixed);
  best.staticWhy = std::move(why);
  return best;
}

}  // namespace linnet::exporter::onnx_export
