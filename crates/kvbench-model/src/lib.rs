//! kvbench-model: the words every other part of kvbench speaks: the scenario and its spec, the
//! job protocol between kvbench and its workers, the result schema, the engine interface and
//! its options, and the histogram codec. It imports no other kvbench crate.

pub mod engine;
pub mod flags;
pub mod hdrcheck;
pub mod histogram;
pub mod input;
pub mod job;
pub mod options;
pub mod replay;
pub mod report_table;
pub mod result;
pub mod scenario;
pub mod secret;
pub mod spec;
