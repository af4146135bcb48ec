#pragma once
// Measurement jobs and their results (worker/job.h) <-> the wire messages of proto/fusetune.proto.
// The server writes jobs and reads results; the worker daemon reads jobs and writes results; both
// convert here. Messages from the wire are untrusted: a malformed one throws UserError naming the
// field.
#include "proto/fusetune.pb.h"
#include "worker/job.h"

namespace fusetune {

// The job's plans travel as structured Plan messages (node names and schedule knobs); its graph
// as Relay text. `job.id` becomes `job_id`.
v1::MeasurementJob JobToProto(const MeasureJob& job);
MeasureJob JobFromProto(const v1::MeasurementJob& message);

v1::MeasurementResult ResultToProto(const JobResult& result);
// Checks every figure: finite, not negative, and a positive time for a plan that ran.
JobResult ResultFromProto(const v1::MeasurementResult& message);

}  // namespace fusetune
