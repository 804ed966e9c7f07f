//! RocksServer's HTTP API, byte for byte (its protocol description and listeners): keys come
//! raw from the query string (not percent-decoded, `&` separates keys) or from the body
//! (`\n`-separated); replies are always status 200 with these bodies:
//!
//! | request | reply |
//! |---|---|
//! | `GET /get?key` | `len\nvalue\n`, or `-1\n` when absent |
//! | `GET /mget?k1&k2` | per key `key\nlen\nvalue\n`, or `key\n-1\n` when absent |
//! | `POST /set` body `key\nlen\nvalue` | `OK\n` or `FAIL\n` |
//! | `POST /mset` body `key\nlen\nvalue\n` repeated | `OK\n` or `FAIL\n` (one batch) |
//! | `POST /del` body `key` | `OK\n` or `FAIL\n` |
//! | `POST /mdel` body `k1\nk2\nk3` | `OK\n` or `FAIL\n` (one batch) |
//! | `GET /exist?key` | `OK\nlen\nvalue\n`, or `FAIL\n` when absent |
//! | `POST /incr` body `key` or `key\nstep` | `OK\n` or `FAIL\n`: the value as a decimal integer, plus step (1) |
//! | `GET /stats` | the server's counters and the engine's settings, as text |
//!
//! Where RocksServer would read past a malformed body (a length longer than the data), this
//! answers `FAIL\n` and writes nothing.

use kvbench_model::engine::{Engine, WriteOp};

use super::ledger::Charge;
use super::net::Reply;
use super::reply::Read;
use super::{reply, State};

const OK: &[u8] = b"OK\n";
const FAIL: &[u8] = b"FAIL\n";

/// The RocksServer endpoint at `path`, if it is one.
pub(crate) fn route(st: &State, path: &str, query: Option<&str>, post: bool, body: &[u8]) -> Option<Reply> {
    let keys_of_query = || query.unwrap_or("");
    Some(match path {
        "/get" => get(st, keys_of_query()),
        "/mget" => mget(st, query),
        "/exist" => exist(st, keys_of_query()),
        "/stats" => stats(st),
        "/set" | "/mset" | "/del" | "/mdel" | "/incr" => {
            // RocksServer's POST listeners answer FAIL to another method or an empty body.
            if !post || body.is_empty() {
                return Some(Reply::text(200, "FAIL\n"));
            }
            write(st, path, body)
        }
        _ => return None,
    })
}

fn reply(body: Vec<u8>) -> Reply {
    Reply::new(200, body, true)
}

/// Runs `read` on the open engine; no open database or an engine error answers `fail`.
fn on_engine(st: &State, fail: &[u8], read: impl FnOnce(&dyn Engine) -> Option<Vec<u8>>) -> Reply {
    let Ok(g) = st.engine.read() else { return reply(fail.to_vec()) };
    match g.as_deref() {
        Some(e) => reply(read(e).unwrap_or_else(|| fail.to_vec())),
        None => reply(fail.to_vec()),
    }
}

/// `len\nvalue\n`.
fn push_value(out: &mut Vec<u8>, value: &[u8]) {
    use std::io::Write;
    let _ = writeln!(out, "{}", value.len());
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// One key's value framed after `prefix` (`len\nvalue\n`), or None when absent.
fn point_read(engine: &dyn Engine, key: &str, prefix: &[u8]) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    let found = engine.reader().ok()?.get(key.as_bytes(), &mut v).ok()?;
    found.then(|| {
        let mut out = Vec::with_capacity(prefix.len() + v.len() + 12);
        out.extend_from_slice(prefix);
        push_value(&mut out, &v);
        out
    })
}

fn get(st: &State, key: &str) -> Reply {
    if key.is_empty() {
        return reply(b"-1\n".to_vec());
    }
    on_engine(st, b"-1\n", |e| point_read(e, key, b""))
}

fn exist(st: &State, key: &str) -> Reply {
    if key.is_empty() {
        return reply(FAIL.to_vec());
    }
    on_engine(st, FAIL, |e| point_read(e, key, OK))
}

fn mget(st: &State, query: Option<&str>) -> Reply {
    let Some(q) = query.filter(|q| !q.is_empty()) else { return reply(Vec::new()) };
    let keys: Vec<&[u8]> = q.split('&').map(str::as_bytes).collect();
    if keys.len() > st.limits.max_keys {
        return too_many(st, keys.len());
    }
    let (mut over, mut busy) = (false, false);
    let mut charge = Charge::new(&st.replies);
    let r = on_engine(st, b"", |e| {
        let cost = |k: &[u8], v: Option<&Vec<u8>>| k.len() + 24 + v.map_or(0, Vec::len);
        let largest = &st.stats.largest_value;
        let max = st.limits.max_reply;
        let values = match reply::values_within(&mut *e.reader().ok()?, largest, &keys, max, &mut charge, cost).ok()? {
            Read::Values(v) => v,
            Read::TooLarge => {
                over = true;
                return None;
            }
            Read::Busy => {
                busy = true;
                return None;
            }
        };
        let size: usize = keys.iter().zip(&values).map(|(k, v)| k.len() + 24 + v.as_ref().map_or(0, Vec::len)).sum();
        let mut out = Vec::with_capacity(size);
        // Each value freed once copied: the request holds about its reply once, not twice.
        for (k, v) in keys.iter().zip(values) {
            out.extend_from_slice(k);
            out.push(b'\n');
            match v {
                Some(v) => push_value(&mut out, &v),
                None => out.extend_from_slice(b"-1\n"),
            }
        }
        Some(out)
    });
    if over {
        reply::too_large(st, "/mget")
    } else if busy {
        super::net::busy(st)
    } else {
        r.charged(charge)
    }
}

pub(crate) fn too_many(st: &State, keys: usize) -> Reply {
    st.stats.too_large.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Reply::text(413, format!("{keys} keys in one request; the server's limit is {} (--max-keys)\n", st.limits.max_keys))
}

/// C's `strtoll` on a prefix: spaces, a sign, digits; anything else ends it; saturates.
fn strtoll(digits: &[u8]) -> i64 {
    let digits = &digits[digits.iter().take_while(|c| c.is_ascii_whitespace()).count()..];
    let (neg, digits) = match digits.first() {
        Some(b'-') => (true, &digits[1..]),
        Some(b'+') => (false, &digits[1..]),
        _ => (false, digits),
    };
    let mut n: i64 = 0;
    for &c in digits.iter().take_while(|c| c.is_ascii_digit()) {
        let d = i64::from(c - b'0');
        n = if neg { n.saturating_mul(10).saturating_sub(d) } else { n.saturating_mul(10).saturating_add(d) };
    }
    n
}

/// `key\nlen\nvalue` at the start of `body`: (key, value, bytes used), or None when malformed.
fn pair(body: &[u8]) -> Option<(&[u8], &[u8], usize)> {
    let k_end = body.iter().position(|&c| c == b'\n')?;
    let rest = &body[k_end + 1..];
    let l_end = rest.iter().position(|&c| c == b'\n')?;
    let len = usize::try_from(strtoll(&rest[..l_end])).ok()?;
    let start = k_end + 1 + l_end + 1;
    let value = body.get(start..start.checked_add(len)?)?;
    Some((&body[..k_end], value, start + len))
}

/// Why a POST body gives no writes.
#[derive(Debug, PartialEq)]
enum Refused {
    Malformed,
    /// More than the keys-per-request limit (parsing stops there).
    TooMany,
}

/// The writes of a POST body, at most `max` of them.
fn writes<'a>(path: &str, body: &'a [u8], max: usize) -> Result<Vec<WriteOp<'a>>, Refused> {
    let mut ops = Vec::new();
    let mut push = |op: WriteOp<'a>| {
        if ops.len() == max {
            return Err(Refused::TooMany);
        }
        ops.push(op);
        Ok(())
    };
    match path {
        "/set" => {
            let (key, value, _) = pair(body).ok_or(Refused::Malformed)?;
            push(WriteOp { key, value: Some(value) })?;
        }
        "/mset" => {
            let mut at = 0;
            while at < body.len() {
                let (key, value, used) = pair(&body[at..]).ok_or(Refused::Malformed)?;
                push(WriteOp { key, value: Some(value) })?;
                // Each value is followed by one separator byte.
                at += used + 1;
            }
        }
        "/del" => push(WriteOp { key: body, value: None })?,
        "/mdel" => {
            for key in body.split(|&c| c == b'\n') {
                push(WriteOp { key, value: None })?;
            }
        }
        _ => return Err(Refused::Malformed),
    }
    Ok(ops)
}

fn write(st: &State, path: &str, body: &[u8]) -> Reply {
    if path == "/incr" {
        return incr(st, body);
    }
    match writes(path, body, st.limits.max_keys) {
        Ok(ops) => on_engine(st, FAIL, |e| e.write(&ops).ok().map(|()| OK.to_vec())),
        Err(Refused::Malformed) => reply(FAIL.to_vec()),
        Err(Refused::TooMany) => too_many(st, st.limits.max_keys + 1),
    }
}

/// RocksServer increments with a merge operator over decimal text (a value that is not a
/// number counts as 0); here a read-modify-write serialised by a lock gives the same value.
fn incr(st: &State, body: &[u8]) -> Reply {
    let mut parts = body.splitn(2, |&c| c == b'\n');
    let key = parts.next().unwrap_or_default();
    let step = parts.next().map_or(1, strtoll);
    let Ok(_one_at_a_time) = st.incr.lock() else { return reply(FAIL.to_vec()) };
    on_engine(st, FAIL, |e| {
        let mut v = Vec::new();
        let found = e.reader().ok()?.get(key, &mut v).ok()?;
        let now = if found { strtoll(&v) } else { 0 }.wrapping_add(step).to_string();
        e.write(&[WriteOp { key, value: Some(now.as_bytes()) }]).ok()?;
        Some(OK.to_vec())
    })
}

fn stats(st: &State) -> Reply {
    use std::fmt::Write;
    use std::sync::atomic::Ordering::Relaxed;
    let c = &st.stats;
    let mut s = String::new();
    let dir = st.open_dir.lock().ok().and_then(|d| d.clone());
    let _ = writeln!(s, "kvbench serve {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(s, "engine: {}", st.desc.name);
    let _ = writeln!(s, "root: {}", st.root.display());
    let _ = writeln!(s, "open: {}", dir.map_or("(none)".into(), |d| d.display().to_string()));
    let _ = writeln!(s, "connections accepted: {}", c.connections.load(Relaxed));
    let _ = writeln!(s, "requests: {}", c.requests.load(Relaxed));
    let _ = writeln!(s, "refused 401: {}", c.unauthorized.load(Relaxed));
    let _ = writeln!(s, "refused 413: {}", c.too_large.load(Relaxed));
    let _ = writeln!(s, "timed out: {}", c.timed_out.load(Relaxed));
    let _ = writeln!(s, "refused 503 (reply budget): {}", c.busy.load(Relaxed));
    let _ = writeln!(s, "reply budget held: {} of {} bytes", st.replies.used(), st.limits.reply_budget);
    if let Ok(g) = st.engine.read() {
        for (k, v) in g.as_deref().map(|e| e.settings()).unwrap_or_default() {
            let _ = writeln!(s, "{k}: {v}");
        }
    }
    reply(s.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoll_reads_a_prefix_like_c() {
        assert_eq!(strtoll(b"42"), 42);
        assert_eq!(strtoll(b"  -7x"), -7);
        assert_eq!(strtoll(b"+3"), 3);
        assert_eq!(strtoll(b"abc"), 0);
        assert_eq!(strtoll(b""), 0);
        assert_eq!(strtoll(b"99999999999999999999999"), i64::MAX);
        assert_eq!(strtoll(b"-99999999999999999999999"), i64::MIN);
    }

    #[test]
    fn bodies_parse_as_rocksserver_reads_them() {
        let w = writes("/mset", b"a\n1\nx\nbb\n3\nyyy\n", 10).unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!((w[1].key, w[1].value), (&b"bb"[..], Some(&b"yyy"[..])));
        // The last separator may be missing.
        assert_eq!(writes("/mset", b"a\n1\nx", 10).unwrap().len(), 1);
        // A length past the end, or no newline: malformed, nothing written.
        assert_eq!(writes("/set", b"a\n5\nxy", 10).unwrap_err(), Refused::Malformed);
        assert_eq!(writes("/set", b"a", 10).unwrap_err(), Refused::Malformed);
        assert_eq!(writes("/mset", b"a\n1\nx\nb\n9\nshort", 10).unwrap_err(), Refused::Malformed);
        assert_eq!(writes("/mdel", b"a\nb\nc", 2).unwrap_err(), Refused::TooMany);
        let d = writes("/mdel", b"a\nb", 2).unwrap();
        assert_eq!(d.iter().map(|w| w.key).collect::<Vec<_>>(), [&b"a"[..], b"b"]);
        // Values may hold newlines: the length decides.
        let s = writes("/set", b"k\n3\na\nb", 1).unwrap();
        assert_eq!(s[0].value, Some(&b"a\nb"[..]));
    }
}
