// What a model's params and state take, checked before anything is
// allocated, and the one place that words allocation failures: the sizes,
// the generics that set them, and this machine's memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nest/nest.h"

namespace linnet::nest {

struct Footprint {
  std::vector<ParamInfo> params, states;     // in the model's dtypes
  std::map<std::string, int64_t> dims;       // the root generics, to name what sizes them
};

uint64_t bytesOf(const std::vector<ParamInfo>& tensors);
// The machine's physical memory (sysconf), 0 when unknown.
uint64_t physicalMemory();
// "476.84 GiB".
std::string formatBytes(uint64_t bytes);

// Throws Error when params and state together exceed physical memory.
void checkFootprint(const Footprint& f);
// The Error for an allocation that failed anyway (std::bad_alloc).
Error allocationFailure(const Footprint& f, const std::string& during);

}  // namespace linnet::nest
