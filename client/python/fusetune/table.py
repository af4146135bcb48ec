"""A TuneReport as text (the command line's table, client/tune_table.cc, character for character)
and as HTML for notebooks."""
import html
import math

__all__ = ["format_table", "format_html", "short_target", "us", "speedup"]

OPS_WIDTH = 44


def us(value, decimals=1):
    if math.isnan(value):
        return "-"  # not measured: a plan transferred from another size
    return f"{value:.{decimals}f}" if math.isfinite(value) else "failed"


def speedup(base, tuned):
    if not (math.isfinite(base) and math.isfinite(tuned)) or tuned <= 0:
        return "-"
    return f"{base / tuned:.2f}x"


def _bytes(s):
    return len(s.encode("utf-8"))  # the C++ table measures in bytes ("…" is three)


def ops_summary(ops, width=OPS_WIDTH):
    out = ""
    for i, op in enumerate(ops):
        following = ", " + op if i else op
        tail = f", … ({len(ops)} ops)"
        if _bytes(out) + _bytes(following) > width - (_bytes(tail) if i + 1 < len(ops) else 0):
            return out + tail
        out += following
    return out


def short_target(fingerprint):
    """"x86_64-pc-linux-gnu skylake, 112 features" from a full fingerprint."""
    a = fingerprint.find(";")
    b = -1 if a < 0 else fingerprint.find(";", a + 1)
    if b < 0:
        return fingerprint
    return f"{fingerprint[:a]} {fingerprint[a + 1:b]}, {fingerprint[b:].count('+')} features"


def _source(region):
    if region.cached:
        return "cache"
    if region.transferred_from:
        return "transferred"
    return f"{region.measured}+{region.reused}"


def _groups(region):
    return "".join(f" [{' '.join(g.nodes)}]" for g in region.plan)


def _describe_changes(changes):
    parts = []
    for c in changes:
        what = c.fusion
        if c.schedule:
            what += (" on schedule " if what else "schedule ") + c.knobs_changed
        parts.append(f"{what} [{' '.join(c.nodes)}]")
    return "; ".join(parts)


def _same_answer(a, b):
    """Regions the table lists once (client/tune_table.cc SameAnswer): a stack's identical layers."""
    return (a.signature == b.signature and a.chosen == b.chosen and a.decision == b.decision
            and a.rounds == b.rounds and a.cached == b.cached
            and a.transferred_from == b.transferred_from
            and a.searched_again == b.searched_again and not a.warm_start and not b.warm_start
            and all(us(getattr(a, f), 3) == us(getattr(b, f), 3)
                    for f in ("tuned_us", "greedy_us", "unfused_us"))
            and len(a.changes_from_greedy) == len(b.changes_from_greedy))


def _families(r):
    """For each region, the 1-based numbers listed with it; empty for one listed earlier."""
    families, listed = [[] for _ in r.regions], [False] * len(r.regions)
    for i, a in enumerate(r.regions):
        if listed[i]:
            continue
        for j in range(i, len(r.regions)):
            if not listed[j] and (j == i or _same_answer(a, r.regions[j])):
                listed[j] = True
                families[i].append(j + 1)
    return families


def _region_numbers(n):
    even = len(n) >= 5 and all(n[i] - n[i - 1] == n[1] - n[0] for i in range(2, len(n)))
    if not even:
        return ", ".join(map(str, n))
    step = n[1] - n[0]
    suffix = ("th" if step % 100 // 10 == 1 else
              {1: "st", 2: "nd", 3: "rd"}.get(step % 10, "th"))
    return f"{n[0]}, {n[1]}, …, {n[-1]}" + ("" if step == 1 else f" (every {step}{suffix})")


def _times(family):
    return f" ×{len(family)}" if len(family) > 1 else ""


def _changes_text(r, families):
    def gain(g):
        return g.greedy_us - g.tuned_us

    total = sum(gain(g) for g in r.regions
                if g.changes_from_greedy and math.isfinite(gain(g)) and gain(g) > 0)
    if all(not g.changes_from_greedy for g in r.regions):
        return ("\nwhat won against the rules: nothing, greedy's groups on default schedules "
                "everywhere\n")
    out = ("\nwhat won against the rules (greedy on default schedules): the region's gain, its "
           "share of the regions' gains, and what its plan does instead\n")
    for i, g in enumerate(r.regions):
        if not g.changes_from_greedy or not families[i]:
            continue
        d = gain(g)
        counted = math.isfinite(d) and d > 0 and total > 0
        out += "{:>3}  {:>12}{:<4}  {:>5}  {}\n".format(
            i + 1, f"{d:.1f} µs" if math.isfinite(d) else "-", _times(families[i]),
            f"{100 * d * len(families[i]) / total:.0f}%" if counted else "-",
            _describe_changes(g.changes_from_greedy))
    return out


def format_table(r):
    threads = f"{r.threads} thread{'' if r.threads == 1 else 's'}"
    out = f"{r.graph}  on {short_target(r.target)}, {threads}\n\n"
    out += (f"{'#':>3}  {'ops':<{OPS_WIDTH}}  {'source':>11}  {'tuned µs':>11}  "
            f"{'greedy µs':>11}  {'unfused µs':>11}  {'vs greedy':>9}  {'vs unfused':>9}\n")
    row = "{:>3}  {:<%d}  {:>11}  {:>10}  {:>10}  {:>10}  {:>9}  {:>9}\n" % OPS_WIDTH
    families = _families(r)
    for i, g in enumerate(r.regions):
        if not families[i]:
            continue
        times = _times(families[i])
        out += row.format(i + 1, ops_summary(g.ops, OPS_WIDTH - _bytes(times)) + times,
                          _source(g), us(g.tuned_us),
                          us(g.greedy_us), us(g.unfused_us), speedup(g.greedy_us, g.tuned_us),
                          speedup(g.unfused_us, g.tuned_us))
    t = r.total
    out += row.format("", "whole graph", "timed" if t.measured_together else "sum",
                      us(t.tuned_us), us(t.greedy_us), us(t.unfused_us),
                      speedup(t.greedy_us, t.tuned_us), speedup(t.unfused_us, t.tuned_us))
    for family in families:
        if len(family) > 1:
            out += (f"     ×{len(family)}: regions {_region_numbers(family)}, one signature and one "
                    "answer, listed once\n")
    out += ("\nchosen kernels per region (the simplest of greedy, unfused and tuned is kept unless a "
            "faster one wins beyond noise):\n")
    for i, g in enumerate(r.regions):
        if not families[i]:
            continue
        out += f"{i + 1:>3}  {g.chosen:<8}{_groups(g)}\n"
        if len(families[i]) > 1:
            out += (f"     the same groups in region{'s' if len(families[i]) > 2 else ''} "
                    f"{_region_numbers(families[i][1:])}, on their own nodes\n")
        if g.searched_again:
            out += f"     {g.searched_again}\n"
        if g.decision:
            rounds = f" ({g.rounds} round{'' if g.rounds == 1 else 's'})" if g.rounds > 0 else ""
            out += f"     {g.decision}{rounds}\n"
        if g.transferred_from:
            out += ("     transferred, not measured at this size: the plan tuned at "
                    f"{g.transferred_from}\n")
    out += _changes_text(r, families)
    all_cached = all(g.cached for g in r.regions)
    any_transferred = any(g.transferred_from for g in r.regions)
    nothing_ran = all(g.cached or g.transferred_from for g in r.regions)
    if all_cached:
        error = "checked when the plans were stored"
    elif nothing_ran:
        error = "not checked yet (`fusetune run --plan tuned` checks a transferred plan)"
    elif r.max_output_magnitude > 0:
        error = f"{r.max_abs_error:.2g} on outputs up to {r.max_output_magnitude:.3g}"
    else:  # a server that predates the magnitude
        error = f"{r.max_abs_error:.2g}"
    out += (f"\nmax |error| vs reference {error}; measured {r.candidates_measured} candidates, "
            f"reused {r.measurements_reused}, pruned {r.pruned} by the cost model; "
            f"{r.seconds:.1f} s\n")
    out += ("source: measured+reused (group, schedule) pairs, or cache = the region's stored "
            "plan\n")
    if any_transferred:
        out += "        transferred = the nearest tuned size's plan, adapted; its figures are '-'\n"
    return out


def format_html(r):
    e = html.escape
    pad = "padding:0.1em 0.6em"
    head = "<tr>" + "".join(
        f'<th style="{pad}">{h}</th>'
        for h in ("#", "ops", "source", "tuned µs", "greedy µs", "unfused µs", "vs greedy",
                  "vs unfused", "chosen", "kernels")) + "</tr>"
    num = f'<td style="text-align:right;{pad}">{{}}</td>'
    text = f'<td style="text-align:left;{pad}"{{}}>{{}}</td>'
    rows = []
    for i, g in enumerate(r.regions):
        cells = [num.format(i + 1), text.format(f' title="{e(g.signature)}"', e(", ".join(g.ops))),
                 num.format(e(_source(g))), num.format(us(g.tuned_us)),
                 num.format(us(g.greedy_us)), num.format(us(g.unfused_us)),
                 num.format(speedup(g.greedy_us, g.tuned_us)),
                 num.format(speedup(g.unfused_us, g.tuned_us)), text.format("", e(g.chosen)),
                 text.format("", f"<code>{e(_groups(g).strip())}</code>")]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    t = r.total
    rows.append("<tr style=\"font-weight:bold\">" + "".join([
        "<td></td>", text.format("", "whole graph"),
        num.format("timed" if t.measured_together else "sum"), num.format(us(t.tuned_us)),
        num.format(us(t.greedy_us)), num.format(us(t.unfused_us)),
        num.format(speedup(t.greedy_us, t.tuned_us)), num.format(speedup(t.unfused_us, t.tuned_us)),
        "<td></td><td></td>"]) + "</tr>")
    threads = f"{r.threads} thread{'' if r.threads == 1 else 's'}"
    caption = f"<b>{e(r.graph)}</b> on {e(short_target(r.target))}, {threads}"
    if r.missing:
        caption += f"; {len(r.missing)} region(s) have no stored plan"
    footer = (f"measured {r.candidates_measured} candidates, reused {r.measurements_reused}, "
              f"pruned {r.pruned} by the cost model; {r.seconds:.1f} s")
    return (f"<div><p>{caption}</p><table style=\"border-collapse:collapse\"><thead>{head}"
            f"</thead><tbody>{''.join(rows)}</tbody>"
            f"</table><p style=\"font-size:smaller\">{footer}</p></div>")
