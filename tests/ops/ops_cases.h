// The per-op conformance cases: one small Linnet entry per primitive or
// operator x dtype x shape, generated from the primitive table
// (compiler/syntax/primitives.def) and the operator table
// (compiler/syntax/operators.def) with X-macros, so a new row gets cases
// by its class, or is reported (a failing pseudo-case) until it has a
// generator or a listed reason to be skipped.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ops_tensor.h"

namespace linnet::ops {

using Outputs = std::vector<Values>;
// An independent computation of the expected result from the language's
// definition (docs/language.md §7, §9, §11), for the cases whose semantics
// are elementwise: checked against the reference backend.
using Oracle = std::function<Outputs(const std::vector<Values>&)>;

struct Case {
  std::string name;     // the entry's name, unique: `add_i32_pairs`
  std::string family;   // the operator or primitive: `+`, `sum`, `gather`, `comprehension`
  Scalar dtype = Scalar::F32;  // the dtype it is counted under
  std::string group;    // the package it is written into
  std::string params;   // `a: Tensor[16, 1; i32], b: Tensor[16; i32]`
  std::string result;   // `Tensor[16, 16; i32]`, `(Tensor[3; f32], i32)`
  std::string body;     // the entry's statements
  std::string helpers;  // module-level items the body calls (optional)
  std::vector<std::vector<Values>> runs;  // the inputs of each call
  Tolerance tol;        // floats: how far a backend may be from the reference
  // The language leaves the values unspecified (a shift past the width,
  // say): the result's type is checked, not its values.
  std::string unspecified;
  Oracle oracle;        // optional
};

struct Suite {
  std::vector<Case> cases;
  // Rows of the tables with no case generator and no listed reason: each
  // fails the suite.
  std::vector<std::string> missing;
  // Rows deliberately without cases, with the reason.
  std::vector<std::pair<std::string, std::string>> skipped;
};

Suite generateSuite();

// The Linnet text of an entry: `pub entry name(params) -> result { body }`.
std::string entryText(const Case& c);

const char* dtypeName(Scalar s);

}  // namespace linnet::ops
