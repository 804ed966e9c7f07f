//! `redis`: a Redis server over loopback; timed requests on kvbench's RESP connection
//! (`resp.rs`), set-up through the `redis` crate. Each thread has its own connections: one for
//! reads (or `connections` of them) and one for writes. GET per key, MGET for multi-get; a write
//! batch goes out as one pipeline (or windows of `pipeline` commands), optionally inside
//! MULTI/EXEC; a pipelined get phase keeps `pipeline` GETs in flight on each connection. No
//! ordered scan of strings (Redis keys are unordered).
//!
//! A record is one string (`record = "blob"`), or with `record = "hash"` a hash of its fields
//! with the commands of YCSB's Redis binding and its index sorted set, which scans read
//! (redishash.rs); kvbench resolves `auto` per job: hash when the dataset's values have
//! fields (YCSB's record), blob otherwise. Every request written is counted ([`Engine::wire`]).
//!
//! Durability (`sync`) is applied with CONFIG SET in the untimed `prepare` step (or on first use
//! when a caller skips it), because one server serves every variant of a run: `none` → no AOF, no RDB snapshots; `commit`/`always` → AOF with
//! `appendfsync always` (Redis fsyncs before it answers, so a batch is durable when the call
//! returns). `appendfsync = everysec` is an option and is reported as weaker than asked.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::redis::Connection;
use kvbench_model::engine::*;

use super::lifecycle::{self, Found, ServerProcess, SocketProgram, SocketServer};
use super::redisadmin as admin;
use super::redishash as hash;
use super::resp;
use super::{JobState, WireCount};

pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    name: "redis",
    description: "Redis server over loopback (redis crate, sync API): GET, MGET, pipelined SET/DEL",
    capabilities: super::KEY_VALUE_SERVER,
    options: &[
        super::PREFIX,
        super::PIPELINE,
        super::CONNECTIONS,
        OptionSpec::bool("atomic", "false", "wrap each pipeline window in MULTI/EXEC"),
        super::APPENDFSYNC,
        OptionSpec::bool(
            "configure",
            "true",
            "apply `sync` with CONFIG SET on open; false leaves a server given by --url as it is",
        ),
        OptionSpec::int("db", "0", "database number (SELECT)"),
        RECORD,
    ],
    version: || REDIS_SERVER.version("redis crate 0.27.6 (sync)"),
    available: || Ok(()),
    open,
    start_server: Some(start_server),
};

/// How a record is kept: kvbench resolves `auto` per job (hash for values with fields).
pub const RECORD: OptionSpec = OptionSpec::one_of(
    "record",
    &["auto", "hash", "blob"],
    "auto",
    "hash: a record's fields as a Redis hash with YCSB's binding's commands and index (scans read \
          it); blob: one string per record, fields serialised; auto: hash when the values have fields",
);

/// What a result says of each record shape.
fn record_setting(hash: bool, prefix: &[u8]) -> String {
    if hash {
        let index = String::from_utf8_lossy(&hash::index_key(prefix)).into_owned();
        format!(
            "hash: fields as hash fields (insert: HSET of every field + ZADD of the key to `{index}`; update of \
             one field: HSET of that field; read: HGETALL; delete: DEL + ZREM; scan: ZRANGEBYLEX on `{index}`, \
             then HGETALL per key)"
        )
    } else {
        "blob: one string per record (SET, GET), a record's fields serialised into it; an update of one \
         field is GET, merge, SET"
            .into()
    }
}

// ---------------------------------------------------------------------------------------------
// Server

/// The single server (the cluster's nodes are the same binary: see rediscluster.rs).
pub static REDIS_SERVER: SocketProgram = SocketProgram {
    name: "redis",
    candidates: &["redis-server", "/usr/bin/redis-server"],
    version_flag: "--version",
    missing: "redis-server not found in PATH: apt-get install redis-server, or give --url redis://HOST:PORT",
    socket: "redis.sock",
    users: &["redis", "nobody"],
};

fn start_server(dir: &Path) -> std::result::Result<Box<dyn RunningServer>, String> {
    let Found { binary, version, home, socket } = REDIS_SERVER.find(dir)?;
    let conf = home.dir.join("redis.conf");
    // `port 0`: no TCP listener at all; the socket is the only way in.
    let text = format!(
        "# Written by kvbench for one run; the server is private to it.\n\
         port 0\n\
         unixsocket \"{}\"\n\
         unixsocketperm 700\n\
         protected-mode yes\n\
         daemonize no\n\
         supervised no\n\
         logfile \"\"\n\
         dir \"{}\"\n\
         # Persistence is set per job with CONFIG SET (see the redis engine); start with none.\n\
         save \"\"\n\
         appendonly no\n\
         appendfsync always\n",
        socket.display(),
        home.dir.display()
    );
    std::fs::write(&conf, text).map_err(|e| format!("redis: cannot write {}: {e}", conf.display()))?;
    let args = vec![conf.to_string_lossy().into_owned()];
    let mut proc = ServerProcess::spawn("redis-server", &binary, &args, &home.log, home.user)?;
    let url = unix_url(&socket);
    proc.wait_ready(lifecycle::START_TIMEOUT, || {
        let client = ::redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
        let mut c = client.get_connection_with_timeout(Duration::from_secs(1)).map_err(|e| e.to_string())?;
        ::redis::cmd("PING").query::<String>(&mut c).map(|_| ()).map_err(|e| e.to_string())
    })?;
    let facts = [("persistence", "set per job from `sync` (CONFIG SET); started with none".into())];
    Ok(Box::new(SocketServer::new(proc, home, url, ["redis".into(), version], &facts)))
}

fn unix_url(socket: &Path) -> String {
    format!("redis+unix://{}", socket.display())
}

// ---------------------------------------------------------------------------------------------
// Client

fn err(error: ::redis::RedisError) -> EngineError {
    EngineError::Store(format!("redis: {error}"))
}

pub struct Redis {
    /// Where and how clients connect (address, password, database).
    info: ::redis::ConnectionInfo,
    prefix: Vec<u8>,
    pipeline: usize,
    connections: usize,
    atomic: bool,
    /// `record = "hash"`: each record a hash of its fields.
    hash: bool,
    /// Requests the timed paths wrote, over every connection.
    wire: Arc<WireCount>,
    /// Set-up and administration (CONFIG, INFO, clearing the namespace), never timed.
    admin: Mutex<Connection>,
    /// The writer of callers without a thread of their own (`Engine::write`); the worker gives
    /// each thread its own ([`Engine::writer`]).
    shared: Mutex<Option<RedisWriter>>,
    /// Durability and the job's namespace, applied once per open, and the row's settings.
    job: JobState<Setup>,
}

/// What `prepare` applies: durability and the job's namespace.
struct Setup {
    sync: SyncMode,
    configure: bool,
    policy: String,
}

fn connect(client: &::redis::Client) -> Result<Connection> {
    let c = client.get_connection_with_timeout(Duration::from_secs(10)).map_err(err)?;
    c.set_read_timeout(Some(Duration::from_secs(120))).map_err(err)?;
    c.set_write_timeout(Some(Duration::from_secs(120))).map_err(err)?;
    Ok(c)
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let url = args.url.ok_or_else(|| {
        EngineError::Option("redis needs a server: kvbench starts one, or give --url redis://HOST:PORT".into())
    })?;
    let o = args.options;
    let db = o.int("db").unwrap_or(0);
    let mut info = ::redis::IntoConnectionInfo::into_connection_info(url)
        .map_err(|e| EngineError::Option(format!("redis url `{url}`: {e}")))?;
    if db != 0 {
        info.redis.db = db;
    }
    if let Some(t) = args.token {
        info.redis.password = Some(t.to_string());
    }
    let access = match &info.addr {
        ::redis::ConnectionAddr::Unix(p) => format!("Unix socket {}", p.display()),
        _ if info.redis.password.is_some() => format!("TCP {url} with a password"),
        _ => format!("TCP {url} without authentication (server given by --url / row url)"),
    };
    let client = ::redis::Client::open(info.clone()).map_err(|e| EngineError::Option(format!("redis url: {e}")))?;
    let mut c = connect(&client).map_err(|e| EngineError::Store(format!("cannot connect to {url}: {e}")))?;
    let prefix = o.text("prefix").unwrap_or_default().into_bytes();
    let pipeline = o.int("pipeline").unwrap_or(0).max(0) as usize;
    let connections = o.int("connections").unwrap_or(1).clamp(1, 4096) as usize;
    let atomic = o.bool("atomic");
    let hash = o.text("record").as_deref() == Some("hash");
    let policy = match o.text("appendfsync").as_deref() {
        Some("auto") | None => "always".to_string(),
        Some(p) => p.to_string(),
    };

    let mut settings = BTreeMap::new();
    settings.insert("url".into(), url.to_string());
    settings.insert("access".into(), access);
    settings.insert("server_version".into(), admin::info_field(&mut c, "server", "redis_version").unwrap_or_default());
    settings.insert(
        "pipeline".into(),
        if pipeline == 0 { "whole batch".into() } else { format!("{pipeline} commands per round trip") },
    );
    settings.insert("connections".into(), format!("{connections} per reader thread"));
    settings.insert("atomic".into(), if atomic { "MULTI/EXEC per window".into() } else { "no".into() });
    settings.insert("keys".into(), format!("prefix `{}` + the key's bytes", String::from_utf8_lossy(&prefix)));
    settings.insert("record".into(), record_setting(hash, &prefix));
    read_durability(&mut c, args.sync, &mut settings);
    let setup = Setup { sync: args.sync, configure: o.bool("configure"), policy };
    let job = JobState::new(setup, args.dir, "redis", settings);
    Ok(Box::new(Redis {
        info,
        prefix,
        pipeline,
        connections,
        atomic,
        hash,
        wire: Arc::default(),
        admin: Mutex::new(c),
        shared: Mutex::new(None),
        job,
    }))
}

/// The durability in effect, read back from the server.
fn read_durability(conn: &mut Connection, sync: SyncMode, settings: &mut BTreeMap<String, String>) {
    let appendonly = admin::config_get(conn, "appendonly");
    let appendfsync = admin::config_get(conn, "appendfsync");
    settings.insert("appendonly".into(), appendonly.clone());
    settings.insert("appendfsync".into(), appendfsync.clone());
    settings.insert("save".into(), format!("{:?}", admin::config_get(conn, "save")));
    settings.insert("maxmemory".into(), admin::config_get(conn, "maxmemory"));
    settings.insert("io-threads".into(), admin::config_get(conn, "io-threads"));
    let durable = appendonly == "yes" && appendfsync == "always";
    settings.insert(
        "durability".into(),
        match (sync, durable) {
            (SyncMode::None, _) => "none: data in memory only (sync=none)".into(),
            (_, true) => "AOF fsynced before each reply: a batch is durable when it returns".into(),
            (s, false) => format!(
                "WEAKER than sync={s}: appendonly={appendonly} appendfsync={appendfsync} (writes may be lost on a crash)"
            ),
        },
    );
}

impl Redis {
    /// Apply `sync` with CONFIG SET (waiting for the AOF rewrite it starts) and, on the first
    /// open of a job, delete the keys under the prefix. Untimed when called through
    /// `Engine::prepare`; a caller that skips it gets it on first use.
    fn setup(&self) -> Result<()> {
        self.job.apply_once(&self.admin, |c, settings| {
            let s = &self.job.how;
            if s.configure {
                let t0 = Instant::now();
                admin::configure(c, "redis", s.sync, &s.policy)?;
                settings.insert(
                    "prepare".into(),
                    format!("CONFIG SET and AOF rewrite wait: {:.3} s", t0.elapsed().as_secs_f64()),
                );
            }
            if !self.job.marker.exists() {
                let n = admin::clear_prefix(c, "redis", &self.prefix)?;
                settings.insert("cleared".into(), format!("{n} earlier keys under the prefix"));
                std::fs::write(&self.job.marker, &self.prefix)?;
            }
            read_durability(c, s.sync, settings);
            Ok(())
        })
    }
}

impl Redis {
    /// A connection of the timed paths.
    fn conn(&self) -> Result<resp::Conn> {
        resp::Conn::connect(&self.info, IO_TIMEOUT)
    }

    fn new_writer(&self) -> Result<RedisWriter> {
        self.setup()?;
        let depth = if self.pipeline == 0 { usize::MAX } else { self.pipeline };
        Ok(RedisWriter {
            conn: self.conn()?,
            index: self.hash.then(|| hash::index_key(&self.prefix)),
            prefix: self.prefix.clone(),
            depth,
            atomic: self.atomic,
            cmd: Vec::new(),
            wire: self.wire.clone(),
        })
    }
}

/// How long a timed path waits on the server before it gives up.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

impl Engine for Redis {
    fn prepare(&mut self) -> Result<()> {
        self.job.reset();
        self.setup()
    }

    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut w = self.shared.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        if w.is_none() {
            *w = Some(self.new_writer()?);
        }
        w.as_mut().map_or(Ok(()), |w| w.write(batch))
    }

    fn writer(&self) -> Result<Option<Box<dyn Writer + '_>>> {
        Ok(Some(Box::new(self.new_writer()?)))
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        self.setup()?;
        let conns = (0..self.connections).map(|_| self.conn()).collect::<Result<Vec<_>>>()?;
        Ok(Box::new(RedisReader {
            conns,
            prefix: &self.prefix,
            index: self.hash.then(|| hash::index_key(&self.prefix)),
            cmd: Vec::with_capacity(256),
            scratch: hash::Scratch::default(),
            keys: Vec::new(),
            wire: &self.wire,
        }))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.job.settings()
    }

    fn writes_fields(&self) -> bool {
        self.hash
    }

    fn wire(&self) -> Option<Wire> {
        Some(self.wire.get())
    }
}

/// One thread's writes on its own connection: each window of `depth` commands goes out in one
/// write (inside MULTI/EXEC when atomic) and all its replies are read before the next.
struct RedisWriter {
    conn: resp::Conn,
    prefix: Vec<u8>,
    /// `record = "hash"`: the index sorted set's key.
    index: Option<Vec<u8>>,
    depth: usize,
    atomic: bool,
    cmd: Vec<u8>,
    wire: Arc<WireCount>,
}

impl RedisWriter {
    /// Appends the commands of one write; returns how many.
    fn push_write(&mut self, write: &WriteOp<'_>) -> Result<usize> {
        let Some(index) = &self.index else {
            self.push_blob(write);
            return Ok(1);
        };
        match write.value {
            Some(v) => hash::push_insert(&mut self.cmd, &self.prefix, index, write.key, v),
            None => Ok(hash::push_delete(&mut self.cmd, &self.prefix, index, write.key)),
        }
    }

    fn push_blob(&mut self, write: &WriteOp<'_>) {
        match write.value {
            Some(v) => {
                resp::push_header(&mut self.cmd, 3);
                resp::push_arg(&mut self.cmd, &[b"SET"]);
                resp::push_arg(&mut self.cmd, &[&self.prefix, write.key]);
                resp::push_arg(&mut self.cmd, &[v]);
            }
            None => {
                resp::push_header(&mut self.cmd, 2);
                resp::push_arg(&mut self.cmd, &[b"DEL"]);
                resp::push_arg(&mut self.cmd, &[&self.prefix, write.key]);
            }
        }
    }

    /// Sends what `cmd` holds, `commands` commands, and reads their replies.
    fn round_trip(&mut self, commands: usize) -> Result<()> {
        self.conn.send(&self.cmd)?;
        self.wire.sent(commands);
        self.conn.expect_ok(commands)
    }
}

impl Writer for RedisWriter {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        for window in batch.chunks(self.depth) {
            self.cmd.clear();
            let mut n = 0;
            if self.atomic {
                resp::push_command(&mut self.cmd, &[b"MULTI"]);
                n += 2;
            }
            for w in window {
                n += self.push_write(w)?;
            }
            if self.atomic {
                resp::push_command(&mut self.cmd, &[b"EXEC"]);
            }
            self.round_trip(n)?;
        }
        Ok(())
    }

    fn write_field(&mut self, key: &[u8], name: &[u8], value: &[u8]) -> Result<()> {
        if self.index.is_none() {
            return Err(EngineError::Unsupported("writes of one field (record = \"blob\")".into()));
        }
        self.cmd.clear();
        hash::push_field_update(&mut self.cmd, &self.prefix, key, name, value);
        self.round_trip(1)
    }
}

struct RedisReader<'a> {
    /// The reader's connections (option `connections`; pipelined gets use them all).
    conns: Vec<resp::Conn>,
    prefix: &'a [u8],
    /// `record = "hash"`: the index sorted set's key.
    index: Option<Vec<u8>>,
    /// The request, encoded here in RESP (reused: no allocation per request).
    cmd: Vec<u8>,
    /// Hash records are rebuilt here, and a scan's keys kept (reused).
    scratch: hash::Scratch,
    keys: Vec<Vec<u8>>,
    wire: &'a WireCount,
}

/// Append `GET prefix+key` in RESP to `buf`.
fn push_get(buf: &mut Vec<u8>, prefix: &[u8], key: &[u8]) {
    buf.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
    resp::push_arg(buf, &[prefix, key]);
}

impl RedisReader<'_> {
    fn conn(&mut self, index: usize) -> Result<&mut resp::Conn> {
        self.conns.get_mut(index).ok_or_else(|| EngineError::Store(format!("redis: no connection {index}")))
    }

    /// Sends what `cmd` holds, `commands` commands, on the first connection.
    fn send(&mut self, commands: usize) -> Result<()> {
        self.conns[0].send(&self.cmd)?;
        self.wire.sent(commands);
        Ok(())
    }

    /// A hash record of each key, in one write; `visit` gets each as it is read.
    fn read_records(
        &mut self,
        keys: &[&[u8]],
        prefixed: bool,
        visit: &mut dyn FnMut(usize, Option<&[u8]>) -> bool,
    ) -> Result<usize> {
        self.cmd.clear();
        for k in keys {
            hash::push_read(&mut self.cmd, if prefixed { b"" } else { self.prefix }, k);
        }
        self.send(keys.len())?;
        let mut v = Vec::new();
        let (mut seen, mut more, mut first_err) = (0, true, None);
        // Every reply is read, also after the visitor stops or a reply is bad.
        for i in 0..keys.len() {
            match hash::read_record(&mut self.conns[0], &mut v, &mut self.scratch) {
                Ok(found) if more => {
                    seen += 1;
                    more = visit(i, found.then_some(&v[..]));
                }
                Ok(_) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(seen), Err)
    }
}

impl Reader for RedisReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.cmd.clear();
        if self.index.is_some() {
            hash::push_read(&mut self.cmd, self.prefix, key);
            self.send(1)?;
            return hash::read_record(&mut self.conns[0], out, &mut self.scratch);
        }
        push_get(&mut self.cmd, self.prefix, key);
        self.send(1)?;
        self.conns[0].value(out)
    }

    fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Every GET of the pipeline leaves in one write.
    fn send_gets(&mut self, conn: usize, keys: &[&[u8]]) -> Result<()> {
        if self.index.is_some() {
            return Err(EngineError::Unsupported("pipelined gets of hash records (record = \"blob\" has them)".into()));
        }
        self.cmd.clear();
        for k in keys {
            push_get(&mut self.cmd, self.prefix, k);
        }
        let cmd = std::mem::take(&mut self.cmd);
        let r = self.conn(conn).and_then(|c| c.send(&cmd));
        self.cmd = cmd;
        r?;
        self.wire.sent(keys.len());
        Ok(())
    }

    fn recv_gets(&mut self, conn: usize, max: usize, out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        super::recv_gets(self.conn(conn)?, max, out)
    }

    /// MGET of blobs; HGETALL of each hash record, all in one write.
    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        if self.index.is_some() {
            self.read_records(keys, false, &mut |_, v| {
                out.push(v.map(<[u8]>::to_vec));
                true
            })?;
            return Ok(());
        }
        self.cmd.clear();
        resp::push_header(&mut self.cmd, keys.len() + 1);
        resp::push_arg(&mut self.cmd, &[b"MGET"]);
        for k in keys {
            resp::push_arg(&mut self.cmd, &[self.prefix, k]);
        }
        self.send(1)?;
        let c = &mut self.conns[0];
        let n = match c.reply()? {
            resp::Reply::Array(n) => n,
            other => return Err(resp::unexpected(&other)),
        };
        let mut v = Vec::new();
        for _ in 0..n {
            out.push(c.value(&mut v)?.then(|| v.clone()));
        }
        Ok(())
    }

    /// Hash records only: the index's range from `start`, then HGETALL of each key in one
    /// write (YCSB's binding reads them one by one).
    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let Some(index) = &self.index else {
            return Err(EngineError::Unsupported(
                "ordered scan of blob records (record = \"hash\" has an index)".into(),
            ));
        };
        self.cmd.clear();
        hash::push_range(&mut self.cmd, self.prefix, index, start, limit);
        self.send(1)?;
        let mut keys = std::mem::take(&mut self.keys);
        let r = self.range_keys(&mut keys).and_then(|()| {
            if keys.is_empty() {
                return Ok(0);
            }
            let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            let n = self.prefix.len();
            let mut visited = 0;
            self.read_records(&refs, true, &mut |i, v| match v {
                Some(v) => {
                    visited += 1;
                    visit(&refs[i][n..], v)
                }
                // Deleted between the range and its read: as if the range had not held it.
                None => true,
            })?;
            Ok(visited)
        });
        self.keys = keys;
        r
    }
}

impl RedisReader<'_> {
    /// The keys of a ZRANGEBYLEX reply into `keys` (their buffers reused).
    fn range_keys(&mut self, keys: &mut Vec<Vec<u8>>) -> Result<()> {
        let c = &mut self.conns[0];
        let n = match c.reply()? {
            resp::Reply::Array(n) => n,
            other => return Err(resp::unexpected(&other)),
        };
        keys.resize_with(n, Vec::new);
        let mut bad = None;
        for k in keys.iter_mut() {
            k.clear();
            match c.reply()? {
                resp::Reply::Bulk(b) => k.extend_from_slice(b),
                other => {
                    bad.get_or_insert_with(|| resp::unexpected(&other));
                }
            }
        }
        bad.map_or(Ok(()), Err)
    }
}
