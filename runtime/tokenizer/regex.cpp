#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::tokenizer::detail {

namespace {

// Oniguruma (Unicode): \s = 0009-000D, 0085, Zl, Zp, Zs, which is exactly the
// White_Space property; PCRE2's UCP \s also takes U+180E, so spell it out.
constexpr std::string_view kSpace = "\\p{White_Space}";
constexpr std::string_view kNotSpace = "\\P{White_Space}";

// "\p{Name}" plus the characters the property gained after PCRE2's Unicode
// version (class items: only valid inside [...]).
std::string propertyItems(std::string_view name) {
  return fmt::format("\\p{{{}}}{}", name, unicode::newerCategoryItems(name));
}

// Oniguruma \w: Letter | Mark | Number | Connector_Punctuation.
// Rust regex \w (UTS #18 word): Alphabetic | M | Nd | Pc | Join_Control.
std::string wordItems(bool onig) {
  if (onig) return propertyItems("L") + propertyItems("M") + propertyItems("N") + "\\p{Pc}";
  return propertyItems("Alphabetic") + propertyItems("M") + propertyItems("Nd") + "\\p{Pc}\\p{Join_Control}";
}

// A (possibly negated) property, in or out of a character class. Inside a
// class a negated property cannot take the newer characters out; it keeps
// PCRE2's own definition.
std::string property(std::string_view name, bool negated, bool inClass) {
  const bool extra = !unicode::newerCategoryItems(name).empty();
  if (!negated) return inClass || !extra ? propertyItems(name) : fmt::format("[{}]", propertyItems(name));
  if (inClass || !extra) return fmt::format("\\P{{{}}}", name);
  return fmt::format("[^{}]", propertyItems(name));
}

constexpr std::string_view kHexDigit = "0-9a-fA-F";

bool isHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

struct JitStack {
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_match_data* data = nullptr;
  JitStack() {
    stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    if (stack && context) pcre2_jit_stack_assign(context, nullptr, stack);
    data = pcre2_match_data_create(1, nullptr);
  }
  ~JitStack() {
    if (data) pcre2_match_data_free(data);
    if (context) pcre2_match_context_free(context);
    if (stack) pcre2_jit_stack_free(stack);
  }
  JitStack(const JitStack&) = delete;
  JitStack& operator=(const JitStack&) = delete;
};

JitStack& threadMatchState() {
  thread_local JitStack state;
  return state;
}

std::string pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return fmt::format("PCRE2 error {}", code);
  return std::string(reinterpret_cast<const char*>(buf));
}

}  // namespace

std::string translatePattern(std::string_view p, RegexFlavor flavor) {
  const bool onig = flavor == RegexFlavor::Oniguruma;
  const std::string word = wordItems(onig);
  std::string out;
  out.reserve(p.size() + 32);
  bool inClass = false;
  size_t classStart = 0;  // index in p just after '[' or '[^'
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) throw RegexError("pattern ends with a lone backslash");
      const char e = p[++i];
      switch (e) {
        case 's': out += kSpace; break;
        case 'S': out += kNotSpace; break;
        case 'd': out += property("Nd", false, inClass); break;
        case 'D': out += property("Nd", true, inClass); break;
        case 'w':
          if (inClass) out += word;
          else out += fmt::format("[{}]", word);
          break;
        case 'W':
          if (inClass) throw RegexError("\\W inside a character class is not supported");
          out += fmt::format("[^{}]", word);
          break;
        case 'p':
        case 'P': {
          std::string name;
          if (i + 1 < p.size() && p[i + 1] == '{') {
            const size_t close = p.find('}', i + 2);
            if (close == std::string_view::npos) throw RegexError("unterminated \\p{...}");
            name = std::string(p.substr(i + 2, close - i - 2));
            i = close;
          } else if (i + 1 < p.size()) {
            name = std::string(1, p[++i]);
          } else {
            throw RegexError("\\p without a property name");
          }
          bool negated = e == 'P';
          if (!name.empty() && name[0] == '^') {
            negated = !negated;
            name.erase(0, 1);
          }
          out += property(name, negated, inClass);
          break;
        }
        case 'h':
        case 'H':
          if (!onig) {  // Rust's regex has no \h
            out += '\\';
            out += e;
            break;
          }
          if (e == 'h') out += inClass ? std::string(kHexDigit) : fmt::format("[{}]", kHexDigit);
          else if (inClass) throw RegexError("\\H inside a character class is not supported");
          else out += fmt::format("[^{}]", kHexDigit);
          break;
        case 'u':
          if (i + 4 < p.size() && isHex(p[i + 1]) && isHex(p[i + 2]) && isHex(p[i + 3]) &&
              isHex(p[i + 4])) {
            out += "\\x{";
            out.append(p.substr(i + 1, 4));
            out += '}';
            i += 4;
          } else {
            throw RegexError("unsupported escape \\u");
          }
          break;
        default: {
          out += '\\';
          // Copy the whole (possibly multi-byte) escaped character.
          const size_t n = unicode::sequenceLength(static_cast<unsigned char>(e));
          out.append(p.substr(i, n));
          i += n - 1;
          break;
        }
      }
      continue;
    }
    if (inClass) {
      if (c == ']' && i > classStart) {
        inClass = false;
      } else if (c == '[') {
        if (i + 1 < p.size() && p[i + 1] == ':') {  // POSIX bracket [:alpha:]
          const size_t close = p.find(":]", i + 2);
          if (close == std::string_view::npos) throw RegexError("unterminated POSIX class");
          out.append(p.substr(i, close + 2 - i));
          i = close + 1;
          continue;
        }
        throw RegexError("nested character classes are not supported");
      } else if (c == '&' && i + 1 < p.size() && p[i + 1] == '&') {
        throw RegexError("character class intersection (&&) is not supported");
      }
      out += c;
      continue;
    }
    if (c == '[') {
      inClass = true;
      out += c;
      size_t j = i + 1;
      if (j < p.size() && p[j] == '^') {
        out += '^';
        ++j;
      }
      classStart = j;  // a ']' right here is a literal
      i = j - 1;
      continue;
    }
    if (c == '(' && onig && i + 2 < p.size() && p[i + 1] == '?') {
      // Inline options: in Ruby syntax (?m) is "dot matches newline".
      size_t j = i + 2;
      std::string flags;
      while (j < p.size() && (p[j] == 'i' || p[j] == 'm' || p[j] == 'x' || p[j] == '-')) {
        flags += p[j] == 'm' ? 's' : p[j];
        ++j;
      }
      if (!flags.empty() && j < p.size() && (p[j] == ':' || p[j] == ')')) {
        out += "(?";
        out += flags;
        i = j - 1;
        continue;
      }
    }
    out += c;
  }
  if (inClass) throw RegexError("unterminated character class");
  return out;
}

Regex::Regex(std::string_view pattern, RegexFlavor flavor) : source_(pattern) {
  const std::string translated = translatePattern(pattern, flavor);
  int err = 0;
  PCRE2_SIZE offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (flavor == RegexFlavor::Oniguruma) options |= PCRE2_MULTILINE;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   options, &err, &offset, nullptr);
  if (code == nullptr)
    throw RegexError(fmt::format("cannot compile regex (as PCRE2 `{}`): {} at offset {}", translated,
                                 pcre2Message(err), offset));
  code_ = std::shared_ptr<void>(code, [](void* c) { pcre2_code_free(static_cast<pcre2_code*>(c)); });
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

bool Regex::matchOnce(std::string_view text, size_t start, uint32_t options, size_t& ms, size_t& me) const {
  auto* code = static_cast<pcre2_code*>(code_.get());
  JitStack& st = threadMatchState();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  options |= PCRE2_NO_UTF_CHECK;
  int rc;
  // pcre2_jit_match ignores PCRE2_ANCHORED; pcre2_match honours it.
  if (jit_ && (options & PCRE2_ANCHORED) == 0) {
    rc = pcre2_jit_match(code, subject, text.size(), start, options, st.data, st.context);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)  // e.g. JIT stack exhausted: use the interpreter
      rc = pcre2_match(code, subject, text.size(), start, options, st.data, nullptr);
  } else {
    rc = pcre2_match(code, subject, text.size(), start, options, st.data, nullptr);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) throw RegexError(fmt::format("regex match failed: {}", pcre2Message(rc)));
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  ms = ov[0];
  me = ov[1];
  return true;
}

void Regex::findAll(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  size_t lastEnd = 0;
  bool haveLast = false;
  size_t lastMatchEnd = 0;
  while (lastEnd <= text.size()) {
    size_t s, e;
    if (!matchOnce(text, lastEnd, 0, s, e)) return;
    if (e == s && haveLast && lastMatchEnd == e) {
      if (lastEnd >= text.size()) return;
      lastEnd += unicode::sequenceLength(static_cast<unsigned char>(text[lastEnd]));
      continue;
    }
    lastEnd = e;
    lastMatchEnd = e;
    haveLast = true;
    out.emplace_back(s, e);
  }
}

bool Regex::search(std::string_view text) const {
  size_t s, e;
  return matchOnce(text, 0, 0, s, e);
}

size_t Regex::matchAt(std::string_view text, size_t offset) const {
  size_t s, e;
  if (!matchOnce(text, offset, PCRE2_ANCHORED, s, e)) return std::string_view::npos;
  return e;
}

}  // namespace linnet::tokenizer::detail
