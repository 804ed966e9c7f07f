//! The history as a static, offline page (`kvbench dashboard -o DIR`) a person can find their
//! way around at any size: an index by phase and by engine (links to anchors), a table of the
//! changes (steps, new versions, new regimes), per phase one chart per metric with the engines
//! as lines, the space per engine, and a table of every engine's latest figure per phase. A
//! filter box (an inline script, the page's only one: no network, no other file) hides the
//! engines that do not match. Lines are SVG with `<title>` hovers, as in the HTML report.

use std::collections::HashMap;
use std::fmt::Write;

use crate::axis::{axis, Unit};
use crate::svg::{colour, dash, esc, Frame, Scale};
use crate::trend::{utc_time, Point, Series, Step};

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:0 24px 24px;color:#222}\
h1{margin:0;font-size:20px}h2{margin:28px 0 6px;font-size:17px}a{color:#1f5f99;text-decoration:none}\
a:hover{text-decoration:underline}header{position:sticky;top:0;z-index:2;background:#fff;padding:10px 0 8px;\
border-bottom:1px solid #ddd;display:flex;gap:16px;align-items:center;flex-wrap:wrap}\
#filter{font:inherit;padding:3px 6px;width:26em}.meta{color:#555;font-weight:400;font-size:13px}\
p.meta{margin:2px 0}.index p{margin:6px 0;line-height:1.9}.index a{margin-right:10px;white-space:nowrap}\
.sw{display:inline-block;vertical-align:middle;margin-right:3px}\
.charts{display:flex;flex-wrap:wrap;gap:4px 10px}.charts>p{flex-basis:100%;order:1;margin:0}figure{margin:0}figcaption{font-weight:600;font-size:13px}\
.grid{stroke:#e8e8e8}.plot{fill:none;stroke:#999}.tick{font-size:10px;fill:#555}\
.axis-label{font-size:11px;fill:#333}.s{fill:none;stroke-width:1.6;stroke-linecap:round}.chart:hover .s{opacity:.3}.chart .s:hover{opacity:1;stroke-width:2.6}\
body.dim .s{opacity:.1}body.dim .s.hl{opacity:1;stroke-width:2.6}\
.mark{fill:none;stroke-width:1.6;stroke-dasharray:none}.mark.step{stroke:#d62728}.mark.change{stroke:#2ca02c}\
.legend{display:flex;flex-wrap:wrap;gap:2px 12px;font-size:12px;margin:6px 0 0}\
table{border-collapse:collapse;font-size:13px}th,td{padding:2px 8px;text-align:left;border-bottom:1px solid #eee}\
td.n{text-align:right;white-space:nowrap}.up{color:#2a7d2a}.down{color:#c0392b}\
.spark{vertical-align:middle;margin-left:4px}.spark polyline{fill:none;stroke:#4e79a7;stroke-width:1.2}\
.off{display:none!important}";

/// Filter by engine name (terms split by `,` or `|`, each a substring, or `=name` exactly;
/// also from a `#filter=...` link), and highlight an engine's lines while its name is hovered.
const SCRIPT: &str = "(function(){var f=document.getElementById('filter'),shown=document.getElementById('shown');\
function terms(){return f.value.toLowerCase().split(/[,|]/).map(function(t){return t.trim()}).filter(Boolean)}\
function hit(n,ts){return ts.some(function(t){return t[0]==='='?n===t.slice(1):n.indexOf(t)>=0})}\
function apply(){var ts=terms(),names={};document.querySelectorAll('[data-engine]').forEach(function(e){\
var n=e.getAttribute('data-engine').toLowerCase(),on=!ts.length||hit(n,ts);e.classList.toggle('off',!on);\
if(on)names[n]=1});shown.textContent=ts.length?Object.keys(names).length+' engines shown':''}\
function fromHash(){var m=location.hash.match(/^#filter=(.*)$/);if(m){f.value=decodeURIComponent(m[1]);apply()}}\
f.addEventListener('input',apply);window.addEventListener('hashchange',fromHash);fromHash();\
document.addEventListener('mouseover',function(e){var t=e.target.closest&&e.target.closest('.legend [data-engine],.index [data-engine]');\
document.body.classList.toggle('dim',!!t);document.querySelectorAll('.s.hl').forEach(function(g){g.classList.remove('hl')});\
if(t){document.querySelectorAll('.s[data-engine=\"'+CSS.escape(t.getAttribute('data-engine'))+'\"]').forEach(function(g){g.classList.add('hl')})}})})();";

/// One metric of a phase: its name, unit and value per point.
struct Metric {
    name: &'static str,
    id: &'static str,
    unit: Unit,
    value: fn(&Point) -> Option<f64>,
}

/// The charts of every phase.
const METRICS: [Metric; 4] = [
    Metric { name: "throughput (ops/s)", id: "throughput", unit: Unit::Rate, value: |p| Some(p.ops_per_sec) },
    Metric { name: "p99 latency", id: "p99", unit: Unit::Nanos, value: |p| p.p99_ns },
    Metric { name: "device bytes read per op", id: "read", unit: Unit::Bytes, value: |p| p.read_per_op },
    Metric { name: "device bytes written per op", id: "write", unit: Unit::Bytes, value: |p| p.write_per_op },
];

/// The space a row took (after the run; the same figure in each of its phases).
const SPACE: Metric = Metric {
    name: "space on disk",
    id: "space",
    unit: Unit::Bytes,
    value: |p| Some(p.space_bytes as f64).filter(|v| *v > 0.0),
};

/// The series that share charts: one scenario and plan on one machine.
struct Context<'a> {
    /// Its place on the page, the prefix of its anchors.
    id: String,
    first: &'a Series,
    /// One point per run (the first seen), oldest first: the x axis.
    runs: Vec<&'a Point>,
    /// Each run's position in `runs`.
    run_at: HashMap<&'a str, usize>,
    /// In the order the runs ran them.
    phases: Vec<&'a str>,
    /// By name; an engine's index gives its colour and dash pattern.
    engines: Vec<&'a str>,
    series: Vec<&'a (Series, Vec<Step>)>,
}

impl<'a> Context<'a> {
    fn new(id: String, series: Vec<&'a (Series, Vec<Step>)>) -> Context<'a> {
        let first = &series[0].0;
        let mut runs: Vec<&Point> = series.iter().flat_map(|(s, _)| &s.points).collect();
        runs.sort_by(|a, b| (a.started_at, &a.run_id).cmp(&(b.started_at, &b.run_id)));
        runs.dedup_by(|a, b| a.run_id == b.run_id);
        let mut phases: Vec<&str> = Vec::new();
        for (s, _) in &series {
            if !phases.contains(&s.phase.as_str()) {
                phases.push(&s.phase);
            }
        }
        let mut engines: Vec<&str> = series.iter().map(|(s, _)| s.label.as_str()).collect();
        engines.sort_unstable();
        engines.dedup();
        let run_at = runs.iter().enumerate().map(|(i, p)| (p.run_id.as_str(), i)).collect();
        Context { id, first, runs, run_at, phases, engines, series }
    }

    /// The run's position on the x axis.
    fn x(&self, run_id: &str) -> usize {
        self.run_at.get(run_id).copied().unwrap_or(0)
    }

    fn engine(&self, label: &str) -> usize {
        self.engines.iter().position(|e| *e == label).unwrap_or(0)
    }

    fn of_phase<'b>(&'b self, phase: &'b str) -> impl Iterator<Item = &'a (Series, Vec<Step>)> + 'b {
        self.series.iter().copied().filter(move |(s, _)| s.phase == phase)
    }

    fn phase_anchor(&self, phase: &str) -> String {
        format!("{}-p{}", self.id, self.phases.iter().position(|p| *p == phase).unwrap_or(0))
    }

    fn engine_anchor(&self, label: &str) -> String {
        format!("{}-e{}", self.id, self.engine(label))
    }

    fn title(&self) -> String {
        let plan: String = self.first.plan.chars().take(8).collect();
        format!("{} · {} · plan {plan}", self.first.scenario, self.first.machine)
    }
}

/// Series (ordered by scenario, plan and machine, as the store gives them) into contexts.
fn contexts(series: &[(Series, Vec<Step>)]) -> Vec<Context<'_>> {
    let mut groups: Vec<Vec<&(Series, Vec<Step>)>> = Vec::new();
    for s in series {
        let same = |g: &Vec<&(Series, Vec<Step>)>| {
            let f = &g[0].0;
            (&f.scenario, &f.plan, &f.machine) == (&s.0.scenario, &s.0.plan, &s.0.machine)
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.push(s),
            None => groups.push(vec![s]),
        }
    }
    groups.into_iter().enumerate().map(|(i, g)| Context::new(format!("c{i}"), g)).collect()
}

/// The page for every series with its steps.
pub fn dashboard(series: &[(Series, Vec<Step>)]) -> String {
    let ctxs = contexts(series);
    let mut out = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvbench history</title>\
         <style>{STYLE}{}</style></head><body><header id=\"top\"><h1>kvbench history</h1>\
         <input id=\"filter\" type=\"search\" placeholder=\"filter engines: lmdb, rocks (or =exact name)\" \
         aria-label=\"filter engines\"><span id=\"shown\" class=\"meta\"></span>\
         <a class=\"meta\" href=\"#filter=\">show every engine</a></header>",
        engine_styles(ctxs.iter().map(|c| c.engines.len()).max().unwrap_or(0))
    );
    if ctxs.is_empty() {
        out.push_str("<p>No stored figures yet: run with <code>--history</code>.</p>");
    }
    for c in &ctxs {
        out.push_str(&index(c));
    }
    out.push_str(
        "<p class=\"meta\">Each chart: one phase, one metric, a line per engine (colour and dash as in the legend; \
         hover a name to pick its lines out, a line for its values). Red rings: a step in throughput, a lasting \
         change of level confirmed by three runs; green rings: a new engine or kvbench version, or a new regime \
         (the data against memory).</p>",
    );
    for c in &ctxs {
        out.push_str(&changes(c));
        out.push_str(&engines_table(c));
        for phase in &c.phases {
            out.push_str(&phase_section(c, phase));
        }
        out.push_str(&space_section(c));
    }
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
    out
}

/// The context's links: by phase, by engine, and its runs.
fn index(context: &Context) -> String {
    let (first, last) = (context.runs[0].started_at, context.runs[context.runs.len() - 1].started_at);
    let mut out = format!(
        "<nav class=\"index\"><h2>{} <span class=\"meta\">{} runs, {} to {} (UTC)</span></h2><p><b>Phases</b> ",
        esc(&context.title()),
        context.runs.len(),
        utc_time(first),
        utc_time(last)
    );
    for p in &context.phases {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", context.phase_anchor(p), esc(p));
    }
    let _ = write!(
        out,
        "<a href=\"#{id}-space\">space</a> · <a href=\"#{id}-changes\">changes</a> · \
         <a href=\"#{id}-engines\">latest figures</a></p><p><b>Engines</b> ",
        id = context.id
    );
    for e in &context.engines {
        let _ = write!(
            out,
            "<a data-engine=\"{}\" href=\"#{}\">{}{}</a>",
            esc(e),
            context.engine_anchor(e),
            swatch(context.engine(e)),
            esc(e)
        );
    }
    out.push_str("</p><details><summary>runs</summary><table><tr><th>#</th><th>started (UTC)</th><th>run</th><th>kvbench</th></tr>");
    for (i, p) in context.runs.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            utc_time(p.started_at),
            esc(&p.run_id),
            esc(&p.kvbench_version)
        );
    }
    out.push_str("</table></details></nav>");
    out
}

/// A short line in engine `index`'s colour and dash pattern.
fn swatch(index: usize) -> String {
    format!(
        "<svg class=\"sw\" width=\"22\" height=\"8\"><line class=\"k{index}\" x1=\"0\" y1=\"4\" x2=\"22\" y2=\"4\"/></svg>"
    )
}

/// A class per engine index, `k0` ... (colour and dash pattern), named by every line and
/// swatch of the engine instead of repeating its style.
fn engine_styles(count: usize) -> String {
    let mut out = String::from(".sw line{stroke-width:2.5}");
    for i in 0..count {
        let d = dash(i).map(|d| format!(";stroke-dasharray:{d}")).unwrap_or_default();
        let _ = write!(out, ".k{i}{{stroke:{}{d}}}", colour(i));
    }
    out
}

/// One change worth a ring on a line and a row in the changes table.
struct Change {
    x: usize,
    class: &'static str,
    what: String,
}

/// A series' changes: its steps (throughput) and each new engine or kvbench version or regime.
fn changes_of(context: &Context, series: &Series, steps: &[Step], with_steps: bool) -> Vec<Change> {
    let mut out = Vec::new();
    if with_steps {
        for st in steps {
            let Some(p) = series.points.get(st.at) else { continue };
            let what = format!(
                "step: ops/s {} → {} ({:+.0}%)",
                Unit::Rate.show(st.before),
                Unit::Rate.show(st.after),
                (st.ratio() - 1.0) * 100.0
            );
            out.push(Change { x: context.x(&p.run_id), class: "step", what });
        }
    }
    for w in series.points.windows(2) {
        let what = if w[0].version != w[1].version {
            format!("version {} → {}", crate::short_version(&w[0].version), crate::short_version(&w[1].version))
        } else if w[0].kvbench_version != w[1].kvbench_version {
            format!("kvbench {} → {}", w[0].kvbench_version, w[1].kvbench_version)
        } else if w[0].regime != w[1].regime {
            format!("regime: {}", w[1].regime)
        } else {
            continue;
        };
        out.push(Change { x: context.x(&w[1].run_id), class: "change", what });
    }
    out
}

/// Every step, and every version or regime change once per engine, with links.
fn changes(context: &Context) -> String {
    let mut rows: Vec<(usize, String, String)> = Vec::new();
    for (s, steps) in &context.series {
        for ch in changes_of(context, s, steps, true) {
            // A version change shows in every phase of the engine: listed once, for the engine.
            let phase = if ch.class == "step" { s.phase.as_str() } else { "" };
            let row = (ch.x, s.label.clone(), format!("{phase}\0{}", ch.what));
            rows.push(row);
        }
    }
    rows.sort();
    rows.dedup();
    let mut out = format!(
        "<section id=\"{}-changes\"><h2>Changes <span class=\"meta\">{}</span></h2>",
        context.id,
        esc(&context.first.scenario)
    );
    if rows.is_empty() {
        out.push_str("<p class=\"meta\">No step and no new version or regime in these runs.</p></section>");
        return out;
    }
    out.push_str("<table><tr><th>run</th><th>started (UTC)</th><th>engine</th><th>phase</th><th>what</th></tr>");
    for (x, label, key) in &rows {
        let (phase, what) = key.split_once('\0').unwrap_or(("", key));
        let phase_cell = if phase.is_empty() {
            "every phase".to_string()
        } else {
            format!("<a href=\"#{}\">{}</a>", context.phase_anchor(phase), esc(phase))
        };
        let cls = if what.starts_with("step: ops/s") && what.contains("(-") { " class=\"down\"" } else { "" };
        let _ = write!(
            out,
            "<tr data-engine=\"{}\"><td class=\"n\">{}</td><td>{}</td><td><a href=\"#{}\">{}</a></td><td>{phase_cell}</td><td{cls}>{}</td></tr>",
            esc(label),
            x + 1,
            utc_time(context.runs[*x].started_at),
            context.engine_anchor(label),
            esc(label),
            esc(what)
        );
    }
    out.push_str("</table></section>");
    out
}

/// A phase: its regimes, a chart per metric, the legend.
fn phase_section(context: &Context, phase: &str) -> String {
    let mut out = format!(
        "<section id=\"{}\" class=\"phase\"><h2>{} <span class=\"meta\">{} · <a href=\"#top\">index</a></span></h2>",
        context.phase_anchor(phase),
        esc(phase),
        esc(&context.first.scenario)
    );
    out.push_str(&regimes(context, phase));
    out.push_str("<div class=\"charts\">");
    for m in &METRICS {
        let lines: Vec<Line> = context
            .of_phase(phase)
            .map(|(s, steps)| Line::of(context, s, m, changes_of(context, s, steps, m.id == "throughput")))
            .collect();
        out.push_str(&chart(context, &format!("{phase}-{}", m.id), &format!("{phase}: {}", m.name), m, &lines));
    }
    out.push_str("</div>");
    out.push_str(&legend(context, context.of_phase(phase).map(|(s, _)| s.label.as_str())));
    out.push_str("</section>");
    out
}

/// The regimes of the phase's engines in their latest runs, with how many engines each.
fn regimes(context: &Context, phase: &str) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (s, _) in context.of_phase(phase) {
        let r = s.points.last().map(|p| p.regime.as_str()).filter(|r| !r.is_empty()).unwrap_or("not recorded");
        match counts.iter_mut().find(|(x, _)| *x == r) {
            Some((_, n)) => *n += 1,
            None => counts.push((r, 1)),
        }
    }
    let text: Vec<String> = counts.iter().map(|(r, n)| format!("{} ({n} engines)", esc(r))).collect();
    format!("<p class=\"meta regime\">regime in the latest run: {}</p>", text.join("; "))
}

fn legend<'a>(context: &Context, labels: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from("<div class=\"legend\">");
    for l in labels {
        let _ = write!(out, "<span data-engine=\"{}\">{}{}</span>", esc(l), swatch(context.engine(l)), esc(l));
    }
    out.push_str("</div>");
    out
}

/// The space each engine took, over the runs.
fn space_section(context: &Context) -> String {
    let mut lines: Vec<Line> = Vec::new();
    for e in &context.engines {
        // An engine's space is the same in each of its phases: its longest series has it all.
        let longest = context.series.iter().filter(|(s, _)| s.label == *e).max_by_key(|(s, _)| s.points.len());
        if let Some((s, _)) = longest {
            lines.push(Line::of(context, s, &SPACE, Vec::new()));
        }
    }
    format!(
        "<section id=\"{}-space\"><h2>Space on disk <span class=\"meta\">{} · after each run · <a href=\"#top\">index</a></span></h2>{}{}</section>",
        context.id,
        esc(&context.first.scenario),
        chart(context, "space", "space on disk", &SPACE, &lines),
        legend(context, context.engines.iter().copied())
    )
}

/// Every engine's latest throughput per phase, its change since its first run and a sparkline.
fn engines_table(context: &Context) -> String {
    let mut out = format!(
        "<section id=\"{}-engines\"><h2>Latest figures <span class=\"meta\">ops/s in each engine's latest run, \
         the change since its first, the line over the runs · <a href=\"#top\">index</a></span></h2>\
         <table><tr><th>engine</th><th>version</th>",
        context.id
    );
    for p in &context.phases {
        let _ = write!(out, "<th><a href=\"#{}\">{}</a></th>", context.phase_anchor(p), esc(p));
    }
    out.push_str("</tr>");
    for e in &context.engines {
        let of = |p: &str| context.series.iter().copied().find(|(s, _)| s.label == *e && s.phase == p);
        let version = context.phases.iter().find_map(|p| of(p)).and_then(|(s, _)| s.points.last()).map(|p| &p.version);
        let _ = write!(
            out,
            "<tr id=\"{}\" data-engine=\"{}\"><th><a href=\"#filter=={}\" title=\"show only {}\">{}{}</a></th><td>{}</td>",
            context.engine_anchor(e),
            esc(e),
            esc(&percent_encode(e)),
            esc(e),
            swatch(context.engine(e)),
            esc(e),
            esc(&version.map(|v| crate::short_version(v)).unwrap_or_default())
        );
        for p in &context.phases {
            out.push_str(&latest_cell(of(p)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></section>");
    out
}

/// The latest ops/s with the change since the first run, coloured when the series has a step
/// (a change beyond its noise): a 1% wobble is no news.
fn latest_cell(series: Option<&(Series, Vec<Step>)>) -> String {
    let Some((series, steps)) = series else { return "<td class=\"n\">-</td>".into() };
    let ops: Vec<f64> = series.points.iter().map(|p| p.ops_per_sec).collect();
    let (first, last) = (ops[0], ops[ops.len() - 1]);
    let change = if ops.len() > 1 && first > 0.0 {
        let pct = (last / first - 1.0) * 100.0;
        let cls = match (steps.is_empty(), pct > 0.0) {
            (true, _) => "meta",
            (false, true) => "up",
            (false, false) => "down",
        };
        format!(" <span class=\"{cls}\">{pct:+.0}%</span>")
    } else {
        String::new()
    };
    format!("<td class=\"n\">{}{change}{}</td>", Unit::Rate.show(last), sparkline(&ops))
}

/// A 60 x 14 line of `values` from zero to its largest value: scaled to its own range, a 1% wobble
/// would look like a landslide.
fn sparkline(values: &[f64]) -> String {
    if values.len() < 2 {
        return String::new();
    }
    let hi = values.iter().copied().fold(0.0, f64::max);
    let hi = if hi > 0.0 { hi } else { 1.0 };
    let pts: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .map(|(i, x)| (1.0 + 58.0 * i as f64 / (values.len() - 1) as f64, 13.0 - 12.0 * x / hi))
        .collect();
    format!("<svg class=\"spark\" width=\"60\" height=\"14\"><polyline points=\"{}\"/></svg>", crate::svg::points(&pts))
}

/// `text` safe in a URL fragment.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One engine's values of a metric on a chart, with its changes.
struct Line<'a> {
    label: &'a str,
    engine: usize,
    /// (x, value), the run's position and its figure.
    values: Vec<(usize, f64)>,
    changes: Vec<Change>,
}

impl<'a> Line<'a> {
    fn of(context: &Context, series: &'a Series, metric: &Metric, changes: Vec<Change>) -> Line<'a> {
        let values =
            series.points.iter().filter_map(|p| (metric.value)(p).map(|v| (context.x(&p.run_id), v))).collect();
        Line { label: &series.label, engine: context.engine(&series.label), values, changes }
    }
}

/// One metric of every line over the runs, or a note when no run measured it.
fn chart(context: &Context, id: &str, caption: &str, metric: &Metric, lines: &[Line]) -> String {
    let all: Vec<f64> = lines.iter().flat_map(|l| l.values.iter().map(|v| v.1)).collect();
    if all.is_empty() || all.iter().all(|v| *v == 0.0) {
        let what = if all.is_empty() { "not measured" } else { "zero in every run" };
        return format!("<p class=\"meta\" data-nochart=\"{}\">{}: {what}.</p>", esc(id), esc(caption));
    }
    let f = Frame { w: 610.0, h: 300.0, left: 62.0, right: 10.0, top: 10.0, bottom: 34.0 };
    let n = context.runs.len() as f64;
    let x = Scale::linear(-0.5, n - 0.5, f.x0(), f.x1());
    let y = axis(&all, metric.unit, f.y0(), f.y1());
    let mut svg = f.open(caption);
    let step = crate::svg::nice_step(n / 10.0).max(1.0);
    let xt: Vec<(f64, String)> = (0..context.runs.len())
        .filter(|i| (*i as f64 % step) == 0.0)
        .map(|i| (i as f64, (i + 1).to_string()))
        .collect();
    f.x_axis(&mut svg, &x, &xt, "run (oldest first)");
    let title = if y.log { format!("{} (log scale)", metric.name) } else { metric.name.to_string() };
    f.y_axis(&mut svg, &y.scale, &y.ticks, &title, false);
    f.border(&mut svg);
    for l in lines.iter().filter(|l| !l.values.is_empty()) {
        svg.push_str(&line(l, &x, &y.scale, metric));
    }
    svg.push_str("</svg>");
    format!(
        "<figure class=\"chart\" data-chart=\"{}\" data-metric=\"{}\"><figcaption>{}</figcaption>{svg}</figure>",
        esc(id),
        metric.id,
        esc(caption)
    )
}

/// An engine's line: a path (broken where it has no figure; a point alone drawn as a dot), its
/// changes as rings, its values on hover.
fn line(plotted: &Line, x_scale: &Scale, y_scale: &Scale, metric: &Metric) -> String {
    let px = |&(i, v): &(usize, f64)| (x_scale.map(i as f64), y_scale.map(v));
    let mut d = String::new();
    for (k, v) in plotted.values.iter().enumerate() {
        let (a, b) = px(v);
        let joined = k > 0 && plotted.values[k - 1].0 + 1 == v.0;
        let alone = !joined && plotted.values.get(k + 1).is_none_or(|w| w.0 != v.0 + 1);
        // Whole pixels: a tenth more would add a fifth to the page for nothing visible.
        let _ = write!(d, "{}{a:.0},{b:.0}{}", if joined { "L" } else { "M" }, if alone { "h0" } else { "" });
    }
    let values: Vec<String> =
        plotted.values.iter().map(|&(i, v)| format!("#{} {}", i + 1, metric.unit.show(v))).collect();
    let mut out = format!(
        "<g class=\"s k{}\" data-engine=\"{}\"><title>{}: {}</title><path d=\"{d}\"/>",
        plotted.engine,
        esc(plotted.label),
        esc(plotted.label),
        values.join(", ")
    );
    for ch in &plotted.changes {
        if let Some(v) = plotted.values.iter().find(|v| v.0 == ch.x) {
            let (a, b) = px(v);
            let _ = write!(
                out,
                "<circle class=\"mark {}\" cx=\"{a:.1}\" cy=\"{b:.1}\" r=\"6\"><title>{} at run {}: {}</title></circle>",
                ch.class,
                esc(plotted.label),
                ch.x + 1,
                esc(&ch.what)
            );
        }
    }
    out.push_str("</g>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(run: u64, ops: f64, version: &str) -> Point {
        Point {
            run_id: format!("run-{run}"),
            started_at: 1_700_000_000 + run * 3600,
            kvbench_version: "0.1.0".into(),
            version: version.into(),
            ops_per_sec: ops,
            p99_ns: Some(20_000.0),
            read_per_op: None,
            write_per_op: Some(0.4 + run as f64 / 10.0),
            space_bytes: 1 << 20,
            regime: "fits in memory".into(),
        }
    }

    fn series(label: &str, phase: &str, ops: &[f64]) -> (Series, Vec<Step>) {
        let points = ops.iter().enumerate().map(|(i, o)| point(i as u64, *o, if i < 3 { "1" } else { "2" })).collect();
        let s = Series {
            scenario: "s".into(),
            plan: "p".into(),
            machine: "m".into(),
            label: label.into(),
            phase: phase.into(),
            points,
        };
        let steps = if ops.len() > 3 { vec![Step { at: 3, before: 100.0, after: 70.0 }] } else { vec![] };
        (s, steps)
    }

    #[test]
    fn a_phase_has_one_chart_per_metric_with_a_line_per_engine() {
        let page = dashboard(&[
            series("a", "load", &[1.0, 2.0, 3.0, 4.0]),
            series("b", "load", &[1.0, 2.0, 3.0, 4.0]),
            series("a", "get", &[5.0, 6.0, 7.0, 8.0]),
        ]);
        let load = page.split("data-chart=\"load-throughput\"").nth(1).unwrap().split("</figure>").next().unwrap();
        assert_eq!(load.matches("<g class=\"s k").count(), 2, "two engines, two lines");
        assert!(page.contains("data-chart=\"get-p99\"") && page.contains("data-chart=\"space\""));
        assert!(page.contains("data-nochart=\"get-read\""), "no chart for what no run measured, a note instead");
        assert!(page.find("id=\"c0-p0\"").unwrap() < page.find("id=\"c0-p1\"").unwrap());
        assert!(page.contains("<a href=\"#c0-p0\">load</a>"), "phases in the order the runs ran them");
        assert!(page.contains("step: ops/s 100 → 70 (-30%)") && page.contains("version 1 → 2"), "changes listed");
    }

    #[test]
    fn a_figure_of_one_run_is_a_dot() {
        let page = dashboard(&[series("a", "get", &[5.0])]);
        assert!(page.contains("h0\"/></g>"), "a zero-length segment, drawn with a round cap");
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        let page = dashboard(&[series("a", "get", &[1.0, 2.0])]);
        assert_eq!(page.matches("<script").count(), 1);
        assert!(!page.contains("src=") && !page.contains("http://") && !page.contains("https://"));
    }

    #[test]
    fn an_empty_store_says_what_to_do() {
        assert!(dashboard(&[]).contains("run with <code>--history</code>"));
    }
}
