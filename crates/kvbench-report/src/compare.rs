//! Two runs side by side with a verdict per row and phase, from the repetitions: Welch's t-test
//! on the per-repetition ops/s (two-sided, 5%), the ratio of means B/A with one standard error
//! propagated from both sides. One repetition on either side gives no verdict, and says so.

use std::collections::BTreeMap;

use kvbench_core::result::{EngineResult, PhaseResult, RunResult, Status};
use serde_json::json;

use crate::{by_label, human_ns, human_rate, median, phase_names, Section};

/// Significance level of the verdict.
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// B's throughput is `factor` ± `err` times A's.
    Faster {
        factor: f64,
        err: f64,
        p: f64,
    },
    /// A's throughput is `factor` ± `err` times B's.
    Slower {
        factor: f64,
        err: f64,
        p: f64,
    },
    NoDifference {
        p: f64,
    },
    /// Why no test was possible (one repetition, a failed phase).
    NoVerdict(String),
}

impl Verdict {
    pub fn key(&self) -> &'static str {
        match self {
            Verdict::Faster { .. } => "faster",
            Verdict::Slower { .. } => "slower",
            Verdict::NoDifference { .. } => "no significant difference",
            Verdict::NoVerdict(_) => "no verdict",
        }
    }

    pub fn text(&self) -> String {
        match self {
            Verdict::Faster { factor, err, .. } => format!("{factor:.2} ± {err:.2}× faster"),
            Verdict::Slower { factor, err, .. } => format!("{factor:.2} ± {err:.2}× slower"),
            Verdict::NoDifference { .. } => "no significant difference".into(),
            Verdict::NoVerdict(why) => format!("no verdict: {why}"),
        }
    }
}

/// One row label in one phase of both runs.
#[derive(Debug, Clone)]
pub struct Compared {
    pub label: String,
    pub phase: String,
    pub kind: String,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    /// Median p99 of each side (ns), where measured.
    pub a_p99: Option<f64>,
    pub b_p99: Option<f64>,
    pub verdict: Verdict,
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = if x.len() > 1 { x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, v)
}

/// The verdict for per-repetition throughputs `a` and `b` (higher is faster).
pub fn verdict(a: &[f64], b: &[f64]) -> Verdict {
    if a.is_empty() || b.is_empty() {
        return Verdict::NoVerdict("not measured in both runs".into());
    }
    if a.len() < 2 || b.len() < 2 {
        return Verdict::NoVerdict(format!(
            "{} and {} repetitions; run both with --repetitions 3 or more",
            a.len(),
            b.len()
        ));
    }
    let ((ma, va), (mb, vb)) = (mean_var(a), mean_var(b));
    if ma <= 0.0 || mb <= 0.0 {
        return Verdict::NoVerdict("zero throughput".into());
    }
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let se = (sa + sb).sqrt();
    let p = if se == 0.0 {
        if ma == mb {
            1.0
        } else {
            0.0
        }
    } else {
        let t = (mb - ma) / se;
        let df = (sa + sb).powi(2) / (sa * sa / (a.len() as f64 - 1.0) + sb * sb / (b.len() as f64 - 1.0));
        2.0 * (1.0 - distrs::StudentsT::cdf(t.abs(), df))
    };
    // Relative standard errors add in quadrature for a ratio.
    let rel = (sa / (ma * ma) + sb / (mb * mb)).sqrt();
    if p >= ALPHA {
        Verdict::NoDifference { p }
    } else if mb > ma {
        Verdict::Faster { factor: mb / ma, err: mb / ma * rel, p }
    } else {
        Verdict::Slower { factor: ma / mb, err: ma / mb * rel, p }
    }
}

fn rates(reps: &[&EngineResult], name: &str) -> (Vec<f64>, Option<f64>) {
    let ok: Vec<&PhaseResult> =
        reps.iter().filter_map(|e| e.phases.iter().find(|p| p.name == name && p.status == Status::Ok)).collect();
    let p99: Vec<f64> = ok.iter().filter_map(|p| p.latency.as_ref().map(|l| l.p99_ns as f64)).collect();
    (ok.iter().map(|p| p.ops_per_sec).collect(), (!p99.is_empty()).then(|| median(p99)))
}

/// Every row label and phase present in both runs, with its verdict.
pub fn compared(a: &RunResult, b: &RunResult) -> Vec<Compared> {
    let (la, lb) = (by_label(a), by_label(b));
    let mut out = Vec::new();
    for (name, kind) in phase_names(a).into_iter().filter(|(_, k)| k != "settle") {
        for (label, ra) in &la {
            let Some((_, rb)) = lb.iter().find(|(l, _)| l == label) else { continue };
            let has = |reps: &[&EngineResult]| reps.iter().any(|e| e.phases.iter().any(|p| p.name == name));
            if !has(ra) || !has(rb) {
                continue;
            }
            let ((va, a_p99), (vb, b_p99)) = (rates(ra, &name), rates(rb, &name));
            let verdict = verdict(&va, &vb);
            out.push(Compared {
                label: label.clone(),
                phase: name.clone(),
                kind: kind.clone(),
                a: va,
                b: vb,
                a_p99,
                b_p99,
                verdict,
            });
        }
    }
    out
}

/// Rows whose B is slower than A by more than `pct` percent (a significant verdict only).
pub fn regressions(rows: &[Compared], pct: f64) -> Vec<&Compared> {
    rows.iter()
        .filter(|c| matches!(c.verdict, Verdict::Slower { factor, .. } if 1.0 / factor < 1.0 - pct / 100.0))
        .collect()
}

/// Every setting that differs between the runs: machine, plan, durability, versions, and per
/// phase threads, batch, cache and unit. Rows that differ alike are named together.
pub fn differences(a: &RunResult, b: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    let mut run = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what}: A {x}, B {y}"));
        }
    };
    let (ea, eb) = (&a.environment, &b.environment);
    run("machine", ea.hostname.clone(), eb.hostname.clone());
    run("cpu", format!("{} ({} cores)", ea.cpu_model, ea.cores), format!("{} ({} cores)", eb.cpu_model, eb.cores));
    run("memory", crate::human_bytes(ea.memory_bytes), crate::human_bytes(eb.memory_bytes));
    run("os", format!("{} {}", ea.os, ea.kernel), format!("{} {}", eb.os, eb.kernel));
    run("file system", format!("{} ({})", ea.filesystem, ea.data_dir), format!("{} ({})", eb.filesystem, eb.data_dir));
    run("build", ea.build.clone(), eb.build.clone());
    run("kvbench", a.kvbench_version.clone(), b.kvbench_version.clone());
    run("scenario", a.scenario.clone(), b.scenario.clone());
    run("sync", a.sync.clone(), b.sync.clone());
    run("records", a.plan.unique_records.to_string(), b.plan.unique_records.to_string());
    run("seed", a.plan.seed.to_string(), b.plan.seed.to_string());
    run("plan", a.plan.hash.clone(), b.plan.hash.clone());
    run("repetitions", reps(a).to_string(), reps(b).to_string());
    let labels = |r: &RunResult| by_label(r).into_iter().map(|(l, _)| l).collect::<Vec<_>>();
    let (la, lb) = (labels(a), labels(b));
    let only = |x: &[String], y: &[String]| x.iter().filter(|l| !y.contains(l)).cloned().collect::<Vec<_>>().join(", ");
    for (side, list) in [("A", only(&la, &lb)), ("B", only(&lb, &la))] {
        if !list.is_empty() {
            out.push(format!("rows only in {side}: {list}"));
        }
    }
    out.extend(row_differences(a, b));
    out
}

fn reps(r: &RunResult) -> usize {
    by_label(r).iter().map(|(_, v)| v.len()).max().unwrap_or(0)
}

/// Per-row differences, grouped: (what, A value, B value) -> labels.
fn row_differences(a: &RunResult, b: &RunResult) -> Vec<String> {
    let mut groups: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    let lb = by_label(b);
    let common: Vec<String> =
        by_label(a).iter().filter(|(l, _)| lb.iter().any(|(m, _)| m == l)).map(|(l, _)| l.clone()).collect();
    for label in &common {
        let (Some(x), Some(y)) =
            (a.engines.iter().find(|e| &e.label == label), b.engines.iter().find(|e| &e.label == label))
        else {
            continue;
        };
        let mut add = |what: String, u: String, v: String| {
            if u != v {
                groups.entry((what, u, v)).or_default().push(label.clone());
            }
        };
        add("version".into(), x.version.clone(), y.version.clone());
        add("sync".into(), x.sync.clone(), y.sync.clone());
        add("open mode".into(), x.open_mode.clone(), y.open_mode.clone());
        for k in x.settings.keys().chain(y.settings.keys()).collect::<std::collections::BTreeSet<_>>() {
            if k == "url" || k.ends_with("dir") || k.ends_with("socket") {
                continue; // where a server listens differs every run
            }
            let g = |e: &EngineResult| e.settings.get(k).cloned().unwrap_or_else(|| "-".into());
            add(format!("setting {k}"), g(x), g(y));
        }
        for k in x.options.keys().chain(y.options.keys()).collect::<std::collections::BTreeSet<_>>() {
            let g = |e: &EngineResult| e.options.get(k).map(|v| v.to_string()).unwrap_or_else(|| "-".into());
            add(format!("option {k}"), g(x), g(y));
        }
        for p in &x.phases {
            let Some(q) = y.phases.iter().find(|q| q.name == p.name) else { continue };
            let n = &p.name;
            add(format!("{n} threads"), p.threads.to_string(), q.threads.to_string());
            add(format!("{n} batch"), p.batch.to_string(), q.batch.to_string());
            add(format!("{n} cache"), p.cache.clone(), q.cache.clone());
            add(format!("{n} unit"), p.unit.clone(), q.unit.clone());
        }
    }
    groups
        .into_iter()
        .map(|((what, u, v), labels)| {
            let who = if labels.len() == common.len() { "every row".to_string() } else { labels.join(", ") };
            format!("{what}: A {}, B {} ({who})", crate::short_version(&u), crate::short_version(&v))
        })
        .collect()
}

fn rate_cell(v: &[f64]) -> String {
    match v.len() {
        0 => "-".into(),
        1 => human_rate(v[0]),
        n => {
            let m = median(v.to_vec());
            let (lo, hi) = v.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
            format!("{} ±{:.0}% (n={n})", human_rate(m), (hi - lo) / m.max(1e-9) * 50.0)
        }
    }
}

/// The comparison as a preamble and one section per phase (for the table and Markdown).
pub fn compare(a: &RunResult, b: &RunResult) -> (Vec<String>, Vec<Section>) {
    let mut pre = vec![
        format!("kvbench compare — A: {} ({}) — B: {} ({})", a.run_id, a.scenario, b.run_id, b.scenario),
        format!(
            "verdict: Welch's t-test on the per-repetition ops/s at {:.0}%; factor = ratio of means ± one standard error",
            ALPHA * 100.0
        ),
    ];
    let diffs = differences(a, b);
    if diffs.is_empty() {
        pre.push("settings: the same in both runs".into());
    } else {
        pre.push("settings that differ:".into());
        pre.extend(diffs.iter().map(|d| format!("  {d}")));
    }
    if a.plan.hash != b.plan.hash {
        pre.push("WARNING: the runs used different plans (data or operations differ): compare with care".into());
    }
    let rows = compared(a, b);
    let mut sections: Vec<Section> = Vec::new();
    for c in &rows {
        let title = format!("Phase {}", c.phase);
        if sections.last().is_none_or(|s| s.title != title) {
            sections.push(Section::new(
                title,
                format!("{}; ops/s over the wall time, median of repetitions; verdict for B against A", c.kind),
                &[
                    ("engine", 0),
                    ("A ops/s", 1),
                    ("B ops/s", 1),
                    ("B/A", 2),
                    ("verdict", 0),
                    ("A p99", 3),
                    ("B p99", 3),
                ],
            ));
        }
        let s = sections.last_mut().expect("pushed above");
        let ratio = if c.a.is_empty() || c.b.is_empty() {
            "-".into()
        } else {
            format!("{:.2}x", median(c.b.clone()) / median(c.a.clone()).max(1e-9))
        };
        let p99 = |v: Option<f64>| v.map(human_ns).unwrap_or_default();
        s.rows.push(vec![
            c.label.clone(),
            rate_cell(&c.a),
            rate_cell(&c.b),
            ratio,
            c.verdict.text(),
            p99(c.a_p99),
            p99(c.b_p99),
        ]);
    }
    (pre, sections)
}

/// The comparison as JSON: settings that differ, and per row and phase the figures and a
/// `verdict` (`faster`, `slower`, `no significant difference`, `no verdict`).
pub fn compare_json(a: &RunResult, b: &RunResult) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = compared(a, b)
        .iter()
        .map(|c| {
            let (factor, err, p) = match &c.verdict {
                Verdict::Faster { factor, err, p } | Verdict::Slower { factor, err, p } => {
                    (Some(*factor), Some(*err), Some(*p))
                }
                Verdict::NoDifference { p } => (None, None, Some(*p)),
                Verdict::NoVerdict(_) => (None, None, None),
            };
            json!({
                "label": c.label, "phase": c.phase, "kind": c.kind,
                "a_ops_per_sec": c.a, "b_ops_per_sec": c.b,
                "a_p99_ns": c.a_p99, "b_p99_ns": c.b_p99,
                "verdict": c.verdict.key(), "factor": factor, "factor_error": err, "p_value": p,
                "text": c.verdict.text(),
            })
        })
        .collect();
    json!({
        "a": {"run_id": a.run_id, "scenario": a.scenario},
        "b": {"run_id": b.run_id, "scenario": b.scenario},
        "method": format!("Welch's t-test on per-repetition ops/s, alpha {ALPHA}; factor = ratio of means ± one standard error"),
        "differences": differences(a, b),
        "rows": rows,
    })
}
