"""The search and timing controls of a request, as the wire's TuneOptions.

Each keyword matches a command-line flag of `fusetune tune` (never_fuse: --never-fuse, forbid:
--forbid, max_group: --max-group, ...). Values are checked by the server, which names the field
in its INVALID_ARGUMENT answer; only shapes Python can get wrong (a str where a list was meant)
are sorted out here.
"""
from fusetune._wire import pb

__all__ = ["tune_options"]

# `fusetune tune`'s timing defaults (server/tune_options.h DefaultTuneTiming, worker/timing.h): sent
# only when a timing keyword is given, since an absent timing message means these on the server.
_WARMUP = 2
_REPEAT = 5
_MIN_REPEAT_MS = 5.0


def _names(value, what):
    """A list of names from "a,b", ["a", "b"] or ("a",)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    try:
        names = list(value)
    except TypeError:
        raise TypeError(f"{what}: expected names (a list or 'a,b'), got {value!r}") from None
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what}: expected names, got {n!r}")
    return names


def _node(name):
    name = str(name)
    return name if name.startswith("%") else "%" + name


def _groups(forbid):
    """forbid=["%0,%1"], [["%0", "%1"]] or [("0", "1")]: groups of node names. A single group
    may be given alone (forbid="%0,%1,%2" or ["%0", "%1"])."""
    if forbid is None:
        return []
    if isinstance(forbid, str) or (forbid and all(isinstance(n, str) and "," not in n
                                                  for n in forbid)):
        forbid = [forbid]
    return [[_node(n) for n in _names(g, "forbid")] for g in forbid]


_WARM_STARTS = {"search": pb.WARM_START_SEARCH, "only": pb.WARM_START_ONLY,
                "cold": pb.WARM_START_COLD}


def _positive(value, what):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what}: expected an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{what}: must be positive, got {value}")
    return value


def tune_options(threads=1, never_fuse=(), forbid=(), max_group=None, budget=None,
                 never_fuse_nodes=(), max_args=None, max_region=None, schedules=None,
                 retune=False, repeat=None, min_repeat_ms=None, flush_cache=False,
                 schedule_budget=None, horizontal=True, warm_start="search",
                 attention=True, norm_fold=True, recompute=True, softmax_rows=True,
                 layer_norm_rows=True):
    budget = 0 if budget is None else budget
    if warm_start not in _WARM_STARTS:
        raise ValueError(f"warm_start: one of {', '.join(_WARM_STARTS)}, got {warm_start!r}")
    if schedule_budget is not None and (isinstance(schedule_budget, bool)
                                        or not isinstance(schedule_budget, int)
                                        or schedule_budget < 0):
        raise ValueError(f"schedule_budget: further schedules per region, 0 (none) or more, "
                         f"got {schedule_budget!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget: measurements per region beyond the baselines, 0 (no limit) "
                         f"or more, got {budget!r}")
    o = pb.TuneOptions(
        threads=_positive(threads, "threads"),
        budget=budget,
        max_group_size=_positive(max_group, "max_group"),
        max_region_nodes=_positive(max_region, "max_region"),
        max_kernel_args=_positive(max_args, "max_args"),
        schedules_per_group=_positive(schedules, "schedules"),
        never_fuse_ops=_names(never_fuse, "never_fuse"),
        never_fuse_nodes=[_node(n) for n in _names(never_fuse_nodes, "never_fuse_nodes")],
        retune=bool(retune),
        no_horizontal=not horizontal,
        no_attention=not attention,
        no_norm_fold=not norm_fold,
        no_recompute=not recompute,
        no_softmax_rows=not softmax_rows,
        no_layer_norm_rows=not layer_norm_rows,
        warm_start=_WARM_STARTS[warm_start])
    if schedule_budget is not None:
        o.schedule_budget = schedule_budget
    for g in _groups(forbid):
        o.forbidden_groups.add(nodes=g)
    if repeat is not None or min_repeat_ms is not None or flush_cache:
        o.timing.CopyFrom(pb.TimingOptions(
            warmup=_WARMUP, repeat=_REPEAT if repeat is None else repeat,
            min_repeat_ms=_MIN_REPEAT_MS if min_repeat_ms is None else float(min_repeat_ms),
            flush_cache=bool(flush_cache)))
    return o
