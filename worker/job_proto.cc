#include "worker/job_proto.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/plan.h"
#include "proto/ir_convert.h"

namespace fusetune {
namespace {

using nlohmann::json;

// A plan's JSON form (ir/plan.h: {"plan":name,"groups":[{"nodes":[...],"schedule":"k=v"}]}) to
// its message, without the graph: names stay names.
v1::Plan PlanJsonToProto(const std::string& text) {
  json doc = json::parse(text);
  v1::Plan plan;
  plan.set_name(doc.value("plan", std::string()));
  for (const json& g : doc.at("groups")) {
    v1::PlanGroup* group = plan.add_groups();
    for (const json& n : g.at("nodes")) group->add_nodes(n.get<std::string>());
    *group->mutable_schedule() = ScheduleToProto(Schedule::Parse(g.value("schedule", "")));
  }
  return plan;
}

std::string PlanProtoToJson(const v1::Plan& plan, const std::string& where) {
  json groups = json::array();
  for (int i = 0; i < plan.groups_size(); ++i) {
    const v1::PlanGroup& g = plan.groups(i);
    std::string group_where = fmt::format("{}.groups[{}]", where, i);
    if (g.nodes_size() == 0) throw UserError(group_where + ": a group needs at least one node");
    json nodes = json::array();
    for (const std::string& n : g.nodes()) nodes.push_back(n);
    Schedule schedule = ScheduleFromProto(g.schedule(), group_where + ".schedule");
    groups.push_back({{"nodes", nodes}, {"schedule", schedule.ToString()}});
  }
  return json{{"plan", plan.name()}, {"groups", groups}}.dump();
}

void CheckFigure(double value, const std::string& where) {
  if (!std::isfinite(value) || value < 0)
    throw UserError(fmt::format("{}: {} is not a finite, non-negative figure", where, value));
}

// The field of v1::JobPhases that holds the JobPhases figure `name` (the same names).
const google::protobuf::FieldDescriptor* ProtoPhaseField(const char* name) {
  const google::protobuf::FieldDescriptor* field =
      v1::JobPhases::descriptor()->FindFieldByName(name);
  FT_CHECK(field != nullptr, fmt::format("v1.JobPhases has no field {}", name));
  return field;
}

}  // namespace

v1::MeasurementJob JobToProto(const MeasureJob& job) {
  v1::MeasurementJob m;
  m.set_job_id(job.id);
  m.set_kind(v1::JOB_KIND_PLANS);
  m.mutable_graph()->set_relay_text(job.graph_text);
  for (const JobPlan& p : job.plans) {
    v1::JobPlan* jp = m.add_plans();
    jp->set_name(p.name);
    *jp->mutable_plan() = PlanJsonToProto(p.json);
  }
  m.set_threads(job.threads);
  m.set_seed(job.seed);
  v1::TimingOptions* t = m.mutable_timing();
  t->set_warmup(job.timing.warmup);
  t->set_repeat(job.timing.repeat);
  t->set_min_repeat_ms(job.timing.min_repeat_ms);
  t->set_flush_cache(job.timing.flush_cache);
  m.set_alone(job.alone);
  return m;
}

MeasureJob JobFromProto(const v1::MeasurementJob& m) {
  MeasureJob job;
  job.id = m.job_id();
  if (m.graph().source_case() != v1::GraphSource::kRelayText)
    throw UserError("job.graph: expected Relay text");
  job.graph_text = m.graph().relay_text();
  if (m.plans_size() == 0) throw UserError("job.plans: a job times at least one plan");
  for (int i = 0; i < m.plans_size(); ++i) {
    const v1::JobPlan& p = m.plans(i);
    std::string where = fmt::format("job.plans[{}]", i);
    if (p.name().empty()) throw UserError(where + ".name: empty");
    job.plans.push_back({p.name(), PlanProtoToJson(p.plan(), where + ".plan")});
  }
  job.threads = m.threads() > 0 ? m.threads() : 1;
  job.seed = m.seed();
  const v1::TimingOptions& t = m.timing();
  if (t.warmup() < 0 || t.repeat() < 0 || !std::isfinite(t.min_repeat_ms()) ||
      t.min_repeat_ms() < 0)
    throw UserError("job.timing: warmup, repeat and min_repeat_ms must not be negative");
  job.timing.warmup = t.warmup();
  if (t.repeat() > 0) job.timing.repeat = t.repeat();
  job.timing.min_repeat_ms = t.min_repeat_ms();
  job.timing.flush_cache = t.flush_cache();
  job.alone = m.alone();
  return job;
}

v1::MeasurementResult ResultToProto(const JobResult& result) {
  v1::MeasurementResult m;
  m.set_job_id(result.id);
  m.set_target_fingerprint(result.target);
  for (const PlanResult& p : result.plans) {
    v1::PlanTiming* t = m.add_plans();
    t->set_name(p.name);
    t->set_ok(p.ok);
    t->set_reason(p.reason);
    t->set_median_us(p.median_us);
    t->set_min_us(p.min_us);
    t->set_stddev_us(p.stddev_us);
    t->set_mad_us(p.mad_us);
    t->set_number(p.number);
    t->set_repeat(static_cast<int32_t>(p.repeat));
    t->set_compile_ms(p.compile_ms);
    t->set_max_abs_error(p.max_abs_error);
    t->set_max_output_magnitude(p.max_output_magnitude);
    t->set_check_ms(p.check_ms);
    t->set_timing_ms(p.timing_ms);
    for (double us : p.kernel_us) t->add_kernel_us(us);
  }
  v1::JobPhases* phases = m.mutable_phases();
  for (const PhaseField& f : kPhaseFields)
    phases->GetReflection()->SetDouble(phases, ProtoPhaseField(f.name), result.phases.*f.figure);
  m.mutable_reuse()->set_kernels_compiled(result.reuse.kernels_compiled);
  m.mutable_reuse()->set_kernels_reused(result.reuse.kernels_reused);
  m.mutable_reuse()->set_reference_nodes_evaluated(result.reuse.reference_nodes_evaluated);
  return m;
}

JobResult ResultFromProto(const v1::MeasurementResult& m) {
  JobResult r;
  r.id = m.job_id();
  r.target = m.target_fingerprint();
  for (int i = 0; i < m.plans_size(); ++i) {
    const v1::PlanTiming& t = m.plans(i);
    std::string where = fmt::format("result.plans[{}]", i);
    if (t.name().empty()) throw UserError(where + ".name: empty");
    for (auto [value, field] : {std::pair{t.median_us(), "median_us"},
                                {t.min_us(), "min_us"},
                                {t.stddev_us(), "stddev_us"},
                                {t.mad_us(), "mad_us"},
                                {t.compile_ms(), "compile_ms"},
                                {t.check_ms(), "check_ms"},
                                {t.timing_ms(), "timing_ms"},
                                {t.max_abs_error(), "max_abs_error"},
                                {t.max_output_magnitude(), "max_output_magnitude"}})
      CheckFigure(value, where + "." + field);
    if (t.number() < 0 || t.repeat() < 0)
      throw UserError(where + ": number and repeat must not be negative");
    if (t.ok() && !(t.median_us() > 0 && t.number() >= 1 && t.repeat() >= 1))
      throw UserError(where + ": a plan that ran needs median_us > 0, number >= 1, repeat >= 1");
    if (!t.ok() && t.reason().empty())
      throw UserError(where + ".reason: a plan that did not run must say why");
    PlanResult p;
    p.name = t.name();
    p.ok = t.ok();
    p.reason = t.reason();
    p.median_us = t.median_us();
    p.min_us = t.min_us();
    p.stddev_us = t.stddev_us();
    p.mad_us = t.mad_us();
    p.number = t.number();
    p.repeat = t.repeat();
    p.compile_ms = t.compile_ms();
    p.check_ms = t.check_ms();
    p.timing_ms = t.timing_ms();
    p.max_abs_error = t.max_abs_error();
    p.max_output_magnitude = t.max_output_magnitude();
    for (int k = 0; k < t.kernel_us_size(); ++k) {
      CheckFigure(t.kernel_us(k), fmt::format("{}.kernel_us[{}]", where, k));
      p.kernel_us.push_back(t.kernel_us(k));
    }
    r.plans.push_back(std::move(p));
  }
  for (const PhaseField& f : kPhaseFields) {
    double value = m.phases().GetReflection()->GetDouble(m.phases(), ProtoPhaseField(f.name));
    CheckFigure(value, fmt::format("result.phases.{}", f.name));
    r.phases.*f.figure = value;
  }
  const v1::JobReuse& reuse = m.reuse();
  if (reuse.kernels_compiled() < 0 || reuse.kernels_reused() < 0 ||
      reuse.reference_nodes_evaluated() < 0)
    throw UserError("result.reuse: counts must not be negative");
  r.reuse.kernels_compiled = reuse.kernels_compiled();
  r.reuse.kernels_reused = reuse.kernels_reused();
  r.reuse.reference_nodes_evaluated = reuse.reference_nodes_evaluated();
  return r;
}

}  // namespace fusetune
