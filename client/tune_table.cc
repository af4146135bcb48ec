#include "client/tune_table.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "server/target_names.h"
#include "server/validation.h"

namespace fusetune::cli {
namespace {

std::string Speedup(double base, double tuned) {
  if (!std::isfinite(base) || !std::isfinite(tuned) || tuned <= 0) return "-";
  return fmt::format("{:.2f}x", base / tuned);
}

std::string OpsSummary(const std::vector<std::string>& ops, size_t width) {
  std::string out;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string next = (i ? ", " : "") + ops[i];
    std::string tail = fmt::format(", … ({} ops)", ops.size());
    if (out.size() + next.size() > width - (i + 1 < ops.size() ? tail.size() : 0)) {
      return out + tail;
    }
    out += next;
  }
  return out;
}

// Identical layers of a model are one region signature, tuned and decided once: a 12-layer
// model's report would list the same answer 12 times. The report lists such a family once, at its
// first region, when every figure and decision is the same.
bool SameAnswer(const RegionReport& a, const RegionReport& b) {
  return a.signature == b.signature && a.chosen == b.chosen && a.decision == b.decision &&
         a.rounds == b.rounds && a.cached == b.cached && a.transferred_from == b.transferred_from &&
         a.searched_again == b.searched_again && !a.warm_start && !b.warm_start &&
         UsText(a.tuned_us, 3) == UsText(b.tuned_us, 3) &&
         UsText(a.greedy_us, 3) == UsText(b.greedy_us, 3) &&
         UsText(a.unfused_us, 3) == UsText(b.unfused_us, 3) && a.changes.size() == b.changes.size();
}

// For each region, the regions (1-based) listed with it: itself and every later region with the
// same answer; empty for a region listed with an earlier one.
std::vector<std::vector<size_t>> Families(const TuneReport& r) {
  std::vector<std::vector<size_t>> families(r.regions.size());
  std::vector<bool> listed(r.regions.size(), false);
  for (size_t i = 0; i < r.regions.size(); ++i) {
    if (listed[i]) continue;
    for (size_t j = i; j < r.regions.size(); ++j) {
      if (listed[j] || (j != i && !SameAnswer(r.regions[i], r.regions[j]))) continue;
      listed[j] = true;
      families[i].push_back(j + 1);
    }
  }
  return families;
}

// "2, 5, 8" or, for a long evenly spaced run, "2, 5, …, 35 (every 3rd)".
std::string RegionNumbers(const std::vector<size_t>& n) {
  bool even = n.size() >= 5;
  for (size_t i = 2; even && i < n.size(); ++i) even = n[i] - n[i - 1] == n[1] - n[0];
  if (!even) return fmt::format("{}", fmt::join(n, ", "));
  const size_t step = n[1] - n[0];
  const char* suffix = step % 100 / 10 == 1 ? "th"
                       : step % 10 == 1     ? "st"
                       : step % 10 == 2     ? "nd"
                       : step % 10 == 3     ? "rd"
                                            : "th";
  return fmt::format("{}, {}, …, {}{}", n[0], n[1], n.back(),
                     step == 1 ? "" : fmt::format(" (every {}{})", step, suffix));
}

std::string TimesSuffix(const std::vector<size_t>& family) {
  return family.size() > 1 ? fmt::format(" ×{}", family.size()) : "";
}

// The regions whose plans leave the rules, what they do instead, and the time it gained.
std::string ChangesText(const Graph& graph, const TuneReport& r,
                        const std::vector<std::vector<size_t>>& families) {
  auto gain = [](const RegionReport& rr) { return rr.greedy_us - rr.tuned_us; };
  double total = 0;
  for (const RegionReport& rr : r.regions)
    if (!rr.changes.empty() && std::isfinite(gain(rr)) && gain(rr) > 0) total += gain(rr);
  if (std::all_of(r.regions.begin(), r.regions.end(),
                  [](const RegionReport& rr) { return rr.changes.empty(); }))
    return "\nwhat won against the rules: nothing, greedy's groups on default schedules "
           "everywhere\n";
  std::string out =
      "\nwhat won against the rules (greedy on default schedules): the region's gain, its share "
      "of the regions' gains, and what its plan does instead\n";
  for (size_t i = 0; i < r.regions.size(); ++i) {
    const RegionReport& rr = r.regions[i];
    if (rr.changes.empty() || families[i].empty()) continue;
    const double g = gain(rr);
    const bool counted = std::isfinite(g) && g > 0 && total > 0;
    // A family's row: one region's gain, times how many; the share is the family's.
    out += fmt::format(
        "{:>3}  {:>12}{:<4}  {:>5}  {}\n", i + 1,
        std::isfinite(g) ? fmt::format("{:.1f} µs", g) : "-", TimesSuffix(families[i]),
        counted ? fmt::format("{:.0f}%", 100 * g * static_cast<double>(families[i].size()) / total)
                : "-",
        DescribeChanges(graph, rr.changes));
  }
  return out;
}

}  // namespace

std::string WarmStartText(const WarmStartReport& w) {
  const std::string head =
      fmt::format("warm start from {}: its plan {} µs here ({} after {} rounds, {:.1f} s)", w.from,
                  UsText(w.transferred_us, 1), w.chosen == "tuned" ? "kept" : w.chosen + " kept",
                  w.rounds, w.seconds);
  if (!w.searched)
    return head + fmt::format("; 0 measurements instead of the search's {} (--warm-only)",
                              w.search_candidates);
  return head +
         fmt::format("; then {} measurements, the family's groups first", w.search_candidates);
}

std::string UsText(double us, int decimals) {
  if (std::isnan(us)) return "-";
  return std::isfinite(us) ? fmt::format("{:.{}f}", us, decimals) : "failed";
}

std::string ShortTarget(const std::string& fingerprint) {
  const std::string cpu = TargetCpu(fingerprint);
  if (cpu == fingerprint) return fingerprint;
  const size_t a = fingerprint.find(';');
  const auto features = std::count(fingerprint.begin() + static_cast<long>(a + 1 + cpu.size()),
                                   fingerprint.end(), '+');
  return fmt::format("{} {}, {} features", fingerprint.substr(0, a), cpu, features);
}

std::string FormatTuneTable(const Graph& graph, const std::string& graph_name,
                            const TuneReport& r) {
  std::string out = fmt::format("{}  on {}, {} thread{}\n\n", graph_name, ShortTarget(r.target),
                                r.threads, r.threads == 1 ? "" : "s");
  constexpr size_t kOpsWidth = 44;
  out += fmt::format("{:>3}  {:<{}}  {:>11}  {:>11}  {:>11}  {:>11}  {:>9}  {:>9}\n", "#", "ops",
                     kOpsWidth, "source", "tuned µs", "greedy µs", "unfused µs", "vs greedy",
                     "vs unfused");
  const std::vector<std::vector<size_t>> families = Families(r);
  for (size_t i = 0; i < r.regions.size(); ++i) {
    const RegionReport& rr = r.regions[i];
    if (families[i].empty()) continue;
    const std::string times = TimesSuffix(families[i]);
    const bool transferred = !rr.transferred_from.empty();
    const bool warm_only = rr.warm_start && !rr.warm_start->searched;
    std::string source = rr.cached     ? "cache"
                         : transferred ? "transferred"
                         : warm_only   ? "warm"
                                       : fmt::format("{}+{}", rr.measured, rr.reused);
    out += fmt::format("{:>3}  {:<{}}  {:>11}  {:>10}  {:>10}  {:>10}  {:>9}  {:>9}\n", i + 1,
                       OpsSummary(rr.ops, kOpsWidth - times.size()) + times, kOpsWidth, source,
                       UsText(rr.tuned_us, 1), UsText(rr.greedy_us, 1), UsText(rr.unfused_us, 1),
                       Speedup(rr.greedy_us, rr.tuned_us), Speedup(rr.unfused_us, rr.tuned_us));
  }
  out += fmt::format("{:>3}  {:<{}}  {:>11}  {:>10}  {:>10}  {:>10}  {:>9}  {:>9}\n", "",
                     "whole graph", kOpsWidth, r.totals_measured ? "timed" : "sum",
                     UsText(r.total_tuned_us, 1), UsText(r.total_greedy_us, 1),
                     UsText(r.total_unfused_us, 1), Speedup(r.total_greedy_us, r.total_tuned_us),
                     Speedup(r.total_unfused_us, r.total_tuned_us));
  for (size_t i = 0; i < r.regions.size(); ++i)
    if (families[i].size() > 1)
      out += fmt::format("     ×{}: regions {}, one signature and one answer, listed once\n",
                         families[i].size(), RegionNumbers(families[i]));
  out +=
      "\nchosen kernels per region (the simplest of greedy, unfused and tuned is kept unless a "
      "faster one wins beyond noise):\n";
  for (size_t i = 0; i < r.regions.size(); ++i) {
    const RegionReport& rr = r.regions[i];
    if (families[i].empty()) continue;
    std::string groups;
    for (const PlanGroup& g : rr.plan) {
      std::string names;
      for (ValueId v : g.nodes) names += (names.empty() ? "" : " ") + graph.RefName(v);
      groups += fmt::format(" [{}]", names);
    }
    out += fmt::format("{:>3}  {:<8}{}\n", i + 1, rr.chosen, groups);
    if (families[i].size() > 1)
      out += fmt::format("     the same groups in region{} {}, on their own nodes\n",
                         families[i].size() > 2 ? "s" : "",
                         RegionNumbers({families[i].begin() + 1, families[i].end()}));
    if (!rr.searched_again.empty()) out += fmt::format("     {}\n", rr.searched_again);
    if (!rr.decision.empty())
      out += fmt::format("     {}{}\n", rr.decision,
                         rr.rounds > 0 ? fmt::format(" ({})", RoundsText(rr.rounds)) : "");
    if (!rr.transferred_from.empty())
      out += fmt::format("     transferred, not measured at this size: the plan tuned at {}\n",
                         rr.transferred_from);
    if (rr.warm_start) out += "     " + WarmStartText(*rr.warm_start) + "\n";
  }
  // Several regions: the whole graph was timed in sequence and decided once more (whether a
  // baseline beats the regions' plans there), which no region's line says.
  if (r.regions.size() > 1 && !r.total_decision.empty())
    out += fmt::format("whole graph: {}\n", r.total_decision);
  out += ChangesText(graph, r, families);
  const bool all_cached = std::all_of(r.regions.begin(), r.regions.end(),
                                      [](const RegionReport& x) { return x.cached; });
  const bool any_transferred = std::any_of(r.regions.begin(), r.regions.end(), [](const auto& x) {
    return !x.transferred_from.empty();
  });
  const bool nothing_ran = std::all_of(r.regions.begin(), r.regions.end(), [](const auto& x) {
    return x.cached || !x.transferred_from.empty();
  });
  const std::string error =
      all_cached    ? "checked when the plans were stored"
      : nothing_ran ? "not checked yet (`fusetune run --plan tuned` checks a transferred plan)"
      // 0 from a server that predates the magnitude: the error alone
      : r.max_output_magnitude > 0
          ? fmt::format("{:.2g} on outputs up to {:.3g}", r.max_abs_error, r.max_output_magnitude)
          : fmt::format("{:.2g}", r.max_abs_error);
  out += fmt::format(
      "\nmax |error| vs reference {}; measured {} candidates, reused {}, pruned {} by the "
      "cost model; {:.1f} s\n",
      error, r.candidates_measured, r.measurements_reused, r.pruned, r.seconds);
  if (!r.duels.empty()) {
    const auto won = std::count_if(r.duels.begin(), r.duels.end(), [](auto& d) { return d.won; });
    out += fmt::format(
        "schedule duels (a schedule against its group's default, paired): {} of {} "
        "won\n",
        won, r.duels.size());
    for (const ScheduleDuel& d : r.duels)
      if (d.won)
        out +=
            fmt::format("  {} ({}): {}{}\n", d.group, fmt::join(d.ops, ", "), d.kept,
                        d.kept != d.schedule   ? " (the runner-up, faster than the challenger)"
                        : d.kept_unless_beaten ? " (weights packed once; the default did not win)"
                                               : "");
  }
  out += "source: measured+reused (group, schedule) pairs, or cache = the region's stored plan\n";
  if (any_transferred)
    out += "        transferred = the nearest tuned size's plan, adapted; its figures are '-'\n";
  if (std::any_of(r.regions.begin(), r.regions.end(),
                  [](const auto& x) { return x.warm_start && !x.warm_start->searched; }))
    out +=
        "        warm = the nearest tuned size's plan, timed here against greedy (unfused not "
        "timed: '-')\n";
  return out;
}

}  // namespace fusetune::cli
