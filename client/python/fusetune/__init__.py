"""fusetune from Python: tune graphs on a fusetune server's worker farm and query its stored plans.

    import fusetune
    with fusetune.Client("tuner-host:7600", token_file="token") as client:
        report = client.tune("examples/bmm_where_s128.relay")
        print(report)                      # the table `fusetune tune` prints
        report.to_dict()                   # what `fusetune tune --json` prints

See Client for every call, and fusetune.errors for what each failure raises.
"""
from fusetune._version import __version__
from fusetune.client import Client
from fusetune.errors import (
    AbortedError, AlreadyExistsError, CancelledError, DataLossError, DeadlineExceededError,
    FailedPreconditionError, FusetuneError, InternalError, InvalidArgumentError, NotFoundError,
    NotTuned, OutOfRangeError, PermissionDeniedError, ResourceExhaustedError, TaskCancelled,
    TaskFailed, UnauthenticatedError, UnavailableError, UnimplementedError, UnknownError)
from fusetune.records import CachedPlan, TaskInfo, WorkerInfo
from fusetune.report import PlanGroup, RegionReport, Totals, TuneReport
from fusetune.task import Task

__all__ = [
    "__version__", "Client", "Task", "TuneReport", "RegionReport", "PlanGroup", "Totals",
    "TaskInfo", "WorkerInfo", "CachedPlan",
    "FusetuneError", "NotTuned", "TaskFailed", "TaskCancelled",
    "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
    "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "ResourceExhaustedError",
    "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError",
    "InternalError", "UnavailableError", "DataLossError", "UnauthenticatedError",
]
