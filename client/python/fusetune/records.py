"""Workers and task states as the service lists them; to_dict() matches `fusetune workers --json`
and `fusetune tasks --json`."""
from dataclasses import asdict, dataclass

from fusetune._wire import pb

__all__ = ["TaskInfo", "WorkerInfo", "STATES", "state_to_proto"]

STATES = {
    pb.TASK_STATE_QUEUED: "queued",
    pb.TASK_STATE_RUNNING: "running",
    pb.TASK_STATE_DONE: "done",
    pb.TASK_STATE_FAILED: "failed",
    pb.TASK_STATE_CANCELLED: "cancelled",
}
_TERMINAL = ("done", "failed", "cancelled")


def state_to_proto(name):
    for value, n in STATES.items():
        if n == name:
            return value
    raise ValueError(f"'{name}' is not a task state ({', '.join(STATES.values())})")


@dataclass(frozen=True)
class TaskInfo:
    """One tuning task: `state` is queued, running, done, failed or cancelled; `phase` says what a
    running task does ("measuring", "validating", ...) and done/total count its jobs."""
    id: int
    state: str
    phase: str
    done: int
    total: int
    client: str
    target: str
    error: str
    created_at_ms: int
    updated_at_ms: int

    @property
    def finished(self):
        return self.state in _TERMINAL

    @classmethod
    def _from_proto(cls, t):
        return cls(id=t.task_id, state=STATES.get(t.state, "?"), phase=t.phase, done=t.done,
                   total=t.total, client=t.client, target=t.target, error=t.error,
                   created_at_ms=t.created_at_ms, updated_at_ms=t.updated_at_ms)

    def to_dict(self):
        return asdict(self)


@dataclass(frozen=True)
class WorkerInfo:
    """A benchmark machine registered with the server; `current_job` is 0 when idle."""
    id: str
    target: str
    cores: int
    version: str
    online: bool
    registered_at_ms: int
    last_heartbeat_ms: int
    current_job: int

    @classmethod
    def _from_proto(cls, w):
        return cls(id=w.worker_id, target=w.target_fingerprint, cores=w.cores, version=w.version,
                   online=w.online, registered_at_ms=w.registered_at_ms,
                   last_heartbeat_ms=w.last_heartbeat_ms, current_job=w.current_job_id)

    def to_dict(self):
        return asdict(self)
