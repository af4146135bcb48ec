#pragma once
// Operator attributes, spelled as in TVM Relay. Attrs are normalised when a node is built:
// every attribute of the op's schema is present (defaults filled) and in schema order, so two
// spellings of the same call compare and hash equal.
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fusetune {

struct NoneAttr {
  bool operator==(const NoneAttr&) const = default;
};
using IntList = std::vector<int64_t>;
using AttrValue = std::variant<NoneAttr, bool, int64_t, double, std::string, IntList>;

enum class AttrKind {
  kBool,
  kInt,
  kFloat,
  kString,
  kIntList,
  kOptionalInt,      // None or an int
  kOptionalIntList,  // None or a list of ints (a single int is accepted as a one-element list)
};

// A NoneAttr default on a kind that does not admit None (kBool .. kIntList) marks a required
// attribute: NormalizeAttrs refuses a call that omits it.
struct AttrSpec {
  std::string name;
  AttrKind kind;
  AttrValue default_value;
};

class Attrs {
 public:
  Attrs() = default;
  explicit Attrs(std::vector<std::pair<std::string, AttrValue>> items) : items_(std::move(items)) {}

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool Has(const std::string& name) const;
  const AttrValue& Get(const std::string& name) const;  // FT_CHECK if absent (schema guarantees it)
  void Set(const std::string& name, AttrValue value);

  bool GetBool(const std::string& name) const;
  int64_t GetInt(const std::string& name) const;
  double GetFloat(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  const IntList& GetIntList(const std::string& name) const;
  bool IsNone(const std::string& name) const;

  bool operator==(const Attrs&) const = default;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

// Relay spelling of a value: 1, -2, 0.5f, True, "float32", [1, 2], None.
std::string FormatAttrValue(const AttrValue& value);

}  // namespace fusetune
