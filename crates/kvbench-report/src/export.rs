//! A run in the JSON of the tools teams already keep benchmark histories in:
//! github-action-benchmark's `customBiggerIsBetter` list (ops/s, one entry per row and phase)
//! and Bencher's metric format (per row and phase: throughput, p99 latency, and device bytes per
//! op where measured). Repetitions collapse to their median, with their range as bounds.

use kvbench_model::result::{PhaseResult, RunResult, Status};
use serde_json::{json, Map, Value};

use crate::{by_label, median, phase_names};

/// (benchmark name, the repetitions' measured phases) for every row and phase that ran.
fn measured(run: &RunResult) -> Vec<(String, Vec<&PhaseResult>)> {
    let mut out = Vec::new();
    for (label, reps) in by_label(run) {
        for (phase, _) in phase_names(run) {
            let ok: Vec<&PhaseResult> = reps
                .iter()
                .filter_map(|e| e.phases.iter().find(|p| p.name == phase && p.status == Status::Ok && p.ops > 0))
                .collect();
            if !ok.is_empty() {
                out.push((format!("{} {label} {phase}", run.scenario), ok));
            }
        }
    }
    out
}

/// Median, lowest and highest of `figure` over the repetitions, if every one has it.
fn spread(reps: &[&PhaseResult], figure: impl Fn(&PhaseResult) -> Option<f64>) -> Option<(f64, f64, f64)> {
    let v: Vec<f64> = reps.iter().map(|p| figure(p)).collect::<Option<_>>()?;
    let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    Some((median(v), lo, hi))
}

/// github-action-benchmark's custom format, bigger is better: ops/s per row and phase.
pub fn github_action_benchmark(run: &RunResult) -> String {
    let entries: Vec<Value> = measured(run)
        .into_iter()
        .filter_map(|(name, reps)| {
            let (m, lo, hi) = spread(&reps, |p| Some(p.ops_per_sec))?;
            let p99 = spread(&reps, |p| p.latency.as_ref().map(|l| l.p99_ns as f64));
            let extra = format!(
                "{} repetitions; p99 {}; run {}",
                reps.len(),
                p99.map(|(v, _, _)| crate::human_ns(v)).unwrap_or_else(|| "-".into()),
                run.run_id
            );
            Some(json!({
                "name": name, "unit": "ops/s", "value": m,
                "range": format!("{:.0}–{:.0}", lo, hi), "extra": extra,
            }))
        })
        .collect();
    serde_json::to_string_pretty(&entries).expect("plain JSON") + "\n"
}

fn measure((value, lower, upper): (f64, f64, f64)) -> Value {
    json!({ "value": value, "lower_value": lower, "upper_value": upper })
}

/// Bencher's metric format: `{ name: { measure: { value, lower_value, upper_value } } }`.
pub fn bencher(run: &RunResult) -> String {
    let mut out = Map::new();
    for (name, reps) in measured(run) {
        let mut m = Map::new();
        let per_op = |bytes: fn(&kvbench_model::result::Disk) -> u64| {
            move |p: &PhaseResult| p.disk.as_ref().map(|d| bytes(d) as f64 / p.ops.max(1) as f64)
        };
        let measures = [
            ("throughput", spread(&reps, |p| Some(p.ops_per_sec))),
            ("latency-p99-ns", spread(&reps, |p| p.latency.as_ref().map(|l| l.p99_ns as f64))),
            ("disk-read-bytes-per-op", spread(&reps, per_op(|d| d.read_bytes))),
            ("disk-write-bytes-per-op", spread(&reps, per_op(|d| d.write_bytes))),
        ];
        for (k, v) in measures {
            if let Some(v) = v {
                m.insert(k.into(), measure(v));
            }
        }
        out.insert(name, Value::Object(m));
    }
    serde_json::to_string_pretty(&Value::Object(out)).expect("plain JSON") + "\n"
}
