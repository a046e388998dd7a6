// PCRE2 (UTF + UCP, JIT) regular expressions with the semantics the Hugging Face
// tokenizers library gets from Oniguruma (patterns in tokenizer.json) or from
// Rust's regex crate (its internal patterns). Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace linnet::tokenizer::detail {

// The dialect a pattern was written for. The differences that matter are the
// Unicode definitions of \s, \w, \d and \h, and Ruby's always-multiline ^ $.
enum class RegexFlavor { Oniguruma, RustRegex };

// Thrown for a pattern PCRE2 cannot compile or a feature we cannot translate;
// callers turn it into a tokenizer::Error with the file and JSON path.
struct RegexError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Rewrites `pattern` into an equivalent PCRE2 pattern (see regex.cpp).
std::string translatePattern(std::string_view pattern, RegexFlavor flavor);

class Regex {
 public:
  Regex() = default;
  Regex(std::string_view pattern, RegexFlavor flavor);

  bool valid() const { return code_ != nullptr; }
  const std::string& source() const { return source_; }

  // Appends the [start, end) byte ranges of every non-overlapping match in
  // `text` (valid UTF-8), scanning left to right like onig's find_iter: an
  // empty match right where the previous match ended is skipped.
  void findAll(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

  // Whether the regex matches somewhere in `text`.
  bool search(std::string_view text) const;

  // Match anchored at `offset`: returns the end of the match, or npos.
  size_t matchAt(std::string_view text, size_t offset) const;

 private:
  // Returns false on no match; throws RegexError on a matching error.
  bool matchOnce(std::string_view text, size_t start, uint32_t options, size_t& ms, size_t& me) const;

  std::string source_;
  std::shared_ptr<void> code_;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace linnet::tokenizer::detail
