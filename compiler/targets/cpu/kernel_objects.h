// The weight kernels (kernels/*.c, embedded in linnetc as text) compiled for
// this machine once and kept, so that each model.so links them instead of
// compiling them again: they took 3 to 5 s of each entry's 6 to 7 s here.
//
// Kept under $LINNET_CACHE (else ~/.cache/linnet) in kernels-<key>, the key
// a hash of the sources, the flags, clang's binary and what -march=native
// means to it on this machine (`clang -###`), so a new linnetc, clang or
// CPU gets objects of its own. Made in a private folder and renamed into
// place, so concurrent builds never see half of one. Where the cache cannot
// be written, they are compiled into `scratch` for this build only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace linnet::cpu {

// Writes the kernels' headers under `includeRoot` (the model's shim
// includes them) and returns the kernels' object files.
std::vector<std::filesystem::path> kernelObjects(const std::string& clang, const std::vector<std::string>& flags,
                                                 const std::filesystem::path& includeRoot,
                                                 const std::filesystem::path& scratch);

}  // namespace linnet::cpu
