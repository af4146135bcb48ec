"""Task handles: watching progress, waiting with a timeout, cancelling. The worker answers with
made-up figures (--synthetic) after a delay per job, so tasks stay running long enough to watch
and cancel, whatever the machine's speed."""
import pytest

import fusetune
from conftest import CHAIN, SMALL_SEED, eventually, start_farm

JOB_DELAY_MS = 150
# Six element-wise ops with skip edges: many candidate groups, so many jobs.
LONG_CHAIN = """fn (%x: Tensor[(32, 64), float32]) {
  %0 = exp(%x);
  %1 = negative(%0);
  %2 = sigmoid(%1);
  %3 = tanh(%2);
  %4 = add(%3, %x);
  multiply(%4, %0)
}
"""


@pytest.fixture(scope="module")
def farm(binary, tmp_path_factory):
    farm = start_farm(tmp_path_factory, "tasks", worker_args=["--synthetic"],
                      worker_env={"FUSETUNE_TEST_JOB_DELAY_MS": str(JOB_DELAY_MS)})
    yield farm
    farm.stop()


@pytest.fixture(scope="module")
def client(farm):
    with fusetune.Client(farm.address) as client:
        eventually(client.workers, 20, "the worker to register")
        yield client


def test_watch_streams_progress_until_done(client):
    task = client.submit(SMALL_SEED, label="watcher")
    assert isinstance(task, fusetune.Task) and task.id > 0
    seen = list(task.watch(timeout=60))
    assert seen[-1].state == "done" and seen[-1].finished
    running = [s for s in seen if s.state == "running" and s.total > 0]
    assert running, f"no running status among {seen}"
    assert all(0 <= s.done <= s.total for s in running)
    assert any(s.done > 0 for s in running), "progress moved while watching"
    assert all(s.id == task.id and s.client == "watcher" for s in seen)
    report = task.wait()  # already finished: answers at once
    assert report.target == "synthetic" and report.task_id == task.id
    assert [r.ops for r in report.regions] == [("nn.batch_matmul", "ones_like", "where")]
    assert task.status().state == "done"
    assert repr(task).startswith(f"<Task {task.id} on {client.address}: done")
    assert [t.id for t in client.tasks(client="watcher")] == [task.id]


def test_cancel_a_running_task(client):
    task = client.submit(LONG_CHAIN)
    eventually(lambda: task.status().state == "running", 20, "the task to run")
    assert client.cancel(task) is True
    with pytest.raises(fusetune.TaskCancelled) as raised:
        task.wait(timeout=30)
    assert raised.value.task_id == task.id
    assert isinstance(raised.value, fusetune.FusetuneError)
    assert task.status().state == "cancelled"
    assert task.id in [t.id for t in client.tasks(states=["cancelled"])]
    assert task.cancel() is False, "a second cancel finds it finished"


def test_wait_with_a_timeout_leaves_the_task_running(client):
    task = client.submit(LONG_CHAIN.replace("(32, 64)", "(16, 64)"))
    with pytest.raises(fusetune.DeadlineExceededError, match="has not finished"):
        task.wait(timeout=0.3)
    assert not task.done()
    with pytest.raises(fusetune.FusetuneError, match="has not finished"):
        task.result()
    assert task.cancel() is True


def test_a_task_handle_from_its_id(client):
    task = client.submit(CHAIN.replace("(32, 64)", "(24, 64)"))
    again = client.task(task.id)
    assert again.wait(timeout=60).regions == task.wait(timeout=60).regions
    with pytest.raises(fusetune.NotFoundError):
        client.task(987654)
    with pytest.raises(fusetune.InvalidArgumentError, match="task ids are positive"):
        client.cancel(0)


def test_a_terminal_gets_the_command_lines_progress_bar(client, monkeypatch):
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    client.tune(CHAIN.replace("(32, 64)", "(40, 64)"))  # progress=None: a bar on a terminal
    drawn = terminal.getvalue()
    assert "measuring [" in drawn and "#" in drawn
    assert drawn.endswith("\r\033[K"), "the bar is cleared at the end"
    quiet = Terminal()
    monkeypatch.setattr("sys.stderr", quiet)
    client.tune(CHAIN.replace("(32, 64)", "(48, 64)"), progress=False)
    assert quiet.getvalue() == ""
