//! A run decided before any of its rows runs: the data every worker derives, the order in
//! which rows and repetitions run, and each row's job. What is only known once a row starts
//! (its directory, the URL of the server started for it) is filled in then
//! ([`JobPlan::place`]); nothing else is decided after this.

use std::path::Path;

use crate::scenario::Scenario;

use super::dataset::{resolve_guarded, ResolvedData};
use super::jobs::{build, JobPlan, RowFacts};

pub struct RunPlan {
    pub data: ResolvedData,
    /// (repetition, row index) in the scenario's `order`.
    pub order: Vec<(u32, usize)>,
    /// Each row's job, or why it cannot run (its engine is missing here, or a phase is refused):
    /// such a row fails alone.
    pub jobs: Vec<Result<JobPlan, String>>,
}

/// Plan the run of `s` for its rows (`rows[i]`: row i's facts, or why it cannot run), with the
/// plan file (when the data needs one) under `plan_dir`, refused when it and the stores would
/// not fit on `data_dir`'s file system (when given).
pub fn plan(
    s: &Scenario,
    plan_dir: &Path,
    data_dir: Option<&Path>,
    rows: &[Result<RowFacts<'_>, String>],
) -> anyhow::Result<RunPlan> {
    let data = resolve_guarded(s, plan_dir, data_dir)?;
    let order = s.order.schedule(rows.len(), s.repetitions.max(1));
    let jobs = rows.iter().map(|r| r.as_ref().map_err(Clone::clone).and_then(|f| build(s, &data, f))).collect();
    Ok(RunPlan { data, order, jobs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Capabilities;

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
