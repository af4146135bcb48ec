#include "server/calibration.h"

#include <spdlog/spdlog.h>

namespace fusetune {
namespace {

constexpr double kCopyElements = 8388608;  // 32 MiB of float32
constexpr double kMatmulFlops = 2.0 * 12 * 256 * 256 * 64;

MeasureJob CalibrationJob() {
  MeasureJob job;
  job.graph_text =
      "fn (%x: Tensor[(8388608,), float32], %a: Tensor[(12, 256, 64), float32], "
      "%b: Tensor[(12, 256, 64), float32]) {\n"
      "  %0 = negative(%x);\n  %1 = nn.batch_matmul(%a, %b);\n  (%0, %1)\n}\n";
  job.plans.push_back({"calibration", R"({"groups":[{"nodes":["%0"]},{"nodes":["%1"]}]})"});
  return job;
}

}  // namespace

RooflineTarget Calibrate(TuneCache& cache, JobRunner& runner, bool needed) {
  if (std::optional<RooflineTarget> stored = cache.FindRoofline()) {
    spdlog::debug("roofline of {} (stored): {:.1f} GFLOP/s, {:.1f} GB/s", cache.target(),
                  stored->peak_gflops, stored->bandwidth_gbs);
    return *stored;
  }
  RooflineTarget t;
  if (!needed) return t;
  const PlanResult r = runner.Run("calibrating", {CalibrationJob()})[0].plans.at(0);
  if (!r.ok || r.kernel_us.size() != 2 || r.kernel_us[0] <= 0 || r.kernel_us[1] <= 0) {
    spdlog::debug("calibration failed ({}); the cost model uses {:.1f} GFLOP/s, {:.1f} GB/s",
                  r.reason, t.peak_gflops, t.bandwidth_gbs);
    return t;
  }
  // GFLOP/s and GB/s are both 1e3 per microsecond; the copy reads and writes each element.
  t.bandwidth_gbs = 2.0 * kCopyElements * 4 / (r.kernel_us[0] * 1e3);
  t.peak_gflops = kMatmulFlops / (r.kernel_us[1] * 1e3);
  cache.PutRoofline(t);
  spdlog::debug("roofline of {} (measured): {:.1f} GFLOP/s, {:.1f} GB/s", cache.target(),
                t.peak_gflops, t.bandwidth_gbs);
  return t;
}

}  // namespace fusetune
