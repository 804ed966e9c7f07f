//! kvbench-core: the scenario model, the derivations of plan format 2 and the plan file, the
//! phase policy, the protocol between kvbench and its workers, the Rust worker, and the
//! result schema.

pub mod derive;
pub mod engine;
pub mod expect;
pub mod gen;
pub mod hdrcheck;
pub mod input;
pub mod job;
pub mod opstream;
pub mod planfile;
pub mod policy;
pub mod result;
pub mod saturation;
pub mod scenario;
pub mod secret;
pub mod sizeguard;
pub mod spec;
pub mod sys;
pub mod worker;
