#include "server/tuner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/schedule_space.h"
#include "ir/subgraph.h"
#include "ir/text/relay_printer.h"
#include "ir/text/signature.h"
#include "server/candidates.h"
#include "server/cost_model.h"
#include "server/partition_search.h"
#include "server/regions.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One distinct group (by signature) with its schedules and what is known of them.
struct GroupWork {
  std::string signature;
  CanonicalForm canon;
  FusedGroup group;  // an instance in this graph
  std::vector<Schedule> schedules;
  std::vector<double> median_us;  // per schedule; infinity = invalid or unmeasured
  std::vector<bool> known;        // per schedule: a stored or fresh measurement exists
  bool baseline = false;          // a singleton or a greedy group: never pruned
  double benefit = 0;             // roofline estimate of what fusing saves
  double best_us() const { return *std::min_element(median_us.begin(), median_us.end()); }
  Schedule best_schedule() const {
    return schedules[std::min_element(median_us.begin(), median_us.end()) - median_us.begin()];
  }
};

struct RegionWork {
  Region region;
  CanonicalForm canon;
  std::string signature;
  std::vector<std::string> group_sigs;  // per region.groups entry
  size_t first_with_signature = 0;      // index of the region that represents this signature
};

bool RestrictsSpace(const SearchOptions& o) {
  SearchOptions defaults;
  return !o.never_fuse_ops.empty() || !o.never_fuse_nodes.empty() || !o.forbidden_groups.empty() ||
         o.max_group_size != defaults.max_group_size ||
         o.max_kernel_args != defaults.max_kernel_args;
}

// Tuned, greedy and unfused plans of one graph (a region or the whole), to be timed together.
enum Slot { kTuned = 0, kGreedy = 1, kUnfused = 2 };
constexpr const char* kSlotNames[3] = {"tuned", "greedy", "unfused"};
// Each plan is timed in this many rounds and keeps its fastest median: on a shared machine, a
// burst of load during one plan's timing must not decide the comparison.
constexpr int kTimingRounds = 2;

struct ThreeWay {
  const Graph* graph = nullptr;
  std::optional<Plan> plans[3];
};

struct ThreeWayResult {
  double us[3] = {kInf, kInf, kInf};
  double max_abs_error[3] = {0, 0, 0};
  std::string reason[3];
  int chosen = -1;  // the fastest slot; ties go to tuned, then greedy
};

bool SameGroups(const Plan& a, const Plan& b) {
  if (a.groups.size() != b.groups.size()) return false;
  std::vector<std::vector<ValueId>> x, y;
  for (const PlanGroup& g : a.groups) x.push_back(g.nodes);
  for (const PlanGroup& g : b.groups) y.push_back(g.nodes);
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

std::vector<std::string> OpsOf(const Graph& g, const std::vector<ValueId>& nodes) {
  std::vector<std::string> ops;
  for (ValueId v : nodes) ops.push_back(g.value(v).op->name);
  return ops;
}

MeasureJob PlansJob(const Subgraph& sub, const std::vector<Plan>& plans, const TuneOptions& o) {
  MeasureJob job;
  job.graph_text = PrintRelay(sub.graph);
  for (const Plan& p : plans) job.plans.push_back({p.name, PlanToJson(sub.graph, p)});
  job.threads = o.search.threads;
  job.timing = o.timing;
  return job;
}

// A plan over the original graph's ids -> the same plan over `sub`'s ids (node i of `sub` is
// node_map[i]; sub's node values follow its inputs).
Plan ToSubgraph(const Subgraph& sub, const Plan& plan) {
  std::unordered_map<ValueId, ValueId> to_sub;
  for (size_t i = 0; i < sub.node_map.size(); ++i)
    to_sub[sub.node_map[i]] = *sub.graph.FindByName(fmt::format("n{}", i));
  Plan out{plan.name, {}};
  for (const PlanGroup& g : plan.groups) {
    PlanGroup sg{{}, g.schedule};
    for (ValueId v : g.nodes) sg.nodes.push_back(to_sub.at(v));
    std::sort(sg.nodes.begin(), sg.nodes.end());
    out.groups.push_back(std::move(sg));
  }
  SortGroupsTopologically(sub.graph, out);
  return out;
}

Plan FromSubgraph(const Subgraph& sub, const Plan& plan) {
  Plan out{plan.name, {}};
  for (const PlanGroup& g : plan.groups) {
    PlanGroup og{{}, g.schedule};
    for (ValueId v : g.nodes) {
      const std::string& name = sub.graph.value(v).name;  // "n<i>"
      og.nodes.push_back(sub.node_map.at(std::stoul(name.substr(1))));
    }
    std::sort(og.nodes.begin(), og.nodes.end());
    out.groups.push_back(std::move(og));
  }
  return out;
}

std::vector<db::StoredGroup> ToStored(const Subgraph& sub, const Plan& sub_plan) {
  std::vector<db::StoredGroup> out;
  for (const PlanGroup& g : sub_plan.groups) {
    db::StoredGroup sg;
    for (ValueId v : g.nodes) sg.nodes.push_back(std::stoi(sub.graph.value(v).name.substr(1)));
    sg.schedule = g.schedule.ToString();
    out.push_back(std::move(sg));
  }
  return out;
}

// A stored plan (canonical positions) -> groups in this graph's ids, via the region's canonical
// node order. Throws UserError when the record does not fit the region.
std::vector<PlanGroup> FromStored(const CanonicalForm& canon, const db::BestPlanRecord& rec) {
  std::vector<PlanGroup> out;
  for (const db::StoredGroup& sg : rec.groups) {
    PlanGroup g;
    for (int32_t pos : sg.nodes) {
      if (pos < 0 || pos >= static_cast<int32_t>(canon.nodes.size()))
        throw UserError(fmt::format("stored plan for region {} names node {} of {}",
                                    rec.key.region_signature, pos, canon.nodes.size()));
      g.nodes.push_back(canon.nodes[pos]);
    }
    std::sort(g.nodes.begin(), g.nodes.end());
    g.schedule = Schedule::Parse(sg.schedule);
    out.push_back(std::move(g));
  }
  return out;
}

bool PlanHonours(const Graph& g, const std::vector<PlanGroup>& groups, const SearchOptions& o) {
  for (const PlanGroup& pg : groups) {
    if (pg.nodes.size() < 2) continue;
    if (static_cast<int>(pg.nodes.size()) > o.max_group_size) return false;
    for (ValueId v : pg.nodes)
      if (o.never_fuse_ops.count(g.value(v).op->name) || o.never_fuse_nodes.count(g.value(v).name))
        return false;
  }
  return true;
}

class TuneRun {
 public:
  TuneRun(const Graph& g, const TuneOptions& o, db::Cache& store, MeasurementBackend& backend,
          const ProgressFn& progress)
      : g_(g), opt_(o), store_(store), backend_(backend), progress_(progress) {}

  TuneReport Run() {
    const auto start = std::chrono::steady_clock::now();
    report_.target = backend_.TargetFingerprint();
    report_.threads = opt_.search.threads;
    BuildRegions();
    std::vector<size_t> to_search = LookUpStoredPlans();
    if (!to_search.empty()) {
      MeasureCandidates(to_search);
      SearchAndValidate(to_search);
    }
    AssembleWholeGraph(!to_search.empty());
    report_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(report_);
  }

  TuneReport LookupOnly(std::vector<std::string>* missing, const std::string& target) {
    report_.target = target;
    report_.threads = opt_.search.threads;
    BuildRegions();
    for (size_t r : LookUpStoredPlans()) missing->push_back(regions_[r].signature);
    if (missing->empty()) CollectTunedPlan();
    for (const RegionReport& rr : report_.regions) {
      report_.total_tuned_us += rr.tuned_us;
      report_.total_greedy_us += rr.greedy_us;
      report_.total_unfused_us += rr.unfused_us;
      report_.max_abs_error = std::max(report_.max_abs_error, rr.max_abs_error);
    }
    return std::move(report_);
  }

 private:
  void BuildRegions() {
    auto candidates = EnumerateCandidateGroups(g_, opt_.search);
    std::map<std::string, size_t> first;
    for (Region& region : fusetune::BuildRegions(g_, candidates, opt_.search.max_region_nodes)) {
      RegionWork w;
      w.canon = Canonicalize(g_, region.nodes);
      w.signature = Hash128Hex(w.canon.text);
      w.region = std::move(region);
      w.first_with_signature = first.emplace(w.signature, regions_.size()).first->second;
      regions_.push_back(std::move(w));
      RegionReport rr;
      rr.signature = regions_.back().signature;
      rr.nodes = regions_.back().region.nodes;
      rr.ops = OpsOf(g_, rr.nodes);
      report_.regions.push_back(std::move(rr));
    }
  }

  db::BestPlanKey KeyFor(const std::string& region_signature) const {
    return {region_signature, report_.target, opt_.search.threads, kSearchVersion};
  }

  // Fills cached regions; returns the representatives of the signatures that need a search.
  std::vector<size_t> LookUpStoredPlans() {
    std::vector<size_t> to_search;
    for (size_t r = 0; r < regions_.size(); ++r) {
      if (regions_[r].first_with_signature != r) continue;
      std::optional<db::BestPlanRecord> rec;
      if (opt_.use_cache) rec = store_.FindBestPlan(KeyFor(regions_[r].signature));
      if (rec) {
        bool applied = true;
        for (size_t s = r; s < regions_.size(); ++s) {
          if (regions_[s].first_with_signature != r) continue;
          std::vector<PlanGroup> groups = FromStored(regions_[s].canon, *rec);
          if (!PlanHonours(g_, groups, opt_.search)) {
            applied = false;
            break;
          }
          RegionReport& rr = report_.regions[s];
          rr.cached = true;
          rr.plan = std::move(groups);
          rr.chosen = rec->chosen;
          rr.tuned_us = rec->tuned_us;
          rr.greedy_us = rec->greedy_us;
          rr.unfused_us = rec->unfused_us;
        }
        if (applied) continue;
      }
      to_search.push_back(r);
    }
    return to_search;
  }

  void MeasureCandidates(const std::vector<size_t>& to_search) {
    RooflineTarget roofline = Roofline();
    std::vector<std::string> job_sigs;
    std::vector<MeasureJob> jobs;
    std::vector<std::vector<size_t>> job_schedules;
    for (size_t r : to_search) {
      RegionWork& w = regions_[r];
      // Greedy groups of the region are baselines, like singletons: always measured.
      Subgraph sub = ExtractSubgraph(g_, w.canon.inputs, w.canon.nodes, w.canon.outputs);
      std::set<std::vector<ValueId>> greedy;
      for (const PlanGroup& pg : FromSubgraph(sub, Greedy(sub.graph, &sub)).groups)
        greedy.insert(pg.nodes);
      std::vector<GroupWork*> optional_groups;
      for (const FusedGroup& group : w.region.groups) {
        CanonicalForm gc = Canonicalize(g_, group.nodes);
        std::string sig = Hash128Hex(gc.text);
        w.group_sigs.push_back(sig);
        auto [it, fresh] = groups_.try_emplace(sig);
        GroupWork& gw = it->second;
        if (fresh) {
          gw.signature = sig;
          gw.canon = std::move(gc);
          gw.group = group;
          gw.schedules = ScheduleSpace(g_, group, opt_.search.threads);
          if (gw.schedules.empty()) gw.schedules.push_back({});
          if (static_cast<int>(gw.schedules.size()) > opt_.search.schedules_per_group)
            gw.schedules.resize(std::max(1, opt_.search.schedules_per_group));
          gw.median_us.assign(gw.schedules.size(), kInf);
          gw.known.assign(gw.schedules.size(), false);
          for (size_t s = 0; s < gw.schedules.size(); ++s) {
            auto rec = store_.FindMeasurement(
                {sig, gw.schedules[s].ToString(), report_.target, opt_.search.threads});
            if (!rec) continue;
            gw.known[s] = true;
            if (rec->status == db::MeasurementStatus::kOk) gw.median_us[s] = rec->median_us;
            ++report_.measurements_reused;
            ++report_.regions[r].reused;
          }
          double parts = 0;
          for (ValueId v : group.nodes) {
            auto single = AnalyzeGroup(g_, std::vector<ValueId>{v});
            parts += EstimateGroup(g_, *single, roofline).estimate_us;
          }
          gw.benefit = parts - EstimateGroup(g_, group, roofline).estimate_us;
        }
        gw.baseline |= group.nodes.size() == 1 || greedy.count(group.nodes) > 0;
        report_.regions[r].candidates += static_cast<int>(gw.schedules.size());
        if (!gw.baseline) optional_groups.push_back(&gw);
      }
      // The budget: beyond the baselines, the groups the roofline model expects to gain most.
      std::sort(optional_groups.begin(), optional_groups.end(),
                [](const GroupWork* a, const GroupWork* b) {
                  return a->benefit != b->benefit ? a->benefit > b->benefit
                                                  : a->signature < b->signature;
                });
      optional_groups.erase(std::unique(optional_groups.begin(), optional_groups.end()),
                            optional_groups.end());
      int allowed = opt_.search.budget > 0 ? opt_.search.budget : std::numeric_limits<int>::max();
      for (GroupWork* gw : optional_groups) {
        int cost = static_cast<int>(std::count(gw->known.begin(), gw->known.end(), false));
        if (cost <= allowed) {
          allowed -= cost;
        } else if (!pruned_.count(gw->signature)) {
          pruned_.insert(gw->signature);
          report_.regions[r].pruned += cost;
          report_.pruned += cost;
        }
      }
    }
    for (auto& [sig, gw] : groups_) {
      if (pruned_.count(sig)) continue;
      std::vector<size_t> missing;
      for (size_t s = 0; s < gw.schedules.size(); ++s)
        if (!gw.known[s]) missing.push_back(s);
      if (missing.empty()) continue;
      Subgraph sub = ExtractSubgraph(g_, gw.canon.inputs, gw.canon.nodes, gw.canon.outputs);
      std::vector<Plan> plans;
      std::vector<ValueId> all;
      for (size_t i = 0; i < sub.node_map.size(); ++i)
        all.push_back(*sub.graph.FindByName(fmt::format("n{}", i)));
      for (size_t s : missing) plans.push_back({fmt::format("s{}", s), {{all, gw.schedules[s]}}});
      jobs.push_back(PlansJob(sub, plans, opt_));
      jobs.back().id = static_cast<int64_t>(jobs.size());
      job_sigs.push_back(sig);
      job_schedules.push_back(missing);
    }
    if (jobs.empty()) return;
    auto results = RunWithProgress("measuring", jobs);
    for (size_t j = 0; j < jobs.size(); ++j) {
      GroupWork& gw = groups_.at(job_sigs[j]);
      // A job's schedules are stored together, so a concurrent task never sees half of them.
      std::vector<db::MeasurementRecord> records;
      for (size_t p = 0; p < job_schedules[j].size(); ++p) {
        size_t s = job_schedules[j][p];
        const PlanResult& t = results[j].plans.at(p);
        db::MeasurementRecord rec;
        rec.key = {gw.signature, gw.schedules[s].ToString(), report_.target, opt_.search.threads};
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
        gw.median_us[s] = t.ok ? t.median_us : kInf;
        ++report_.candidates_measured;
      }
      store_.PutMeasurements(records);
    }
    for (size_t r : to_search) {
      std::set<std::string> seen;
      for (size_t j = 0; j < jobs.size(); ++j) {
        const auto& sigs = regions_[r].group_sigs;
        if (std::find(sigs.begin(), sigs.end(), job_sigs[j]) != sigs.end() &&
            seen.insert(job_sigs[j]).second)
          report_.regions[r].measured += static_cast<int>(job_schedules[j].size());
      }
    }
  }

  void SearchAndValidate(const std::vector<size_t>& to_search) {
    std::vector<Subgraph> subs;
    std::vector<ThreeWay> ways;
    for (size_t r : to_search) {
      RegionWork& w = regions_[r];
      std::vector<CostedGroup> costed;
      for (size_t i = 0; i < w.region.groups.size(); ++i) {
        const GroupWork& gw = groups_.at(w.group_sigs[i]);
        costed.push_back(
            {w.region.groups[i].nodes, pruned_.count(gw.signature) ? kInf : gw.best_us()});
      }
      Partition best = FindBestPartition(g_, w.region.nodes, costed);
      subs.push_back(ExtractSubgraph(g_, w.canon.inputs, w.canon.nodes, w.canon.outputs));
      const Subgraph& sub = subs.back();
      ThreeWay way;
      if (best.found()) {
        Plan tuned{"tuned", {}};
        for (size_t idx : best.groups)
          tuned.groups.push_back(
              {w.region.groups[idx].nodes, groups_.at(w.group_sigs[idx]).best_schedule()});
        way.plans[kTuned] = ToSubgraph(sub, tuned);
      }
      way.plans[kGreedy] = WithBestSchedules(sub, Greedy(sub.graph, &sub));
      way.plans[kUnfused] = WithBestSchedules(sub, UnfusedPlan(sub.graph));
      ways.push_back(std::move(way));
    }
    for (size_t i = 0; i < ways.size(); ++i) ways[i].graph = &subs[i].graph;
    std::vector<ThreeWayResult> results = CompareThreeWays(ways, "validating");
    for (size_t i = 0; i < to_search.size(); ++i) {
      const size_t r = to_search[i];
      RegionWork& w = regions_[r];
      const ThreeWayResult& res = results[i];
      if (res.chosen < 0) {
        std::string reasons;
        for (int slot = 0; slot < 3; ++slot)
          if (ways[i].plans[slot])
            reasons += fmt::format("\n  {}: {}", kSlotNames[slot], res.reason[slot]);
        throw std::runtime_error(fmt::format("region {} ({}) could not be run under any plan:{}",
                                             w.signature,
                                             fmt::join(OpsOf(g_, w.region.nodes), ", "), reasons));
      }
      // The tuned plan is never reported slower than a baseline it could have been: the fastest
      // of the three is what is stored and used, and its time is the tuned figure.
      db::BestPlanRecord rec;
      rec.key = KeyFor(w.signature);
      rec.groups = ToStored(subs[i], *ways[i].plans[res.chosen]);
      rec.tuned_us = res.us[res.chosen];
      rec.greedy_us = res.us[kGreedy];
      rec.unfused_us = res.us[kUnfused];
      rec.chosen = kSlotNames[res.chosen];
      rec.region_text = w.canon.text;
      rec.ops = OpsOf(g_, w.canon.nodes);
      if (!RestrictsSpace(opt_.search)) store_.PutBestPlan(rec);
      for (size_t s = r; s < regions_.size(); ++s) {
        if (regions_[s].first_with_signature != r) continue;
        RegionReport& rr = report_.regions[s];
        rr.plan = FromStored(regions_[s].canon, rec);
        rr.chosen = rec.chosen;
        rr.tuned_us = rec.tuned_us;
        rr.greedy_us = rec.greedy_us;
        rr.unfused_us = rec.unfused_us;
        rr.max_abs_error = res.max_abs_error[res.chosen];
      }
    }
  }

  // Times the plans of every ThreeWay in kTimingRounds rounds. A plan equal to another of its
  // graph (the tuned plan is often the greedy one) is timed once and shares its figure.
  std::vector<ThreeWayResult> CompareThreeWays(const std::vector<ThreeWay>& ways,
                                               const std::string& phase) {
    std::vector<MeasureJob> jobs;
    std::vector<std::array<int, 3>> job_plan_of(ways.size());  // slot -> plan index in the job
    for (size_t i = 0; i < ways.size(); ++i) {
      std::vector<const Plan*> distinct;
      for (int slot = 0; slot < 3; ++slot) {
        job_plan_of[i][slot] = -1;
        if (!ways[i].plans[slot]) continue;
        for (size_t d = 0; d < distinct.size() && job_plan_of[i][slot] < 0; ++d)
          if (SameGroups(*distinct[d], *ways[i].plans[slot]))
            job_plan_of[i][slot] = static_cast<int>(d);
        if (job_plan_of[i][slot] < 0) {
          job_plan_of[i][slot] = static_cast<int>(distinct.size());
          distinct.push_back(&*ways[i].plans[slot]);
        }
      }
      MeasureJob job;
      job.graph_text = PrintRelay(*ways[i].graph);
      for (size_t d = 0; d < distinct.size(); ++d)
        job.plans.push_back({fmt::format("plan{}", d), PlanToJson(*ways[i].graph, *distinct[d])});
      job.threads = opt_.search.threads;
      job.timing = opt_.timing;
      jobs.push_back(std::move(job));
    }
    std::vector<MeasureJob> all;
    for (int round = 0; round < kTimingRounds; ++round)
      for (const MeasureJob& job : jobs) {
        all.push_back(job);
        all.back().id = static_cast<int64_t>(all.size());
      }
    std::vector<JobResult> answers = RunWithProgress(phase, all);
    std::vector<ThreeWayResult> out(ways.size());
    for (size_t i = 0; i < ways.size(); ++i) {
      for (int slot = 0; slot < 3; ++slot) {
        const int p = job_plan_of[i][slot];
        if (p < 0) {
          out[i].reason[slot] = "no plan";
          continue;
        }
        double best = kInf, error = 0;
        std::string reason;
        for (int round = 0; round < kTimingRounds; ++round) {
          const PlanResult& t = answers[round * ways.size() + i].plans.at(p);
          if (!t.ok) {
            reason = t.reason;
            best = kInf;
            break;
          }
          best = std::min(best, t.median_us);
          error = std::max(error, t.max_abs_error);
        }
        out[i].us[slot] = best;
        out[i].max_abs_error[slot] = error;
        out[i].reason[slot] = reason;
        if (best < kInf && (out[i].chosen < 0 || best < out[i].us[out[i].chosen]))
          out[i].chosen = slot;
      }
    }
    return out;
  }

  // TVM's rules under this request's controls: never-fuse nodes count as opaque, and a greedy
  // group that the request forbids or that breaks its limits runs unfused. `graph` is the whole
  // graph (sub = nullptr) or `sub`'s graph.
  Plan Greedy(const Graph& graph, const Subgraph* sub) {
    auto original = [&](ValueId v) -> const Value& {
      return g_.value(sub ? sub->node_map.at(std::stoul(graph.value(v).name.substr(1))) : v);
    };
    const SearchOptions& o = opt_.search;
    Plan rules = GreedyPlan(graph, [&](ValueId v) {
      const Value& ov = original(v);
      return o.never_fuse_ops.count(ov.op->name) > 0 || o.never_fuse_nodes.count(ov.name) > 0;
    });
    Plan out{"greedy", {}};
    for (PlanGroup& pg : rules.groups) {
      std::set<std::string> names;
      for (ValueId v : pg.nodes) names.insert(original(v).name);
      auto group = AnalyzeGroup(graph, pg.nodes);
      bool allowed =
          pg.nodes.size() == 1 ||
          (static_cast<int>(pg.nodes.size()) <= o.max_group_size &&
           static_cast<int>(group->inputs.size() + group->outputs.size()) <= o.max_kernel_args &&
           std::find(o.forbidden_groups.begin(), o.forbidden_groups.end(), names) ==
               o.forbidden_groups.end());
      if (allowed) {
        out.groups.push_back(std::move(pg));
      } else {
        for (ValueId v : pg.nodes) out.groups.push_back({{v}, {}});
      }
    }
    SortGroupsTopologically(graph, out);
    return out;
  }

  // Groups take their fastest measured schedule, so the baselines differ from the tuned plan in
  // fusion only, not in how each kernel was scheduled.
  Plan WithBestSchedules(const Subgraph& sub, Plan plan) {
    for (PlanGroup& pg : plan.groups) {
      std::vector<ValueId> orig;
      for (ValueId v : pg.nodes)
        orig.push_back(sub.node_map.at(std::stoul(sub.graph.value(v).name.substr(1))));
      std::sort(orig.begin(), orig.end());
      CanonicalForm gc = Canonicalize(g_, orig);
      auto it = groups_.find(Hash128Hex(gc.text));
      if (it != groups_.end() && it->second.best_us() < kInf)
        pg.schedule = it->second.best_schedule();
    }
    return plan;
  }

  // The whole graph's plan: every region's stored choice.
  void CollectTunedPlan() {
    report_.tuned_plan = {"tuned", {}};
    for (const RegionReport& rr : report_.regions)
      for (const PlanGroup& pg : rr.plan) report_.tuned_plan.groups.push_back(pg);
    SortGroupsTopologically(g_, report_.tuned_plan);
  }

  void AssembleWholeGraph(bool measured_something) {
    CollectTunedPlan();
    // One region that is the whole graph has just been timed as such: its figures are the totals.
    const bool one_region = report_.regions.size() == 1 &&
                            static_cast<int64_t>(report_.regions[0].nodes.size()) == g_.num_nodes();
    if (!measured_something || one_region) {
      report_.total_chosen = report_.regions.size() == 1 ? report_.regions[0].chosen : "tuned";
      report_.totals_measured = measured_something;  // then the region's validation timed the graph
      for (const RegionReport& rr : report_.regions) {
        report_.total_tuned_us += rr.tuned_us;
        report_.total_greedy_us += rr.greedy_us;
        report_.total_unfused_us += rr.unfused_us;
        report_.max_abs_error = std::max(report_.max_abs_error, rr.max_abs_error);
      }
      return;
    }
    // The whole graph under each plan, timed together. As for regions, the fastest is what
    // the report calls tuned (the union of the regions' choices, unless a whole-graph baseline
    // beats it).
    ThreeWay way;
    way.graph = &g_;
    way.plans[kTuned] = report_.tuned_plan;
    Plan greedy = Greedy(g_, nullptr);
    for (PlanGroup& pg : greedy.groups) {
      auto it = groups_.find(Signature(g_, pg.nodes));
      if (it != groups_.end() && it->second.best_us() < kInf)
        pg.schedule = it->second.best_schedule();
    }
    way.plans[kGreedy] = greedy;
    way.plans[kUnfused] = UnfusedPlan(g_);
    ThreeWayResult res = CompareThreeWays({way}, "timing")[0];
    if (res.chosen < 0)
      throw std::runtime_error("the whole graph could not be run under any plan: " +
                               res.reason[kTuned]);
    report_.totals_measured = true;
    report_.total_chosen = kSlotNames[res.chosen];
    report_.total_tuned_us = res.us[res.chosen];
    report_.total_greedy_us = res.us[kGreedy];
    report_.total_unfused_us = res.us[kUnfused];
    report_.max_abs_error = res.max_abs_error[res.chosen];
    report_.tuned_plan = *way.plans[res.chosen];
    report_.tuned_plan.name = "tuned";
  }

  // The target's peak and bandwidth, measured once and stored: a copy-like kernel over 32 MiB
  // and a batch_matmul, timed as one job. Only needed when a budget makes the model prune.
  RooflineTarget Roofline() {
    RooflineTarget t;
    if (auto rec = store_.FindTarget(report_.target); rec && rec->peak_gflops > 0) {
      t.peak_gflops = rec->peak_gflops;
      t.bandwidth_gbs = rec->bandwidth_gbs;
      return t;
    }
    if (opt_.search.budget <= 0) return t;
    MeasureJob job;
    job.id = 1;
    job.graph_text =
        "fn (%x: Tensor[(8388608,), float32], %a: Tensor[(12, 256, 64), float32], "
        "%b: Tensor[(12, 256, 64), float32]) {\n"
        "  %0 = negative(%x);\n  %1 = nn.batch_matmul(%a, %b);\n  (%0, %1)\n}\n";
    job.plans.push_back({"calibration", R"({"groups":[{"nodes":["%0"]},{"nodes":["%1"]}]})"});
    job.threads = opt_.search.threads;
    job.timing = opt_.timing;
    const PlanResult& r = RunWithProgress("calibrating", {job})[0].plans.at(0);
    if (!r.ok || r.kernel_us.size() != 2 || r.kernel_us[0] <= 0 || r.kernel_us[1] <= 0) return t;
    db::TargetRecord rec;
    rec.fingerprint = report_.target;
    rec.cores = opt_.search.threads;
    rec.bandwidth_gbs = 2.0 * 8388608 * 4 / (r.kernel_us[0] * 1e3);
    rec.peak_gflops = 2.0 * 12 * 256 * 256 * 64 / (r.kernel_us[1] * 1e3);
    store_.PutTarget(rec);
    t.peak_gflops = rec.peak_gflops;
    t.bandwidth_gbs = rec.bandwidth_gbs;
    return t;
  }

  std::vector<JobResult> RunWithProgress(const std::string& phase,
                                         const std::vector<MeasureJob>& jobs) {
    if (progress_) progress_({phase, 0, jobs.size()});
    auto results = backend_.RunJobs(jobs, [&](size_t done) {
      if (progress_) progress_({phase, done, jobs.size()});
    });
    FT_CHECK(results.size() == jobs.size(),
             "backend returned a result count that differs from jobs");
    for (size_t i = 0; i < jobs.size(); ++i)
      if (results[i].plans.size() != jobs[i].plans.size())
        results[i] = FailedResult(jobs[i], "the worker answered for a different set of plans");
    return results;
  }

  const Graph& g_;
  const TuneOptions& opt_;
  db::Cache& store_;
  MeasurementBackend& backend_;
  const ProgressFn& progress_;
  std::vector<RegionWork> regions_;
  std::map<std::string, GroupWork> groups_;
  std::set<std::string> pruned_;
  TuneReport report_;
};

}  // namespace

TuneReport Tune(const Graph& graph, const TuneOptions& options, db::Cache& store,
                MeasurementBackend& backend, const ProgressFn& progress) {
  return TuneRun(graph, options, store, backend, progress).Run();
}

TuneReport LookupCached(const Graph& graph, const SearchOptions& options, db::Cache& store,
                        const std::string& target, std::vector<std::string>* missing) {
  TuneOptions o;
  o.search = options;
  struct NoBackend : MeasurementBackend {
    std::string TargetFingerprint() override { return ""; }
    std::vector<JobResult> RunJobs(const std::vector<MeasureJob>&,
                                   const std::function<void(size_t)>&) override {
      return {};
    }
  } none;
  return TuneRun(graph, o, store, none, {}).LookupOnly(missing, target);
}

}  // namespace fusetune
