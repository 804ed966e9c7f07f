//! The history as a static, offline page (`kvbench dashboard -o DIR`): per row and phase,
//! throughput, p99, device bytes per op and space over the runs, steps marked where the level
//! changed, and each engine or kvbench version change annotated. No script, no network: SVG
//! with `<title>` hovers, like the HTML report.

use std::fmt::Write;

use crate::svg::{esc, num, Frame, Scale};
use crate::trend::{Point, Series, Step};

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:24px;color:#222}h2{margin:28px 0 4px}\
.charts{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}figcaption{font-weight:600}\
.grid{stroke:#e4e4e4}.plot{fill:none;stroke:#999}.tick{font-size:10px;fill:#555}\
.axis-label{font-size:11px;fill:#333}.line{fill:none;stroke:#4e79a7;stroke-width:1.8}\
.dot{fill:#4e79a7}.step{stroke:#e15759;stroke-dasharray:4 3}.steplabel{font-size:10px;fill:#e15759}\
.version{stroke:#59a14f;stroke-dasharray:1 3}.vlabel{font-size:9px;fill:#59a14f}\
p.meta{color:#555;margin:2px 0}";

/// One metric of a series: its name, unit formatter and value per point.
struct Metric {
    name: &'static str,
    id: &'static str,
    value: fn(&Point) -> Option<f64>,
    fmt: fn(f64) -> String,
}

const METRICS: [Metric; 5] = [
    Metric { name: "throughput (ops/s)", id: "throughput", value: |p| Some(p.ops_per_sec), fmt: crate::human_rate },
    Metric { name: "p99 latency", id: "p99", value: |p| p.p99_ns, fmt: crate::human_ns },
    Metric { name: "device bytes read per op", id: "read", value: |p| p.read_per_op, fmt: bytes },
    Metric { name: "device bytes written per op", id: "write", value: |p| p.write_per_op, fmt: bytes },
    Metric { name: "space", id: "space", value: |p| Some(p.space_bytes as f64).filter(|v| *v > 0.0), fmt: bytes },
];

fn bytes(v: f64) -> String {
    crate::human_bytes(v as u64)
}

/// The page for every series with its steps.
pub fn dashboard(series: &[(Series, Vec<Step>)]) -> String {
    let mut out = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvbench history</title>\
         <style>{STYLE}</style></head><body><h1>kvbench history</h1><p class=\"meta\">{} series; \
         red dashed lines: steps (a lasting change of level, confirmed by three runs); green dotted: a new engine or kvbench version, or a new regime (the data against memory).</p>",
        series.len()
    );
    for (s, steps) in series {
        let _ = write!(out, "<section data-series=\"{}\"><h2>{}</h2>", esc(&s.title()), esc(&s.title()));
        out.push_str(&regimes(s));
        for st in steps {
            let p = &s.points[st.at];
            let _ = write!(
                out,
                "<p class=\"meta\">step at run {} ({}): ops/s {} → {} ({:+.0}%)</p>",
                esc(&p.run_id),
                esc(&p.version),
                crate::human_rate(st.before),
                crate::human_rate(st.after),
                (st.ratio() - 1.0) * 100.0
            );
        }
        out.push_str("<div class=\"charts\">");
        for m in &METRICS {
            out.push_str(&chart(s, steps, m));
        }
        out.push_str("</div></section>");
    }
    out.push_str("</body></html>\n");
    out
}

/// The series' regime, or each regime it went through with the run that began it: a level
/// measured with the data in memory is not comparable with one measured beyond it.
fn regimes(s: &Series) -> String {
    let mut out = String::new();
    let mut last: Option<&str> = None;
    for p in &s.points {
        let r = if p.regime.is_empty() { "not recorded" } else { p.regime.as_str() };
        if last == Some(r) {
            continue;
        }
        let from = if last.is_some() { format!(" from run {}", esc(&p.run_id)) } else { String::new() };
        let _ = write!(out, "<p class=\"meta regime\">regime{from}: {}</p>", esc(r));
        last = Some(r);
    }
    out
}

/// One metric over the runs, or nothing when no run measured it.
fn chart(s: &Series, steps: &[Step], m: &Metric) -> String {
    let vals: Vec<(usize, f64)> =
        s.points.iter().enumerate().filter_map(|(i, p)| (m.value)(p).map(|v| (i, v))).collect();
    if vals.is_empty() {
        return String::new();
    }
    let f = Frame { w: 420.0, h: 220.0, left: 64.0, right: 12.0, top: 12.0, bottom: 36.0 };
    let n = s.points.len().max(2) as f64 - 1.0;
    let x = Scale::linear(0.0, n, f.x0(), f.x1());
    let hi = vals.iter().map(|v| v.1).fold(0.0, f64::max) * 1.1;
    let y = Scale::linear(0.0, hi, f.y0(), f.y1());
    let mut svg = f.open(&format!("{} {}", s.title(), m.name));
    let xt: Vec<(f64, String)> =
        x.ticks().into_iter().filter(|t| t.fract() == 0.0).map(|t| (t, num(t + 1.0))).collect();
    f.x_axis(&mut svg, &x, &xt, "run (oldest first)");
    let yt: Vec<(f64, String)> = y.ticks().into_iter().map(|t| (t, (m.fmt)(t))).collect();
    f.y_axis(&mut svg, &y, &yt, m.name, false);
    f.border(&mut svg);
    annotate(&mut svg, s, steps, &x, &f);
    let pts: Vec<(f64, f64)> = vals.iter().map(|&(i, v)| (x.map(i as f64), y.map(v))).collect();
    let _ = write!(svg, "<polyline class=\"line\" points=\"{}\"/>", crate::svg::points(&pts));
    for (&(i, v), (px, py)) in vals.iter().zip(&pts) {
        let p = &s.points[i];
        let _ = write!(
            svg,
            "<circle class=\"dot\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3\"><title>{}: {} ({} {})</title></circle>",
            esc(&p.run_id),
            (m.fmt)(v),
            esc(&s.label),
            esc(&p.version)
        );
    }
    svg.push_str("</svg>");
    format!("<figure data-chart=\"{}\"><figcaption>{}</figcaption>{svg}</figure>", m.id, esc(m.name))
}

/// Steps (red) and version changes (green) as vertical lines.
fn annotate(svg: &mut String, s: &Series, steps: &[Step], x: &Scale, f: &Frame) {
    for st in steps {
        let px = x.map(st.at as f64 - 0.5);
        let _ = write!(
            svg,
            "<line class=\"step\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\"/><text class=\"steplabel\" x=\"{:.1}\" y=\"{:.1}\">ops/s {:+.0}%</text>",
            f.y1(),
            f.y0(),
            px + 3.0,
            f.y1() + 10.0,
            (st.ratio() - 1.0) * 100.0
        );
    }
    for (i, w) in s.points.windows(2).enumerate() {
        let (what, label) = if w[0].version != w[1].version {
            (w[1].version.clone(), crate::short_version(&w[1].version))
        } else if w[0].kvbench_version != w[1].kvbench_version {
            let v = format!("kvbench {}", w[1].kvbench_version);
            (v.clone(), crate::short_version(&v))
        } else if w[0].regime != w[1].regime {
            (format!("regime: {}", w[1].regime), "regime".to_string())
        } else {
            continue;
        };
        let px = x.map(i as f64 + 0.5);
        let _ = write!(
            svg,
            "<line class=\"version\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\"><title>{}</title></line><text class=\"vlabel\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            f.y1(),
            f.y0(),
            esc(&what),
            px + 2.0,
            f.y0() - 4.0,
            esc(&label)
        );
    }
}
