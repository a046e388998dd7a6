// A safetensors file written whole or not at all: what `linnet grad` and
// `linnet finetune` write (tensors under their checkpoint names).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "nest/nest.h"

namespace linnet::tools {

// Usage unless `output` can take a file: absent or a regular file, in a
// folder that exists (checked before a model loads).
void requireOutputFile(const std::string& output);

// A param path's checkpoint name through the package's bindings.json, or
// the path itself when the package binds none.
std::function<std::string(const std::string&)> checkpointNames(const std::string& package);

// Where an output is written before renameIntoPlace: beside it, named for
// this process.
std::filesystem::path besideOutput(const std::string& output);
// `temp` (a file, or a folder replacing a folder) renamed onto `output`;
// on failure `temp` is removed and the Error names `output`.
void renameIntoPlace(const std::filesystem::path& temp, const std::string& output);

// `tensors` (by name) to `output`, beside it then renamed into place.
void writeSafetensors(const std::string& output, const std::map<std::string, nest::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata);

}  // namespace linnet::tools
