"""A handle on a tuning task of the server: watch its progress, wait for its report, cancel it.

The server streams a task's status on every change (WatchTask) and ends the stream after a
terminal state. A stream cut by a server restart is watched again, as the command line does: the
server resumes unfinished tasks from its store, so the task goes on and so does the wait.
"""
import time

import grpc

from fusetune import errors
from fusetune._wire import pb
from fusetune.progress import make_progress
from fusetune.records import TaskInfo
from fusetune.report import TuneReport

__all__ = ["Task"]

_RECONNECT_ATTEMPTS = 600  # about ten minutes of a server that is down, as the command line


class Task:
    """A task on the server. `id` is its number (as `fusetune tasks` lists it)."""

    def __init__(self, client, task_id, graph_name=None, status=None):
        self._client = client
        self.id = int(task_id)
        self.graph = graph_name
        self._last = status  # the newest TaskStatus message seen

    def status(self):
        """The task's state now (TaskInfo)."""
        self._last = self._client._unary("GetTask", pb.GetTaskRequest(task_id=self.id),
                                         f"task {self.id}")
        return TaskInfo._from_proto(self._last)

    def _statuses(self, deadline):
        """TaskStatus messages on every change until a terminal state; reconnects when the
        server goes away."""
        for attempt in range(_RECONNECT_ATTEMPTS + 1):
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                raise self._timed_out()
            call = self._client._stub.WatchTask(pb.WatchTaskRequest(task_id=self.id),
                                                metadata=self._client._metadata, timeout=timeout)
            try:
                for status in call:
                    self._last = status
                    yield status
                return  # the stream ends after a terminal state
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED and deadline is not None:
                    raise self._timed_out() from None
                if e.code() != grpc.StatusCode.UNAVAILABLE or attempt == _RECONNECT_ATTEMPTS:
                    raise errors.error_from_rpc(e, f"watching task {self.id}",
                                                self._client.address) from None
            finally:
                call.cancel()  # a no-op after the end; stops the stream when the caller stops
            time.sleep(0.2 if attempt < 10 else 1.0)

    def _timed_out(self):
        return errors.DeadlineExceededError(
            f"task {self.id} has not finished within the timeout; it goes on on the server "
            "(wait again, or cancel it)")

    def watch(self, timeout=None):
        """Yields the task's TaskInfo on every change, ending after it is done, failed or
        cancelled. `timeout` (seconds) bounds the whole watch."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for status in self._statuses(deadline):
            yield TaskInfo._from_proto(status)

    def wait(self, timeout=None, progress=None):
        """Waits for the task and returns its TuneReport. Raises TaskFailed or TaskCancelled when
        it ends otherwise, DeadlineExceededError after `timeout` seconds (the task goes on, as it
        does when the wait is interrupted: cancel() stops it).
        `progress`: see fusetune.progress (None: a bar on a terminal or in a notebook)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = make_progress(progress)
        try:
            for status in self._statuses(deadline):
                if status.state == pb.TASK_STATE_RUNNING and status.total > 0:
                    bar.update(status.phase, status.done, status.total)
        finally:
            bar.finish()
        return self._report_of(self._last)

    def _report_of(self, status):
        if status.state == pb.TASK_STATE_DONE:
            name = self.graph or status.result.graph or "graph"
            return TuneReport._from_result(name, status.result, task_id=self.id)
        if status.state == pb.TASK_STATE_CANCELLED:
            raise errors.TaskCancelled(self.id)
        if status.state == pb.TASK_STATE_FAILED:
            raise errors.TaskFailed(self.id, status.error)
        raise errors.FusetuneError(f"task {self.id} has not finished ({status.phase})")

    def result(self):
        """The report of a finished task, without waiting (FusetuneError if still running)."""
        self.status()
        return self._report_of(self._last)

    def done(self):
        """True once the task is done, failed or cancelled (asks the server)."""
        return self.status().finished

    def cancel(self):
        """Cancels the task; False when it had already finished."""
        return self._client.cancel(self.id)

    def __repr__(self):
        if self._last is None:
            return f"<Task {self.id} on {self._client.address}>"
        s = TaskInfo._from_proto(self._last)
        progress = f" {s.done}/{s.total}" if s.total else ""
        return f"<Task {self.id} on {self._client.address}: {s.state} ({s.phase}{progress})>"
