//! What a run was asked to do, and what every row of it shares: below the run (`mod.rs`), its
//! runner (`runner.rs`, which makes the shared part for each row) and its rows (`job.rs`).

use std::path::{Path, PathBuf};

use kvbench_model::scenario::Scenario;
use kvbench_policy::dataset::ResolvedData;

use super::remote::HostsRun;

/// How `kvbench run` runs a scenario: where things go, and what the flags turned on or off.
pub struct RunOptions {
    pub out_dir: PathBuf,
    pub data_dir: PathBuf,
    pub plan_dir: PathBuf,
    pub keep_data: bool,
    pub progress: bool,
    /// Refuse a run whose plan and store would not fit on disk (`--no-size-check` turns it off).
    pub size_check: bool,
    pub command: Vec<String>,
    /// `--hosts`: run every row on these hosts over SSH.
    pub hosts: Option<HostsRun>,
    /// The scenario file the rows come from (a bad option's error gives its line), if any.
    pub scenario_file: Option<PathBuf>,
    /// Each row's estimated seconds (one repetition) from earlier results, where known: a
    /// floor of its timeout.
    pub row_estimates: std::collections::BTreeMap<String, f64>,
    /// `--classpath`, checked and absolute: where the Java worker finds YCSB bindings.
    pub ycsb_classpath: Option<String>,
}

/// What every row of a run shares.
pub struct Shared<'a> {
    pub s: &'a Scenario,
    pub o: &'a RunOptions,
    pub data: &'a ResolvedData,
    /// The run's private directory, where each row's lives.
    pub run_data: &'a Path,
}

impl Shared<'_> {
    /// The run's unique name (its private directory's), also its directory on --hosts.
    pub fn run_name(&self) -> String {
        self.run_data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into())
    }
}
