//! When an ops step with a stop rule ends (docs/protocol.md, "Stop rules"): its duration, or a
//! steady throughput within it. One decision for both monitor loops, the Rust worker's
//! (`run_threads`) and the worker core's (`hosted::Progress`); the threads see it as the
//! stop flag their op streams look at ([`kvbench_plan::opstream::OpStream::stop_on`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kvbench_model::job::{OpsStep, Steady};

/// How often a monitor looks at a step with a stop rule, at most (ms): a step overruns its
/// duration by up to this plus one chunk of ops per thread.
pub const POLL_MS: u64 = 5;

/// How often a step's monitor wakes: every `progress` (its progress events), or every
/// POLL_MS with a stop rule. No more: it shares the CPUs with the threads it watches.
pub fn poll_every(rule: bool, progress: Duration) -> Duration {
    if rule {
        progress.min(Duration::from_millis(POLL_MS))
    } else {
        progress
    }
}

/// Whether the step ends on something else than its count.
pub fn has_rule(st: &OpsStep) -> bool {
    st.duration_ms.is_some() || st.steady.is_some()
}

/// The spread of the last `window` interval counts, (max - min) / mean, when there are that
/// many and their mean is above 0.
pub fn spread(counts: &[u64], window: u32) -> Option<f64> {
    let w = window.max(1) as usize;
    let last = counts.get(counts.len().checked_sub(w)?..)?;
    let (lo, hi) = (*last.iter().min()?, *last.iter().max()?);
    let mean = last.iter().sum::<u64>() as f64 / w as f64;
    (mean > 0.0).then(|| (hi - lo) as f64 / mean)
}

/// The spread of the last `window` intervals when it is below `within`: the steady state.
pub fn steady(counts: &[u64], rule: &Steady) -> Option<f64> {
    spread(counts, rule.window).filter(|&s| s < rule.within)
}

/// `60000` as `60`, `1500` as `1.5` (seconds, as a reason reads them).
fn secs(ms: u64) -> String {
    format!("{}", ms as f64 / 1000.0)
}

/// A step's stop rule, fed with the ops done as the monitor sees them.
#[derive(Debug, Clone)]
pub struct Until {
    deadline_ms: Option<u64>,
    steady: Option<Steady>,
    interval_ms: u64,
    /// Ops of each finished interval, from the progress counter at interval ends.
    pub counts: Vec<u64>,
    mark: u64,
}

impl Until {
    /// The rule of `st` (None without one) in intervals of `interval_ms`.
    pub fn new(st: &OpsStep, interval_ms: u64) -> Option<Until> {
        has_rule(st).then(|| Until {
            deadline_ms: st.duration_ms,
            steady: st.steady,
            interval_ms: interval_ms.max(1),
            counts: Vec::new(),
            mark: 0,
        })
    }

    /// `elapsed_ms` after the step's start, `done` ops done: why the step must end now, if it
    /// must. Intervals are closed as their ends pass (a monitor late by several intervals
    /// gives the ops to the first of them).
    pub fn observe(&mut self, elapsed_ms: u64, done: u64) -> Option<String> {
        while elapsed_ms >= (self.counts.len() as u64 + 1) * self.interval_ms {
            self.counts.push(done.saturating_sub(self.mark));
            self.mark = done;
            if let Some(s) = self.steady.as_ref().and_then(|r| steady(&self.counts, r)) {
                let at = self.counts.len() as u64 * self.interval_ms;
                let w = self.steady.map(|r| r.window).unwrap_or(0);
                return Some(format!("steady after {} s: last {w} intervals within {:.1}%", secs(at), s * 100.0));
            }
        }
        let d = self.deadline_ms?;
        if elapsed_ms < d {
            return None;
        }
        Some(match self.steady {
            Some(_) => format!("cap {} s reached without a steady state", secs(d)),
            None => format!("duration {} s reached", secs(d)),
        })
    }
}

/// A monitor's side of a stop rule: the flag the threads' streams look at, the reason once set.
pub struct Stopper {
    until: Until,
    t0: Instant,
    pub flag: Arc<AtomicBool>,
    pub reason: Option<String>,
}

impl Stopper {
    /// The step's start is now.
    pub fn new(until: Until, flag: Arc<AtomicBool>) -> Stopper {
        Stopper { until, t0: Instant::now(), flag, reason: None }
    }

    /// Look at the step with `done` ops done; sets the flag once the rule says stop.
    pub fn poll(&mut self, done: u64) {
        if self.reason.is_some() {
            return;
        }
        let elapsed = self.t0.elapsed().as_millis() as u64;
        if let Some(why) = self.until.observe(elapsed, done) {
            self.flag.store(true, Ordering::Relaxed);
            self.reason = Some(why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(window: u32, within: f64) -> Steady {
        Steady { window, within }
    }

    #[test]
    fn steady_needs_a_full_window_within_the_bound() {
        let r = rule(3, 0.05);
        assert_eq!(steady(&[100, 100], &r), None, "two of three intervals");
        assert!(steady(&[50, 100, 101, 102], &r).is_some());
        assert_eq!(steady(&[100, 104, 96], &r), None, "8% is not within 5%");
        let s = steady(&[100, 102, 98], &r).unwrap();
        assert!((s - 0.04).abs() < 1e-9, "{s}");
        assert_eq!(steady(&[0, 0, 0], &r), None, "no throughput is no steady state");
    }

    fn step(duration_ms: Option<u64>, steady: Option<Steady>) -> OpsStep {
        let mut st: OpsStep = serde_json::from_value(serde_json::json!({
            "index": 0, "name": "t", "kind": "get", "count": 10, "dist": {"name": "uniform", "n": 10}, "rec_seed": 1,
        }))
        .unwrap();
        (st.duration_ms, st.steady) = (duration_ms, steady);
        st
    }

    /// Feed `u` with ops growing by `per[i]` in interval i, polled ten times an interval.
    fn feed(u: &mut Until, per: &[u64]) -> Option<(u64, String)> {
        let mut done = 0;
        for (i, &n) in per.iter().enumerate() {
            for j in 1..=10u64 {
                done += n / 10;
                let at = i as u64 * 1000 + j * 100;
                if let Some(why) = u.observe(at, done) {
                    return Some((at, why));
                }
            }
        }
        None
    }

    #[test]
    fn a_duration_ends_the_step_at_its_time() {
        let mut u = Until::new(&step(Some(2500), None), 1000).unwrap();
        let (at, why) = feed(&mut u, &[1000; 10]).unwrap();
        assert_eq!((at, why.as_str()), (2500, "duration 2.5 s reached"));
        assert!(Until::new(&step(None, None), 1000).is_none());
    }

    #[test]
    fn a_ramp_then_a_plateau_is_steady_after_the_window() {
        let mut u = Until::new(&step(Some(600_000), Some(rule(3, 0.05))), 1000).unwrap();
        let (at, why) = feed(&mut u, &[100, 500, 900, 1000, 1010, 990, 1000, 1000]).unwrap();
        assert_eq!(at, 6000, "{why}");
        assert_eq!(why, "steady after 6 s: last 3 intervals within 2.0%");
    }

    #[test]
    fn an_unsteady_step_ends_at_its_cap_and_says_so() {
        let mut u = Until::new(&step(Some(5000), Some(rule(3, 0.05))), 1000).unwrap();
        let (at, why) = feed(&mut u, &[1000, 2000, 1000, 2000, 1000, 2000, 1000]).unwrap();
        assert_eq!((at, why.as_str()), (5000, "cap 5 s reached without a steady state"));
    }
}
