// `fusetune cache model [--db PATH] [--target FP] [--threads N] [--json]`: how well the learned
// schedule model ranks schedules, against the roofline, on the store's own measurements
// (server/learned_schedule_model.h). Groups (a group signature at one target and thread count)
// are split by a hash of their key: three quarters train, one quarter is held out; on the held-out
// groups it prints Kendall's tau over the pairs of one group's schedules whose times differ beyond
// the noise floor, and Spearman's rho over groups of three schedules or more, for both orders.
// The tuner ranks by the learned model only where it beat the roofline (the last line says which).
//
// Exit codes: 0 ok, 2 bad input, 3 no measurement to evaluate.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/commands.h"
#include "db/cache.h"
#include "db/database.h"
#include "db/default_path.h"
#include "ir/error.h"
#include "server/schedule_model.h"

namespace fusetune::cli {
namespace {

struct ModelFlags {
  std::string db_path;
  std::string target;
  int threads = 0;
  bool json = false;
};

nlohmann::ordered_json QualityJson(const RankQuality& q) {
  return {
      {"groups", q.groups}, {"pairs", q.pairs}, {"kendall", q.kendall}, {"spearman", q.spearman}};
}

void RunModel(const ModelFlags& f) {
  const std::string path = f.db_path.empty() ? db::DefaultDbPath() : f.db_path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UserError(fmt::format("no cache at {}", path));
  db::Database database(path);
  db::Cache store(database);
  db::MeasurementFilter filter;
  filter.target_fingerprint = f.target;
  if (f.threads > 0) filter.threads = f.threads;
  filter.status = db::MeasurementStatus::kOk;
  const std::vector<ScheduleSample> samples =
      SamplesFromMeasurements(store.ListMeasurements(filter));
  if (samples.empty()) {
    if (f.json) std::cout << "{}\n";
    std::cerr << "no valid measurement matches: nothing to train or evaluate\n";
    SetExitCode(3);
    return;
  }
  const ScheduleModelEvaluation e = EvaluateScheduleModels(samples);
  const char* used = e.learned_better() ? "learned" : "roofline";
  if (f.json) {
    nlohmann::ordered_json j = {
        {"samples", samples.size()},
        {"train", {{"samples", e.train_samples}, {"groups", e.train_groups}}},
        {"heldout", {{"samples", e.heldout_samples}, {"groups", e.heldout_groups}}},
        {"trained", e.trained},
        {"roofline", QualityJson(e.roofline)},
        {"learned", e.trained ? QualityJson(e.learned) : nlohmann::ordered_json()},
        {"ranking", used}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format(
      "{} measurements; training: {} in {} groups; held out: {} in {} groups\n", samples.size(),
      e.train_samples, e.train_groups, e.heldout_samples, e.heldout_groups);
  std::cout << fmt::format("{:<10} {:>8} {:>9} {:>7} {:>7}\n", "order", "Kendall", "Spearman",
                           "pairs", "groups");
  auto row = [](const char* name, const RankQuality& q) {
    std::cout << fmt::format("{:<10} {:>8.3f} {:>9.3f} {:>7} {:>7}\n", name, q.kendall, q.spearman,
                             q.pairs, q.groups);
  };
  row("roofline", e.roofline);
  if (e.trained)
    row("learned", e.learned);
  else
    std::cout << fmt::format("learned    not trained: fewer than {} groups with two schedules\n",
                             LearnedScheduleModel::kMinGroups);
  std::cout << fmt::format("the tuner ranks schedules by: {}\n", used);
}

}  // namespace

void RegisterCacheModelCommand(CLI::App* cache) {
  auto f = std::make_shared<ModelFlags>();
  CLI::App* model = cache->add_subcommand(
      "model",
      "Train the learned schedule model on the stored measurements and report its rank "
      "correlation on held-out groups against the roofline's (exit code 3 when there is no "
      "measurement).");
  model->add_option("--db", f->db_path, "SQLite file of the cache (default as for ls)");
  model->add_option("--target", f->target,
                    "only this target: its whole fingerprint or its CPU name (cache ls)");
  model->add_option("--threads", f->threads, "only this thread count")->check(CLI::Range(1, 4096));
  model->add_flag("--json", f->json, "print JSON");
  model->callback([f] { RunModel(*f); });
}

}  // namespace fusetune::cli
