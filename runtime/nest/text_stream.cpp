#include "nest/text_stream.h"

#include <algorithm>

namespace linnet::nest {

TextStream::TextStream(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops)
    : decoder_(tokenizer), stops_(std::move(stops)) {}

size_t TextStream::heldBack(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops)
    for (size_t n = std::min(s.size() - 1, text.size()); n > hold; --n)
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
  return hold;
}

size_t TextStream::firstStop(const std::string& text, const std::vector<std::string>& stops) {
  size_t cut = std::string::npos;
  for (const auto& s : stops) cut = std::min(cut, text.find(s));
  return cut;
}

std::string TextStream::push(int32_t id) {
  if (stopped_) return "";
  text_ += decoder_.push(id);
  return release(/*holdBack=*/true);
}

std::string TextStream::finish() {
  if (stopped_) return "";
  text_ += decoder_.finish();
  return release(/*holdBack=*/false);
}

std::string TextStream::release(bool holdBack) {
  // A stop string can only begin in the unreleased tail: released bytes
  // never end in the start of one.
  size_t cut = firstStop(text_.substr(released_), stops_);
  if (cut != std::string::npos) {
    stopped_ = true;
    text_.resize(released_ + cut);
  }
  size_t upTo = text_.size() - (stopped_ || !holdBack ? 0 : heldBack(text_, stops_));
  std::string out = text_.substr(released_, upTo - released_);
  released_ = upTo;
  return out;
}

}  // namespace linnet::nest
