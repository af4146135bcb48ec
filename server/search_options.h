#pragma once
// Per-request search controls. Every one of them is set per request: nothing here touches an op
// registry, which is the point (TVM users could not stop `exp` fusing without re-registering it).
// What the controls mean for a group or a stored plan is server/request_policy.h's business.
#include <climits>
#include <set>
#include <string>
#include <vector>

namespace fusetune {

struct SearchOptions {
  int max_group_size = 8;                  // ops per candidate group
  int max_kernel_args = 16;                // group inputs + outputs
  int max_region_nodes = 40;               // regions larger than this are cut (at most 64)
  std::set<std::string> never_fuse_ops;    // op names, e.g. "exp"
  std::set<std::string> never_fuse_nodes;  // node names without '%', e.g. "3"
  std::vector<std::set<std::string>> forbidden_groups;  // exact node-name sets
  int budget = 0;               // measurements per region beyond the baselines; 0 = no limit
  int schedules_per_group = 2;  // the default plus the best ranked, measured first (--schedules)
  // Further schedules per region the schedule search measures, heaviest groups first
  // (server/schedule_search.h, --schedule-budget); 0: none beyond --schedules.
  int schedule_budget = 12;
  int threads = 1;              // threads the kernels run with (part of every key)
  bool horizontal = true;       // sibling matmuls reading the same A may be one GEMM kernel
  bool attention = true;        // batch_matmul -> softmax -> batch_matmul may be one kernel
  bool norm_fold = true;        // a layer norm may be folded into the matmul it feeds
  bool recompute = true;        // a cheap op read by several kernels may be recomputed in each
  bool softmax_rows = true;     // a softmax written op by op may be one row kernel
  bool layer_norm_rows = true;  // a layer norm or RMS norm written op by op may be one row kernel
};

// The accepted values of each numeric control of a request, written once: the command line's
// flag checks (client/search_flags.cc, client/cmd_tune.cc) and the gRPC request checks
// (server/service/request_checks.cc) both read them.
template <typename T>
struct ControlRange {
  T lo, hi;
  bool Contains(T value) const { return lo <= value && value <= hi; }
};

namespace limits {
inline constexpr ControlRange<int> kThreads{1, 256};
inline constexpr ControlRange<int> kMaxGroupSize{1, 64};
inline constexpr ControlRange<int> kMaxKernelArgs{2, 1024};  // one input and one output at least
// The partition search keeps a region's node set in a 64-bit mask.
inline constexpr ControlRange<int> kMaxRegionNodes{1, 64};
inline constexpr ControlRange<int> kSchedulesPerGroup{1, 64};
inline constexpr ControlRange<int> kBudget{0, INT_MAX};  // 0: no limit
inline constexpr ControlRange<int> kScheduleBudget{0, 100000};
// Timing of each measurement (worker/timing.h's TimingOptions).
inline constexpr ControlRange<int> kWarmup{0, 100};
inline constexpr ControlRange<int> kRepeat{1, 1000};
inline constexpr ControlRange<double> kMinRepeatMs{0.0, 10000.0};
}  // namespace limits

}  // namespace fusetune
