// linnetc build --param-storage PATH=FORMAT: which params the compiled code
// reads in a storage format (common/storage.h) instead of as plain
// elements. The driver marks each entry function's param arguments with
// `linnet.storage` (the format's name), which linnet-pack-params reads:
// a planned param gets its format, every other f32 param of rank 2 or more
// "f32" (its weight products may then use a target's f32 kernel).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/storage.h"
#include "driver/generate.h"
#include "ir/mlirgen.h"

namespace linnet::driver {

// Parses the flags against the model's params; throws std::runtime_error
// naming the flag for an unknown path or format, a param that is not f32 of
// rank 2 or more, or a last axis that is not whole blocks of the format.
std::map<std::string, Storage> parseParamStorage(const std::vector<std::string>& flags,
                                                 const std::vector<ir::TensorSpec>& params);

// Sets `linnet.storage` on the param arguments of every generated entry.
void markParamStorage(mlir::ModuleOp module, const Generated& generated, const std::vector<ir::TensorSpec>& params,
                      const std::map<std::string, Storage>& plan);

}  // namespace linnet::driver
