// .npy layout: "\x93NUMPY", major, minor, header length (uint16 in 1.0, uint32 in 2.0,
// little-endian), then an ASCII Python dict {'descr': '<f4', 'fortran_order': False, 'shape': (2,
// 3), } padded with spaces and a final '\n' so the data starts on a 64-byte boundary, then the raw
// data.
#include "ir/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

[[noreturn]] void Bad(const std::string& source, const std::string& what) {
  throw UserError(fmt::format("{}: {}", source, what));
}

// The value text of 'key' in the header dict: a quoted string (quotes kept), a parenthesised
// tuple, or a bare word such as False.
std::string DictValue(const std::string& header, const std::string& key,
                      const std::string& source) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) at = header.find("\"" + key + "\"");
  if (at == std::string::npos)
    Bad(source, fmt::format("npy header has no '{}' entry: {}", key, header));
  at = header.find(':', at);
  if (at == std::string::npos) Bad(source, "malformed npy header: " + header);
  at = header.find_first_not_of(" \t", at + 1);
  if (at == std::string::npos) Bad(source, "malformed npy header: " + header);
  size_t end;
  char c = header[at];
  if (c == '(') {
    end = header.find(')', at);
  } else if (c == '\'' || c == '"') {
    end = header.find(c, at + 1);
  } else {
    end = header.find_first_of(",}", at);
    if (end != std::string::npos) --end;
  }
  if (end == std::string::npos) Bad(source, "malformed npy header: " + header);
  std::string v = header.substr(at, end - at + 1);
  size_t last = v.find_last_not_of(" \t");
  return v.substr(0, last + 1);
}

Shape ParseShape(const std::string& text, const std::string& source) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    Bad(source, "malformed npy shape " + text);
  Shape shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \tL");
    if (b == std::string::npos) continue;  // trailing comma of a 1-tuple
    std::string digits = item.substr(b, e - b + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
      Bad(source, "malformed npy shape " + text);
    }
    shape.push_back(std::stoll(digits));
  }
  return shape;
}

DType ParseDescr(const std::string& quoted, const std::string& source) {
  if (quoted.size() < 2) Bad(source, "malformed npy descr " + quoted);
  std::string d = quoted.substr(1, quoted.size() - 2);
  if (d == "<f4" || d == "f4") return DType::kFloat32;
  if (d == "<i4" || d == "i4") return DType::kInt32;
  if (d == "|b1" || d == "b1" || d == "?") return DType::kBool;
  if (!d.empty() && d[0] == '>') {
    Bad(source,
        fmt::format("big-endian npy data ('{}') is not supported; save it little-endian", d));
  }
  Bad(source,
      fmt::format("unsupported npy dtype '{}' (supported: '<f4' float32, '<i4' int32, '|b1' bool)",
                  d));
}

std::string Descr(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "<f4";
    case DType::kInt32:
      return "<i4";
    case DType::kBool:
      return "|b1";
    default:
      throw UserError(fmt::format("cannot write {} tensors as .npy", DTypeName(dtype)));
  }
}

uint32_t ReadLE(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

}  // namespace

Tensor ParseNpy(const std::string& bytes, const std::string& source) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kMagicSize + 4 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    Bad(source, "not an .npy file (missing the \\x93NUMPY magic)");
  }
  const int major = p[6];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = ReadLE(p + 8, 2);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) Bad(source, "truncated .npy header");
    header_len = ReadLE(p + 8, 4);
    header_start = 12;
  } else {
    Bad(source, fmt::format("unsupported .npy format version {}.{}", major, p[7]));
  }
  if (bytes.size() < header_start + header_len) Bad(source, "truncated .npy header");
  std::string header = bytes.substr(header_start, header_len);

  DType dtype = ParseDescr(DictValue(header, "descr", source), source);
  std::string fortran = DictValue(header, "fortran_order", source);
  if (fortran == "True")
    Bad(source, "Fortran-order .npy arrays are not supported; save with C order");
  if (fortran != "False") Bad(source, "malformed fortran_order in npy header: " + fortran);
  Shape shape = ParseShape(DictValue(header, "shape", source), source);

  TensorType type{dtype, shape};
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d != 0 && elements > (int64_t{1} << 40) / d) Bad(source, "npy shape is too large");
    elements *= d;
  }
  const size_t data_start = header_start + header_len;
  const size_t need = static_cast<size_t>(elements) * DTypeSize(dtype);
  if (bytes.size() - data_start < need) {
    Bad(source, fmt::format("truncated .npy data: {} needs {} bytes, the file has {}",
                            type.ToString(), need, bytes.size() - data_start));
  }
  Tensor t(type);
  if (need) std::memcpy(t.data(), bytes.data() + data_start, need);
  if (dtype == DType::kBool) {
    auto* b = t.as<uint8_t>();
    for (int64_t i = 0; i < elements; ++i)
      if (b[i] > 1)
        Bad(source, fmt::format("bool .npy element {} has value {} (expected 0 or 1)", i, b[i]));
  }
  return t;
}

std::string SerializeNpy(const Tensor& tensor) {
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  if (tensor.shape().size() == 1) shape += ",";
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   Descr(tensor.dtype()), shape);
  // Version 1.0 unless the header does not fit its 16-bit length.
  size_t prefix = 10;
  bool v2 = header.size() + 1 + prefix > 65535;
  if (v2) prefix = 12;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(header.size());
  for (int i = 0; i < (v2 ? 4 : 2); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  out.append(static_cast<const char*>(tensor.data()),
             static_cast<size_t>(tensor.type().NumBytes()));
  return out;
}

Tensor ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open for reading", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseNpy(ss.str(), path);
}

void WriteNpy(const std::string& path, const Tensor& tensor) {
  std::string bytes = SerializeNpy(tensor);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("{}: cannot open for writing", path));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw UserError(fmt::format("{}: write failed", path));
}

}  // namespace fusetune
