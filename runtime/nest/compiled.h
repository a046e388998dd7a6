// Compiled code on a device (runtime/device) behind nest/backend.h. Nothing
// of the front end runs in this process: the params, states and entry
// signatures come from the package's manifest and each entry's code from its
// artifact, both written by linnetc into the cache (nest/artifact_cache.h).
//
// Params are bound per layer, as bindings.json names them; compiled code
// takes a sub-block array's layers stacked (`layers.*.mlp.up.weight`, one
// [Layers, ...] tensor), assembled on the device when the first artifact
// asks for them. States are allocated, zeroed, as the manifest lists them,
// and kept on the device between calls. Arguments and results cross as the
// tensors' bytes: in place on the host, one copy each way on a GPU.
#pragma once

#include "device/registry.h"
#include "nest/backend.h"

namespace linnet::nest {

// The backend named after `driver` (`cpu`), compiling for its target.
BackendKind compiledBackend(const device::Driver& driver);

}  // namespace linnet::nest
