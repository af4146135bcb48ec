#pragma once
// The Cache: what fusetune knows and keeps across runs and machines. Targets (a CPU's roofline
// figures), measurements (each (group, schedule, target, threads) timed at most once, ever), best
// plans per region with the plans they replaced, and their export and import as JSON lines.
//
// A Cache is a view on a Database (db/database.h) and shares its connection with the JobQueue;
// both may be used from any number of threads. Every call that writes is one transaction.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "db/database.h"
#include "db/records.h"

namespace fusetune::db {

// ---- filters (an empty string / nullopt / 0 matches everything) ----
// target_fingerprint: the whole fingerprint, or its CPU name alone ("znver4",
// "generic-AuthenticAMD-26-2").

struct MeasurementFilter {
  std::string group_signature_prefix;
  std::string target_fingerprint;
  std::optional<int32_t> threads;
  std::optional<MeasurementStatus> status;
  int64_t limit = 0;
};

struct BestPlanFilter {
  std::string region_signature_prefix;
  std::string target_fingerprint;
  std::optional<int32_t> threads;
  std::optional<int32_t> search_version;
  std::string op;  // plans whose region holds this op
  int64_t limit = 0;
  bool newest_first = false;  // order by created_at, newest first, instead of by key
};

struct ReplacedPlanFilter {
  std::string region_signature_prefix;
  std::string target_fingerprint;
  std::optional<int32_t> threads;
  std::optional<int32_t> search_version;
  int64_t limit = 0;  // newest replacements first
};

struct CacheStats {
  int schema_version = 0;
  int64_t targets = 0;
  int64_t measurements_ok = 0;
  int64_t measurements_invalid = 0;
  int64_t best_plans = 0;
  int64_t replaced_plans = 0;
};

struct ImportStats {
  int64_t added = 0;
  int64_t replaced = 0;
  int64_t kept = 0;  // an existing record was better or equal
};

// The reasons PutBestPlan and an import record for a plan they replace.
inline constexpr const char* kReplacedByRetune = "tuned again";
inline constexpr const char* kReplacedByImport = "import: a faster plan";

class Cache {
 public:
  // UserError unless `db` is at the latest schema version.
  explicit Cache(Database& db);

  const std::string& path() const { return db_.path(); }
  // Every count, the measurements' included (they scan the largest table).
  CacheStats Stats() const;
  // Stats() without the measurement counts: every count here runs on an index, cheap enough for
  // each metrics scrape and status page (measurements_* stay 0).
  CacheStats QuickStats() const;

  // ---- targets ----
  // Inserts or replaces the figures of one target (a re-measurement supersedes the old one).
  void PutTarget(const TargetRecord& target);
  std::optional<TargetRecord> FindTarget(const std::string& fingerprint) const;

  // ---- measurements ----
  std::optional<MeasurementRecord> FindMeasurement(const MeasurementKey& key) const;
  // Stores each record unless one is already there, in one transaction: another reader sees all
  // of them or none (a search that finds half of a job's schedules measured would queue the other
  // half again). The one exception: an invalid record is replaced by an ok one; an ok record is
  // never replaced. Returns how many were written.
  int64_t PutMeasurements(const std::vector<MeasurementRecord>& records);
  std::vector<MeasurementRecord> ListMeasurements(const MeasurementFilter& filter = {}) const;
  int64_t DeleteMeasurements(const MeasurementFilter& filter);

  // ---- best plans ----
  std::optional<BestPlanRecord> FindBestPlan(const BestPlanKey& key) const;
  // The plans of one family (regions that differ only in sizes) for one target, thread count and
  // search version, by region signature. An empty family_key names no family: nothing.
  std::vector<BestPlanRecord> FindBestPlansByFamily(const std::string& family_key,
                                                    const std::string& target_fingerprint,
                                                    int32_t threads, int32_t search_version) const;
  // Inserts or replaces: a region is re-tuned only on purpose, and the newest validation wins. A
  // replaced plan's row is archived in replaced_plans with `replace_reason`, in the same
  // transaction.
  void PutBestPlan(const BestPlanRecord& record,
                   const std::string& replace_reason = kReplacedByRetune);
  std::vector<BestPlanRecord> ListBestPlans(const BestPlanFilter& filter = {}) const;
  // The target fingerprints the stored best plans are for, each once, sorted.
  std::vector<std::string> BestPlanTargets() const;
  // Records that a re-validation kept the plan of `key` (verified_at; 0 = now). Changes nothing
  // else. False when no plan is stored under `key`.
  bool MarkBestPlanVerified(const BestPlanKey& key, int64_t when_ms = 0);
  // Deletes plans (their replaced_plans history stays).
  int64_t DeleteBestPlans(const BestPlanFilter& filter);
  // Plans that newer ones replaced, newest replacement first.
  std::vector<ReplacedPlanRecord> ListReplacedPlans(const ReplacedPlanFilter& filter = {}) const;

  // ---- export / import (JSON lines; see db/export.cc for the format) ----
  // Writes targets, measurements and best plans (a header line first). Returns the record count.
  int64_t ExportJsonLines(std::ostream& out) const;
  // Merges in one transaction; any malformed line throws UserError naming the line and nothing is
  // imported. Merge rule, per record kind:
  //   target       added when absent; an existing one is kept (it describes the same CPU)
  //   measurement  added when absent; replaces an invalid one with an ok one; otherwise kept
  //   best plan    added when absent; replaces an existing one only when its chosen time is
  //                strictly lower (the old one goes to replaced_plans); an equal or slower one
  //                is kept
  ImportStats ImportJsonLines(std::istream& in);

 private:
  CacheStats CountStats(bool measurements) const;

  Database& db_;
};

}  // namespace fusetune::db
