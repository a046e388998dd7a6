// What the export tests export: the llama card and its two-layer f32
// fixture (tests/data/llama/gqa2) at the generics that fit it, and the
// tokenizer fixture (tests/data/export/tokenizer).
#pragma once

#include <map>
#include <string>

#include "nest/nest.h"

namespace linnet::test {

inline const std::string kCard = std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct";
inline const std::string kGqa2 = std::string(LINNET_TEST_DATA) + "/llama/gqa2/model.safetensors";
inline const std::string kTokenizer = std::string(LINNET_TEST_DATA) + "/export/tokenizer/tokenizer.json";

inline std::map<std::string, nest::GenericValue> gqa2Generics() {
  return {{"Vocab", 64}, {"H", 64}, {"Heads", 4}, {"KvHeads", 2}, {"Inner", 96}, {"Layers", 2}, {"MaxSeq", 64}, {"T", "f32"}};
}

// An export of the card bound to the gqa2 fixture, written to `out`: any of
// the formats' options (they share package, load and output).
template <class Options>
Options gqa2Export(const std::string& out) {
  Options o;
  o.package = kCard;
  o.load.weights = kGqa2;
  o.load.generics = gqa2Generics();
  o.output = out;
  return o;
}

}  // namespace linnet::test
