// `linnet export FORMAT PACKAGE --weights PATH [--set K=V]... -o OUT`: the
// package's model, bound as `linnet call` binds it, written for another
// stack. One subcommand per format, each adding its own flags to the common
// ones (defineExport); today: gguf (llama.cpp), hf (Hugging Face). docs/export.md.
#pragma once

#include <CLI/CLI.hpp>

#include <map>

#include <string>

#include "nest/nest.h"

namespace linnet::tools {

struct ExportArgs {
  // Common to every format.
  std::string package, output;
  nest::LoadOptions load;
  bool force = false;
  // gguf
  std::string type, tokenizer;
  int64_t threads = 0;
  // hf (--tokenizer above)
  std::string dtype, shardSize;
  bool listFormats = false;  // `linnet export --formats`
  CLI::App* gguf = nullptr;
  CLI::App* hf = nullptr;
  // onnx
  std::string entry, externalData = "auto";
  bool staticAxes = false;  // onnx: no dynamic axes
  std::map<std::string, int64_t> entryGenerics;  // --generic
  CLI::App* onnx = nullptr;
};

// Adds `export` (and its formats) to `app`; the command's values land in `args`.
CLI::App* defineExport(CLI::App& app, ExportArgs& args);
// Runs the format that was parsed. Refusals throw (Usage: exit 2).
int runExport(ExportArgs& args);

}  // namespace linnet::tools
