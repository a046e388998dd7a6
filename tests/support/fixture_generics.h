// A test fixture's generics (`generics.txt` beside its checkpoint: one
// `K=V` a line, as `--set` takes them) into nest::LoadOptions.
#pragma once

#include <cctype>
#include <fstream>
#include <string>

#include "nest/nest.h"

namespace linnet::testing {

// `K=V`: a number when V starts with a digit, else a name (`f32`).
inline void setGeneric(nest::LoadOptions& options, const std::string& line) {
  auto eq = line.find('=');
  std::string k = line.substr(0, eq), v = line.substr(eq + 1);
  if (std::isdigit(static_cast<unsigned char>(v[0]))) options.generics.insert_or_assign(k, static_cast<int64_t>(std::stoll(v)));
  else options.generics.insert_or_assign(k, v);
}

// Every line of `path`.
inline void setGenerics(nest::LoadOptions& options, const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) setGeneric(options, line);
}

}  // namespace linnet::testing
