//! How long a row's worker may run before it is killed: the scenario's `timeout`, lengthened
//! for a row whose data is larger than its memory budget (each operation that misses the
//! budget's cache may wait for the device) and never below a few times the row's own estimate;
//! `--timeout` fixes it for every row. Said before the row runs and in its error when it hits.

use kvbench_model::scenario::{PhaseDef, Scenario, Variant};
use kvbench_model::spec::Distribution;

/// What a pessimistic device read costs an operation that misses the budget's cache (seconds):
/// a random read on a shared virtual disk, so that a slow machine's row still ends.
const MISS_S: f64 = 0.002;
/// A row's timeout is at least this many times its estimate from earlier results.
const ESTIMATE_MARGIN: f64 = 4.0;

/// A row's timeout in seconds, and why it is that long.
#[derive(Debug, Clone, PartialEq)]
pub struct RowTimeout {
    pub secs: u64,
    pub why: String,
}

/// The timeout of row `variant` of `scenario` whose data is `raw_bytes`, with the row's estimate (seconds,
/// every phase known) when earlier results gave one.
pub fn row_timeout(scenario: &Scenario, variant: &Variant, raw_bytes: u64, estimate: Option<f64>) -> RowTimeout {
    let base = scenario.timeout;
    if scenario.timeout_fixed {
        return RowTimeout { secs: base, why: format!("{base} s, as --timeout sets it") };
    }
    let mut secs = base as f64;
    let mut why = format!("the scenario's timeout {base} s");
    if let Some(budget) = variant.budget(scenario).filter(|&b| raw_bytes > b) {
        let missing = 1.0 - budget as f64 / raw_bytes as f64;
        let misses = (random_operations(scenario) as f64 * missing).round();
        let timed_s = durations_s(scenario);
        secs += misses * MISS_S + timed_s;
        if misses > 0.0 {
            why.push_str(&format!(
                " + {:.0} ms for each of the ~{misses:.0} operations expected to miss the {} budget (the data \
                 is {:.2}x it)",
                MISS_S * 1e3,
                kvbench_report::human_bytes(budget),
                raw_bytes as f64 / budget as f64
            ));
        }
        if timed_s > 0.0 {
            why.push_str(&format!(" + the {timed_s:.0} s of its phases run for a duration"));
        }
    }
    if let Some(e) = estimate.filter(|&e| e * ESTIMATE_MARGIN > secs) {
        secs = e * ESTIMATE_MARGIN;
        why = format!("{ESTIMATE_MARGIN:.0}x the row's estimate of {e:.0} s from earlier results");
    }
    let secs = (secs.ceil() as u64).min(kvbench_model::spec::limits::TIMEOUT_S);
    RowTimeout { secs, why: format!("{why}; --timeout N fixes it") }
}

/// The operations that may each wait for the device: those of phases bound by a count that touch
/// records in a random order (a load or scan in key order reads and writes ahead of itself). A
/// phase run for a duration ends with it whatever its operations cost ([`durations_s`]).
fn random_operations(scenario: &Scenario) -> u64 {
    let random = |phase: &&PhaseDef| phase.ops_spec().distribution != Distribution::Sequential;
    let counted = |phase: &&PhaseDef| phase.kind.runs_ops() && phase.duration_ms().is_none();
    scenario.phases.iter().filter(counted).filter(random).filter_map(|p| crate::estimate::units(scenario, p)).sum()
}

/// Seconds of the phases run for a duration.
fn durations_s(scenario: &Scenario) -> f64 {
    scenario.phases.iter().filter_map(PhaseDef::duration_ms).sum::<u64>() as f64 / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget regime's own example: 3 000 000 records of 100 bytes read in 128 MiB.
    fn scenario(flags: &str) -> Scenario {
        let text = format!(
            "timeout = 600\nmemory = \"128MiB\"\nengines = [\"lmdb\"]\n{flags}\n[dataset]\nrecords = 3000000\n\
             [[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\n"
        );
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn regression_a_row_larger_than_its_budget_gets_time_for_its_misses() {
        let s = scenario("");
        let v = &s.all_variants()[0];
        let raw = 3_000_000 * 116;
        let t = row_timeout(&s, v, raw, None);
        // 6 000 000 operations, 61% of them missing 128 MiB of 348 MB: ~7 300 s more.
        assert!(t.secs > 6000 && t.secs < 9000, "{t:?}");
        assert!(t.why.contains("operations expected to miss the 128.0 MiB budget") && t.why.contains("--timeout"));
        let fits = row_timeout(&s, v, 100 << 20, None);
        assert_eq!(fits.secs, 600, "{fits:?}");
    }

    #[test]
    fn regression_phases_run_for_a_duration_or_in_key_order_add_no_misses() {
        // larger-than-memory.toml's shape: 20 M records loaded in key order, then timed phases;
        // counting each timed phase as 20 M random reads made its timeout 34 hours.
        let mut s = scenario("");
        s.dataset.records = 20_000_000;
        s.phases[0].distribution = Some(Distribution::Sequential);
        s.phases[1].duration = Some("30s".into());
        let v = &s.all_variants()[0];
        let t = row_timeout(&s, v, 20_000_000 * 116, None);
        assert_eq!(t.secs, 630, "{t:?}");
        assert!(
            !t.why.contains("expected to miss") && t.why.contains("30 s of its phases run for a duration"),
            "{t:?}"
        );
    }

    #[test]
    fn the_estimate_lengthens_a_timeout_and_timeout_fixes_it() {
        let s = scenario("");
        let v = &s.all_variants()[0];
        let t = row_timeout(&s, v, 1 << 20, Some(1000.0));
        assert_eq!(t.secs, 4000);
        assert!(t.why.starts_with("4x the row's estimate of 1000 s"), "{t:?}");
        let mut fixed = scenario("");
        fixed.timeout_fixed = true;
        let t = row_timeout(&fixed, v, 3_000_000 * 116, Some(1000.0));
        assert_eq!(t, RowTimeout { secs: 600, why: "600 s, as --timeout sets it".into() });
    }
}
