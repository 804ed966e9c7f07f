//! A row run inside the test process with the Rust worker, for the engine tests: the policy
//! (kvbench-policy) builds the job and derives the phases, the worker (kvbench-worker) executes
//! it. Here, in the engines' tests, because only a test needs both: the two crates stand side by
//! side and never import each other, and the engines' library imports neither.

use std::collections::BTreeMap;
use std::path::Path;

use kvbench_model::engine::{EngineDescriptor, Options};
use kvbench_model::job::Event;
use kvbench_model::result::PhaseResult;
use kvbench_model::scenario::{Scenario, Variant};
use kvbench_policy::{dataset, jobs, outcome};

/// Run one row inside this process with the Rust worker: resolve the data, build the job,
/// execute it, derive the phases.
pub fn run_in_process(
    s: &Scenario,
    v: &Variant,
    desc: &EngineDescriptor,
    dir: &Path,
    url: Option<String>,
    token: Option<String>,
) -> Result<Vec<PhaseResult>, String> {
    let data = dataset::resolve(s, &dir.join("plans")).map_err(|e| format!("{e:#}"))?;
    let db = dir.join("db");
    std::fs::create_dir_all(&db).map_err(|e| e.to_string())?;
    let options = Options::parse(desc.name, desc.options, &v.options)?.values().clone();
    let facts = jobs::RowFacts {
        variant: v,
        options: &options,
        caps: desc.capabilities,
        runtime: "rust",
        server: url.is_some(),
    };
    let mut plan = jobs::build(s, &data, &facts)?;
    plan.place(&db, url, token);
    let mut steps = BTreeMap::new();
    kvbench_worker::run_job(&plan.job, desc, &mut |e| {
        if let Event::Step(r) = e {
            steps.insert(r.index, *r);
        }
    })?;
    Ok(outcome::phases(&plan.phases, &steps))
}
