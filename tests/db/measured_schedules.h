#pragma once
// What a store measured, for tests that check which schedules a tune offered (the params tests,
// local and through the farm).
#include <string>
#include <vector>

#include "db/cache.h"
#include "db/database.h"

namespace fusetune::testing {

// The schedule of every measurement in the store at `db_path`.
inline std::vector<std::string> MeasuredSchedules(const std::string& db_path) {
  db::Database database(db_path);
  db::Cache cache(database);
  std::vector<std::string> schedules;
  for (const db::MeasurementRecord& m : cache.ListMeasurements())
    schedules.push_back(m.key.schedule);
  return schedules;
}

// Whether any of `schedules` reads the weights from a copy packed once (wpack).
inline bool AnyPacksWeightsOnce(const std::vector<std::string>& schedules) {
  for (const std::string& s : schedules)
    if (s.find("wpack=1") != std::string::npos) return true;
  return false;
}

}  // namespace fusetune::testing
