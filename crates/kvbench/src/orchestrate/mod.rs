//! The run: build or reuse the plan, start the servers a run needs, spawn one worker per
//! engine variant, follow its events with a timeout, write the result file after each
//! engine, and stop everything on the way out (also on Ctrl-C).

mod budget;
mod context;
mod disk;
mod fault;
mod job;
pub mod process;
mod remote;
mod results;
mod rows;
mod servers;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kvbench_model::result::{PlanInfo, RunResult, SCHEMA};
use kvbench_model::scenario::{Scenario, Variant};
use kvbench_worker::sys;

pub use context::RunOptions;
use context::Shared;
use job::measure_row;
use kvbench_policy::schedule::RunPlan;
pub use process::interrupted;
pub use remote::HostsRun;
use results::{now_id, private_run_dir, run_id, unique_id, ResultFile};
pub use results::{utc_stamp, Written, LATEST};
use rows::{resolve_rows, row_facts, RowEngine};
use servers::ServerPool;

/// True from the run's directory on to its results' final write: a signal then stops the
/// running engine and lets the run write its results; before and after, it exits at once.
static ENGINES_RUNNING: AtomicBool = AtomicBool::new(false);

/// Run a scenario; returns the result and where it was written.
pub fn run(s: &Scenario, o: &RunOptions) -> anyhow::Result<(RunResult, Written)> {
    let variants = s.all_variants();
    // Bad input fails before anything runs: repeated labels, unknown engines and options.
    let resolved = resolve_rows(&variants, o.scenario_file.as_deref())?;
    // A password in a row's URL is redacted from everything the run writes and prints.
    variants.iter().filter_map(|v| v.url.as_deref()).for_each(kvbench_model::secret::remember_url);
    process::install_signals(&ENGINES_RUNNING);
    if let Err(e) = std::fs::create_dir_all(&o.out_dir) {
        // Not fatal: the results go to a fallback place at the end.
        crate::say!("WARNING: cannot create {}: {e}", o.out_dir.display());
    }
    std::fs::create_dir_all(&o.data_dir)
        .map_err(|e| anyhow::anyhow!("cannot create the data directory {}: {e}", o.data_dir.display()))?;
    let (started_at, stamp) = now_id();
    let unique = unique_id(&stamp);
    let run_id = run_id(&unique, &s.name);
    let mut file = ResultFile::new(o.out_dir.join(format!("{run_id}.json")));
    let env = sys::environment(&o.data_dir);
    let warnings = warnings(s, &variants, &env);

    // The data: derived by every worker from seeds; a plan file only where data is stored.
    let t0 = Instant::now();
    let guard = o.size_check.then_some(o.data_dir.as_path());
    let facts = row_facts(&variants, &resolved);
    let planned = within_timeout(s.timeout, || kvbench_policy::schedule::plan(s, &o.plan_dir, guard, &facts))?;
    let plan = planned.data.info(s, t0.elapsed().as_nanos() as u64);
    if !planned.data.note.is_empty() {
        crate::say!("plan: {}", planned.data.note);
    }
    let head = Head { run_id: run_id.clone(), started_at, plan, environment: env, warnings };
    let mut result = new_result(s, o, head)?;
    ENGINES_RUNNING.store(true, Ordering::SeqCst);
    let run_data = run_dir(o, &unique)?;
    let shared = Shared { s, o, data: &planned.data, run_data: &run_data };
    run_rows(&shared, (&variants, &resolved), &planned, &mut result, &mut file);
    if let (Some(h), false) = (&o.hosts, o.keep_data) {
        h.cleanup(&unique);
    }
    if !o.keep_data {
        keep_what_failed_rows_left(&run_data);
    }
    let written = file.finish(&mut result).map_err(|e| {
        let json = serde_json::to_string(&result).unwrap_or_default();
        anyhow::anyhow!("the results could not be written anywhere ({e}); here they are:\n{json}")
    });
    ENGINES_RUNNING.store(false, Ordering::SeqCst);
    Ok((result, written?))
}

/// `work` (planning), or exit 2 once it has taken `timeout_s`: the timeout bounds the run from
/// its planning on, and nothing has started yet that would need stopping.
fn within_timeout<T>(timeout_s: u64, work: impl FnOnce() -> T) -> T {
    let limit = Duration::from_secs(timeout_s.max(1));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if rx.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            crate::say!(
                "error: planning took longer than the timeout ({} s; `timeout` in the scenario or --timeout): \
                 fewer records or operations plan faster",
                limit.as_secs()
            );
            std::process::exit(2);
        }
    });
    let out = work();
    drop(tx);
    out
}

/// Remove the run's directory when it is empty; else it holds the job files and logs of failed
/// rows, which their errors name: marked kept, so no later run sweeps them as a killed run's.
fn keep_what_failed_rows_left(run_data: &Path) {
    if std::fs::remove_dir(run_data).is_ok() || !run_data.exists() {
        return;
    }
    let why = "kept: the job files and logs of rows that failed\n";
    if std::fs::write(run_data.join(results::KEEP_MARKER), why).is_ok() {
        crate::say!("kept {}: the job files and logs of the rows that failed", run_data.display());
    }
}

/// What a run's result starts with, besides the scenario.
struct Head {
    run_id: String,
    started_at: u64,
    plan: PlanInfo,
    environment: kvbench_model::result::Environment,
    warnings: Vec<String>,
}

/// A run's result before any row ran.
fn new_result(s: &Scenario, o: &RunOptions, h: Head) -> anyhow::Result<RunResult> {
    Ok(RunResult {
        schema: SCHEMA.into(),
        kvbench_version: env!("CARGO_PKG_VERSION").into(),
        run_id: h.run_id,
        started_at: h.started_at,
        scenario: s.name.clone(),
        command: o.command.clone(),
        intent: s.intent.clone(),
        sync: s.sync.to_string(),
        plan: h.plan,
        workload: serde_json::to_value(s)?,
        environment: h.environment,
        warnings: h.warnings,
        engines: Vec::new(),
    })
}

/// The environment's warnings and a mix of durability settings, shown now and kept.
fn warnings(s: &Scenario, variants: &[Variant], env: &kvbench_model::result::Environment) -> Vec<String> {
    let mut warnings = sys::warnings(env);
    let syncs: std::collections::BTreeSet<String> = variants.iter().map(|v| v.effective_sync(s).to_string()).collect();
    let budgeted = variants.iter().any(|v| v.budget(s).is_some());
    if let (true, Some(kb)) = (budgeted, env.read_ahead_kb.filter(|&kb| kb > READ_AHEAD_WARN_KB)) {
        warnings.push(format!(
            "the data device reads ahead {kb} KiB: under a memory budget, a store that leaves read-ahead on \
             turns each miss into a read that long (LMDB: option no_readahead; RocksDB: direct_reads)"
        ));
    }
    if syncs.len() > 1 {
        warnings.push(format!(
            "rows use different durability settings ({}): compare write figures with care",
            syncs.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    for w in &warnings {
        crate::say!("WARNING: {w}");
    }
    warnings
}

/// Read-ahead above which a run with a memory budget is warned: the kernel's default is 128 KiB.
const READ_AHEAD_WARN_KB: u64 = 512;

/// The run's private directory, after sweeping what killed runs left behind.
fn run_dir(o: &RunOptions, unique: &str) -> anyhow::Result<PathBuf> {
    for old in results::sweep_stale(&o.data_dir) {
        crate::say!("removed {}: data of an earlier run killed before it could clean up", old.display());
    }
    let run_data = o.data_dir.join(unique);
    private_run_dir(&run_data).map_err(|e| anyhow::anyhow!(e))?;
    if o.keep_data {
        let _ = std::fs::write(run_data.join(results::KEEP_MARKER), "kept by --keep-data\n");
    }
    Ok(run_data)
}

/// Every row of every repetition in the scenario's `order`, the result file rewritten after
/// each; after a stopping signal no new row starts. The servers stop (and their directories
/// go) when the pool is dropped here.
fn run_rows(
    sh: &Shared<'_>,
    (variants, resolved): (&[Variant], &[RowEngine]),
    planned: &RunPlan,
    result: &mut RunResult,
    file: &mut ResultFile,
) {
    let mut pool = ServerPool::new(sh.run_data, sh.o.keep_data);
    let order = &planned.order;
    for (n, &(rep, i)) in order.iter().enumerate() {
        if interrupted() {
            break;
        }
        crate::progress::engine(n + 1, order.len());
        let row_of = (&resolved[i], &planned.jobs[i]);
        let (row, per_host) = measure_row(sh, (&variants[i], i), row_of, rep, result.plan.raw_bytes, &mut pool);
        result.engines.push(row);
        result.engines.extend(per_host);
        // Written after each engine: a later crash loses nothing measured.
        file.update(result);
    }
    pool.stop_all();
}
