#pragma once
// Reading GRAPH arguments: ONNX models (.onnx, through ir/onnx) and Relay text (anything else).
// Every subcommand that takes a GRAPH loads it here.
#include <string>

#include "ir/graph.h"

namespace fusetune::cli {

// Reads at most limits.max_text_bytes + 1 bytes, so a huge file fails fast with the parser's
// positioned "more than the limit" message instead of filling memory.
std::string ReadGraphFile(const std::string& path, const Limits& limits);

Graph LoadGraph(const std::string& path, const Limits& limits = {});

}  // namespace fusetune::cli
