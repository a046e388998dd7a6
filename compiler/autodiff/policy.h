// What a derived gradient keeps of the forward pass (autodiff/forward.h).
#pragma once

namespace linnet::autodiff {

enum class Policy {
  Scan,      // layer loops kept whole, each layer recomputed from its saved input (the default)
  Unrolled,  // every layer copied, every value saved
};

}  // namespace linnet::autodiff
