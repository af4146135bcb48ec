#include "ir/attrs.h"

#include <cmath>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {

bool Attrs::Has(const std::string& name) const {
  for (const auto& [k, v] : items_)
    if (k == name) return true;
  return false;
}

const AttrValue& Attrs::Get(const std::string& name) const {
  for (const auto& [k, v] : items_)
    if (k == name) return v;
  FT_CHECK(false, "attribute '" + name + "' is not in the normalised attrs");
}

void Attrs::Set(const std::string& name, AttrValue value) {
  for (auto& [k, v] : items_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(name, std::move(value));
}

bool Attrs::GetBool(const std::string& name) const { return std::get<bool>(Get(name)); }
int64_t Attrs::GetInt(const std::string& name) const { return std::get<int64_t>(Get(name)); }
double Attrs::GetFloat(const std::string& name) const { return std::get<double>(Get(name)); }
const std::string& Attrs::GetString(const std::string& name) const {
  return std::get<std::string>(Get(name));
}
const IntList& Attrs::GetIntList(const std::string& name) const {
  return std::get<IntList>(Get(name));
}
bool Attrs::IsNone(const std::string& name) const {
  return std::holds_alternative<NoneAttr>(Get(name));
}

static std::string FormatFloat(double v) {
  if (std::isinf(v)) return v > 0 ? "inff" : "-inff";
  if (std::isnan(v)) return "nanf";
  // Shortest text that reads back to the same float32, as Relay writes it (0.5f, 1e-12f).
  std::string s = fmt::format("{}", static_cast<float>(v));
  return s + "f";
}

std::string FormatAttrValue(const AttrValue& value) {
  struct Visitor {
    std::string operator()(NoneAttr) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return FormatFloat(d); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
    std::string operator()(const IntList& l) const {
      return "[" + fmt::format("{}", fmt::join(l, ", ")) + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace fusetune
