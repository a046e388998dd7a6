// The zoo's family descriptors (nest/families/NAME.toml): the names a
// family's checkpoints give their architecture, config.json's model_type and
// a GGUF's general.architecture, and how llama.cpp's converter wrote the
// family's GGUF files ([gguf]: gguf/architecture.h). A card names its
// family in nest.toml ([model] family); a checkpoint of another family, or
// of one the zoo does not know, is refused in one line before anything is
// compiled or bound. The descriptors are the families/ folder beside the
// card's, else the installed ones (defaultFamiliesDir).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gguf/architecture.h"
#include "nest/model_config.h"

namespace linnet::nest {

struct Family {
  std::string name;
  std::vector<std::string> modelTypes;
  std::vector<std::string> ggufArchitectures;
  gguf::Architecture gguf;
};

// The descriptor at `file`; Error naming the file when it is malformed.
Family readFamily(const std::string& file);

// The family of the card at `package` (`card`: its nest.toml, as
// readCardConfig gives it): nullopt when it names none. Error when there is
// no descriptor of the family the card names.
std::optional<Family> cardFamily(const std::string& package, const CardConfig& card);

// The family whose GGUF files name their architecture `arch`, among the
// descriptors the card at `package` sees; nullopt when none does.
std::optional<Family> ggufFamily(const std::string& package, const std::string& arch);

// A card's [config] table read through the family's [gguf.config]: each
// config.json key it maps becomes the GGUF keys that give it ("a / b" both
// sides), keys with no GGUF counterpart left out, so a GGUF's metadata is
// checked (and --generics-from-config read) as config.json is.
KeyTable ggufTable(const KeyTable& config, const Family& family);

// Error when `values` (a config.json or a GGUF's metadata) names an
// architecture that is not `family`'s, naming both families.
void checkFamily(const Family& family, const std::string& package, const ConfigValues& values);

}  // namespace linnet::nest
