// libFuzzer target for the command-line value parsers: the `linnet` tool's
// (runtime/tools/arguments.h) and linnetc's `--set K=V`
// (sema::Program::setGeneric). The first byte picks the parser, the rest is
// the argument. Each result is checked against a reference reading of the
// text done here with 128-bit arithmetic: an integer is either exact or
// refused, never saturated or wrapped. Refusals must be the parser's own
// error (tools::Usage, a diagnostic); anything else is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/diagnostics.h"
#include "sema/program.h"
#include "tools/arguments.h"

using namespace linnet::tools;

namespace {

enum class IntText { NotInt, OutOfRange, Fits };

// The integer a text denotes: `blanks` leading whitespace (as strtoll skips
// it) or none, an optional sign, then only decimal digits.
IntText referenceInt(const std::string& s, bool blanks, int64_t& value) {
  size_t i = 0;
  if (blanks)
    while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i == s.size()) return IntText::NotInt;
  __int128 v = 0;
  bool big = false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return IntText::NotInt;
    v = v * 10 + (s[i] - '0');
    if (v > (static_cast<__int128>(1) << 64)) big = true, v = static_cast<__int128>(1) << 64;
  }
  if (negative) v = -v;
  if (big || v > INT64_MAX || v < INT64_MIN) return IntText::OutOfRange;
  value = static_cast<int64_t>(v);
  return IntText::Fits;
}

void check(bool ok) {
  if (!ok) std::abort();
}

void fuzzInt(const std::string& s) {
  int64_t want = 0;
  IntText kind = referenceInt(s, true, want);
  try {
    int64_t got = parseInt(s, "--n");
    check(kind == IntText::Fits && got == want);
  } catch (const Usage&) {
    check(kind != IntText::Fits);
  }
}

void fuzzList(const std::string& s, bool skipEmpty) {
  std::vector<int64_t> want;
  bool refused = false;
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    std::string one = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t v = 0;
    if (!(one.empty() && skipEmpty)) {
      if (referenceInt(one, true, v) == IntText::Fits) want.push_back(v);
      else refused = true;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  try {
    std::vector<int64_t> got = parseIntList(s, "--prompt-ids", skipEmpty);
    check(!refused && got == want);
  } catch (const Usage&) {
    check(refused);
  }
}

void fuzzGeneric(const std::string& s) {
  int64_t want = 0;
  IntText kind = referenceInt(s, true, want);
  try {
    auto got = parseGenericValue(s, "--set");
    if (kind == IntText::Fits) check(std::get<int64_t>(got) == want);
    else check(kind == IntText::NotInt && std::get<std::string>(got) == s);
  } catch (const Usage&) {
    check(kind == IntText::OutOfRange);
  }
}

void fuzzLiteral(const std::string& s) {
  int64_t want = 0;
  IntText kind = referenceInt(s, true, want);
  try {
    Literal got = parseLiteral(s);
    if (s == "true" || s == "false") check(got.kind == Literal::Bool && got.integer == (s == "true"));
    else if (kind == IntText::Fits) check(got.kind == Literal::Int && got.integer == want);
    else check(kind == IntText::NotInt && got.kind == Literal::Float);
  } catch (const Usage&) {
    check(kind != IntText::Fits);
  }
}

void fuzzNumber(const std::string& s) {
  try {
    double d = parseNumber(s, "--top-p", 0, 1, true);
    check(std::isfinite(d) && d > 0 && d <= 1);
  } catch (const Usage&) {
  }
}

void fuzzAssignment(const std::string& s) {
  try {
    auto [k, v] = splitAssignment(s, "--input");
    check(!k.empty() && k.find('=') == std::string::npos && k + "=" + v == s);
  } catch (const Usage&) {
    check(s.empty() || s[0] == '=' || s.find('=') == std::string::npos);
  }
}

// linnetc's --set: Name=Value, Value an integer (no blanks) or a dtype name.
void fuzzSetGeneric(const std::string& s) {
  linnet::SourceManager sources;
  linnet::Diagnostics diags(sources);
  linnet::sema::Program program(sources, diags, "");
  bool ok = program.setGeneric(s);
  check(ok != diags.hasErrors());
  size_t eq = s.find('=');
  bool shaped = eq != std::string::npos && eq > 0 && eq + 1 < s.size();
  if (!shaped) return check(!ok);
  std::string value = s.substr(eq + 1);
  int64_t want = 0;
  // "+" or "-" alone is a name; otherwise a signed run of digits is a number.
  IntText kind = value.size() == 1 && (value[0] == '+' || value[0] == '-') ? IntText::NotInt
                                                                           : referenceInt(value, false, want);
  check(ok == (kind != IntText::OutOfRange));
  if (!ok) return;
  const linnet::sema::GenericValue& got = program.package().generics.at(s.substr(0, eq));
  if (kind == IntText::Fits) check(got.number && *got.number == want);
  else check(!got.number && got.dtype == value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // An argv string ends at its first NUL; the parsers never see one.
  std::string s(reinterpret_cast<const char*>(data) + 1, size - 1);
  s = s.substr(0, s.find('\0'));
  switch (data[0] % 8) {
    case 0: fuzzInt(s); break;
    case 1: fuzzList(s, false); break;
    case 2: fuzzList(s, true); break;
    case 3: fuzzGeneric(s); break;
    case 4: fuzzLiteral(s); break;
    case 5: fuzzNumber(s); break;
    case 6: fuzzAssignment(s); break;
    case 7: fuzzSetGeneric(s); break;
  }
  return 0;
}
