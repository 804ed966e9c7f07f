//! Scenario files (TOML) and the built-in workloads the command line names.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::{OpenMode, SyncMode};
use crate::spec::{CacheMode, DatasetSpec, Distribution, HotKey, Mix, OpenPer, OpsSpec, PhaseKind};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: String,
    /// What the scenario is for; defaults to the file's header comment.
    #[serde(default)]
    pub intent: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub sync: SyncMode,
    #[serde(default = "one")]
    pub repetitions: u32,
    /// How repetitions are ordered: round by round with the row order rotated (the default, so
    /// drift hits every row alike) or each row's repetitions back to back.
    #[serde(default)]
    pub order: RepetitionOrder,
    /// Seconds one engine job may take before its worker is killed: the base that a row
    /// larger than its memory budget, or estimated longer, lengthens.
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// `--timeout` gave `timeout`: every row's, as given.
    #[serde(skip)]
    pub timeout_fixed: bool,
    /// Engine names (each a variant with default options).
    #[serde(default)]
    pub engines: Vec<String>,
    #[serde(default, rename = "engine")]
    pub variants: Vec<Variant>,
    #[serde(default)]
    pub dataset: DatasetSpec,
    #[serde(default, rename = "phase")]
    pub phases: Vec<PhaseDef>,
    /// Memory budget of every row (`"512MiB"`): the worker and its servers run in a memory
    /// cgroup of this size, page cache included. A row's own `memory` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Under a memory budget, a settle phase before each timed read that follows a write (where
    /// the scenario has none), so the read does not pay for the writes' background work (an
    /// LSM's compaction). `false` keeps the phases as written.
    #[serde(default = "yes")]
    pub settle: bool,
    /// Ratios of two rows' ops/s in one phase that the report computes (COPY over INSERT...).
    #[serde(default, rename = "ratio")]
    pub ratios: Vec<RatioDef>,
    /// Rows made from one row by `--vary`, one per value: the report gives each a verdict
    /// against the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vary: Vec<VaryGroup>,
    /// `[report]`: the table of the article or peer benchmark the scenario reproduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<crate::report_table::ReportTable>,
}

/// The rows `--vary PARAMETER=v1,v2,...` made from one row, in value order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaryGroup {
    pub parameter: String,
    pub labels: Vec<String>,
}

/// The order of a run's row jobs when `repetitions` > 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepetitionOrder {
    /// Every row's first repetition, then every row's second..., each round starting one row
    /// further on.
    #[default]
    Interleaved,
    /// Each row's repetitions back to back, rows in scenario order.
    Sequential,
}

impl RepetitionOrder {
    /// The jobs in running order as (repetition, row index), for `rows` rows.
    pub fn schedule(self, rows: usize, reps: u32) -> Vec<(u32, usize)> {
        match self {
            RepetitionOrder::Sequential => (0..rows).flat_map(|i| (0..reps).map(move |r| (r, i))).collect(),
            RepetitionOrder::Interleaved => {
                (0..reps).flat_map(|r| (0..rows).map(move |k| (r, (k + r as usize) % rows.max(1)))).collect()
            }
        }
    }
}

/// `[[ratio]]`: ops/s of row `numerator` divided by row `denominator` in `phase`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatioDef {
    pub phase: String,
    pub numerator: String,
    pub denominator: String,
}

fn default_seed() -> u64 {
    42
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_timeout() -> u64 {
    3600
}

/// One row of the comparison: an engine with options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// Row label; defaults to the engine name.
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub options: BTreeMap<String, serde_json::Value>,
    /// How the read phases open the database.
    #[serde(default)]
    pub open: OpenMode,
    /// Overrides the scenario's `sync` for this row (the report then warns of the mix).
    #[serde(default)]
    pub sync: Option<SyncMode>,
    /// A running server to use instead of starting one.
    #[serde(default)]
    pub url: Option<String>,
    /// The row is expected to fail verification this way (`"mismatch"`): the report shows it as
    /// expected and the run does not fail for it (expect.rs decides).
    #[serde(default)]
    pub expect: Option<crate::spec::Expect>,
    /// This row's memory budget, instead of the scenario's `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// This row's client threads in every phase after the load ([`PhaseKind::runs_after_load`]),
    /// instead of the phases' own: the same op streams, split over this many threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// This row's load batch, instead of the load phases' own: the same records, committed
    /// this many at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
}

impl Variant {
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.name.clone())
    }

    /// The row's memory budget in bytes: its own `memory`, else the scenario's (checked by
    /// [`Scenario::check_fields`]).
    pub fn budget(&self, scenario: &Scenario) -> Option<u64> {
        self.memory.as_deref().or(scenario.memory.as_deref()).and_then(|m| crate::spec::parse_memory(m).ok())
    }

    /// The row's durability: its own `sync`, else the scenario's.
    pub fn effective_sync(&self, scenario: &Scenario) -> SyncMode {
        self.sync.unwrap_or(scenario.sync)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseDef {
    #[serde(default)]
    pub name: Option<String>,
    pub kind: PhaseKind,
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub distribution: Option<Distribution>,
    /// Keys per multi-get request.
    #[serde(default)]
    pub keys: Option<u32>,
    /// Records per scan (0 or absent: to the end; mixed phases: 100).
    #[serde(default)]
    pub length: Option<u64>,
    /// Fewest records per scan: lengths uniform in `min_length..=length` (mixed phases: 1).
    #[serde(default)]
    pub min_length: Option<u64>,
    /// Untimed operations before the timed ones, as a count or for a time (read phases only).
    #[serde(default)]
    pub warmup: Option<Warmup>,
    #[serde(default)]
    pub mix: Option<Mix>,
    #[serde(default)]
    pub hot_key: Option<HotKey>,
    #[serde(default)]
    pub zipf_exponent: Option<f64>,
    #[serde(default)]
    pub batch: Option<u32>,
    /// Write batches by size, as Pebble's ycsb loads (`batch_bytes = 1048576`: 1 MiB of keys and
    /// values a batch): records per batch = these bytes over the dataset's mean record, rounded
    /// up (exact for records of one size). Instead of `batch`, on load, insert, update and delete.
    #[serde(default)]
    pub batch_bytes: Option<u64>,
    #[serde(default)]
    pub threads: Option<u32>,
    #[serde(default)]
    pub cache: CacheMode,
    #[serde(default)]
    pub open_per: OpenPer,
    /// Open-loop rate of a get phase (operations per second, all threads together).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Passes over every record (load, get, multi-get and update phases without `count`): `count` =
    /// passes × records. A load of N passes writes every record N times from an empty store (a
    /// build that keeps every copy, as TinyCDB's put_add, holds N copies); a multi-get's requests
    /// then hold at most every record (`keys = 1000000`: one request per pass).
    #[serde(default)]
    pub passes: Option<u32>,
    /// The count as a share of the records in the store when the phase starts (`0.5`: half of
    /// them), so that `--records` scales it: get, multi-get (keys), scan, update, delete and
    /// rmw phases without `count` or `passes`.
    #[serde(default)]
    pub share: Option<f64>,
    /// Open mode of a read phase, instead of the row's `open` (the same database, reopened).
    #[serde(default)]
    pub open: Option<crate::engine::OpenMode>,
    /// A fault during the phase: kill one member of the row's cluster (`kill = { member = 1,
    /// after = "2s" }`); rows without a cluster kvbench started run the phase unharmed.
    #[serde(default)]
    pub kill: Option<KillDef>,
    /// Run for this long (`"500ms"`, `"90s"`, `"10m"`, `"1h"`): `count` becomes a cap. Not for
    /// phases that insert (their count sizes the dataset).
    #[serde(default)]
    pub duration: Option<String>,
    /// `"steady"`: end once throughput is steady ([`PhaseDef::steady`]), `duration` the cap.
    #[serde(default)]
    pub until: Option<UntilDef>,
    /// Intervals the steady rule looks at.
    #[serde(default)]
    pub steady_window: Option<u32>,
    /// Largest spread (max - min over the mean) of those intervals' ops that counts as steady.
    #[serde(default)]
    pub steady_within: Option<f64>,
    /// An interval below this fraction of the phase's median interval is a stall.
    #[serde(default)]
    pub stall_fraction: Option<f64>,
    /// A background writer beside a read phase's readers (`writer = { rate = 10000 }`).
    #[serde(default)]
    pub writer: Option<WriterDef>,
    /// A replay phase's stream, one of: a trace file (`trace`, in `trace_format` or the
    /// format its first bytes show), db_bench's mixgraph (`mixgraph = { ... }`, db_bench's flag
    /// names) or a model `trace fit` wrote (`model = { ... }`); see [`crate::replay`].
    #[serde(default)]
    pub trace: Option<String>,
    #[serde(default)]
    pub trace_format: Option<String>,
    #[serde(default)]
    pub mixgraph: Option<serde_json::Value>,
    #[serde(default)]
    pub model: Option<serde_json::Value>,
    /// Open loop at the recorded times divided by `speed` (2: twice as fast); absent: closed
    /// loop, each thread's next request as soon as the last one returned.
    #[serde(default)]
    pub speed: Option<f64>,
}

/// `until`: the stop rules a phase can have besides its count and duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UntilDef {
    Steady,
}

/// `writer = { rate = 10000 }`: updates at `rate` per second on one more thread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriterDef {
    pub rate: f64,
}

/// Defaults of the steady rule: 10 intervals within 5%.
pub const STEADY_WINDOW: u32 = 10;
pub const STEADY_WITHIN: f64 = 0.05;
/// The cap of `until = "steady"` without a `duration` (10 minutes).
pub const STEADY_CAP_MS: u64 = 600_000;
/// An interval below half the phase's median interval is a stall (by default).
pub const STALL_FRACTION: f64 = 0.5;

/// The longest `duration` of a phase: a job's longest timeout.
pub const DURATION_MAX_MS: u64 = crate::spec::limits::TIMEOUT_S * 1000;

/// The forms a duration is written in, for error messages.
const DURATION_FORMS: &str = "\"500ms\", \"1.5s\", \"90s\", \"10m\", \"1h\"";

/// A duration in milliseconds from `"500ms"`, `"1.5s"`, `"10m"` or `"1h"`, within
/// `lo_ms..=hi_ms`; the error names the allowed forms and range.
pub fn parse_duration_ms(text: &str, lo_ms: u64, hi_ms: u64) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit {
        "ms" => 1.0,
        "s" => 1e3,
        "m" => 60e3,
        "h" => 3600e3,
        _ => f64::NAN,
    };
    let ms = num.trim().parse::<f64>().map(|v| v * scale).unwrap_or(f64::NAN);
    if !ms.is_finite() || ms < lo_ms as f64 || ms > hi_ms as f64 {
        return Err(format!(
            "`{text}` is not a duration (allowed: {DURATION_FORMS}; from {} to {})",
            show_ms(lo_ms),
            show_ms(hi_ms)
        ));
    }
    Ok(ms.round() as u64)
}

/// `1500` as `1.5s`, `600000` as `600s`: how limits read in messages.
fn show_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{}s", ms as f64 / 1000.0)
    }
}

/// A read phase's untimed warm-up: `warmup = 1000` operations, or `warmup = "5s"` of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Warmup {
    Ops(u64),
    For(String),
}

impl Warmup {
    /// Whether the warm-up runs anything (`0` runs nothing).
    pub fn is_some(&self) -> bool {
        !matches!(self, Warmup::Ops(0))
    }

    /// `"5s"` in milliseconds; `None` for a count.
    pub fn ms(&self) -> Option<u64> {
        match self {
            Warmup::For(d) => parse_duration_ms(d, 1, DURATION_MAX_MS).ok(),
            Warmup::Ops(_) => None,
        }
    }

    /// The command line's `--warmup N|DURATION`: a whole number is a count.
    pub fn parse(text: &str) -> Result<Warmup, String> {
        if let Ok(n) = text.trim().parse::<u64>() {
            return Ok(Warmup::Ops(n));
        }
        parse_duration_ms(text, 1, DURATION_MAX_MS)
            .map(|_| Warmup::For(text.trim().to_string()))
            .map_err(|e| format!("{e}, or a whole number of operations"))
    }
}

impl Serialize for Warmup {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Warmup::Ops(n) => serializer.serialize_u64(*n),
            Warmup::For(d) => serializer.serialize_str(d),
        }
    }
}

impl<'de> Deserialize<'de> for Warmup {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Warmup, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Warmup;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a number of operations or a duration such as \"5s\"")
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Warmup, E> {
                Ok(Warmup::Ops(value))
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Warmup, E> {
                u64::try_from(value)
                    .map(Warmup::Ops)
                    .map_err(|_| E::custom(format!("{value} is out of range (allowed: 0 or more)")))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Warmup, E> {
                parse_duration_ms(value, 1, DURATION_MAX_MS).map(|_| Warmup::For(value.to_string())).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `kill = { member = N, after = "2s" }`: SIGKILL member N (0-based, in the order the cluster
/// was started) this long after the phase's timed step starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillDef {
    pub member: u32,
    /// `"2s"`, `"1.5s"` or `"500ms"`.
    pub after: String,
}

/// The longest `after` of a kill: an hour, as a job's timeout.
const KILL_AFTER_MAX_MS: u64 = 3_600_000;

impl KillDef {
    /// `after` in milliseconds; the error names the forms allowed.
    pub fn after_ms(&self) -> Result<u64, String> {
        parse_duration_ms(&self.after, 0, KILL_AFTER_MAX_MS)
    }
}

impl PhaseDef {
    pub fn new(kind: PhaseKind) -> PhaseDef {
        PhaseDef {
            name: None,
            kind,
            count: None,
            distribution: None,
            keys: None,
            length: None,
            min_length: None,
            warmup: None,
            mix: None,
            hot_key: None,
            zipf_exponent: None,
            batch: None,
            batch_bytes: None,
            threads: None,
            cache: CacheMode::Warm,
            open_per: OpenPer::Phase,
            rate: None,
            passes: None,
            share: None,
            open: None,
            kill: None,
            duration: None,
            until: None,
            steady_window: None,
            steady_within: None,
            stall_fraction: None,
            writer: None,
            trace: None,
            trace_format: None,
            mixgraph: None,
            model: None,
            speed: None,
        }
    }

    /// The count `share` gives with `records` in the store: rounded, at least 1.
    pub fn share_of(&self, records: u64) -> Option<u64> {
        self.share.map(|f| ((records as f64 * f).round() as u64).max(1))
    }

    /// `duration` in milliseconds (checked by [`Scenario::check`]).
    pub fn duration_ms(&self) -> Option<u64> {
        self.duration.as_deref().and_then(|d| parse_duration_ms(d, 1, DURATION_MAX_MS).ok())
    }

    /// The steady rule of `until = "steady"`, with its defaults.
    pub fn steady(&self) -> Option<crate::job::Steady> {
        self.until.map(|UntilDef::Steady| crate::job::Steady {
            window: self.steady_window.unwrap_or(STEADY_WINDOW),
            within: self.steady_within.unwrap_or(STEADY_WITHIN),
        })
    }

    /// Whether the phase is one scan to the end of the key space (a scan phase without
    /// `length` or `count`): a count for every phase does not make it N full scans.
    pub fn full_scan(&self) -> bool {
        self.kind == PhaseKind::Scan && self.length.unwrap_or(0) == 0 && self.count.is_none()
    }

    /// Whether the phase writes new records (an insert phase, or a mix with inserts).
    pub fn inserts(&self) -> bool {
        self.kind == PhaseKind::Insert || self.kind == PhaseKind::Mixed && self.ops_spec().mix.insert > 0.0
    }

    pub fn ops_spec(&self) -> OpsSpec {
        let default_dist = match self.kind {
            PhaseKind::Scan | PhaseKind::Insert => Distribution::Sequential,
            PhaseKind::Mixed => Distribution::Uniform,
            _ => Distribution::Shuffle,
        };
        OpsSpec {
            kind: self.kind,
            count: self.count,
            distribution: self.distribution.unwrap_or(default_dist),
            keys_per_request: if self.kind == PhaseKind::MultiGet { self.keys.unwrap_or(100) } else { 1 },
            scan_length: self.length.unwrap_or(if self.kind == PhaseKind::Mixed { 100 } else { 0 }),
            scan_min: self.min_length.unwrap_or(if self.kind == PhaseKind::Mixed { 1 } else { 0 }),
            mix: self.mix.unwrap_or_default(),
            hot_key: self.hot_key,
            zipf_exponent: self.zipf_exponent.unwrap_or(0.99),
        }
    }
}

/// One step of the path to a field: a table key or an array index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Key(&'static str),
    Index(usize),
}

/// A bad value and where it is (`phase[2].zipf_exponent`), so a file's error can give the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub path: Vec<At>,
    pub message: String,
}

impl FieldError {
    pub(crate) fn new(path: &[At], message: impl Into<String>) -> Self {
        FieldError { path: path.to_vec(), message: message.into() }
    }

    /// `phase[2].zipf_exponent` (array positions counted from 1, as a reader counts tables).
    pub fn field(&self) -> String {
        let mut out = String::new();
        for a in &self.path {
            match a {
                At::Key(k) if out.is_empty() => out.push_str(k),
                At::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                At::Index(i) => out.push_str(&format!("[{}]", i + 1)),
            }
        }
        out
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            formatter.write_str(&self.message)
        } else {
            write!(formatter, "field `{}`: {}", self.field(), self.message)
        }
    }
}

/// `FILE, line N` of the field at `path` in scenario file `file` (`FILE` when not found).
pub fn place_in_file(file: &Path, path: &[At]) -> String {
    let text =
        crate::input::read_regular_text(file, "scenario", crate::input::limits::SCENARIO_BYTES).unwrap_or_default();
    match line_of(&text, path) {
        Some(line) => format!("{}, line {line}", file.display()),
        None => file.display().to_string(),
    }
}

/// The line of `text` holding the field at `path` (or the nearest enclosing table found).
fn line_of(text: &str, path: &[At]) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut item = doc.as_item();
    let mut span = None;
    for a in path {
        let next = match a {
            At::Key(k) => item.get(*k),
            At::Index(i) => item.get(*i),
        };
        let Some(n) = next else { break };
        item = n;
        span = n.span().or(span);
    }
    span.map(|r| text[..r.start.min(text.len())].matches('\n').count() + 1)
}

/// The outcome `check` of one field's check, its error carrying the field's path.
fn field(path: &[At], check: Result<(), String>) -> Result<(), FieldError> {
    check.map_err(|m| FieldError::new(path, m))
}

impl Scenario {
    /// Read a scenario file; errors name the file, line and field.
    pub fn from_file(path: &Path) -> Result<Scenario, String> {
        let text = crate::input::read_regular_text(path, "scenario", crate::input::limits::SCENARIO_BYTES)?;
        let mut s: Scenario = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if s.name.is_empty() {
            s.name = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        }
        if s.intent.is_empty() {
            s.intent = header_comment(&text);
        }
        s.check_fields().map_err(|e| match line_of(&text, &e.path) {
            Some(line) => format!("{}, line {line}: {e}", path.display()),
            None => format!("{}: {e}", path.display()),
        })?;
        Ok(s)
    }

    /// With `settle` and a memory budget on any row: a settle phase inserted before every read
    /// phase that directly follows a writing one; what was added, for the run to say.
    pub fn settle_before_reads(&mut self) -> Vec<String> {
        if !self.settle || !self.all_variants().iter().any(|v| v.budget(self).is_some()) {
            return Vec::new();
        }
        let reads = [PhaseKind::Get, PhaseKind::MultiGet, PhaseKind::Scan];
        let mut added = Vec::new();
        let mut i = 1;
        while i < self.phases.len() {
            if reads.contains(&self.phases[i].kind) && self.phases[i - 1].kind.may_write() {
                let read = self.phase_name(i);
                let mut settle = PhaseDef::new(PhaseKind::Settle);
                settle.name = Some(format!("settle-before-{read}"));
                self.phases.insert(i, settle);
                added.push(format!(
                    "a settle phase before `{read}` (a memory budget: the read phase would pay for the writes' \
                     compaction; `settle = false` in the scenario keeps the phases as written)"
                ));
                i += 1;
            }
            i += 1;
        }
        added
    }

    pub fn check(&self) -> Result<(), String> {
        self.check_fields().map_err(|e| e.to_string())
    }

    /// Every field within its bounds ([`crate::spec::limits`]) and the phases consistent.
    pub fn check_fields(&self) -> Result<(), FieldError> {
        use crate::spec::{in_range, limits as l, sane_name};
        field(&[At::Key("name")], sane_name(&self.name))?;
        field(&[At::Key("timeout")], in_range(self.timeout, 1, l::TIMEOUT_S).map_err(|e| format!("{e}, in seconds")))?;
        field(&[At::Key("repetitions")], in_range(self.repetitions, 1, l::REPETITIONS))?;
        self.check_dataset()?;
        self.check_memory()?;
        if self.phases.is_empty() {
            return Err(FieldError::new(&[], "no [[phase]] tables: a scenario needs at least a `load` phase"));
        }
        if self.phases[0].kind != PhaseKind::Load {
            return Err(FieldError::new(
                &[At::Key("phase"), At::Index(0), At::Key("kind")],
                "the first [[phase]] must have kind = \"load\"",
            ));
        }
        crate::replay::check_one(self)?;
        let mut names = std::collections::BTreeSet::new();
        for (i, p) in self.phases.iter().enumerate() {
            let at = [At::Key("phase"), At::Index(i)];
            if !names.insert(self.phase_name(i)) {
                let m = format!("[[phase]] {} repeats the name `{}`; give it a `name`", i + 1, self.phase_name(i));
                return Err(FieldError::new(&at, m));
            }
            self.check_phase(p, &at)?;
        }
        self.check_later_loads()?;
        self.check_rows(&names)?;
        self.report.as_ref().map_or(Ok(()), |table| table.check(&[At::Key("report")]))
    }

    /// A load after the first writes every record's loaded value again: the same values, an
    /// overwrite pass (article 004's second Put of its list), in the first load's order with
    /// `load-order`. Only loads may write before it: after another write it would put the
    /// loaded values back under reads that expect the newer ones.
    fn check_later_loads(&self) -> Result<(), FieldError> {
        use crate::spec::Distribution as D;
        let mut other_write: Option<String> = None;
        for (i, p) in self.phases.iter().enumerate() {
            let at = |k| vec![At::Key("phase"), At::Index(i), At::Key(k)];
            if p.kind != PhaseKind::Load {
                if p.kind.may_write() || p.writer.is_some() {
                    other_write.get_or_insert_with(|| self.phase_name(i));
                }
                continue;
            }
            if i == 0 && p.distribution == Some(D::LoadOrder) {
                let m = "the first load has no load order to follow (allowed: sequential, shuffle, uniform; \
                         load-order on a later load)";
                return Err(FieldError::new(&at("distribution"), m));
            }
            if let Some(w) = &other_write {
                let m = format!(
                    "a later load writes the loaded values again, and phase `{w}` before it wrote other ones \
                     (its reads would expect those): put the load before `{w}`"
                );
                return Err(FieldError::new(&at("kind"), m));
            }
        }
        Ok(())
    }

    /// `memory` of the scenario, and `memory`, `threads` and `batch` of each `[[engine]]` row.
    fn check_memory(&self) -> Result<(), FieldError> {
        use crate::spec::{in_range, limits as l};
        let parse = |m: &Option<String>| m.as_deref().map_or(Ok(()), |m| crate::spec::parse_memory(m).map(|_| ()));
        field(&[At::Key("memory")], parse(&self.memory))?;
        for (i, v) in self.variants.iter().enumerate() {
            let at = |k| [At::Key("engine"), At::Index(i), At::Key(k)];
            field(&at("memory"), parse(&v.memory))?;
            for (k, n, hi) in [("threads", v.threads, l::THREADS), ("batch", v.batch, l::BATCH)] {
                if let Some(n) = n {
                    field(&at(k), in_range(u64::from(n), 1, u64::from(hi)))?;
                }
            }
        }
        Ok(())
    }

    fn check_dataset(&self) -> Result<(), FieldError> {
        use crate::spec::{in_range, limits as l};
        let d = &self.dataset;
        let at = |k: &'static str| [At::Key("dataset"), At::Key(k)];
        if d.source.is_none() {
            field(&at("records"), in_range(d.records, 1, l::RECORDS))?;
        }
        let width = [At::Key("dataset"), At::Key("key"), At::Key("width")];
        field(&width, in_range(d.key.width, 0, l::KEY_WIDTH))?;
        if matches!(d.key.kind, crate::spec::KeyKind::Random | crate::spec::KeyKind::DbBench) {
            let m = |e: String| format!("{e}, bytes of a random or db-bench key (its first 8 tell records apart)");
            field(&width, in_range(d.key.width, l::RANDOM_KEY_WIDTH, l::KEY_WIDTH).map_err(m))?;
        }
        for (name, c) in [("key_column", d.key_column), ("value_column", d.value_column)] {
            if let Some(c) = c {
                field(&at(name), in_range(c, 1, l::COLUMN))?;
            }
        }
        if let Some(n) = d.value.fields {
            let path = [At::Key("dataset"), At::Key("value"), At::Key("fields")];
            field(&path, in_range(n, 1, crate::job::MAX_FIELDS as u32))?;
        }
        let sizes =
            [("size", d.value.size), ("min", d.value.min), ("max", d.value.max), ("field_size", d.value.field_size)];
        for (name, v) in sizes {
            if let Some(v) = v {
                let path = [At::Key("dataset"), At::Key("value"), At::Key(name)];
                field(&path, in_range(v, 0, l::VALUE_SIZE).map_err(|e| format!("{e}, in bytes")))?;
            }
        }
        field(&at("value"), d.value.range().map(|_| ()))
    }

    fn check_phase(&self, phase: &PhaseDef, at: &[At]) -> Result<(), FieldError> {
        let f = |k: &'static str| {
            let mut v = at.to_vec();
            v.push(At::Key(k));
            v
        };
        if !phase.kind.runs_ops() {
            return check_settle(phase, &f);
        }
        self.check_phase_numbers(phase, &f)?;
        if let Some(m) = phase.mix {
            check_mix(&m, &f)?;
        }
        check_kind_fits(phase, &f)?;
        crate::replay::check(phase, &f)?;
        if phase.open_per == OpenPer::Operation && phase.kind != PhaseKind::Get {
            return Err(FieldError::new(&f("open_per"), "open_per = \"operation\" is only for get phases"));
        }
        if let Some(k) = &phase.kill {
            check_kill(k, &f)?;
        }
        if phase.warmup.as_ref().is_some_and(Warmup::is_some) && phase.kind.may_write() {
            // A warm-up of a writing phase would change what the phase then reads.
            return Err(FieldError::new(&f("warmup"), "warmup is only for read phases (get, multi-get, scan)"));
        }
        check_stop_rules(phase, &f)?;
        check_writer(phase, &f)?;
        check_passes_and_open(phase, &f)?;
        check_batch_bytes(phase, &f)?;
        check_share(phase, &f)
    }

    /// The phase's numbers, each within its range.
    fn check_phase_numbers(
        &self,
        phase: &PhaseDef,
        field_path: &dyn Fn(&'static str) -> Vec<At>,
    ) -> Result<(), FieldError> {
        use crate::spec::{in_range, limits as l, positive_finite};
        let ranges = [
            ("count", phase.count, 1, l::OPS),
            ("keys", phase.keys.map(u64::from), 1, l::KEYS_PER_REQUEST.into()),
            ("length", phase.length, 0, l::RECORDS),
            ("min_length", phase.min_length, 0, phase.length.filter(|&n| n > 0).unwrap_or(l::RECORDS)),
            (
                "warmup",
                phase.warmup.as_ref().and_then(|w| if let Warmup::Ops(n) = w { Some(*n) } else { None }),
                0,
                l::OPS,
            ),
            ("batch", phase.batch.map(u64::from), 1, l::BATCH.into()),
            ("threads", phase.threads.map(u64::from), 1, l::THREADS.into()),
        ];
        for (name, v, lo, hi) in ranges {
            if let Some(v) = v {
                field(&field_path(name), in_range(v, lo, hi))?;
            }
        }
        if let Some(z) = phase.zipf_exponent {
            field(&field_path("zipf_exponent"), crate::spec::in_open_unit(z))?;
        }
        if let (Some(h), None) = (phase.hot_key, &self.dataset.source) {
            let n = self.dataset.records;
            if h.record(n).is_none() {
                let m = format!(
                    "{h} is out of range (allowed: 0 to {}, or a share of the records such as \"12.5%\")",
                    n.saturating_sub(1)
                );
                return Err(FieldError::new(&field_path("hot_key"), m));
            }
        }
        if let Some(r) = phase.rate {
            field(
                &field_path("rate"),
                positive_finite(r, l::RATE, false).map_err(|e| format!("{e}, operations per second")),
            )?;
        }
        Ok(())
    }

    fn check_rows(&self, phases: &std::collections::BTreeSet<String>) -> Result<(), FieldError> {
        use crate::spec::sane_name;
        for (i, v) in self.variants.iter().enumerate() {
            if let Some(l) = &v.label {
                field(&[At::Key("engine"), At::Index(i), At::Key("label")], sane_name(l))?;
            }
        }
        let labels: Vec<String> = self.all_variants().iter().map(|v| v.label()).collect();
        for (i, l) in labels.iter().enumerate() {
            if labels[..i].contains(l) {
                let m = format!("two engine rows are labelled `{l}`: give each [[engine]] a distinct `label`");
                return Err(FieldError::new(&self.row_path(i, "label"), m));
            }
        }
        for (i, r) in self.ratios.iter().enumerate() {
            let at = |k: &'static str| [At::Key("ratio"), At::Index(i), At::Key(k)];
            if !phases.contains(&r.phase) {
                return Err(FieldError::new(
                    &at("phase"),
                    format!("[[ratio]] {}: no phase named `{}`", i + 1, r.phase),
                ));
            }
            for (k, l) in [("numerator", &r.numerator), ("denominator", &r.denominator)] {
                if !labels.contains(l) {
                    return Err(FieldError::new(&at(k), format!("[[ratio]] {}: no engine row labelled `{l}`", i + 1)));
                }
            }
        }
        if self.engines.is_empty() && self.variants.is_empty() {
            return Err(FieldError::new(&[], "no engines: set `engines = [...]` or add [[engine]] tables"));
        }
        Ok(())
    }

    /// Where row number `row` of [`Scenario::all_variants`] is written: its place in `engines = [...]`,
    /// or its [[engine]] table's `key` (its `name` when `key` is not given).
    pub fn row_path(&self, row: usize, key: &'static str) -> Vec<At> {
        match row.checked_sub(self.engines.len()) {
            None => vec![At::Key("engines"), At::Index(row)],
            Some(j) => {
                let given = key == "label" && self.variants[j].label.is_some();
                vec![At::Key("engine"), At::Index(j), At::Key(if given || key != "label" { key } else { "name" })]
            }
        }
    }

    pub fn phase_name(&self, phase: usize) -> String {
        self.phases[phase].name.clone().unwrap_or_else(|| self.phases[phase].kind.as_str().to_string())
    }

    /// All rows: `engines` names first, then `[[engine]]` variants.
    pub fn all_variants(&self) -> Vec<Variant> {
        let mut v: Vec<Variant> =
            self.engines.iter().map(|n| Variant { name: n.clone(), ..Default::default() }).collect();
        v.extend(self.variants.iter().cloned());
        v
    }
}

/// A mix's parts: each a finite share >= 0, and not all 0.
fn check_mix(mix: &Mix, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    use crate::spec::{limits as l, positive_finite};
    let parts = [
        ("read", mix.read),
        ("update", mix.update),
        ("scan", mix.scan),
        ("delete", mix.delete),
        ("insert", mix.insert),
        ("rmw", mix.rmw),
    ];
    for (k, v) in parts {
        let mut path = field_path("mix");
        path.push(At::Key(k));
        field(&path, positive_finite(v, l::MIX_PART, true))?;
    }
    if parts.iter().map(|p| p.1).sum::<f64>() <= 0.0 {
        return Err(FieldError::new(&field_path("mix"), "all parts are 0 (allowed: at least one part > 0)"));
    }
    Ok(())
}

/// Fields a phase's kind cannot honour: a load writes every record once into an empty store
/// (no skewed distribution, nothing to reopen or evict); a mixed phase needs its mix.
fn check_kind_fits(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    use crate::spec::Distribution as D;
    if phase.kind == PhaseKind::Mixed && phase.mix.is_none() {
        let m = "a mixed phase needs its `mix` (for example mix = { read = 0.5, update = 0.5 }; parts: \
                 read, update, scan, delete, insert, rmw)";
        return Err(FieldError::new(&field_path("kind"), m));
    }
    if phase.kind != PhaseKind::Load {
        return Ok(());
    }
    if let Some(d @ (D::Zipfian | D::Latest | D::Hot)) = phase.distribution {
        let m = format!(
            "`{}` does not apply to a load: it writes every record once (allowed: sequential, shuffle, uniform; \
             load-order on a later load)",
            serde_json::to_value(d).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        );
        return Err(FieldError::new(&field_path("distribution"), m));
    }
    if phase.cache != CacheMode::Warm {
        let m = "a load starts from an empty store: there is nothing to reopen or evict (allowed on a load: \
                 warm; set cache on the phase after it)";
        return Err(FieldError::new(&field_path("cache"), m));
    }
    Ok(())
}

/// `batch_bytes`: 1 byte to 1 GiB, on a phase that writes in batches, not beside `batch`.
fn check_batch_bytes(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    let Some(b) = phase.batch_bytes else { return Ok(()) };
    field(&field_path("batch_bytes"), crate::spec::in_range(b, 1, 1 << 30))?;
    if phase.batch.is_some() {
        let m = "batch_bytes and batch both size the batches: give one (batch_bytes: bytes a batch; batch: records)";
        return Err(FieldError::new(&field_path("batch_bytes"), m));
    }
    if !matches!(phase.kind, PhaseKind::Load | PhaseKind::Insert | PhaseKind::Update | PhaseKind::Delete) {
        let m = "batch_bytes sizes write batches: allowed on load, insert, update and delete phases";
        return Err(FieldError::new(&field_path("batch_bytes"), m));
    }
    Ok(())
}

/// Each field that shapes a phase's operations, and whether the phase gives it.
pub(crate) fn shaping_fields(phase: &PhaseDef) -> [(&'static str, bool); 25] {
    [
        ("count", phase.count.is_some()),
        ("distribution", phase.distribution.is_some()),
        ("keys", phase.keys.is_some()),
        ("length", phase.length.is_some()),
        ("min_length", phase.min_length.is_some()),
        ("warmup", phase.warmup.is_some()),
        ("mix", phase.mix.is_some()),
        ("hot_key", phase.hot_key.is_some()),
        ("zipf_exponent", phase.zipf_exponent.is_some()),
        ("batch", phase.batch.is_some()),
        ("batch_bytes", phase.batch_bytes.is_some()),
        ("threads", phase.threads.is_some()),
        ("cache", phase.cache != CacheMode::Warm),
        ("open_per", phase.open_per != OpenPer::Phase),
        ("rate", phase.rate.is_some()),
        ("passes", phase.passes.is_some()),
        ("share", phase.share.is_some()),
        ("open", phase.open.is_some()),
        ("kill", phase.kill.is_some()),
        ("duration", phase.duration.is_some()),
        ("until", phase.until.is_some()),
        ("steady_window", phase.steady_window.is_some()),
        ("steady_within", phase.steady_within.is_some()),
        ("stall_fraction", phase.stall_fraction.is_some()),
        ("writer", phase.writer.is_some()),
    ]
}

/// A settle phase runs no operations: a field that shapes operations is an error, not ignored.
fn check_settle(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    let set = shaping_fields(phase);
    match set.iter().find(|(_, given)| *given) {
        Some((k, _)) => Err(FieldError::new(
            &field_path(k),
            format!(
                "`{k}` does not apply to a {} phase: it runs no operations (allowed: kind, name)",
                phase.kind.as_str()
            ),
        )),
        None => Ok(()),
    }
}

/// A kill's time and member.
fn check_kill(kill: &KillDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    use crate::spec::{in_range, limits as l};
    let mut path = field_path("kill");
    path.push(At::Key("after"));
    field(&path, kill.after_ms().map(|_| ()))?;
    let mut path = field_path("kill");
    path.push(At::Key("member"));
    field(&path, in_range(kill.member, 0, l::KILL_MEMBER))
}

/// `duration`, `until` and their companions: parsed, in range, and only on phases whose
/// count does not size the dataset.
fn check_stop_rules(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    use crate::spec::{in_range, positive_finite};
    if let Some(d) = &phase.duration {
        field(&field_path("duration"), parse_duration_ms(d, 1, DURATION_MAX_MS).map(|_| ()))?;
    }
    let stops = if phase.duration.is_some() { Some("duration") } else { phase.until.map(|_| "until") };
    if let Some(k) = stops {
        if phase.kind == PhaseKind::Load {
            return Err(FieldError::new(
                &field_path(k),
                "a load writes every record once: it cannot run for a duration",
            ));
        }
        if phase.inserts() {
            let m = "a phase that inserts cannot run for a duration or until steady: its count of inserts sizes \
                     the dataset before anything runs (give it a `count`)";
            return Err(FieldError::new(&field_path(k), m));
        }
        for (k, set) in [("passes", phase.passes.is_some()), ("share", phase.share.is_some())] {
            if set {
                return Err(FieldError::new(
                    &field_path(k),
                    format!("{k} is a count: with a duration, give `count` as the cap"),
                ));
            }
        }
    }
    if let Some(w) = phase.steady_window {
        field(&field_path("steady_window"), in_range(w, 2, 3600).map_err(|e| format!("{e}, in intervals")))?;
    }
    if let Some(w) = phase.steady_within {
        field(
            &field_path("steady_within"),
            positive_finite(w, 1.0, false).map_err(|e| format!("{e}, a fraction of the mean")),
        )?;
    }
    if phase.until.is_none() {
        for (k, set) in
            [("steady_window", phase.steady_window.is_some()), ("steady_within", phase.steady_within.is_some())]
        {
            if set {
                return Err(FieldError::new(&field_path(k), format!("{k} is for phases with until = \"steady\"")));
            }
        }
    }
    if let Some(x) = phase.stall_fraction {
        let ok = x.is_finite() && x > 0.0 && x < 1.0;
        field(
            &field_path("stall_fraction"),
            if ok { Ok(()) } else { Err(format!("{x} is out of range (allowed: above 0, below 1)")) },
        )?;
    }
    Ok(())
}

/// `writer`: a positive rate, beside the readers of a get, multi-get or scan phase.
fn check_writer(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    use crate::spec::{limits as l, positive_finite};
    let Some(w) = phase.writer else { return Ok(()) };
    if !matches!(phase.kind, PhaseKind::Get | PhaseKind::MultiGet | PhaseKind::Scan) {
        return Err(FieldError::new(
            &field_path("writer"),
            "a background writer is for read phases (get, multi-get, scan)",
        ));
    }
    if phase.open_per == OpenPer::Operation || phase.open.is_some_and(|m| m != OpenMode::ReadWrite) {
        return Err(FieldError::new(
            &field_path("writer"),
            "a background writer needs the phase's store open read-write",
        ));
    }
    let mut path = field_path("writer");
    path.push(At::Key("rate"));
    field(&path, positive_finite(w.rate, l::RATE, false).map_err(|e| format!("{e}, updates per second")))
}

/// The leading `#` comment block of a file, without the `#`s.
/// `passes` (load, get, multi-get and update phases, instead of `count`) and a phase's own `open`
/// (read phases only).
fn check_passes_and_open(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    use crate::spec::{in_range, limits as l};
    if let Some(n) = phase.passes {
        field(&field_path("passes"), in_range(n, 1, l::PASSES))?;
        let kinds = [PhaseKind::Load, PhaseKind::Get, PhaseKind::MultiGet, PhaseKind::Update];
        if !kinds.contains(&phase.kind) || phase.count.is_some() {
            return Err(FieldError::new(
                &field_path("passes"),
                "passes is for load, get, multi-get and update phases without `count`",
            ));
        }
    }
    if phase.open.is_some_and(|m| m != crate::engine::OpenMode::ReadWrite) && phase.kind.may_write() {
        return Err(FieldError::new(
            &field_path("open"),
            "a phase's own open mode is for read phases (get, multi-get, scan)",
        ));
    }
    Ok(())
}

/// `share`: a positive multiple of the records (at most `passes`' largest), on a phase whose count
/// it can give, and instead of `count` and `passes`.
fn check_share(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    use crate::spec::{limits as l, positive_finite};
    let Some(x) = phase.share else { return Ok(()) };
    let range = positive_finite(x, f64::from(l::PASSES), false);
    field(&field_path("share"), range.map_err(|e| format!("{e}, a share of the records (0.5 is half of them)")))?;
    use PhaseKind as K;
    if !matches!(phase.kind, K::Get | K::MultiGet | K::Scan | K::Update | K::Delete | K::Rmw) {
        let m = "share is for get, multi-get, scan, update, delete and rmw phases (a load writes every record; \
                 an insert's count sizes the dataset: give it a `count`)";
        return Err(FieldError::new(&field_path("share"), m));
    }
    for (k, set) in [("count", phase.count.is_some()), ("passes", phase.passes.is_some())] {
        if set {
            return Err(FieldError::new(
                &field_path("share"),
                format!("share gives the phase's count: leave `{k}` out"),
            ));
        }
    }
    Ok(())
}

pub fn header_comment(text: &str) -> String {
    text.lines()
        .take_while(|l| l.trim_start().starts_with('#'))
        .map(|l| l.trim_start().trim_start_matches('#').trim())
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_string()
}

/// Workloads named on the command line (`--workload`).
pub const WORKLOADS: &[(&str, &str)] = &[
    ("default", "load, random get of every record, multi-get of 100 keys, one full scan"),
    ("readrandom", "load, then random get of every record"),
    ("readseq", "load, then one full ordered scan"),
    ("fillrandom", "load in random order only"),
    ("fillseq", "load in key order only"),
    ("overwrite", "load, then update every record in random order"),
];

pub fn workload(name: &str) -> Result<Vec<PhaseDef>, String> {
    use PhaseKind::*;
    let load = |dist: Distribution| PhaseDef { distribution: Some(dist), ..PhaseDef::new(Load) };
    Ok(match name {
        "default" => vec![
            load(Distribution::Shuffle),
            PhaseDef::new(Get),
            PhaseDef { keys: Some(100), ..PhaseDef::new(MultiGet) },
            PhaseDef::new(Scan),
        ],
        "readrandom" => vec![load(Distribution::Shuffle), PhaseDef::new(Get)],
        "readseq" => vec![load(Distribution::Shuffle), PhaseDef::new(Scan)],
        "fillrandom" => vec![load(Distribution::Shuffle)],
        "fillseq" => vec![load(Distribution::Sequential)],
        "overwrite" => vec![load(Distribution::Shuffle), PhaseDef::new(Update)],
        other => {
            let names: Vec<_> = WORKLOADS.iter().map(|w| w.0).collect();
            return Err(format!("unknown workload `{other}` (known: {})", names.join(", ")));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budgeted_scenario_settles_before_a_read_that_follows_a_write() {
        let text = "memory = \"64MiB\"\nengines = [\"rocksdb\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\n\
                    [[phase]]\nkind = \"scan\"\n[[phase]]\nkind = \"update\"\n[[phase]]\nname = \"g2\"\nkind = \"get\"\n";
        let mut s: Scenario = toml::from_str(text).unwrap();
        let added = s.settle_before_reads();
        assert_eq!(added.len(), 2, "{added:?}");
        let names: Vec<String> = (0..s.phases.len()).map(|i| s.phase_name(i)).collect();
        assert_eq!(names, ["load", "settle-before-get", "get", "scan", "update", "settle-before-g2", "g2"]);
        s.check().unwrap();
        let mut off: Scenario = toml::from_str(&format!("settle = false\n{text}")).unwrap();
        assert!(off.settle_before_reads().is_empty() && off.phases.len() == 5);
        let mut free: Scenario = toml::from_str(&text.replace("memory = \"64MiB\"\n", "")).unwrap();
        assert!(free.settle_before_reads().is_empty(), "no budget, no settle added");
    }

    #[test]
    fn interleaved_repetitions_rotate_the_row_order_each_round() {
        let s = RepetitionOrder::Interleaved.schedule(3, 3);
        assert_eq!(s, [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (1, 0), (2, 2), (2, 0), (2, 1)]);
    }

    #[test]
    fn sequential_repetitions_run_each_row_back_to_back() {
        let s = RepetitionOrder::Sequential.schedule(2, 3);
        assert_eq!(s, [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]);
    }

    #[test]
    fn every_schedule_runs_each_row_once_per_repetition() {
        for order in [RepetitionOrder::Interleaved, RepetitionOrder::Sequential] {
            let mut s = order.schedule(4, 5);
            s.sort();
            let all: Vec<(u32, usize)> = (0..5).flat_map(|r| (0..4).map(move |i| (r, i))).collect();
            assert_eq!(s, all, "{order:?}");
        }
    }

    #[test]
    fn a_bad_field_names_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, "# intent\nengines = [\"lmdb\"]\n\n[[phase]]\nkind = \"load\"\nbach = 10\n").unwrap();
        let err = Scenario::from_file(&p).unwrap_err();
        assert!(err.contains("s.toml"), "{err}");
        assert!(err.contains("line 6"), "{err}");
        assert!(err.contains("bach"), "{err}");
    }

    #[test]
    fn expect_takes_only_known_values_and_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        let body =
            "engines = []\n[[phase]]\nkind = \"load\"\n[[engine]]\nname = \"tinycdb\"\nexpect = \"mismatches\"\n";
        std::fs::write(&p, body).unwrap();
        let err = Scenario::from_file(&p).unwrap_err();
        assert!(err.contains("line 6") && err.contains("`mismatch`"), "{err}");
        std::fs::write(&p, body.replace("mismatches", "mismatch")).unwrap();
        let s = Scenario::from_file(&p).unwrap();
        assert_eq!(s.variants[0].expect, Some(crate::spec::Expect::Mismatch));
        assert_eq!(s.all_variants()[0].expect, Some(crate::spec::Expect::Mismatch));
    }

    /// Every scenario the project ships parses and passes check().
    #[test]
    fn every_shipped_scenario_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let mut files: Vec<_> = ["", "ci"]
            .iter()
            .flat_map(|sub| std::fs::read_dir(root.join(sub)).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        assert!(files.len() >= 12, "{files:?}");
        for f in &files {
            Scenario::from_file(f).unwrap_or_else(|e| panic!("{e}"));
        }
        let s = Scenario::from_file(&root.join("article-003-dictionary.toml")).unwrap();
        let put_add = s.all_variants().into_iter().find(|v| v.label() == "tinycdb-put_add").unwrap();
        assert_eq!(put_add.expect, Some(crate::spec::Expect::Mismatch));
    }

    #[test]
    fn header_comment_is_the_intent() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, "# Compare A\n# with B.\nengines = [\"memory\"]\n[[phase]]\nkind = \"load\"\n").unwrap();
        let s = Scenario::from_file(&p).unwrap();
        assert_eq!(s.intent, "Compare A with B.");
        assert_eq!(s.name, "s");
    }

    #[test]
    fn every_named_workload_starts_with_a_load() {
        for (name, _) in WORKLOADS {
            let phases = workload(name).unwrap();
            assert_eq!(phases[0].kind, PhaseKind::Load, "{name}");
        }
        assert!(workload("nope").unwrap_err().contains("readrandom"));
    }

    #[test]
    fn a_warm_up_of_a_writing_phase_is_refused_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        let text = "engines = [\"memory\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"update\"\nwarmup = 10\n";
        std::fs::write(&p, text).unwrap();
        let err = Scenario::from_file(&p).unwrap_err();
        assert!(err.contains("warmup") && err.contains("read phases") && err.contains("line"), "{err}");
    }

    fn scenario_error(phase: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        let text = format!("engines = [\"memory\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\n{phase}\n");
        std::fs::write(&p, text).unwrap();
        Scenario::from_file(&p).err().unwrap_or_default()
    }

    /// Issue 45 point 5: a later load is an overwrite pass of the same values, in the first
    /// load's order; it cannot follow a phase that wrote other values, and the first load has
    /// no order to follow.
    #[test]
    fn a_later_load_overwrites_with_the_same_values_before_any_other_write() {
        let check = |phases: &str| {
            let text = format!("engines = [\"memory\"]\n{phases}");
            toml::from_str::<Scenario>(&text).unwrap().check()
        };
        let load = "[[phase]]\nkind = \"load\"\ndistribution = \"uniform\"\n";
        let again = "[[phase]]\nname = \"again\"\nkind = \"load\"\ndistribution = \"load-order\"\nbatch = 1\n";
        let get = "[[phase]]\nkind = \"get\"\n";
        let update = "[[phase]]\nkind = \"update\"\n";
        assert_eq!(check(&format!("{load}{again}{get}")), Ok(()));
        assert_eq!(check(&format!("{load}{get}{again}{update}")), Ok(()), "reads may come between");
        let e = check(&format!("{load}{update}{again}")).unwrap_err();
        assert!(e.contains("].kind") && e.contains("phase `update`"), "{e}");
        let first = load.replace("uniform", "load-order");
        let e = check(&first).unwrap_err();
        assert!(e.contains("].distribution") && e.contains("no load order"), "{e}");
        let e = check(&format!("{load}{}", again.replace("load-order", "zipfian"))).unwrap_err();
        assert!(e.contains("load-order on a later load"), "{e}");
    }

    #[test]
    fn random_and_db_bench_keys_narrower_than_8_bytes_are_refused_naming_the_width() {
        for kind in ["random", "db-bench"] {
            let check = |width: u32| {
                let text = format!(
                    "engines = [\"memory\"]\n[dataset]\nkey = {{ kind = \"{kind}\", width = {width} }}\n\
                     [[phase]]\nkind = \"load\"\n"
                );
                toml::from_str::<Scenario>(&text).unwrap().check()
            };
            let e = check(7).unwrap_err();
            assert!(e.contains("dataset.key.width") && e.contains("8") && e.contains("db-bench key"), "{e}");
            assert_eq!(check(8), Ok(()));
            assert_eq!(check(24), Ok(()));
        }
    }

    #[test]
    fn durations_take_units_and_bad_ones_name_the_field_and_forms() {
        assert_eq!(parse_duration_ms("500ms", 1, 10_000_000), Ok(500));
        assert_eq!(parse_duration_ms("1.5s", 1, 10_000_000), Ok(1500));
        assert_eq!(parse_duration_ms("10m", 1, 10_000_000), Ok(600_000));
        assert_eq!(parse_duration_ms(" 1h ", 1, 10_000_000), Ok(3_600_000));
        for bad in ["60", "s", "-1s", "1d", "1 min", "NaNs", "0s"] {
            let e = parse_duration_ms(bad, 1, 10_000_000).unwrap_err();
            assert!(e.contains("\"90s\"") && e.contains("from 1ms to 10000s"), "{bad}: {e}");
        }
        let e = scenario_error("kind = \"get\"\nduration = \"60\"");
        assert!(e.contains("line 6") && e.contains("phase[2].duration") && e.contains("\"10m\""), "{e}");
        assert_eq!(KillDef { member: 0, after: "0s".into() }.after_ms(), Ok(0));
    }

    #[test]
    fn phases_that_insert_or_load_cannot_run_for_a_duration() {
        let e = scenario_error("kind = \"insert\"\nduration = \"1s\"");
        assert!(e.contains("phase[2].duration") && e.contains("sizes the dataset"), "{e}");
        let e = scenario_error("kind = \"mixed\"\nmix = { read = 1, insert = 1 }\nuntil = \"steady\"");
        assert!(e.contains("phase[2].until") && e.contains("sizes the dataset"), "{e}");
        assert!(scenario_error("kind = \"mixed\"\nmix = { read = 1, update = 1 }\nduration = \"1s\"").is_empty());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, "engines = [\"memory\"]\n[[phase]]\nkind = \"load\"\nduration = \"1s\"\n").unwrap();
        let e = Scenario::from_file(&p).unwrap_err();
        assert!(e.contains("phase[1].duration") && e.contains("cannot run for a duration"), "{e}");
    }

    #[test]
    fn stop_rule_companions_and_writers_are_checked() {
        let e = scenario_error("kind = \"get\"\nsteady_window = 5");
        assert!(e.contains("until = \"steady\""), "{e}");
        let e = scenario_error("kind = \"get\"\nuntil = \"steady\"\nsteady_within = 2.0");
        assert!(e.contains("steady_within") && e.contains("allowed"), "{e}");
        let e = scenario_error("kind = \"get\"\nstall_fraction = 1.0");
        assert!(e.contains("stall_fraction") && e.contains("below 1"), "{e}");
        let e = scenario_error("kind = \"update\"\nwriter = { rate = 100 }");
        assert!(e.contains("phase[2].writer") && e.contains("read phases"), "{e}");
        let e = scenario_error("kind = \"get\"\nwriter = { rate = 0 }");
        assert!(e.contains("writer.rate"), "{e}");
        assert!(scenario_error("kind = \"scan\"\nwriter = { rate = 100 }\nuntil = \"steady\"").is_empty());
    }
}
