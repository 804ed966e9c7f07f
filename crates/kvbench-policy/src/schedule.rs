//! A run decided before any of its rows runs, then driven row by row. The plan holds the data
//! every worker derives, the order in which rows and repetitions run, and each row's job. What
//! is only known once a row starts (its directory, the URL of the server started for it) is
//! filled in then ([`JobPlan::place`]).
//!
//! [`run`] drives the rows: the policy decides what runs, in what order, when the run stops and
//! how each row ended; the orchestrator, through [`Runner`], does the work (servers, worker
//! processes, the result file). So the run goes down once: the orchestrator hands its rows to
//! the policy and is called back for each step, and the policy never imports the orchestrator.

use std::path::Path;

use crate::result::EngineResult;
use crate::scenario::Scenario;

use super::dataset::{resolve_guarded, ResolvedData};
use super::expect::{interrupt, judge, Expect};
use super::jobs::{build, JobPlan, RowFacts};

pub struct RunPlan {
    pub data: ResolvedData,
    /// (repetition, row index) in the scenario's `order`.
    pub order: Vec<(u32, usize)>,
    /// Each row's job, or why it cannot run (its engine is missing here, or a phase is refused):
    /// such a row fails alone.
    pub jobs: Vec<Result<JobPlan, String>>,
    /// Each row's declared outcome (`expect`), which its judgement takes into account.
    pub expect: Vec<Option<Expect>>,
}

/// Plan the run of `scenario` for its rows (`rows[i]`: row i's facts, or why it cannot run), with the
/// plan file (when the data needs one) under `plan_dir`, refused when it and the stores would
/// not fit on `data_dir`'s file system (when given).
pub fn plan(
    scenario: &Scenario,
    plan_dir: &Path,
    data_dir: Option<&Path>,
    rows: &[Result<RowFacts<'_>, String>],
) -> anyhow::Result<RunPlan> {
    let data = resolve_guarded(scenario, plan_dir, data_dir)?;
    let order = scenario.order.schedule(rows.len(), scenario.repetitions.max(1));
    let jobs = rows.iter().map(|r| r.as_ref().map_err(Clone::clone).and_then(|f| build(scenario, &data, f))).collect();
    let expect = scenario.all_variants().iter().map(|v| v.expect).collect();
    Ok(RunPlan { data, order, jobs, expect })
}

/// Where a row stands in the run: its index among the scenario's rows, its repetition, and its
/// place (`nth` of `of`, from 0) in the run's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowAt {
    pub row: usize,
    pub repetition: u32,
    pub nth: usize,
    pub of: usize,
}

/// A row as measured: its own result, then one per host it ran on (`--hosts`).
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub row: EngineResult,
    pub hosts: Vec<EngineResult>,
}

/// The orchestrator's side of a run that [`run`] drives.
pub trait Runner {
    /// What the run gives back once every row ran or it stopped.
    type Output;
    /// The run is planned and nothing ran yet.
    fn begin(&mut self, plan: &RunPlan) -> anyhow::Result<()>;
    /// Why the run was asked to stop (a signal), once it was: no row starts after that.
    fn stopped(&self) -> Option<String>;
    /// The row run with its placed job, or failed with the reason it has none. The worker's own
    /// failure (a crash, a timeout, a refused job) is left in `error` for the judgement.
    fn measure(&mut self, at: RowAt, data: &ResolvedData, job: &Result<JobPlan, String>) -> Measured;
    /// The row and its hosts' rows, judged.
    fn keep(&mut self, at: RowAt, rows: Measured);
    /// Every row ran, or the run stopped.
    fn end(self) -> Self::Output;
}

/// Plan the run ([`plan`]), then run its rows in order through `runner`: each row measured,
/// judged (its hosts' rows too), marked interrupted when a signal stopped the run while it ran,
/// and kept. After a stopping signal no new row starts.
pub fn run<R: Runner>(
    scenario: &Scenario,
    plan_dir: &Path,
    data_dir: Option<&Path>,
    rows: &[Result<RowFacts<'_>, String>],
    mut runner: R,
) -> anyhow::Result<R::Output> {
    let planned = plan(scenario, plan_dir, data_dir, rows)?;
    runner.begin(&planned)?;
    let of = planned.order.len();
    for (nth, &(repetition, row)) in planned.order.iter().enumerate() {
        if runner.stopped().is_some() {
            break;
        }
        let at = RowAt { row, repetition, nth, of };
        let job = &planned.jobs[row];
        let mut measured = runner.measure(at, &planned.data, job);
        for r in std::iter::once(&mut measured.row).chain(measured.hosts.iter_mut()) {
            judge(planned.expect[row], r);
        }
        // A row that never had a job did not run: its reason stays its ending.
        if let (Some(why), Ok(_)) = (runner.stopped(), job) {
            interrupt(&mut measured.row, &why);
        }
        runner.keep(at, measured);
    }
    Ok(runner.end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Capabilities;
    use crate::result::{PhaseResult, Status};
    use crate::scenario::Variant;

    const TWO_ROWS: &str = r#"
engines = ["memory", "other"]
repetitions = 2
[dataset]
records = 50
[[phase]]
kind = "load"
[[phase]]
kind = "get"
count = 20
"#;

    #[test]
    fn every_row_is_planned_before_any_runs_and_a_row_that_cannot_run_fails_alone() {
        let s: Scenario = toml::from_str(TWO_ROWS).unwrap();
        s.check().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let variants = s.all_variants();
        let options = Default::default();
        let caps = Capabilities { persistent: true, ..Default::default() };
        let ready = RowFacts { variant: &variants[0], options: &options, caps, runtime: "rust", server: false };
        let rows = [Ok(ready), Err("engine `other` is not installed".to_string())];
        let p = plan(&s, tmp.path(), None, &rows).unwrap();
        assert_eq!(p.order.len(), 4, "two rows, two repetitions each: {:?}", p.order);
        let job = p.jobs[0].as_ref().unwrap();
        assert!(job.job.dir.as_os_str().is_empty() && job.job.url.is_none(), "placed only when the row runs");
        assert_eq!(job.phases.iter().map(|x| x.kind.as_str()).collect::<Vec<_>>(), ["open", "load", "get", "close"]);
        assert_eq!(p.jobs[1].as_ref().err().map(String::as_str), Some("engine `other` is not installed"));
    }

    /// A runner that runs nothing: row 1's second phase fails, a row without a job fails with
    /// its reason, and a signal arrives during the row `stop_during` (counted from 0).
    #[derive(Default)]
    struct Script {
        began: bool,
        measured: Vec<RowAt>,
        kept: Vec<EngineResult>,
        stop_during: Option<usize>,
    }

    impl Runner for Script {
        type Output = Script;
        fn begin(&mut self, plan: &RunPlan) -> anyhow::Result<()> {
            assert!(!self.began && self.measured.is_empty(), "the run begins once, before any row");
            assert_eq!(plan.jobs.len(), 2);
            self.began = true;
            Ok(())
        }
        fn stopped(&self) -> Option<String> {
            let stop = self.stop_during.is_some_and(|n| self.measured.len() > n);
            stop.then(|| "interrupted by SIGTERM".to_string())
        }
        fn measure(&mut self, at: RowAt, _: &ResolvedData, job: &Result<JobPlan, String>) -> Measured {
            self.measured.push(at);
            let phase = |name: &str, status| PhaseResult { name: name.into(), status, ..Default::default() };
            let mut row = EngineResult { label: format!("row{}", at.row), ..Default::default() };
            row.phases = vec![phase("load", Status::Ok), phase("get", Status::Ok)];
            if at.row == 1 {
                row.phases[1] = PhaseResult { reason: Some("3 missing".into()), ..phase("get", Status::Failed) };
            }
            row.error = job.as_ref().err().cloned();
            Measured { row, hosts: Vec::new() }
        }
        fn keep(&mut self, at: RowAt, rows: Measured) {
            assert_eq!(self.measured.last(), Some(&at), "a row is kept right after it was measured");
            self.kept.push(rows.row);
        }
        fn end(self) -> Script {
            self
        }
    }

    fn two_rows() -> Scenario {
        let s: Scenario = toml::from_str(TWO_ROWS).unwrap();
        s.check().unwrap();
        s
    }

    fn ready<'a>(
        variant: &'a Variant,
        options: &'a std::collections::BTreeMap<String, serde_json::Value>,
    ) -> RowFacts<'a> {
        let caps = Capabilities { persistent: true, ..Default::default() };
        RowFacts { variant, options, caps, runtime: "rust", server: false }
    }

    #[test]
    fn the_policy_runs_every_row_in_its_order_and_judges_each_before_it_is_kept() {
        let (s, tmp, options) = (two_rows(), tempfile::tempdir().unwrap(), Default::default());
        let variants = s.all_variants();
        let rows = [ready(&variants[0], &options), ready(&variants[1], &options)].map(Ok);
        let done = run(&s, tmp.path(), None, &rows, Script::default()).unwrap();
        let order = plan(&s, tmp.path(), None, &rows).unwrap().order;
        let ran: Vec<_> = done.measured.iter().map(|a| (a.repetition, a.row)).collect();
        assert_eq!(ran, order);
        assert!(done.measured.iter().enumerate().all(|(n, a)| a.nth == n && a.of == 4));
        let row1 = done.kept.iter().find(|r| r.label == "row1").unwrap();
        assert_eq!((row1.status, row1.error.as_deref()), (Status::Failed, Some("phase get: 3 missing")));
        assert!(done.kept.iter().filter(|r| r.label == "row0").all(|r| r.status == Status::Ok));
    }

    #[test]
    fn a_row_that_cannot_run_is_kept_failed_with_its_reason_even_when_the_run_stops() {
        let (s, tmp, options) = (two_rows(), tempfile::tempdir().unwrap(), Default::default());
        let variants = s.all_variants();
        let rows = [Err("engine `other` is not installed".to_string()), Ok(ready(&variants[1], &options))];
        let script = Script { stop_during: Some(0), ..Default::default() };
        let done = run(&s, tmp.path(), None, &rows, script).unwrap();
        assert_eq!(done.measured.len(), 1, "no row starts after the signal");
        let r = &done.kept[0];
        assert_eq!((r.status, r.error.as_deref()), (Status::Failed, Some("engine `other` is not installed")));
    }

    #[test]
    fn after_a_stopping_signal_the_running_row_is_interrupted_and_no_new_row_starts() {
        let (s, tmp, options) = (two_rows(), tempfile::tempdir().unwrap(), Default::default());
        let variants = s.all_variants();
        let rows = [ready(&variants[0], &options), ready(&variants[1], &options)].map(Ok);
        let script = Script { stop_during: Some(1), ..Default::default() };
        let done = run(&s, tmp.path(), None, &rows, script).unwrap();
        assert_eq!(done.kept.len(), 2, "the row running at the signal is kept; none starts after it");
        let (first, second) = (&done.kept[0], &done.kept[1]);
        assert_eq!(first.status, Status::Ok);
        assert_eq!(second.status, Status::Interrupted);
        let after = if second.label == "row1" { "after phase load" } else { "after phase get" };
        assert_eq!(second.error.as_deref(), Some(format!("interrupted by SIGTERM {after}").as_str()));
    }

    #[test]
    fn placing_a_job_sets_where_it_runs_and_nothing_else() {
        let s: Scenario = toml::from_str(TWO_ROWS).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let variants = s.all_variants();
        let options = Default::default();
        let row = RowFacts {
            variant: &variants[0],
            options: &options,
            caps: Default::default(),
            runtime: "rust",
            server: true,
        };
        let mut job = plan(&s, tmp.path(), None, &[Ok(row)]).unwrap().jobs.remove(0).unwrap();
        let before = job.job.clone();
        job.place(Path::new("/d"), Some("redis+unix:///s".into()), Some("t".into()));
        assert_eq!(
            (job.job.dir.to_str(), job.job.url.as_deref(), job.job.token.as_deref()),
            (Some("/d"), Some("redis+unix:///s"), Some("t"))
        );
        let unplaced = kvbench_model::job::Job { dir: before.dir.clone(), url: None, token: None, ..job.job.clone() };
        assert_eq!(unplaced, before);
    }
}
