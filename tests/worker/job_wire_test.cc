// A measurement job's `alone` flag, and a result's spread (mad_us), survive both of their wires:
// JSON (the local sandbox's pipe and the server's queue rows) and protobuf (the farm's workers).
#include <limits>

#include <gtest/gtest.h>

#include "ir/error.h"

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

JobResult AResult() {
  JobResult r;
  r.id = 7;
  PlanResult p;
  p.name = "tuned";
  p.ok = true;
  p.median_us = 101;
  p.min_us = 100;
  p.stddev_us = 28.6;
  p.mad_us = 1.0;
  p.max_abs_error = 0.052;
  p.max_output_magnitude = 1716.0;
  p.number = 1;
  p.repeat = 3;
  r.plans.push_back(p);
  return r;
}

TEST(JobWire, TheRepeatsMadRoundTripsThroughBothWires) {
  EXPECT_EQ(ResultFromJson(ResultToJson(AResult())).plans.at(0).mad_us, 1.0);
  EXPECT_EQ(ResultFromProto(ResultToProto(AResult())).plans.at(0).mad_us, 1.0);
  // A worker that predates the field sends none: 0, and the server uses stddev_us.
  EXPECT_EQ(ResultFromJson(R"({"id":1,"plans":[{"name":"t","ok":false,"reason":"x"}]})")
                .plans.at(0)
                .mad_us,
            0.0);
}

// The error is read on the outputs' magnitude, so both cross every wire together.
TEST(JobWire, TheOutputsMagnitudeRoundTripsThroughBothWires) {
  for (const JobResult& r :
       {ResultFromJson(ResultToJson(AResult())), ResultFromProto(ResultToProto(AResult()))}) {
    EXPECT_EQ(r.plans.at(0).max_abs_error, 0.052);
    EXPECT_EQ(r.plans.at(0).max_output_magnitude, 1716.0);
  }
  JobResult bad = AResult();
  bad.plans[0].max_output_magnitude = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(ResultFromProto(ResultToProto(bad)), UserError);
}

}  // namespace
}  // namespace fusetune
