//! The run: its rows checked and its result started here, then handed to the policy
//! (`kvbench_policy::schedule::run`), which plans the run and drives its rows through the
//! [`Orchestrator`] (`runner.rs`): it starts the servers a run needs, spawns one worker per
//! row, follows its events with a timeout, writes the result file after each row, and stops
//! everything on the way out (also on Ctrl-C).

mod budget;
mod context;
mod disk;
mod kill_step;
pub mod process;
mod remote;
mod results;
mod row_run;
mod rows;
mod runner;
mod servers;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use kvbench_model::result::{PlanInfo, RunResult, SCHEMA};
use kvbench_model::scenario::{Scenario, Variant};
use kvbench_worker::sys;

pub use context::RunOptions;
pub use remote::HostsRun;
use results::{now_id, private_run_dir, run_id, unique_id, ResultFile};
pub use results::{Written, LATEST};
use rows::{resolve_rows, row_facts};
use runner::{Orchestrator, Start};

/// True from the run's directory on to its results' final write: a signal then stops the
/// running engine and lets the run write its results; before and after, it exits at once.
static STOP_GRACEFULLY: AtomicBool = AtomicBool::new(false);

/// Run a scenario; returns the result and where it was written. The rows are checked and the
/// result started here; the policy plans the run and drives its rows through the
/// [`Orchestrator`], which runs them.
pub fn run(scenario: &Scenario, options: &RunOptions) -> anyhow::Result<(RunResult, Written)> {
    let variants = scenario.all_variants();
    // Bad input fails before anything runs: repeated labels, unknown engines and options.
    let resolved = resolve_rows(&variants, options.scenario_file.as_deref())?;
    // A password in a row's URL (or the URL it refers to) is redacted from everything the run
    // writes and prints; a reference that does not resolve fails before anything runs.
    for url in variants.iter().filter_map(|v| v.url.as_deref()) {
        kvbench_model::secret::remember_url(url);
        let resolved = kvbench_model::secret::resolve_url(url).map_err(|e| anyhow::anyhow!("{e}"))?;
        kvbench_model::secret::remember_url(&resolved);
    }
    process::install_signals(&STOP_GRACEFULLY);
    if let Err(e) = std::fs::create_dir_all(&options.out_dir) {
        // Not fatal: the results go to a fallback place at the end.
        crate::note!("WARNING: cannot create {}: {e}", options.out_dir.display());
    }
    std::fs::create_dir_all(&options.data_dir)
        .map_err(|e| anyhow::anyhow!("cannot create the data directory {}: {e}", options.data_dir.display()))?;
    let (started_at, stamp) = now_id();
    let unique = unique_id(&stamp);
    let run_id = run_id(&unique, &scenario.name);
    let file = ResultFile::new(options.out_dir.join(format!("{run_id}.json")));
    let env = sys::environment(&options.data_dir);
    let warnings = warnings(scenario, &variants, &env);
    let result = new_result(scenario, options, RunHeader { run_id, started_at, environment: env, warnings })?;
    let facts = row_facts(&variants, &resolved);
    let start = Start { rows: (&variants, &resolved), result, file, unique };
    let rows = Orchestrator::new(scenario, options, start);
    // The data: derived by every worker from seeds; a plan file only where data is stored.
    let guard = options.size_check.then_some(options.data_dir.as_path());
    kvbench_policy::schedule::run(scenario, &options.plan_dir, guard, &facts, rows)?
}

/// Exits 2 once the planning has taken the run's timeout, unless dropped before: the timeout
/// bounds the run from its planning on, and nothing has started yet that would need stopping.
pub struct PlanningWatchdog {
    /// Dropping it ends the watch.
    _cancel: std::sync::mpsc::Sender<()>,
}

impl PlanningWatchdog {
    pub fn start(timeout_s: u64) -> Self {
        let limit = Duration::from_secs(timeout_s.max(1));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if rx.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                crate::note!(
                    "error: planning took longer than the timeout ({} s; `timeout` in the scenario or --timeout): \
                     fewer records or operations plan faster",
                    limit.as_secs()
                );
                std::process::exit(2);
            }
        });
        PlanningWatchdog { _cancel: tx }
    }
}

/// What a run's result starts with, besides the scenario.
struct RunHeader {
    run_id: String,
    started_at: u64,
    environment: kvbench_model::result::Environment,
    warnings: Vec<String>,
}

/// A run's result before any row ran (its plan's facts come once it is planned).
fn new_result(scenario: &Scenario, options: &RunOptions, header: RunHeader) -> anyhow::Result<RunResult> {
    Ok(RunResult {
        schema: SCHEMA.into(),
        kvbench_version: env!("CARGO_PKG_VERSION").into(),
        run_id: header.run_id,
        started_at: header.started_at,
        scenario: scenario.name.clone(),
        command: options.command.clone(),
        intent: scenario.intent.clone(),
        sync: scenario.sync.to_string(),
        plan: PlanInfo::default(),
        workload: serde_json::to_value(scenario)?,
        environment: header.environment,
        warnings: header.warnings,
        engines: Vec::new(),
    })
}

/// The environment's warnings and a mix of durability settings, shown now and kept.
fn warnings(scenario: &Scenario, variants: &[Variant], env: &kvbench_model::result::Environment) -> Vec<String> {
    let mut warnings = sys::warnings(env);
    let syncs: std::collections::BTreeSet<String> =
        variants.iter().map(|v| v.effective_sync(scenario).to_string()).collect();
    let budgeted = variants.iter().any(|v| v.budget(scenario).is_some());
    if let (true, Some(kb)) = (budgeted, env.read_ahead_kb.filter(|&kb| kb > READ_AHEAD_WARN_KB)) {
        warnings.push(format!(
            "the data device reads ahead {kb} KiB: under a memory budget, a store that leaves read-ahead on \
             turns each miss into a read that long (LMDB: option no_readahead; RocksDB: direct_reads)"
        ));
    }
    warnings.extend(budgets_above_memory(scenario, variants, env.memory_bytes));
    if syncs.len() > 1 {
        warnings.push(format!(
            "rows use different durability settings ({}): compare write figures with care",
            syncs.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    for w in &warnings {
        crate::note!("WARNING: {w}");
    }
    warnings
}

/// A budget at or above the machine's memory bounds nothing: the rows run as without one.
fn budgets_above_memory(scenario: &Scenario, variants: &[Variant], memory: u64) -> Vec<String> {
    let over: std::collections::BTreeSet<u64> =
        variants.iter().filter_map(|v| v.budget(scenario)).filter(|&b| memory > 0 && b >= memory).collect();
    over.into_iter()
        .map(|b| {
            format!(
                "the memory budget {} is not below this machine's {} of memory: it bounds nothing, \
                 its rows run as without a budget",
                kvbench_report::human_bytes(b),
                kvbench_report::human_bytes(memory)
            )
        })
        .collect()
}

/// Read-ahead above which a run with a memory budget is warned: the kernel's default is 128 KiB.
const READ_AHEAD_WARN_KB: u64 = 512;

/// The run's private directory `run_data`, after sweeping what killed runs left behind.
fn run_dir(options: &RunOptions, run_data: &Path) -> anyhow::Result<()> {
    for old in results::sweep_stale(&options.data_dir) {
        crate::note!("removed {}: data of an earlier run killed before it could clean up", old.display());
    }
    for line in budget::sweep_stale() {
        crate::note!("{line}");
    }
    private_run_dir(run_data).map_err(|e| anyhow::anyhow!(e))?;
    if options.keep_data {
        let _ = std::fs::write(run_data.join(results::KEEP_MARKER), "kept by --keep-data\n");
    }
    Ok(())
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn a_budget_above_the_machines_memory_is_warned_once() {
        let text = "memory = \"10TiB\"\nengines = [\"memory\", \"lmdb\"]\n[[phase]]\nkind = \"load\"\n";
        let s: Scenario = toml::from_str(text).unwrap();
        let variants = s.all_variants();
        let w = budgets_above_memory(&s, &variants, 23 << 30);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("10.0 TiB") && w[0].contains("23.0 GiB") && w[0].contains("bounds nothing"), "{w:?}");
        assert!(budgets_above_memory(&s, &variants, 16 << 40).is_empty());
    }
}
