#pragma once
// Per-request search controls. Every one of them is set per request: nothing here touches an op
// registry, which is the point (TVM users could not stop `exp` fusing without re-registering it).
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
  int schedules_per_group = 2;  // the default schedule plus knob variants (--schedules)
  int threads = 1;              // threads the kernels run with (part of every key)
};

}  // namespace fusetune
