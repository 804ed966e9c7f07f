//! `kvbench serve`: any Rust registry engine behind a small HTTP/1.1 server (tiny_http), the
//! way RocksServer serves RocksDB. The `http-<engine>` engines start it and talk to it; a person
//! can run it too and use curl.
//!
//! Endpoints (binary bodies use `u32` big-endian length prefixes; docs/servers.md):
//! - `GET /health` → 200 `ok`
//! - `GET /get?key=<hex>` → 200 + value, or 404
//! - `POST /mget` body: keys, length-prefixed (or newline-separated hex with a `text/plain`
//!   content type) → for each key in order: found byte (1/0), length, bytes. One call of the
//!   engine's `Reader::multi_get` (RocksDB's MultiGet for rocksdb).
//! - `POST /put` body: (key, value) pairs length-prefixed → one `Engine::write` batch
//! - `POST /delete` body: keys length-prefixed → one batch
//! - `POST /write` body: (op byte 1 = put / 0 = delete, key, [value]) → one batch (what the
//!   http-* client sends: a mixed batch stays one atomic batch)
//! - `GET /scan?start=<hex>&limit=N` → (key, value) pairs from the first key >= start
//! - `POST /open` (JSON [`OpenRequest`]) → close the engine and open it in another directory
//!   with the given options, sync and open mode (the http-* client opens each job's database
//!   in the job's directory this way); 200 + the engine's settings as JSON
//! - `POST /close` → close the engine (later data requests answer 503 until `/open`)
//!
//! Worker threads each take requests from tiny_http's queue; each request takes a reader of
//! its own (for RocksDB a reader is a borrowed handle: nothing is opened).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::RwLock;

use kvbench_core::engine::{Engine, EngineDescriptor, OpenArgs, OpenMode, Options, SyncMode, WriteOp};
use kvbench_engines::http::{put_bytes, put_len, unhex, Cursor, OpenRequest};
use kvbench_engines::{find, Entry};
use tiny_http::{Header, Method, Request, Response, Server};

pub struct ServeArgs {
    pub engine: String,
    pub dir: PathBuf,
    pub listen: String,
    pub options: Vec<String>,
    pub sync: SyncMode,
    pub threads: usize,
}

struct State {
    desc: &'static EngineDescriptor,
    engine: RwLock<Option<Box<dyn Engine>>>,
}

type Reply = (u16, Vec<u8>);

fn bad(msg: impl Into<String>) -> Reply {
    (400, msg.into().into_bytes())
}

fn open_engine(desc: &EngineDescriptor, req: &OpenRequest) -> Result<Box<dyn Engine>, String> {
    let options = Options::parse(desc.name, desc.options, &req.options)?;
    std::fs::create_dir_all(&req.dir).map_err(|e| format!("{}: {e}", req.dir.display()))?;
    let args = OpenArgs {
        dir: &req.dir,
        options: &options,
        sync: req.sync,
        mode: req.mode,
        expected_records: req.expected_records,
        expected_bytes: req.expected_bytes,
        url: None,
        token: None,
    };
    (desc.open)(&args).map_err(|e| format!("open {} in {}: {e}", desc.name, req.dir.display()))
}

/// `k=v` options from the command line: JSON values where they parse (numbers, booleans),
/// strings otherwise.
fn parse_options(list: &[String]) -> Result<BTreeMap<String, serde_json::Value>, String> {
    let mut m = BTreeMap::new();
    for o in list {
        let (k, v) = o.split_once('=').ok_or_else(|| format!("--option {o}: expected k=v"))?;
        let val = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        m.insert(k.trim().to_string(), val);
    }
    Ok(m)
}

pub fn main(a: ServeArgs) -> i32 {
    match serve(a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn serve(a: ServeArgs) -> Result<(), String> {
    let desc = match find(&a.engine) {
        Some(Entry::Ready(d)) => d,
        Some(Entry::Missing { why, .. }) => return Err(format!("engine {} is not available: {why}", a.engine)),
        None => return Err(format!("no engine `{}` (kvbench list)", a.engine)),
    };
    if desc.start_server.is_some() {
        return Err(format!("{} is a server engine already; serve an embedded one", desc.name));
    }
    let req = OpenRequest {
        dir: a.dir.clone(),
        options: parse_options(&a.options)?,
        sync: a.sync,
        mode: OpenMode::ReadWrite,
        expected_records: 1_000_000,
        expected_bytes: 1 << 30,
    };
    let engine = open_engine(desc, &req)?;
    let listener = std::net::TcpListener::bind(&a.listen).map_err(|e| format!("cannot listen on {}: {e}", a.listen))?;
    set_nodelay(&listener).map_err(|e| format!("TCP_NODELAY on {}: {e}", a.listen))?;
    let server = Server::from_listener(listener, None).map_err(|e| format!("cannot serve on {}: {e}", a.listen))?;
    eprintln!("kvbench serve: {} in {} on http://{}", desc.name, a.dir.display(), a.listen);
    let state = State { desc, engine: RwLock::new(Some(engine)) };
    std::thread::scope(|s| {
        for _ in 0..a.threads.max(1) {
            s.spawn(|| loop {
                let req = match server.recv() {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("kvbench serve: {e}");
                        return;
                    }
                };
                handle(&state, req);
            });
        }
    });
    Ok(())
}

/// tiny_http writes a response's head and body in separate writes and does not set
/// TCP_NODELAY: with Nagle's algorithm and the client's delayed ACK, every small response
/// waited ~40 ms (measured: a 50-key MultiGet took 48 ms over HTTP, 3 ms in-process). Linux
/// copies TCP_NODELAY from a listening socket to the sockets it accepts, so it is set here.
fn set_nodelay(l: &std::net::TcpListener) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a pointer to a c_int of the stated size.
    let rc = unsafe {
        libc::setsockopt(
            l.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn handle(state: &State, mut req: Request) {
    let mut body = Vec::new();
    let (status, out) = match req.as_reader().read_to_end(&mut body) {
        Err(e) => bad(format!("reading the body: {e}")),
        Ok(_) => {
            let text =
                req.headers().iter().any(|h| h.field.equiv("Content-Type") && h.value.as_str().starts_with("text/"));
            route(state, req.method(), req.url(), &body, text)
        }
    };
    let mut resp = Response::from_data(out).with_status_code(status).with_chunked_threshold(usize::MAX);
    if status != 200 || req.url() == "/health" {
        if let Ok(h) = Header::from_bytes("Content-Type", "text/plain; charset=utf-8") {
            resp.add_header(h);
        }
    }
    let _ = req.respond(resp);
}

fn query<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    let q = url.split_once('?')?.1;
    q.split('&').find_map(|kv| kv.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

fn route(state: &State, method: &Method, url: &str, body: &[u8], text: bool) -> Reply {
    let path = url.split('?').next().unwrap_or("");
    match (method, path) {
        (Method::Get, "/health") => (200, b"ok\n".to_vec()),
        (Method::Post, "/open") => {
            let req: OpenRequest = match serde_json::from_slice(body) {
                Ok(r) => r,
                Err(e) => return bad(format!("/open: {e}")),
            };
            let mut g = match state.engine.write() {
                Ok(g) => g,
                Err(_) => return (500, b"lock poisoned".to_vec()),
            };
            if let Some(old) = g.take() {
                if let Err(e) = old.close() {
                    return (500, format!("closing the previous database: {e}").into_bytes());
                }
            }
            match open_engine(state.desc, &req) {
                Ok(e) => {
                    let settings = e.settings();
                    *g = Some(e);
                    (200, serde_json::to_vec(&settings).unwrap_or_default())
                }
                Err(e) => (500, e.into_bytes()),
            }
        }
        (Method::Post, "/close") => {
            let mut g = match state.engine.write() {
                Ok(g) => g,
                Err(_) => return (500, b"lock poisoned".to_vec()),
            };
            match g.take().map(|e| e.close()) {
                Some(Err(e)) => (500, e.to_string().into_bytes()),
                _ => (200, Vec::new()),
            }
        }
        _ => {
            let g = match state.engine.read() {
                Ok(g) => g,
                Err(_) => return (500, b"lock poisoned".to_vec()),
            };
            let Some(engine) = g.as_deref() else {
                return (503, b"no database open (POST /open)".to_vec());
            };
            match data(engine, method, path, url, body, text) {
                Ok(r) => r,
                Err(e) => (500, e.into_bytes()),
            }
        }
    }
}

/// Requests that read or write the open database.
fn data(engine: &dyn Engine, method: &Method, path: &str, url: &str, body: &[u8], text: bool) -> Result<Reply, String> {
    let e = |x: kvbench_core::engine::EngineError| x.to_string();
    match (method, path) {
        (Method::Get, "/get") => {
            let Some(k) = query(url, "key") else { return Ok(bad("/get needs ?key=<hex>")) };
            let key = match unhex(k) {
                Ok(k) => k,
                Err(m) => return Ok(bad(format!("key: {m}"))),
            };
            let mut out = Vec::new();
            let found = engine.reader().map_err(e)?.get(&key, &mut out).map_err(e)?;
            Ok(if found { (200, out) } else { (404, Vec::new()) })
        }
        (Method::Post, "/mget") => {
            let keys: Vec<Vec<u8>>;
            let mut slices: Vec<&[u8]> = Vec::new();
            if text {
                keys = match std::str::from_utf8(body)
                    .map_err(|e| e.to_string())
                    .and_then(|s| s.lines().filter(|l| !l.trim().is_empty()).map(unhex).collect())
                {
                    Ok(k) => k,
                    Err(m) => return Ok(bad(format!("/mget keys: {m}"))),
                };
                slices.extend(keys.iter().map(|k| &k[..]));
            } else {
                let mut c = Cursor::new(body);
                while !c.done() {
                    match c.bytes() {
                        Ok(k) => slices.push(k),
                        Err(m) => return Ok(bad(format!("/mget: {m}"))),
                    }
                }
            }
            let mut values = Vec::with_capacity(slices.len());
            engine.reader().map_err(e)?.multi_get(&slices, &mut values).map_err(e)?;
            let size: usize = values.iter().map(|v| 5 + v.as_ref().map_or(0, |v| v.len())).sum();
            let mut out = Vec::with_capacity(size);
            for v in &values {
                match v {
                    Some(v) => {
                        out.push(1);
                        put_bytes(&mut out, v);
                    }
                    None => {
                        out.push(0);
                        put_len(&mut out, 0);
                    }
                }
            }
            Ok((200, out))
        }
        (Method::Post, "/put" | "/delete" | "/write") => {
            let mut c = Cursor::new(body);
            let mut batch = Vec::new();
            let parsed: Result<(), String> = (|| {
                while !c.done() {
                    let put = match path {
                        "/put" => true,
                        "/delete" => false,
                        _ => c.byte()? == 1,
                    };
                    let key = c.bytes()?;
                    let value = if put { Some(c.bytes()?) } else { None };
                    batch.push(WriteOp { key, value });
                }
                Ok(())
            })();
            if let Err(m) = parsed {
                return Ok(bad(format!("{path}: {m}")));
            }
            engine.write(&batch).map_err(e)?;
            Ok((200, Vec::new()))
        }
        (Method::Get, "/scan") => {
            let start = match query(url, "start").map(unhex).transpose() {
                Ok(s) => s,
                Err(m) => return Ok(bad(format!("start: {m}"))),
            };
            let limit = match query(url, "limit").map(|l| l.parse::<usize>()) {
                None => 1000,
                Some(Ok(n)) => n,
                Some(Err(_)) => return Ok(bad("limit: expected a number")),
            };
            let mut out = Vec::new();
            engine
                .reader()
                .map_err(e)?
                .scan(start.as_deref(), limit, &mut |k, v| {
                    put_bytes(&mut out, k);
                    put_bytes(&mut out, v);
                    true
                })
                .map_err(e)?;
            Ok((200, out))
        }
        _ => Ok((404, format!("no endpoint {method} {path}").into_bytes())),
    }
}
