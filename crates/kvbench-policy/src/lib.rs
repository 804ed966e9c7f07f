//! kvbench-policy: the phase policy, decided once in Rust for every runtime: the dataset as
//! workers derive it, the steps of each row's job, and the phases of its result from the raw
//! counters (outcome, a kill's cost, expectations, saturation), and the size guard before a run. It
//! stands on the model and the plan; it never runs a worker.
//!
//! The main pieces: [`dataset::resolve`] (a scenario's data as every worker derives it),
//! [`jobs::build`] (a row's job: the [`jobs::PhasePlan`]s and their steps), [`outcome`] (a
//! phase's result from the worker's raw counters), [`kill_cost`] (what a phase's kill cost),
//! [`expect`] (declared outcomes), [`saturation`] (when the client, not the store, was the
//! limit) and [`sizeguard`] (refusing a run the disk cannot hold). Each is a pure function of
//! its inputs, so every rule is tested without a worker, as here: a member killed 250 ms into
//! a phase of 100 ms intervals whose errors stop at 400 ms recovered in 150 ms.
//!
//! ```
//! use kvbench_model::result::Interval;
//! use kvbench_policy::kill_cost::recovery;
//!
//! let at = |t_ms, errors| {
//!     Interval { t_ms, ops: 1000, errors, p99_ns: 200_000 + errors * 1_000_000, ..Default::default() }
//! };
//! let timeline = [at(0, 0), at(100, 0), at(200, 3), at(300, 7), at(400, 0), at(500, 0)];
//! let (recovered_ms, _p99_before_ns, worst_p99_ns) = recovery(&timeline, 100, 250, 600);
//! assert_eq!(recovered_ms, Some(150));
//! assert_eq!(worst_p99_ns, 7_200_000);
//!
//! // Errors until the phase's end: it never recovered.
//! let failing = [at(0, 0), at(100, 0), at(200, 3), at(300, 7), at(400, 1), at(500, 2)];
//! assert_eq!(recovery(&failing, 100, 250, 600).0, None);
//! ```

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

// The files here moved from kvbench-core and keep their `crate::` paths to the model and plan.
use kvbench_model::{engine, histogram, job, result, scenario, spec};
use kvbench_plan::{derive, gen, planfile};
