// The one exception type of linnet_gguf. Every message starts with the file
// (its path, or the label given to File::parse) and says what is wrong and
// where: the metadata key or tensor, the byte offset, the type.
#pragma once

#include <stdexcept>
#include <string>

namespace linnet::gguf {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace linnet::gguf
