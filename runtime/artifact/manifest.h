// The artifact schema: the manifest.json that `linnetc build` writes into an
// artifact folder beside the compiled code, and that the runtime reads before
// loading that code. Both sides go through this library, so they cannot
// drift apart; a manifest of another schema version is refused with a
// message that says to rebuild.
//
//   {"format": "linnet-artifact", "schema": 5,
//    "package", "target", "library", "init",        (library/init empty: no code)
//    "library_bytes", "library_fnv1a",               the code file's size and FNV-1a (16 hex digits)
//    "numerics": "exact" or "fast",                  how the code computes (exact: the language's)
//    "generics": {name: number or dtype name},       the root's, as built
//    "params": [spec], "states": [spec],             in the argument order (abi.h)
//    "signatures": [{"name", "params": [names]}],     every entry of the root block
//    "entries": [{"name", "symbol", "generics", "inputs": [spec], "outputs": [spec]}],
//    "skipped": [{"name", "reason"}], "build_seconds",
//    "kernels": [{"name", "block": [x, y, z], "registers", "shared_bytes",
//                 "spill_bytes", "family"}]}        a GPU target's kernels, as ptxas reported them
//   spec = {"name", "dtype": "f32", "shape": [2, 3]}
//   a param's spec may add "storage": "q4_1" (common/storage.h): the code
//   reads it in that format, [.., N, RowBytes] bytes per [.., N, K] param;
//   absent, it is plain elements of its dtype.
//
// Params and states are listed the way compiled code takes them: the
// layers of the root's sub-block array stacked, `layers.*.mlp.up.weight` of
// shape [Layers, ...].
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/dtype.h"
#include "common/storage.h"

namespace linnet::artifact {

inline constexpr std::string_view kFormat = "linnet-artifact";
// Raise it with every change a reader of the previous version would misread.
inline constexpr int kSchemaVersion = 5;
inline constexpr std::string_view kManifestFile = "manifest.json";

// A manifest that cannot be read: the message names the file and says what to do.
struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TensorSpec {
  std::string name;  // an input's parameter name, a param's or state's path
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  // A param held in a storage format; nullopt: plain elements of dtype.
  std::optional<Storage> storage;
  bool operator==(const TensorSpec&) const = default;
  // What the code is given for it: shape x dtype, or in a storage format
  // i8 [.., N, RowBytes] (the descriptor's shape, and its bytes).
  std::vector<int64_t> storedShape() const;
  std::size_t byteCount() const;
};

// An entry of the root block as declared: its parameter names in order.
struct Signature {
  std::string name;
  std::vector<std::string> params;
};

// An entry compiled for one set of argument types.
struct Entry {
  std::string name;    // `decode`
  std::string symbol;  // the C symbol to call (abi.h)
  std::map<std::string, int64_t> generics;  // the entry's own, as bound
  std::vector<TensorSpec> inputs, outputs;
};

struct Skipped {
  std::string name, reason;
};

// A GPU kernel of the artifact's code: how it is launched and what the
// assembler reported (spill bytes count stores and loads together).
struct Kernel {
  std::string name;
  std::vector<int64_t> block;  // threads per block, x y z
  int64_t registers = 0, sharedBytes = 0, spillBytes = 0;
  // The template it was made from: "gemv", "attention", "row_reduction",
  // "elementwise" (profiles add time up by it).
  std::string family;
  bool operator==(const Kernel&) const = default;
};

struct Manifest {
  std::string package, target;
  std::string library;  // the code's file in the folder; empty when none was built
  // That file's size and FNV-1a (16 hex digits), filled in by `write` from
  // the file itself, so a truncated or altered library is found before it
  // is loaded (checkLibrary) instead of crashing the process that maps it.
  int64_t libraryBytes = 0;
  std::string libraryHash;
  std::string init;     // called once after loading (hoisted constants); may be empty
  // "exact": the language's numerics; "fast": weight products may quantize
  // activations to 8 bits (linnetc build --numerics fast).
  std::string numerics = "exact";
  std::vector<std::pair<std::string, std::variant<int64_t, std::string>>> generics;
  std::vector<TensorSpec> params, states;
  std::vector<Signature> signatures;
  std::vector<Entry> entries;
  std::vector<Skipped> skipped;
  double buildSeconds = 0;
  std::vector<Kernel> kernels;  // empty for the CPU

  const Entry* entry(std::string_view name) const;
  const Signature* signature(std::string_view name) const;
};

// dir/manifest.json, written through a temporary file renamed into place,
// with the library's size and checksum read from dir/library.
void write(const Manifest& manifest, const std::filesystem::path& dir);
// Sets the manifest's libraryBytes and libraryHash from dir/library (what
// `write` does; for a manifest made in memory, as tests make theirs).
void recordLibrary(Manifest& manifest, const std::filesystem::path& dir);
// What is wrong with dir's library against its manifest (missing,
// unreadable, another size or checksum), or nullopt when it matches or the
// artifact has no code.
std::optional<std::string> checkLibrary(const Manifest& manifest, const std::filesystem::path& dir);
// The same as a ManifestError that says to delete the folder: what a device
// does before it maps the code (a truncated library would crash the process).
void requireLibrary(const Manifest& manifest, const std::filesystem::path& dir);
// Reads dir/manifest.json. Throws ManifestError for a missing or malformed
// file and for another format or schema version.
Manifest read(const std::filesystem::path& dir);
// The same from text; `where` names it in messages.
Manifest parse(std::string_view text, const std::string& where);
std::string serialize(const Manifest& manifest);

// `Tensor[2, 3; f32]`, as messages show types.
std::string describe(DType dtype, const std::vector<int64_t>& shape);

}  // namespace linnet::artifact
