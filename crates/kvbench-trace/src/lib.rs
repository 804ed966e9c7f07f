//! kvbench-trace: operation streams recorded by real systems, and models of them.
//!
//! A *trace* is read as a stream of [`TraceOp`]s, one key each, in recorded order, in constant
//! memory whatever the file's size (docs/traces.md). Readers exist for RocksDB trace files
//! ([`rocksdb`]), Redis `MONITOR` output ([`redis`]), memcached `watch fetchers mutations`
//! output ([`memcached`]) and the cache-trace CSV format ([`csv`]); [`open`] recognises the
//! format from the first bytes. [`mixgraph`] and [`model`] generate streams of the same shape
//! (db_bench's mixgraph, and a model fitted to a trace), so a plan is made from every one of them
//! the same way. [`profile`] describes a stream; [`fit`] turns a profile into a model.
//!
//! This crate stands alone: it knows nothing of engines, plans or reports.
//!
//! The main types: [`TraceOp`] (one key's recorded operation) and its [`Kind`]; [`Reader`], the
//! stream every format's reader is; [`TraceError`], which names the file and the place in it;
//! [`profile::Profile`] and [`fit::Fitted`] (a [`model::Model`] and how close it comes).
//!
//! Reading a few lines of `redis-cli monitor` output, profiling them and fitting a model:
//!
//! ```
//! use kvbench_trace::{fit, open, profile::Profile, Kind};
//!
//! let path = std::env::temp_dir().join(format!("kvbench-trace-doc-{}.monitor", std::process::id()));
//! std::fs::write(
//!     &path,
//!     "OK\n\
//!      1795843163.000001 [0 127.0.0.1:5000] \"SET\" \"user:1\" \"alice\"\n\
//!      1795843163.000002 [0 127.0.0.1:5000] \"GET\" \"user:1\"\n\
//!      1795843163.000003 [0 127.0.0.1:5001] \"GET\" \"user:2\"\n",
//! )?;
//! let ops: Vec<_> = open(&path, None)?.collect::<Result<_, _>>()?;
//! assert_eq!(ops.iter().map(|op| op.kind).collect::<Vec<_>>(), [Kind::Put, Kind::Get, Kind::Get]);
//! assert_eq!(ops[0].value_size, Some(5));
//!
//! let profile = Profile::build(open(&path, None)?)?;
//! assert_eq!((profile.ops, profile.distinct_keys), (3, 2));
//! let fitted = fit::fit(&profile);
//! assert!((fitted.model.mix.get - 2.0 / 3.0).abs() < 1e-6);
//! std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub mod csv;
pub mod fit;
pub mod lines;
pub mod memcached;
pub mod mixgraph;
pub mod model;
pub mod profile;
pub mod redis;
pub mod rocksdb;

/// What a recorded operation does, as a replay runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A point read (GET, Get, item_get, a cache-trace `get`).
    Get,
    /// A write of a whole value (SET, Put, item_store, a cache-trace `set`).
    Put,
    Delete,
    /// A seek and the records visited after it, in key order.
    Scan,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Get, Kind::Put, Kind::Delete, Kind::Scan];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Get => "get",
            Kind::Put => "put",
            Kind::Delete => "delete",
            Kind::Scan => "scan",
        }
    }
}

/// One key's operation, as recorded. A request on several keys (MGET, MSET, a RocksDB write
/// batch or MultiGet) is several ops, the later ones `joined` to the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOp {
    /// When the operation was issued, in microseconds (any origin: a replay counts from the
    /// first op's time).
    pub ts_us: u64,
    /// The client that issued it, numbered 0, 1, ... in order of first appearance (a Redis
    /// client address, a memcached connection, a cache-trace client id, one client for a
    /// RocksDB trace).
    pub client: u32,
    pub kind: Kind,
    pub key: Vec<u8>,
    /// Bytes of the value: written by a put; found by a get when the trace records it
    /// (memcached `size`, a cache-trace `value size`). `None` when the trace does not say.
    pub value_size: Option<u32>,
    /// A scan's records visited, when the trace says; `None` otherwise (a RocksDB trace
    /// records the seek, not the `Next` calls after it).
    pub scan_len: Option<u32>,
    /// Part of the same request as the previous op (same client, same time).
    pub joined: bool,
}

/// The trace formats kvbench reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// A RocksDB trace file (`db_bench -trace_file`, `DB::StartTrace`).
    Rocksdb,
    /// `redis-cli monitor` output.
    RedisMonitor,
    /// memcached's `watch fetchers mutations` output.
    MemcachedWatch,
    /// The cache-trace CSV format of Twitter's published traces.
    CacheCsv,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Rocksdb, Format::RedisMonitor, Format::MemcachedWatch, Format::CacheCsv];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Rocksdb => "rocksdb",
            Format::RedisMonitor => "redis-monitor",
            Format::MemcachedWatch => "memcached-watch",
            Format::CacheCsv => "cache-csv",
        }
    }

    pub fn parse(name: &str) -> Result<Format, String> {
        Format::ALL.into_iter().find(|f| f.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
            format!("`{name}` is not a trace format (allowed: {})", names.join(", "))
        })
    }
}

/// Where in a trace file something went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// 1-based line of a text trace.
    Line(u64),
    /// Byte offset of a binary record.
    Offset(u64),
    /// The file as a whole (it cannot be opened, it is empty, its format is unknown).
    File,
}

/// A trace that cannot be read: the file, the place, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {what}", path.display(), place_text(*place))]
pub struct TraceError {
    pub path: PathBuf,
    pub place: Place,
    pub what: String,
}

fn place_text(place: Place) -> String {
    match place {
        Place::Line(n) => format!(": line {n}"),
        Place::Offset(o) => format!(": byte {o}"),
        Place::File => String::new(),
    }
}

impl TraceError {
    pub fn new(path: &Path, place: Place, what: impl Into<String>) -> TraceError {
        TraceError { path: path.to_path_buf(), place, what: what.into() }
    }
}

/// A stream of recorded operations. `Some(Err)` ends the stream: a reader never yields after
/// an error.
pub trait Reader: Iterator<Item = Result<TraceOp, TraceError>> + Send {
    fn format(&self) -> Format;

    /// Recorded operations the replay cannot run, by name (`CONFIG`, `PING`, `incr`, ...), each
    /// with how many times it was seen so far.
    fn skipped(&self) -> &BTreeMap<String, u64>;

    /// Bytes read so far (for progress), and the xxh3-64 of them once the stream has ended
    /// (the trace's identity in a result).
    fn bytes_read(&self) -> u64;
    fn hash(&self) -> Option<u64>;
}

/// Opens a trace, in `format` or in the format its first bytes show. A FIFO or a pipe is read
/// once, as it comes; nothing is read twice.
pub fn open(path: &Path, format: Option<Format>) -> Result<Box<dyn Reader>, TraceError> {
    let mut src = lines::Source::open(path)?;
    let format = match format {
        Some(f) => f,
        None => sniff(path, src.peek(lines::HEAD)?)?,
    };
    Ok(match format {
        Format::Rocksdb => Box::new(rocksdb::RocksdbReader::new(src)),
        Format::RedisMonitor => Box::new(redis::MonitorReader::new(src)),
        Format::MemcachedWatch => Box::new(memcached::WatchReader::new(src)),
        Format::CacheCsv => Box::new(csv::CacheCsvReader::new(src)),
    })
}

/// The format of a trace from its first bytes.
pub fn sniff(path: &Path, head: &[u8]) -> Result<Format, TraceError> {
    let found = [
        (Format::Rocksdb, rocksdb::looks_like(head)),
        (Format::RedisMonitor, redis::looks_like(head)),
        (Format::MemcachedWatch, memcached::looks_like(head)),
        (Format::CacheCsv, csv::looks_like(head)),
    ];
    match found.iter().find(|(_, yes)| *yes) {
        Some((f, _)) => Ok(*f),
        None if head.is_empty() => Err(TraceError::new(path, Place::File, "the trace is empty")),
        None => {
            let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
            Err(TraceError::new(
                path,
                Place::File,
                format!("not a trace kvbench reads (allowed: {}; name one with --trace-format)", names.join(", ")),
            ))
        }
    }
}
