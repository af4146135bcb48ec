// JSON form of measurement jobs and results (see job.h).
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "ir/error.h"
#include "worker/job.h"

namespace fusetune {

using nlohmann::json;

std::string JobToJson(const MeasureJob& job) {
  json plans = json::array();
  for (const JobPlan& p : job.plans)
    plans.push_back({{"name", p.name}, {"plan", json::parse(p.json)}});
  json j = {{"id", job.id},
            {"graph", job.graph_text},
            {"plans", plans},
            {"threads", job.threads},
            {"seed", job.seed},
            {"timing",
             {{"warmup", job.timing.warmup},
              {"repeat", job.timing.repeat},
              {"number", job.timing.number},
              {"min_repeat_ms", job.timing.min_repeat_ms},
              {"flush_cache", job.timing.flush_cache}}},
            {"alone", job.alone}};
  return j.dump();
}

MeasureJob JobFromJson(const std::string& text) {
  try {
    json j = json::parse(text);
    MeasureJob job;
    job.id = j.at("id").get<int64_t>();
    job.graph_text = j.at("graph").get<std::string>();
    for (const auto& p : j.at("plans")) job.plans.push_back({p.at("name"), p.at("plan").dump()});
    job.threads = j.value("threads", 1);
    job.seed = j.value("seed", uint64_t{1});
    job.alone = j.value("alone", false);
    if (j.contains("timing")) {
      const auto& t = j["timing"];
      const TimingOptions defaults;
      job.timing.warmup = t.value("warmup", defaults.warmup);
      job.timing.repeat = t.value("repeat", defaults.repeat);
      job.timing.number = t.value("number", defaults.number);
      job.timing.min_repeat_ms = t.value("min_repeat_ms", defaults.min_repeat_ms);
      job.timing.flush_cache = t.value("flush_cache", defaults.flush_cache);
    }
    if (job.threads < 1 || job.timing.repeat < 1 || job.timing.min_repeat_ms < 0)
      throw UserError("threads and repeat must be at least 1, min_repeat_ms not negative");
    return job;
  } catch (const json::exception& e) {
    throw UserError(fmt::format("malformed measurement job: {}", e.what()));
  }
}

std::string ResultToJson(const JobResult& r) {
  json plans = json::array();
  for (const PlanResult& p : r.plans)
    plans.push_back({{"name", p.name},
                     {"ok", p.ok},
                     {"reason", p.reason},
                     {"median_us", p.median_us},
                     {"min_us", p.min_us},
                     {"stddev_us", p.stddev_us},
                     {"mad_us", p.mad_us},
                     {"number", p.number},
                     {"repeat", p.repeat},
                     {"compile_ms", p.compile_ms},
                     {"check_ms", p.check_ms},
                     {"timing_ms", p.timing_ms},
                     {"max_abs_error", p.max_abs_error},
                     {"max_output_magnitude", p.max_output_magnitude},
                     {"kernel_us", p.kernel_us}});
  json phases = json::object();
  for (const PhaseField& f : kPhaseFields) phases[f.name] = r.phases.*f.figure;
  json reuse = {{"kernels_compiled", r.reuse.kernels_compiled},
                {"kernels_reused", r.reuse.kernels_reused},
                {"reference_nodes_evaluated", r.reuse.reference_nodes_evaluated}};
  return json{
      {"id", r.id}, {"target", r.target}, {"plans", plans}, {"phases", phases}, {"reuse", reuse}}
      .dump();
}

JobResult ResultFromJson(const std::string& text) {
  try {
    json j = json::parse(text);
    JobResult r;
    r.id = j.at("id").get<int64_t>();
    r.target = j.value("target", std::string());
    for (const auto& p : j.at("plans")) {
      PlanResult t;
      t.name = p.at("name");
      t.ok = p.at("ok");
      t.reason = p.value("reason", std::string());
      t.median_us = p.value("median_us", 0.0);
      t.min_us = p.value("min_us", 0.0);
      t.stddev_us = p.value("stddev_us", 0.0);
      t.mad_us = p.value("mad_us", 0.0);
      t.number = p.value("number", int64_t{0});
      t.repeat = p.value("repeat", int64_t{0});
      t.compile_ms = p.value("compile_ms", 0.0);
      t.check_ms = p.value("check_ms", 0.0);
      t.timing_ms = p.value("timing_ms", 0.0);
      t.max_abs_error = p.value("max_abs_error", 0.0);
      t.max_output_magnitude = p.value("max_output_magnitude", 0.0);
      t.kernel_us = p.value("kernel_us", std::vector<double>{});
      r.plans.push_back(std::move(t));
    }
    if (j.contains("phases")) {  // results stored by earlier versions have none
      const json& f = j["phases"];
      for (const PhaseField& p : kPhaseFields) r.phases.*p.figure = f.value(p.name, 0.0);
    }
    if (j.contains("reuse")) {
      const json& u = j["reuse"];
      r.reuse.kernels_compiled = u.value("kernels_compiled", 0);
      r.reuse.kernels_reused = u.value("kernels_reused", 0);
      r.reuse.reference_nodes_evaluated = u.value("reference_nodes_evaluated", 0);
    }
    return r;
  } catch (const json::exception& e) {
    throw UserError(fmt::format("malformed measurement result: {}", e.what()));
  }
}

std::string DescribePhases(const JobPhases& phases) {
  std::string out;
  for (const PhaseField& f : kPhaseFields) {
    const double ms = phases.*f.figure;
    if (ms <= 0) continue;
    std::string_view name = f.name;
    name.remove_suffix(3);  // "_ms"
    out += fmt::format("{}{} {:.1f} ms", out.empty() ? "" : ", ", name, ms);
  }
  return out.empty() ? "none recorded" : out;
}

JobResult FailedResult(const MeasureJob& job, const std::string& reason) {
  JobResult r;
  r.id = job.id;
  for (const JobPlan& p : job.plans) {
    PlanResult t;
    t.name = p.name;
    t.reason = reason;
    r.plans.push_back(std::move(t));
  }
  return r;
}

}  // namespace fusetune
