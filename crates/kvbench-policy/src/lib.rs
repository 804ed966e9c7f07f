//! kvbench-policy: the phase policy, decided once in Rust for every runtime: the dataset as
//! workers derive it, the steps of each row's job, and the phases of its result from the raw
//! counters (outcome, a kill's cost, expectations, saturation), and the size guard before a run. It
//! stands on the model and the plan; it never runs a worker.

pub mod amplification;
pub mod carried;
pub mod dataset;
pub mod expect;
pub mod jobs;
pub mod kill_cost;
pub mod outcome;
pub mod replay;
pub mod saturation;
pub mod schedule;
pub mod sizeguard;

/// The kill cost's old name, kept while the orchestrator's `use kvbench_policy::fault` (a file
/// another change is editing) moves to `kill_cost`; delete with that import.
#[doc(hidden)]
pub use kill_cost as fault;

// The files here moved from kvbench-core and keep their `crate::` paths to the model and plan.
use kvbench_model::{engine, histogram, job, result, scenario, spec};
use kvbench_plan::{derive, gen, planfile};
