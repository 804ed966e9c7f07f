//! What a phase's kill (`kill = { member, after }`) cost: the time to recover and the latency
//! around it, derived from the phase's timeline once the orchestrator has killed the member. Pure,
//! so the rule is tested alone.
//!
//! The time to recover runs from the kill to the end of the disruption it caused, read from the
//! timeline: the last interval with errors, then any intervals right after it in which no
//! operation finished (a stall); without errors, the stall that begins with the kill (clients
//! that wait for a new leader rather than fail). A stall after the phase ran smoothly again is
//! not the kill's (on a busy machine the whole harness pauses now and then). Its resolution is
//! one interval (the job's `interval_ms`, 100 ms when a phase kills). When the disruption lasts
//! to the phase's end, it did not recover before the phase ended.

use std::collections::BTreeMap;

use crate::histogram::{decode_histogram, new_histogram};
use crate::result::{Fault, Interval, PhaseResult, Status};

/// (time to recover in ms, or None when the phase ended first; p99 before the kill; worst
/// interval p99 from the kill's interval on). `wall_ms`: the phase's length.
pub fn recovery(intervals: &[Interval], interval_ms: u64, kill_ms: u64, wall_ms: u64) -> (Option<u64>, u64, u64) {
    let iv = interval_ms.max(1);
    let by: BTreeMap<u64, &Interval> = intervals.iter().map(|i| (i.t_ms / iv, i)).collect();
    let first = kill_ms / iv;
    let last = wall_ms.saturating_sub(1) / iv;
    let bad = |n: u64| by.get(&n).is_none_or(|i| i.errors > 0 || i.ops == 0);
    let last_error = (first..=last).rev().find(|&n| by.get(&n).is_some_and(|i| i.errors > 0));
    // Where the disruption may still go on: after the last error, or from the kill's interval
    // (which also holds the operations finished before the kill).
    let mut n = match last_error {
        Some(e) => e + 1,
        None if bad(first) => first,
        None => first + 1,
    };
    while n <= last && bad(n) {
        n += 1;
    }
    let recovered = if n > last && (last_error.is_some() || n > first + 1) {
        None
    } else if last_error.is_none() && n == first + 1 {
        Some(0)
    } else {
        Some((n * iv).saturating_sub(kill_ms))
    };
    let mut before = new_histogram();
    for i in by.range(..first).map(|(_, i)| i) {
        if let Ok(h) = decode_histogram(&i.hdr) {
            let _ = before.add(&h);
        }
    }
    let p99_before = if before.is_empty() { 0 } else { before.value_at_quantile(0.99) };
    let worst = by.range(first..).map(|(_, i)| i.p99_ns).max().unwrap_or(0);
    (recovered, p99_before, worst)
}

/// The fault of a phase whose member was killed `killed_at_ms` after it started: recorded in
/// the phase, and errors that only the kill explains are the declared outcome (status
/// `expected`), not a failure. Wrong or missing values still fail the phase.
pub fn record(result: &mut PhaseResult, member: String, after_ms: u64, killed_at_ms: u64, interval_ms: u64) {
    let wall_ms = result.wall_ns / 1_000_000;
    let (recovery_ms, p99_before_ns, p99_worst_after_ns) =
        recovery(&result.intervals, interval_ms, killed_at_ms, wall_ms.max(1));
    // The phase's reason reads "N errors; first: MESSAGE".
    let reason = result.reason.as_deref().filter(|_| result.errors > 0);
    let first_error = reason.map(|r| r.split_once("first: ").map(|(_, m)| m).unwrap_or(r).to_string());
    let f = Fault {
        member,
        after_ms,
        killed_at_ms,
        errors: result.errors,
        first_error,
        errors_by: result.error_classes.clone(),
        recovery_ms,
        interval_ms,
        p99_before_ns,
        p99_worst_after_ns,
    };
    result.notes.push(f.describe());
    let only_errors =
        result.status == Status::Failed && result.errors > 0 && result.mismatches == 0 && result.missing == 0;
    if only_errors || result.status == Status::Ok {
        result.status = if result.errors > 0 { Status::Expected } else { Status::Ok };
        result.reason = None;
    }
    result.fault = Some(f);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(t_ms: u64, ops: u64, errors: u64) -> Interval {
        Interval { t_ms, ops, errors, p99_ns: 1000 + errors, ..Default::default() }
    }

    #[test]
    fn recovery_ends_with_the_last_interval_with_errors() {
        // Kill at 250 ms; errors in the 300 and 400 ms intervals; clean from 500 ms on.
        let t = [iv(0, 10, 0), iv(100, 10, 0), iv(200, 10, 0), iv(300, 2, 5), iv(400, 0, 9), iv(500, 10, 0)];
        let (r, _, worst) = recovery(&t, 100, 250, 600);
        assert_eq!(r, Some(250), "end of the 400 ms interval minus the kill");
        assert_eq!(worst, 1009);
    }

    #[test]
    fn a_stall_without_errors_counts_as_not_recovered() {
        // No interval at all between 300 and 700 ms: nothing finished, nothing failed.
        let t = [iv(0, 10, 0), iv(100, 10, 0), iv(200, 5, 0), iv(800, 10, 0), iv(900, 10, 0)];
        assert_eq!(recovery(&t, 100, 250, 1000).0, Some(550));
    }

    #[test]
    fn a_stall_after_the_phase_ran_smoothly_again_is_not_the_kills() {
        // The last error at 300 ms, smooth from 400 ms, then the machine pauses at 700 ms.
        let t = [
            iv(0, 10, 0),
            iv(100, 10, 0),
            iv(200, 5, 3),
            iv(300, 5, 1),
            iv(400, 10, 0),
            iv(500, 10, 0),
            iv(600, 10, 0),
            iv(800, 10, 0),
        ];
        assert_eq!(recovery(&t, 100, 150, 900).0, Some(250));
    }

    #[test]
    fn a_phase_that_ends_in_trouble_did_not_recover() {
        let t = [iv(0, 10, 0), iv(100, 3, 4), iv(200, 0, 7)];
        assert_eq!(recovery(&t, 100, 150, 300).0, None);
    }

    #[test]
    fn a_kill_nobody_noticed_recovers_at_once() {
        let t = [iv(0, 10, 0), iv(100, 10, 0), iv(200, 10, 0)];
        assert_eq!(recovery(&t, 100, 120, 300).0, Some(0));
    }

    #[test]
    fn errors_alone_are_the_declared_outcome_but_wrong_values_still_fail() {
        let mut p = PhaseResult {
            status: Status::Failed,
            errors: 12,
            reason: Some("12 errors; first: refused".into()),
            wall_ns: 300_000_000,
            intervals: vec![iv(0, 10, 0), iv(100, 0, 12), iv(200, 10, 0)],
            ..Default::default()
        };
        record(&mut p, "node-1 (pid 7)".into(), 100, 105, 100);
        assert_eq!(p.status, Status::Expected);
        let f = p.fault.as_ref().unwrap();
        assert_eq!((f.errors, f.recovery_ms), (12, Some(95)));
        assert!(p.notes.last().unwrap().contains("recovered 0.1 s after the kill"), "{:?}", p.notes);
        p.status = Status::Failed;
        p.mismatches = 1;
        record(&mut p, "node-1 (pid 7)".into(), 100, 105, 100);
        assert_eq!(p.status, Status::Failed);
    }
}
