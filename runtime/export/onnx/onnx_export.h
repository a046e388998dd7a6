// `linnet export onnx`: one entry of a nest package, instantiated with its
// generics (nest.toml's [generics], then --set; the entry's own from --set
// too), as an ONNX model (opset 17): the elaborated entry lowered node by
// node (onnx_lower.h), the entry's own generics as dynamic axes where the
// graph allows (onnx_dynamic.h), the params it reads as initializers named by their
// Linnet paths in the model's dtype, the states it touches as `past.<path>`
// inputs and `present.<path>` outputs. Initializers go to FILE.onnx.data
// beside the model when asked or when they pass 1 GiB. The model passes
// onnx::checker and shape inference before it is renamed into place.
// docs/export.md says what is written and how it was checked.
//
// Refused before anything is written: an existing output without `force`,
// an entry or generic that does not exist, a construct with no ONNX form
// (naming the primitive and its place), a model past protobuf's 2 GiB
// without external data, binding problems, too little disk space.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nest/nest.h"

namespace linnet::exporter {

enum class ExternalData { Auto, Always, Never };
std::optional<ExternalData> externalDataNamed(const std::string& name);  // auto, always, never

struct OnnxExportOptions {
  std::string package;
  // weights, generics (--set: the root's and the entry's), randomWeights + seed, convertDTypes, stdlib.
  nest::LoadOptions load;
  std::string entry;  // forward, prefill, decode, ...
  // The entry's own dimension generics (`--generic S=8`, as `linnet call`
  // takes them); a --set naming one of them does the same.
  std::map<std::string, int64_t> entryGenerics;
  std::string output;
  ExternalData externalData = ExternalData::Auto;
  bool force = false;
  // Off: every axis static, as bound. On (the default): the entry's own
  // dimension generics become named axes where the graph allows it
  // (onnx_dynamic.h); one without a value and left static is an error.
  bool dynamicAxes = true;
};

struct OnnxTensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;     // as lowered (a dynamic axis at its sampled size)
  std::vector<std::string> axes;  // per axis: its name where dynamic ("S", "B*S"), else empty
};

struct OnnxExportResult {
  std::string path, dataPath;  // dataPath empty without external data
  uint64_t bytes = 0, dataBytes = 0;
  size_t nodes = 0, initializers = 0;
  std::vector<OnnxTensorInfo> inputs, outputs;  // the graph's, in order
  std::map<std::string, int64_t> generics;      // the root's and the entry's static ones, as bound
  std::map<std::string, std::string> dynamic;   // entry generic -> the input axis it is read from
  std::map<std::string, std::string> staticWhy;  // entry generic left static -> why
  double seconds = 0;
};

// Throws nest::Error naming what is wrong; `log` gets notes, one line each.
OnnxExportResult exportOnnx(const OnnxExportOptions& options,
                            const std::function<void(const std::string&)>& log = {});

}  // namespace linnet::exporter
