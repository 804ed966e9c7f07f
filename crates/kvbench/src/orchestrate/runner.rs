//! The orchestrator's side of a run the policy drives (`kvbench_policy::schedule::run`): once
//! the run is planned it makes the run's directory and starts its result; for each row it
//! starts what the row needs and measures it (`job.rs`); each judged row goes into the result
//! file at once; at the end the servers stop and the result is written for good.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use kvbench_model::result::{EngineResult, RunResult, Status};
use kvbench_model::scenario::{Scenario, Variant};
use kvbench_policy::dataset::ResolvedData;
use kvbench_policy::jobs::JobPlan;
use kvbench_policy::schedule::{Measured, RowAt, RunPlan, Runner};
use kvbench_worker::sys;

use super::context::{RunOptions, Shared};
use super::process::{self, interrupted};
use super::results::{row_dir_name, ResultFile, Written};
use super::row_run::run_variant;
use super::rows::RowEngine;
use super::servers::ServerPool;
use super::{run_dir, PlanningWatchdog, STOP_GRACEFULLY};

/// A run's rows as this host runs them, and the result they go into.
pub struct Orchestrator<'a> {
    s: &'a Scenario,
    o: &'a RunOptions,
    variants: &'a [Variant],
    resolved: &'a [RowEngine],
    result: RunResult,
    file: ResultFile,
    /// The run's unique name, its private directory's.
    unique: String,
    run_data: PathBuf,
    pool: ServerPool,
    /// Bounds the planning by the run's timeout until the run begins.
    watchdog: Option<PlanningWatchdog>,
    planning_from: Instant,
    row_from: Instant,
}

/// What the run's rows are and where its result goes.
pub struct Start<'a> {
    pub rows: (&'a [Variant], &'a [RowEngine]),
    pub result: RunResult,
    pub file: ResultFile,
    pub unique: String,
}

impl<'a> Orchestrator<'a> {
    /// Ready to run `start`'s rows; the planning starts now and is bounded by the timeout.
    pub fn new(scenario: &'a Scenario, options: &'a RunOptions, start: Start<'a>) -> Self {
        let run_data = options.data_dir.join(&start.unique);
        Orchestrator {
            s: scenario,
            o: options,
            variants: start.rows.0,
            resolved: start.rows.1,
            result: start.result,
            file: start.file,
            unique: start.unique,
            pool: ServerPool::new(&run_data, options.keep_data),
            run_data,
            watchdog: Some(PlanningWatchdog::start(scenario.timeout)),
            planning_from: Instant::now(),
            row_from: Instant::now(),
        }
    }

    /// Row `at`'s own directory inside the run's.
    fn row_dir(&self, at: RowAt) -> PathBuf {
        let label = self.variants[at.row].label();
        self.run_data.join(row_dir_name(&label, at.row, at.repetition))
    }

    /// The row as it starts: what it is, before it runs.
    fn new_row(&self, at: RowAt) -> EngineResult {
        let v = &self.variants[at.row];
        let options = self.resolved[at.row].as_ref().map(|ready| ready.options.effective());
        EngineResult {
            label: v.label(),
            engine: v.name.clone(),
            repetition: at.repetition,
            sync: v.effective_sync(self.s).to_string(),
            open_mode: format!("{:?}", v.open).to_lowercase(),
            // In effect: resolved (the worker's hello says the same); as given when unresolved.
            options: options.unwrap_or_else(|_| v.options.clone()),
            budget_requested: v.budget(self.s),
            ..Default::default()
        }
    }
}

impl Runner for Orchestrator<'_> {
    type Output = anyhow::Result<(RunResult, Written)>;

    fn begin(&mut self, plan: &RunPlan) -> anyhow::Result<()> {
        self.watchdog = None;
        self.result.plan = plan.data.info(self.s, self.planning_from.elapsed().as_nanos() as u64);
        if !plan.data.note.is_empty() {
            crate::note!("plan: {}", plan.data.note);
        }
        STOP_GRACEFULLY.store(true, Ordering::SeqCst);
        run_dir(self.o, &self.run_data)
    }

    fn stopped(&self) -> Option<String> {
        interrupted().then(process::interruption)
    }

    fn measure(&mut self, at: RowAt, data: &ResolvedData, job: &Result<JobPlan, String>) -> Measured {
        crate::progress::engine(at.nth + 1, at.of);
        self.row_from = Instant::now();
        let mut m = Measured { row: self.new_row(at), hosts: Vec::new() };
        let ready = match &self.resolved[at.row] {
            Ok(ready) => ready,
            Err(why) => {
                crate::note!("{:>16}: skipped: {why}", m.row.label);
                m.row.error = Some(why.clone());
                return m;
            }
        };
        let dir = self.row_dir(at);
        let sh = Shared { s: self.s, o: self.o, data, run_data: &self.run_data };
        let v = &self.variants[at.row];
        run_variant(&sh, v, ready, job, &dir, &mut self.pool, &mut m.row, &mut m.hosts);
        explain_full_disk(&mut m.row, &self.run_data);
        let (alloc, apparent) = sys::space(&dir);
        m.row.space_bytes = alloc;
        m.row.apparent_bytes = apparent;
        m.row.log_space_bytes = sys::space_of(&dir, &super::disk::is_log_file);
        m.row.space_amplification = alloc as f64 / data.raw_bytes.max(1) as f64;
        if !self.o.keep_data {
            let _ = std::fs::remove_dir_all(&dir);
        }
        m
    }

    fn keep(&mut self, at: RowAt, Measured { mut row, hosts }: Measured) {
        if self.resolved[at.row].is_ok() {
            tidy(&row, &self.row_dir(at));
            let status = match (&row.error, row.status) {
                (_, Status::Interrupted) => "interrupted".to_string(),
                (None, _) => "ok".to_string(),
                (Some(e), _) => format!("FAILED: {}", e.lines().next().unwrap_or("")),
            };
            crate::note!("{:>16}: {status} ({:.1} s)", row.label, self.row_from.elapsed().as_secs_f64());
        }
        row.wall_ns = self.row_from.elapsed().as_nanos() as u64;
        self.result.engines.push(row);
        self.result.engines.extend(hosts);
        // Written after each row: a later crash loses nothing measured.
        self.file.update(&mut self.result);
    }

    fn end(mut self) -> Self::Output {
        self.pool.stop_all();
        if let (Some(h), false) = (&self.o.hosts, self.o.keep_data) {
            h.cleanup(&self.unique);
        }
        if !self.o.keep_data {
            keep_what_failed_rows_left(&self.run_data);
        }
        let written = self.file.finish(&mut self.result).map_err(|e| {
            let json = serde_json::to_string(&self.result).unwrap_or_default();
            anyhow::anyhow!("the results could not be written anywhere ({e}); here they are:\n{json}")
        });
        STOP_GRACEFULLY.store(false, Ordering::SeqCst);
        Ok((self.result, written?))
    }
}

/// A failed row on a (nearly) full data file system says so: engines report it as anything
/// from ENOSPC to EIO (LMDB) or an abort.
fn explain_full_disk(row: &mut EngineResult, data: &Path) {
    let Some(e) = row.error.as_mut() else { return };
    if !e.contains("data file system") && process::disk_nearly_full(data) {
        e.push_str(&format!("; {}", process::disk_state(data)));
    }
}

/// Remove the run's directory when it is empty; else it holds the job files and logs of failed
/// rows, which their errors name, or what a worker wrote to its log: marked kept, so no later
/// run sweeps them as a killed run's.
fn keep_what_failed_rows_left(run_data: &Path) {
    if std::fs::remove_dir(run_data).is_ok() || !run_data.exists() {
        return;
    }
    let why = "kept: the job files and logs of rows that failed or whose worker wrote to its log\n";
    if std::fs::write(run_data.join(super::results::KEEP_MARKER), why).is_ok() {
        crate::note!("kept {}: the logs workers wrote and the job files of failed rows", run_data.display());
    }
}

/// The row's job file and log once it is judged: a failed row keeps both for diagnosis,
/// without the credentials they held; otherwise the job file and an empty log go (an
/// interrupted row's log too: the worker was killed on purpose).
fn tidy(row: &EngineResult, dir: &Path) {
    let (job, log) = (dir.with_extension("job.json"), dir.with_extension("log"));
    if row.status == Status::Interrupted {
        let _ = std::fs::remove_file(&job);
        let _ = std::fs::remove_file(&log);
        return;
    }
    for kept in [&log, &job] {
        if let Err(e) = kvbench_model::secret::scrub_file(kept) {
            crate::note!("WARNING: cannot redact {}: {e}; remove it by hand", kept.display());
        }
    }
    if row.status == Status::Failed {
        return;
    }
    let _ = std::fs::remove_file(&job);
    if std::fs::metadata(&log).map(|m| m.len() == 0).unwrap_or(false) {
        let _ = std::fs::remove_file(&log);
    }
}
