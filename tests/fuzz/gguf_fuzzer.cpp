// libFuzzer target for linnet_gguf: arbitrary bytes parsed as a GGUF file
// from memory; everything the reader offers is then exercised on what
// parsed: metadata printing, dequantizing every tensor, the tokenizer and the
// Hugging Face views. Any outcome but success or gguf::Error (a crash, a
// hang, an unbounded allocation, another exception) is a bug.
//
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I runtime \
//     tests/fuzz/gguf_fuzzer.cpp runtime/gguf/*.cpp -lfmt -o /tmp/ggfuzz
//   /tmp/ggfuzz -max_total_time=60 -max_len=65536 tests/fuzz/corpus_gguf
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "gguf/gguf.h"
#include "gguf/architecture.h"
#include "gguf/tokenizer.h"

using namespace linnet::gguf;
using linnet::DType;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  File file;
  try {
    file = File::parse(bytes, "<fuzz>");
  } catch (const Error&) {
    return 0;
  }
  std::size_t sink = 0;
  for (const auto& [key, value] : file.metadata().entries()) sink += value.toString().size();
  for (const TensorInfo& t : file.tensors()) {
    try {
      std::vector<float> v = file.dequantize(t);
      sink += v.size();
      sink += file.read(t, DType::BF16).size();
    } catch (const Error&) {
    }
  }
  try {
    TokenizerData tok = readTokenizer(file);
    sink += huggingFaceTokenizerJson(tok).dump().size();
    sink += huggingFaceTokenizerConfig(tok).dump().size();
  } catch (const Error&) {
  }
  // Every family's table (the zoo's descriptors), each file read as its own.
  static const std::vector<Architecture> families = [] {
    std::vector<Architecture> out;
    for (const auto& e : std::filesystem::directory_iterator(LINNET_FAMILIES_DIR))
      if (e.path().extension() == ".toml") out.push_back(readArchitecture(e.path()));
    return out;
  }();
  for (Architecture arch : families) {
    arch.names = {file.architecture()};
    try {
      sink += huggingFaceConfig(file, arch).dump().size();
    } catch (const Error&) {
    }
    try {
      sink += loadAsHuggingFace(file, arch, {DType::F16, true}).size();
    } catch (const Error&) {
    }
  }
  static volatile std::size_t observed;
  observed = sink;  // keep the work observable
  return 0;
}
