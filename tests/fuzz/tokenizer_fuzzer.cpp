// libFuzzer target for linnet_tokenizer: arbitrary bytes as tokenizer.json,
// then a few fixed texts encoded and decoded. Ids must lie in the
// vocabulary, and streaming decode must equal decode where tokenizer.h
// promises it. Any outcome but success or tokenizer::Error is a bug; so is
// memory or time out of proportion to the file (-rss_limit_mb, -timeout).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

using namespace linnet::tokenizer;

namespace {

const char* const kTexts[] = {
    "Hello, world! It's 2024.",
    "  leading and trailing  \n\t",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 <|endoftext|><s></s>",
    "",
};

void roundTrip(const Tokenizer& t, std::string_view text, bool special) {
  std::vector<int32_t> ids = t.encode(text, special, special);
  for (int32_t id : ids)
    if (id < 0 || static_cast<size_t>(id) >= t.vocabSize()) std::abort();
  std::string whole = t.decode(ids, special);
  StreamDecoder stream = t.streamDecoder(special);
  std::string pieces;
  for (int32_t id : ids) pieces += stream.push(id);
  pieces += stream.finish();
  // Equal, as tokenizer.h promises, unless invalid byte sequences (U+FFFD)
  // are involved: a later byte can invalidate text already emitted.
  if (pieces != whole && whole.find("\xEF\xBF\xBD") == std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    Tokenizer t = Tokenizer::fromJson(json);
    for (const char* text : kTexts) {
      roundTrip(t, text, false);
      roundTrip(t, text, true);
    }
    // Ids around the vocabulary, known or not, decode without failing.
    std::vector<int32_t> ids;
    for (int32_t id = -2; id < 40; ++id) ids.push_back(id);
    ids.push_back(static_cast<int32_t>(t.vocabSize()));
    (void)t.decode(ids);
    (void)t.describe();
  } catch (const Error&) {
  }
  return 0;
}
