"""The client's pieces that need no server: arguments to wire messages, errors, the table."""
import math
import os
import pathlib
import re
import subprocess

import pytest

import fusetune
from conftest import CHAIN, ROOT
from fusetune import errors, table
from fusetune._wire import pb
from fusetune.graph_source import graph_source
from fusetune.options import tune_options
from fusetune.report import PlanGroup, RegionReport, Totals, TuneReport


def test_version_is_the_projects():
    cmake = pathlib.Path(ROOT, "CMakeLists.txt").read_text()
    assert re.search(r"project\(fusetune VERSION ([0-9.]+)", cmake).group(1) == \
        fusetune.__version__


def test_stubs_are_generated_into_the_package_and_never_committed():
    import fusetune._proto.fusetune_pb2_grpc as grpc_stub
    assert grpc_stub.__name__ == "fusetune._proto.fusetune_pb2_grpc"
    assert "fusetune_pb2" not in __import__("sys").modules, "no top-level stub module"
    source = pathlib.Path(grpc_stub.__file__).read_text()
    assert "from fusetune._proto import fusetune_pb2" in source
    if os.path.isdir(os.path.join(ROOT, ".git")) or os.path.isfile(os.path.join(ROOT, ".git")):
        tracked = subprocess.run(["git", "-C", ROOT, "ls-files", "client/python/fusetune/_proto"],
                                 capture_output=True, text=True, check=True).stdout
        assert tracked == ""
        ignored = subprocess.run(["git", "-C", ROOT, "check-ignore", "-q",
                                  "client/python/fusetune/_proto/fusetune_pb2.py"])
        assert ignored.returncode == 0


def test_graph_arguments_become_graph_sources(tmp_path):
    relay = tmp_path / "g.relay"
    relay.write_text(CHAIN)
    for given in (relay, str(relay)):
        source = graph_source(given)
        assert source.WhichOneof("source") == "relay_text" and source.relay_text == CHAIN
        assert source.name == str(relay)
    odd = tmp_path / "model (1).relay"
    odd.write_text(CHAIN)
    assert graph_source(str(odd)).name == str(odd), "an existing file is a path"
    one_line = "fn (%x: Tensor[(4), float32]) { exp(%x) }"
    assert graph_source(one_line).relay_text == one_line
    text = graph_source(CHAIN)
    assert text.relay_text == CHAIN and text.name == ""
    assert graph_source(CHAIN, name="chain").name == "chain"
    model = tmp_path / "m.onnx"
    model.write_bytes(b"\x08\x07")
    assert graph_source(str(model)).onnx_model == b"\x08\x07"
    assert graph_source(b"\x08\x07").WhichOneof("source") == "onnx_model"
    assert graph_source(bytearray(b"\x08\x07")).onnx_model == b"\x08\x07"
    with pytest.raises(FileNotFoundError):
        graph_source(str(tmp_path / "absent.relay"))
    with pytest.raises(ValueError, match="neither a file nor Relay text"):
        graph_source("absent")
    with pytest.raises(TypeError, match="expected a path, Relay text"):
        graph_source(3.5)
    binary = tmp_path / "b.relay"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="not UTF-8 Relay text"):
        graph_source(binary)


def test_an_onnx_model_proto_is_serialised():
    onnx = pytest.importorskip("onnx")
    model = onnx.helper.make_model(onnx.helper.make_graph([], "empty", [], []))
    assert graph_source(model).onnx_model == model.SerializeToString()


def test_options_become_tune_options():
    o = tune_options(threads=4, never_fuse="exp, where", forbid="%0,%1", max_group=3, budget=7,
                     never_fuse_nodes=["3", "%4"], max_args=6, max_region=20, schedules=2,
                     retune=True)
    assert (o.threads, o.max_group_size, o.budget, o.max_kernel_args, o.max_region_nodes,
            o.schedules_per_group, o.retune) == (4, 3, 7, 6, 20, 2, True)
    assert list(o.never_fuse_ops) == ["exp", "where"]
    assert list(o.never_fuse_nodes) == ["%3", "%4"]
    assert [list(g.nodes) for g in o.forbidden_groups] == [["%0", "%1"]]
    assert not o.HasField("timing"), "absent timing: the server's defaults"
    groups = tune_options(forbid=[["%0", "%1"], ("2", "3")]).forbidden_groups
    assert [list(g.nodes) for g in groups] == [["%0", "%1"], ["%2", "%3"]]
    assert [list(g.nodes) for g in tune_options(forbid=["%0", "%1"]).forbidden_groups] == [
        ["%0", "%1"]]
    assert [list(g.nodes) for g in tune_options(forbid=["0,1", "2,3"]).forbidden_groups] == [
        ["%0", "%1"], ["%2", "%3"]]
    defaults = tune_options()
    assert defaults == pb.TuneOptions(threads=1), "zeros: the server's defaults"
    timing = tune_options(repeat=3).timing
    assert (timing.warmup, timing.repeat, timing.min_repeat_ms) == (2, 3, 5.0)
    searched = tune_options(schedule_budget=0, horizontal=False, warm_start="only")
    assert searched.HasField("schedule_budget") and searched.schedule_budget == 0
    assert (searched.no_horizontal, searched.warm_start) == (True, pb.WARM_START_ONLY)
    assert tune_options(attention=False).no_attention and not defaults.no_attention
    assert tune_options(norm_fold=False).no_norm_fold and not defaults.no_norm_fold
    assert tune_options(recompute=False).no_recompute and not defaults.no_recompute
    assert tune_options(softmax_rows=False).no_softmax_rows and not defaults.no_softmax_rows
    assert (tune_options(layer_norm_rows=False).no_layer_norm_rows
            and not defaults.no_layer_norm_rows)
    assert not defaults.HasField("schedule_budget"), "unset: the server's default"
    assert tune_options(warm_start="cold").warm_start == pb.WARM_START_COLD
    for bad in ({"threads": 0}, {"max_group": -1}, {"budget": -1}, {"budget": 1.5},
                {"schedule_budget": -1}, {"warm_start": "hot"}):
        with pytest.raises(ValueError):
            tune_options(**bad)
    with pytest.raises(TypeError):
        tune_options(never_fuse=[1])
    with pytest.raises(TypeError):
        tune_options(threads="2")


def test_errors_carry_the_code_the_message_and_the_position():
    class Rpc:
        def __init__(self, code, details):
            self._code, self._details = code, details

        def code(self):
            return self._code

        def details(self):
            return self._details

    import grpc
    e = errors.error_from_rpc(
        Rpc(grpc.StatusCode.INVALID_ARGUMENT, "my file.relay:3:12: error: undefined variable"),
        "tune", "h:1")
    assert type(e) is fusetune.InvalidArgumentError and isinstance(e, fusetune.FusetuneError)
    assert (e.source, e.line, e.column) == ("my file.relay", 3, 12)
    assert str(e) == "tune: my file.relay:3:12: error: undefined variable"
    e = errors.error_from_rpc(Rpc(grpc.StatusCode.UNAVAILABLE, "refused"), "tasks", "h:1")
    assert type(e) is fusetune.UnavailableError and e.line is None
    assert str(e) == "tasks: cannot reach the server at h:1: refused"
    codes = {cls.code for cls in vars(errors).values()
             if isinstance(cls, type) and issubclass(cls, fusetune.FusetuneError) and cls.code}
    assert codes == set(grpc.StatusCode) - {grpc.StatusCode.OK}, "one type per status code"


def region(**changes):
    fields = dict(signature="0" * 32, nodes=("%0", "%1"), ops=("exp", "sigmoid"), cached=False,
                  found=True, plan=(PlanGroup(("%0", "%1"), "vector=8"),), chosen="tuned",
                  tuned_us=2.0, greedy_us=3.0, unfused_us=4.0, measured=5, reused=1)
    fields.update(changes)
    return RegionReport(**fields)


def report(regions, **changes):
    fields = dict(graph="g.relay", target="x86_64-pc-linux-gnu;skylake;+avx,+avx2,+fma",
                  threads=2, regions=tuple(regions), total=Totals(2.0, 3.0, 4.0, True),
                  max_abs_error=1.5e-7, candidates_measured=5, seconds=1.25)
    fields.update(changes)
    return TuneReport(**fields)


def test_the_table_is_the_command_lines():
    text = str(report([region()]))
    assert text.splitlines()[0] == "g.relay  on x86_64-pc-linux-gnu skylake, 3 features, 2 threads"
    assert "  1  exp, sigmoid" in text and "   5+1         2.0         3.0         4.0" in text
    assert "1.50x      2.00x" in text and "timed" in text
    assert "  1  tuned    [%0 %1]\n" in text
    assert "max |error| vs reference 1.5e-07; measured 5 candidates" in text
    assert text.endswith("or cache = the region's stored plan\n")
    # With the outputs' magnitude (0 above: a server that predates it), the error is read on it.
    scaled = str(report([region()], max_abs_error=0.052, max_output_magnitude=1716.0))
    assert "max |error| vs reference 0.052 on outputs up to 1.72e+03; measured" in scaled


def test_a_decision_counts_its_rounds_as_the_command_line_does():
    one = str(report([region(decision="unfused = greedy; tuned = greedy: greedy kept", rounds=1)]))
    assert "     unfused = greedy; tuned = greedy: greedy kept (1 round)\n" in one
    five = str(report([region(decision="tuned chosen", rounds=5)]))
    assert "     tuned chosen (5 rounds)\n" in five


def test_a_failed_plan_prints_as_failed_and_null():
    r = report([region(greedy_us=math.inf)], total=Totals(2.0, math.inf, 4.0, True))
    assert "failed" in str(r) and "  -  " in str(r)
    assert r.to_dict()["regions"][0]["greedy_us"] is None
    assert r.to_dict()["total"]["greedy_us"] is None
    assert r.regions[0].speedup_vs_greedy is None and r.regions[0].speedup_vs_unfused == 2.0


def test_long_op_lists_are_cut_as_the_command_line_cuts_them():
    ops = ["nn.batch_matmul", "ones_like", "where", "add", "multiply", "exp", "tanh"]
    summary = table.ops_summary(ops)
    # 26 bytes + ", where" would pass 44 less the 13 bytes of ", … (7 ops)" ("…" is 3 bytes).
    assert summary == "nn.batch_matmul, ones_like, … (7 ops)"
    assert len(summary.encode()) <= table.OPS_WIDTH
    assert table.ops_summary(["exp", "add"]) == "exp, add"


def test_plan_groups_and_documents():
    g = PlanGroup(("%0",), "tile_m=4,vector=16")
    assert g.knobs == {"tile_m": 4, "vector": 16} and PlanGroup(("%0",)).knobs == {}
    r = report([region(cached=True)], plan=(g,))
    assert r.cached and r.to_dict()["max_abs_error"] is None
    assert '"schedule": "tile_m=4,vector=16"' in r.plan_json()
    assert list(r.to_dict()) == ["graph", "target", "threads", "regions", "total",
                                 "max_abs_error", "max_output_magnitude", "candidates_measured",
                                 "measurements_reused",
                                 "pruned", "seconds", "breakdown"]
    # The command line's breakdown shape, empty: a server does not send it yet.
    assert r.to_dict()["breakdown"] == {"stages_s": {}, "jobs_ms": {}, "schedule_ranking": None,
                                        "schedule_duels": []}


def test_the_address_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("FUSETUNE_SERVER", raising=False)
    with pytest.raises(ValueError, match="FUSETUNE_SERVER"):
        fusetune.Client()
    monkeypatch.setenv("FUSETUNE_SERVER", "example.invalid:7600")
    with fusetune.Client() as client:
        assert client.address == "example.invalid:7600" and client.timeout == 30.0


def test_a_notebook_gets_an_html_bar_that_updates_in_place(monkeypatch):
    import sys
    import types

    from fusetune.progress import make_progress

    class ZMQInteractiveShell:  # what a Jupyter kernel's get_ipython() returns
        pass

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(obj.data)

    def display(obj, display_id=False):
        assert display_id is True
        shown.append(obj.data)
        return Handle()

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = ZMQInteractiveShell
    ipython_display = types.ModuleType("IPython.display")
    ipython_display.HTML = lambda data: types.SimpleNamespace(data=data)
    ipython_display.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", ipython_display)
    bar = make_progress(None)
    bar.update("measuring", 3, 12)
    bar.finish()
    assert len(shown) == 2
    assert '<progress value="3" max="12"' in shown[-1] and "measuring 3/12" in shown[-1]
    assert make_progress(False).__class__.__name__ == "_Silent"
    calls = []
    make_progress(lambda d, t: calls.append((d, t))).update("x", 1, 2)
    assert calls == [(1, 2)]
    with pytest.raises(TypeError, match="progress"):
        make_progress("yes")
