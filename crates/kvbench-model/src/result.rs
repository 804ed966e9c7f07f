//! The result file: canonical JSON, versioned by `schema` (see `docs/results.md`).
//! Every report format is derived from these types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "kvbench.result/1";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    #[serde(default)]
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub stdev_ns: f64,
    /// The whole histogram, HdrHistogram V2 compressed encoding in base64 (nanoseconds).
    pub hdr: String,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// A cluster member killed during a phase (the phase's `kill` step) and what it cost.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Fault {
    /// The member killed (name and process id).
    pub member: String,
    /// When the kill was due and when it happened, in ms after the phase started.
    pub after_ms: u64,
    pub killed_at_ms: u64,
    /// Engine errors of the phase.
    pub errors: u64,
    /// The first error's message: what the client saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// The errors by class (message with digits as `#`), as the phase's `error_classes`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors_by: BTreeMap<String, u64>,
    /// From the kill to the end of the disruption: the last interval with errors and any stall
    /// (no finished operation) right after it (resolution: `interval_ms`; see
    /// `policy::kill_cost`); None when the phase ended before it recovered.
    pub recovery_ms: Option<u64>,
    pub interval_ms: u64,
    /// p99 of the intervals before the kill (merged) and the worst interval p99 after it.
    pub p99_before_ns: u64,
    pub p99_worst_after_ns: u64,
}

impl Fault {
    /// One line for reports: "fault: killed m1 at 2.00 s: 312 errors, recovered 5.3 s after the
    /// kill ...". Beside the type, so a report reads it without the policy that fills it in.
    pub fn describe(&self) -> String {
        let rec = match self.recovery_ms {
            Some(0) => "no disruption visible at the timeline's resolution".to_string(),
            Some(ms) => format!("recovered {:.1} s after the kill", ms as f64 / 1000.0),
            None => "not recovered when the phase ended".to_string(),
        };
        let by: Vec<String> = self.errors_by.iter().map(|(class, n)| format!("{n} `{class}`")).collect();
        let by = if by.is_empty() { String::new() } else { format!(" ({})", by.join(", ")) };
        format!(
            "fault: killed {} at {:.2} s: {} errors{by}, {rec} (intervals of {} ms); p99 {:.2} ms before, worst interval p99 {:.2} ms after",
            self.member,
            self.killed_at_ms as f64 / 1000.0,
            self.errors,
            self.interval_ms,
            self.p99_before_ns as f64 / 1e6,
            self.p99_worst_after_ns as f64 / 1e6,
        )
    }
}

/// A host of a multi-host run (`kvbench run --hosts`) and its clock against kvbench's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostClock {
    /// `h1`, `h2`, ...: the suffix of the host's own rows (`LABEL@h1`).
    pub tag: String,
    /// `[user@]host` as given.
    pub host: String,
    /// The host's clock minus kvbench's, ns; within half of `rtt_ns`.
    pub offset_ns: i64,
    pub rtt_ns: u64,
}

/// One interval of a phase's timeline: operations finished in it and their latency.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Interval {
    /// Start of the interval, milliseconds after the phase started.
    pub t_ms: u64,
    pub ops: u64,
    /// Engine errors in the interval (a fault's timeline).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// The interval's histogram (HdrHistogram V2 compressed, base64), for `.hlog` files.
    pub hdr: String,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    #[default]
    Ok,
    Failed,
    /// The engine cannot do this phase (capability missing); nothing was measured.
    #[serde(rename = "n/a")]
    NotApplicable,
    /// Stopped by the user (Ctrl-C) while it ran: what was measured before is kept.
    Interrupted,
    /// Failed exactly as the scenario row declared (`expect = "mismatch"`): shown, counted, and
    /// not a failure of the run (see expect.rs).
    Expected,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseResult {
    pub name: String,
    pub kind: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Records touched (keys read or written).
    pub ops: u64,
    /// Timed units: operations, batches or multi-get requests (see `unit`).
    pub requests: u64,
    /// What one latency sample covers: `op`, `batch`, `request`, `open+op+close`.
    pub unit: String,
    pub errors: u64,
    /// Errors by class: the message with digits as `#` (docs/protocol.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_classes: BTreeMap<String, u64>,
    /// Reads whose value differed from the plan (or found a key that should be absent).
    pub mismatches: u64,
    /// Reads that found nothing where the plan expects a value.
    pub missing: u64,
    /// Time inside the timed calls (for parallel phases, of the busiest thread; for an open
    /// loop, the wall time).
    pub elapsed_ns: u64,
    /// Wall time of the whole phase, the runner's work between calls included.
    #[serde(default)]
    pub wall_ns: u64,
    /// `ops` per second of wall time (`ops / wall_ns`), as every peer tool reports throughput.
    pub ops_per_sec: f64,
    /// Time inside the timed calls summed over threads.
    #[serde(default)]
    pub busy_ns: u64,
    /// Share of the wall time the harness spent outside the engine's calls
    /// (`1 - busy_ns / (threads * wall_ns)`); above 0.10 the report warns.
    #[serde(default)]
    pub harness_share: f64,
    /// Throughput and latency per interval (one per second by default), for timelines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Interval>,
    /// Runtime-specific counters over the phase (Go: `alloc_bytes`, `mallocs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runtime: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// Mixed phases: latency per operation kind (`read`, `update`, `scan`, `delete`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub latency_by_op: BTreeMap<String, Latency>,
    pub threads: u32,
    pub batch: u32,
    pub cache: String,
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// Peak resident set of the worker process so far (kB).
    pub max_rss_kb: u64,
    /// Storage I/O of the worker process during the phase (/proc/self/io).
    pub io_read_bytes: u64,
    pub io_write_bytes: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The phase's `kill` step: the member killed, the errors, the time to recover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// A phase that closed the store (a `size` phase, the final close): the allocated bytes of
    /// its files right after the close (what du shows).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub space_bytes: u64,
    /// What the disk saw during the phase, from every process of the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<Disk>,
    /// The engine's own counters at the phase's end (compaction bytes, L0 files, pages...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub internals: BTreeMap<String, f64>,
    /// What the engine's client put on the wire during the phase (server engines that count
    /// it): commands and round trips, beside `requests` (the timed units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<crate::engine::Wire>,
    /// The same per interval (`t_ms` after the phase started).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub internal_series: Vec<crate::job::InternalSample>,
    /// Why a phase with a duration or `until = "steady"` ended, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Intervals whose throughput fell below `stall_fraction` of the phase's median interval.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stalls: u64,
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub stall_fraction: f64,
}

fn is_zero_f(value: &f64) -> bool {
    *value == 0.0
}

/// Device I/O of a phase: bytes the row's processes (worker and servers) read from and wrote
/// to storage (`/proc/PID/io` `read_bytes`, `write_bytes` less `cancelled_write_bytes`, summed),
/// against the logical bytes the phase's operations read and wrote.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Disk {
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Bytes written and then truncated or deleted before writeback (a WAL or a compaction's
    /// input removed while still in the page cache): the store wrote them, the device never
    /// saw them. `write_bytes + cancelled_write_bytes` is what the store's own statistics count.
    #[serde(default)]
    pub cancelled_write_bytes: u64,
    /// Key and value bytes the operations read (gets, scans) and wrote (loads, updates...).
    pub logical_read_bytes: u64,
    pub logical_write_bytes: u64,
    /// `read_bytes / logical_read_bytes`, `write_bytes / logical_write_bytes` (0: no logical bytes).
    pub read_amplification: f64,
    pub write_amplification: f64,
    /// Share of the store's file pages in the page cache when the phase started (mincore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_at_start: Option<f64>,
    /// Allocated bytes of the store's files at the phase's end, over the raw data size.
    #[serde(default)]
    pub space_bytes: u64,
    /// The lengths of the store's files summed at the phase's end (`space_bytes` counts the
    /// blocks they hold).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub file_bytes: u64,
    #[serde(default)]
    pub space_amplification: f64,
    /// Per interval of the phase: device bytes and the store's allocated bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<DiskInterval>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DiskInterval {
    /// Milliseconds after the phase started.
    pub t_ms: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub space_bytes: u64,
    /// Memory the row's cgroup held (heap and page cache), when the row has one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub memory_bytes: u64,
}

/// The memory a row ran under: a cgroup holding the worker and its servers, page cache
/// included.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Budget {
    /// The limit (bytes); 0: none, the cgroup only counted.
    pub limit_bytes: u64,
    /// The highest usage the cgroup saw (bytes).
    pub peak_bytes: u64,
    /// `cgroup v2 memory.max at PATH` or `cgroup v1 memory.limit_in_bytes at PATH`.
    pub mechanism: String,
    /// Raw data bytes over the limit ("4.7x the budget").
    pub data_over_budget: f64,
    /// Times the limit forced reclaim (v1 `failcnt`, v2 `memory.events` max).
    #[serde(default)]
    pub limit_hits: u64,
    /// Processes the cgroup's OOM killer ended (the row then failed).
    #[serde(default)]
    pub oom_kills: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EngineResult {
    /// Row name: the engine name or the variant's label.
    pub label: String,
    pub engine: String,
    pub runtime: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub repetition: u32,
    pub version: String,
    pub worker: String,
    pub capabilities: Vec<String>,
    pub options: BTreeMap<String, serde_json::Value>,
    /// The knobs in effect as the engine reports them (durability mapping above all).
    pub settings: BTreeMap<String, String>,
    pub sync: String,
    pub open_mode: String,
    pub timer_overhead_ns: f64,
    pub phases: Vec<PhaseResult>,
    /// Multi-host runs: the hosts this row ran on and their clock offsets (the merged row), or
    /// the one host (a per-host row).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostClock>,
    /// Allocated blocks of the data directory after close (bytes).
    pub space_bytes: u64,
    /// Sum of file lengths after close (bytes).
    pub apparent_bytes: u64,
    /// Of `space_bytes`, the allocated bytes of the store's log files (write-ahead logs,
    /// journals, preallocated log files, info logs: files named as such).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub log_space_bytes: u64,
    /// space_bytes / raw data bytes.
    pub space_amplification: f64,
    pub wall_ns: u64,
    /// The row's memory budget and what it used (absent: no cgroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// The memory budget the row was given (bytes), applied or not: with no `budget` beside
    /// it, the row failed before its cgroup held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_requested: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: u32,
    pub memory_bytes: u64,
    pub data_dir: String,
    pub filesystem: String,
    pub build: String,
    pub load_average: f64,
    /// Read-ahead of the data directory's block device (KiB), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_kb: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PlanInfo {
    pub hash: String,
    pub seed: u64,
    pub records: u64,
    pub unique_records: u64,
    pub raw_bytes: u64,
    pub generation_ns: u64,
    pub reused: bool,
    /// A replay phase's stream: the trace (or model) it came from and its profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceInfo>,
}

/// The operation stream a replay phase ran: where it came from and what it holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TraceInfo {
    /// The trace file, or `mixgraph` / `model` for a generated stream.
    pub source: String,
    /// `rocksdb`, `redis-monitor`, `memcached-watch`, `cache-csv`, `mixgraph`, `model`.
    pub format: String,
    /// xxh3-64 of the trace file's bytes (16 hex digits); empty for a generated stream.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
    pub bytes: u64,
    /// Operations (one key each) and requests (an MGET or a write batch is one request).
    pub ops: u64,
    pub requests: u64,
    pub by_kind: BTreeMap<String, u64>,
    pub distinct_keys: u64,
    /// Keys whose first operation is not a put: loaded before the replay (its warm-up).
    pub preloaded: u64,
    pub duration_us: u64,
    pub clients: u32,
    /// Gets and scans over puts and deletes (0 when nothing writes).
    pub read_write_ratio: f64,
    /// Recorded operations a replay cannot run, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped: BTreeMap<String, u64>,
    /// Puts whose recorded size differs from their key's first size (replayed at the first
    /// size: a record keeps one value size).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resized_puts: u64,
    /// The stream's profile, as `kvbench trace describe` prints it (working-set growth, key
    /// popularity, sizes, rate over time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<kvbench_trace::profile::Profile>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    pub schema: String,
    pub kvbench_version: String,
    pub run_id: String,
    /// Seconds since the Unix epoch (UTC).
    pub started_at: u64,
    pub scenario: String,
    /// The command line that produced this file.
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub intent: String,
    pub sync: String,
    pub plan: PlanInfo,
    /// The scenario as run, with defaults filled in.
    pub workload: serde_json::Value,
    pub environment: Environment,
    pub warnings: Vec<String>,
    pub engines: Vec<EngineResult>,
}

impl RunResult {
    pub fn from_json(text: &str) -> Result<RunResult, String> {
        // The schema alone first (the rest skipped, nothing held), then the result parsed
        // straight into its types: no JSON tree of the whole file is built.
        #[derive(Deserialize)]
        struct Head {
            schema: Option<serde_json::Value>,
        }
        let head: Head = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match head.schema.as_ref().map(|s| s.as_str()) {
            Some(Some(SCHEMA)) => {}
            Some(Some(other)) => return Err(format!("schema `{other}`, this kvbench reads `{SCHEMA}`")),
            _ => return Err("no `schema` field: not a kvbench result".into()),
        }
        let r: RunResult = serde_json::from_str(text).map_err(|e| format!("result does not match {SCHEMA}: {e}"))?;
        r.check_histograms()?;
        Ok(r)
    }

    /// The decode budget, checked before any histogram is decoded: at most
    /// [`crate::hdrcheck::MAX_PER_FILE`] histograms of at most `MAX_ENCODED` characters each.
    fn check_histograms(&self) -> Result<(), String> {
        use crate::hdrcheck::{MAX_ENCODED, MAX_PER_FILE};
        let mut n = 0usize;
        for (e, p) in self.engines.iter().flat_map(|e| e.phases.iter().map(move |p| (e, p))) {
            let all = p.latency.iter().map(|l| &l.hdr).chain(p.intervals.iter().map(|i| &i.hdr));
            for h in all {
                n += 1;
                if h.len() > MAX_ENCODED {
                    return Err(format!(
                        "row {} phase {}: a histogram of {} characters, above {MAX_ENCODED}",
                        e.label,
                        p.name,
                        h.len()
                    ));
                }
            }
        }
        if n > MAX_PER_FILE {
            return Err(format!("{n} histograms, above the limit of {MAX_PER_FILE} a result file"));
        }
        Ok(())
    }
}
