//! The engine interface every store implements, and the descriptor a registry line points at.
//!
//! Adapters never time anything: the runner owns every clock read. An adapter translates one
//! call into the store's API and turns the store's errors into [`EngineError`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::options::{describe, resolve, OptionDecl};
pub use crate::options::{parse_size, OptionKind, OptionSpec};

pub type Result<T> = std::result::Result<T, EngineError>;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine cannot do this at all (a phase is then reported N/A, not failed).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The store returned an error.
    #[error("{0}")]
    Store(String),
    #[error("invalid option: {0}")]
    Option(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl EngineError {
    pub fn store(error: impl std::fmt::Display) -> Self {
        EngineError::Store(error.to_string())
    }
}

/// Durability requested for a run; each engine maps it to its own knobs and reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Nothing is forced to disk while the run goes; data is durable only after close.
    None,
    /// Every committed batch or transaction is durable when the write call returns.
    #[default]
    Commit,
    /// Every single write is durable when it returns (a batch counts as one write only where
    /// the engine applies it atomically).
    Always,
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            SyncMode::None => "none",
            SyncMode::Commit => "commit",
            SyncMode::Always => "always",
        })
    }
}

/// How the database is opened for the read phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OpenMode {
    #[default]
    ReadWrite,
    ReadOnly,
    /// RocksDB's secondary instance: a read-only follower with its own info log.
    Secondary,
}

/// What an engine can do beyond get/put. Phases needing a missing capability are N/A.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Capabilities {
    pub ordered_scan: bool,
    /// A real multi-get call; without it multi-get phases loop over get and say so.
    pub multi_get: bool,
    /// Atomic write batches or transactions.
    pub batch: bool,
    pub read_only_open: bool,
    pub secondary_open: bool,
    /// Data survives close and reopen.
    pub persistent: bool,
    /// Written once in one pass (like CDB); no update or delete afterwards.
    pub build_once: bool,
    pub delete: bool,
    /// Takes an update's changed fields and merges them into the stored record itself (a YCSB
    /// binding's `update`); without it an update of one field is a read and a write of the
    /// merged record.
    #[serde(default)]
    pub field_update: bool,
}

impl Capabilities {
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let pairs = [
            (self.ordered_scan, "scan"),
            (self.multi_get, "multi-get"),
            (self.batch, "batch"),
            (self.read_only_open, "read-only"),
            (self.secondary_open, "secondary"),
            (self.persistent, "persistent"),
            (self.build_once, "build-once"),
            (self.delete, "delete"),
            (self.field_update, "field-update"),
        ];
        for (on, name) in pairs {
            if on {
                v.push(name);
            }
        }
        v
    }
}

/// The resolved options of one engine variant (crate::options): every option of the
/// engine, `null` where unset, sizes as integers. Engines read them; they check nothing.
#[derive(Debug, Clone, Default)]
pub struct Options {
    values: BTreeMap<String, serde_json::Value>,
}

impl Options {
    /// Check `given` against the engine's specs and resolve it; the error names the field and
    /// what it takes.
    pub fn parse(
        engine: &str,
        specs: &[OptionSpec],
        given: &BTreeMap<String, serde_json::Value>,
    ) -> std::result::Result<Options, String> {
        let decls: Vec<OptionDecl> = specs.iter().map(OptionDecl::from).collect();
        let values = resolve(engine, &decls, given).map_err(|e| e.message)?;
        Ok(Options { values })
    }

    /// Options kvbench already resolved (a job's `options`).
    pub fn resolved(values: BTreeMap<String, serde_json::Value>) -> Options {
        Options { values }
    }

    /// Every option of the engine, as a job carries them.
    pub fn values(&self) -> &BTreeMap<String, serde_json::Value> {
        &self.values
    }

    pub fn bool(&self, name: &str) -> bool {
        self.values.get(name).and_then(|v| v.as_bool()).unwrap_or(false)
    }

    /// An integer option; None when unset (the engine's own default applies).
    pub fn int(&self, name: &str) -> Option<i64> {
        self.values.get(name)?.as_i64()
    }

    /// A text or enum option (other kinds as JSON text); None when unset.
    pub fn text(&self, name: &str) -> Option<String> {
        match self.values.get(name)? {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// The options that are set, for `hello` and the result file.
    pub fn effective(&self) -> BTreeMap<String, serde_json::Value> {
        self.values.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

/// What an option of `kind` accepts (`kvbench list`, error messages).
pub fn describe_kind(kind: OptionKind) -> String {
    describe(&kind.into())
}

/// Everything an engine needs to open its database.
pub struct OpenArgs<'a> {
    /// A directory owned by this engine variant; the engine may create files inside it.
    pub dir: &'a Path,
    pub options: &'a Options,
    pub sync: SyncMode,
    pub mode: OpenMode,
    /// Records the plan will load (a sizing hint: LMDB map size, hash bucket counts).
    pub expected_records: u64,
    /// Bytes of keys plus values the plan will load (a sizing hint).
    pub expected_bytes: u64,
    /// For server engines: where the server listens (started by kvbench or given by the user).
    pub url: Option<&'a str>,
    /// For server engines kvbench started: the credential it generated (password or token).
    pub token: Option<&'a str>,
}

impl<'a> OpenArgs<'a> {
    /// A read-write open of a store in `dir`, without per-write sync, sizing hints, url or
    /// token; other fields by struct update (`OpenArgs { expected_records: n, ..OpenArgs::new(d, o) }`).
    pub fn new(dir: &'a Path, options: &'a Options) -> Self {
        let (sync, mode) = (SyncMode::None, OpenMode::ReadWrite);
        OpenArgs { dir, options, sync, mode, expected_records: 0, expected_bytes: 0, url: None, token: None }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// One write of a batch: `value: None` deletes the key.
#[derive(Debug, Clone, Copy)]
pub struct WriteOp<'a> {
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

/// An open database. Reads go through [`Reader`]s so that each thread can hold its own
/// transaction, statement or connection.
pub trait Engine: Send + Sync {
    /// Apply the writes as one batch (one transaction or write batch where the engine has
    /// them; one by one otherwise). `sync` from [`OpenArgs`] decides durability. Takes
    /// `&self` so reads and writes can interleave (mixed phases); engines that need it
    /// serialise writers inside.
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()>;

    /// A reader for one thread; it may keep a read transaction open until dropped.
    fn reader(&self) -> Result<Box<dyn Reader + '_>>;

    /// A writer for one thread, when the engine has per-thread write handles (a server engine's
    /// own connection): threads that write then never wait on each other inside the client.
    /// `None` (the default): the thread writes through [`Engine::write`].
    fn writer(&self) -> Result<Option<Box<dyn Writer + '_>>> {
        Ok(None)
    }

    /// Work that is not opening the engine (a server's clean-up, settings, waits for a
    /// rewrite or checkpoint): a separate step that reports keep out of `open`.
    fn prepare(&mut self) -> Result<()> {
        Ok(())
    }

    /// Called once after the load phase and inside its timing (CDB writes its index here).
    fn finish_load(&mut self) -> Result<()> {
        Ok(())
    }

    /// Close explicitly so close errors are seen (Drop is the fallback).
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }

    /// The knobs in effect (sync mapping, compression, cache...), for the result file.
    fn settings(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// Counters the store keeps about itself (compaction bytes written, pending compaction
    /// bytes, L0 files, stalls, B-tree pages and depth...), read at each step's end and each
    /// interval as optional series. Names are the store's own where it has them
    /// (`rocksdb.compaction-pending`...). Cheap enough to call every second, never timed.
    fn internals(&self) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }

    /// Bring the store to a settled state, untimed: flush what is buffered and compact, or
    /// wait until no compaction is pending. Returns what was done, for the phase's note.
    fn settle(&mut self) -> Result<String> {
        Err(EngineError::Unsupported("this engine has no settle (flush and compact) step".into()))
    }

    /// True when the engine keeps a record's fields apart (Redis's `record = "hash"`, as YCSB's
    /// binding): an update of one field goes out alone ([`Writer::write_field`]) instead of
    /// the record being read, merged and written back.
    fn writes_fields(&self) -> bool {
        false
    }

    /// What the engine's client has sent so far, over all its connections (server engines
    /// that count it): the worker reports the difference over each ops step.
    fn wire(&self) -> Option<Wire> {
        None
    }
}

/// Requests a client put on the wire: commands (a pipelined window of N is N), and writes of
/// requests the client then waits on (a window, a batch or one command is one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wire {
    pub commands: u64,
    pub round_trips: u64,
}

impl Wire {
    /// What was sent between `before` and `self`.
    pub fn since(self, before: Wire) -> Wire {
        Wire {
            commands: self.commands.saturating_sub(before.commands),
            round_trips: self.round_trips.saturating_sub(before.round_trips),
        }
    }
}

/// Derives row i of a streamed load batch into `key` and `value` (both cleared first).
pub type RowFn<'r> = dyn FnMut(usize, &mut Vec<u8>, &mut Vec<u8>) + 'r;

/// One thread's write handle ([`Engine::writer`]); same contract as [`Engine::write`].
pub trait Writer {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()>;

    /// True when this writer takes the next load batch as a stream ([`Writer::write_rows`]):
    /// it derives each row as it sends it (a COPY), so building the rows overlaps the store's
    /// work instead of preceding it, as a peer client reads its input file while it sends.
    /// Asked before each load batch of more than one record, outside the timing.
    fn streams_rows(&self) -> bool {
        false
    }

    /// Load `n` new records, row i derived by `row` when the writer needs it (only called
    /// when [`Writer::streams_rows`] said so); the batch is one transaction, as with `write`.
    fn write_rows(&mut self, _n: usize, _row: &mut RowFn<'_>) -> Result<()> {
        Err(EngineError::Unsupported("streamed load batches".into()))
    }

    /// Write one field of an existing record (`name` and bytes as the value's layout holds
    /// them: docs/plan-format.md, "Fields"); only for engines whose [`Engine::writes_fields`].
    fn write_field(&mut self, _key: &[u8], _name: &[u8], _value: &[u8]) -> Result<()> {
        Err(EngineError::Unsupported("writes of one field".into()))
    }
}

pub trait Reader {
    /// Called after writes in a mixed phase: a reader holding a snapshot must take a new one
    /// so that it sees them.
    fn refresh(&mut self) -> Result<()> {
        Ok(())
    }

    /// Copy the value of `key` into `out` (cleared first); `false` when the key is absent.
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// The value of `key`, borrowed until the next call on this reader; `None` when absent.
    /// A reader that reads in place hands out its own memory (LMDB's map inside a read
    /// transaction), so the timed call is the library's call alone; any other copies the
    /// value into `buf` with [`Reader::get`].
    fn get_ref<'a>(&'a mut self, key: &[u8], buf: &'a mut Vec<u8>) -> Result<Option<&'a [u8]>> {
        if self.reads_in_place() {
            return self.get_shared(key);
        }
        Ok(self.get(key, buf)?.then_some(&buf[..]))
    }

    /// True when [`Reader::get_shared`] works: reads hand out memory that stays valid while
    /// the reader is borrowed, so several values can be held at once.
    fn reads_in_place(&self) -> bool {
        false
    }

    /// The value of `key` read in place, borrowed from the reader (only when
    /// [`Reader::reads_in_place`]; otherwise an `Unsupported` error).
    fn get_shared(&self, _key: &[u8]) -> Result<Option<&[u8]>> {
        Err(EngineError::Unsupported("reads in place".into()))
    }

    /// Values of `keys` in order. The default loops over [`Reader::get`]; engines with a
    /// native call override it and declare `multi_get`.
    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        out.clear();
        for k in keys {
            let mut buf = Vec::new();
            let found = self.get(k, &mut buf)?;
            out.push(found.then_some(buf));
        }
        Ok(())
    }

    /// Connections of this reader (server engines with the `connections` option).
    fn connections(&self) -> usize {
        1
    }

    /// Write GET requests for `keys` on connection `conn` in one write, without reading their
    /// replies (pipelining; server engines with the `pipeline` option). The worker times each
    /// GET from this call to the [`Reader::recv_gets`] that returns its reply; engines without
    /// such a client leave it unsupported, and the policy asks it only of rows that set those
    /// options.
    fn send_gets(&mut self, _conn: usize, _keys: &[&[u8]]) -> Result<()> {
        Err(EngineError::Unsupported("pipelined gets".into()))
    }

    /// Read replies to the GETs in flight on `conn`, oldest first, into `out` (cleared first):
    /// every reply that has already arrived, at least one and at most `max`, waiting only for
    /// the first, so the caller can refill the pipeline as replies come in. A bad reply is an
    /// entry of its own (`None`, the error returned after the others); an error with `out`
    /// empty means the connection is lost.
    fn recv_gets(&mut self, _conn: usize, _max: usize, _out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        Err(EngineError::Unsupported("pipelined gets".into()))
    }

    /// Visit up to `limit` records in key order from the first key >= `start` (or the first
    /// key); `visit` returns false to stop early. Returns how many records were visited.
    fn scan(
        &mut self,
        _start: Option<&[u8]>,
        _limit: usize,
        _visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        Err(EngineError::Unsupported("ordered scan".into()))
    }
}

/// Where an engine runs: the Rust worker (this binary) or another language's worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Rust,
    Python,
    Go,
    Java,
    Node,
}

impl Runtime {
    /// The lowercase name results and job policy use (`rust`, `go`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Rust => "rust",
            Runtime::Python => "python",
            Runtime::Go => "go",
            Runtime::Java => "java",
            Runtime::Node => "node",
        }
    }
}

/// One registry line points at one of these.
pub struct EngineDescriptor {
    pub name: &'static str,
    pub description: &'static str,
    pub capabilities: Capabilities,
    pub options: &'static [OptionSpec],
    /// Library version as the library reports it (or as packaged).
    pub version: fn() -> String,
    /// `Err(reason)` when the engine cannot run here (library missing, server binary absent).
    pub available: fn() -> std::result::Result<(), String>,
    pub open: fn(&OpenArgs<'_>) -> Result<Box<dyn Engine>>,
    /// For server engines: start a private server in the given empty directory (kvbench does
    /// this once per run unless the user gives a URL). `None` for embedded engines.
    pub start_server: Option<StartServer>,
}

/// Starts a private server in an empty directory.
pub type StartServer = fn(&Path) -> std::result::Result<Box<dyn RunningServer>, String>;

/// A server kvbench started; stopped by `stop` or, failing that, by Drop.
pub trait RunningServer: Send {
    /// Where clients connect (`redis://127.0.0.1:PORT`, ...), passed to jobs as `url`.
    fn url(&self) -> String;
    /// Version and settings that matter for the numbers (fsync, persistence, memory).
    fn info(&self) -> BTreeMap<String, String>;
    /// The credential clients need (a generated password or bearer token), if any.
    fn token(&self) -> Option<String> {
        None
    }
    /// A cluster's members in start order: (name, process group), for a phase's kill step.
    /// Empty for a single server.
    fn members(&self) -> Vec<(String, i32)> {
        Vec::new()
    }
    /// The process groups of the server's processes: a row's budget and disk accounting
    /// follow every process in them. A cluster's are its members'.
    fn process_groups(&self) -> Vec<i32> {
        self.members().into_iter().map(|(_, g)| g).collect()
    }
    /// The network namespace the server listens in (a descriptor), when it has one of its
    /// own: the row's worker joins it to connect.
    fn netns(&self) -> Option<i32> {
        None
    }
    fn stop(self: Box<Self>) -> std::result::Result<(), String>;
}

impl std::fmt::Debug for EngineDescriptor {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("EngineDescriptor").field("name", &self.name).finish()
    }
}
