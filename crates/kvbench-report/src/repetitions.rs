//! Repetitions of a row collapsed to one: each figure the median over the repetitions that
//! measured it, latency from their pooled histograms, and the spread of ops/s kept to be shown.

use std::collections::BTreeMap;

use kvbench_model::result::{EngineResult, Latency, PhaseResult, RunResult, Status};

/// Row labels in run order, each with its repetitions.
pub(crate) fn by_label(run: &RunResult) -> Vec<(String, Vec<&EngineResult>)> {
    let mut out: Vec<(String, Vec<&EngineResult>)> = Vec::new();
    for e in &run.engines {
        match out.iter_mut().find(|(l, _)| l == &e.label) {
            Some((_, v)) => v.push(e),
            None => out.push((e.label.clone(), vec![e])),
        }
    }
    out
}

/// Spread of ops/s over repetitions, per (label, phase): (repetitions, (max-min)/median).
pub(crate) type Spreads = BTreeMap<(String, String), (usize, f64)>;

/// Above this relative spread between repetitions a figure is flagged.
pub const WIDE_SPREAD: f64 = 0.10;

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// One row per label: with repetitions, each figure is the median over the repetitions
/// whose phase measured it (ok, or failed only as the row declared), and the ops/s spread is
/// kept to be shown.
pub fn collapse(run: &RunResult) -> (RunResult, Spreads) {
    let mut spreads = Spreads::new();
    let mut out = run.clone();
    out.engines.clear();
    for (label, reps) in by_label(run) {
        let mut row = reps.iter().find(|e| measured(e.status)).copied().unwrap_or(reps[0]).clone();
        if reps.len() > 1 {
            // A failure outranks a declared one: the row shows the worst repetition's status.
            let bad =
                reps.iter().find(|e| !measured(e.status)).or_else(|| reps.iter().find(|e| e.status != Status::Ok));
            if let Some(bad) = bad {
                row.status = bad.status;
                row.error = bad.error.clone().map(|e| format!("repetition {}: {e}", bad.repetition));
            }
            row.space_bytes = median(reps.iter().map(|e| e.space_bytes as f64).collect()) as u64;
            row.log_space_bytes = median(reps.iter().map(|e| e.log_space_bytes as f64).collect()) as u64;
            row.space_amplification = median(reps.iter().map(|e| e.space_amplification).collect());
            for p in row.phases.iter_mut() {
                // Every repetition that measured the phase: ok, or failed only as the row
                // declared (`expect = "mismatch"`), whose figures are as real.
                let same: Vec<&PhaseResult> = reps
                    .iter()
                    .filter_map(|e| e.phases.iter().find(|q| q.name == p.name && measured(q.status)))
                    .collect();
                if same.len() < 2 {
                    continue;
                }
                median_phase(p, &same);
                let rates: Vec<f64> = same.iter().map(|q| q.ops_per_sec).collect();
                let (lo, hi) = rates.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
                spreads.insert((label.clone(), p.name.clone()), (same.len(), (hi - lo) / p.ops_per_sec.max(1e-9)));
            }
        }
        out.engines.push(row);
    }
    (out, spreads)
}

/// Whether a status carries measured figures: ok, or failed only as the row declared.
pub(crate) fn measured(status: Status) -> bool {
    matches!(status, Status::Ok | Status::Expected)
}

/// `phase` becomes the median of `same` (the repetitions of one phase) figure by figure.
fn median_phase(phase: &mut PhaseResult, same: &[&PhaseResult]) {
    let m = |f: &dyn Fn(&PhaseResult) -> f64| median(same.iter().map(|q| f(q)).collect());
    phase.ops_per_sec = m(&|q| q.ops_per_sec);
    phase.elapsed_ns = m(&|q| q.elapsed_ns as f64) as u64;
    phase.wall_ns = m(&|q| q.wall_ns as f64) as u64;
    phase.busy_ns = m(&|q| q.busy_ns as f64) as u64;
    phase.harness_share = m(&|q| q.harness_share);
    phase.cpu_user_ns = m(&|q| q.cpu_user_ns as f64) as u64;
    phase.cpu_sys_ns = m(&|q| q.cpu_sys_ns as f64) as u64;
    for (k, v) in phase.runtime.iter_mut() {
        *v = median(same.iter().filter_map(|q| q.runtime.get(k).copied()).collect());
    }
    // Percentiles of the pooled histograms stay ordered (p99 <= p99.9 <= max), which medians
    // taken figure by figure do not; medians only when a histogram does not decode.
    if let Some(pooled) = pooled_latency(same) {
        phase.latency = Some(pooled);
    } else if let Some(l) = phase.latency.as_mut() {
        let lat = |f: &dyn Fn(&Latency) -> u64| {
            median(same.iter().filter_map(|q| q.latency.as_ref().map(|l| f(l) as f64)).collect()) as u64
        };
        l.p50_ns = lat(&|l| l.p50_ns);
        l.p95_ns = lat(&|l| l.p95_ns);
        l.p99_ns = lat(&|l| l.p99_ns);
        l.p999_ns = lat(&|l| l.p999_ns);
        l.max_ns = lat(&|l| l.max_ns);
    }
}

/// The repetitions' latency histograms added together, if every one decodes.
pub(crate) fn pooled_histogram(same: &[&PhaseResult]) -> Option<hdrhistogram::Histogram<u64>> {
    let mut all: Option<hdrhistogram::Histogram<u64>> = None;
    for q in same {
        let h = kvbench_model::histogram::decode_histogram(&q.latency.as_ref()?.hdr).ok()?;
        match all.as_mut() {
            None => all = Some(h),
            Some(a) => a.add(&h).ok()?,
        }
    }
    all.filter(|h| !h.is_empty())
}

fn pooled_latency(same: &[&PhaseResult]) -> Option<Latency> {
    kvbench_model::histogram::summarize(&pooled_histogram(same)?)
}
