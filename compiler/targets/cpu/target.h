// The CPU target (targets/target.h): stages bufferized, lowered (the LLVM
// dialect) and llvm (LLVM IR); the artifact's code is model.so.
#pragma once

#include <memory>

#include "targets/target.h"

namespace linnet::cpu {

std::unique_ptr<targets::Target> makeTarget();

}  // namespace linnet::cpu
