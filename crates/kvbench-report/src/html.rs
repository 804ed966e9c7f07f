//! A self-contained HTML page: the same sections as the table, plus one bar chart of ops/s
//! per phase (inline SVG, no scripts, no network).

use kvbench_core::result::{RunResult, Status};

use crate::{human_rate, Section};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn chart(r: &RunResult, phase: &str) -> String {
    let bars: Vec<(String, f64)> = r
        .engines
        .iter()
        .filter_map(|e| {
            let p = e.phases.iter().find(|p| p.name == phase && p.status == Status::Ok)?;
            Some((e.label.clone(), p.ops_per_sec))
        })
        .collect();
    if bars.is_empty() {
        return String::new();
    }
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9);
    let (row, label_w, bar_w) = (22.0, 180.0, 420.0);
    let h = row * bars.len() as f64 + 10.0;
    let mut svg = format!(
        "<svg class=\"chart\" width=\"{}\" height=\"{h}\" role=\"img\" aria-label=\"ops/s for {}\">",
        label_w + bar_w + 90.0,
        esc(phase)
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let w = (v / max * bar_w).max(1.0);
        svg.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"/><text x=\"{}\" y=\"{}\">{} ops/s</text>",
            label_w - 6.0,
            y + 15.0,
            esc(label),
            row - 6.0,
            label_w + w + 6.0,
            y + 15.0,
            human_rate(*v)
        ));
    }
    svg.push_str("</svg>");
    svg
}

pub fn page(r: &RunResult, sections: &[Section]) -> String {
    let mut body = String::new();
    body.push_str(&format!(
        "<h1>kvbench — {}</h1><p class=\"meta\">run {} · kvbench {} · {} ({} cores) · {} {} · data on {} ({})</p>",
        esc(&r.scenario),
        esc(&r.run_id),
        esc(&r.kvbench_version),
        esc(&r.environment.cpu_model),
        r.environment.cores,
        esc(&r.environment.os),
        esc(&r.environment.kernel),
        esc(&r.environment.data_dir),
        esc(&r.environment.filesystem)
    ));
    if !r.intent.is_empty() {
        body.push_str(&format!("<p class=\"intent\">{}</p>", esc(&r.intent)));
    }
    for w in &r.warnings {
        body.push_str(&format!("<p class=\"warn\">Warning: {}</p>", esc(w)));
    }
    for s in sections {
        body.push_str(&format!("<h2>{}</h2><p class=\"note\">{}</p>", esc(&s.title), esc(&s.note)));
        if let Some(phase) = s.title.strip_prefix("Phase ") {
            body.push_str(&chart(r, phase));
        }
        body.push_str("<table><thead><tr>");
        for h in &s.headers {
            body.push_str(&format!("<th>{}</th>", esc(h)));
        }
        body.push_str("</tr></thead><tbody>");
        for (i, row) in s.rows.iter().enumerate() {
            body.push_str("<tr>");
            for (c, cell) in row.iter().enumerate() {
                let best = s.best.get(c).copied().flatten() == Some(i);
                body.push_str(&format!("<td{}>{}</td>", if best { " class=\"best\"" } else { "" }, esc(cell)));
            }
            body.push_str("</tr>");
        }
        body.push_str("</tbody></table>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvbench — {}</title><style>\
body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin:.5em 0 1.5em}}\
td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:right}}td:first-child,th:first-child{{text-align:left}}\
td.best{{font-weight:bold;background:#e8f5e9}}.warn{{color:#b71c1c;font-weight:bold}}.note,.meta{{color:#555}}\
.chart rect{{fill:#4a7bd0}}.chart text{{font-size:12px}}</style></head><body>{body}</body></html>\n",
        esc(&r.scenario)
    )
}
