#include "client/graph_loader.h"

#include <algorithm>
#include <fstream>

#include "ir/error.h"
#include "ir/onnx/onnx_import.h"
#include "ir/text/relay_parser.h"

namespace fusetune::cli {

std::string ReadGraphFile(const std::string& path, const Limits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read '" + path + "': no such file or not readable");
  in.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(in.tellg());
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(std::min(size, limits.max_text_bytes + 1)), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

Graph LoadGraph(const std::string& path, const Limits& limits) {
  if (path.ends_with(".onnx")) return ImportOnnxFile(path, limits);
  return ParseRelay(ReadGraphFile(path, limits), path, limits);
}

}  // namespace fusetune::cli
