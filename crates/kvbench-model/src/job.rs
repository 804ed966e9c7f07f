//! Protocol 2: the job a worker executes (fully resolved steps) and the raw counters it
//! returns. The contract is `docs/protocol.md`; the derivations `docs/plan-format.md`.
//! Every runtime's worker reads and writes exactly these shapes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::engine::{OpenMode, SyncMode};
pub use crate::spec::PhaseKind;
use crate::spec::{KeyKind, ValueContent};

pub const PROTOCOL_VERSION: u32 = 4;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Job {
    pub protocol: u32,
    pub engine: String,
    pub label: String,
    #[serde(default)]
    pub options: BTreeMap<String, serde_json::Value>,
    pub dir: PathBuf,
    pub sync: SyncMode,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub token: Option<String>,
    pub dataset: Dataset,
    #[serde(default)]
    pub plan: Option<PathBuf>,
    #[serde(default = "default_progress_ms")]
    pub progress_ms: u64,
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    pub steps: Vec<Step>,
}

fn default_progress_ms() -> u64 {
    200
}
fn default_interval_ms() -> u64 {
    1000
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generator {
    Synthetic,
    JsonDocs,
    Stored,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyShape {
    pub kind: KeyKind,
    #[serde(default)]
    pub width: u32,
}

/// A value's size range; with `fields` (YCSB's record shape) that many fields, each of
/// `min..=max` bytes, serialised into the value (docs/plan-format.md, "Fields").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueShape {
    pub min: u32,
    pub max: u32,
    #[serde(default)]
    pub content: ValueContent,
    /// 0: one plain value.
    #[serde(default, skip_serializing_if = "no_fields")]
    pub fields: u32,
    /// Every write writes every field; otherwise a write after the first writes one field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write_all_fields: bool,
}

fn no_fields(value: &u32) -> bool {
    *value == 0
}

/// Most fields a value may have (YCSB's default is 10).
pub const MAX_FIELDS: usize = 64;

/// Header bytes of a value of `fields` fields (0 for a plain value): per field a 4-byte
/// length, the name `field<i>`, a 4-byte length (the layout `derive::Values` writes).
pub fn fields_overhead(fields: u64) -> u64 {
    (0..fields).map(|i| 8 + 5 + u64::from(i.checked_ilog10().unwrap_or(0) + 1)).sum()
}

/// The fields of a value in the layout `derive::Values` writes, as (name, bytes), in order;
/// `None` for bytes that are not that layout (a plain value).
pub fn split_fields(mut value: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut out = Vec::new();
    while !value.is_empty() {
        let (name, rest) = length_prefixed(value)?;
        let (bytes, rest) = length_prefixed(rest)?;
        out.push((name, bytes));
        value = rest;
    }
    Some(out)
}

/// A big-endian u32 length, that many bytes, and what follows them.
fn length_prefixed(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    bytes[4..].split_at_checked(n)
}

/// Appends one field in the layout of [`split_fields`].
pub fn push_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(&(name.len() as u32).to_be_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(&(value.len() as u32).to_be_bytes());
    out.extend_from_slice(value);
}

impl ValueShape {
    /// An update writes one field: a store of single values reads the record, merges the
    /// field in and writes it back, as YCSB's bindings do, timed as one update.
    pub fn merges_updates(&self) -> bool {
        self.fields > 0 && !self.write_all_fields
    }

    /// Bytes of a value of `size` (a plain value's, or with fields each field's).
    pub fn encoded_len(&self, size: u64) -> u64 {
        fields_overhead(self.fields as u64) + size * (self.fields.max(1) as u64)
    }
}

/// The dataset as a worker derives it (docs/plan-format.md, "Records").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    pub generator: Generator,
    pub key: KeyShape,
    pub value: ValueShape,
    /// Records written by the load.
    pub loaded: u64,
    /// Records including those inserted later.
    pub total: u64,
    /// Key order is record order (scans need no SORTED section).
    pub ordered: bool,
    pub pool_seed: u64,
    pub value_seed: u64,
    /// Sizing hints for open.
    pub open_records: u64,
    pub open_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    Open {
        index: usize,
        mode: OpenMode,
        #[serde(default)]
        stop: bool,
    },
    Prepare {
        index: usize,
        #[serde(default)]
        stop: bool,
    },
    Close {
        index: usize,
        #[serde(default)]
        stop: bool,
    },
    Evict {
        index: usize,
        #[serde(default)]
        stop: bool,
    },
    /// Untimed: the engine's `settle` (flush and compact, or wait for compactions).
    Settle {
        index: usize,
        #[serde(default)]
        stop: bool,
    },
    Ops(Box<OpsStep>),
}

impl Step {
    pub fn index(&self) -> usize {
        match self {
            Step::Open { index, .. } | Step::Prepare { index, .. } | Step::Close { index, .. } => *index,
            Step::Evict { index, .. } | Step::Settle { index, .. } => *index,
            Step::Ops(o) => o.index,
        }
    }
}

/// How an ops step picks records (docs/plan-format.md, "Operation streams").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum Dist {
    Sequential {
        n: u64,
        #[serde(default)]
        start: u64,
    },
    Shuffle {
        n: u64,
    },
    /// Every pass replays pass 0 of `shuffle` with the step's `perm_seed`: the order a shuffled
    /// load wrote the records in, read again (the article-004 method, where each `b.N` pass reads
    /// the list in the order it was written).
    LoadOrder {
        n: u64,
    },
    Uniform {
        n: u64,
    },
    Hot {
        n: u64,
        record: u64,
    },
    Zipfian {
        n: u64,
        items: u64,
        zetan: f64,
        eta: f64,
        theta: f64,
        alpha: f64,
    },
    Latest {
        n: u64,
        count: u64,
        zetan: f64,
        eta: f64,
        theta: f64,
        alpha: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ScanLen {
    pub min: u64,
    /// 0: to the end.
    pub max: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpsStep {
    pub index: usize,
    pub name: String,
    pub kind: PhaseKind,
    pub count: u64,
    #[serde(default = "one")]
    pub threads: u32,
    #[serde(default = "one")]
    pub batch: u32,
    #[serde(default = "one")]
    pub keys_per_request: u32,
    /// Get phases of server engines: connections each thread keeps requests in flight on.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub connections: u32,
    /// Get phases of server engines: GETs sent together on one connection, timed as one unit
    /// from the write of the first to the read of the last reply; 1 is one get at a time.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub pipeline: u32,
    /// Mixed phases: op kinds and their u64 thresholds (same length).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<PhaseKind>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<u64>,
    pub dist: Dist,
    pub rec_seed: u64,
    #[serde(default)]
    pub kind_seed: u64,
    #[serde(default)]
    pub len_seed: u64,
    #[serde(default)]
    pub perm_seed: u64,
    #[serde(default)]
    pub scan: ScanLen,
    #[serde(default)]
    pub insert_base: u64,
    /// `latest`: newest record at the phase's start.
    #[serde(default)]
    pub last: u64,
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub open_per_op: bool,
    /// An update of one field hands the engine that field to merge in (its capability
    /// `field-update`), not a read of the record and a write of the merged one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub field_updates: bool,
    #[serde(default)]
    pub mode: OpenMode,
    #[serde(default)]
    pub finish: bool,
    #[serde(default = "yes")]
    pub verify: bool,
    #[serde(default)]
    pub stop: bool,
    /// The step ends after this long even if `count` ops are not done (`count` is then a cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The step ends once its throughput is steady (or at `duration_ms`, its cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<Steady>,
    /// A read step's background writer: a rate-limited thread of updates beside the readers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<BackgroundWriter>,
    /// A replay step: its ops are the plan file's OPS section (docs/plan-format.md, "Replays");
    /// `dist`, `kinds` and the seeds are then unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayStep>,
}

/// How a replay step runs the recorded ops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReplayStep {
    /// Open loop: a request is due at its recorded time (after the first op's) divided by
    /// `speed`; absent: closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// A thread runs the requests of the clients `c` with `c mod threads` = its number, in
    /// order; otherwise request `j` (counting every request) goes to thread `j mod threads`.
    pub by_client: bool,
}

/// `until = "steady"`: stop when the ops of the last `window` intervals vary by less than
/// `within` (max - min over their mean).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Steady {
    pub window: u32,
    pub within: f64,
}

/// A read step's background writer (db_bench's readwhilewriting): updates at `rate` per
/// second on one more thread, drawn with `dist` and `rec_seed`, timed as kind `update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackgroundWriter {
    pub rate: f64,
    pub dist: Dist,
    pub rec_seed: u64,
}

fn one() -> u32 {
    1
}
fn is_one(value: &u32) -> bool {
    *value == 1
}
fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    pub max_rss_kb: u64,
    pub io_read_bytes: u64,
    pub io_write_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub t_ms: u64,
    pub ops: u64,
    /// Engine errors in the interval (absent when none): the timeline of a fault.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
    pub hdr: String,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Raw counters of one step (docs/protocol.md, "step").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub index: usize,
    pub step: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    pub wall_ns: u64,
    /// `ops`: the host's clock (ns since the epoch) when the step's clock started, to place
    /// outside events (a kill, another host's start) on its timeline. 0: not reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_unix_ns: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    #[serde(default)]
    pub evicted: u64,
    /// `close`: allocated bytes of the files under `dir` right after the close (what du shows),
    /// read by the worker core before the next step can add to them; 0 when the close failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub space_bytes: u64,
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub requests: u64,
    #[serde(default)]
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Errors by class (message with digits as `#`, 80 characters; at most 8 and `other`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_classes: BTreeMap<String, u64>,
    #[serde(default)]
    pub mismatches: u64,
    #[serde(default)]
    pub missing: u64,
    #[serde(default)]
    pub busy_ns: u64,
    #[serde(default)]
    pub busy_max_ns: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hist: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Interval>,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runtime: BTreeMap<String, f64>,
    /// The engine's own counters at the step's end ([`crate::engine::Engine::internals`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub internals: BTreeMap<String, f64>,
    /// `ops`: what the engine's client sent during the step ([`crate::engine::Engine::wire`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<crate::engine::Wire>,
    /// The same, sampled every interval while an ops step ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub internal_series: Vec<InternalSample>,
    /// Why an ops step with a duration or `until = "steady"` ended (absent: its count ran out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// `settle`: what the engine did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<String>,
}

/// The engine's counters at `t_ms` after the step started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalSample {
    pub t_ms: u64,
    pub values: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    Hello {
        protocol: u32,
        worker: String,
        engine: String,
        version: String,
        capabilities: Vec<String>,
        options: BTreeMap<String, serde_json::Value>,
        timer_overhead_ns: f64,
    },
    Progress {
        index: usize,
        done: u64,
        total: u64,
    },
    Step(Box<StepResult>),
    Error {
        message: String,
    },
    Done {},
}

impl Event {
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("events serialise")
    }
}
