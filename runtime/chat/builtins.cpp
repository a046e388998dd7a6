// What the builtins share: argument checks and Python's cased-string test.
#include "chat/builtins.h"

#include "chat/unicode.h"

namespace linnet::chat::detail {

int64_t toIntArg(Interpreter& in, const Value& v, const char* what) {
  if (v.isUndefined()) in.failUndefined(v);
  if (!v.isInt() && !v.isBool())
    in.fail("TypeError", std::string(what) + ": '" + v.typeName() + "' object cannot be interpreted as an integer");
  return v.intLike();
}

const std::string* optStringArg(Interpreter& in, const Value* v, const char* what) {
  if (!v || v->isNone()) return nullptr;
  if (!v->isString())
    in.fail("TypeError", std::string(what) + " arg must be None or str, not " + v->typeName());
  return &v->asString();
}

bool hasCased(const std::string& s, bool wantLower) {
  bool any = false;
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = decodeUtf8(s, i, len);
    i += len;
    if (!isCasedLetter(cp)) continue;
    any = true;
    bool lower = toLowerCp(cp) == cp && cp != 0x130;
    bool upper = toUpperCp(cp) == cp && cp != 0xDF;
    if (wantLower ? !lower : !upper) return false;
  }
  return any;
}

}  // namespace linnet::chat::detail
