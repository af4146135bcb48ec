// Discovery of dynamic dims and equality inference by probing.
//
// The graph IR infers types on concrete sizes only, so which anonymous dims must be equal is
// found by importing the graph at probe sizes. Model: the types constrain open sizes only by
// equalities between them (a broadcast between two sizes other than 1 is one; so are matmul's
// k and concatenate's other axes). Giving a set S of units (a named dim, or one anonymous site)
// the size kMoved and every other unit kBase type-checks exactly when S is a union of classes of
// that equality. So the class of an anonymous unit is the smallest such S containing it, found
// by trying sets of increasing size, at most kMaxProbes imports in all; a unit whose class is not
// found within the budget stays a dim of its own. If the graph does not even type-check with
// every open size equal to kBase, nothing can be inferred and every anonymous site is its own dim.
#include "ir/dims.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

// Probe sizes: divisible by 2..8, 10, 12, 14, 15 and 16 (kMoved), so reshapes that split a size by
// a small factor still type-check, and unlike any size a model spells.
constexpr int64_t kBase = 5040;
constexpr int64_t kMoved = 3360;
constexpr int kMaxProbes = 256;

struct Unit {
  std::string name;
  bool anonymous = false;
};

std::string SiteKey(const std::string& param, int axis) {
  return param + '\x01' + std::to_string(axis);
}

std::string SiteText(const DimSite& s) { return fmt::format("%{} axis {}", s.param, s.axis); }

bool TypeChecks(const DimImporter& import, const DimResolver& resolver) {
  try {
    import(resolver);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

// Indices c[0] < c[1] < ... < c[k-1] below n, advanced to the next combination; false after the
// last one.
bool NextCombination(std::vector<size_t>& c, size_t n) {
  const size_t k = c.size();
  for (size_t i = k; i-- > 0;) {
    if (c[i] < n - k + i) {
      ++c[i];
      for (size_t j = i + 1; j < k; ++j) c[j] = c[j - 1] + 1;
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<DynamicDim> DiscoverDims(const DimImporter& import) {
  std::vector<DimRequest> requests;
  const bool base_fits = TypeChecks(import, [&](const DimRequest& q) {
    requests.push_back(q);
    return kBase;
  });
  std::vector<Unit> units;
  std::vector<size_t> unit_of_request;
  std::map<std::string, size_t> unit_by_key;
  for (const DimRequest& q : requests) {
    std::string key = q.name.empty() ? SiteKey(q.param, q.axis) : q.name;
    auto [it, fresh] = unit_by_key.emplace(key, units.size());
    if (fresh) {
      bool anonymous = q.name.empty();
      units.push_back({anonymous ? fmt::format("{}.{}", q.param, q.axis) : q.name, anonymous});
    }
    unit_of_request.push_back(it->second);
  }

  // owner[u]: the unit whose dim u belongs to.
  std::vector<size_t> owner(units.size());
  for (size_t u = 0; u < units.size(); ++u) owner[u] = u;
  std::vector<char> settled(units.size(), 0);
  int probes = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    if (!units[i].anonymous || settled[i] || !base_fits) continue;
    std::vector<size_t> others;
    for (size_t j = 0; j < units.size(); ++j)
      if (j != i && !settled[j]) others.push_back(j);
    std::vector<char> moved(units.size(), 0);
    auto resolver = [&](const DimRequest& q) {
      std::string key = q.name.empty() ? SiteKey(q.param, q.axis) : q.name;
      auto it = unit_by_key.find(key);
      return it != unit_by_key.end() && moved[it->second] ? kMoved : kBase;
    };
    std::vector<size_t> cls;
    for (size_t k = 0; k <= others.size() && cls.empty() && probes < kMaxProbes; ++k) {
      std::vector<size_t> c(k);
      for (size_t j = 0; j < k; ++j) c[j] = j;
      do {
        if (probes++ >= kMaxProbes) break;
        std::fill(moved.begin(), moved.end(), 0);
        moved[i] = 1;
        for (size_t j : c) moved[others[j]] = 1;
        if (TypeChecks(import, resolver)) {
          cls.push_back(i);
          for (size_t j : c) cls.push_back(others[j]);
          break;
        }
      } while (k > 0 && NextCombination(c, others.size()));
    }
    if (cls.empty()) continue;  // no class within the budget: a dim of its own
    // The class is named after a named dim in it, else after its first site.
    size_t head = i;
    for (size_t u : cls)
      if (!units[u].anonymous) {
        head = u;
        break;
      }
    for (size_t u : cls) {
      settled[u] = 1;
      if (units[u].anonymous) owner[u] = head;
    }
  }

  std::vector<DynamicDim> dims;
  std::vector<int> dim_of_unit(units.size(), -1);
  for (size_t r = 0; r < requests.size(); ++r) {
    size_t head = owner[unit_of_request[r]];
    if (dim_of_unit[head] < 0) {
      dim_of_unit[head] = static_cast<int>(dims.size());
      dims.push_back({units[head].name, units[head].anonymous, {}});
    }
    dims[dim_of_unit[head]].sites.push_back({requests[r].param, requests[r].axis});
  }
  return dims;
}

Graph BindDims(const DimImporter& import, const std::vector<DynamicDim>& dims,
               const DimBinding& binding) {
  std::string names;
  for (const DynamicDim& d : dims) names += (names.empty() ? "" : ", ") + d.name;
  for (const auto& [name, size] : binding) {
    bool known = false;
    for (const DynamicDim& d : dims) known = known || d.name == name;
    if (!known) {
      throw UserError(
          fmt::format("--dim {}: the graph has no dimension named '{}' ({})", name, name,
                      dims.empty() ? "it has no dynamic dimensions" : "its dimensions: " + names));
    }
    if (size <= 0)
      throw UserError(fmt::format("--dim {}={}: a size must be a positive integer", name, size));
  }
  std::map<std::string, int64_t> by_site;
  for (const DynamicDim& d : dims) {
    auto it = binding.find(d.name);
    if (it == binding.end()) {
      std::string sites;
      for (const DimSite& s : d.sites) sites += (sites.empty() ? "" : ", ") + SiteText(s);
      throw UserError(fmt::format(
          "dimension '{}' ({}) has no size: bind it with --dim {}=SIZE (the graph's dimensions: "
          "{})",
          d.name, sites, d.name, names));
    }
    for (const DimSite& s : d.sites) by_site[SiteKey(s.param, s.axis)] = it->second;
  }
  auto resolver = [&](const DimRequest& q) -> int64_t {
    auto named = q.name.empty() ? binding.end() : binding.find(q.name);
    if (named != binding.end()) return named->second;
    auto site = by_site.find(SiteKey(q.param, q.axis));
    if (site != by_site.end()) return site->second;
    throw UserError(fmt::format("dimension '{}' at axis {} of %{} has no size",
                                q.name.empty() ? "?" : q.name, q.axis, q.param));
  };
  try {
    return import(resolver);
  } catch (const UserError& e) {
    if (binding.empty()) throw;
    throw UserError(
        fmt::format("{} does not fit the graph: {}", DimBindingText(binding), e.what()));
  }
}

std::string DimsText(const std::vector<DynamicDim>& dims) {
  std::string out;
  for (const DynamicDim& d : dims) {
    std::string sites;
    for (const DimSite& s : d.sites) sites += (sites.empty() ? "" : ", ") + SiteText(s);
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", d.name, sites);
  }
  return out;
}

std::string DimBindingText(const DimBinding& binding) {
  std::string out;
  for (const auto& [name, size] : binding)
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", name, size);
  return out;
}

}  // namespace fusetune
