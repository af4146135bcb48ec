#pragma once
// A deterministic measurement backend for tuner tests: timings follow a simple bytes-moved model,
// so the search's decisions (what is measured, cached, shared, stored) can be asserted exactly.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "server/measurement_backend.h"

namespace fusetune {

// Each kernel costs 1 µs plus 1 µs per KiB it reads or writes: fusion pays by saving traffic.
// Groups listed in `broken` fail as a crashing kernel would.
class ModelBackend : public MeasurementBackend {
 public:
  std::set<std::vector<std::string>> broken;  // node-name sets (subgraph names) that fail
  int jobs_run = 0;
  int plans_run = 0;
  std::vector<MeasureJob> seen;  // every job, as the backend got it
  // Changes a plan's figures after the model: a plan truly faster, or a disturbed round.
  std::function<void(const MeasureJob&, const Plan&, PlanResult&)> adjust;

  std::string TargetFingerprint() override { return "test-triple;test-cpu;+f"; }

  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t)>& on_done) override {
    std::vector<JobResult> out;
    for (const MeasureJob& job : jobs) {
      seen.push_back(job);
      Graph g = ParseRelay(job.graph_text, "job");
      JobResult r;
      r.id = job.id;
      r.target = TargetFingerprint();
      for (const JobPlan& jp : job.plans) {
        Plan plan = PlanFromJson(g, jp.json, jp.name);
        PlanResult t;
        t.name = jp.name;
        t.ok = true;
        const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(plan.groups);
        for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
          const PlanGroup& pg = plan.groups[gi];
          auto group = AnalyzeGroup(g, pg.nodes, nullptr, recomputed[gi]);
          double bytes = 0;
          for (ValueId v : group->inputs) bytes += g.value(v).type.NumBytes();
          for (ValueId v : group->outputs) bytes += g.value(v).type.NumBytes();
          double us = 1.0 + bytes / 1024.0;
          t.kernel_us.push_back(us);
          t.median_us += us;
          std::vector<std::string> names;
          for (ValueId v : pg.nodes) names.push_back(g.value(v).op->name);
          if (broken.count(names)) {
            t.ok = false;
            t.reason = "crashed with signal 11";
          }
        }
        t.number = 1;
        t.repeat = 1;
        if (adjust) adjust(job, plan, t);
        if (t.min_us == 0) t.min_us = t.median_us;  // an adjust may set its own
        ++plans_run;
        r.plans.push_back(t);
      }
      ++jobs_run;
      out.push_back(r);
      if (on_done) on_done(out.size());
    }
    return out;
  }
};

}  // namespace fusetune
