#pragma once
// Plain records the Cache and the JobQueue read and write. They carry no behaviour and no SQL;
// every time is Unix time in milliseconds (0 = "now" when the database writes a record).
//
// Keys (docs/signatures.md):
//   measurement  (group_signature, schedule, target_fingerprint, threads)
//   best plan    (region_signature, target_fingerprint, threads, search_version)
//   target       (fingerprint)
//   job          (job_key, target, threads)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fusetune::db {

// The roofline figures of one target, measured once and kept.
struct TargetRecord {
  std::string fingerprint;  // names triple, CPU and sorted feature list (opaque to the store)
  std::string cpu;
  std::string triple;
  std::string features;  // sorted, comma-separated
  int32_t cores = 0;
  double peak_gflops = 0;
  double bandwidth_gbs = 0;
  int64_t measured_at = 0;
};

struct MeasurementKey {
  std::string group_signature;  // hash of the group's canonical text
  std::string schedule;         // Schedule::ToString(); "" = the template's default
  std::string target_fingerprint;
  int32_t threads = 1;
  bool operator==(const MeasurementKey&) const = default;
};

enum class MeasurementStatus { kOk, kInvalid };
std::string_view MeasurementStatusName(MeasurementStatus status);  // "ok" / "invalid"

// One timed candidate. An invalid one (compile error, crash, timeout, wrong result) carries its
// reason and no meaningful times; it is never treated as fast.
struct MeasurementRecord {
  MeasurementKey key;
  MeasurementStatus status = MeasurementStatus::kOk;
  std::string reason;  // why invalid; empty when ok
  double median_us = 0;
  double min_us = 0;
  double stddev_us = 0;
  int64_t number = 0;  // calls per repeat
  int32_t repeat = 0;
  double max_abs_error = 0;  // against the reference interpreter
  double compile_ms = 0;
  std::string group_text;  // the group's canonical text, for inspection
  int64_t created_at = 0;
};

struct BestPlanKey {
  std::string region_signature;
  std::string target_fingerprint;
  int32_t threads = 1;
  int32_t search_version = 1;
  bool operator==(const BestPlanKey&) const = default;
};

// One group of a stored plan: positions in the region's canonical node order (so the plan applies
// to every region with the same signature, whatever its node names) and its schedule text.
struct StoredGroup {
  std::vector<int32_t> nodes;
  std::string schedule;
  bool operator==(const StoredGroup&) const = default;
};

// The best plan found for a region, with all three validated figures and, when the validation
// recorded them, how sure it was (db/schema.cc, v4, documents each column).
struct BestPlanRecord {
  BestPlanKey key;
  std::vector<StoredGroup> groups;
  double tuned_us = 0;
  double greedy_us = 0;
  double unfused_us = 0;         // NaN: not timed (a warm-only tune, schema v7); infinity: failed
  std::string chosen;            // "tuned", "greedy" or "unfused": the plan stored in `groups`
  std::string region_text;       // canonical text, for inspection
  std::vector<std::string> ops;  // op names in canonical order
  int64_t created_at = 0;
  // Shape-free structure key of the region: regions that differ only in sizes share it. Empty
  // when unknown (such plans belong to no family).
  std::string family_key;
  std::optional<double> margin;   // chosen time / runner-up baseline's time, e.g. 0.93
  std::string decision;           // e.g. "tuned 1.02x, within noise: greedy kept"; "" = none
  std::optional<int32_t> rounds;  // paired timing rounds behind the decision
  // Unix ms of the last re-validation that kept the plan (or stored it as a replacement); nullopt:
  // never re-validated.
  std::optional<int64_t> verified_at;
  // The tune that stored the plan offered weights packed once (wpack): some matmul of the region
  // had a constant B (schema v8). false also for plans stored before anyone recorded it.
  bool weights_bound = false;

  // The time of the stored plan (the figure of `chosen`): what merges compare.
  double ChosenUs() const;
};

// A plan that a newer plan of the same key replaced, kept for the record.
struct ReplacedPlanRecord {
  BestPlanRecord plan;  // as it was stored, created_at included
  int64_t replaced_at = 0;
  std::string reason;  // why it was replaced, e.g. "tuned again"
};

// Serialisation of `groups`, as stored in best_plans.plan_json:
// {"groups":[{"nodes":[0,1],"schedule":"tile_m=8"}]}. Parse throws UserError.
std::string GroupsToJson(const std::vector<StoredGroup>& groups);
std::vector<StoredGroup> GroupsFromJson(std::string_view json);

enum class TaskState { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view TaskStateName(TaskState state);
std::optional<TaskState> ParseTaskState(std::string_view name);
inline bool IsTerminal(TaskState s) {
  return s == TaskState::kDone || s == TaskState::kFailed || s == TaskState::kCancelled;
}

struct TaskRecord {
  int64_t id = 0;  // assigned by CreateTask
  TaskState state = TaskState::kQueued;
  std::string graph_text;                // the submitted graph (Relay text)
  std::string options_json;              // the tune options as given
  std::string bound_params_json = "[]";  // names of the parameters that carry weights
  std::string target;                    // a fingerprint or "any"
  std::string client;                    // who submitted it
  int64_t progress_done = 0;
  int64_t progress_total = 0;
  std::string error;        // why failed
  std::string result_json;  // the final per-region result, when done
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

enum class JobState { kQueued, kLeased, kDone, kFailed };
std::string_view JobStateName(JobState state);
std::optional<JobState> ParseJobState(std::string_view name);

// What a task asks a worker to do. The key is (job_key, target, threads): jobs with equal keys
// are one queue row, shared by every task that needs it (the task_jobs link), so concurrent
// identical submissions cause one measurement.
struct JobSpec {
  std::string job_key;  // what the job does, hashed: equal work, equal key (opaque here)
  std::string target;   // a target fingerprint, or "any": then any worker may lease it
  int32_t threads = 1;
  std::vector<uint8_t> payload;  // what a worker needs to run the job (opaque here)
  int32_t max_attempts = 3;
};

// One job in the durable queue.
struct JobRecord {
  int64_t id = 0;
  std::string job_key;
  std::string target;  // as enqueued: a fingerprint or "any"
  int32_t threads = 1;
  JobState state = JobState::kQueued;
  int32_t attempts = 0;  // leases handed out so far
  int32_t max_attempts = 3;
  std::string lease_owner;     // worker id while leased
  int64_t lease_deadline = 0;  // while leased
  std::string errors;          // every failed attempt's reason, "; "-separated, oldest first
  std::string result_target;   // once done: the fingerprint of the worker that answered
  std::vector<uint8_t> payload;
  // Once done: the worker's answer, kept on the row (opaque here), so a task that asks again or
  // resumes after a restart reads it back instead of measuring again.
  std::vector<uint8_t> result;
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

// A job's id and state without its payload: what a waiting task polls.
struct JobStatus {
  int64_t id = 0;
  JobState state = JobState::kQueued;
};

enum class WorkerState { kOnline, kOffline };
std::string_view WorkerStateName(WorkerState state);

struct WorkerRecord {
  std::string id;  // stable across reconnects, so a reconnecting worker is one row
  std::string target_fingerprint;
  int32_t cores = 0;
  std::string version;
  WorkerState state = WorkerState::kOnline;
  int64_t registered_at = 0;
  int64_t last_heartbeat = 0;
};

// Unix time in milliseconds.
int64_t NowMs();

}  // namespace fusetune::db
