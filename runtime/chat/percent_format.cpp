// Python's printf-style `fmt % args` (the `%` operator on a str, and the
// `format` filter).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chat/builtins.h"
#include "chat/unicode.h"

namespace linnet::chat::detail {

namespace {

// One conversion of `fmt % args` (%s, %r, %d, %x, %c, %f, ...) of `val`,
// before precision truncation and width padding.
std::string convertOne(Interpreter& in, char conv, const std::string& flags, int prec, const Value& val) {
  std::string piece;
  switch (conv) {
    case 's': piece = val.str(); break;
    case 'r':
    case 'a': piece = val.repr(); break;
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o':
    case 'c': {
      if (val.isUndefined()) in.failUndefined(val);
      if (conv == 'c' && val.isString()) {
        piece = val.asString();
        break;
      }
      if (!val.isNumber())
        in.fail("TypeError", std::string("%") + conv + " format: a number is required, not " + val.typeName());
      int64_t n = val.isFloat() ? static_cast<int64_t>(std::trunc(std::clamp(val.asFloat(), -9.2e18, 9.2e18)))
                                : val.intLike();
      char buf[64];
      if (conv == 'x' || conv == 'X' || conv == 'o') {
        std::snprintf(buf, sizeof buf, conv == 'x' ? "%llx" : conv == 'X' ? "%llX" : "%llo",
                      static_cast<unsigned long long>(n < 0 ? -(n + 1) + 1ULL : n));
        piece = std::string(n < 0 ? "-" : "") + buf;
      } else if (conv == 'c') {
        if (n < 0 || n > 0x10FFFF) in.fail("OverflowError", "%c arg not in range(0x110000)");
        appendUtf8(piece, static_cast<uint32_t>(n));
      } else {
        piece = std::to_string(n);
      }
      if (flags.find('+') != std::string::npos && n >= 0) piece = "+" + piece;
      break;
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G': {
      if (val.isUndefined()) in.failUndefined(val);
      if (!val.isNumber()) in.fail("TypeError", "must be real number, not " + val.typeName());
      char spec[16];
      std::snprintf(spec, sizeof spec, "%%%s.%d%c", flags.find('+') != std::string::npos ? "+" : "",
                    prec < 0 ? 6 : prec, conv);
      char buf[512];
      std::snprintf(buf, sizeof buf, spec, val.toDouble());
      piece = buf;
      break;
    }
    default: in.fail("ValueError", std::string("unsupported format character '") + conv + "'");
  }
  return piece;
}

}  // namespace

std::string pyPercentFormat(Interpreter& in, const std::string& fmt, const Value& args) {
  std::vector<Value> argv;
  const DictData* mapping = nullptr;
  // Like CPython: anything with __getitem__ but a tuple or str (dict, list,
  // jinja2's Undefined) is "mapping-like": it is the one argument, and
  // leftover arguments are no error.
  bool mappingLike = false;
  if (args.isSequence() && args.asList().isTuple) {
    argv = args.asList().items;
  } else {
    mappingLike = args.isDict() || args.isSequence() || args.isUndefined();
    if (args.isDict()) mapping = &args.asDict();
    argv.push_back(args);
  }
  size_t next = 0;
  bool usedMapping = false;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) in.fail("ValueError", "incomplete format");
    Value val;
    bool haveVal = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) in.fail("ValueError", "incomplete format key");
      if (args.isUndefined()) in.failUndefined(args);
      if (!mapping) in.fail("TypeError", "format requires a mapping");
      std::string key = fmt.substr(i + 1, close - i - 1);
      const Value* v = mapping->findStr(key);
      if (!v) in.fail("KeyError", pyReprString(key));
      val = *v;
      haveVal = true;
      usedMapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags.push_back(fmt[i++]);
    int width = -1, prec = -1;
    while (i < fmt.size() && isdigit(static_cast<unsigned char>(fmt[i]))) {
      width = std::min(1000, std::max(0, width) * 10 + (fmt[i] - '0'));
      ++i;
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      prec = 0;
      while (i < fmt.size() && isdigit(static_cast<unsigned char>(fmt[i]))) {
        prec = std::min(100, prec * 10 + (fmt[i] - '0'));
        ++i;
      }
    }
    if (i >= fmt.size()) in.fail("ValueError", "incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!haveVal) {
      if (next >= argv.size()) in.fail("TypeError", "not enough arguments for format string");
      val = argv[next++];
    }
    std::string piece = convertOne(in, conv, flags, prec, val);
    if (conv == 's' || conv == 'r' || conv == 'a') {
      if (prec >= 0) {
        auto offs = codePointOffsets(piece);
        if (static_cast<size_t>(prec) + 1 < offs.size()) piece = piece.substr(0, offs[static_cast<size_t>(prec)]);
      }
    }
    int64_t len = static_cast<int64_t>(codePointCount(piece));
    if (width > len) {
      size_t pad = static_cast<size_t>(width - len);
      if (flags.find('-') != std::string::npos)
        piece += std::string(pad, ' ');
      else if (flags.find('0') != std::string::npos && conv != 's' && conv != 'r')
        piece = (piece[0] == '-' || piece[0] == '+') ? piece.substr(0, 1) + std::string(pad, '0') + piece.substr(1)
                                                     : std::string(pad, '0') + piece;
      else
        piece = std::string(pad, ' ') + piece;
    }
    out += piece;
    in.checkSize(out.size());
  }
  (void)usedMapping;
  if (!mappingLike && next < argv.size())
    in.fail("TypeError", "not all arguments converted during string formatting");
  return out;
}

}  // namespace linnet::chat::detail
