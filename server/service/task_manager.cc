#include "server/service/task_manager.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "ir/bind_params.h"
#include "ir/error.h"
#include "ir/text/relay_parser.h"
#include "server/service/queue_backend.h"
#include "server/service/result_convert.h"
#include "server/service/status_error.h"
#include "server/target_names.h"

namespace fusetune::service {
namespace {

using nlohmann::json;
constexpr std::chrono::milliseconds kProgressWriteInterval{250};

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, opts);
  FT_CHECK(status.ok(), "protobuf message did not print as JSON");
  return out;
}

std::string OptionsJson(const Submission& s) {
  return json{{"graph_name", s.graph_name}, {"options", json::parse(ToJson(s.options))}}.dump();
}

// The task's graph as submitted: its Relay text, with the parameters that carried weights bound
// again (to placeholders: the weights stayed with the client), so the search offers what it
// offered a local tune of the same graph.
Graph TaskGraph(const db::TaskRecord& task, const std::string& graph_name, const Limits& limits) {
  Graph graph = ParseRelay(task.graph_text, graph_name, limits);
  json names = json::parse(task.bound_params_json, nullptr, /*allow_exceptions=*/false);
  if (!names.is_array())
    throw UserError(
        fmt::format("task {}: its stored bound parameters are not a JSON array", task.id));
  std::map<std::string, TensorType> types;
  for (const json& name : names) {
    std::optional<ValueId> id =
        name.is_string() ? graph.FindByName(name.get<std::string>()) : std::nullopt;
    if (!id)
      throw UserError(
          fmt::format("task {}: bound parameter {} is not in its graph", task.id, name.dump()));
    types.emplace(name.get<std::string>(), graph.value(*id).type);
  }
  return types.empty() ? std::move(graph) : BindParamPlaceholders(graph, types, limits);
}

}  // namespace

v1::TuneOptions TaskOptions(const db::TaskRecord& task, std::string* graph_name) {
  v1::TuneOptions options;
  json doc = json::parse(task.options_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    throw UserError(fmt::format("task {}: its stored options are not JSON", task.id));
  if (graph_name) *graph_name = doc.value("graph_name", std::string());
  if (doc.contains("options")) {
    auto status = google::protobuf::util::JsonStringToMessage(doc["options"].dump(), &options);
    if (!status.ok())
      throw UserError(fmt::format("task {}: stored options: {}", task.id, status.ToString()));
  }
  return options;
}

TaskManager::TaskManager(db::Cache& cache, WorkQueue& work, const ServiceOptions& options)
    : cache_(cache), work_(work), tasks_(work.store()), options_(options) {}

TaskManager::~TaskManager() { Stop(); }

void TaskManager::Changed() {
  {
    std::lock_guard lock(mutex_);
    ++version_;
  }
  changed_.notify_all();
}

void TaskManager::ResumeUnfinished() {
  db::TaskFilter filter;
  filter.states = {db::TaskState::kQueued, db::TaskState::kRunning};
  for (const db::TaskRecord& task : tasks_.ListTasks(filter)) {
    spdlog::info("resuming task {} ({})", task.id, db::TaskStateName(task.state));
    Start(task.id);
  }
}

int64_t TaskManager::Submit(const Submission& s, const std::string& client) {
  std::lock_guard submit(submit_mutex_);
  db::TaskFilter filter;
  filter.states = {db::TaskState::kQueued, db::TaskState::kRunning};
  filter.client = client;
  size_t unfinished = tasks_.ListTasks(filter).size();
  if (static_cast<int>(unfinished) >= options_.max_tasks_per_client)
    throw StatusError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      fmt::format("client '{}' has {} unfinished tasks, the most this server "
                                  "allows; wait for one to finish or cancel one",
                                  client, unfinished));
  db::TaskRecord task;
  task.state = db::TaskState::kQueued;
  task.graph_text = s.graph_text;
  task.options_json = OptionsJson(s);
  task.bound_params_json = json(s.bound_params).dump();
  task.target = s.target;
  task.client = client;
  int64_t id = tasks_.CreateTask(task);
  Start(id);
  return id;
}

void TaskManager::Start(int64_t id) {
  auto live = std::make_shared<Live>();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;  // stays queued in the store for the next start
    live_[id] = live;
    ++threads_;
    ++version_;
  }
  changed_.notify_all();
  std::thread([this, id, live] {
    Run(id, *live);
    // Notified under the lock: once it is released, Stop() may return and `this` may be gone.
    std::lock_guard lock(mutex_);
    live_.erase(id);
    --threads_;
    ++version_;
    changed_.notify_all();
  }).detach();
}

bool TaskManager::Cancel(int64_t id) {
  bool cancelled = work_.CancelTask(id);
  if (cancelled) {
    std::lock_guard lock(mutex_);
    if (auto it = live_.find(id); it != live_.end()) it->second->interrupt = kCancel;
    ++version_;
  }
  changed_.notify_all();
  return cancelled;
}

std::optional<TaskView> TaskManager::View(int64_t id) const {
  uint64_t version;
  std::shared_ptr<Live> live;
  {
    std::lock_guard lock(mutex_);
    version = version_;
    if (auto it = live_.find(id); it != live_.end()) live = it->second;
  }
  std::optional<db::TaskRecord> record = tasks_.FindTask(id);
  if (!record) return std::nullopt;
  TaskView view{std::move(*record), "", version};
  if (db::IsTerminal(view.record.state)) {
    view.phase = std::string(db::TaskStateName(view.record.state));
  } else if (live) {
    std::lock_guard lock(mutex_);
    view.phase = live->phase;
    view.record.progress_done = live->done;
    view.record.progress_total = live->total;
  } else {
    view.phase = "queued";
  }
  return view;
}

void TaskManager::WaitForChange(uint64_t version, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return stopping_ || version_ != version; });
}

void TaskManager::Stop() {
  std::unique_lock lock(mutex_);
  stopping_ = true;
  for (auto& [id, live] : live_) live->interrupt = kStop;
  changed_.notify_all();
  changed_.wait(lock, [&] { return threads_ == 0; });
}

bool TaskManager::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

void TaskManager::SetPhase(Live& live, const std::string& phase) {
  {
    std::lock_guard lock(mutex_);
    live.phase = phase;
  }
  Changed();
}

void TaskManager::Progress(int64_t id, Live& live, const std::string& phase, int64_t done,
                           int64_t total) {
  bool write;
  {
    std::lock_guard lock(mutex_);
    auto now = std::chrono::steady_clock::now();
    write = phase != live.phase || done == total || now - live.last_write >= kProgressWriteInterval;
    if (write) live.last_write = now;
    live.phase = phase;
    live.done = done;
    live.total = total;
    ++version_;
  }
  changed_.notify_all();
  if (write) tasks_.SetTaskProgress(id, done, total);
}

void TaskManager::Run(int64_t id, Live& live) {
  // A running slot first: at most max_running_tasks search at once, the rest wait queued.
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] {
      return stopping_ || live.interrupt != kRun || running_ < options_.max_running_tasks;
    });
    if (stopping_ || live.interrupt != kRun) return;
    ++running_;
  }
  try {
    RunTune(id, live);
  } catch (const TaskInterrupted& e) {
    spdlog::info("task {}: {}", id, e.what());
  } catch (const std::exception& e) {
    spdlog::warn("task {} failed: {}", id, e.what());
    tasks_.SetTaskState(id, db::TaskState::kFailed, e.what());
  }
  std::lock_guard lock(mutex_);
  --running_;
  changed_.notify_all();  // a queued task may take the slot
}

void TaskManager::RunTune(int64_t id, Live& live) {
  std::optional<db::TaskRecord> task = tasks_.FindTask(id);
  if (!task || db::IsTerminal(task->state)) return;
  tasks_.SetTaskState(id, db::TaskState::kRunning);
  SetPhase(live, "starting");
  std::string graph_name;
  v1::TuneOptions request_options = TaskOptions(*task, &graph_name);
  if (graph_name.empty()) graph_name = fmt::format("task {}", id);
  Limits limits = GraphLimits(options_);
  limits.max_text_bytes = std::max<int64_t>(limits.max_text_bytes, task->graph_text.size());
  Graph graph = TaskGraph(*task, graph_name, limits);
  TuneOptions tune_options = TuneOptionsFromProto(request_options, graph);
  std::string target = ResolveTarget(task->target, live);
  QueueBackend backend(work_, id, target, options_.max_attempts, live.interrupt);
  TuneReport report = Tune(graph, tune_options, cache_, backend, [&](const TuneProgress& p) {
    Progress(id, live, p.phase, static_cast<int64_t>(p.done), static_cast<int64_t>(p.total));
  });
  std::string result;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  auto status = google::protobuf::util::MessageToJsonString(
      ReportToProto(graph, graph_name, report), &result, opts);
  FT_CHECK(status.ok(), "a tune result did not print as JSON");
  tasks_.FinishTask(id, result);
  spdlog::info("task {} done: {} regions, {} measured, {} reused, {:.2f} s", id,
               report.regions.size(), report.candidates_measured, report.measurements_reused,
               report.seconds);
}

// "any" becomes the fingerprint most online workers share (ties: the smallest), so one search
// never mixes machines. A CPU name (no ';') becomes the one registered fingerprint with that CPU.
// Either waits while no worker fits: a task submitted before its worker registered starts when it
// does. A whole fingerprint is taken as given; its jobs wait in the queue for its workers.
std::string TaskManager::ResolveTarget(const std::string& target, Live& live) {
  if (target != "any" && target.find(';') != std::string::npos) return target;
  for (bool announced = false;; announced = true) {
    const std::vector<db::WorkerRecord> workers = tasks_.ListWorkers();
    if (target == "any") {
      std::map<std::string, int> online;
      for (const db::WorkerRecord& w : workers)
        if (w.state == db::WorkerState::kOnline) ++online[w.target_fingerprint];
      std::string best;
      int count = 0;
      for (const auto& [fingerprint, n] : online)
        if (n > count) best = fingerprint, count = n;
      if (!best.empty()) return best;
    } else {
      std::vector<std::string> registered;
      for (const db::WorkerRecord& w : workers) registered.push_back(w.target_fingerprint);
      std::string resolved = ResolveTargetName(target, registered);
      if (std::find(registered.begin(), registered.end(), resolved) != registered.end())
        return resolved;
    }
    if (!announced)
      SetPhase(live,
               target == "any" ? "waiting for a worker" : "waiting for a worker of " + target);
    if (live.interrupt == kCancel) throw TaskInterrupted(TaskInterrupted::Why::kCancelled);
    if (live.interrupt == kStop || work_.stopped())
      throw TaskInterrupted(TaskInterrupted::Why::kServerStopping);
    work_.WaitForWork(work_.WorkVersion(),
                      std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  }
}

}  // namespace fusetune::service
