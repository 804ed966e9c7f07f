//! Two runs side by side with a verdict per row and phase. The verdict is on the ratio of the
//! median ops/s over the repetitions, B/A. A difference is called only when three things
//! agree: an exact rank test (Mann–Whitney, two-sided) finds the two sides' repetitions apart
//! at 1%, the bootstrap interval of the ratio (each side's repetitions resampled) excludes 1,
//! and the ratio lies further from 1 than the declared minimum effect. Runs that cannot be
//! trusted side by side (a busy machine, a debug build, two machines, one file twice) make
//! every verdict "unreliable", and the regression gate ignores such verdicts unless told
//! otherwise.

use std::collections::BTreeMap;

use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};
use kvbench_model::spec::PhaseKind;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::{by_label, human_ns, human_rate, median, phase_names, Section};

/// How verdicts are decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Method {
    /// The smallest relative difference ever called (0.05: 5%).
    pub min_effect: f64,
    /// Significance level of the rank test.
    pub alpha: f64,
    /// Coverage of the bootstrap interval.
    pub confidence: f64,
    pub resamples: usize,
}

impl Default for Method {
    fn default() -> Self {
        Method { min_effect: 0.05, alpha: 0.01, confidence: 0.95, resamples: 4000 }
    }
}

impl Method {
    pub fn describe(&self) -> String {
        format!(
            "verdict: ratio of median ops/s B/A over the repetitions, called when an exact rank test (Mann-Whitney, \
             two-sided) sets the repetitions apart at {}%, the {:.0}% bootstrap interval excludes 1 and the ratio is \
             further from 1 than {:.0}%",
            self.alpha * 100.0,
            self.confidence * 100.0,
            self.min_effect * 100.0
        )
    }

    /// Fewest repetitions a side for which the rank test can reach `alpha` (equal sides).
    pub fn fewest_repetitions(&self) -> usize {
        (2..64).find(|&n| rank_p(&vec![0.0; n], &vec![1.0; n]) <= self.alpha).unwrap_or(64)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// B's throughput is `ratio` times A's (> 1), the interval `lo..hi` above 1.
    Faster { ratio: f64, lo: f64, hi: f64 },
    /// B's throughput is `ratio` times A's (< 1), the interval below 1.
    Slower { ratio: f64, lo: f64, hi: f64 },
    /// No difference called: the rank test or the interval does not set the sides apart, or the
    /// ratio is within `floor` (the minimum effect).
    Within { ratio: f64, lo: f64, hi: f64, floor: f64 },
    /// Why no verdict was possible (one repetition, a failed phase).
    NoVerdict(String),
}

impl Verdict {
    pub fn key(&self) -> &'static str {
        match self {
            Verdict::Faster { .. } => "faster",
            Verdict::Slower { .. } => "slower",
            Verdict::Within { .. } => "no significant difference",
            Verdict::NoVerdict(_) => "no verdict",
        }
    }

    /// B/A and its interval, where measured.
    pub fn ratio(&self) -> Option<(f64, f64, f64)> {
        match *self {
            Verdict::Faster { ratio, lo, hi }
            | Verdict::Slower { ratio, lo, hi }
            | Verdict::Within { ratio, lo, hi, .. } => Some((ratio, lo, hi)),
            Verdict::NoVerdict(_) => None,
        }
    }

    /// In words, for B against A; a slower B reads as A's throughput over B's, so the factor
    /// and the B/A column tell the same story from both ends.
    pub fn text(&self) -> String {
        match self {
            Verdict::Faster { ratio, lo, hi } => format!("B is {ratio:.2}x faster (B/A {lo:.2}–{hi:.2})"),
            Verdict::Slower { ratio, lo, hi } => format!("B is {:.2}x slower (B/A {lo:.2}–{hi:.2})", 1.0 / ratio),
            Verdict::Within { lo, hi, .. } => format!("no significant difference (B/A {lo:.2}–{hi:.2})"),
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
    /// Why the pair of runs cannot be trusted side by side, if so.
    pub unreliable: Option<String>,
}

impl Compared {
    pub fn key(&self) -> &'static str {
        match (&self.unreliable, &self.verdict) {
            (_, Verdict::NoVerdict(_)) | (None, _) => self.verdict.key(),
            (Some(_), _) => "unreliable",
        }
    }

    pub fn text(&self) -> String {
        match (&self.unreliable, &self.verdict) {
            (Some(why), Verdict::Faster { .. } | Verdict::Slower { .. }) => {
                format!("unreliable ({why}): {}", self.verdict.text())
            }
            _ => self.verdict.text(),
        }
    }
}

/// Two-sided p-value of the Mann–Whitney rank test that `before` and `after` come from one
/// distribution: exact (counting every arrangement) up to 40 values, the normal approximation
/// beyond. Ties count one half.
pub fn rank_p(before: &[f64], after: &[f64]) -> f64 {
    let (n, m) = (before.len(), after.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    let u: f64 = after
        .iter()
        .map(|&y| {
            before
                .iter()
                .map(|&x| {
                    if y > x {
                        1.0
                    } else if y == x {
                        0.5
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
        })
        .sum();
    let nm = (n * m) as f64;
    if n + m > 40 {
        let sd = (nm * (n + m + 1) as f64 / 12.0).sqrt();
        let z = ((u - nm / 2.0).abs() - 0.5).max(0.0) / sd;
        return (2.0 * normal_tail(z)).min(1.0);
    }
    // counts[k]: arrangements of n a's and m b's whose U is k (b above a), built one value at a time.
    let mut table = vec![vec![vec![1u128]; m + 1]; 1];
    for i in 1..=n {
        let mut row = vec![vec![1u128]];
        for j in 1..=m {
            let mut c = vec![0u128; i * j + 1];
            // The largest value is a b (it beats all i a's) or an a (it adds nothing).
            for (k, v) in row[j - 1].iter().enumerate() {
                c[k + i] += v;
            }
            for (k, v) in table[i - 1][j].iter().enumerate() {
                c[k] += v;
            }
            row.push(c);
        }
        table.push(row);
    }
    let counts = &table[n][m];
    let total: u128 = counts.iter().sum();
    let (lo, hi) = (u.floor() as usize, u.ceil() as usize);
    let below: u128 = counts[..=lo.min(counts.len() - 1)].iter().sum();
    let above: u128 = counts[hi.min(counts.len() - 1)..].iter().sum();
    (2.0 * below.min(above) as f64 / total as f64).min(1.0)
}

/// P(Z > z) for a standard normal Z (Abramowitz and Stegun 26.2.17, error below 1e-7).
fn normal_tail(z_score: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.231_641_9 * z_score);
    let poly =
        t * (0.319_381_53 + t * (-0.356_563_782 + t * (1.781_477_937 + t * (-1.821_255_978 + t * 1.330_274_429))));
    (-z_score * z_score / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * poly
}

/// The `confidence` interval of median(b)/median(a), resampling each side's repetitions; a
/// fixed seed makes the same files give the same verdict.
fn bootstrap(before: &[f64], after: &[f64], method: &Method) -> (f64, f64) {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0x006b_7662_656e_6368);
    let mut draw = |x: &[f64]| median((0..x.len()).map(|_| x[rng.gen_range(0..x.len())]).collect());
    let mut r: Vec<f64> = (0..method.resamples.max(1)).map(|_| draw(after) / draw(before).max(1e-12)).collect();
    r.sort_by(|x, y| x.total_cmp(y));
    let tail = (1.0 - method.confidence) / 2.0;
    let at = |q: f64| r[((q * r.len() as f64) as usize).min(r.len() - 1)];
    (at(tail), at(1.0 - tail))
}

/// The verdict for per-repetition throughputs `before` and `after` (higher is faster).
pub fn verdict(before: &[f64], after: &[f64], method: &Method) -> Verdict {
    if before.is_empty() || after.is_empty() {
        return Verdict::NoVerdict("not measured in both runs".into());
    }
    let need = method.fewest_repetitions();
    if before.len().min(after.len()) < need {
        return Verdict::NoVerdict(format!(
            "{} and {} repetitions; a rank test at {}% needs {need} a side (run both with --repetitions {need} or more)",
            before.len(),
            after.len(),
            method.alpha * 100.0
        ));
    }
    let (ma, mb) = (median(before.to_vec()), median(after.to_vec()));
    if ma <= 0.0 || mb <= 0.0 {
        return Verdict::NoVerdict("zero throughput".into());
    }
    let ratio = mb / ma;
    let (lo, hi) = bootstrap(before, after, method);
    let floor = method.min_effect;
    let apart = rank_p(before, after) <= method.alpha;
    if apart && lo > 1.0 && ratio > 1.0 + floor {
        Verdict::Faster { ratio, lo, hi }
    } else if apart && hi < 1.0 && ratio < 1.0 / (1.0 + floor) {
        Verdict::Slower { ratio, lo, hi }
    } else {
        Verdict::Within { ratio, lo, hi, floor }
    }
}

/// What makes one run's figures doubtful: a busy machine before it, a non-release build.
fn doubts(side: &str, run: &RunResult) -> Vec<String> {
    let mut why = Vec::new();
    if let Some(w) = run.warnings.iter().find(|w| w.starts_with("machine is busy")) {
        why.push(format!("{side}{w}"));
    }
    if run.environment.build != "release" {
        why.push(format!("{side}a {} build", run.environment.build));
    }
    why
}

/// Why two runs' figures cannot be set side by side with confidence, if they cannot.
pub fn unreliable(before: &RunResult, after: &RunResult) -> Option<String> {
    let mut why = Vec::new();
    if before.run_id == after.run_id {
        why.push(format!("A and B are the same run, {}", before.run_id));
    }
    why.extend(doubts("A: ", before));
    why.extend(doubts("B: ", after));
    let (ea, eb) = (&before.environment, &after.environment);
    if ea.hostname != eb.hostname || ea.cpu_model != eb.cpu_model || ea.cores != eb.cores {
        why.push(format!("different machines ({}, {})", ea.hostname, eb.hostname));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// `--vary`'s groups in one run: per phase, each value's ops/s against the group's first
/// value, with the verdict `compare` would give.
pub fn vary_section(run: &RunResult) -> Option<Section> {
    let groups = run.workload.get("vary").and_then(|v| v.as_array()).filter(|a| !a.is_empty())?;
    let m = Method::default();
    let doubt = doubts("", run).join("; ");
    let mut s = Section::new(
        "Varied rows".into(),
        format!(
            "each value against its group's first, per phase: median ops/s over the repetitions and the verdict of `kvbench compare`{}",
            if doubt.is_empty() { String::new() } else { format!("; unreliable: {doubt}") }
        ),
        &[("parameter", 0), ("phase", 0), ("row", 0), ("ops/s", 1), ("vs first", 1), ("verdict", 0)],
    );
    let by = by_label(run);
    let reps = |label: &str| by.iter().find(|(l, _)| l == label).map(|(_, v)| v.clone()).unwrap_or_default();
    for g in groups {
        let param = g.get("parameter").and_then(|p| p.as_str()).unwrap_or("");
        let labels: Vec<&str> =
            g.get("labels").and_then(|l| l.as_array()).into_iter().flatten().filter_map(|l| l.as_str()).collect();
        let Some((first, rest)) = labels.split_first() else { continue };
        for (phase, _) in phase_names(run).into_iter().filter(|(_, k)| PhaseKind::named_runs_ops(k)) {
            let (a, _) = rates(&reps(first), &phase);
            for label in std::iter::once(first).chain(rest) {
                let (b, _) = rates(&reps(label), &phase);
                let (ratio, verdict) = if label == first {
                    ("1.00x".to_string(), "baseline".to_string())
                } else if a.is_empty() || b.is_empty() {
                    ("-".into(), verdict(&a, &b, &m).text())
                } else {
                    (format!("{:.2}x", median(b.clone()) / median(a.clone()).max(1e-9)), verdict(&a, &b, &m).text())
                };
                s.rows.push(vec![param.into(), phase.clone(), label.to_string(), rate_cell(&b), ratio, verdict]);
            }
        }
    }
    Some(s)
}

fn rates(reps: &[&EngineResult], name: &str) -> (Vec<f64>, Option<f64>) {
    let ok: Vec<&PhaseResult> =
        reps.iter().filter_map(|e| e.phases.iter().find(|p| p.name == name && p.status == Status::Ok)).collect();
    let p99: Vec<f64> = ok.iter().filter_map(|p| p.latency.as_ref().map(|l| l.p99_ns as f64)).collect();
    (ok.iter().map(|p| p.ops_per_sec).collect(), (!p99.is_empty()).then(|| median(p99)))
}

/// Every row label and phase present in both runs, with its verdict.
pub fn compared(before: &RunResult, after: &RunResult, method: &Method) -> Vec<Compared> {
    let (la, lb) = (by_label(before), by_label(after));
    let unreliable = unreliable(before, after);
    let mut out = Vec::new();
    for (name, kind) in phase_names(before).into_iter().filter(|(_, k)| PhaseKind::named_runs_ops(k)) {
        for (label, ra) in &la {
            let Some((_, rb)) = lb.iter().find(|(l, _)| l == label) else { continue };
            let has = |reps: &[&EngineResult]| reps.iter().any(|e| e.phases.iter().any(|p| p.name == name));
            if !has(ra) || !has(rb) {
                continue;
            }
            let ((va, a_p99), (vb, b_p99)) = (rates(ra, &name), rates(rb, &name));
            let verdict = verdict(&va, &vb, method);
            out.push(Compared {
                label: label.clone(),
                phase: name.clone(),
                kind: kind.clone(),
                a: va,
                b: vb,
                a_p99,
                b_p99,
                verdict,
                unreliable: unreliable.clone(),
            });
        }
    }
    out
}

/// Rows whose B is slower than A by more than `pct` percent (a called verdict only; an
/// unreliable one only when `strict`).
pub fn regressions(rows: &[Compared], pct: f64, strict: bool) -> Vec<&Compared> {
    rows.iter()
        .filter(|c| strict || c.unreliable.is_none())
        .filter(|c| matches!(c.verdict, Verdict::Slower { ratio, .. } if ratio < 1.0 - pct / 100.0))
        .collect()
}

/// Every setting that differs between the runs: machine, plan, durability, versions, and per
/// phase threads, batch, cache and unit. Rows that differ alike are named together.
pub fn differences(before: &RunResult, after: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    let mut run = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what}: A {x}, B {y}"));
        }
    };
    let (ea, eb) = (&before.environment, &after.environment);
    run("machine", ea.hostname.clone(), eb.hostname.clone());
    run("cpu", format!("{} ({} cores)", ea.cpu_model, ea.cores), format!("{} ({} cores)", eb.cpu_model, eb.cores));
    run("memory", crate::human_bytes(ea.memory_bytes), crate::human_bytes(eb.memory_bytes));
    run("os", format!("{} {}", ea.os, ea.kernel), format!("{} {}", eb.os, eb.kernel));
    run("file system", format!("{} ({})", ea.filesystem, ea.data_dir), format!("{} ({})", eb.filesystem, eb.data_dir));
    run("build", ea.build.clone(), eb.build.clone());
    run("kvbench", before.kvbench_version.clone(), after.kvbench_version.clone());
    run("scenario", before.scenario.clone(), after.scenario.clone());
    run("sync", before.sync.clone(), after.sync.clone());
    run("records", before.plan.unique_records.to_string(), after.plan.unique_records.to_string());
    run("seed", before.plan.seed.to_string(), after.plan.seed.to_string());
    run("plan", before.plan.hash.clone(), after.plan.hash.clone());
    run("repetitions", reps(before).to_string(), reps(after).to_string());
    let labels = |r: &RunResult| by_label(r).into_iter().map(|(l, _)| l).collect::<Vec<_>>();
    let (la, lb) = (labels(before), labels(after));
    let only = |x: &[String], y: &[String]| x.iter().filter(|l| !y.contains(l)).cloned().collect::<Vec<_>>().join(", ");
    for (side, list) in [("A", only(&la, &lb)), ("B", only(&lb, &la))] {
        if !list.is_empty() {
            out.push(format!("rows only in {side}: {list}"));
        }
    }
    out.extend(row_differences(before, after));
    out
}

fn reps(run: &RunResult) -> usize {
    by_label(run).iter().map(|(_, v)| v.len()).max().unwrap_or(0)
}

/// Per-row differences, grouped: (what, A value, B value) -> labels.
fn row_differences(before: &RunResult, after: &RunResult) -> Vec<String> {
    let mut groups: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    let lb = by_label(after);
    let common: Vec<String> =
        by_label(before).iter().filter(|(l, _)| lb.iter().any(|(m, _)| m == l)).map(|(l, _)| l.clone()).collect();
    for label in &common {
        let (Some(x), Some(y)) =
            (before.engines.iter().find(|e| &e.label == label), after.engines.iter().find(|e| &e.label == label))
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
            format!("{what}: A {u}, B {v} ({who})")
        })
        .collect()
}

fn rate_cell(values: &[f64]) -> String {
    match values.len() {
        0 => "-".into(),
        1 => human_rate(values[0]),
        n => {
            let m = median(values.to_vec());
            let (lo, hi) = values.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
            format!("{} ±{:.0}% (n={n})", human_rate(m), (hi - lo) / m.max(1e-9) * 50.0)
        }
    }
}

/// The comparison as a preamble and one section per phase (for the table and Markdown).
pub fn compare(before: &RunResult, after: &RunResult, method: &Method) -> (Vec<String>, Vec<Section>) {
    let mut pre = vec![
        format!(
            "kvbench compare — A: {} ({}) — B: {} ({})",
            before.run_id, before.scenario, after.run_id, after.scenario
        ),
        method.describe(),
    ];
    if let Some(why) = unreliable(before, after) {
        pre.push(format!("WARNING: every verdict is unreliable: {why}"));
    }
    let diffs = differences(before, after);
    if diffs.is_empty() {
        pre.push("settings: the same in both runs".into());
    } else {
        pre.push("settings that differ:".into());
        pre.extend(diffs.iter().map(|d| format!("  {d}")));
    }
    if before.plan.hash != after.plan.hash {
        pre.push("WARNING: the runs used different plans (data or operations differ): compare with care".into());
    }
    let mut sections: Vec<Section> = Vec::new();
    for c in &compared(before, after, method) {
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
            c.text(),
            p99(c.a_p99),
            p99(c.b_p99),
        ]);
    }
    (pre, sections)
}

/// The comparison as JSON: settings that differ, and per row and phase the figures and a
/// `verdict` (`faster`, `slower`, `no significant difference`, `no verdict`, `unreliable`).
pub fn compare_json(before: &RunResult, after: &RunResult, method: &Method) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = compared(before, after, method)
        .iter()
        .map(|c| {
            let r = c.verdict.ratio();
            json!({
                "label": c.label, "phase": c.phase, "kind": c.kind,
                "a_ops_per_sec": c.a, "b_ops_per_sec": c.b,
                "a_p99_ns": c.a_p99, "b_p99_ns": c.b_p99,
                "verdict": c.key(), "decided": c.verdict.key(),
                "ratio": r.map(|r| r.0), "ratio_low": r.map(|r| r.1), "ratio_high": r.map(|r| r.2),
                "unreliable": c.unreliable,
                "text": c.text(),
            })
        })
        .collect();
    json!({
        "a": {"run_id": before.run_id, "scenario": before.scenario},
        "b": {"run_id": after.run_id, "scenario": after.scenario},
        "method": method.describe(),
        "min_effect": method.min_effect,
        "unreliable": unreliable(before, after),
        "differences": differences(before, after),
        "rows": rows,
    })
}
