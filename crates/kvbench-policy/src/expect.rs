//! A scenario row's declared outcome (`expect = "mismatch"` on an `[[engine]]` table) and the
//! decision whether the row behaved as declared.
//!
//! Article 003 built its CDB with `put_add`, so reads of the dictionary's repeated names return
//! the first copy: the row fails verification by design. Declaring that keeps the failure
//! visible (the row and its phases read "expected", the wrong values are still counted) without
//! failing the run; a declared row that verifies cleanly, or fails in any other way, fails.
//!
//! [`decide`] is pure: the orchestrator calls it with the row's phases and the error the worker
//! reported (a crash, a protocol error: not the phases' own failures) and stores the outcome
//! with [`apply`].

use crate::result::{EngineResult, PhaseResult, Status};

pub use crate::spec::Expect;

/// The status of a row and of each of its phases, after its declaration is taken into account.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Status,
    /// The row's error (None when it is Ok or Expected).
    pub error: Option<String>,
    /// One status per phase, in order.
    pub phases: Vec<Status>,
}

/// A phase that failed verification with wrong values only: the declared kind of failure.
fn mismatch_only(phase: &PhaseResult) -> bool {
    phase.status == Status::Failed && phase.mismatches > 0 && phase.missing == 0 && phase.errors == 0
}

fn first_failure(phases: &[PhaseResult]) -> Option<String> {
    let p = phases.iter().find(|p| p.status == Status::Failed)?;
    Some(format!("phase {}: {}", p.name, p.reason.clone().unwrap_or_else(|| "failed".into())))
}

/// Decides a row's status. `worker_error` is an error of the worker itself (crash, timeout,
/// protocol), not derived from a phase. Without a declaration: failed on any error or failed
/// phase, else ok. With `expect = "mismatch"`: expected when at least one phase has wrong
/// values and every failure is wrong values only; failed otherwise, saying why.
pub fn decide(expect: Option<Expect>, phases: &[PhaseResult], worker_error: Option<&str>) -> Outcome {
    let as_run = || phases.iter().map(|p| p.status).collect();
    let failed = |error: String| Outcome { status: Status::Failed, error: Some(error), phases: as_run() };
    if let Some(e) = worker_error {
        return failed(e.to_string());
    }
    let Some(expect) = expect else {
        return match first_failure(phases) {
            Some(e) => failed(e),
            None => Outcome { status: Status::Ok, error: None, phases: as_run() },
        };
    };
    let declared = format!("expect = \"{}\"", expect.as_str());
    if let Some(p) = phases.iter().find(|p| p.status == Status::Failed && !mismatch_only(p)) {
        let why = p.reason.clone().unwrap_or_else(|| "failed".into());
        return failed(format!("phase {}: {why} (the row declares {declared}: wrong values only)", p.name));
    }
    if !phases.iter().any(mismatch_only) {
        return failed(format!("the row declares {declared}, but every read matched the plan"));
    }
    let phases = phases.iter().map(|p| if mismatch_only(p) { Status::Expected } else { p.status }).collect();
    Outcome { status: Status::Expected, error: None, phases }
}

/// Decides the row from its phases and the worker's own error, which the row holds in `error`
/// until now (None when the worker ended well), and stores the outcome.
pub fn judge(expect: Option<Expect>, row: &mut EngineResult) {
    let worker_error = row.error.take();
    let outcome = decide(expect, &row.phases, worker_error.as_deref());
    apply(row, outcome);
}

/// A row cut short by a stopping signal (`why` says which): interrupted after its last
/// measured phase, and the phases its worker did not finish interrupted too, not failed: the
/// store did nothing wrong.
pub fn interrupt(row: &mut EngineResult, why: &str) {
    row.status = Status::Interrupted;
    let done = row.phases.iter().rev().find(|p| p.status == Status::Ok).map(|p| p.name.clone());
    let at = done.map(|n| format!(" after phase {n}")).unwrap_or_else(|| " before any phase ended".into());
    let why = format!("{why}{at}");
    for p in row.phases.iter_mut().filter(|p| p.status == Status::Failed) {
        p.status = Status::Interrupted;
        p.reason = Some(why.clone());
    }
    row.error = Some(why);
}

/// Stores an outcome in the row: its status and error, and each phase's status.
pub fn apply(row: &mut EngineResult, outcome: Outcome) {
    row.status = outcome.status;
    row.error = outcome.error;
    for (p, s) in row.phases.iter_mut().zip(outcome.phases) {
        p.status = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, status: Status, mismatches: u64, missing: u64, errors: u64) -> PhaseResult {
        let reason =
            (status == Status::Failed).then(|| format!("{mismatches} wrong, {missing} missing, {errors} errors"));
        PhaseResult { name: name.into(), status, mismatches, missing, errors, reason, ..Default::default() }
    }

    fn wrong_values() -> Vec<PhaseResult> {
        vec![
            phase("load", Status::Ok, 0, 0, 0),
            phase("read", Status::Failed, 7, 0, 0),
            phase("write", Status::NotApplicable, 0, 0, 0),
        ]
    }

    #[test]
    fn without_a_declaration_a_failed_phase_fails_the_row() {
        let o = decide(None, &wrong_values(), None);
        assert_eq!(o.status, Status::Failed);
        assert_eq!(o.error.as_deref(), Some("phase read: 7 wrong, 0 missing, 0 errors"));
        assert_eq!(o.phases, [Status::Ok, Status::Failed, Status::NotApplicable]);
        let clean = [phase("load", Status::Ok, 0, 0, 0)];
        assert_eq!(decide(None, &clean, None), Outcome { status: Status::Ok, error: None, phases: vec![Status::Ok] });
    }

    #[test]
    fn declared_wrong_values_are_expected_and_do_not_fail() {
        let o = decide(Some(Expect::Mismatch), &wrong_values(), None);
        assert_eq!(
            o,
            Outcome {
                status: Status::Expected,
                error: None,
                phases: vec![Status::Ok, Status::Expected, Status::NotApplicable],
            }
        );
    }

    #[test]
    fn a_declared_row_that_verifies_cleanly_fails() {
        let clean = [phase("load", Status::Ok, 0, 0, 0), phase("read", Status::Ok, 0, 0, 0)];
        let o = decide(Some(Expect::Mismatch), &clean, None);
        assert_eq!(o.status, Status::Failed);
        assert!(o.error.unwrap().contains("every read matched"));
    }

    #[test]
    fn missing_keys_or_errors_are_not_what_was_declared() {
        for (missing, errors) in [(1, 0), (0, 1)] {
            let mut phases = wrong_values();
            phases.push(phase("read-again", Status::Failed, 3, missing, errors));
            let o = decide(Some(Expect::Mismatch), &phases, None);
            assert_eq!(o.status, Status::Failed, "missing {missing}, errors {errors}");
            assert!(o.error.as_deref().unwrap().starts_with("phase read-again:"), "{:?}", o.error);
            assert_eq!(o.phases[1], Status::Failed, "phases keep their own status when the row fails");
        }
    }

    #[test]
    fn a_worker_error_fails_the_row_whatever_was_declared() {
        for expect in [None, Some(Expect::Mismatch)] {
            let o = decide(expect, &wrong_values(), Some("worker exited with signal 9"));
            assert_eq!((o.status, o.error.as_deref()), (Status::Failed, Some("worker exited with signal 9")));
        }
    }

    #[test]
    fn apply_writes_row_and_phase_statuses() {
        let mut row = EngineResult { phases: wrong_values(), error: Some("stale".into()), ..Default::default() };
        let o = decide(Some(Expect::Mismatch), &row.phases, None);
        apply(&mut row, o);
        assert_eq!((row.status, row.error), (Status::Expected, None));
        assert_eq!(row.phases[1].status, Status::Expected);
        assert_eq!(row.phases[1].mismatches, 7, "the wrong values stay counted");
    }

    #[test]
    fn only_known_declarations_parse() {
        #[derive(serde::Deserialize)]
        struct Row {
            #[allow(dead_code)]
            expect: Expect,
        }
        assert!(toml::from_str::<Row>("expect = \"mismatch\"").is_ok());
        let err = toml::from_str::<Row>("expect = \"error\"").err().unwrap().to_string();
        assert!(err.contains("mismatch"), "{err}");
    }

    #[test]
    fn judging_a_row_takes_the_worker_error_it_holds_and_decides_from_its_phases() {
        let mut crashed =
            EngineResult { phases: wrong_values(), error: Some("worker crashed".into()), ..Default::default() };
        judge(Some(Expect::Mismatch), &mut crashed);
        assert_eq!((crashed.status, crashed.error.as_deref()), (Status::Failed, Some("worker crashed")));
        let mut declared = EngineResult { phases: wrong_values(), ..Default::default() };
        judge(Some(Expect::Mismatch), &mut declared);
        assert_eq!((declared.status, declared.error), (Status::Expected, None));
        assert_eq!(declared.phases[1].status, Status::Expected);
    }
}
