#pragma once
// Stage: region formation. The request's candidate groups (server/candidates.h) split the graph
// into regions (server/regions.h); each region gets its canonical form and signature, the key its
// best plan is stored under, so identical layers share one signature and are searched once.
#include <string>
#include <vector>

#include "ir/text/signature.h"
#include "server/regions.h"
#include "server/request_policy.h"

namespace fusetune {

struct TuneRegion {
  Region region;          // nodes (ascending) and the candidate groups inside
  CanonicalForm canon;    // the nodes in canonical order: stored plans name these positions
  std::string signature;  // of the canonical text
  size_t representative;  // the first region with this signature: the one that is searched
  // Some candidate group is a matmul whose B is a graph constant (bound weights, an initialiser):
  // the region's schedule space offers weights packed once (wpack). Not in the signature, so a
  // plan stored by a tune without it is refused by a tune with it (server/stored_plans.h).
  bool weights_bound = false;
};

std::vector<TuneRegion> FormRegions(const RequestPolicy& policy);

}  // namespace fusetune
