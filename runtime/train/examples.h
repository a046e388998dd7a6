// Training rows as `linnet finetune` reads them: a JSON Lines file, one
// object a line, in one of three shapes (mlx-lm's and TRL's):
//   {"messages": [...]}                the chat template applied; the
//                                      assistant turns are learned
//   {"prompt": "...", "completion": "..."}  the completion is learned
//   {"text": "..."}                    every token is learned
// Each row becomes token ids and, per token, whether it is learned
// (predicted from the tokens before it). docs/train.md says how the
// assistant turns are found and how long rows are cut.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nest/text.h"

namespace linnet::train {

struct Example {
  std::vector<int32_t> ids;
  std::vector<uint8_t> learned;  // learned[i]: ids[i] is a target; learned[0] is 0
  int64_t line = 0;              // of the file, from 1
};

// The rows of `path`. Errors (nest::Error) name the file and line: a line
// that is not a JSON object, a row of none of the shapes, a row with nothing
// to learn, a file with no rows. A row past `maxTokens` tokens keeps its
// first maxTokens, with a note in `notes` naming its line.
std::vector<Example> readExamples(const std::string& path, const nest::TextModel& text, int64_t maxTokens,
                                  std::vector<std::string>& notes);

// One example of a row (`where`: "FILE:LINE", for errors).
Example exampleOf(const nlohmann::ordered_json& row, const nest::TextModel& text, const std::string& where);

}  // namespace linnet::train
