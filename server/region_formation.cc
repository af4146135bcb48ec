#include "server/region_formation.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/schedule_space.h"
#include "server/candidates.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

// Enough refusals to see the pattern on a large graph; the rest at trace level.
constexpr size_t kRefusalsAtDebug = 200;

void LogRefusals(const Graph& g, const std::vector<RefusedGroup>& refused) {
  size_t shown = 0;
  for (const RefusedGroup& r : refused) {
    const bool debug = shown < kRefusalsAtDebug;
    if (!debug && !spdlog::should_log(spdlog::level::trace)) continue;
    shown += debug;
    spdlog::log(debug ? spdlog::level::debug : spdlog::level::trace, "refused {} ({}): {}",
                NodesText(g, r.nodes), fmt::join(OpsOf(g, r.nodes), ", "), r.why);
  }
  if (refused.size() > shown && !spdlog::should_log(spdlog::level::trace))
    spdlog::debug("... and {} more refused groups (--log-level trace lists them)",
                  refused.size() - shown);
}

void LogRegion(const Graph& g, const TuneRegion& r, const std::vector<TuneRegion>& earlier) {
  if (r.representative == earlier.size())
    spdlog::debug("region {} {} ({}): {} candidate groups", r.signature,
                  NodesText(g, r.region.nodes), fmt::join(OpsOf(g, r.region.nodes), ", "),
                  r.region.groups.size());
  else
    spdlog::debug("region {} {}: the same as {}", r.signature, NodesText(g, r.region.nodes),
                  NodesText(g, earlier[r.representative].region.nodes));
}

}  // namespace

std::vector<TuneRegion> FormRegions(const RequestPolicy& policy) {
  const Graph& g = policy.graph();
  const bool debug = spdlog::should_log(spdlog::level::debug);
  std::vector<RefusedGroup> refused;
  std::vector<FusedGroup> candidates = EnumerateCandidateGroups(policy, debug ? &refused : nullptr);
  if (debug) {
    for (size_t v = 0; v < g.values().size(); ++v) {
      std::string why;
      if (g.values()[v].kind == ValueKind::kNode && !policy.MayJoinGroup(v, &why))
        spdlog::debug("pinned {}: {}", g.RefName(v), why);
    }
    LogRefusals(g, refused);
    spdlog::debug("{} candidate groups, {} refused", candidates.size(), refused.size());
  }

  std::vector<TuneRegion> out;
  std::map<std::string, size_t> first;
  for (Region& region : BuildRegions(g, candidates, policy.options().max_region_nodes)) {
    TuneRegion r;
    r.canon = Canonicalize(g, region.nodes);
    r.signature = Hash128Hex(r.canon.text);
    r.weights_bound =
        std::any_of(region.groups.begin(), region.groups.end(),
                    [&](const FusedGroup& group) { return MatmulWeightsConstant(g, group); });
    r.region = std::move(region);
    r.representative = first.emplace(r.signature, out.size()).first->second;
    // Lookups run this too: node lists are formatted only when they are shown.
    if (debug) LogRegion(g, r, out);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fusetune
