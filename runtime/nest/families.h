// The zoo's family descriptors (nest/families/NAME.toml): the names a
// family's checkpoints give their architecture, config.json's model_type and
// a GGUF's general.architecture. A card names its family in nest.toml
// ([model] family); a checkpoint of another family, or of one the zoo does
// not know, is refused in one line before anything is compiled or bound.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nest/model_config.h"

namespace linnet::nest {

struct Family {
  std::string name;
  std::vector<std::string> modelTypes;
  std::vector<std::string> ggufArchitectures;
};

// The descriptor at `file`; Error naming the file when it is malformed.
Family readFamily(const std::string& file);

// The family of the card at `package` (`card`: its nest.toml, as
// readCardConfig gives it): nullopt when it names none, or the card is not
// in a zoo (no families/ folder beside it). Error when the zoo has no
// descriptor of the family the card names.
std::optional<Family> cardFamily(const std::string& package, const CardConfig& card);

// Error when `values` (a config.json or a GGUF's metadata) names an
// architecture that is not `family`'s, naming both families.
void checkFamily(const Family& family, const std::string& package, const ConfigValues& values);

}  // namespace linnet::nest
