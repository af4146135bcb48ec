#include "server/measuring.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/noise.h"
#include "server/stage_log.h"

namespace fusetune {

int Measure(const Graph& graph, MeasurementPlan& plan, JobRunner& runner, TuneCache& cache) {
  if (plan.jobs.empty()) return 0;
  std::vector<MeasureJob> jobs;
  for (const PlannedJob& pj : plan.jobs) jobs.push_back(pj.job);
  std::vector<JobResult> results = runner.Run("measuring", std::move(jobs));
  int measured = 0;
  for (size_t j = 0; j < plan.jobs.size(); ++j) {
    const PlannedJob& pj = plan.jobs[j];
    GroupWork& gw = plan.groups.at(pj.signature);
    std::vector<db::MeasurementRecord> records;
    for (size_t p = 0; p < pj.schedules.size(); ++p) {
      const size_t s = pj.schedules[p];
      const PlanResult& t = results[j].plans.at(p);
      db::MeasurementRecord rec;
      rec.key.group_signature = gw.signature;
      rec.key.schedule = gw.schedules[s].ToString();
      rec.status = t.ok ? db::MeasurementStatus::kOk : db::MeasurementStatus::kInvalid;
      rec.reason = t.reason;
      rec.median_us = t.median_us;
      rec.min_us = t.min_us;
      rec.stddev_us = t.stddev_us;
      rec.number = t.number;
      rec.repeat = static_cast<int32_t>(t.repeat);
      rec.max_abs_error = t.max_abs_error;
      rec.compile_ms = t.compile_ms;
      rec.group_text = gw.canon.text;
      records.push_back(std::move(rec));
      gw.known[s] = true;
      gw.median_us[s] = t.ok ? t.median_us : std::numeric_limits<double>::infinity();
      gw.rel_error[s] = t.ok ? RelativeError(t.median_us, t.stddev_us, t.repeat) : 0;
      ++measured;
      spdlog::debug("measured {} ({}) schedule '{}': {}", NodesText(graph, gw.group.nodes),
                    fmt::join(OpsOf(graph, gw.group.nodes), ", "), gw.schedules[s].ToString(),
                    t.ok ? fmt::format("{:.2f} µs", t.median_us) : "invalid: " + t.reason);
    }
    cache.PutMeasurements(std::move(records));
  }
  for (RegionSearch& rs : plan.regions) {
    for (const PlannedJob& pj : plan.jobs)
      if (std::find(rs.group_sigs.begin(), rs.group_sigs.end(), pj.signature) !=
          rs.group_sigs.end())
        rs.measured += static_cast<int>(pj.schedules.size());
  }
  return measured;
}

}  // namespace fusetune
