// The one exception type of linnet_weights. Every message names the file
// (and shard) it is about, the tensor or entry, what is wrong, and, where
// there is one, how to fix it.
#pragma once

#include <stdexcept>
#include <string>

namespace linnet::weights {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace linnet::weights
