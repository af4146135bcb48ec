#pragma once
// The tuner: the whole search for one graph, free of transport so `tune --local` and the gRPC
// service run the same code. Tune() (tuner.cc) reads as the stages of docs/architecture.md's
// request path, one file each:
//
//   region formation ▶ stored plans reused ▶ calibration ▶ measurement planning ▶ measuring
//   ▶ plan choice (partition DP) ▶ validation (tuned vs greedy vs unfused, one run)
//   ▶ best plans stored ▶ report assembly (whole-graph timing of the three plans)
//
// Where jobs run is the MeasurementBackend's business: an in-process sandbox child (local mode)
// or the service's worker farm.
#include <string>
#include <vector>

#include "db/cache.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "server/measurement_backend.h"
#include "server/search_options.h"
#include "server/tune_options.h"
#include "server/tune_report.h"
#include "worker/job.h"

namespace fusetune {

TuneReport Tune(const Graph& graph, const TuneOptions& options, db::Cache& store,
                MeasurementBackend& backend, const ProgressFn& progress = {});

// Cached plans only: the report's regions with `cached` set, and the signatures of regions that
// have no stored plan (or none this request may reuse) in `missing`. Nothing is measured. Unless
// `exact_only`, a region with no stored plan is answered by transfer from the nearest tuned
// member of its family for this target and thread count (server/plan_transfer.h), marked by its
// `transferred_from`, and is not missing.
TuneReport LookupCached(const Graph& graph, const SearchOptions& options, db::Cache& store,
                        const std::string& target, std::vector<std::string>* missing,
                        bool exact_only = false);

}  // namespace fusetune
