#pragma once
// The human-readable report of `tune` and `query`: one row per region with its tuned, greedy and
// unfused times and the speedups, then each region's chosen groups.
#include <string>

#include "server/tuner.h"

namespace fusetune::cli {

std::string FormatTuneTable(const Graph& graph, const std::string& graph_name,
                            const TuneReport& report);

// "warm start from s1=256 (here 192): its plan 812.4 µs here (...); 0 measurements instead of
// the search's 12 (--warm-only)": how a warm-started tune began, for the table.
std::string WarmStartText(const WarmStartReport& w);

// A time in µs with `decimals` digits: "-" when not measured (NaN: a transferred plan, a warm-only
// tune's unfused plan), "failed" when the plan failed (infinity).
std::string UsText(double us, int decimals);

// "x86_64-pc-linux-gnu znver4, 112 features" from a full fingerprint.
std::string ShortTarget(const std::string& fingerprint);

}  // namespace fusetune::cli
