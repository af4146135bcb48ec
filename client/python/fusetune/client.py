"""fusetune.Client: the Tuner service of a `fusetune serve`, from Python.

It speaks the wire contract the command line speaks (client/remote_client.cc): the token as
`authorization: Bearer <token>` metadata on every call, TLS when a CA is given, graphs sent as
Relay text or ONNX bytes for the server to parse, progress streamed by WatchTask.
"""
import logging
import os

import grpc

from fusetune import errors
from fusetune._wire import pb, pb_grpc
from fusetune.graph_source import display_name, graph_source
from fusetune.options import tune_options
from fusetune.records import CachedPlan, TaskInfo, WorkerInfo, state_to_proto
from fusetune.report import TuneReport
from fusetune.task import Task

__all__ = ["Client"]

log = logging.getLogger("fusetune")

_DEFAULT_TIMEOUT = 30.0  # seconds per call, as the command line's


def _read_token_file(path):
    """As server/service/auth.cc reads one: trimmed, one line, not empty."""
    with open(path, encoding="utf-8") as f:
        token = f.read().strip(" \t\r\n")
    if not token:
        raise ValueError(f"the token file '{path}' is empty")
    if "\n" in token or "\r" in token:
        raise ValueError(f"the token file '{path}' holds more than one line")
    return token


class Client:
    """A connection to `fusetune serve` at `address` ("host:port"; default $FUSETUNE_SERVER).

    token / token_file: the server's client token (--token-file); tls_ca: a PEM file (or its
    bytes) of the CA to trust, which makes the connection TLS; timeout: seconds each call may take
    (default 30; waiting for a task is bounded by wait()'s own timeout instead).
    Use it as a context manager, or call close().
    """

    def __init__(self, address=None, token=None, token_file=None, tls_ca=None, timeout=None):
        address = address or os.environ.get("FUSETUNE_SERVER")
        if not address:
            raise ValueError("address: give the server's host:port (or set $FUSETUNE_SERVER)")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            token = _read_token_file(token_file)
        elif token is not None:
            token = token.strip()
            if not token or "\n" in token:
                raise ValueError("token: must be one non-empty line")
        self.address = address
        self.timeout = _DEFAULT_TIMEOUT if timeout is None else float(timeout)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        options = [
            ("grpc.max_receive_message_length", -1),
            ("grpc.max_send_message_length", -1),
            # Watching a task across a server restart: reconnect within a second, not minutes.
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
            ("grpc.use_local_subchannel_pool", 1),
        ]
        if tls_ca is None:
            self._channel = grpc.insecure_channel(address, options=options)
        else:
            if isinstance(tls_ca, (bytes, bytearray)):
                pem = bytes(tls_ca)
            else:
                with open(tls_ca, "rb") as f:
                    pem = f.read()
            credentials = grpc.ssl_channel_credentials(root_certificates=pem)
            self._channel = grpc.secure_channel(address, credentials, options=options)
        self.tls = tls_ca is not None
        self._stub = pb_grpc.TunerStub(self._channel)

    # -- plumbing ------------------------------------------------------------------------------

    def _unary(self, method, request, what, timeout=None):
        try:
            return getattr(self._stub, method)(request, metadata=self._metadata,
                                               timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as e:
            raise errors.error_from_rpc(e, what, self.address) from None

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"Client({self.address!r}{', tls' if self.tls else ''}"
                f"{', token' if self._metadata else ''})")

    # -- tuning --------------------------------------------------------------------------------

    def submit(self, graph, threads=1, never_fuse=(), forbid=(), max_group=None, budget=None,
               *, never_fuse_nodes=(), max_args=None, max_region=None, schedules=None,
               retune=False, repeat=None, min_repeat_ms=None, flush_cache=False, target="any",
               name=None, label=None, schedule_budget=None, horizontal=True,
               warm_start="search", attention=True, norm_fold=True, recompute=True,
               softmax_rows=True, layer_norm_rows=True):
        """Submits `graph` for tuning and returns a Task at once (see tune() for the options).

        `target` is a worker's fingerprint or its CPU name (as `fusetune workers` shows it), or
        "any" for the one the registered workers share;
        `label` names this client in `fusetune tasks` (default: the caller's address)."""
        source = graph_source(graph, name)
        options = tune_options(threads, never_fuse, forbid, max_group, budget, never_fuse_nodes,
                               max_args, max_region, schedules, retune, repeat, min_repeat_ms,
                               flush_cache, schedule_budget, horizontal, warm_start,
                               attention, norm_fold, recompute, softmax_rows,
                               layer_norm_rows)
        request = pb.SubmitTuneRequest(graph=source, target=target or "any", options=options,
                                       client=label or "")
        response = self._unary("SubmitTune", request, "tune")
        log.info("task %d submitted to %s", response.task_id, self.address)
        return Task(self, response.task_id, display_name(source), response.status)

    def tune(self, graph, threads=1, never_fuse=(), forbid=(), max_group=None, budget=None,
             progress=None, **options):
        """Tunes `graph` on the server's workers and returns its TuneReport.

        graph: a path (.relay or .onnx), Relay text, the bytes of an ONNX model or an
          onnx.ModelProto.
        threads: threads each kernel runs with (part of every cache key).
        never_fuse: ops that always get a kernel of their own ("exp,where" or ["exp"]).
        forbid: groups that must not be one kernel ([["%0", "%1"]], or one group "%0,%1").
        max_group: most ops in one fused kernel. budget: measurements per region beyond the
          baselines, best first by the cost model (None: all).
        progress: None (a bar on a terminal or in a notebook), False, True, or a callable
          progress(done, total).
        More keywords: never_fuse_nodes, max_args, max_region, schedules, retune (search again
        though a plan is stored), repeat, min_repeat_ms, flush_cache, target, name, label,
        timeout (seconds to wait; the task goes on after it), schedule_budget (further schedules
        per region; 0: none), horizontal (False: never fuse sibling matmuls into one kernel),
        attention (False: never compute batch_matmul, softmax, batch_matmul as one kernel),
        norm_fold (False: never fold a layer norm into the matmul that reads it),
        recompute (False: never recompute a cheap op inside each kernel that reads it),
        softmax_rows (False: never compute a softmax written op by op as one row kernel),
        layer_norm_rows (False: the same for a layer norm or RMS norm written op by op),
        warm_start ("search", "only": time the nearest tuned size's plan and stop, "cold").
        """
        timeout = options.pop("timeout", None)
        task = self.submit(graph, threads, never_fuse, forbid, max_group, budget, **options)
        return task.wait(timeout=timeout, progress=progress)

    def tune_module(self, module, example_inputs, *, opset=None, export_options=None, **options):
        """Exports a torch.nn.Module to ONNX in memory (torch.onnx.export with `example_inputs`,
        in eval mode) and tunes it; keywords as tune(). Needs PyTorch."""
        from fusetune.torch_export import module_to_onnx
        options.setdefault("name", type(module).__name__)
        return self.tune(module_to_onnx(module, example_inputs, opset, export_options),
                         **options)

    def query(self, graph, threads=1, *, never_fuse=(), forbid=(), max_group=None,
              never_fuse_nodes=(), max_args=None, max_region=None, target="any", name=None,
              partial=False, exact=False):
        """The stored plans of `graph`'s regions, without measuring anything.

        Raises NotTuned (its `missing` lists the regions) when some region has no stored plan
        for this target and thread count, unless `partial`: then the report's `missing` names
        them and their regions have found=False. Region formation options must match the
        tune() that stored the plans. A region with no plan at its sizes is answered with the
        nearest tuned size's plan (its `transferred_from` says which) unless `exact`."""
        source = graph_source(graph, name)
        options = tune_options(threads, never_fuse, forbid, max_group, None, never_fuse_nodes,
                               max_args, max_region)
        request = pb.LookupBestRequest(graph=source, target=target or "any",
                                       threads=options.threads, options=options,
                                       exact_only=bool(exact))
        response = self._unary("LookupBest", request, "query")
        report = TuneReport._from_lookup(display_name(source), response, options.threads)
        if report.missing and not partial:
            raise errors.NotTuned(report, display_name(source))
        return report

    # -- the farm ------------------------------------------------------------------------------

    def workers(self, target=None):
        """The workers registered with the server (WorkerInfo), optionally of one target."""
        response = self._unary("ListWorkers", pb.ListWorkersRequest(target=target or ""),
                               "workers")
        return [WorkerInfo._from_proto(w) for w in response.workers]

    def tasks(self, states=None, client=None, limit=None):
        """Tuning tasks, newest first (TaskInfo). states: "running" or ["queued", "running"];
        client: only this label; limit: most tasks (default: the server's, 100)."""
        if isinstance(states, str):
            states = [s for s in states.split(",") if s]
        request = pb.ListTasksRequest(states=[state_to_proto(s) for s in states or ()],
                                      client=client or "", limit=limit or 0)
        return [TaskInfo._from_proto(t) for t in self._unary("ListTasks", request, "tasks").tasks]

    def cache(self, signature=None, op=None, target=None, threads=None, limit=None):
        """The server's stored best plans (CachedPlan), newest first: those whose region
        signature starts with `signature`, that hold `op`, of one target or thread count; at
        most `limit` (default: the server's, 100)."""
        request = pb.ListCacheRequest(region_signature_prefix=signature or "", op=op or "",
                                      target=target or "", threads=threads or 0,
                                      limit=limit or 0)
        response = self._unary("ListCache", request, "cache")
        return [CachedPlan._from_proto(p) for p in response.plans]

    def task(self, task_id):
        """A Task handle on an existing task (submitted from anywhere)."""
        task = Task(self, task_id)
        task.status()  # NotFoundError now rather than later
        return task

    def cancel(self, task_id):
        """Cancels a task (an id or a Task): its queued jobs leave the queue. False when it had
        already finished."""
        task_id = task_id.id if isinstance(task_id, Task) else int(task_id)
        response = self._unary("CancelTask", pb.CancelTaskRequest(task_id=task_id), "cancel")
        return response.cancelled
