#include "server/service/result_convert.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "proto/ir_convert.h"

namespace fusetune::service {
namespace {

v1::PlanGroup GroupToProto(const Graph& graph, const PlanGroup& group) {
  v1::PlanGroup out;
  for (ValueId v : group.nodes) out.add_nodes(graph.RefName(v));
  *out.mutable_schedule() = ScheduleToProto(group.schedule);
  return out;
}

ValueId NodeByName(const Graph& graph, const std::string& ref) {
  std::string name = !ref.empty() && ref[0] == '%' ? ref.substr(1) : ref;
  std::optional<ValueId> id = graph.FindByName(name);
  if (!id)
    throw UserError(fmt::format("the server's result names '{}', which this graph lacks", ref));
  return *id;
}

PlanGroup GroupFromProto(const Graph& graph, const v1::PlanGroup& group) {
  PlanGroup out;
  for (const std::string& n : group.nodes()) out.nodes.push_back(NodeByName(graph, n));
  out.schedule = ScheduleFromProto(group.schedule(), "result.plan");
  return out;
}

}  // namespace

v1::RegionResult RegionToProto(const Graph& graph, const RegionReport& r, bool found) {
  v1::RegionResult out;
  out.set_signature(r.signature);
  for (ValueId v : r.nodes) out.add_nodes(graph.RefName(v));
  for (const std::string& op : r.ops) out.add_ops(op);
  out.set_cached(r.cached);
  out.set_found(found);
  for (const PlanGroup& g : r.plan) *out.add_plan() = GroupToProto(graph, g);
  out.set_chosen(r.chosen);
  out.set_tuned_us(r.tuned_us);
  out.set_greedy_us(r.greedy_us);
  out.set_unfused_us(r.unfused_us);
  out.set_candidates(r.candidates);
  out.set_measured(r.measured);
  out.set_reused(r.reused);
  out.set_pruned(r.pruned);
  out.set_max_abs_error(r.max_abs_error);
  out.set_max_output_magnitude(r.max_output_magnitude);
  out.set_transferred_from(r.transferred_from);
  out.set_searched_again(r.searched_again);
  out.set_transfer_refused(r.transfer_refused);
  out.set_decision(r.decision);
  if (r.margin) out.set_margin(*r.margin);
  out.set_rounds(r.rounds);
  for (const PlanChange& c : r.changes) {
    v1::PlanChange* change = out.add_changes_from_greedy();
    for (ValueId v : c.nodes) change->add_nodes(graph.RefName(v));
    change->set_fusion(c.fusion);
    change->set_schedule(c.schedule);
    change->set_knobs_changed(c.knobs_changed);
  }
  return out;
}

v1::TuneResult ReportToProto(const Graph& graph, const std::string& graph_name,
                             const TuneReport& report) {
  v1::TuneResult out;
  out.set_graph(graph_name);
  out.set_target(report.target);
  out.set_threads(report.threads);
  for (const RegionReport& r : report.regions) *out.add_regions() = RegionToProto(graph, r, true);
  v1::TuneTotals* total = out.mutable_total();
  total->set_tuned_us(report.total_tuned_us);
  total->set_greedy_us(report.total_greedy_us);
  total->set_unfused_us(report.total_unfused_us);
  total->set_measured_together(report.totals_measured);
  total->set_chosen(report.total_chosen);
  total->set_decision(report.total_decision);
  out.set_max_abs_error(report.max_abs_error);
  out.set_max_output_magnitude(report.max_output_magnitude);
  out.set_candidates_measured(report.candidates_measured);
  out.set_measurements_reused(report.measurements_reused);
  out.set_pruned(report.pruned);
  out.set_seconds(report.seconds);
  v1::Plan* plan = out.mutable_plan();
  plan->set_name(report.tuned_plan.name);
  for (const PlanGroup& g : report.tuned_plan.groups) *plan->add_groups() = GroupToProto(graph, g);
  return out;
}

TuneReport ReportFromProto(const Graph& graph, const v1::TuneResult& in) {
  TuneReport report;
  report.target = in.target();
  report.threads = in.threads();
  for (const v1::RegionResult& r : in.regions()) {
    RegionReport rr;
    rr.signature = r.signature();
    for (const std::string& n : r.nodes()) rr.nodes.push_back(NodeByName(graph, n));
    rr.ops.assign(r.ops().begin(), r.ops().end());
    rr.cached = r.cached();
    for (const v1::PlanGroup& g : r.plan()) rr.plan.push_back(GroupFromProto(graph, g));
    rr.chosen = r.chosen();
    rr.tuned_us = r.tuned_us();
    rr.greedy_us = r.greedy_us();
    rr.unfused_us = r.unfused_us();
    rr.max_abs_error = r.max_abs_error();
    rr.max_output_magnitude = r.max_output_magnitude();
    rr.candidates = r.candidates();
    rr.measured = r.measured();
    rr.reused = r.reused();
    rr.pruned = r.pruned();
    rr.transferred_from = r.transferred_from();
    rr.searched_again = r.searched_again();
    rr.transfer_refused = r.transfer_refused();
    rr.decision = r.decision();
    if (r.has_margin()) rr.margin = r.margin();
    rr.rounds = r.rounds();
    for (const v1::PlanChange& c : r.changes_from_greedy()) {
      PlanChange change;
      for (const std::string& n : c.nodes()) change.nodes.push_back(NodeByName(graph, n));
      change.fusion = c.fusion();
      change.schedule = c.schedule();
      change.knobs_changed = c.knobs_changed();
      rr.changes.push_back(std::move(change));
    }
    report.regions.push_back(std::move(rr));
  }
  report.total_tuned_us = in.total().tuned_us();
  report.total_greedy_us = in.total().greedy_us();
  report.total_unfused_us = in.total().unfused_us();
  report.totals_measured = in.total().measured_together();
  // A server older than these fields sends neither: the local default.
  if (!in.total().chosen().empty()) report.total_chosen = in.total().chosen();
  report.total_decision = in.total().decision();
  report.max_abs_error = in.max_abs_error();
  report.max_output_magnitude = in.max_output_magnitude();
  report.candidates_measured = in.candidates_measured();
  report.measurements_reused = in.measurements_reused();
  report.pruned = in.pruned();
  report.seconds = in.seconds();
  report.tuned_plan.name = in.plan().name();
  for (const v1::PlanGroup& g : in.plan().groups())
    report.tuned_plan.groups.push_back(GroupFromProto(graph, g));
  return report;
}

}  // namespace fusetune::service
