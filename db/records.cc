#include "db/records.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"

namespace fusetune::db {

std::string_view MeasurementStatusName(MeasurementStatus status) {
  return status == MeasurementStatus::kOk ? "ok" : "invalid";
}

double BestPlanRecord::ChosenUs() const {
  if (chosen == "greedy") return greedy_us;
  if (chosen == "unfused") return unfused_us;
  return tuned_us;
}

std::string GroupsToJson(const std::vector<StoredGroup>& groups) {
  nlohmann::json array = nlohmann::json::array();
  for (const StoredGroup& g : groups) {
    array.push_back({{"nodes", g.nodes}, {"schedule", g.schedule}});
  }
  return nlohmann::json{{"groups", std::move(array)}}.dump();
}

std::vector<StoredGroup> GroupsFromJson(std::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("groups") ||
      !doc["groups"].is_array()) {
    throw UserError(fmt::format("plan JSON must be an object with a \"groups\" array: {}",
                                std::string(json.substr(0, 120))));
  }
  std::vector<StoredGroup> groups;
  for (size_t i = 0; i < doc["groups"].size(); ++i) {
    const nlohmann::json& g = doc["groups"][i];
    if (!g.is_object() || !g.contains("nodes") || !g["nodes"].is_array()) {
      throw UserError(fmt::format("plan JSON groups[{}] needs a \"nodes\" array", i));
    }
    StoredGroup group;
    for (const nlohmann::json& n : g["nodes"]) {
      if (!n.is_number_integer() || n.get<int64_t>() < 0) {
        throw UserError(
            fmt::format("plan JSON groups[{}].nodes holds {}, not a node position", i, n.dump()));
      }
      group.nodes.push_back(n.get<int32_t>());
    }
    if (g.contains("schedule")) {
      if (!g["schedule"].is_string()) {
        throw UserError(fmt::format("plan JSON groups[{}].schedule must be a string", i));
      }
      group.schedule = g["schedule"].get<std::string>();
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

namespace {
constexpr std::string_view kTaskStates[] = {"queued", "running", "done", "failed", "cancelled"};
constexpr std::string_view kJobStates[] = {"queued", "leased", "done", "failed"};
}  // namespace

std::string_view TaskStateName(TaskState state) { return kTaskStates[static_cast<int>(state)]; }

std::optional<TaskState> ParseTaskState(std::string_view name) {
  for (int i = 0; i < 5; ++i) {
    if (kTaskStates[i] == name) return static_cast<TaskState>(i);
  }
  return std::nullopt;
}

std::string_view JobStateName(JobState state) { return kJobStates[static_cast<int>(state)]; }

std::optional<JobState> ParseJobState(std::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (kJobStates[i] == name) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

std::string_view WorkerStateName(WorkerState state) {
  return state == WorkerState::kOnline ? "online" : "offline";
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace fusetune::db
