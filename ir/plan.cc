#include "ir/plan.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/fusion.h"

namespace fusetune {

int64_t Schedule::Get(const std::string& key, int64_t fallback) const {
  for (const auto& [k, v] : knobs)
    if (k == key) return v;
  return fallback;
}

void Schedule::Set(const std::string& key, int64_t value) {
  for (auto& [k, v] : knobs) {
    if (k == key) {
      v = value;
      return;
    }
  }
  knobs.emplace_back(key, value);
  std::sort(knobs.begin(), knobs.end());
}

std::string Schedule::ToString() const {
  std::string out;
  for (const auto& [k, v] : knobs) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", k, v);
  }
  return out;
}

Schedule Schedule::Parse(const std::string& text) {
  Schedule s;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    size_t eq = item.find('=');
    int64_t value = 0;
    if (eq == std::string::npos || eq == 0 ||
        std::from_chars(item.data() + eq + 1, item.data() + item.size(), value).ec != std::errc() ||
        std::to_string(value) != item.substr(eq + 1))
      throw UserError(
          fmt::format("schedule '{}': expected key=integer pairs separated by commas, got "
                      "'{}'",
                      text, item));
    s.Set(item.substr(0, eq), value);
    pos = end + 1;
  }
  return s;
}

Plan UnfusedPlan(const Graph& graph) {
  Plan plan{"unfused", {}};
  for (size_t v = 0; v < graph.values().size(); ++v)
    if (graph.values()[v].kind == ValueKind::kNode)
      plan.groups.push_back({{static_cast<ValueId>(v)}, {}});
  return plan;
}

std::vector<std::vector<ValueId>> RecomputedNodes(std::span<const PlanGroup> groups) {
  std::unordered_map<ValueId, int> holders;
  for (const PlanGroup& g : groups)
    for (ValueId v : g.nodes) ++holders[v];
  std::vector<std::vector<ValueId>> out(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (ValueId v : groups[gi].nodes)
      if (holders[v] > 1) out[gi].push_back(v);
  return out;
}

namespace {

// The group storing each node: recomputed nodes are stored by none.
std::unordered_map<ValueId, size_t> StoringGroups(const Plan& plan) {
  std::unordered_map<ValueId, size_t> group_of;
  std::unordered_set<ValueId> shared;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    for (ValueId v : plan.groups[gi].nodes)
      if (!group_of.emplace(v, gi).second) shared.insert(v);
  for (ValueId v : shared) group_of.erase(v);
  return group_of;
}

}  // namespace

void SortGroupsTopologically(const Graph& graph, Plan& plan) {
  const std::unordered_map<ValueId, size_t> group_of = StoringGroups(plan);
  const size_t n = plan.groups.size();
  std::vector<std::vector<size_t>> next(n);
  std::vector<int> pending(n, 0);
  for (size_t gi = 0; gi < n; ++gi) {
    std::vector<size_t> preds;
    for (ValueId v : plan.groups[gi].nodes)
      for (ValueId in : graph.value(v).inputs) {
        auto it = group_of.find(in);
        if (it != group_of.end() && it->second != gi) preds.push_back(it->second);
      }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (size_t p : preds) next[p].push_back(gi);
    pending[gi] = static_cast<int>(preds.size());
  }
  auto first_node = [&](size_t gi) { return plan.groups[gi].nodes.front(); };
  auto later = [&](size_t a, size_t b) { return first_node(a) > first_node(b); };
  std::vector<size_t> ready;  // a min-heap on the first node
  for (size_t gi = 0; gi < n; ++gi)
    if (pending[gi] == 0) ready.push_back(gi);
  std::make_heap(ready.begin(), ready.end(), later);
  std::vector<PlanGroup> ordered;
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later);
    size_t gi = ready.back();
    ready.pop_back();
    ordered.push_back(plan.groups[gi]);
    for (size_t s : next[gi])
      if (--pending[s] == 0) {
        ready.push_back(s);
        std::push_heap(ready.begin(), ready.end(), later);
      }
  }
  FT_CHECK(ordered.size() == n, "plan groups depend on each other in a cycle");
  plan.groups = std::move(ordered);
}

void ValidatePlan(const Graph& graph, const Plan& plan) {
  std::unordered_set<ValueId> held;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    for (ValueId v : plan.groups[gi].nodes) {
      if (v < 0 || v >= static_cast<ValueId>(graph.values().size()) ||
          graph.value(v).kind != ValueKind::kNode)
        throw UserError(
            fmt::format("plan '{}': group {} names {}, which is not an op node", plan.name, gi, v));
      held.insert(v);
    }
  }
  for (size_t v = 0; v < graph.values().size(); ++v)
    if (graph.values()[v].kind == ValueKind::kNode && !held.count(static_cast<ValueId>(v)))
      throw UserError(fmt::format("plan '{}': {} is in no group", plan.name,
                                  graph.RefName(static_cast<ValueId>(v))));
  const std::unordered_map<ValueId, size_t> group_of = StoringGroups(plan);
  const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(plan.groups);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    std::string why;
    auto group = AnalyzeGroup(graph, plan.groups[gi].nodes, &why, recomputed[gi]);
    if (!group)
      throw UserError(fmt::format(
          "plan '{}': group {} cannot be one kernel: {}{}", plan.name, gi, why,
          recomputed[gi].empty() ? "" : " (a node in several groups is recomputed by each)"));
    for (ValueId in : group->inputs) {
      if (graph.value(in).kind == ValueKind::kNode && !group_of.count(in))
        throw UserError(
            fmt::format("plan '{}': group {} reads {}, which no group stores (it is in "
                        "several groups, so each recomputes it); a group that reads "
                        "it must hold it too",
                        plan.name, gi, graph.RefName(in)));
      auto it = group_of.find(in);
      if (it != group_of.end() && it->second >= gi)
        throw UserError(fmt::format("plan '{}': group {} reads {} before its group runs", plan.name,
                                    gi, graph.RefName(in)));
    }
  }
}

std::string PlanToJson(const Graph& graph, const Plan& plan) {
  nlohmann::json groups = nlohmann::json::array();
  for (const PlanGroup& group : plan.groups) {
    nlohmann::json names = nlohmann::json::array();
    for (ValueId v : group.nodes) names.push_back(graph.RefName(v));
    groups.push_back({{"nodes", names}, {"schedule", group.schedule.ToString()}});
  }
  return nlohmann::json{{"plan", plan.name}, {"groups", groups}}.dump(2);
}

namespace {

// "FILE:LINE:COL: error: not valid JSON: ...", as the Relay parser reports text errors; the
// parser's own "[json.exception.parse_error.101] parse error at line 1, column 1: " is dropped.
std::string JsonSyntaxError(const std::string& text, const std::string& source_name,
                            const nlohmann::json::parse_error& e) {
  const size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
  const size_t line_start = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const size_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
  const size_t column = line_start == std::string::npos ? at + 1 : at - line_start;
  std::string what = e.what();
  if (size_t c = what.find("column "); c != std::string::npos) {
    if (size_t colon = what.find(": ", c); colon != std::string::npos)
      what = what.substr(colon + 2);
  }
  return fmt::format("{}:{}:{}: error: not valid JSON: {}", source_name, line, column, what);
}

}  // namespace

Plan PlanFromJson(const Graph& graph, const std::string& text, const std::string& source_name) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(JsonSyntaxError(text, source_name, e));
  }
  if (!doc.is_object() || !doc.contains("groups") || !doc["groups"].is_array())
    throw UserError(fmt::format("{}: expected an object with a \"groups\" array", source_name));
  Plan plan{source_name, {}};
  for (size_t gi = 0; gi < doc["groups"].size(); ++gi) {
    const auto& jg = doc["groups"][gi];
    const nlohmann::json* nodes =
        jg.is_array() ? &jg : (jg.is_object() && jg.contains("nodes") ? &jg["nodes"] : nullptr);
    if (!nodes || !nodes->is_array())
      throw UserError(
          fmt::format("{}: group {} must be a list of node names or an object with "
                      "\"nodes\"",
                      source_name, gi));
    PlanGroup group;
    for (const auto& name : *nodes) {
      if (!name.is_string())
        throw UserError(
            fmt::format("{}: group {}: node names are strings like \"%0\"", source_name, gi));
      std::string n = name.get<std::string>();
      auto id = graph.FindByName(n.size() > 1 && n[0] == '%' ? n.substr(1) : n);
      if (!id)
        throw UserError(fmt::format("{}: group {}: the graph has no node {}", source_name, gi, n));
      group.nodes.push_back(*id);
    }
    std::sort(group.nodes.begin(), group.nodes.end());
    if (jg.is_object() && jg.contains("schedule")) {
      if (!jg["schedule"].is_string())
        throw UserError(fmt::format("{}: group {}: \"schedule\" is a string like \"tile_m=8\"",
                                    source_name, gi));
      group.schedule = Schedule::Parse(jg["schedule"].get<std::string>());
    }
    plan.groups.push_back(std::move(group));
  }
  ValidatePlan(graph, plan);
  return plan;
}

}  // namespace fusetune
