"""Workers and task states as the service lists them; to_dict() matches `fusetune workers --json`
and `fusetune tasks --json`."""
from dataclasses import asdict, dataclass
from typing import Optional

from fusetune._wire import pb
from fusetune.table import short_target

__all__ = ["CachedPlan", "TaskInfo", "WorkerInfo", "STATES", "state_to_proto"]

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


@dataclass(frozen=True, repr=False)
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

    def __repr__(self):
        progress = f" {self.done}/{self.total}" if self.total else ""
        error = f", error={self.error!r}" if self.error else ""
        return (f"TaskInfo(id={self.id}, {self.state} ({self.phase}{progress}), "
                f"client={self.client!r}, target={short_target(self.target)!r}{error})")


@dataclass(frozen=True, repr=False)
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

    def __repr__(self):  # the fingerprint lists every CPU feature: shortened as `workers` does
        job = f", job {self.current_job}" if self.current_job else ""
        return (f"WorkerInfo(id={self.id!r}, {'online' if self.online else 'offline'}, "
                f"{self.cores} cores, target={short_target(self.target)!r}{job})")


@dataclass(frozen=True, repr=False)
class CachedPlan:
    """A best plan as the server's store keeps it: `groups` name nodes by their position in the
    region's canonical order (`region_text`), so the plan applies to every region with this
    signature; each group is (positions, schedule text)."""
    signature: str
    target: str
    threads: int
    search_version: int
    groups: tuple
    chosen: str
    tuned_us: float
    greedy_us: float
    unfused_us: float
    ops: tuple
    region_text: str
    created_at_ms: int
    # How its validation decided, the chosen plan's time over the runner-up's (None when not
    # recorded), the paired rounds behind it, and its last re-validation (0: never).
    decision: str = ""
    margin: Optional[float] = None
    rounds: int = 0
    verified_at_ms: int = 0
    # Its tune offered weights packed once (wpack): some matmul of the region had a constant B.
    weights_bound: bool = False

    @classmethod
    def _from_proto(cls, p):
        groups = tuple(
            (tuple(g.positions),
             ",".join(f"{k}={v}" for k, v in sorted((k.name, k.value) for k in g.schedule.knobs)))
            for g in p.groups)
        return cls(signature=p.region_signature, target=p.target_fingerprint, threads=p.threads,
                   search_version=p.search_version, groups=groups, chosen=p.chosen,
                   tuned_us=p.tuned_us, greedy_us=p.greedy_us, unfused_us=p.unfused_us,
                   ops=tuple(p.ops), region_text=p.region_text, created_at_ms=p.created_at_ms,
                   decision=p.decision, margin=p.margin if p.HasField("margin") else None,
                   rounds=p.rounds, verified_at_ms=p.verified_at_ms,
                   weights_bound=p.weights_bound)

    def __repr__(self):
        return (f"CachedPlan({self.signature}, {len(self.ops)} ops, {self.chosen} "
                f"{self.tuned_us:.1f} µs vs greedy {self.greedy_us:.1f} µs, "
                f"{self.threads} thread{'' if self.threads == 1 else 's'}, "
                f"target={short_target(self.target)!r})")
