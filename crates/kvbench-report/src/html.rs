//! A self-contained HTML page (inline SVG and CSS; no script, no network): the same sections
//! as the table, and charts — load time and space on disk in the summary; per phase the
//! throughput with its repetition spread, the latency percentile distribution, and a
//! throughput-and-latency timeline per row from the interval histograms. One colour per row
//! everywhere; repetitions are aggregated (medians, min–max whiskers, pooled histograms).

use std::fmt::Write;

use kvbench_model::result::{EngineResult, Interval, PhaseResult, RunResult, Status};

use crate::svg::{colour, dash, esc, marker, points, Frame, Marker, Scale};
use crate::{by_label, human_bytes, human_ns, human_rate, median, space_measured, wall_ns, Section};

/// One row label with its repetitions and colour.
struct Row<'a> {
    label: String,
    colour: String,
    /// The line's dash pattern past the base palette (see `svg::dash`).
    dash: Option<&'static str>,
    /// The shape of its curve's labelled points (see `svg::marker`).
    marker: Marker,
    /// The runtime its worker ran in (rust, go, python): how a crowded chart is split.
    runtime: String,
    reps: Vec<&'a EngineResult>,
}

impl Row<'_> {
    /// The repetitions' measured results of one phase.
    /// Measured phases: ok, or with a declared fault (its figures are the point).
    fn phases(&self, name: &str) -> Vec<&PhaseResult> {
        let measured = |p: &&PhaseResult| p.status == Status::Ok || (p.fault.is_some() && p.status == Status::Expected);
        self.reps.iter().filter_map(|e| e.phases.iter().filter(measured).find(|p| p.name == name)).collect()
    }
}

fn rows(run: &RunResult) -> Vec<Row<'_>> {
    by_label(run)
        .into_iter()
        .enumerate()
        .map(|(i, (label, reps))| Row {
            label,
            colour: colour(i),
            dash: dash(i),
            marker: marker(i),
            runtime: reps[0].runtime.clone(),
            reps,
        })
        .collect()
}

fn figure(id: &str, caption: &str, svg: &str, legend: &str) -> String {
    format!(
        "<figure class=\"chart\" data-chart=\"{}\"><figcaption>{}</figcaption>{svg}{legend}</figure>",
        esc(id),
        esc(caption)
    )
}

fn legend(rows: &[&Row], extra: &str) -> String {
    let mut s = String::from("<div class=\"legend\">");
    for r in rows {
        match r.dash {
            // A dashed row's key is a sample of its line with its marker.
            Some(d) => {
                let _ = write!(
                    s,
                    "<span><svg class=\"dash-key\" width=\"22\" height=\"10\"><line x1=\"0\" y1=\"5\" x2=\"22\" y2=\"5\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{d}\"/>{}</svg>{}</span>",
                    r.colour,
                    r.marker.draw(11.0, 5.0, &r.colour, ""),
                    esc(&r.label)
                );
            }
            None => {
                let _ = write!(s, "<span><i style=\"background:{}\"></i>{}</span>", r.colour, esc(&r.label));
            }
        }
    }
    s.push_str(extra);
    s.push_str("</div>");
    s
}

/// One bar of a horizontal bar chart: the median, the repetitions' range and values.
struct Bar {
    label: String,
    colour: String,
    values: Vec<f64>,
    /// Shown right of the bar; for a row with no value, says why.
    text: String,
}

fn hbar_chart(
    id: &str,
    caption: &str,
    axis: &str,
    fmt: fn(f64) -> String,
    bars: &[Bar],
    mark: Option<(f64, &str)>,
) -> String {
    let longest = bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(4) as f64;
    let f = Frame {
        w: 600.0,
        h: 40.0 + 22.0 * bars.len() as f64 + if mark.is_some() { 12.0 } else { 0.0 },
        left: (longest * 7.0 + 12.0).clamp(60.0, 200.0),
        right: 150.0,
        top: if mark.is_some() { 18.0 } else { 6.0 },
        bottom: 34.0,
    };
    let max = bars.iter().flat_map(|b| b.values.iter().copied()).chain(mark.map(|m| m.0)).fold(0.0, f64::max);
    let x = Scale::linear(0.0, max * 1.05, f.x0(), f.x1());
    let mut s = f.open(caption);
    let ticks: Vec<(f64, String)> =
        x.ticks().into_iter().map(|v| (v, if v == 0.0 { "0".into() } else { fmt(v) })).collect();
    f.x_axis(&mut s, &x, &ticks, axis);
    for (i, b) in bars.iter().enumerate() {
        let y = f.y1() + 22.0 * i as f64 + 4.0;
        let _ = write!(
            s,
            "<text class=\"row\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            f.x0() - 6.0,
            y + 12.0,
            esc(&b.label)
        );
        let mut tip = format!("{}: {}", b.label, b.text);
        if b.values.len() > 1 {
            tip.push_str(&format!(
                " — repetitions: {}",
                b.values.iter().map(|v| fmt(*v)).collect::<Vec<_>>().join(", ")
            ));
        }
        let _ = write!(s, "<g class=\"bar\"><title>{}</title>", esc(&tip));
        let end = if b.values.is_empty() {
            f.x0()
        } else {
            let m = x.map(median(b.values.clone()));
            let _ = write!(
                s,
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{}\"/>",
                f.x0(),
                (m - f.x0()).max(1.0),
                b.colour
            );
            if b.values.len() > 1 {
                let (lo, hi) = b.values.iter().fold((f64::MAX, 0.0f64), |(a, c), &v| (a.min(v), c.max(v)));
                let (l, h) = (x.map(lo), x.map(hi));
                let _ = write!(
                    s,
                    "<path class=\"whisker\" d=\"M{l:.1} {:.1}V{:.1}M{l:.1} {:.1}H{h:.1}M{h:.1} {:.1}V{:.1}\"/>",
                    y + 3.0,
                    y + 13.0,
                    y + 8.0,
                    y + 3.0,
                    y + 13.0
                );
                for v in &b.values {
                    let _ = write!(s, "<circle class=\"rep\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\"/>", x.map(*v), y + 8.0);
                }
                h.max(m)
            } else {
                m
            }
        };
        let _ =
            write!(s, "<text class=\"value\" x=\"{:.1}\" y=\"{:.1}\">{}</text></g>", end + 6.0, y + 12.0, esc(&b.text));
    }
    if let Some((v, label)) = mark {
        let px = x.map(v);
        let _ = write!(s, "<line class=\"mark\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\"/><text class=\"tick\" x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>", f.y1(), f.y0(), f.y1() - 5.0, esc(label));
    }
    s.push_str("</svg>");
    figure(id, caption, &s, "")
}

fn throughput_chart(rows: &[Row], phase: &str) -> String {
    if rows.iter().all(|r| r.phases(phase).is_empty()) {
        return String::new();
    }
    let bars: Vec<Bar> = rows
        .iter()
        .map(|r| {
            let v: Vec<f64> = r.phases(phase).iter().map(|p| p.ops_per_sec).collect();
            let text = match v.len() {
                0 => "not measured".into(),
                1 => format!("{} ops/s", human_rate(v[0])),
                n => format!("{} ops/s (median of {n})", human_rate(median(v.clone()))),
            };
            Bar { label: r.label.clone(), colour: r.colour.clone(), values: v, text }
        })
        .collect();
    hbar_chart(
        &format!("throughput-{phase}"),
        &format!("Throughput — {phase}"),
        "operations per second (wall clock)",
        human_rate,
        &bars,
        None,
    )
}

fn load_chart(rows: &[Row], load: &str) -> String {
    let bars: Vec<Bar> = rows
        .iter()
        .map(|r| {
            let ps = r.phases(load);
            let v: Vec<f64> = ps.iter().map(|p| wall_ns(p) as f64).collect();
            let text = if v.is_empty() {
                "not measured".into()
            } else {
                let rate = median(ps.iter().map(|p| p.ops_per_sec).collect());
                format!("{} ({}/s)", human_ns(median(v.clone())), human_rate(rate))
            };
            Bar { label: r.label.clone(), colour: r.colour.clone(), values: v, text }
        })
        .collect();
    hbar_chart("load-time", "Load time", "wall time of the load phase", human_ns, &bars, None)
}

fn space_chart(rows: &[Row], raw: u64) -> String {
    let bars: Vec<Bar> = rows
        .iter()
        .map(|r| {
            let ok: Vec<&&EngineResult> = r.reps.iter().filter(|e| space_measured(e)).collect();
            let v: Vec<f64> = ok.iter().map(|e| e.space_bytes as f64).collect();
            let text = if v.is_empty() {
                let server = r.reps.iter().any(|e| e.status == Status::Ok);
                if server {
                    "– not measured (server's own files)".into()
                } else {
                    "– failed".into()
                }
            } else {
                let amp = median(ok.iter().map(|e| e.space_amplification).collect());
                format!("{} ({amp:.2}× raw)", human_bytes(median(v.clone()) as u64))
            };
            Bar { label: r.label.clone(), colour: r.colour.clone(), values: v, text }
        })
        .collect();
    let fmt: fn(f64) -> String = |v| human_bytes(v as u64);
    hbar_chart("space", "Space on disk", "allocated bytes after close", fmt, &bars, Some((raw as f64, "raw data")))
}

/// Percentiles on the x axis as HdrHistogram plots them: position = log10(1 / (1 - q)).
const NINES: f64 = 5.0;

fn pct_label(share: f64) -> String {
    match share as i32 {
        0 => "0%".into(),
        1 => "90%".into(),
        n => format!("99.{}%", "9".repeat(n as usize - 2)).replace("99.%", "99%"),
    }
}

/// (percentile position, latency ns) points of one row's distribution, up to the last
/// percentile its samples support: n samples resolve 1 − 1/n (a p99.999 needs 100 000).
fn distribution(ps: &[&PhaseResult]) -> Vec<(f64, f64)> {
    if let Some(h) = crate::pooled_histogram(ps) {
        let last = supported_nines(h.len());
        let mut at: Vec<f64> =
            (0..=(NINES * 20.0) as u32).map(|i| i as f64 / 20.0).take_while(|u| *u < last - 1e-9).collect();
        // The curve ends exactly where the samples stop resolving.
        at.push(last);
        return at.into_iter().map(|u| (u, h.value_at_quantile(1.0 - 10f64.powf(-u)).max(1) as f64)).collect();
    }
    // No histogram: the summary's percentiles (medians over repetitions).
    let Some(l) = ps.first().and_then(|p| p.latency.as_ref()) else { return Vec::new() };
    let m = |f: fn(&kvbench_model::result::Latency) -> u64| {
        median(ps.iter().filter_map(|p| p.latency.as_ref().map(|l| f(l) as f64)).collect()).max(1.0)
    };
    let _ = l;
    vec![
        (0.0, m(|l| l.min_ns)),
        (0.301, m(|l| l.p50_ns)),
        (1.0, m(|l| l.p90_ns)),
        (1.301, m(|l| l.p95_ns)),
        (2.0, m(|l| l.p99_ns)),
        (3.0, m(|l| l.p999_ns)),
        (NINES, m(|l| l.max_ns)),
    ]
}

/// The farthest percentile position (log10 of 1/(1 − q)) that `count` samples resolve.
pub(crate) fn supported_nines(count: u64) -> f64 {
    (count.max(1) as f64).log10().min(NINES)
}

/// One row's curve: (percentile position, latency ns) points.
type Curve<'a> = (&'a Row<'a>, Vec<(f64, f64)>);

/// Most curves one percentile chart holds; past it look-alike lines tangle (docs/decisions.md).
const CURVES_PER_CHART: usize = 12;

/// The percentile chart of a phase: one chart, or past [`CURVES_PER_CHART`] rows one per runtime
/// (a runtime with more rows split by median latency), all on the same latency axis.
fn latency_charts(rows: &[Row], phase: &str, unit: &str) -> String {
    let lines: Vec<Curve> =
        rows.iter().map(|r| (r, distribution(&r.phases(phase)))).filter(|(_, d)| !d.is_empty()).collect();
    let range = lines
        .iter()
        .flat_map(|(_, d)| d.iter().map(|p| p.1))
        .fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    groups(lines).iter().map(|(name, g)| latency_chart(g, phase, unit, range, name)).collect()
}

/// The curves in groups of at most [`CURVES_PER_CHART`], each with its name ("" for one group).
fn groups(lines: Vec<Curve>) -> Vec<(String, Vec<Curve>)> {
    if lines.len() <= CURVES_PER_CHART {
        return vec![(String::new(), lines)];
    }
    let mut by: Vec<(String, Vec<Curve>)> = Vec::new();
    for l in lines {
        match by.iter_mut().find(|(rt, _)| *rt == l.0.runtime) {
            Some((_, g)) => g.push(l),
            None => by.push((l.0.runtime.clone(), vec![l])),
        }
    }
    let mut out = Vec::new();
    for (rt, mut g) in by {
        if g.len() <= CURVES_PER_CHART {
            out.push((format!("{rt} rows"), g));
            continue;
        }
        g.sort_by(|a, b| p50(&a.1).total_cmp(&p50(&b.1)));
        let size = g.len().div_ceil(g.len().div_ceil(CURVES_PER_CHART));
        let n = g.len();
        let mut first = 1;
        while !g.is_empty() {
            let rest = g.split_off(size.min(g.len()));
            let last = first + g.len() - 1;
            out.push((format!("{rt} rows, {first}–{last} of {n} by p50"), std::mem::replace(&mut g, rest)));
            first = last + 1;
        }
    }
    out
}

/// A curve's median latency (its point nearest p50).
fn p50(points: &[(f64, f64)]) -> f64 {
    points.iter().find(|(u, _)| *u >= 0.3).or(points.last()).map_or(0.0, |p| p.1)
}

fn latency_chart(lines: &[Curve], phase: &str, unit: &str, (lo, hi): (f64, f64), group: &str) -> String {
    let caption = match group {
        "" => format!("Latency by percentile — {phase}"),
        g => format!("Latency by percentile — {phase} — {g}"),
    };
    if lines.is_empty() {
        return String::new();
    }
    let f = Frame { w: 600.0, h: 330.0, left: 66.0, right: 30.0, top: 10.0, bottom: 40.0 };
    let x = Scale::linear(0.0, NINES, f.x0(), f.x1());
    let y = Scale::log_decades(lo, hi, f.y0(), f.y1());
    let mut s = f.open(&caption);
    let xt: Vec<(f64, String)> = (0..=NINES as i32).map(|u| (u as f64, pct_label(u as f64))).collect();
    f.x_axis(&mut s, &x, &xt, "percentile (log scale of 1/(1−p))");
    let yt: Vec<(f64, String)> = y.ticks().into_iter().map(|v| (v, human_ns(v))).collect();
    f.y_axis(&mut s, &y, &yt, &format!("latency per {unit} (log)"), false);
    for (r, d) in lines {
        curve(&mut s, r, d, &x, &y);
    }
    f.border(&mut s);
    s.push_str("</svg>");
    let who: Vec<&Row> = lines.iter().map(|(r, _)| *r).collect();
    let fig = figure(&format!("latency-{phase}"), &caption, &s, &legend(&who, ""));
    if group.is_empty() {
        fig
    } else {
        fig.replacen("<figure ", &format!("<figure data-group=\"{}\" ", esc(group)), 1)
    }
}

/// One row's percentile curve, its marked points (each decade, p50 and where it ends) with
/// their values on hover.
fn curve(out: &mut String, row: &Row, samples: &[(f64, f64)], x_scale: &Scale, y_scale: &Scale) {
    let pts: Vec<(f64, f64)> = samples.iter().map(|(u, v)| (x_scale.map(*u), y_scale.map(*v))).collect();
    let end = samples.last().map_or(0.0, |p| p.0);
    let title = if end < NINES - 1e-9 {
        format!("{} (the samples resolve up to p{})", row.label, crate::svg::num(100.0 * (1.0 - 10f64.powf(-end))))
    } else {
        row.label.clone()
    };
    let _ = write!(
        out,
        "<g class=\"series\"><title>{}</title><polyline fill=\"none\" stroke=\"{}\"{} points=\"{}\"/>",
        esc(&title),
        row.colour,
        row.dash.map(|dash| format!(" stroke-dasharray=\"{dash}\"")).unwrap_or_default(),
        points(&pts)
    );
    let marked = |u: f64| (u * 20.0).round() as i32 % 20 == 0 || (u - 0.301).abs() < 0.02 || u == end;
    for (u, v) in samples.iter().filter(|(u, _)| marked(*u)) {
        let name = if (*u - 0.301).abs() < 0.02 {
            "p50".to_string()
        } else if *u == end && (u * 20.0).round() as i32 % 20 != 0 {
            format!("p{}", crate::svg::num(100.0 * (1.0 - 10f64.powf(-u))))
        } else {
            pct_label(*u)
        };
        let tip = format!("<title>{} — {name}: {}</title>", esc(&row.label), human_ns(*v));
        out.push_str(&row.marker.draw(x_scale.map(*u), y_scale.map(*v), &row.colour, &tip));
    }
    out.push_str("</g>");
}

/// Throughput (ops/s) of each interval: its ops over its length.
fn interval_rates(iv: &[Interval], end_ms: u64) -> Vec<(f64, f64)> {
    iv.iter()
        .enumerate()
        .map(|(i, v)| {
            let next = iv.get(i + 1).map(|n| n.t_ms).unwrap_or(end_ms.max(v.t_ms + 1));
            let len = next.saturating_sub(v.t_ms).max(1) as f64 / 1000.0;
            (v.t_ms as f64 / 1000.0, v.ops as f64 / len)
        })
        .collect()
}

/// The repetition whose throughput is the median, among those with intervals.
fn median_rep<'a>(ps: &[&'a PhaseResult]) -> Option<&'a PhaseResult> {
    let mut with: Vec<&PhaseResult> = ps.iter().copied().filter(|p| !p.intervals.is_empty()).collect();
    with.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    with.get(with.len() / 2).copied()
}

fn timeline_panel(row: &Row, phase: &PhaseResult, reps: usize) -> String {
    let f = Frame { w: 400.0, h: 170.0, left: 58.0, right: 76.0, top: 20.0, bottom: 30.0 };
    let end_ms = wall_ns(phase) / 1_000_000;
    let rates = interval_rates(&phase.intervals, end_ms);
    let t_end = (end_ms as f64 / 1000.0).max(rates.last().map(|row| row.0 + 0.001).unwrap_or(1.0));
    let x = Scale::linear(0.0, t_end, f.x0(), f.x1());
    let y = Scale::linear(0.0, rates.iter().map(|row| row.1).fold(0.0, f64::max) * 1.1, f.y0(), f.y1());
    let lat: Vec<f64> =
        phase.intervals.iter().flat_map(|i| [i.p50_ns as f64, i.p99_ns as f64]).filter(|v| *v > 0.0).collect();
    let ly = Scale::log_decades(
        lat.iter().copied().fold(f64::MAX, f64::min),
        lat.iter().copied().fold(1.0, f64::max),
        f.y0(),
        f.y1(),
    );
    let title = if reps > 1 { format!("{} (median of {reps} repetitions)", row.label) } else { row.label.clone() };
    let mut s = f.open(&format!("timeline of {}", row.label));
    let _ = write!(s, "<text class=\"panel-title\" x=\"{:.1}\" y=\"13\">{}</text>", f.x0(), esc(&title));
    f.x_axis(&mut s, &x, &time_ticks(&x), "time into the phase");
    let yt: Vec<(f64, String)> = y.ticks().into_iter().map(|v| (v, human_rate(v))).collect();
    f.y_axis(&mut s, &y, &yt, "ops/s", false);
    let lt: Vec<(f64, String)> = ly.ticks().into_iter().map(|v| (v, human_ns(v))).collect();
    f.y_axis(&mut s, &ly, &lt, "p50 · p99 (log)", true);
    // A step line: each interval's rate held over its length.
    let mut step = vec![(x.map(0.0), y.map(0.0))];
    for (i, (t, v)) in rates.iter().enumerate() {
        let t1 = rates.get(i + 1).map(|n| n.0).unwrap_or(t_end);
        step.extend([(x.map(*t), y.map(*v)), (x.map(t1), y.map(*v))]);
    }
    step.push((x.map(t_end), y.map(0.0)));
    let _ = write!(s, "<polygon class=\"area\" fill=\"{}\" points=\"{}\"/>", row.colour, points(&step));
    let _ = write!(
        s,
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
        row.colour,
        points(&step[1..step.len() - 1])
    );
    for (cls, get) in [("p99", (|i: &Interval| i.p99_ns) as fn(&Interval) -> u64), ("p50", |i: &Interval| i.p50_ns)] {
        let mut pts = Vec::new();
        for (k, (i, (t, _))) in phase.intervals.iter().zip(&rates).enumerate() {
            let t1 = rates.get(k + 1).map(|n| n.0).unwrap_or(t_end);
            let v = ly.map(get(i).max(1) as f64);
            pts.extend([(x.map(*t), v), (x.map(t1), v)]);
        }
        let _ = write!(s, "<polyline class=\"{cls}\" fill=\"none\" points=\"{}\"/>", points(&pts));
    }
    for (i, (iv, (t, v))) in phase.intervals.iter().zip(&rates).enumerate() {
        let t1 = rates.get(i + 1).map(|n| n.0).unwrap_or(t_end);
        let _ = write!(
            s,
            "<rect class=\"hover\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{}, {t}–{t1} s: {} ops/s, p50 {}, p99 {}, max {}{}</title></rect>",
            x.map(*t), f.y1(), (x.map(t1) - x.map(*t)).max(1.0), f.y0() - f.y1(),
            esc(&row.label), human_rate(*v), human_ns(iv.p50_ns as f64), human_ns(iv.p99_ns as f64), human_ns(iv.max_ns as f64),
            if iv.errors > 0 { format!(", {} errors", iv.errors) } else { String::new() }
        );
    }
    if let Some(fault) = &phase.fault {
        fault_marker(&mut s, &f, &x, fault);
    }
    f.border(&mut s);
    s.push_str("</svg>");
    s
}

/// The kill of a phase's fault step: a vertical line at its time, and the recovery's end.
fn fault_marker(out: &mut String, frame: &Frame, x_scale: &Scale, fault: &kvbench_model::result::Fault) {
    let at = fault.killed_at_ms as f64 / 1000.0;
    let title = esc(&fault.describe());
    let _ = write!(
        out,
        "<line class=\"fault\" stroke=\"#c00\" stroke-dasharray=\"4 2\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\"><title>{title}</title></line>",
        x_scale.map(at),
        frame.y1(),
        frame.y0()
    );
    if let Some(ms) = fault.recovery_ms {
        let end = x_scale.map(at + ms as f64 / 1000.0);
        let _ = write!(
            out,
            "<line class=\"recovered\" stroke=\"#080\" stroke-dasharray=\"2 2\" x1=\"{end:.1}\" x2=\"{end:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"><title>{title}</title></line>",
            frame.y1(),
            frame.y0()
        );
    }
}

/// What the disk saw over the phase: device MB/s read and written per interval (left axis)
/// and the store's allocated bytes (right axis).
fn disk_panel(row: &Row, phase: &PhaseResult) -> Option<String> {
    let iv = &phase.disk.as_ref()?.intervals;
    if iv.is_empty() {
        return None;
    }
    let f = Frame { w: 400.0, h: 150.0, left: 58.0, right: 76.0, top: 20.0, bottom: 30.0 };
    // Each interval ends at its t_ms and began where the one before ended.
    let spans: Vec<(f64, f64, &kvbench_model::result::DiskInterval)> = iv
        .iter()
        .scan(0.0, |start, i| {
            let end = (i.t_ms as f64 / 1000.0).max(*start);
            let span = (*start, end, i);
            *start = end;
            Some(span)
        })
        .collect();
    let t_end = spans.last().map(|s| s.1).unwrap_or(1.0).max(0.001);
    let rate = |b: u64, a: f64, z: f64| b as f64 / (1 << 20) as f64 / (z - a).max(0.001);
    let top =
        spans.iter().map(|(a, z, i)| rate(i.read_bytes, *a, *z).max(rate(i.write_bytes, *a, *z))).fold(0.0, f64::max);
    let x = Scale::linear(0.0, t_end, f.x0(), f.x1());
    let y = Scale::linear(0.0, (top * 1.1).max(1.0), f.y0(), f.y1());
    let space_top = iv.iter().map(|i| i.space_bytes).max().unwrap_or(1).max(1) as f64;
    let sy = Scale::linear(0.0, space_top * 1.1, f.y0(), f.y1());
    let mut s = f.open(&format!("disk of {}", row.label));
    let _ = write!(s, "<text class=\"panel-title\" x=\"{:.1}\" y=\"13\">{} — disk</text>", f.x0(), esc(&row.label));
    f.x_axis(&mut s, &x, &time_ticks(&x), "time into the phase");
    let yt: Vec<(f64, String)> = y.ticks().into_iter().map(|v| (v, crate::svg::num(v))).collect();
    f.y_axis(&mut s, &y, &yt, "MiB/s read · written", false);
    let st: Vec<(f64, String)> = sy.ticks().into_iter().map(|v| (v, human_bytes(v as u64))).collect();
    f.y_axis(&mut s, &sy, &st, "space", true);
    for (cls, get) in [
        ("disk-read", (|i: &kvbench_model::result::DiskInterval| i.read_bytes) as fn(&_) -> u64),
        ("disk-write", |i| i.write_bytes),
    ] {
        let pts: Vec<(f64, f64)> = spans
            .iter()
            .flat_map(|(a, z, i)| [(x.map(*a), y.map(rate(get(i), *a, *z))), (x.map(*z), y.map(rate(get(i), *a, *z)))])
            .collect();
        let _ = write!(s, "<polyline class=\"{cls}\" fill=\"none\" points=\"{}\"/>", points(&pts));
    }
    let space: Vec<(f64, f64)> = spans.iter().map(|(_, z, i)| (x.map(*z), sy.map(i.space_bytes as f64))).collect();
    let _ =
        write!(s, "<polyline class=\"space\" fill=\"none\" stroke=\"{}\" points=\"{}\"/>", row.colour, points(&space));
    f.border(&mut s);
    s.push_str("</svg>");
    Some(s)
}

/// Ticks of a time axis in seconds, labelled in ms when the axis spans less than two seconds
/// (a short phase's ticks would otherwise all round to "0s").
fn time_ticks(x_scale: &Scale) -> Vec<(f64, String)> {
    let ms = x_scale.hi - x_scale.lo < 2.0;
    x_scale
        .ticks()
        .into_iter()
        .map(|v| {
            (v, if ms { format!("{} ms", crate::svg::num(v * 1000.0)) } else { format!("{}s", crate::svg::num(v)) })
        })
        .collect()
}

fn timelines(rows: &[Row], phase: &str) -> String {
    let caption = format!("Throughput and latency over time — {phase}");
    let mut panels = String::new();
    let mut short = Vec::new();
    for r in rows {
        let ps = r.phases(phase);
        match median_rep(&ps) {
            // One interval is one number: a flat line would only look like a timeline.
            Some(p) if p.intervals.len() < 2 => short.push(format!("{} ({})", r.label, human_ns(wall_ns(p) as f64))),
            Some(p) => {
                panels.push_str(&timeline_panel(r, p, ps.len()));
                panels.push_str(&disk_panel(r, p).unwrap_or_default());
            }
            None => {}
        }
    }
    let short = if short.is_empty() {
        String::new()
    } else {
        format!(
            "<p class=\"note\" data-chart=\"timeline-short-{}\">No timeline for rows whose phase fit in one interval: {}.</p>",
            esc(phase),
            esc(&short.join(", "))
        )
    };
    if panels.is_empty() {
        let measured = rows.iter().any(|r| !r.phases(phase).is_empty());
        let why = if measured && !short.is_empty() {
            return short;
        } else if measured {
            "the result carries no interval histograms"
        } else {
            "no row measured this phase"
        };
        return format!("<p class=\"note\" data-chart=\"timeline-{}\">No timeline: {why}.</p>", esc(phase));
    }
    let key = "<div class=\"legend\"><span><i class=\"area-key\"></i>ops/s per interval (left axis)</span><span><i class=\"p50-key\"></i>p50</span><span><i class=\"p99-key\"></i>p99 (right axis, log)</span><span><i class=\"disk-read-key\"></i>device MiB/s read</span><span><i class=\"disk-write-key\"></i>written</span><span>line in the row's colour: the store's space</span></div>";
    figure(&format!("timeline-{phase}"), &caption, &format!("<div class=\"panels\">{panels}</div>"), key) + &short
}

fn table(section: &Section) -> String {
    let mut t = String::from("<table><thead><tr>");
    for h in &section.headers {
        let _ = write!(t, "<th>{}</th>", esc(h));
    }
    t.push_str("</tr></thead><tbody>");
    for (i, row) in section.rows.iter().enumerate() {
        t.push_str("<tr>");
        for (c, cell) in row.iter().enumerate() {
            let best = section.best.get(c).copied().flatten() == Some(i);
            // Words read left to right; numbers line up on the right.
            let text = cell.chars().next().is_some_and(|ch| ch.is_alphabetic());
            let class = match (best, text) {
                (true, _) => " class=\"best\"",
                (false, true) => " class=\"text\"",
                _ => "",
            };
            let _ = write!(t, "<td{class}>{}</td>", esc(cell));
        }
        t.push_str("</tr>");
    }
    t.push_str("</tbody></table>");
    t
}

fn header(run: &RunResult) -> String {
    let env = &run.environment;
    let mut h = format!(
        "<h1>kvbench — {}</h1><p class=\"meta\">run {} · kvbench {} · {} ({} cores, {}) · {} {} · data on {} ({}) · {} records, {} of keys+values · sync {}</p>",
        esc(&run.scenario), esc(&run.run_id), esc(&run.kvbench_version), esc(&env.cpu_model), env.cores, human_bytes(env.memory_bytes),
        esc(&env.os), esc(&env.kernel), esc(&env.data_dir), esc(&env.filesystem), run.plan.unique_records, human_bytes(run.plan.raw_bytes), esc(&run.sync)
    );
    if !run.intent.is_empty() {
        let _ = write!(h, "<p class=\"intent\">{}</p>", esc(&run.intent));
    }
    let _ = write!(h, "<p class=\"regime\">{}</p>", esc(&crate::regime(run)));
    if let Some(t) = &run.plan.trace {
        let _ = write!(h, "<p class=\"regime\">{}</p>", esc(&crate::trace_line(t)));
        if let Some(p) = &t.profile {
            let _ = write!(
                h,
                "<details class=\"trace\"><summary>The stream's profile</summary><pre>{}</pre></details>",
                esc(&p.text())
            );
        }
    }
    for w in &run.warnings {
        let _ = write!(h, "<p class=\"warn\">Warning: {}</p>", esc(w));
    }
    h
}

pub fn page(run: &RunResult, sections: &[Section]) -> String {
    let rows = rows(run);
    let phases = crate::phase_names(run);
    let mut body = header(run);
    let all: Vec<&Row> = rows.iter().collect();
    body.push_str(&legend(&all, "").replacen("class=\"legend\"", "class=\"legend top\"", 1));
    for s in sections {
        let id: String =
            s.title.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let _ = write!(body, "<section id=\"{id}\"><h2>{}</h2><p class=\"note\">{}</p>", esc(&s.title), esc(&s.note));
        let mut charts = String::new();
        if s.title == "Summary" {
            if let Some((load, _)) = phases.iter().find(|(_, k)| k == "load") {
                charts.push_str(&load_chart(&rows, load));
            }
            charts.push_str(&space_chart(&rows, run.plan.raw_bytes));
        } else if let Some(name) = s.title.strip_prefix("Phase ").filter(|n| phases.iter().any(|(p, _)| p == n)) {
            let unit = run
                .engines
                .iter()
                .flat_map(|e| &e.phases)
                .find(|p| p.name == name)
                .map(|p| p.unit.clone())
                .unwrap_or_default();
            charts.push_str(&throughput_chart(&rows, name));
            charts.push_str(&latency_charts(&rows, name, if unit.is_empty() { "op" } else { &unit }));
        }
        if !charts.is_empty() {
            let _ = write!(body, "<div class=\"charts\">{charts}</div>");
        }
        body.push_str(&table(s));
        if let Some(name) = s.title.strip_prefix("Phase ").filter(|n| phases.iter().any(|(p, _)| p == n)) {
            body.push_str(&timelines(&rows, name));
        }
        body.push_str("</section>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>kvbench — {}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        esc(&run.scenario)
    )
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em auto;max-width:1300px;padding:0 1.5em;color:#222;background:#fff}\
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin:1.6em 0 .2em;border-bottom:1px solid #ddd;padding-bottom:.2em}\
table{border-collapse:collapse;margin:.5em 0 1em;font-size:13px}td,th{border:1px solid #d5d5d5;padding:.2em .55em;text-align:right}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}td.best{font-weight:bold;background:#e3f2e1}td.text{text-align:left}\
.warn{color:#b71c1c;font-weight:bold}.note,.meta,.intent{color:#555;font-size:13px;margin:.2em 0}\
.charts{display:flex;flex-wrap:wrap;gap:.5em 2em;align-items:flex-start}\
figure.chart{margin:.4em 0}figcaption{font-weight:600;font-size:13px;margin-bottom:.2em}\
svg text{font-size:11px;fill:#333}svg .axis-label{font-size:11px;fill:#555}svg .panel-title{font-weight:600}\
svg .grid{stroke:#e6e6e6}svg .plot{fill:none;stroke:#bbb}svg .whisker{stroke:#222;fill:none}svg .rep{fill:#222}\
svg .mark{stroke:#888;stroke-dasharray:4 3}svg .series polyline{stroke-width:2}svg .series:hover polyline{stroke-width:4}\
svg .bar:hover rect{opacity:.8}svg .area{opacity:.18}svg .p99{stroke:#222;stroke-dasharray:4 2}svg .p50{stroke:#777}svg .disk-read{stroke:#2a7}svg .disk-write{stroke:#c52}svg .space{stroke-width:1.5;stroke-dasharray:1 2}\
svg .hover{fill:transparent}svg .hover:hover{fill:rgba(0,0,0,.06)}\
.panels{display:flex;flex-wrap:wrap;gap:.3em 1em}\
.legend{display:flex;flex-wrap:wrap;gap:.2em 1em;font-size:12px;margin:.2em 0}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;border-radius:2px}\
.legend .area-key{background:#4e79a7;opacity:.5}.legend .p50-key{height:2px;background:#777;vertical-align:3px}.legend .p99-key{height:0;border-top:2px dashed #222;vertical-align:3px;border-radius:0}.legend .disk-read-key{height:2px;background:#2a7;vertical-align:3px}.legend .disk-write-key{height:2px;background:#c52;vertical-align:3px}\
.legend.top{margin:.6em 0}";
