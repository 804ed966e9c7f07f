//! `memcached`: the memcached server, spoken to with a small text-protocol client written here
//! (the `memcache` crate took ~230 µs per set on this machine against ~75 µs for pymemcache;
//! see docs/servers.md). The server kvbench starts listens only on a Unix socket in its private
//! directory (`memcached+unix:///PATH`); a server given by URL is reached over TCP
//! (`memcached://HOST:PORT`, TCP_NODELAY). Each thread has its own connections (one for writes, one or `connections` for reads), buffered reads,
//! each request written with one system call. Sets wait for `STORED` (no
//! `noreply`), so a set is timed until the server has answered.
//!
//! Keys: memcached keys are at most 250 bytes of non-space, non-control characters. Every key
//! gets the `prefix` option in front (kvbench's namespace on a shared server); a key that is not
//! memcached-safe (or starts with `#`) is sent as `#` + hex of its bytes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kvbench_model::engine::*;

use super::lifecycle::{self, Found, ServerProcess, SocketProgram, SocketServer};
use super::WireCount;

/// Memory given to a server kvbench starts (`-m`, MiB). memcached takes pages as items arrive,
/// so an idle limit costs nothing; a run loading more than this sees evictions as missing keys.
pub const SERVER_MEMORY_MB: u64 = 8192;
const MAX_KEY: usize = 250;
/// Keys per `get` line of a multi-get; longer requests are split and pipelined.
const KEYS_PER_LINE: usize = 4096;

pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    name: "memcached",
    description: "memcached server over loopback, kvbench's own text-protocol client (no noreply)",
    capabilities: Capabilities { persistent: false, ..super::KEY_VALUE_SERVER },
    options: &[
        super::PREFIX,
        OptionSpec::one_of(
            "keys",
            &["auto", "hex"],
            "auto",
            "auto: keys go as they are when memcached-safe, else as # + hex; hex: always hex",
        ),
        super::PIPELINE,
        super::CONNECTIONS,
        OptionSpec::int("timeout", "30", "socket read/write timeout in seconds"),
    ],
    version: || MEMCACHED.version(concat!("kvbench text protocol ", env!("CARGO_PKG_VERSION"))),
    available: || Ok(()),
    open,
    start_server: Some(start_server),
};

// ---------------------------------------------------------------------------------------------
// Server

static MEMCACHED: SocketProgram = SocketProgram {
    name: "memcached",
    candidates: &["memcached", "/usr/bin/memcached"],
    version_flag: "-V",
    missing: "memcached not found in PATH: apt-get install memcached, or give --url memcached://HOST:PORT",
    socket: "memcached.sock",
    // memcached refuses to run as root: as root, kvbench starts it as its system user.
    users: &["memcache", "nobody"],
};

fn start_server(dir: &Path) -> std::result::Result<Box<dyn RunningServer>, String> {
    let Found { binary, version, home, socket } = MEMCACHED.find(dir)?;
    // -s: a Unix socket only (memcached then opens no TCP or UDP port); -a: its mode.
    let mut args: Vec<String> = vec!["-s".into(), socket.to_string_lossy().into_owned(), "-a".into(), "0700".into()];
    args.extend(["-m".to_string(), SERVER_MEMORY_MB.to_string()]);
    let mut proc = ServerProcess::spawn("memcached", &binary, &args, &home.log, home.user)?;
    proc.wait_ready(lifecycle::START_TIMEOUT, || {
        let mut c = Conn::connect(&Addr::Unix(socket.clone()), Duration::from_secs(2)).map_err(|e| e.to_string())?;
        c.version().map(|_| ()).map_err(|e| e.to_string())
    })?;
    let url = format!("memcached+unix://{}", socket.display());
    let facts = [
        ("memory_mb", SERVER_MEMORY_MB.to_string()),
        ("access", "Unix socket in a directory private to the server (mode 0700); no TCP or UDP".into()),
    ];
    Ok(Box::new(SocketServer::new(proc, home, url, ["memcached".into(), version], &facts)))
}

// ---------------------------------------------------------------------------------------------
// Client

/// Where the server listens.
#[derive(Debug, Clone)]
enum Addr {
    Tcp(String, u16),
    Unix(PathBuf),
}

impl Addr {
    /// `memcached+unix:///PATH` or `memcached://HOST:PORT`.
    fn parse(url: &str) -> std::result::Result<Addr, String> {
        if let Some(path) = url.strip_prefix("memcached+unix://") {
            if !path.starts_with('/') {
                return Err(format!("url `{url}`: memcached+unix:// takes an absolute socket path"));
            }
            return Ok(Addr::Unix(PathBuf::from(path)));
        }
        let (host, port) = lifecycle::host_port(url, "memcached", 11211)?;
        Ok(Addr::Tcp(host, port))
    }
}

impl std::fmt::Display for Addr {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Tcp(h, p) => write!(formatter, "{h}:{p}"),
            Addr::Unix(p) => write!(formatter, "{}", p.display()),
        }
    }
}

/// A TCP or Unix stream.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One connection speaking the text protocol.
struct Conn {
    out: Stream,
    inp: BufReader<Stream>,
    wbuf: Vec<u8>,
    line: Vec<u8>,
}

fn proto(what: &str, line: &[u8]) -> EngineError {
    EngineError::Store(format!("memcached {what}: unexpected reply `{}`", String::from_utf8_lossy(line).trim_end()))
}

impl Conn {
    fn connect(addr: &Addr, timeout: Duration) -> std::io::Result<Conn> {
        let s = match addr {
            Addr::Tcp(host, port) => {
                let s = TcpStream::connect((host.as_str(), *port))?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                Stream::Tcp(s)
            }
            Addr::Unix(path) => {
                let s = UnixStream::connect(path)?;
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                Stream::Unix(s)
            }
        };
        let inp = BufReader::with_capacity(64 * 1024, s.try_clone()?);
        Ok(Conn { out: s, inp, wbuf: Vec::with_capacity(4096), line: Vec::with_capacity(256) })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.out.write_all(&self.wbuf);
        self.wbuf.clear();
        r
    }

    /// Read one reply line (with its CRLF) into `self.line`.
    fn read_line(&mut self) -> Result<()> {
        self.line.clear();
        let n = self.inp.read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Err(EngineError::Store("memcached closed the connection".into()));
        }
        Ok(())
    }

    fn version(&mut self) -> Result<String> {
        self.wbuf.extend_from_slice(b"version\r\n");
        self.flush()?;
        self.read_line()?;
        match self.line.strip_prefix(b"VERSION ") {
            Some(v) => Ok(String::from_utf8_lossy(v).trim().to_string()),
            None => Err(proto("version", &self.line)),
        }
    }

    /// Send `command` and hand each line of its reply to `each`, up to `END`; an error line fails.
    fn lines_until_end(&mut self, command: &str, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.wbuf.extend_from_slice(command.as_bytes());
        self.wbuf.extend_from_slice(b"\r\n");
        self.flush()?;
        loop {
            self.read_line()?;
            if self.line.starts_with(b"END") {
                return Ok(());
            }
            self.check_error_line(command)?;
            each(&self.line)?;
        }
    }

    /// `stats` or `stats settings` as a map.
    fn stats(&mut self, which: &str) -> Result<BTreeMap<String, String>> {
        let mut m = BTreeMap::new();
        self.lines_until_end(format!("stats {which}").trim_end(), |line| {
            let l = String::from_utf8_lossy(line);
            let mut it = l.trim_end().splitn(3, ' ');
            match (it.next(), it.next(), it.next()) {
                (Some("STAT"), Some(k), Some(v)) => m.insert(k.to_string(), v.to_string()),
                _ => return Err(proto("stats", line)),
            };
            Ok(())
        })?;
        Ok(m)
    }

    fn push_set(&mut self, key: &[u8], value: &[u8]) {
        self.wbuf.extend_from_slice(b"set ");
        self.wbuf.extend_from_slice(key);
        self.wbuf.extend_from_slice(b" 0 0 ");
        super::push_decimal(&mut self.wbuf, value.len());
        self.wbuf.extend_from_slice(b"\r\n");
        self.wbuf.extend_from_slice(value);
        self.wbuf.extend_from_slice(b"\r\n");
    }

    fn push_delete(&mut self, key: &[u8]) {
        self.wbuf.extend_from_slice(b"delete ");
        self.wbuf.extend_from_slice(key);
        self.wbuf.extend_from_slice(b"\r\n");
    }

    fn read_store_reply(&mut self, delete: bool) -> Result<()> {
        self.read_line()?;
        let ok = if delete {
            self.line.starts_with(b"DELETED") || self.line.starts_with(b"NOT_FOUND")
        } else {
            self.line.starts_with(b"STORED")
        };
        if ok {
            Ok(())
        } else {
            Err(proto(if delete { "delete" } else { "set" }, &self.line))
        }
    }

    /// After a `VALUE <key> <flags> <bytes>` line: the key and the data length.
    fn value_header(&self) -> Result<(std::ops::Range<usize>, usize)> {
        let l = &self.line;
        let body = l.strip_prefix(b"VALUE ").ok_or_else(|| proto("get", l))?;
        let end = body.iter().position(|&b| b == b' ').ok_or_else(|| proto("get", l))?;
        let rest = &body[end + 1..];
        let mut parts = rest.split(|&b| b == b' ' || b == b'\r' || b == b'\n').filter(|p| !p.is_empty());
        let _flags = parts.next();
        let len = parts
            .next()
            .and_then(|p| std::str::from_utf8(p).ok())
            .and_then(|p| p.parse::<usize>().ok())
            .ok_or_else(|| proto("get", l))?;
        Ok((6..6 + end, len))
    }

    /// Read `len` bytes of data plus CRLF, appending the data to `out`.
    fn read_data(&mut self, len: usize, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        out.resize(start + len + 2, 0);
        self.inp.read_exact(&mut out[start..])?;
        if &out[start + len..] != b"\r\n" {
            return Err(EngineError::Store("memcached: value not followed by CRLF".into()));
        }
        out.truncate(start + len);
        Ok(())
    }

    /// The reply to one `get`: the value into `out` (cleared first); false when absent.
    fn read_get_reply(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        self.read_line()?;
        if self.line.starts_with(b"END") {
            return Ok(false);
        }
        self.check_error_line("get")?;
        let (_, len) = self.value_header()?;
        self.read_data(len, out)?;
        self.read_line()?;
        if !self.line.starts_with(b"END") {
            return Err(proto("get (expected END)", &self.line));
        }
        Ok(true)
    }

    fn check_error_line(&self, what: &str) -> Result<()> {
        if self.line.starts_with(b"SERVER_ERROR") || self.line.starts_with(b"CLIENT_ERROR") || self.line == b"ERROR\r\n"
        {
            return Err(proto(what, &self.line));
        }
        Ok(())
    }
}

impl super::GetReplies for Conn {
    /// An error reply is a wrong reply; a broken connection (I/O) ends the round.
    fn next_get(&mut self) -> Result<super::GetReply> {
        let mut v = Vec::new();
        match self.read_get_reply(&mut v) {
            Ok(true) => Ok(super::GetReply::Found(v)),
            Ok(false) => Ok(super::GetReply::Absent),
            Err(e @ EngineError::Io(_)) => Err(e),
            Err(e) => Ok(super::GetReply::Wrong(e)),
        }
    }

    /// The reply to a `get` has arrived whole.
    fn get_ready(&self) -> bool {
        let buf = self.inp.buffer();
        let Some(eol) = buf.iter().position(|&b| b == b'\n') else { return false };
        let line = &buf[..=eol];
        if !line.starts_with(b"VALUE ") {
            return true; // END, or an error line
        }
        let len = line.rsplit(|&b| b == b' ').next().and_then(|p| std::str::from_utf8(p).ok()?.trim().parse().ok());
        // Header, data + CRLF, then END CRLF.
        len.is_some_and(|len: usize| buf.len() >= eol + 1 + len + 2 + 5)
    }
}

/// How keys become memcached keys.
#[derive(Clone)]
struct KeyCodec {
    prefix: Vec<u8>,
    always_hex: bool,
}

fn safe_byte(byte: u8) -> bool {
    byte > b' ' && byte != 0x7f
}

impl KeyCodec {
    fn encode(&self, key: &[u8], out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        out.extend_from_slice(&self.prefix);
        let raw_ok = !self.always_hex
            && !key.is_empty()
            && key[0] != b'#'
            && key.iter().all(|&b| safe_byte(b))
            && self.prefix.len() + key.len() <= MAX_KEY;
        if raw_ok {
            out.extend_from_slice(key);
        } else {
            out.push(b'#');
            crate::push_hex(out, key);
        }
        if out.len() > MAX_KEY {
            return Err(EngineError::Store(format!(
                "key of {} bytes is too long for memcached once prefixed and hex-encoded ({} > {MAX_KEY} bytes)",
                key.len(),
                out.len()
            )));
        }
        Ok(())
    }
}

pub struct Engine {
    addr: Addr,
    timeout: Duration,
    codec: KeyCodec,
    pipeline: usize,
    connections: usize,
    /// The writer of callers without a thread of their own (`Engine::write`); the worker gives
    /// each thread its own ([`kvbench_model::engine::Engine::writer`]).
    shared: Mutex<McWriter>,
    settings: BTreeMap<String, String>,
    /// Requests the timed paths wrote, over every connection.
    wire: Arc<WireCount>,
}

/// One thread's writes on its own connection, in windows of `depth` requests written at once.
struct McWriter {
    conn: Conn,
    codec: KeyCodec,
    depth: usize,
    key: Vec<u8>,
    wire: Arc<WireCount>,
}

impl Writer for McWriter {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        let (conn, key) = (&mut self.conn, &mut self.key);
        for window in batch.chunks(self.depth) {
            for w in window {
                self.codec.encode(w.key, key)?;
                match w.value {
                    Some(v) => conn.push_set(key, v),
                    None => conn.push_delete(key),
                }
            }
            conn.flush()?;
            self.wire.sent(window.len());
            let mut first_err = None;
            for w in window {
                if let Err(e) = conn.read_store_reply(w.value.is_none()) {
                    first_err.get_or_insert(e);
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        Ok(())
    }
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn kvbench_model::engine::Engine>> {
    let url = args.url.ok_or_else(|| {
        EngineError::Option("memcached needs a server: kvbench starts one, or give --url memcached://HOST:PORT".into())
    })?;
    let addr = Addr::parse(url).map_err(EngineError::Option)?;
    let o = args.options;
    let prefix = o.text("prefix").unwrap_or_default();
    if prefix.bytes().any(|b| !safe_byte(b)) || prefix.len() > 64 {
        return Err(EngineError::Option(format!("memcached prefix `{prefix}` must be ≤ 64 bytes without spaces")));
    }
    let codec = KeyCodec { prefix: prefix.clone().into_bytes(), always_hex: o.text("keys").as_deref() == Some("hex") };
    let pipeline = o.int("pipeline").unwrap_or(0).max(0) as usize;
    let connections = o.int("connections").unwrap_or(1).clamp(1, 4096) as usize;
    let timeout = Duration::from_secs(o.int("timeout").unwrap_or(30).max(1) as u64);
    let mut conn = Conn::connect(&addr, timeout)
        .map_err(|e| EngineError::Store(format!("cannot connect to memcached at {addr}: {e}")))?;
    let version = conn.version()?;
    let stats = conn.stats("settings").unwrap_or_default();

    let mut settings = BTreeMap::new();
    settings.insert("server_version".into(), version);
    settings.insert("url".into(), url.to_string());
    settings.insert("access".into(), access(&addr));
    let maxbytes: u64 = stats.get("maxbytes").and_then(|v| v.parse().ok()).unwrap_or(0);
    settings.insert("memory_mb".into(), (maxbytes >> 20).to_string());
    if let Some(t) = stats.get("num_threads") {
        settings.insert("server_threads".into(), t.clone());
    }
    if let Some(t) = stats.get("item_size_max") {
        settings.insert("item_size_max".into(), t.clone());
    }
    settings.insert(
        "durability".into(),
        format!("none: memcached keeps data in memory only (sync={} cannot be honoured)", args.sync),
    );
    settings.insert("noreply".into(), "off: every set and delete waits for the server's answer".into());
    settings.insert(
        "keys".into(),
        if codec.always_hex {
            format!("prefix `{prefix}` + `#` + hex of every key")
        } else {
            format!("prefix `{prefix}` + the key when memcached-safe, else `#` + hex of its bytes")
        },
    );
    settings.insert(
        "pipeline".into(),
        if pipeline == 0 { "whole batch".into() } else { format!("{pipeline} writes per round trip") },
    );
    settings.insert("connections".into(), format!("{connections} per reader thread"));
    settings.insert("client".into(), "kvbench text protocol (one write per request; TCP_NODELAY on TCP)".into());
    if maxbytes > 0 && args.expected_bytes > maxbytes / 10 * 8 {
        settings.insert(
            "warning".into(),
            format!(
                "the plan writes ~{} MiB into {} MiB: memcached may evict (evicted keys show as missing)",
                args.expected_bytes >> 20,
                maxbytes >> 20
            ),
        );
    }

    // First open in this job: remove what earlier runs left under our prefix.
    let marker = lifecycle::job_marker(args.dir, "memcached");
    if !marker.exists() {
        match clear_prefix(&mut conn, &codec.prefix) {
            Ok(n) => {
                settings.insert("cleared".into(), format!("{n} earlier keys under the prefix"));
            }
            Err(e) => {
                settings.insert("cleared".into(), format!("could not list earlier keys: {e}"));
            }
        }
        std::fs::write(&marker, &prefix)?;
    }
    let depth = if pipeline == 0 { usize::MAX } else { pipeline };
    settings.insert("record".into(), "blob: one item per record; a record of fields is serialised into it".into());
    let wire = Arc::<WireCount>::default();
    let shared = Mutex::new(McWriter { conn, codec: codec.clone(), depth, key: Vec::new(), wire: wire.clone() });
    Ok(Box::new(Engine { addr, timeout, codec, pipeline, connections, shared, settings, wire }))
}

/// How the server is reached, for the report: a TCP server given by URL has no authentication.
fn access(addr: &Addr) -> String {
    match addr {
        Addr::Unix(p) => format!("Unix socket {}", p.display()),
        Addr::Tcp(h, p) => format!("TCP {h}:{p} without authentication (server given by --url / row url)"),
    }
}

/// Delete every key starting with `prefix` (listed with `lru_crawler metadump all`).
fn clear_prefix(conn: &mut Conn, prefix: &[u8]) -> Result<usize> {
    let mut keys = Vec::new();
    conn.lines_until_end("lru_crawler metadump all", |line| {
        let Some(rest) = line.strip_prefix(b"key=") else { return Ok(()) };
        let enc = rest.split(|&b| b == b' ' || b == b'\r' || b == b'\n').next().unwrap_or(b"");
        let key = url_decode(enc);
        if key.starts_with(prefix) {
            keys.push(key);
        }
        Ok(())
    })?;
    for chunk in keys.chunks(1000) {
        for k in chunk {
            conn.push_delete(k);
        }
        conn.flush()?;
        for _ in chunk {
            conn.read_store_reply(true)?;
        }
    }
    Ok(keys.len())
}

fn url_decode(encoded: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(encoded.len());
    let mut i = 0;
    while i < encoded.len() {
        if encoded[i] == b'%' && i + 2 < encoded.len() {
            if let (Some(a), Some(b)) = (hex(encoded[i + 1]), hex(encoded[i + 2])) {
                out.push(a << 4 | b);
                i += 3;
                continue;
            }
        }
        out.push(encoded[i]);
        i += 1;
    }
    out
}

impl Engine {
    fn connect(&self) -> Result<Conn> {
        Conn::connect(&self.addr, self.timeout)
            .map_err(|e| EngineError::Store(format!("cannot connect to memcached at {}: {e}", self.addr)))
    }
}

impl kvbench_model::engine::Engine for Engine {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.shared.lock().map_err(|_| EngineError::store("lock poisoned"))?.write(batch)
    }

    fn writer(&self) -> Result<Option<Box<dyn Writer + '_>>> {
        let depth = if self.pipeline == 0 { usize::MAX } else { self.pipeline };
        let wire = self.wire.clone();
        Ok(Some(Box::new(McWriter { conn: self.connect()?, codec: self.codec.clone(), depth, key: Vec::new(), wire })))
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let conn = self.connect()?;
        let more = (1..self.connections).map(|_| self.connect()).collect::<Result<Vec<_>>>()?;
        let codec = self.codec.clone();
        Ok(Box::new(MemcachedReader { conn, more, codec, keys: Vec::new(), key: Vec::new(), wire: &self.wire }))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn wire(&self) -> Option<kvbench_model::engine::Wire> {
        Some(self.wire.get())
    }
}

/// Queue `get KEY` on the connection.
fn push_get(conn: &mut Conn, key: &[u8]) {
    conn.wbuf.extend_from_slice(b"get ");
    conn.wbuf.extend_from_slice(key);
    conn.wbuf.extend_from_slice(b"\r\n");
}

/// Connection `index` of a reader: the first one, or one of the further ones.
fn conn_at<'c>(first: &'c mut Conn, more: &'c mut [Conn], index: usize) -> Result<&'c mut Conn> {
    match index {
        0 => Ok(first),
        _ => more.get_mut(index - 1).ok_or_else(|| EngineError::Store(format!("memcached: no connection {index}"))),
    }
}

struct MemcachedReader<'a> {
    conn: Conn,
    /// Further connections of this reader (option `connections`), used by pipelined gets.
    more: Vec<Conn>,
    codec: KeyCodec,
    key: Vec<u8>,
    /// Encoded keys of a multi-get, concatenated, with their ends.
    keys: Vec<u8>,
    wire: &'a WireCount,
}

impl Reader for MemcachedReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.codec.encode(key, &mut self.key)?;
        let c = &mut self.conn;
        push_get(c, &self.key);
        c.flush()?;
        self.wire.sent(1);
        c.read_get_reply(out)
    }

    fn connections(&self) -> usize {
        1 + self.more.len()
    }

    /// Every get of the pipeline leaves in one write.
    fn send_gets(&mut self, conn: usize, keys: &[&[u8]]) -> Result<()> {
        let c = conn_at(&mut self.conn, &mut self.more, conn)?;
        for k in keys {
            self.codec.encode(k, &mut self.key)?;
            push_get(c, &self.key);
        }
        c.flush()?;
        self.wire.sent(keys.len());
        Ok(())
    }

    fn recv_gets(&mut self, conn: usize, max: usize, out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        super::recv_gets(conn_at(&mut self.conn, &mut self.more, conn)?, max, out)
    }

    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        out.clear();
        // Encode every key once; remember where each ends.
        self.keys.clear();
        let mut ends = Vec::with_capacity(keys.len());
        for k in keys {
            self.codec.encode(k, &mut self.key)?;
            self.keys.extend_from_slice(&self.key);
            ends.push(self.keys.len());
        }
        let enc = |i: usize| &self.keys[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
        let c = &mut self.conn;
        let lines = keys.len().div_ceil(KEYS_PER_LINE);
        for l in 0..lines {
            c.wbuf.extend_from_slice(b"get");
            for i in l * KEYS_PER_LINE..((l + 1) * KEYS_PER_LINE).min(keys.len()) {
                c.wbuf.push(b' ');
                c.wbuf.extend_from_slice(enc(i));
            }
            c.wbuf.extend_from_slice(b"\r\n");
        }
        c.flush()?;
        // One `get` line of up to KEYS_PER_LINE keys is one command (memcached's cmd_get
        // counts its keys).
        self.wire.sent(lines);
        // Replies come in request order and skip absent keys: walk both lists together.
        let mut next = 0usize;
        out.resize(keys.len(), None);
        let mut stray = Vec::new();
        let mut ends_seen = 0;
        while ends_seen < lines {
            c.read_line()?;
            if c.line.starts_with(b"END") {
                ends_seen += 1;
                continue;
            }
            c.check_error_line("multi-get")?;
            let (krange, len) = c.value_header()?;
            let mut v = Vec::with_capacity(len);
            let got_key = c.line[krange].to_vec();
            c.read_data(len, &mut v)?;
            while next < keys.len() && enc(next) != &got_key[..] {
                next += 1;
            }
            if next < keys.len() {
                out[next] = Some(v);
                next += 1;
            } else {
                stray.push((got_key, v));
            }
        }
        // Out-of-order replies (not seen from memcached, but cheap to handle): match by key.
        for (k, v) in stray {
            if let Some(i) = (0..keys.len()).find(|&i| enc(i) == &k[..] && out[i].is_none()) {
                out[i] = Some(v);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_keys_are_hex_encoded() {
        let c = KeyCodec { prefix: b"p:".to_vec(), always_hex: false };
        let mut out = Vec::new();
        c.encode(b"abc", &mut out).unwrap();
        assert_eq!(out, b"p:abc");
        c.encode(b"a b", &mut out).unwrap();
        assert_eq!(out, b"p:#612062");
        c.encode(b"#x", &mut out).unwrap();
        assert_eq!(out, b"p:#2378");
        c.encode(&[0, 1], &mut out).unwrap();
        assert_eq!(out, b"p:#0001");
        assert!(c.encode(&[0u8; 200], &mut out).is_err());
        c.encode(&[b'a'; 248], &mut out).unwrap();
        assert_eq!(out.len(), 250);
        assert!(c.encode(&[b'a'; 249], &mut out).is_err(), "too long raw, and too long hex-encoded");
    }

    #[test]
    fn metadump_keys_are_url_decoded() {
        assert_eq!(url_decode(b"kvb%3A%23ab"), b"kvb:#ab");
        assert_eq!(url_decode(b"a%2"), b"a%2");
    }
}
