//! The worker protocol: `kvbench` writes a job file, a worker executes it and streams JSON
//! Lines events on stdout (see `docs/protocol.md`). Workers in every language speak it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::engine::{OpenMode, SyncMode};
use crate::result::PhaseResult;
use crate::spec::{CacheMode, OpenPer, PhaseKind};

pub const PROTOCOL_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Job {
    pub protocol: u32,
    /// Registry name of the engine.
    pub engine: String,
    pub label: String,
    #[serde(default)]
    pub options: BTreeMap<String, serde_json::Value>,
    pub plan: PathBuf,
    /// Empty directory owned by this job; the database lives here.
    pub dir: PathBuf,
    pub sync: SyncMode,
    #[serde(default)]
    pub open_mode: OpenMode,
    #[serde(default)]
    pub url: Option<String>,
    pub phases: Vec<JobPhase>,
    /// Minimum time between progress events.
    #[serde(default = "default_progress_ms")]
    pub progress_ms: u64,
}

fn default_progress_ms() -> u64 {
    200
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobPhase {
    pub name: String,
    pub kind: PhaseKind,
    /// Which OPS section of the plan (0 = load).
    pub plan_phase: usize,
    #[serde(default = "one")]
    pub threads: u32,
    #[serde(default = "one")]
    pub batch: u32,
    #[serde(default = "one")]
    pub keys_per_request: u32,
    #[serde(default)]
    pub cache: CacheMode,
    #[serde(default)]
    pub open_per: OpenPer,
    /// Open loop (get phases): operations per second offered by all threads together, each
    /// latency measured from the operation's intended start. None: closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

fn one() -> u32 {
    1
}

// A phase result is by far the largest event; events are made a few times per second, so
// boxing it would buy nothing but noise at every use.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    Hello {
        protocol: u32,
        /// `rust`, `python`, `go` plus the worker's version.
        worker: String,
        engine: String,
        version: String,
        capabilities: Vec<String>,
        options: BTreeMap<String, serde_json::Value>,
        settings: BTreeMap<String, String>,
        /// Cost of one clock read pair plus histogram record (ns), measured at start.
        timer_overhead_ns: f64,
    },
    Progress {
        phase: String,
        done: u64,
        total: u64,
    },
    Phase {
        result: PhaseResult,
    },
    /// The job cannot go on. `phase` is set when a phase was running.
    Error {
        #[serde(default)]
        phase: Option<String>,
        message: String,
    },
    Done {},
}

impl Event {
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("events serialise")
    }
}
