//! `http-<engine>`: an embedded engine served over HTTP/1.1 by `kvbench serve`, the way
//! RocksServer serves RocksDB, and measured from a client over loopback TCP.
//!
//! kvbench starts one server process per run (`kvbench serve --engine rocksdb ...` on a free
//! loopback port, in the run's private server directory). Each job then asks that process to
//! open the served engine in the job's own directory (`POST /open` with the job's options, sync
//! and open mode), so the served database's files live in the job directory: space on disk is
//! measured as for the native engine, and a cold-cache phase (close, evict the job directory's
//! files, reopen) makes the server close and reopen the engine, which also drops its block
//! cache. `POST /close` closes it (RocksDB then syncs its WAL as the native engine does).
//!
//! The wire format (documented in docs/servers.md) is binary and length-prefixed: `u32` big-endian
//! lengths. The client here is a minimal keep-alive HTTP/1.1 client over a `TcpStream` with
//! `TCP_NODELAY`: one connection per [`Reader`] (one per thread) and one for writes. A
//! multi-get is one `POST /kv/mget`; a write batch is one `POST /kv/write` (one atomic batch on
//! the server); a scan is one `GET /kv/scan`. Every request carries the server's bearer token.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kvbench_model::engine::*;

use crate::servers::lifecycle::{self, ServerProcess};

// ---------------------------------------------------------------------------------------------
// Wire format, shared with the server in `kvbench serve`.

/// Append a `u32` big-endian length.
pub fn put_len(buf: &mut Vec<u8>, len: usize) {
    buf.extend_from_slice(&(len as u32).to_be_bytes());
}

/// Append a length-prefixed byte string.
pub fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_len(buf, bytes.len());
    buf.extend_from_slice(bytes);
}

/// Reads length-prefixed fields from a body; every error says what was truncated.
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    pub fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn byte(&mut self) -> std::result::Result<u8, String> {
        let b = *self.data.get(self.pos).ok_or("truncated body: a flag byte is missing")?;
        self.pos += 1;
        Ok(b)
    }

    pub fn length(&mut self) -> std::result::Result<usize, String> {
        let s = self.data.get(self.pos..self.pos + 4).ok_or("truncated body: a length is missing")?;
        self.pos += 4;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)
    }

    pub fn bytes(&mut self) -> std::result::Result<&'a [u8], String> {
        let n = self.length()?;
        let s = self.data.get(self.pos..self.pos + n).ok_or("truncated body: bytes missing after a length")?;
        self.pos += n;
        Ok(s)
    }
}

pub fn hex(bytes: &[u8]) -> String {
    let mut s = Vec::with_capacity(bytes.len() * 2);
    crate::push_hex(&mut s, bytes);
    String::from_utf8(s).expect("hex digits are ASCII")
}

pub fn unhex(hex: &str) -> std::result::Result<Vec<u8>, String> {
    let hex = hex.trim().as_bytes();
    if hex.len() & 1 == 1 {
        return Err("hex of odd length".into());
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(format!("`{}` is not a hex digit", c as char)),
    };
    hex.chunks(2).map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// What a client asks with `POST /open` (JSON body).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct OpenRequest {
    pub dir: PathBuf,
    pub options: BTreeMap<String, serde_json::Value>,
    pub sync: SyncMode,
    pub mode: OpenMode,
    pub expected_records: u64,
    pub expected_bytes: u64,
}

// ---------------------------------------------------------------------------------------------
// Client

/// One keep-alive HTTP/1.1 connection, with the bearer token it sends.
struct Conn {
    host: String,
    port: u16,
    auth: String,
    stream: BufReader<TcpStream>,
    req: Vec<u8>,
    last_used: Instant,
}

/// A connection idle this long is replaced before the next request: the server closes
/// connections that send nothing for its read timeout (10 s by default), and a request written
/// into a connection the server is closing would fail.
const IDLE_RECONNECT: Duration = Duration::from_secs(2);

fn io(error: std::io::Error) -> EngineError {
    EngineError::Store(format!("http: {error}"))
}

impl Conn {
    fn connect(host: &str, port: u16, token: Option<&str>) -> Result<Conn> {
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        Ok(Conn {
            host: host.to_string(),
            port,
            auth,
            stream: BufReader::with_capacity(1 << 16, Self::stream(host, port)?),
            req: Vec::new(),
            last_used: Instant::now(),
        })
    }

    fn stream(host: &str, port: u16) -> Result<TcpStream> {
        let s = TcpStream::connect((host, port))
            .map_err(|e| EngineError::Store(format!("http: cannot connect to {host}:{port}: {e}")))?;
        s.set_nodelay(true).map_err(io)?;
        s.set_read_timeout(Some(Duration::from_secs(300))).map_err(io)?;
        Ok(s)
    }

    /// Send one request and read the whole response: (status, body). The request goes out in
    /// one write (head and body together).
    fn call(&mut self, method: &str, target: &str, body: &[u8], out: &mut Vec<u8>) -> Result<u16> {
        if self.last_used.elapsed() > IDLE_RECONNECT {
            self.stream = BufReader::with_capacity(1 << 16, Self::stream(&self.host, self.port)?);
        }
        self.req.clear();
        write!(
            self.req,
            "{method} {target} HTTP/1.1\r\nHost: {}:{}\r\n{}Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            self.host,
            self.port,
            self.auth,
            body.len()
        )
        .map_err(io)?;
        self.req.extend_from_slice(body);
        self.stream.get_mut().write_all(&self.req).map_err(io)?;
        let status = self.read_response(out);
        self.last_used = Instant::now();
        status
    }

    fn read_response(&mut self, out: &mut Vec<u8>) -> Result<u16> {
        let mut line = String::new();
        self.stream.read_line(&mut line).map_err(io)?;
        if line.is_empty() {
            return Err(EngineError::store("http: the server closed the connection"));
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| EngineError::Store(format!("http: bad status line {line:?}")))?;
        let mut length = None;
        loop {
            line.clear();
            self.stream.read_line(&mut line).map_err(io)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((name, value)) = l.split_once(':') {
                let name = name.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                } else if name.eq_ignore_ascii_case("transfer-encoding")
                    && !value.trim().eq_ignore_ascii_case("identity")
                {
                    return Err(EngineError::Store(format!("http: unsupported transfer-encoding {}", value.trim())));
                }
            }
        }
        let n = length.ok_or_else(|| EngineError::store("http: response without Content-Length"))?;
        out.clear();
        out.resize(n, 0);
        self.stream.read_exact(out).map_err(io)?;
        Ok(status)
    }
}

fn expect_ok(what: &str, status: u16, body: &[u8]) -> Result<()> {
    if status == 200 {
        return Ok(());
    }
    Err(EngineError::Store(format!("http {what}: status {status}: {}", String::from_utf8_lossy(body))))
}

pub struct Http {
    host: String,
    port: u16,
    token: Option<String>,
    writer: Mutex<Conn>,
    settings: BTreeMap<String, String>,
}

fn open(args: &OpenArgs<'_>, served: &str) -> Result<Box<dyn Engine>> {
    let url = args.url.ok_or_else(|| {
        EngineError::Option(format!("http-{served} needs a server: kvbench starts one, or give --url http://HOST:PORT"))
    })?;
    let (host, port) = lifecycle::host_port(url, "http", 80).map_err(EngineError::Option)?;
    let env_token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    let token = args.token.map(str::to_string).or(env_token);
    let mut c = Conn::connect(&host, port, token.as_deref())?;
    let dir = args.dir.canonicalize().map_err(|e| EngineError::Store(format!("{}: {e}", args.dir.display())))?;
    let req = OpenRequest {
        dir,
        options: args.options.effective(),
        sync: args.sync,
        mode: args.mode,
        expected_records: args.expected_records,
        expected_bytes: args.expected_bytes,
    };
    let body = serde_json::to_vec(&req).map_err(EngineError::store)?;
    let mut out = Vec::new();
    let status = c.call("POST", "/open", &body, &mut out)?;
    expect_ok("POST /open", status, &out)?;
    let served_settings: BTreeMap<String, String> = serde_json::from_slice(&out).map_err(EngineError::store)?;
    let mut settings: BTreeMap<String, String> =
        served_settings.into_iter().map(|(k, v)| (format!("served.{k}"), v)).collect();
    settings.insert("url".into(), url.to_string());
    settings.insert("auth".into(), if token.is_some() { "bearer token" } else { "none" }.into());
    settings.insert(
        "transport".into(),
        "HTTP/1.1 keep-alive over TCP (TCP_NODELAY), each thread its own connections for reads and writes".into(),
    );
    settings
        .insert("multi_get".into(), "one POST /kv/mget per request (the server calls the engine's multi_get)".into());
    settings.insert("write_batch".into(), "one POST /kv/write per batch (one engine write batch on the server)".into());
    settings.insert("served_dir".into(), "the job directory (the server opens the engine there)".into());
    Ok(Box::new(Http { host, port, token, writer: Mutex::new(c), settings }))
}

/// One POST /kv/write for `batch` on `conn` (`body` and `out` are reused buffers).
fn post_write(conn: &mut Conn, body: &mut Vec<u8>, out: &mut Vec<u8>, batch: &[WriteOp<'_>]) -> Result<()> {
    body.clear();
    for w in batch {
        match w.value {
            Some(v) => {
                body.push(1);
                put_bytes(body, w.key);
                put_bytes(body, v);
            }
            None => {
                body.push(0);
                put_bytes(body, w.key);
            }
        }
    }
    let status = conn.call("POST", "/kv/write", body, out)?;
    expect_ok("POST /kv/write", status, out)
}

/// One thread's writes on its own connection.
struct HttpWriter {
    conn: Conn,
    body: Vec<u8>,
    out: Vec<u8>,
}

impl Writer for HttpWriter {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        post_write(&mut self.conn, &mut self.body, &mut self.out, batch)
    }
}

impl Engine for Http {
    /// Callers without a thread of their own (the worker gives each thread a writer) share
    /// the engine's connection.
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut c = self.writer.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        post_write(&mut c, &mut Vec::new(), &mut Vec::new(), batch)
    }

    fn writer(&self) -> Result<Option<Box<dyn Writer + '_>>> {
        let conn = Conn::connect(&self.host, self.port, self.token.as_deref())?;
        Ok(Some(Box::new(HttpWriter { conn, body: Vec::new(), out: Vec::new() })))
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let conn = Conn::connect(&self.host, self.port, self.token.as_deref())?;
        Ok(Box::new(HttpReader { conn, body: Vec::new(), resp: Vec::new(), target: String::new() }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        let mut c = self.writer.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let mut out = Vec::new();
        let status = c.call("POST", "/close", b"", &mut out)?;
        expect_ok("POST /close", status, &out)
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    /// The served store's own settle step (`POST /settle` of `kvbench serve`); a server
    /// without one (another program, or a store with nothing to settle) makes the phase N/A.
    fn settle(&mut self) -> Result<String> {
        let mut c = self.writer.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let mut out = Vec::new();
        let status = c.call("POST", "/settle", b"", &mut out)?;
        let body = String::from_utf8_lossy(&out).into_owned();
        match status {
            200 => Ok(format!("the server {body}")),
            404 | 405 | 501 => Err(EngineError::Unsupported(format!("the server has no settle step: {body}"))),
            _ => Err(EngineError::Store(format!("http POST /settle: status {status}: {body}"))),
        }
    }
}

struct HttpReader {
    conn: Conn,
    body: Vec<u8>,
    resp: Vec<u8>,
    target: String,
}

impl Reader for HttpReader {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.target.clear();
        self.target.push_str("/kv/get?key=");
        self.target.push_str(&hex(key));
        let status = self.conn.call("GET", &self.target, b"", out)?;
        match status {
            200 => Ok(true),
            404 => {
                out.clear();
                Ok(false)
            }
            s => Err(EngineError::Store(format!("http GET /kv/get: status {s}: {}", String::from_utf8_lossy(out)))),
        }
    }

    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        out.clear();
        self.body.clear();
        for k in keys {
            put_bytes(&mut self.body, k);
        }
        let status = self.conn.call("POST", "/kv/mget", &self.body, &mut self.resp)?;
        expect_ok("POST /kv/mget", status, &self.resp)?;
        let mut c = Cursor::new(&self.resp);
        for _ in keys {
            let found = c.byte().map_err(EngineError::Store)?;
            let v = c.bytes().map_err(EngineError::Store)?;
            out.push((found == 1).then(|| v.to_vec()));
        }
        if !c.done() {
            return Err(EngineError::store("http /kv/mget: more values than keys"));
        }
        Ok(())
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        if limit == 0 {
            return Ok(0);
        }
        // A full scan is fetched in pages so one response stays bounded.
        const PAGE: usize = 10_000;
        let mut from: Option<Vec<u8>> = start.map(|s| s.to_vec());
        let mut skip_first = false;
        let mut n = 0;
        loop {
            let want = (limit - n).min(PAGE) + usize::from(skip_first);
            self.target.clear();
            self.target.push_str("/kv/scan?limit=");
            self.target.push_str(&want.to_string());
            if let Some(f) = &from {
                self.target.push_str("&start=");
                self.target.push_str(&hex(f));
            }
            let status = self.conn.call("GET", &self.target, b"", &mut self.resp)?;
            expect_ok("GET /kv/scan", status, &self.resp)?;
            let mut c = Cursor::new(&self.resp);
            let mut got = 0;
            let mut last: Option<&[u8]> = None;
            while !c.done() {
                let k = c.bytes().map_err(EngineError::Store)?;
                let v = c.bytes().map_err(EngineError::Store)?;
                got += 1;
                last = Some(k);
                if skip_first && got == 1 {
                    continue;
                }
                n += 1;
                if !visit(k, v) || n >= limit {
                    return Ok(n);
                }
            }
            if got < want {
                return Ok(n);
            }
            // Continue from the last key seen (returned again first, then skipped).
            from = last.map(|k| k.to_vec());
            skip_first = true;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Server

/// The kvbench binary that serves: `$KVBENCH_BIN`, else this process when it is kvbench, else
/// `target/{release,debug}/kvbench` of this workspace.
pub fn kvbench_binary() -> std::result::Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("KVBENCH_BIN") {
        return Ok(PathBuf::from(p));
    }
    if let Ok(exe) = std::env::current_exe() {
        if exe.file_name().is_some_and(|n| n == "kvbench") {
            return Ok(exe);
        }
    }
    // The most recently built profile: an older build of the other one may lack newer flags.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let built = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest = ["release", "debug"].map(|profile| root.join(profile).join("kvbench")).into_iter().max_by_key(built);
    if let Some(p) = newest.filter(|p| p.is_file()) {
        return Ok(p);
    }
    Err("the kvbench binary that serves http-* engines was not found: set KVBENCH_BIN".into())
}

struct HttpServer {
    proc: ServerProcess,
    port: u16,
    engine: &'static str,
    token: String,
}

/// The environment variable that names the bearer token: `kvbench serve` reads it when no
/// `--token` is given, the http-* engines start the server with it when it is set (else with a
/// random one) and send it when kvbench hands them no token (a server given by `--url`).
pub const TOKEN_ENV: &str = "KVBENCH_SERVE_TOKEN";

/// 128 random bits from the kernel, as hex.
fn random_token() -> std::result::Result<String, String> {
    let mut b = [0u8; 16];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot read /dev/urandom for a token: {e}"))?;
    Ok(hex(&b))
}

/// Write the token where only this user can read it (never on a command line, which every
/// local user can read in /proc).
fn write_token(path: &Path, token: &str) -> std::result::Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(f, "{token}").map_err(|e| format!("{}: {e}", path.display()))
}

/// Start `kvbench serve --engine <served>` on a free loopback port, with a bearer token, and no
/// database open: each job opens its own with `POST /open`. The served root is the parent of
/// the private server directory `dir`: the run's private directory, where its job directories are.
fn start(dir: &Path, served: &'static str) -> std::result::Result<Box<dyn RunningServer>, String> {
    let binary = kvbench_binary()?;
    let dir = &lifecycle::private_dir(dir)?;
    let log = dir.join("serve.log");
    let root = dir.parent().unwrap_or(dir);
    let token = match std::env::var(TOKEN_ENV) {
        Ok(t) if !t.is_empty() => t,
        _ => random_token()?,
    };
    let token_file = dir.join("serve.token");
    write_token(&token_file, &token)?;
    lifecycle::with_free_port(|port| {
        let args: Vec<String> = vec![
            "serve".into(),
            "--engine".into(),
            served.into(),
            "--dir".into(),
            root.to_string_lossy().into_owned(),
            "--no-open".into(),
            "--token-file".into(),
            token_file.to_string_lossy().into_owned(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
        ];
        let mut proc = ServerProcess::spawn(&format!("kvbench serve {served}"), &binary, &args, &log, None)?;
        proc.set_grace(Duration::from_secs(10));
        proc.wait_ready(lifecycle::START_TIMEOUT, || {
            let mut c = Conn::connect("127.0.0.1", port, Some(&token)).map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            match c.call("GET", "/health", b"", &mut out).map_err(|e| e.to_string())? {
                200 => Ok(()),
                s => Err(format!("/health answered {s}")),
            }
        })?;
        Ok(HttpServer { proc, port, engine: served, token: token.clone() })
    })
    .map(|s| Box::new(s) as Box<dyn RunningServer>)
}

impl RunningServer for HttpServer {
    fn process_groups(&self) -> Vec<i32> {
        vec![self.proc.pid()]
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn info(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("server".into(), format!("kvbench serve --engine {}", self.engine));
        m.insert("http".into(), SERVER_STACK.into());
        m.insert("auth".into(), "bearer token (random unless $KVBENCH_SERVE_TOKEN is set)".into());
        m.insert("command".into(), self.proc.command().to_string());
        m.insert("log".into(), self.proc.log().display().to_string());
        m.insert("pid".into(), self.proc.pid().to_string());
        m
    }

    fn token(&self) -> Option<String> {
        Some(self.token.clone())
    }

    fn stop(mut self: Box<Self>) -> std::result::Result<(), String> {
        self.proc.stop()
    }
}

/// What `kvbench serve` is built on (the versions pinned in the workspace's Cargo.toml).
pub const SERVER_STACK: &str = "hyper 1.5.2 on tokio 1.42.1, one event loop per thread";

/// The descriptor of an engine served by `kvbench serve --engine ENGINE` (a module of this
/// crate): its options, its capabilities with a real multi-get (one request) whatever the engine
/// does inside, and its version beside the server's.
macro_rules! served {
    ($name:literal, $description:literal, $engine:ident) => {
        EngineDescriptor {
            name: $name,
            description: $description,
            capabilities: Capabilities { multi_get: true, ..crate::$engine::DESCRIPTOR.capabilities },
            options: crate::$engine::DESCRIPTOR.options,
            version: || format!("{}; server: kvbench serve ({SERVER_STACK})", (crate::$engine::DESCRIPTOR.version)()),
            available: || kvbench_binary().map(|_| ()),
            open: |a| open(a, stringify!($engine)),
            start_server: Some(|d| start(d, stringify!($engine))),
        }
    };
}

#[cfg(kvb_rocksdb)]
pub mod rocksdb {
    use super::*;

    pub static DESCRIPTOR: EngineDescriptor = served!(
        "http-rocksdb",
        "RocksDB served over HTTP/1.1 by `kvbench serve` (RocksServer-style); MultiGet as one POST",
        rocksdb
    );
}

#[cfg(kvb_lmdb)]
pub mod lmdb {
    use super::*;

    pub static DESCRIPTOR: EngineDescriptor = served!(
        "http-lmdb",
        "LMDB served over HTTP/1.1 by `kvbench serve`; multi-get as one POST (gets in one read txn)",
        lmdb
    );
}
