//! Phase policy, decided once in Rust for every runtime (kvbench-policy; the engine options'
//! resolution is the model's, kvbench-model's `options`), and a row run in-process with the
//! Rust worker, which only this facade sees beside the policy.

pub use kvbench_model::options;
pub use kvbench_policy::{amplification, dataset, fault, jobs, outcome};

use std::collections::BTreeMap;
use std::path::Path;

use crate::engine::EngineDescriptor;
use crate::job::Event;
use crate::result::PhaseResult;
use crate::scenario::{Scenario, Variant};

/// Run one row inside this process with the Rust worker (for tests of engines and of the
/// policy itself): resolve the data, build the job, execute it, derive the phases.
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
    let options = crate::engine::Options::parse(desc.name, desc.options, &v.options)?.values().clone();
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
    crate::worker::run_job(&plan.job, desc, &mut |e| {
        if let Event::Step(r) = e {
            steps.insert(r.index, *r);
        }
    })?;
    Ok(outcome::phases(&plan.phases, &steps))
}
