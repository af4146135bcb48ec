"""fusetune's exceptions: one type per gRPC status code, all deriving from FusetuneError.

A refused call raises the type of its status code carrying the server's message unchanged, so
`except fusetune.InvalidArgumentError as e: print(e)` prints what `fusetune tune` would. Problems
in Relay text carry their position (`e.line`, `e.column`), parsed from the server's
"name:line:col: error: ..." message. Outcomes that are not refused calls have their own types:
NotTuned (query found regions with no stored plan), TaskFailed and TaskCancelled.
"""
import re

import grpc

__all__ = [
    "FusetuneError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
    "UnauthenticatedError", "NotTuned", "TaskFailed", "TaskCancelled",
]

# "x.relay:3:14: error: ..." as ir/text/source_error.cc writes it, possibly after a field name.
_POSITION = re.compile(r"(?P<source>[^\s:][^:]*?):(?P<line>\d+):(?P<column>\d+): error: ")


class FusetuneError(Exception):
    """Base of every error this package raises for the service's answers.

    `code` is the grpc.StatusCode (None for outcomes that are not a refused call) and `details`
    the server's message. `line`, `column` and `source` are set when the message points into
    Relay text, else None.
    """

    code = None

    def __init__(self, details, code=None):
        super().__init__(details)
        self.details = details
        if code is not None:
            self.code = code
        self.source = self.line = self.column = None
        match = _POSITION.search(details or "")
        if match:
            self.source = match.group("source")
            self.line = int(match.group("line"))
            self.column = int(match.group("column"))

    def __str__(self):
        return self.details


def _status_error(name, status, doc):
    return type(name, (FusetuneError,), {"code": status, "__doc__": doc})


CancelledError = _status_error("CancelledError", grpc.StatusCode.CANCELLED,
                               "The call was cancelled (CANCELLED).")
UnknownError = _status_error("UnknownError", grpc.StatusCode.UNKNOWN,
                             "The server failed in a way it could not classify (UNKNOWN).")
InvalidArgumentError = _status_error(
    "InvalidArgumentError", grpc.StatusCode.INVALID_ARGUMENT,
    "The request is bad: a graph that does not parse or verify (with line and column), an "
    "unknown op or node in the options, a value out of range (INVALID_ARGUMENT).")
DeadlineExceededError = _status_error(
    "DeadlineExceededError", grpc.StatusCode.DEADLINE_EXCEEDED,
    "The call took longer than the client's timeout (DEADLINE_EXCEEDED).")
NotFoundError = _status_error("NotFoundError", grpc.StatusCode.NOT_FOUND,
                              "No such task (NOT_FOUND).")
AlreadyExistsError = _status_error("AlreadyExistsError", grpc.StatusCode.ALREADY_EXISTS,
                                   "ALREADY_EXISTS.")
PermissionDeniedError = _status_error("PermissionDeniedError",
                                      grpc.StatusCode.PERMISSION_DENIED,
                                      "The token may not do this (PERMISSION_DENIED).")
ResourceExhaustedError = _status_error(
    "ResourceExhaustedError", grpc.StatusCode.RESOURCE_EXHAUSTED,
    "A limit of the server: message size, graph size, tasks per client (RESOURCE_EXHAUSTED).")
FailedPreconditionError = _status_error(
    "FailedPreconditionError", grpc.StatusCode.FAILED_PRECONDITION,
    "The server cannot answer yet, e.g. no worker has registered (FAILED_PRECONDITION).")
AbortedError = _status_error("AbortedError", grpc.StatusCode.ABORTED, "ABORTED.")
OutOfRangeError = _status_error("OutOfRangeError", grpc.StatusCode.OUT_OF_RANGE, "OUT_OF_RANGE.")
UnimplementedError = _status_error(
    "UnimplementedError", grpc.StatusCode.UNIMPLEMENTED,
    "The server does not know this call: an older fusetune (UNIMPLEMENTED).")
InternalError = _status_error("InternalError", grpc.StatusCode.INTERNAL,
                              "A bug or a broken store on the server (INTERNAL).")
UnavailableError = _status_error(
    "UnavailableError", grpc.StatusCode.UNAVAILABLE,
    "The server cannot be reached: down, wrong address, or TLS mismatch (UNAVAILABLE).")
DataLossError = _status_error("DataLossError", grpc.StatusCode.DATA_LOSS,
                              "The server's store holds something unreadable (DATA_LOSS).")
UnauthenticatedError = _status_error(
    "UnauthenticatedError", grpc.StatusCode.UNAUTHENTICATED,
    "The token is missing or wrong (UNAUTHENTICATED).")

_BY_CODE = {cls.code: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
    AbortedError, OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}


def error_from_rpc(error, what, address):
    """The FusetuneError for a failed call (a grpc.RpcError), prefixed with what was asked."""
    code = error.code()
    details = error.details() or code.name
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        message = f"{what}: cannot reach the server at {address}: {details}"
    else:
        message = f"{what}: {details}"
    return _BY_CODE.get(code, UnknownError)(message, code)


class NotTuned(FusetuneError):
    """query(): some regions of the graph have no stored plan for this target and thread count.

    `missing` lists them (RegionReport, with signature and nodes); `report` is the partial answer,
    whose other regions are found.
    """

    def __init__(self, report, graph_name):
        self.report = report
        self.missing = [r for r in report.regions if not r.found]
        lines = [f"{len(self.missing)} region{'' if len(self.missing) == 1 else 's'} of "
                 f"{graph_name} ha{'s' if len(self.missing) == 1 else 've'} no stored plan for "
                 "this target and thread count:"]
        for r in self.missing:
            lines.append(f"  {r.signature}  [{' '.join(r.nodes)}]")
            if r.transfer_refused:
                lines.append(f"    {r.transfer_refused}, so its plan does not carry over")
        lines.append("tune the graph to measure them")
        super().__init__("\n".join(lines))


class TaskFailed(FusetuneError):
    """A tuning task ended in failure on the server; `task_id` and `error` say which and why."""

    def __init__(self, task_id, error):
        self.task_id = task_id
        self.error = error
        super().__init__(f"task {task_id} failed: {error}")


class TaskCancelled(FusetuneError):
    """A tuning task was cancelled before it finished."""

    def __init__(self, task_id):
        self.task_id = task_id
        super().__init__(f"task {task_id} was cancelled")
