"""Tuning and querying through fusetune.Client against a real server and a real (measuring)
worker, compared with what the command line says for the same graphs."""
import json
import math
import re
import sqlite3

import pytest

import fusetune
from conftest import CHAIN, ROOT, eventually, start_farm

# A graph that is no other test's (so its first tune measures): dense + bias + relu from ONNX.
ONNX_BATCH, ONNX_IN, ONNX_OUT = 4, 16, 8
# Short timing for the runs that measure (the test is of the client, not of the timings); runs
# answered from the store are the same whatever the timing.
QUICK = {"repeat": 2, "min_repeat_ms": 1.0}


@pytest.fixture(scope="module")
def farm(binary, tmp_path_factory):
    farm = start_farm(tmp_path_factory, "tune")
    yield farm
    farm.stop()


@pytest.fixture(scope="module")
def client(farm):
    with fusetune.Client(farm.address) as client:
        eventually(client.workers, 20, "the worker to register")
        yield client


@pytest.fixture(scope="module")
def chain(farm, client):
    """CHAIN tuned once from a file, with the progress callback's calls."""
    path = farm.write("chain.relay", CHAIN)
    calls = []
    report = client.tune(path, progress=lambda done, total: calls.append((done, total)),
                         **QUICK)
    return path, report, calls


def onnx_model():
    pytest.importorskip("onnx", reason="python3-onnx builds the test model")
    numpy = pytest.importorskip("numpy")
    from onnx import TensorProto, helper, numpy_helper
    rng = numpy.random.default_rng(0)
    weight = numpy_helper.from_array(rng.random((ONNX_IN, ONNX_OUT), dtype=numpy.float32), "w")
    bias = numpy_helper.from_array(rng.random(ONNX_OUT, dtype=numpy.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input.1", "w"], ["a"]),
         helper.make_node("Add", ["a", "b"], ["c"]),
         helper.make_node("Relu", ["c"], ["y"])], "mlp",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [ONNX_BATCH, ONNX_IN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ONNX_BATCH, ONNX_OUT])],
        initializer=[weight, bias])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def without_seconds(d):
    """A report document without its wall-clock seconds, the one figure two runs differ in."""
    d = dict(d)
    assert 0 <= d.pop("seconds") < 60
    return d


def check_region_invariants(region):
    assert region.signature and re.fullmatch(r"[0-9a-f]{32}", region.signature)
    covered = sorted(n for g in region.plan for n in g.nodes)
    assert covered == sorted(region.nodes), "the plan covers every node of the region once"
    times = {"tuned": region.tuned_us, "greedy": region.greedy_us, "unfused": region.unfused_us}
    assert all(math.isfinite(t) and t > 0 for t in times.values()), times
    # The kept plan's figure is the tuned figure; the simplest plan is kept unless a faster one wins
    # beyond noise, so the kept one need not have the lowest single figure.
    assert region.chosen in times
    assert times[region.chosen] == region.tuned_us or region.chosen == "tuned"


def test_tune_relay_file_measures_and_reports(chain):
    path, report, calls = chain
    assert report.graph == path
    assert report.threads == 1 and report.target.startswith("x86_64")
    assert report.task_id > 0
    (region,) = report.regions
    assert region.ops == ("exp", "sigmoid", "add")
    assert region.nodes == ("%0", "%1", "%2")
    assert not region.cached and region.measured > 0 and not report.cached
    check_region_invariants(region)
    assert report.candidates_measured == region.measured
    assert sorted(n for g in report.plan for n in g.nodes) == ["%0", "%1", "%2"]
    assert report.max_abs_error < 1e-4
    # Progress came as (done, total), done never past total; the count restarts with each
    # phase (measuring candidates, each round of the schedule search, validating the plan), so it
    # only grows within one.
    assert calls, "the progress callback was called"
    assert all(0 <= d <= t for d, t in calls)
    phases = [[calls[0]]]
    for previous, call in zip(calls, calls[1:]):
        if call[1] != previous[1] or call[0] < previous[0]:
            phases.append([])
        phases[-1].append(call)
    assert len(phases) >= 2, calls  # measuring, then validating at least
    for phase in phases:
        assert [d for d, _ in phase] == sorted(d for d, _ in phase), calls


def test_report_equals_cli_json(farm, client, chain):
    path, measured, _ = chain
    cli = farm.cli_json("tune", path)  # from the store now
    again = client.tune(path)
    assert again.cached and again.to_dict()["max_abs_error"] is None
    assert without_seconds(again.to_dict()) == without_seconds(cli)
    # The stored figures are the ones the measuring run reported.
    first, stored = measured.to_dict()["regions"][0], cli["regions"][0]
    for key in ("signature", "nodes", "ops", "plan", "schedules", "chosen", "tuned_us",
                "greedy_us", "unfused_us"):
        assert first[key] == stored[key], key


def test_decision_margin_and_rounds_arrive_as_the_store_holds_them(farm, client, chain):
    """The validation's decision travels the wire: the measured report, the cached answer, the
    query and the cache listing all say what the server's SQLite file holds."""
    measured = chain[1]
    region = measured.regions[0]
    assert region.decision and region.rounds >= 2, region
    assert region.margin is not None and region.margin > 0
    # A graph of one region is timed by its validation: the whole graph's decision is the region's.
    assert measured.total.chosen == region.chosen
    assert measured.total.decision == region.decision
    with sqlite3.connect(f"file:{farm.file('fusetune.db')}?mode=ro", uri=True) as db:
        row = db.execute("SELECT decision, margin, rounds FROM best_plans "
                         "WHERE region_signature = ?", (region.signature,)).fetchone()
    assert row == (region.decision, pytest.approx(region.margin), region.rounds)
    cached, queried = client.tune(chain[0]).regions[0], client.query(chain[0]).regions[0]
    (listed,) = client.cache(signature=region.signature, threads=1)
    for answer in (cached, queried, listed):
        assert (answer.decision, answer.margin, answer.rounds) == row
    assert cached.to_dict()["decision"] == region.decision


def test_report_prints_as_the_command_lines_table(farm, client, chain):
    path = chain[0]
    cli = farm.cli("tune", path)
    assert cli.returncode == 0, cli.stderr
    seconds = re.compile(r"; [0-9.]+ s\n")
    assert seconds.sub("; S s\n", str(client.tune(path))) == seconds.sub("; S s\n", cli.stdout)
    query = farm.cli("query", path)
    assert query.returncode == 0, query.stderr
    assert str(client.query(path)) == query.stdout  # nothing timed: character for character


def test_regions_with_one_answer_print_once_as_on_the_command_line(farm, client):
    # Four alike blocks cut every two: two regions of one signature, listed once as "×2".
    blocks = "".join(f"  %{2 * b} = exp(%{2 * b - 1});\n  %{2 * b + 1} = tanh(%{2 * b});\n"
                     for b in range(1, 4))
    path = farm.write("alike.relay", "fn (%x: Tensor[(32, 64), float32]) {\n  %0 = exp(%x);\n"
                      f"  %1 = tanh(%0);\n{blocks}  %7\n}}\n")
    report = client.tune(path, max_region=4, **QUICK)
    assert len(report.regions) == 2 and report.regions[0].signature == report.regions[1].signature
    cli = farm.cli("tune", path, "--max-region", "4")
    assert cli.returncode == 0, cli.stderr
    text = str(client.tune(path, max_region=4))
    assert text == cli.stdout  # both answered from the store: character for character
    assert "\n  1  exp, tanh, exp, tanh ×2 " in text and "\n  2  " not in text
    assert "×2: regions 1, 2, one signature and one answer, listed once" in text


def test_query_equals_cli_json(farm, client, chain):
    path = chain[0]
    report = client.query(path)
    assert report.task_id is None and report.plan is None and report.missing == ()
    assert all(r.found and r.cached for r in report.regions)
    assert report.to_dict() == farm.cli_json("query", path)
    assert json.loads(report.to_json()) == report.to_dict()


def test_query_of_an_untuned_graph_raises_not_tuned_with_the_regions(farm, client):
    text = CHAIN.replace("(32, 64)", "(8, 8)")
    path = farm.write("untuned.relay", text)
    # Without `exact`, a tuned size of the same chain answers, transferred.
    transferred = client.query(path)
    assert transferred.regions[0].transferred_from, transferred.to_dict()
    with pytest.raises(fusetune.NotTuned) as raised:
        client.query(path, exact=True)
    cli = farm.cli("query", "--exact", path)
    assert cli.returncode == 3
    (missing,) = raised.value.missing
    assert missing.nodes == ("%0", "%1", "%2") and not missing.found
    assert f"{missing.signature}  [%0 %1 %2]" in cli.stderr
    assert missing.signature in str(raised.value)
    partial = client.query(text, partial=True, exact=True)
    assert partial.missing == (missing.signature,)
    cli_json = farm.cli_json("query", "--exact", path, exit_code=3)
    assert partial.to_dict() == cli_json | {"graph": "graph"}


def test_a_miss_says_which_tuned_size_did_not_carry_over(farm, client):
    square = "fn (%x: Tensor[(48, 48), float32]) {\n  %0 = tanh(%x);\n  multiply(%0, %x)\n}\n"
    client.tune(square, **QUICK)
    # At (40, 48) the two sizes differ: the square's plan, tuned where they are one, does not hold.
    path = farm.write("oblong.relay", square.replace("(48, 48)", "(40, 48)"))
    with pytest.raises(fusetune.NotTuned) as raised:
        client.query(path)
    (missing,) = raised.value.missing
    assert missing.transfer_refused == "tuned at s0=48, where 48 is two sizes here (40 and 48)"
    assert f"{missing.transfer_refused}, so its plan does not carry over" in str(raised.value)
    cli = farm.cli("query", path)
    assert cli.returncode == 3
    assert f"{missing.transfer_refused}, so its plan does not carry over" in cli.stderr
    assert client.query(path, partial=True).to_dict() == farm.cli_json("query", path, exit_code=3)


def test_a_partial_answer_prints_and_serialises_as_the_command_lines(farm, client):
    path = f"{ROOT}/examples/bert_layer_s128.relay"  # long regions: op lists are cut
    report = client.query(path, partial=True)
    assert report.missing and all(not r.found for r in report.regions)
    cli = farm.cli("query", path)
    assert cli.returncode == 3
    assert str(report) == cli.stdout
    assert "… (" in cli.stdout
    assert report.to_dict() == farm.cli_json("query", path, exit_code=3)


def test_tune_onnx_file_bytes_and_model_proto(farm, client):
    model = onnx_model()
    path = farm.write("mlp.onnx", model.SerializeToString())
    report = client.tune(path, **QUICK)
    (region,) = report.regions
    assert region.ops == ("nn.dense", "add", "nn.relu")
    assert not region.cached
    check_region_invariants(region)
    expected = without_seconds(farm.cli_json("tune", path))  # the command line sends it too
    assert without_seconds(client.tune(path).to_dict()) == expected
    as_bytes = client.tune(model.SerializeToString(), name=path)
    as_proto = client.tune(model, name=path)
    assert without_seconds(as_bytes.to_dict()) == expected
    assert without_seconds(as_proto.to_dict()) == expected
    assert client.query(model).to_dict() == farm.cli_json("query", path) | {"graph": "graph"}


def test_tune_module_exports_and_tunes_a_pytorch_module(farm, client):
    torch = pytest.importorskip("torch", reason="tune_module needs python3-torch")
    pytest.importorskip("onnx")  # torch.onnx.export needs it

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(24, 12)

        def forward(self, x):
            return torch.tanh(self.fc(x))

    torch.manual_seed(0)
    module = Head().train()
    example = torch.randn(6, 24)
    report = client.tune_module(module, example, **QUICK)
    assert module.training, "the module's mode is restored"
    assert report.graph == "Head"
    assert [r.ops for r in report.regions] == [("nn.dense", "add", "tanh")]
    assert not report.cached
    for region in report.regions:
        check_region_invariants(region)
    # The same export from a file gives the command line the same answer.
    from fusetune.torch_export import module_to_onnx
    path = farm.write("head.onnx", module_to_onnx(module, example))
    assert without_seconds(client.tune(path).to_dict()) == without_seconds(
        farm.cli_json("tune", path))


def test_controls_are_honoured(client, chain):
    report = client.tune(chain[0], never_fuse="exp", forbid="%1,%2", **QUICK)
    assert sorted(g.nodes for g in report.plan) == [("%0",), ("%1",), ("%2",)]
    for region in report.regions:
        check_region_invariants(region)
    report = client.tune(chain[0], never_fuse_nodes=["%1"], **QUICK)
    assert ("%1",) in [g.nodes for g in report.plan], "%1 runs alone"


def test_bad_relay_names_its_line_and_column(farm, client):
    text = "fn (%x: Tensor[(4), float32]) {\n  %0 = exp(%x);\n  negative(%y)\n}\n"
    path = farm.write("bad.relay", text)
    before = len(client.tasks())
    with pytest.raises(fusetune.InvalidArgumentError) as raised:
        client.tune(path)
    e = raised.value
    assert (e.line, e.column, e.source) == (3, 12, path)
    assert e.code.name == "INVALID_ARGUMENT"
    cli = farm.cli("tune", path)  # parsed locally first, same parser
    assert cli.returncode == 2
    assert f"{path}:3:12: error: undefined variable '%y'" in cli.stderr
    assert str(e) == f"tune: {path}:3:12: error: undefined variable '%y'"
    with pytest.raises(fusetune.InvalidArgumentError) as raised:
        client.query(text)
    assert (raised.value.line, raised.value.column) == (3, 12)
    assert len(client.tasks()) == before, "nothing was stored"


def test_bad_onnx_and_bad_options_are_refused_with_the_field(client, chain):
    with pytest.raises(fusetune.InvalidArgumentError, match="model.onnx"):
        client.tune(b"\x08\x07 not a model", name="model.onnx")
    with pytest.raises(fusetune.InvalidArgumentError,
                       match=r"options\.never_fuse_ops\[0\]: unknown operator 'nosuch'"):
        client.tune(CHAIN, never_fuse=["nosuch"])
    with pytest.raises(fusetune.InvalidArgumentError,
                       match=r"options\.forbidden_groups\[0\]\.nodes\[1\]: '%9'"):
        client.tune(CHAIN, forbid=["%0", "%9"])
    with pytest.raises(ValueError):
        client.tune(CHAIN, threads=0)
    with pytest.raises(TypeError):
        client.tune(12345)


def test_workers_tasks_and_cancel_match_the_command_line(farm, client, chain):
    (worker,) = client.workers()
    assert worker.online and worker.target == chain[1].target and worker.cores >= 1
    (cli_worker,) = farm.cli_json("workers")
    for key in ("id", "target", "cores", "version", "online", "registered_at_ms"):
        assert worker.to_dict()[key] == cli_worker[key], key
    assert client.workers(target="no-such-target") == []
    assert repr(worker) == (f"WorkerInfo(id='w0', online, {worker.cores} cores, "
                            f"target='{fusetune.table.short_target(worker.target)}')")

    tasks = client.tasks(states="done")
    assert chain[1].task_id in [t.id for t in tasks]
    assert all(t.state == "done" and t.finished for t in tasks)
    assert repr(tasks[-1]).startswith(f"TaskInfo(id={tasks[-1].id}, done (done")
    cli_tasks = farm.cli_json("tasks", "--state", "done", "--limit", "100")
    assert [t.to_dict() for t in tasks] == cli_tasks
    with pytest.raises(ValueError, match="not a task state"):
        client.tasks(states="sleeping")

    assert client.cancel(chain[1].task_id) is False, "a finished task is not cancelled"
    with pytest.raises(fusetune.NotFoundError, match="no task 999999"):
        client.cancel(999999)
    task = client.task(chain[1].task_id)
    assert task.done()
    assert task.result().to_dict()["regions"] == chain[1].to_dict()["regions"]


def test_the_servers_cache_lists_the_stored_plans(client, chain):
    region = chain[1].regions[0]
    (plan,) = client.cache(signature=region.signature[:8], threads=1)
    assert plan.signature == region.signature and plan.target == chain[1].target
    assert plan.ops == region.ops and plan.chosen == region.chosen
    assert (plan.tuned_us, plan.greedy_us, plan.unfused_us) == (
        region.tuned_us, region.greedy_us, region.unfused_us)
    assert sorted(p for positions, _ in plan.groups for p in positions) == [0, 1, 2]
    assert [schedule for _, schedule in plan.groups] == [g.schedule for g in region.plan]
    assert "exp" in plan.region_text and repr(plan).startswith(f"CachedPlan({plan.signature}")
    assert region.signature in [p.signature for p in client.cache(op="sigmoid")]
    assert client.cache(op="nn.conv2d") == []
    with pytest.raises(fusetune.InvalidArgumentError, match="region_signature_prefix"):
        client.cache(signature="XYZ")


def test_plan_json_runs_with_the_command_line(farm, client, chain, binary):
    import subprocess
    path, report, _ = chain
    plan = farm.write("plan.json", report.plan_json())
    run = subprocess.run([binary, "run", path, "--plan", plan, "--json"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    ran = json.loads(run.stdout)
    assert ran["groups"] == [list(g.nodes) for g in report.plan]
    with pytest.raises(ValueError, match="no whole-graph plan"):
        client.query(path).plan_json()


def test_notebook_and_repr(client, chain):
    report = chain[1]
    page = report._repr_html_()
    assert page.count("<tr") == 1 + len(report.regions) + 1  # header, regions, whole graph
    for op in report.regions[0].ops:
        assert op in page
    assert f"{report.total.tuned_us:.1f}" in page
    assert repr(report).startswith(f"<TuneReport {chain[0]}: 1 region, tuned ")
    assert repr(client) == f"Client('{client.address}')"
