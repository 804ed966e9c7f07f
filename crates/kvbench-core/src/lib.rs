//! kvbench-core: the scenario model, deterministic plans, the engine interface, the runner
//! that times operations inside a worker, and the result schema.

pub mod engine;
pub mod gen;
pub mod job;
pub mod plan;
pub mod protocol;
pub mod result;
pub mod runner;
pub mod saturation;
pub mod scenario;
pub mod spec;
pub mod sys;
