//! A figure's history: one point per run, and the steps in it. A step is a lasting change of
//! level (what a new version or option causes), not one odd run: at run `i`, the next
//! [`MIN_SIDE`] runs all lie beyond the noise floor on the same side of the median of the
//! runs before (at most [`WINDOW`] of them, none before the previous step). The floor is the
//! larger of the minimum effect and three robust standard deviations (1.4826 × the median
//! absolute deviation) of those runs before. A step is therefore called once it has been
//! confirmed by MIN_SIDE runs, and one outlier never is.

/// Runs at the new level that confirm a step, and the fewest runs before it.
pub const MIN_SIDE: usize = 3;
/// Runs before a step that make its baseline.
pub const WINDOW: usize = 8;

/// One run's figures for one row and phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub run_id: String,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    pub kvbench_version: String,
    /// The engine's version in that run.
    pub version: String,
    /// Median over the run's repetitions.
    pub ops_per_sec: f64,
    pub p99_ns: Option<f64>,
    /// Device bytes read and written per operation, where measured.
    pub read_per_op: Option<f64>,
    pub write_per_op: Option<f64>,
    pub space_bytes: u64,
    /// The row's data against its memory budget or the machine's memory
    /// ([`crate::row_regime`]): a figure means little beside one from another regime.
    pub regime: String,
}

/// One row and phase of one scenario and plan on one machine, over runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub scenario: String,
    /// The plan's hash: runs of another plan (other records, say) form their own series.
    pub plan: String,
    pub machine: String,
    pub label: String,
    pub phase: String,
    pub points: Vec<Point>,
}

impl Series {
    pub fn title(&self) -> String {
        format!("{} {} ({}, {})", self.label, self.phase, self.scenario, self.machine)
    }
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM:SS` (UTC), without a date library: the
/// civil-from-days algorithm.
pub fn utc_time(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, (rem / 60) % 60, rem % 60)
}

/// A change of level at `at` (the first run of the new level).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub at: usize,
    pub before: f64,
    pub after: f64,
}

impl Step {
    pub fn ratio(&self) -> f64 {
        self.after / self.before.max(1e-12)
    }
}

fn median(values: &[f64]) -> f64 {
    crate::median(values.to_vec())
}

/// 1.4826 × the median absolute deviation of `values` around its median: a standard deviation that
/// one outlier cannot inflate.
fn robust_sd(values: &[f64]) -> f64 {
    let m = median(values);
    1.4826 * median(&values.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
}

/// The steps of `series` (ordered by position); `min_effect` is relative (0.05: 5%).
pub fn steps(series: &[f64], min_effect: f64) -> Vec<Step> {
    let n = series.len();
    let mut out = Vec::new();
    // The current level starts at `start`; its baseline is at most WINDOW runs before `i`.
    let mut start = 0;
    let mut i = MIN_SIDE;
    while i + MIN_SIDE <= n {
        let before = &series[start.max(i.saturating_sub(WINDOW))..i];
        let mb = median(before);
        let floor = min_effect.max(3.0 * robust_sd(before) / mb.max(1e-12));
        let next = &series[i..i + MIN_SIDE];
        let up = next.iter().all(|v| *v / mb > 1.0 + floor);
        let down = next.iter().all(|v| *v / mb < 1.0 - floor);
        if mb > 0.0 && (up || down) {
            out.push(Step { at: i, before: mb, after: median(&series[i..n.min(i + WINDOW)]) });
            start = i;
            i += MIN_SIDE;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeatable wobble of ±`amp` around 1.
    fn noisy(n: usize, amp: f64) -> Vec<f64> {
        (0..n).map(|i| 1.0 + amp * (((i * 7919) % 13) as f64 / 6.0 - 1.0)).collect()
    }

    #[test]
    fn a_flat_noisy_history_has_no_step() {
        assert!(steps(&noisy(40, 0.04), 0.05).is_empty());
    }

    #[test]
    fn a_lasting_drop_is_one_step_at_its_first_run() {
        let mut x = noisy(30, 0.03);
        x.iter_mut().skip(12).for_each(|v| *v *= 0.8);
        let s = steps(&x, 0.05);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].at, 12);
        assert!((s[0].ratio() - 0.8).abs() < 0.05, "{s:?}");
    }

    #[test]
    fn one_odd_run_is_not_a_step() {
        let mut x = noisy(20, 0.02);
        x[10] = 0.3;
        assert!(steps(&x, 0.05).is_empty());
    }

    #[test]
    fn a_step_needs_confirming_runs_after_it() {
        let mut x = noisy(12, 0.02);
        x[10] *= 0.7;
        x[11] *= 0.7;
        assert!(steps(&x, 0.05).is_empty(), "two runs after a drop are not yet a step");
        x.push(0.7);
        assert_eq!(steps(&x, 0.05).first().map(|s| s.at), Some(10));
    }

    #[test]
    fn two_changes_are_two_steps() {
        let mut x = noisy(36, 0.02);
        x.iter_mut().skip(12).take(12).for_each(|v| *v *= 1.3);
        let at: Vec<usize> = steps(&x, 0.05).iter().map(|s| s.at).collect();
        assert_eq!(at, [12, 24]);
    }

    #[test]
    fn times_are_utc_calendar_dates() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00");
        assert_eq!(utc_time(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc_time(1_773_480_413), "2026-03-14 09:26:53");
    }

    #[test]
    fn a_short_history_has_no_step() {
        assert!(steps(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.05).is_empty());
        assert!(steps(&[], 0.05).is_empty());
    }
}
