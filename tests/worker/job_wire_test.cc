// A measurement job's `alone` flag survives both of its wires: JSON (the local sandbox's pipe and
// the server's queue rows) and protobuf (the farm's workers).
#include <gtest/gtest.h>

#include "worker/job.h"
#include "worker/job_proto.h"

namespace fusetune {
namespace {

MeasureJob AJob(bool alone) {
  MeasureJob job;
  job.id = 7;
  job.graph_text = "fn (%x: Tensor[(4), float32]) {\n  exp(%x)\n}";
  job.plans.push_back({"g", R"({"groups":[{"nodes":["%0"]}]})"});
  job.alone = alone;
  return job;
}

TEST(JobWire, AloneRoundTripsThroughJson) {
  EXPECT_TRUE(JobFromJson(JobToJson(AJob(true))).alone);
  EXPECT_FALSE(JobFromJson(JobToJson(AJob(false))).alone);
  // A job written before the flag existed is timed as before.
  EXPECT_FALSE(JobFromJson(R"({"id":1,"graph":"g","plans":[]})").alone);
}

TEST(JobWire, AloneRoundTripsThroughProtobuf) {
  EXPECT_TRUE(JobToProto(AJob(true)).alone());
  EXPECT_TRUE(JobFromProto(JobToProto(AJob(true))).alone);
  EXPECT_FALSE(JobFromProto(JobToProto(AJob(false))).alone);
}

}  // namespace
}  // namespace fusetune
