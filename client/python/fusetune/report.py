"""What tune() and query() return: the per-region plans and times of one graph.

The fields follow `fusetune tune --json` (server/tune_report.cc), and to_dict() produces exactly
that document for the same answer, so scripts can switch between the command line and Python.
str(report) is the command line's table (client/tune_table.cc); a notebook shows _repr_html_.
"""
import json
import math
from dataclasses import dataclass, field
from typing import Optional, Tuple

from fusetune import table

__all__ = ["PlanChange", "PlanGroup", "RegionReport", "Totals", "TuneReport"]


def _json_us(us):
    """JSON has no infinity: a plan that could not run is null, as the command line prints it."""
    return us if math.isfinite(us) else None


@dataclass(frozen=True)
class PlanGroup:
    """One fused kernel: its nodes ("%0", ...) and its schedule's text form ("k=v,k=v"; "" is the
    template's default)."""
    nodes: Tuple[str, ...]
    schedule: str = ""

    @property
    def knobs(self):
        """The schedule as {knob: value}."""
        out = {}
        for item in filter(None, self.schedule.split(",")):
            k, _, v = item.partition("=")
            out[k] = int(v)
        return out

    @classmethod
    def _from_proto(cls, g):
        knobs = sorted((k.name, k.value) for k in g.schedule.knobs)
        return cls(tuple(g.nodes), ",".join(f"{k}={v}" for k, v in knobs))


@dataclass(frozen=True)
class PlanChange:
    """A group of a region's plan that the rules (greedy on default schedules) do not have.

    `fusion`: "attention kernel", "softmax row kernel", "horizontal GEMM", "layer norm folded",
    "recomputes %N", "matmul prologue", "no fusion", "other grouping", or "" for greedy's own
    group; `schedule`: its knobs when not the default ("" otherwise), and `knobs_changed` only
    those that differ from the default."""
    nodes: Tuple[str, ...]
    fusion: str = ""
    schedule: str = ""
    knobs_changed: str = ""

    @classmethod
    def _from_proto(cls, c):
        return cls(tuple(c.nodes), c.fusion, c.schedule, c.knobs_changed)

    def to_dict(self):
        return {"nodes": list(self.nodes), "fusion": self.fusion, "schedule": self.schedule,
                "knobs_changed": self.knobs_changed}


@dataclass(frozen=True)
class RegionReport:
    """A region: a piece of the graph inside which fusion choices interact.

    `plan` is its chosen partition, `chosen` which of the three plans was fastest ("tuned",
    "greedy": TVM's rules, "unfused": one kernel per op), and the three times are microseconds
    measured in one run. `cached`: answered from the store; `found` (query): a plan is stored.
    """
    signature: str
    nodes: Tuple[str, ...]
    ops: Tuple[str, ...]
    cached: bool
    found: bool
    plan: Tuple[PlanGroup, ...]
    chosen: str
    tuned_us: float
    greedy_us: float
    unfused_us: float
    candidates: int = 0
    measured: int = 0
    reused: int = 0
    pruned: int = 0
    max_abs_error: float = 0.0
    # The reference's largest finite |value| over the region's outputs: max_abs_error's scale.
    max_output_magnitude: float = 0.0
    # How the validation decided ("tuned 1.02× vs greedy, within noise: greedy kept"), the chosen
    # plan's time over the runner-up's (None when not recorded) and the paired rounds behind it.
    decision: str = ""
    margin: Optional[float] = None
    rounds: int = 0
    # LookupBest answered a miss with the nearest tuned size's plan, e.g. "s1=256 (here 192)".
    transferred_from: str = ""
    # No plan stored or transferred, though a size of the family was tuned whose sizes coincide
    # where these differ: "tuned at s0=12 s1=64, where 64 is two sizes here (8 and 64)".
    transfer_refused: str = ""
    # A tune refused the region's stored plan and searched it again, and why ("stored plan was
    # tuned without bound weights: searched again"); "" otherwise.
    searched_again: str = ""
    # How a warm-started tune began (the command line's --json "warm_start"); not on the wire yet,
    # so None here.
    warm_start: Optional[dict] = None
    # What the plan does that greedy on default schedules does not; empty when greedy was kept.
    changes_from_greedy: Tuple[PlanChange, ...] = ()

    @property
    def speedup_vs_greedy(self):
        return _speedup(self.greedy_us, self.tuned_us)

    @property
    def speedup_vs_unfused(self):
        return _speedup(self.unfused_us, self.tuned_us)

    @classmethod
    def _from_proto(cls, r):
        return cls(signature=r.signature, nodes=tuple(r.nodes), ops=tuple(r.ops),
                   cached=r.cached, found=r.found,
                   plan=tuple(PlanGroup._from_proto(g) for g in r.plan), chosen=r.chosen,
                   tuned_us=r.tuned_us, greedy_us=r.greedy_us, unfused_us=r.unfused_us,
                   candidates=r.candidates, measured=r.measured, reused=r.reused,
                   pruned=r.pruned, max_abs_error=r.max_abs_error,
                   max_output_magnitude=r.max_output_magnitude, decision=r.decision,
                   margin=r.margin if r.HasField("margin") else None,
                   rounds=r.rounds, transferred_from=r.transferred_from,
                   searched_again=r.searched_again, transfer_refused=r.transfer_refused,
                   changes_from_greedy=tuple(
                       PlanChange._from_proto(c) for c in r.changes_from_greedy))

    def to_dict(self):
        return {
            "signature": self.signature,
            "nodes": list(self.nodes),
            "ops": list(self.ops),
            "cached": self.cached,
            "searched_again": self.searched_again or None,
            "plan": [list(g.nodes) for g in self.plan],
            "schedules": [g.schedule for g in self.plan],
            "chosen": self.chosen,
            "tuned_us": _json_us(self.tuned_us),
            "greedy_us": _json_us(self.greedy_us),
            "unfused_us": _json_us(self.unfused_us),
            "measured": self.measured,
            "reused": self.reused,
            "pruned": self.pruned,
            "decision": self.decision,
            "margin": self.margin,
            "rounds": self.rounds,
            "transferred_from": self.transferred_from or None,
            "transfer_refused": self.transfer_refused or None,
            "warm_start": self.warm_start,
            "changes_from_greedy": [c.to_dict() for c in self.changes_from_greedy],
        }


def _speedup(base, tuned):
    if not (math.isfinite(base) and math.isfinite(tuned)) or tuned <= 0:
        return None
    return base / tuned


@dataclass(frozen=True)
class Totals:
    """The whole graph under each plan. `measured_together`: timed as one run; False: sums of the
    regions' stored figures (a fully cached answer). `chosen`: which whole-graph plan was kept
    ("tuned" for a query), `decision`: how, when the whole graph was timed (else "")."""
    tuned_us: float
    greedy_us: float
    unfused_us: float
    measured_together: bool
    chosen: str = "tuned"
    decision: str = ""


@dataclass(frozen=True)
class TuneReport:
    """The answer for one graph: `regions`, `total`, and how the search went.

    `plan` is the whole graph's tuned plan (from tune(); None from query(), which answers per
    region). `task_id` is the server's task (None for query()).
    """
    graph: str
    target: str
    threads: int
    regions: Tuple[RegionReport, ...]
    total: Totals
    max_abs_error: float = 0.0
    max_output_magnitude: float = 0.0  # the largest reference value max_abs_error was read beside
    candidates_measured: int = 0
    measurements_reused: int = 0
    pruned: int = 0
    seconds: float = 0.0
    plan: Optional[Tuple[PlanGroup, ...]] = None
    task_id: Optional[int] = None
    missing: Tuple[str, ...] = field(default=())  # query(): signatures with no stored plan

    @property
    def cached(self):
        """Every region was answered from the store (nothing was measured)."""
        return bool(self.regions) and all(r.cached for r in self.regions)

    def _nothing_ran(self):
        return bool(self.regions) and all(r.cached or r.transferred_from for r in self.regions)

    @classmethod
    def _from_result(cls, graph, result, task_id=None):
        """From a finished task's TuneResult."""
        t = result.total
        return cls(graph=graph, target=result.target, threads=result.threads,
                   regions=tuple(RegionReport._from_proto(r) for r in result.regions),
                   total=Totals(t.tuned_us, t.greedy_us, t.unfused_us, t.measured_together,
                                chosen=t.chosen or "tuned", decision=t.decision),
                   max_abs_error=result.max_abs_error,
                   max_output_magnitude=result.max_output_magnitude,
                   candidates_measured=result.candidates_measured,
                   measurements_reused=result.measurements_reused, pruned=result.pruned,
                   seconds=result.seconds,
                   plan=tuple(PlanGroup._from_proto(g) for g in result.plan.groups),
                   task_id=task_id)

    @classmethod
    def _from_lookup(cls, graph, response, threads):
        """From a LookupBest answer: totals are sums of the regions' stored figures, as the
        command line's `query --server` computes them."""
        regions = tuple(RegionReport._from_proto(r) for r in response.regions)
        return cls(graph=graph, target=response.target, threads=threads, regions=regions,
                   total=Totals(sum(r.tuned_us for r in regions),
                                sum(r.greedy_us for r in regions),
                                sum(r.unfused_us for r in regions), False),
                   max_abs_error=max((r.max_abs_error for r in regions), default=0.0),
                   max_output_magnitude=max((r.max_output_magnitude for r in regions),
                                            default=0.0),
                   missing=tuple(response.missing))

    def to_dict(self):
        """The document `fusetune tune --json` (or `query --json`) prints for this answer."""
        return {
            "graph": self.graph,
            "target": self.target,
            "threads": self.threads,
            "regions": [r.to_dict() for r in self.regions],
            "total": {
                "tuned_us": _json_us(self.total.tuned_us),
                "greedy_us": _json_us(self.total.greedy_us),
                "unfused_us": _json_us(self.total.unfused_us),
                "chosen": self.total.chosen,
                "decision": self.total.decision,
                "measured_together": self.total.measured_together,
            },
            # null when every region came from the cache: nothing ran, and each plan was checked
            # against the reference interpreter when it was stored.
            "max_abs_error": None if self._nothing_ran() else self.max_abs_error,
            "max_output_magnitude": None if self._nothing_ran() else self.max_output_magnitude,
            "candidates_measured": self.candidates_measured,
            "measurements_reused": self.measurements_reused,
            "pruned": self.pruned,
            "seconds": self.seconds,
            # Where a local tune's seconds went; a server does not send it yet.
            "breakdown": {"stages_s": {}, "jobs_ms": {}, "schedule_ranking": None,
                          "schedule_duels": []},
        }

    def to_json(self, indent=2):
        """to_dict() as text, keys sorted as the command line sorts them."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    def plan_json(self, indent=2):
        """The whole graph's tuned plan as a plan file for `fusetune run GRAPH --plan FILE`."""
        if self.plan is None:
            raise ValueError("this report has no whole-graph plan (query() answers per region; "
                             "tune() returns one)")
        groups = [{"nodes": list(g.nodes), "schedule": g.schedule} for g in self.plan]
        return json.dumps({"groups": groups, "plan": "tuned"}, indent=indent, sort_keys=True)

    def __str__(self):
        return table.format_table(self)

    def _repr_html_(self):
        return table.format_html(self)

    def __repr__(self):
        n = len(self.regions)
        return (f"<TuneReport {self.graph}: {n} region{'' if n == 1 else 's'}, "
                f"tuned {table.us(self.total.tuned_us)} µs"
                f" vs greedy {table.us(self.total.greedy_us)} µs "
                f"({table.speedup(self.total.greedy_us, self.total.tuned_us)})"
                f"{', cached' if self.cached else ''}>")
