// The reference backend behind nest/backend.h: the package checked and
// instantiated in this process, entries evaluated op by op by
// compiler/targets/reference. Its tensors hold doubles; the conversion to and
// from nest::Tensor's bytes happens here, at its boundary.
#pragma once

#include "nest/backend.h"

namespace linnet::nest {

BackendKind referenceBackend();

}  // namespace linnet::nest
