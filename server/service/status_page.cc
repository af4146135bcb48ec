#include "server/service/status_page.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "server/target_names.h"

namespace fusetune::service {
namespace {

constexpr int kRefreshSeconds = 5;

// The page's whole style sheet: a plain table layout that reads well at 1280 px and prints.
constexpr const char* kStyle = R"css(
:root { --fg:#1a202c; --muted:#718096; --line:#e2e8f0; --bg:#f7fafc; --card:#fff;
        --ok:#2f855a; --warn:#c05621; --bad:#c53030; --info:#2b6cb0; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: var(--bg); }
header { background: #1a365d; color: #fff; padding: 14px 28px; display: flex;
         align-items: baseline; gap: 18px; }
header h1 { margin: 0; font-size: 20px; font-weight: 600; }
header .meta { color: #bee3f8; font-size: 13px; }
main { padding: 18px 28px 28px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 18px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px;
        padding: 10px 14px; min-width: 150px; }
.card .n { font-size: 22px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .d { color: var(--muted); font-size: 12px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 6px;
          margin-bottom: 18px; overflow: hidden; }
section h2 { margin: 0; padding: 10px 14px; font-size: 15px; border-bottom: 1px solid var(--line);
             display: flex; justify-content: space-between; align-items: baseline; }
section h2 .note { font-weight: normal; color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 14px; border-bottom: 1px solid var(--line);
         vertical-align: middle; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #fbfdff;
     white-space: nowrap; }
.nowrap { white-space: nowrap; }
tr:last-child td { border-bottom: none; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: "DejaVu Sans Mono", ui-monospace, monospace; font-size: 12px; }
.muted { color: var(--muted); }
.empty { padding: 14px; color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
         font-weight: 600; color: #fff; }
.s-online, .s-done { background: var(--ok); }
.s-running { background: var(--info); }
.s-queued { background: #975a16; }
.s-offline, .s-cancelled { background: #a0aec0; }
.s-failed { background: var(--bad); }
.progress { display: flex; align-items: center; gap: 8px; min-width: 200px; }
.bar { flex: 1; height: 10px; background: var(--line); border-radius: 5px; overflow: hidden; }
.bar > div { height: 100%; background: var(--info); }
.bar.full > div { background: var(--ok); }
.err { color: var(--bad); font-size: 12px; max-width: 380px; overflow-wrap: anywhere; }
.chosen { font-weight: 700; }
td.ops { max-width: 300px; }
svg.chart text { font: 11px "DejaVu Sans", sans-serif; fill: var(--fg); }
footer { color: var(--muted); font-size: 12px; padding: 0 28px 24px; }
footer a { color: var(--info); }
)css";

std::string FormatAge(int64_t now_ms, int64_t then_ms) {
  if (then_ms <= 0) return "never";
  int64_t s = std::max<int64_t>(0, (now_ms - then_ms) / 1000);
  if (s < 90) return fmt::format("{} s ago", s);
  if (s < 90 * 60) return fmt::format("{} min ago", s / 60);
  if (s < 36 * 3600) return fmt::format("{} h ago", s / 3600);
  return fmt::format("{} d ago", s / 86400);
}

std::string FormatUtc(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string FormatUs(double us) {
  if (!(us > 0)) return "–";  // NaN too: not timed
  if (us >= 1000) return fmt::format("{:.0f}", us);
  if (us >= 10) return fmt::format("{:.1f}", us);
  return fmt::format("{:.2f}", us);
}

// A long text in a cell: its start, the whole in a tooltip.
std::string ShortWithTitle(const std::string& text, size_t keep) {
  std::string shown = text.size() > keep ? text.substr(0, keep) + "…" : text;
  return fmt::format("<span class=\"mono\" title=\"{}\">{}</span>", HtmlEscape(text),
                     HtmlEscape(shown));
}

// A target fingerprint is "triple;cpu;+feature,..." (hundreds of bytes): the cell shows the
// triple and the CPU, the tooltip all of it. Other names (e.g. "synthetic") show as they are.
std::string TargetCell(const std::string& fingerprint, bool cpu_only = false) {
  size_t first = fingerprint.find(';');
  if (first == std::string::npos) return ShortWithTitle(fingerprint, 32);
  std::string cpu = TargetCpu(fingerprint);
  std::string shown = cpu_only ? cpu : fingerprint.substr(0, first) + " · " + cpu;
  return fmt::format("<span class=\"mono nowrap\" title=\"{}\">{}</span>", HtmlEscape(fingerprint),
                     HtmlEscape(shown));
}

std::string Badge(std::string_view state) {
  return fmt::format("<span class=\"badge s-{0}\">{0}</span>", HtmlEscape(state));
}

std::string Card(const std::string& key, const std::string& value, const std::string& detail) {
  return fmt::format(
      "<div class=\"card\"><div class=\"k\">{}</div><div class=\"n\">{}</div>"
      "<div class=\"d\">{}</div></div>",
      key, value, detail);
}

std::string ProgressCell(int64_t done, int64_t total) {
  if (total <= 0) return "<span class=\"muted\">–</span>";
  double pct = 100.0 * static_cast<double>(std::min(done, total)) / static_cast<double>(total);
  return fmt::format(
      "<div class=\"progress\"><div class=\"bar{}\"><div style=\"width:{:.1f}%\"></div></div>"
      "<span class=\"mono\">{}/{}</span></div>",
      done >= total ? " full" : "", pct, done, total);
}

// Three horizontal bars (tuned, greedy, unfused) on one scale; the stored plan's bar is solid
// and its label bold.
std::string TimesChart(const db::BestPlanRecord& p) {
  struct Bar {
    const char* name;
    double us;
    const char* color;
  };
  const Bar bars[] = {{"tuned", p.tuned_us, "#2f855a"},
                      {"greedy", p.greedy_us, "#dd6b20"},
                      {"unfused", p.unfused_us, "#718096"}};
  double most = 0;
  for (const Bar& b : bars) most = std::max(most, b.us);
  constexpr int kLabel = 48, kWidth = 120, kRow = 17;
  std::string svg = fmt::format(
      "<svg class=\"chart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "aria-label=\"tuned {} us, greedy {} us, unfused {} us\">",
      kLabel + kWidth + 48, 3 * kRow, kLabel + kWidth + 48, 3 * kRow, FormatUs(p.tuned_us),
      FormatUs(p.greedy_us), FormatUs(p.unfused_us));
  for (int i = 0; i < 3; ++i) {
    const Bar& b = bars[i];
    bool chosen = p.chosen == b.name;
    double w = most > 0 && b.us > 0 ? std::max(1.0, kWidth * b.us / most) : 0;
    int y = i * kRow;
    svg += fmt::format(
        "<text x=\"0\" y=\"{}\"{}>{}</text><rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" "
        "height=\"12\" rx=\"2\" fill=\"{}\" fill-opacity=\"{}\"/><text x=\"{:.1f}\" y=\"{}\">{}"
        "</text>",
        y + 12, chosen ? " font-weight=\"700\"" : "", b.name, kLabel, y + 2, w, b.color,
        chosen ? "1" : "0.45", kLabel + w + 4, y + 12, FormatUs(b.us));
  }
  return svg + "</svg>";
}

void WorkersSection(const StatusSnapshot& s, std::string& out) {
  out += fmt::format(
      "<section id=\"workers\"><h2>Workers <span class=\"note\">{} registered, {} "
      "online</span></h2>",
      s.workers.size(), s.workers_online);
  if (s.workers.empty()) {
    out +=
        "<div class=\"empty\">No worker has registered yet. Start one with "
        "<code>fusetune worker --server HOST:PORT</code>.</div></section>";
    return;
  }
  out +=
      "<table><thead><tr><th>worker</th><th>target</th><th class=\"num\">cores</th>"
      "<th>state</th><th>last heartbeat</th><th>current job</th><th>version</th></tr></thead>"
      "<tbody>";
  for (const WorkerRow& r : s.workers) {
    const db::WorkerRecord& w = r.worker;
    out += fmt::format(
        "<tr class=\"worker\"><td class=\"mono\">{}</td><td>{}</td><td class=\"num\">{}</td>"
        "<td>{}</td><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>",
        HtmlEscape(w.id), TargetCell(w.target_fingerprint), w.cores,
        Badge(db::WorkerStateName(w.state)), FormatAge(s.now_ms, w.last_heartbeat),
        r.current_job_id > 0 ? fmt::format("job {}", r.current_job_id) : "idle",
        HtmlEscape(w.version));
  }
  out += "</tbody></table></section>";
}

void TasksSection(const StatusSnapshot& s, std::string& out) {
  const db::TaskCounts& c = s.task_counts;
  int64_t total = c.queued + c.running + c.done + c.failed + c.cancelled;
  out += fmt::format("<section id=\"tasks\"><h2>Tasks <span class=\"note\">{}</span></h2>",
                     static_cast<int64_t>(s.tasks.size()) < total
                         ? fmt::format("newest {} of {}", s.tasks.size(), total)
                         : fmt::format("{} in all", total));
  if (s.tasks.empty()) {
    out +=
        "<div class=\"empty\">No task yet. Submit one with <code>fusetune tune --server "
        "HOST:PORT GRAPH</code>.</div></section>";
    return;
  }
  out +=
      "<table><thead><tr><th class=\"num\">task</th><th>client</th><th>graph</th>"
      "<th>state</th><th>progress</th><th>phase</th><th>submitted</th></tr></thead><tbody>";
  for (const TaskRow& t : s.tasks) {
    // A finished task's phase is its state, already in the badge.
    std::string phase = t.phase == db::TaskStateName(t.state)
                            ? std::string("<span class=\"muted\">–</span>")
                            : HtmlEscape(t.phase);
    if (!t.error.empty())
      phase += fmt::format("<div class=\"err\">{}</div>", HtmlEscape(t.error.substr(0, 300)));
    out += fmt::format(
        "<tr class=\"task\" id=\"task-{}\"><td class=\"num mono\">{}</td><td>{}</td>"
        "<td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        t.id, t.id, HtmlEscape(t.client), HtmlEscape(t.graph_name),
        Badge(db::TaskStateName(t.state)), ProgressCell(t.done, t.total), phase,
        FormatAge(s.now_ms, t.created_at));
  }
  out += "</tbody></table></section>";
}

void PlansSection(const StatusSnapshot& s, std::string& out) {
  out += fmt::format(
      "<section id=\"plans\"><h2>Cached best plans <span class=\"note\">{}</span>"
      "</h2>",
      static_cast<int64_t>(s.plans.size()) < s.cache.best_plans
          ? fmt::format("newest {} of {}", s.plans.size(), s.cache.best_plans)
          : fmt::format("{} in all", s.cache.best_plans));
  if (s.plans.empty()) {
    out += "<div class=\"empty\">No region has been tuned yet.</div></section>";
    return;
  }
  out +=
      "<table><thead><tr><th>region</th><th>ops</th><th class=\"num\">kernels</th>"
      "<th class=\"num\">threads</th><th class=\"num\">tuned µs</th>"
      "<th class=\"num\">greedy µs</th><th class=\"num\">unfused µs</th><th>stored</th>"
      "<th>times</th></tr></thead><tbody>";
  for (const db::BestPlanRecord& p : s.plans) {
    auto cell = [&](const char* name, double us) {
      return fmt::format("<td class=\"num{}\">{}</td>", p.chosen == name ? " chosen" : "",
                         FormatUs(us));
    };
    std::string vs_greedy = p.greedy_us > 0 && p.ChosenUs() > 0
                                ? fmt::format("<div class=\"muted nowrap\">×{:.2f} vs greedy</div>",
                                              p.greedy_us / p.ChosenUs())
                                : "";
    out += fmt::format(
        "<tr class=\"plan\"><td>{}<div class=\"muted\">{}</div></td><td class=\"ops\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td>{}{}{}<td>{}{}</td><td>{}</td></tr>",
        ShortWithTitle(p.key.region_signature, 12), TargetCell(p.key.target_fingerprint, true),
        HtmlEscape(OpsSummary(p.ops)), p.groups.size(), p.key.threads, cell("tuned", p.tuned_us),
        cell("greedy", p.greedy_us), cell("unfused", p.unfused_us), HtmlEscape(p.chosen), vs_greedy,
        TimesChart(p));
  }
  out += "</tbody></table></section>";
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderStatusPage(const StatusSnapshot& s) {
  std::string out;
  out.reserve(16384 + 1024 * (s.tasks.size() + s.plans.size()));
  out += fmt::format(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"{}\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>fusetune — farm status</title><style>{}</style></head><body>",
      kRefreshSeconds, kStyle);
  out += fmt::format(
      "<header><h1>fusetune farm</h1><span class=\"meta\">version {} · {} · refreshes every {} "
      "s</span></header><main>",
      HtmlEscape(s.version), FormatUtc(s.now_ms), kRefreshSeconds);

  const db::TaskCounts& c = s.task_counts;
  out += "<div class=\"cards\">";
  out += Card("workers online", fmt::format("{}", s.workers_online),
              fmt::format("{} registered", s.workers.size()));
  out += Card("tasks running", fmt::format("{}", c.running),
              fmt::format("{} queued · {} done · {} failed", c.queued, c.done, c.failed));
  out += Card("jobs queued", fmt::format("{}", s.job_counts.queued),
              fmt::format("{} leased · {} done · {} failed", s.job_counts.leased, s.job_counts.done,
                          s.job_counts.failed));
  out += Card("cached plans", fmt::format("{}", s.cache.best_plans), "one per tuned region");
  out += "</div>";

  WorkersSection(s, out);
  TasksSection(s, out);
  PlansSection(s, out);
  out += fmt::format(
      "</main><footer>Lists show at most the newest {} rows. Machine-readable: "
      "<a href=\"/api/status\">/api/status</a> · Prometheus: <a href=\"/metrics\">/metrics</a>"
      "</footer></body></html>\n",
      s.row_limit);
  return out;
}

}  // namespace fusetune::service
