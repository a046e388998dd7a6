// `linnet grad PACKAGE (--weights W | --random-weights) [--set K=V]...
// --entry NAME [--generic K=N]... --input NAME=VALUE... [--cotangent
// @FILE.npy] [--wrt PATTERN]... -o GRADS.safetensors`: an entry's value and
// its gradient for every param (docs/train.md, "linnet grad"). linnet.cpp
// parses the command and the entry's inputs as `call` does; this file
// chooses the params and writes the result.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nest/nest.h"

namespace linnet::tools {

// The params `--wrt` patterns choose: a pattern (shell wildcards `*`, `?`)
// matches a param's Linnet path (`layers.0.mlp.up.weight`) or its checkpoint
// name through bindings.json (`model.layers.0.mlp.up_proj.weight`); no
// pattern chooses every param. A pattern that matches no param is a Usage
// error naming it.
std::function<bool(const std::string&)> chooseParams(const nest::Model& model, const std::string& package,
                                                     const std::vector<std::string>& patterns);

// `output` (a new or regular file; written whole or not at all) gets every
// gradient, f32, under its checkpoint name; stdout one JSON object: the
// entry, its value, the count of params and the output's path.
void writeGradient(const nest::Gradient& gradient, const std::string& entry, const std::string& package,
                   const std::string& output);

}  // namespace linnet::tools
