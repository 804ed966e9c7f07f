//! `redis`: a Redis server over loopback; timed requests on kvbench's RESP connection
//! (`resp.rs`), set-up through the `redis` crate. Each thread has its own connections: one for
//! reads (or `connections` of them) and one for writes. GET per key, MGET for multi-get; a write
//! batch goes out as one pipeline (or windows of `pipeline` commands), optionally inside
//! MULTI/EXEC; a pipelined get phase keeps `pipeline` GETs in flight on each connection. No
//! ordered scan (Redis keys are unordered).
//!
//! Durability (`sync`) is applied with CONFIG SET in the untimed `prepare` step (or on first use
//! when a caller skips it), because one server serves every variant of a run: `none` → no AOF, no RDB snapshots; `commit`/`always` → AOF with
//! `appendfsync always` (Redis fsyncs before it answers, so a batch is durable when the call
//! returns). `appendfsync = everysec` is an option and is reported as weaker than asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ::redis::Connection;
use kvbench_model::engine::*;

use super::process::{self, Found, ServerProcess, SocketProgram, SocketServer};
use super::redisadmin as admin;
use super::resp;

pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    name: "redis",
    description: "Redis server over loopback (redis crate, sync API): GET, MGET, pipelined SET/DEL",
    capabilities: super::KEY_VALUE_SERVER,
    options: &[
        super::PREFIX,
        super::PIPELINE,
        super::CONNECTIONS,
        OptionSpec {
            name: "atomic",
            kind: OptionKind::Bool,
            default: "false",
            doc: "wrap each pipeline window in MULTI/EXEC",
        },
        super::APPENDFSYNC,
        OptionSpec {
            name: "configure",
            kind: OptionKind::Bool,
            default: "true",
            doc: "apply `sync` with CONFIG SET on open; false leaves a server given by --url as it is",
        },
        OptionSpec { name: "db", kind: OptionKind::Int, default: "0", doc: "database number (SELECT)" },
    ],
    version: || REDIS_SERVER.version("redis crate 0.27.6 (sync)"),
    available: || Ok(()),
    open,
    start_server: Some(start_server),
};

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
    proc.wait_ready(process::START_TIMEOUT, || {
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

fn err(e: ::redis::RedisError) -> EngineError {
    EngineError::Store(format!("redis: {e}"))
}

pub struct Redis {
    /// Where and how clients connect (address, password, database).
    info: ::redis::ConnectionInfo,
    prefix: Vec<u8>,
    pipeline: usize,
    connections: usize,
    atomic: bool,
    /// Set-up and administration (CONFIG, INFO, clearing the namespace), never timed.
    admin: Mutex<Connection>,
    /// The writer of callers without a thread of their own (`Engine::write`); the worker gives
    /// each thread its own ([`Engine::writer`]).
    shared: Mutex<Option<RedisWriter>>,
    settings: Mutex<BTreeMap<String, String>>,
    setup: Setup,
    /// Set once the job's server state is in place (by `prepare`, or on first use).
    prepared: AtomicBool,
}

/// What `prepare` applies: durability and the job's namespace.
struct Setup {
    sync: SyncMode,
    configure: bool,
    policy: String,
    /// Exists once this job cleared its namespace (a reopen keeps the data).
    marker: PathBuf,
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
    read_durability(&mut c, args.sync, &mut settings);
    let setup = Setup {
        sync: args.sync,
        configure: o.bool("configure"),
        policy,
        marker: process::job_marker(args.dir, "redis"),
    };
    let prepared = AtomicBool::new(setup.marker.exists());
    Ok(Box::new(Redis {
        info,
        prefix,
        pipeline,
        connections,
        atomic,
        admin: Mutex::new(c),
        shared: Mutex::new(None),
        settings: Mutex::new(settings),
        setup,
        prepared,
    }))
}

/// The durability in effect, read back from the server.
fn read_durability(c: &mut Connection, sync: SyncMode, settings: &mut BTreeMap<String, String>) {
    let appendonly = admin::config_get(c, "appendonly");
    let appendfsync = admin::config_get(c, "appendfsync");
    settings.insert("appendonly".into(), appendonly.clone());
    settings.insert("appendfsync".into(), appendfsync.clone());
    settings.insert("save".into(), format!("{:?}", admin::config_get(c, "save")));
    settings.insert("maxmemory".into(), admin::config_get(c, "maxmemory"));
    settings.insert("io-threads".into(), admin::config_get(c, "io-threads"));
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
        if self.prepared.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut c = self.admin.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let mut settings = self.settings.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let s = &self.setup;
        if s.configure {
            let t0 = Instant::now();
            admin::configure(&mut c, "redis", s.sync, &s.policy)?;
            settings.insert(
                "prepare".into(),
                format!("CONFIG SET and AOF rewrite wait: {:.3} s", t0.elapsed().as_secs_f64()),
            );
        }
        if !s.marker.exists() {
            let n = admin::clear_prefix(&mut c, "redis", &self.prefix)?;
            settings.insert("cleared".into(), format!("{n} earlier keys under the prefix"));
            std::fs::write(&s.marker, &self.prefix)?;
        }
        read_durability(&mut c, s.sync, &mut settings);
        self.prepared.store(true, Ordering::Release);
        Ok(())
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
        Ok(RedisWriter { conn: self.conn()?, prefix: self.prefix.clone(), depth, atomic: self.atomic, cmd: Vec::new() })
    }
}

/// How long a timed path waits on the server before it gives up.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

impl Engine for Redis {
    fn prepare(&mut self) -> Result<()> {
        self.prepared.store(false, Ordering::Release);
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
        Ok(Box::new(RedisReader { conns, prefix: &self.prefix, cmd: Vec::with_capacity(256) }))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// One thread's writes on its own connection: each window of `depth` commands goes out in one
/// write (inside MULTI/EXEC when atomic) and all its replies are read before the next.
struct RedisWriter {
    conn: resp::Conn,
    prefix: Vec<u8>,
    depth: usize,
    atomic: bool,
    cmd: Vec<u8>,
}

impl Writer for RedisWriter {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        for window in batch.chunks(self.depth) {
            self.cmd.clear();
            if self.atomic {
                resp::push_command(&mut self.cmd, &[b"MULTI"]);
            }
            for w in window {
                match w.value {
                    Some(v) => {
                        resp::push_header(&mut self.cmd, 3);
                        resp::push_arg(&mut self.cmd, &[b"SET"]);
                        resp::push_arg(&mut self.cmd, &[&self.prefix, w.key]);
                        resp::push_arg(&mut self.cmd, &[v]);
                    }
                    None => {
                        resp::push_header(&mut self.cmd, 2);
                        resp::push_arg(&mut self.cmd, &[b"DEL"]);
                        resp::push_arg(&mut self.cmd, &[&self.prefix, w.key]);
                    }
                }
            }
            if self.atomic {
                resp::push_command(&mut self.cmd, &[b"EXEC"]);
            }
            self.conn.send(&self.cmd)?;
            self.conn.expect_ok(window.len() + if self.atomic { 2 } else { 0 })?;
        }
        Ok(())
    }
}

struct RedisReader<'a> {
    /// The reader's connections (option `connections`; pipelined gets use them all).
    conns: Vec<resp::Conn>,
    prefix: &'a [u8],
    /// The request, encoded here in RESP (reused: no allocation per request).
    cmd: Vec<u8>,
}

/// Append `GET prefix+key` in RESP to `buf`.
fn push_get(buf: &mut Vec<u8>, prefix: &[u8], key: &[u8]) {
    buf.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
    resp::push_arg(buf, &[prefix, key]);
}

impl RedisReader<'_> {
    fn conn(&mut self, i: usize) -> Result<&mut resp::Conn> {
        self.conns.get_mut(i).ok_or_else(|| EngineError::Store(format!("redis: no connection {i}")))
    }
}

impl Reader for RedisReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.cmd.clear();
        push_get(&mut self.cmd, self.prefix, key);
        let c = &mut self.conns[0];
        c.send(&self.cmd)?;
        c.value(out)
    }

    fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Every GET of the pipeline leaves in one write.
    fn send_gets(&mut self, conn: usize, keys: &[&[u8]]) -> Result<()> {
        self.cmd.clear();
        for k in keys {
            push_get(&mut self.cmd, self.prefix, k);
        }
        let cmd = std::mem::take(&mut self.cmd);
        let r = self.conn(conn).and_then(|c| c.send(&cmd));
        self.cmd = cmd;
        r
    }

    fn recv_gets(&mut self, conn: usize, max: usize, out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        super::recv_gets(self.conn(conn)?, max, out)
    }

    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        self.cmd.clear();
        resp::push_header(&mut self.cmd, keys.len() + 1);
        resp::push_arg(&mut self.cmd, &[b"MGET"]);
        for k in keys {
            resp::push_arg(&mut self.cmd, &[self.prefix, k]);
        }
        let c = &mut self.conns[0];
        c.send(&self.cmd)?;
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
}
