// Security and limits: shared tokens for clients and workers (separately), and every malformed
// request answered with its status and a message naming the problem, with nothing of it stored.
// Also: gRPC health checking and reflection answer.
#include <cmath>
#include <functional>

#include "db/cache.h"
#include "db/database.h"
#include "db/job_queue.h"
#include "raw_grpc.h"
#include "service_test_util.h"

namespace fusetune::testing {
namespace {

TEST(Security, ClientAndWorkerTokensAreRequiredAndCheckedSeparately) {
  TestDir dir;
  const std::string client_token = dir.Write("client.tok", "c-secret-1234\n");
  const std::string worker_token = dir.Write("worker.tok", "w-secret-5678\n");
  const std::string wrong = dir.Write("wrong.tok", "guess");
  ServerProcess server(dir, dir.File("auth.db"),
                       {"--token-file", client_token, "--worker-token-file", worker_token});
  const std::string addr = server.address();

  CommandResult none = RunFusetune(dir, {"tasks", "--server", addr});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("needs a client token"), std::string::npos) << none.err;
  CommandResult bad = RunFusetune(dir, {"tasks", "--server", addr, "--token-file", wrong});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("client token is wrong"), std::string::npos) << bad.err;
  CommandResult workers_token =
      RunFusetune(dir, {"tasks", "--server", addr, "--token-file", worker_token});
  EXPECT_EQ(workers_token.exit_code, 2) << "the worker token does not open the client service";
  CommandResult good = RunFusetune(dir, {"tasks", "--server", addr, "--token-file", client_token});
  EXPECT_EQ(good.exit_code, 0) << good.err;

  // Workers: no token, and the client's token, are refused (the worker exits 2); the worker
  // token registers.
  Process no_token({"worker", "--server", addr, "--synthetic", "--id", "nt"}, dir.File("wnt"));
  EXPECT_EQ(no_token.ExitCode(std::chrono::seconds(20)), 2);
  EXPECT_NE(no_token.Err().find("needs a worker token"), std::string::npos) << no_token.Err();
  Process client_tok(
      {"worker", "--server", addr, "--synthetic", "--id", "ct", "--token-file", client_token},
      dir.File("wct"));
  EXPECT_EQ(client_tok.ExitCode(std::chrono::seconds(20)), 2);
  EXPECT_NE(client_tok.Err().find("worker token is wrong"), std::string::npos) << client_tok.Err();
  Process ok(
      {"worker", "--server", addr, "--synthetic", "--id", "ok", "--token-file", worker_token},
      dir.File("wok"));
  auto stub = v1::Tuner::NewStub(Channel(addr));
  ASSERT_TRUE(Eventually(
      [&] {
        v1::ListWorkersResponse r;
        return stub->ListWorkers(Ctx("c-secret-1234").get(), {}, &r).ok() &&
               r.workers_size() == 1 && r.workers(0).worker_id() == "ok";
      },
      std::chrono::seconds(20)))
      << ok.Err();

  // Directly: each service refuses the other's token.
  auto hub = v1::WorkerHub::NewStub(Channel(addr));
  v1::HeartbeatRequest hb;
  hb.set_worker_id("ok");
  v1::HeartbeatResponse hb_response;
  EXPECT_EQ(hub->Heartbeat(Ctx("c-secret-1234").get(), hb, &hb_response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(hub->Heartbeat(Ctx("w-secret-5678").get(), hb, &hb_response).ok());
  v1::ListTasksResponse tasks;
  EXPECT_EQ(stub->ListTasks(Ctx("w-secret-5678").get(), {}, &tasks).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  // Health checking needs no token.
  std::string health;
  grpc::Status hs = RawUnary(Channel(addr), "/grpc.health.v1.Health/Check", "", &health);
  ASSERT_TRUE(hs.ok()) << hs.error_message();
  EXPECT_EQ(health, std::string("\x08\x01", 2)) << "status SERVING";
}

// With --tls-cert/--tls-key the server speaks TLS only: workers and clients that trust the CA
// work, a plain-text client cannot connect.
TEST(Security, TlsServerTalksToClientsThatTrustItsCertificate) {
  TestDir dir;
  const std::string cert = dir.File("cert.pem"), key = dir.File("key.pem");
  std::string openssl =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  if (std::system(openssl.c_str()) != 0) GTEST_SKIP() << "openssl could not make a certificate";
  ServerProcess server(dir, dir.File("tls.db"), {"--tls-cert", cert, "--tls-key", key});
  ASSERT_NE(server.process().Out().find("TLS"), std::string::npos);
  Process worker({"worker", "--server", server.address(), "--synthetic", "--tls-ca", cert},
                 dir.File("w"));
  const std::string graph = dir.Write("chain.relay", kChain);
  CommandResult tuned =
      RunFusetune(dir, {"tune", "--json", "--server", server.address(), "--tls-ca", cert, graph});
  EXPECT_EQ(tuned.exit_code, 0) << tuned.err << "\n" << worker.Err();
  CommandResult plain =
      RunFusetune(dir, {"tasks", "--server", server.address()}, {}, std::chrono::seconds(60));
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  EXPECT_NE(plain.err.find("cannot reach the server"), std::string::npos) << plain.err;
}

TEST(Security, ReflectionListsBothServices) {
  TestDir dir;
  ServerProcess server(dir, dir.File("refl.db"));
  std::string reply;
  grpc::Status s = RawBidiOnce(Channel(server.address()),
                               "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                               std::string("\x3a\x00", 2), &reply);
  ASSERT_TRUE(s.ok()) << s.error_message();
  for (const char* service :
       {"fusetune.v1.Tuner", "fusetune.v1.WorkerHub", "grpc.health.v1.Health"})
    EXPECT_NE(reply.find(service), std::string::npos) << service;
}

struct BadRequest {
  std::string name;
  std::function<grpc::Status()> call;
  grpc::StatusCode code;
  std::string message;  // a substring the answer must hold
};

v1::SubmitTuneRequest Relay(const std::string& text) {
  v1::SubmitTuneRequest r;
  r.mutable_graph()->set_relay_text(text);
  r.mutable_graph()->set_name("bad.relay");
  return r;
}

const char* kExp = "fn (%x: Tensor[(4, 8), float32]) {\n  %0 = exp(%x);\n  negative(%0)\n}\n";

TEST(Limits, EveryMalformedRequestGetsItsStatusAndNothingIsStored) {
  TestDir dir;
  const std::string db = dir.File("bad.db");
  ServerProcess server(dir, db, {"--max-nodes", "50", "--max-message-mb", "1"});
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  auto hub = v1::WorkerHub::NewStub(Channel(server.address()));
  using grpc::StatusCode;
  auto submit = [&](v1::SubmitTuneRequest r) {
    return [&stub, r] {
      v1::SubmitTuneResponse out;
      return stub->SubmitTune(Ctx().get(), r, &out);
    };
  };
  auto with_options = [&](const std::function<void(v1::TuneOptions&)>& set) {
    v1::SubmitTuneRequest r = Relay(kExp);
    set(*r.mutable_options());
    return submit(r);
  };
  std::string chain60 = "fn (%x: Tensor[(4), float32]) {\n";
  for (int i = 0; i < 60; ++i)
    chain60 +=
        "  %" + std::to_string(i) + " = exp(" + (i ? "%" + std::to_string(i - 1) : "%x") + ");\n";
  chain60 += "  %59\n}\n";
  v1::SubmitTuneRequest structured_bad_input;
  {
    v1::Graph* g = structured_bad_input.mutable_graph()->mutable_graph();
    v1::Param* x = g->add_values()->mutable_param();
    x->set_name("x");
    x->mutable_type()->set_dtype(v1::DTYPE_FLOAT32);
    x->mutable_type()->add_shape(4);
    v1::Node* n = g->add_values()->mutable_node();
    n->set_op("exp");
    n->add_inputs(5);
    g->add_outputs(1);
  }
  v1::SubmitTuneRequest structured_bad_op = structured_bad_input;
  structured_bad_op.mutable_graph()->mutable_graph()->mutable_values(1)->mutable_node()->set_op(
      "expo");
  structured_bad_op.mutable_graph()->mutable_graph()->mutable_values(1)->mutable_node()->set_inputs(
      0, 0);

  std::vector<BadRequest> cases = {
      {"no graph", submit(v1::SubmitTuneRequest()), StatusCode::INVALID_ARGUMENT, "graph: missing"},
      {"empty text", submit(Relay("")), StatusCode::INVALID_ARGUMENT, "graph.relay_text: empty"},
      {"syntax error", submit(Relay("fn (%x: Tensor[(4), float32]) {\n  exp(%x\n}\n")),
       StatusCode::INVALID_ARGUMENT, "bad.relay:3:1: error"},
      {"unknown operator",
       submit(Relay("fn (%x: Tensor[(4), float32]) {\n  nn.bach_matmul(%x, %x)\n}\n")),
       StatusCode::INVALID_ARGUMENT, "bad.relay:2:3: error: unknown operator 'nn.bach_matmul'"},
      {"type error",
       submit(Relay("fn (%x: Tensor[(2, 3, 4), float32], %y: Tensor[(2, 5, 6), float32]) {\n"
                    "  nn.batch_matmul(%x, %y)\n}\n")),
       StatusCode::INVALID_ARGUMENT, "bad.relay:2:"},
      {"structured: input out of range", submit(structured_bad_input), StatusCode::INVALID_ARGUMENT,
       "values[1]"},
      {"structured: unknown op", submit(structured_bad_op), StatusCode::INVALID_ARGUMENT, "expo"},
      {"tensor too large",
       submit(Relay("fn (%x: Tensor[(100000, 100000, 100), float32]) {\n  exp(%x)\n}\n")),
       StatusCode::INVALID_ARGUMENT, "max_elements"},
      {"too many nodes", submit(Relay(chain60)), StatusCode::INVALID_ARGUMENT, "max_nodes = 50"},
      {"no operators", submit(Relay("fn (%x: Tensor[(4), float32]) {\n  %x\n}\n")),
       StatusCode::INVALID_ARGUMENT, "no operators"},
      {"negative threads", with_options([](auto& o) { o.set_threads(-1); }),
       StatusCode::INVALID_ARGUMENT, "options.threads: must be between 1 and 256, got -1"},
      {"too many threads", with_options([](auto& o) { o.set_threads(1000); }),
       StatusCode::INVALID_ARGUMENT, "options.threads"},
      {"negative budget", with_options([](auto& o) { o.set_budget(-5); }),
       StatusCode::INVALID_ARGUMENT, "options.budget: must not be negative"},
      {"group size", with_options([](auto& o) { o.set_max_group_size(100); }),
       StatusCode::INVALID_ARGUMENT, "options.max_group_size"},
      {"region size", with_options([](auto& o) { o.set_max_region_nodes(-3); }),
       StatusCode::INVALID_ARGUMENT, "options.max_region_nodes"},
      {"unknown never-fuse op", with_options([](auto& o) { o.add_never_fuse_ops("expp"); }),
       StatusCode::INVALID_ARGUMENT, "options.never_fuse_ops[0]: unknown operator 'expp'"},
      {"unknown never-fuse node", with_options([](auto& o) { o.add_never_fuse_nodes("%9"); }),
       StatusCode::INVALID_ARGUMENT, "options.never_fuse_nodes[0]: '%9' is not a node"},
      {"one-node forbidden group",
       with_options([](auto& o) { o.add_forbidden_groups()->add_nodes("%0"); }),
       StatusCode::INVALID_ARGUMENT, "at least two nodes"},
      {"zero repeats", with_options([](auto& o) { o.mutable_timing()->set_repeat(0); }),
       StatusCode::INVALID_ARGUMENT, "options.timing.repeat"},
      {"NaN min_repeat_ms", with_options([](auto& o) {
         o.mutable_timing()->set_repeat(1);
         o.mutable_timing()->set_min_repeat_ms(std::nan(""));
       }),
       StatusCode::INVALID_ARGUMENT, "options.timing.min_repeat_ms"},
      {"control character in target",
       [&] {
         v1::SubmitTuneRequest r = Relay(kExp);
         r.set_target("x86\x01");
         v1::SubmitTuneResponse out;
         return stub->SubmitTune(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "target: byte 3"},
      {"long client label",
       [&] {
         v1::SubmitTuneRequest r = Relay(kExp);
         r.set_client(std::string(200, 'c'));
         v1::SubmitTuneResponse out;
         return stub->SubmitTune(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "client: 200 bytes"},
      {"message over the limit", submit(Relay(std::string(2 << 20, ' ') + kExp)),
       StatusCode::RESOURCE_EXHAUSTED, "larger"},
      {"task id zero",
       [&] {
         v1::TaskStatus out;
         return stub->GetTask(Ctx().get(), v1::GetTaskRequest(), &out);
       },
       StatusCode::INVALID_ARGUMENT, "task_id: task ids are positive"},
      {"unknown task",
       [&] {
         v1::GetTaskRequest r;
         r.set_task_id(999);
         v1::TaskStatus out;
         return stub->GetTask(Ctx().get(), r, &out);
       },
       StatusCode::NOT_FOUND, "no task 999"},
      {"cancel unknown task",
       [&] {
         v1::CancelTaskRequest r;
         r.set_task_id(77);
         v1::CancelTaskResponse out;
         return stub->CancelTask(Ctx().get(), r, &out);
       },
       StatusCode::NOT_FOUND, "no task 77"},
      {"watch unknown task",
       [&] {
         v1::WatchTaskRequest r;
         r.set_task_id(55);
         auto context = Ctx();
         auto reader = stub->WatchTask(context.get(), r);
         v1::TaskStatus s;
         while (reader->Read(&s)) {
         }
         return reader->Finish();
       },
       StatusCode::NOT_FOUND, "no task 55"},
      {"lookup without a query",
       [&] {
         v1::LookupBestResponse out;
         return stub->LookupBest(Ctx().get(), v1::LookupBestRequest(), &out);
       },
       StatusCode::INVALID_ARGUMENT, "query: missing"},
      {"lookup of a bad signature",
       [&] {
         v1::LookupBestRequest r;
         r.set_region_signature("xyz");
         r.set_target("t");
         v1::LookupBestResponse out;
         return stub->LookupBest(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "'xyz' is not a region signature"},
      {"lookup with negative threads",
       [&] {
         v1::LookupBestRequest r;
         r.set_region_signature(std::string(32, 'a'));
         r.set_threads(-2);
         v1::LookupBestResponse out;
         return stub->LookupBest(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "threads: must be between 1 and 256, got -2"},
      {"lookup of \"any\" with no worker",
       [&] {
         v1::LookupBestRequest r;
         r.set_region_signature(std::string(32, 'a'));
         v1::LookupBestResponse out;
         return stub->LookupBest(Ctx().get(), r, &out);
       },
       StatusCode::FAILED_PRECONDITION, "no worker has registered"},
      {"negative list limit",
       [&] {
         v1::ListTasksRequest r;
         r.set_limit(-1);
         v1::ListTasksResponse out;
         return stub->ListTasks(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "limit: must be between 0 and 10000, got -1"},
      {"unknown task state",
       [&] {
         v1::ListTasksRequest r;
         r.add_states(static_cast<v1::TaskState>(42));
         v1::ListTasksResponse out;
         return stub->ListTasks(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "states[0]: 42 is not a task state"},
      {"cache prefix not hex",
       [&] {
         v1::ListCacheRequest r;
         r.set_region_signature_prefix("XYZ");
         v1::ListCacheResponse out;
         return stub->ListCache(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "region_signature_prefix: 'XYZ'"},
      {"register without a fingerprint",
       [&] {
         v1::RegisterRequest r;
         r.set_worker_id("w");
         v1::RegisterResponse out;
         return hub->Register(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "target.fingerprint: empty"},
      {"register as \"any\"",
       [&] {
         v1::RegisterRequest r;
         r.mutable_target()->set_fingerprint("any");
         v1::RegisterResponse out;
         return hub->Register(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "\"any\" names no CPU"},
      {"register with negative cores",
       [&] {
         v1::RegisterRequest r;
         r.mutable_target()->set_fingerprint("cpu");
         r.set_cores(-4);
         v1::RegisterResponse out;
         return hub->Register(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "cores: must be between 0 and 65536, got -4"},
      {"lease without a worker id",
       [&] {
         v1::LeaseJobResponse out;
         return hub->LeaseJob(Ctx().get(), v1::LeaseJobRequest(), &out);
       },
       StatusCode::INVALID_ARGUMENT, "worker_id: empty"},
      {"lease by an unregistered worker",
       [&] {
         v1::LeaseJobRequest r;
         r.set_worker_id("ghost");
         v1::LeaseJobResponse out;
         return hub->LeaseJob(Ctx().get(), r, &out);
       },
       StatusCode::FAILED_PRECONDITION, "'ghost' is not registered"},
      {"report for job zero",
       [&] {
         v1::ReportResultRequest r;
         r.mutable_result()->set_worker_id("ghost");
         v1::ReportResultResponse out;
         return hub->ReportResult(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "result.job_id: job ids are positive"},
      {"heartbeat with a negative job",
       [&] {
         v1::HeartbeatRequest r;
         r.set_worker_id("ghost");
         r.set_current_job_id(-1);
         v1::HeartbeatResponse out;
         return hub->Heartbeat(Ctx().get(), r, &out);
       },
       StatusCode::INVALID_ARGUMENT, "current_job_id: must not be negative"},
  };
  ASSERT_GE(cases.size(), 20u);
  for (const BadRequest& c : cases) {
    grpc::Status status = c.call();
    EXPECT_EQ(status.error_code(), c.code) << c.name << ": " << status.error_message();
    EXPECT_NE(status.error_message().find(c.message), std::string::npos)
        << c.name << ": expected \"" << c.message << "\" in \"" << status.error_message() << "\"";
  }

  // A result with an impossible figure, from a registered worker, is refused too.
  v1::RegisterRequest reg;
  reg.set_worker_id("w");
  reg.mutable_target()->set_fingerprint("cpu");
  v1::RegisterResponse reg_out;
  ASSERT_TRUE(hub->Register(Ctx().get(), reg, &reg_out).ok());
  v1::ReportResultRequest report;
  report.mutable_result()->set_worker_id("w");
  report.mutable_result()->set_job_id(5);
  v1::PlanTiming* p = report.mutable_result()->add_plans();
  p->set_name("s0");
  p->set_ok(true);
  p->set_median_us(std::nan(""));
  v1::ReportResultResponse report_out;
  grpc::Status s = hub->ReportResult(Ctx().get(), report, &report_out);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("result.plans[0].median_us"), std::string::npos)
      << s.error_message();

  // Nothing of any of it was stored.
  db::Database database(db);
  db::JobQueue queue(database);
  db::CacheStats stats = db::Cache(database).Stats();
  EXPECT_EQ(queue.CountTasks().total(), 0);
  EXPECT_EQ(queue.CountJobs().total(), 0);
  EXPECT_EQ(stats.measurements_ok + stats.measurements_invalid, 0);
  EXPECT_EQ(queue.ListWorkers().size(), 1u) << "only the one valid registration";
}

TEST(Limits, AClientOverItsTaskLimitIsRefusedUntilOneFinishes) {
  TestDir dir;
  ServerProcess server(dir, dir.File("quota.db"), {"--max-tasks-per-client", "2"});
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  auto submit = [&](const std::string& client) {
    v1::SubmitTuneRequest r = Relay(kExp);
    r.set_client(client);
    v1::SubmitTuneResponse out;
    grpc::Status s = stub->SubmitTune(Ctx().get(), r, &out);
    return std::make_pair(s, out.task_id());
  };
  // No worker: the tasks wait.
  auto [s1, t1] = submit("alice");
  auto [s2, t2] = submit("alice");
  ASSERT_TRUE(s1.ok() && s2.ok());
  auto [s3, t3] = submit("alice");
  EXPECT_EQ(s3.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s3.error_message().find("client 'alice' has 2 unfinished tasks"), std::string::npos)
      << s3.error_message();
  EXPECT_TRUE(submit("bob").first.ok()) << "the limit is per client";
  v1::CancelTaskRequest cancel;
  cancel.set_task_id(t1);
  v1::CancelTaskResponse cancelled;
  ASSERT_TRUE(stub->CancelTask(Ctx().get(), cancel, &cancelled).ok());
  EXPECT_TRUE(cancelled.cancelled());
  EXPECT_EQ(cancelled.status().state(), v1::TASK_STATE_CANCELLED);
  EXPECT_TRUE(submit("alice").first.ok());
}

}  // namespace
}  // namespace fusetune::testing
