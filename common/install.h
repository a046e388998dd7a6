// Where Linnet finds its own pieces when nobody says: the standard library
// (`std.*`), the family descriptors (nest/families) and `linnetc` (which the
// runtime runs to compile entries).
//
// Each is looked for, in order:
//   1. its environment variable: LINNET_STDLIB, LINNET_FAMILIES, LINNETC;
//   2. beside the code asking, in the install layout: the folder of the
//      executable or shared library this code is linked into (bin/linnet,
//      bin/linnetc, lib/liblinnet.so; found through dladdr, the main program
//      through /proc/self/exe) is a prefix's bin/ or lib/, so the standard
//      library is <prefix>/share/linnet/stdlib and linnetc <prefix>/bin/linnetc.
//      A moved (relocated) prefix finds its own;
//   3. the build's: the source tree's stdlib/ and the build tree's linnetc,
//      compiled in (for programs run from the build tree).
// Explicit choices (`--stdlib`, LoadOptions::stdlib) come before all three;
// the callers check those.
#pragma once

#include <filesystem>
#include <string>

namespace linnet {

// The standard library folder (holds std/).
std::string defaultStdlibDir();
// The zoo's family descriptors (nest/families; LINNET_FAMILIES, then
// <prefix>/share/linnet/families, then the source tree's), for a card that
// is not in a zoo with its own families/ folder.
std::string defaultFamiliesDir();
// The linnetc executable to run.
std::string defaultLinnetc();
// The folder of the executable or shared library holding this code; empty
// when it cannot be told.
std::filesystem::path ownModuleDir();

}  // namespace linnet
