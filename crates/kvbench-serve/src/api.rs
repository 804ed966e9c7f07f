//! kvbench's own API, what the `http-*` engines speak: binary bodies with `u32` big-endian
//! length prefixes (docs/servers.md), so any key or value travels unchanged.
//!
//! - `GET /kv/get?key=<hex>` → 200 + value, or 404
//! - `POST /kv/mget` keys, length-prefixed (or newline-separated hex with a `text/plain`
//!   content type) → per key in order: found byte (1/0), length, bytes; one `multi_get` call
//! - `POST /kv/put` (key, value) pairs; `POST /kv/delete` keys; `POST /kv/write` (op byte
//!   1 = put / 0 = delete, key, [value]) → one `Engine::write` batch each
//! - `GET /kv/scan?start=<hex>&limit=N` → (key, value) pairs from the first key >= start
//! - `POST /open` (JSON `OpenRequest`, `dir` inside the served root) → 200 + settings as JSON
//! - `POST /close` → close the engine (data requests answer 503 until `/open`)
//! - `POST /settle` → the engine's settle step (flush and compact) → 200 + what it did, or
//!   501 when the engine has none

use hyper::Method;
use kvbench_engines::http::{put_bytes, put_len, unhex, Cursor, OpenRequest};
use kvbench_model::engine::{Engine, WriteOp};

use super::ledger::Charge;
use super::net::Reply;
use super::reply::Read;
use super::{reply, State};

fn bad(msg: impl Into<String>) -> Reply {
    Reply::text(400, msg)
}

fn query<'a>(query_string: Option<&'a str>, name: &str) -> Option<&'a str> {
    query_string?.split('&').find_map(|kv| kv.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

pub(crate) fn route(st: &State, method: &Method, path: &str, query: Option<&str>, body: &[u8], text: bool) -> Reply {
    match (method, path) {
        (&Method::POST, "/open") => open(st, body),
        (&Method::POST, "/close") => close(st),
        (&Method::POST, "/settle") => settle(st),
        _ if path.starts_with("/kv/") => {
            let Ok(g) = st.engine.read() else { return Reply::text(500, "lock poisoned") };
            let Some(engine) = g.as_deref() else { return Reply::text(503, "no database open (POST /open)") };
            data(st, engine, method, path, query, body, text).unwrap_or_else(|e| Reply::text(500, e))
        }
        _ => Reply::text(404, format!("no endpoint {method} {path}")),
    }
}

fn open(st: &State, body: &[u8]) -> Reply {
    let req: OpenRequest = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return bad(format!("/open: {e}")),
    };
    let Ok(mut g) = st.engine.write() else { return Reply::text(500, "lock poisoned") };
    if let Some(old) = g.take() {
        if let Err(e) = old.close() {
            return Reply::text(500, format!("closing the previous database: {e}"));
        }
    }
    match super::open_engine(st.desc, &req, &st.root) {
        Ok(e) => {
            let settings = e.settings();
            *g = Some(e);
            if let Ok(mut d) = st.open_dir.lock() {
                *d = Some(req.dir.clone());
            }
            Reply::ok(serde_json::to_vec(&settings).unwrap_or_default())
        }
        Err(e) if e.contains("outside the served root") || e.contains("`..`") => Reply::text(403, e),
        Err(e) => Reply::text(500, e),
    }
}

fn close(st: &State) -> Reply {
    let Ok(mut g) = st.engine.write() else { return Reply::text(500, "lock poisoned") };
    if let Ok(mut d) = st.open_dir.lock() {
        *d = None;
    }
    match g.take().map(|e| e.close()) {
        Some(Err(e)) => Reply::text(500, e.to_string()),
        _ => Reply::ok(Vec::new()),
    }
}

/// The open engine's settle step, with every data request held off while it runs (a settled
/// state is what a client measures next).
fn settle(st: &State) -> Reply {
    let Ok(mut g) = st.engine.write() else { return Reply::text(500, "lock poisoned") };
    let Some(engine) = g.as_mut() else { return Reply::text(503, "no database open (POST /open)") };
    match engine.settle() {
        Ok(note) => Reply::ok(note.into_bytes()),
        Err(kvbench_model::engine::EngineError::Unsupported(m)) => Reply::text(501, m),
        Err(e) => Reply::text(500, e.to_string()),
    }
}

/// Requests that read or write the open database.
fn data(
    st: &State,
    engine: &dyn Engine,
    method: &Method,
    path: &str,
    query_string: Option<&str>,
    body: &[u8],
    text: bool,
) -> Result<Reply, String> {
    let e = |x: kvbench_model::engine::EngineError| x.to_string();
    match (method, path) {
        (&Method::GET, "/kv/get") => {
            let Some(k) = query(query_string, "key") else { return Ok(bad("/kv/get needs ?key=<hex>")) };
            let key = match unhex(k) {
                Ok(k) => k,
                Err(m) => return Ok(bad(format!("key: {m}"))),
            };
            let mut out = Vec::new();
            let found = engine.reader().map_err(e)?.get(&key, &mut out).map_err(e)?;
            Ok(if found { Reply::ok(out) } else { Reply::new(404, Vec::new(), false) })
        }
        (&Method::POST, "/kv/mget") => mget(st, engine, body, text),
        (&Method::POST, "/kv/put" | "/kv/delete" | "/kv/write") => {
            let batch = match parse_writes(path, body, st.limits.max_keys) {
                Ok(b) => b,
                Err(None) => return Ok(super::rocks::too_many(st, st.limits.max_keys + 1)),
                Err(Some(m)) => return Ok(bad(format!("{path}: {m}"))),
            };
            engine.write(&batch).map_err(e)?;
            Ok(Reply::ok(Vec::new()))
        }
        (&Method::GET, "/kv/scan") => {
            let start = match query(query_string, "start").map(unhex).transpose() {
                Ok(s) => s,
                Err(m) => return Ok(bad(format!("start: {m}"))),
            };
            let limit = match query(query_string, "limit").map(|l| l.parse::<usize>()) {
                None => 1000,
                Some(Ok(n)) if n <= st.limits.max_keys => n,
                Some(Ok(n)) => return Ok(super::rocks::too_many(st, n)),
                Some(Err(_)) => return Ok(bad("limit: expected a number")),
            };
            let mut out = Vec::new();
            let max = st.limits.max_reply;
            engine
                .reader()
                .map_err(e)?
                .scan(start.as_deref(), limit, &mut |k, v| {
                    put_bytes(&mut out, k);
                    put_bytes(&mut out, v);
                    out.len() <= max
                })
                .map_err(e)?;
            Ok(if out.len() > max { reply::too_large(st, "/kv/scan") } else { Reply::ok(out) })
        }
        _ => Ok(Reply::text(404, format!("no endpoint {method} {path}"))),
    }
}

/// The keys of a /kv/mget body: length-prefixed, or hex lines when `text`.
fn mget(st: &State, engine: &dyn Engine, body: &[u8], text: bool) -> Result<Reply, String> {
    let owned: Vec<Vec<u8>>;
    let mut keys: Vec<&[u8]> = Vec::new();
    let max = st.limits.max_keys;
    if text {
        let lines = match std::str::from_utf8(body) {
            Ok(s) => s.lines().filter(|l| !l.trim().is_empty()),
            Err(e) => return Ok(bad(format!("/kv/mget keys: {e}"))),
        };
        // Counted before anything is decoded: a hostile body costs no more than its own size.
        let n = lines.clone().take(max + 1).count();
        if n > max {
            return Ok(super::rocks::too_many(st, n));
        }
        owned = match lines.map(unhex).collect() {
            Ok(k) => k,
            Err(m) => return Ok(bad(format!("/kv/mget keys: {m}"))),
        };
        keys.extend(owned.iter().map(|k| &k[..]));
    } else {
        let mut c = Cursor::new(body);
        while !c.done() {
            if keys.len() == max {
                return Ok(super::rocks::too_many(st, max + 1));
            }
            match c.bytes() {
                Ok(k) => keys.push(k),
                Err(m) => return Ok(bad(format!("/kv/mget: {m}"))),
            }
        }
    }
    let e = |x: kvbench_model::engine::EngineError| x.to_string();
    let mut reader = engine.reader().map_err(e)?;
    let cost = |_: &[u8], v: Option<&Vec<u8>>| 5 + v.map_or(0, Vec::len);
    let largest = &st.stats.largest_value;
    let mut charge = Charge::new(&st.replies);
    let values = match reply::values_within(&mut *reader, largest, &keys, st.limits.max_reply, &mut charge, cost) {
        Ok(Read::Values(v)) => v,
        Ok(Read::TooLarge) => return Ok(reply::too_large(st, "/kv/mget")),
        Ok(Read::Busy) => return Ok(super::net::busy(st)),
        Err(x) => return Err(e(x)),
    };
    let size: usize = values.iter().map(|v| 5 + v.as_ref().map_or(0, Vec::len)).sum();
    let mut out = Vec::with_capacity(size);
    // Each value freed once copied: the request holds about its reply once, not twice.
    for v in values {
        match v {
            Some(v) => {
                out.push(1);
                put_bytes(&mut out, &v);
            }
            None => {
                out.push(0);
                put_len(&mut out, 0);
            }
        }
    }
    Ok(Reply::ok(out).charged(charge))
}

/// The batch of a /kv/put, /kv/delete or /kv/write body. Err(None): more than `max` writes.
fn parse_writes<'a>(path: &str, body: &'a [u8], max: usize) -> Result<Vec<WriteOp<'a>>, Option<String>> {
    let mut c = Cursor::new(body);
    let mut batch = Vec::new();
    while !c.done() {
        if batch.len() == max {
            return Err(None);
        }
        let put = match path {
            "/kv/put" => true,
            "/kv/delete" => false,
            _ => match c.byte().map_err(Some)? {
                1 => true,
                0 => false,
                op => return Err(Some(format!("op byte {op} (1 = put, 0 = delete)"))),
            },
        };
        let key = c.bytes().map_err(Some)?;
        let value = if put { Some(c.bytes().map_err(Some)?) } else { None };
        batch.push(WriteOp { key, value });
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/kv/write` body: (op, key, value) with u32 big-endian lengths.
    fn body(ops: &[(u8, &[u8], &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        for (op, k, v) in ops {
            b.push(*op);
            put_bytes(&mut b, k);
            if *op == 1 {
                put_bytes(&mut b, v);
            }
        }
        b
    }

    #[test]
    fn regression_kv_write_refuses_an_op_byte_other_than_put_or_delete() {
        let ok = body(&[(1, b"k", b"v"), (0, b"k", b"")]);
        let batch = parse_writes("/kv/write", &ok, 10).unwrap();
        assert_eq!(batch.len(), 2);
        assert_eq!((batch[0].value, batch[1].value), (Some(&b"v"[..]), None));
        for op in [2u8, 7, 255] {
            let e = parse_writes("/kv/write", &body(&[(op, b"k", b"")]), 10).unwrap_err().unwrap();
            assert_eq!(e, format!("op byte {op} (1 = put, 0 = delete)"));
        }
    }
}
