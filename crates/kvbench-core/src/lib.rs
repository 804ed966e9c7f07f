//! kvbench-core: a facade over the four crates kvbench-core was split into (docs/decisions.md,
//! "The house: kvbench-core split along its seams"). It re-exports them under the module paths
//! they had inside this crate (`kvbench_core::scenario`, `kvbench_core::worker`,
//! `kvbench_core::policy`, ...), so code written against those paths compiles unchanged; new
//! code names the crate it uses. Transitional: it goes once its users import the crates.
//!
//! - kvbench-model: scenario, spec, job protocol, results, engine interface and options,
//!   histogram codec;
//! - kvbench-plan: primitives, derivations, plan file, op streams, generators;
//! - kvbench-policy: jobs, dataset, outcome, faults, expectations, saturation, size guard;
//! - kvbench-worker: the Rust worker (loops, blocks, tally, state, clock) and system probes.

pub use kvbench_model::{engine, hdrcheck, histogram, input, job, result, scenario, secret, spec};
pub use kvbench_plan::{derive, gen, opstream, planfile, primitives};
pub use kvbench_policy::{expect, saturation, sizeguard};
pub use kvbench_worker::sys;

/// Phase policy (kvbench-policy) and the engine options' resolution (kvbench-model).
pub mod policy {
    pub use kvbench_model::options;
    pub use kvbench_policy::{amplification, dataset, fault, jobs, outcome};
}

/// The Rust worker (kvbench-worker).
pub mod worker {
    pub use kvbench_worker::*;
}
