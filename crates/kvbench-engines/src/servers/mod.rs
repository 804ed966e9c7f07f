//! The server engines and what they share: kvbench starts each server from the system's
//! binary through one process helper ([`lifecycle`]: private 0700 directory, generated
//! credentials, a stop on Drop), speaks RESP through one connection ([`resp`]), and starts
//! clusters through one member set ([`cluster`], in a private network namespace: [`netns`]).

pub mod cluster;
pub mod etcdcluster;
mod libpq;
pub mod lifecycle;
pub mod memcached;
pub mod netns;
pub mod postgres;
pub mod redis;
mod redisadmin;
pub mod rediscluster;
mod redishash;
pub mod resp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use kvbench_model::engine::{Capabilities, EngineError, OptionSpec, Result};

/// A server engine's job state on its server (durability, the job's namespace made fresh on
/// its first open), applied once per open: by `Engine::prepare`, untimed, or else on first use;
/// and the row's settings, completed as the state is applied.
pub(crate) struct JobState<S> {
    /// What the engine applies.
    pub(crate) how: S,
    /// [`lifecycle::job_marker`]: exists once this job set up its namespace (a reopen keeps the
    /// data).
    pub(crate) marker: PathBuf,
    settings: Mutex<BTreeMap<String, String>>,
    /// Set once the state is in place; at open, when this job set up its namespace before.
    applied: AtomicBool,
}

impl<S> JobState<S> {
    /// The state of `engine`'s job in `dir`, with the settings read at open.
    pub(crate) fn new(how: S, dir: &Path, engine: &str, settings: BTreeMap<String, String>) -> Self {
        let marker = lifecycle::job_marker(dir, engine);
        let applied = AtomicBool::new(marker.exists());
        JobState { how, marker, settings: Mutex::new(settings), applied }
    }

    pub(crate) fn applied(&self) -> bool {
        self.applied.load(Ordering::Acquire)
    }

    /// Unless the state is in place: `apply` with `conn` locked, then the settings.
    pub(crate) fn apply_once<C>(
        &self,
        conn: &Mutex<C>,
        apply: impl FnOnce(&mut C, &mut BTreeMap<String, String>) -> Result<()>,
    ) -> Result<()> {
        if self.applied() {
            return Ok(());
        }
        let mut c = conn.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let mut settings = self.settings.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        apply(&mut c, &mut settings)?;
        self.applied.store(true, Ordering::Release);
        Ok(())
    }

    /// `Engine::prepare`: the next `apply_once` applies the state again.
    pub(crate) fn reset(&self) {
        self.applied.store(false, Ordering::Release);
    }

    pub(crate) fn settings(&self) -> BTreeMap<String, String> {
        self.settings.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// A key-value server's capabilities: gets and multi-gets by key, each write its own command (no
/// atomic batch), keys unordered, no read-only open.
pub const KEY_VALUE_SERVER: Capabilities =
    Capabilities { ordered_scan: false, multi_get: true, batch: false, read_only_open: false, ..crate::ORDERED_STORE };

/// The key namespace of an engine on a server that others may share.
pub const PREFIX: OptionSpec = OptionSpec::text(
    "prefix",
    "kvb:",
    "prefix of every key: kvbench's namespace; the first open of a job deletes the keys under it",
);

pub const CONNECTIONS: OptionSpec = OptionSpec::int(
    "connections",
    "1",
    "connections per reader thread; a get phase spreads each pipelined round over them",
);

/// Redis's AOF fsync policy (redis and redis-cluster).
pub const APPENDFSYNC: OptionSpec = OptionSpec::one_of(
    "appendfsync",
    &["auto", "always", "everysec", "no"],
    "auto",
    "AOF fsync policy when sync is commit/always (auto: always)",
);

/// Pipelining of a server whose writes and gets are one request per key (memcached, redis).
pub const PIPELINE: OptionSpec = OptionSpec::int(
    "pipeline",
    "0",
    "requests in flight per connection: a write batch's window (0: the whole batch) and a get \
          phase's depth (0 or 1: one get at a time)",
);

/// What a server engine's client sent, over all its connections ([`Engine::wire`]): counted
/// as each request is written, so a step's difference is what went over the wire.
///
/// [`Engine::wire`]: kvbench_model::engine::Engine::wire
#[derive(Debug, Default)]
pub struct WireCount {
    commands: std::sync::atomic::AtomicU64,
    round_trips: std::sync::atomic::AtomicU64,
}

impl WireCount {
    /// One write of `commands` commands whose replies the client then reads.
    #[inline]
    pub fn sent(&self, commands: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        self.commands.fetch_add(commands as u64, Relaxed);
        self.round_trips.fetch_add(1, Relaxed);
    }

    pub fn get(&self) -> kvbench_model::engine::Wire {
        use std::sync::atomic::Ordering::Relaxed;
        kvbench_model::engine::Wire {
            commands: self.commands.load(Relaxed),
            round_trips: self.round_trips.load(Relaxed),
        }
    }
}

/// Append `value` in decimal (a request's lengths, on the timed path: no allocation).
pub(crate) fn push_decimal(buf: &mut Vec<u8>, mut value: usize) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// One reply to a pipelined get.
pub(crate) enum GetReply {
    Found(Vec<u8>),
    Absent,
    /// Not a value (an error reply, say); the connection stays usable.
    Wrong(EngineError),
}

/// A connection whose pipelined get replies are read one at a time.
pub(crate) trait GetReplies {
    /// The next reply, waiting for it; an error when the connection is broken.
    fn next_get(&mut self) -> Result<GetReply>;
    /// Whether another reply has arrived whole (reading it will not wait).
    fn get_ready(&self) -> bool;
}

/// `recv_gets` of a pipelined get phase: the replies into `out` (cleared first), at least one
/// and at most `max`, as many as have arrived after the first. A wrong reply stands as absent
/// and its error is returned once the round is read, so the connection stays in step.
pub(crate) fn recv_gets(conn: &mut impl GetReplies, max: usize, out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
    out.clear();
    let mut first_err = None;
    while out.len() < max.max(1) {
        match conn.next_get()? {
            GetReply::Found(v) => out.push(Some(v)),
            GetReply::Absent => out.push(None),
            GetReply::Wrong(e) => {
                out.push(None);
                first_err.get_or_insert(e);
            }
        }
        if !conn.get_ready() {
            break;
        }
    }
    first_err.map_or(Ok(()), Err)
}
