// A request's output text as it grows token by token: whole UTF-8
// characters only, cut before the first stop string, and never releasing
// bytes that could still turn out to begin one (so a client never sees a
// stop string, or half of one).
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace linnet::nest {

class TextStream {
 public:
  TextStream(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops);
  // The text `id` releases (often "", while a character or a possible stop
  // string is incomplete).
  std::string push(int32_t id);
  // A stop string appeared: the output ends before it.
  bool stopped() const { return stopped_; }
  // At the end: the text still held back (none after a stop).
  std::string finish();
  // The whole output so far, released or not (up to a stop).
  const std::string& text() const { return text_; }

  // How many trailing bytes of `text` could still grow into one of `stops`.
  static size_t heldBack(const std::string& text, const std::vector<std::string>& stops);
  // Where the first of `stops` begins in `text`, or npos.
  static size_t firstStop(const std::string& text, const std::vector<std::string>& stops);

 private:
  // The unreleased tail up to a stop (or all of it), less what may still
  // begin a stop when `holdBack`.
  std::string release(bool holdBack);
  tokenizer::StreamDecoder decoder_;
  std::vector<std::string> stops_;
  std::string text_;
  size_t released_ = 0;
  bool stopped_ = false;
};

}  // namespace linnet::nest
