//! memcached's `watch fetchers mutations` output (memcached 1.6.18): an optional `OK` first line,
//! then one event a line of `name=value` fields:
//! `ts=EPOCH.MICROS gid=N type=item_get key=K status=found clsid=C cfd=FD size=BYTES` and
//! `ts=... type=item_store key=K status=stored cmd=set ttl=T clsid=C cfd=FD size=BYTES`.
//!
//! What 1.6.18 prints, checked on a live server:
//! - `ts` is `%d.%d` of seconds and microseconds: the microseconds are not zero-padded
//!   (`1795842461.697` is 697 µs past the second), so they are read as a whole number.
//! - keys are URI-encoded (`a%25b` is `a%b`); `size` is the value's bytes (no `\r\n`).
//! - every store first looks its key up, and that lookup is logged as an `item_get` of the same
//!   connection just before the `item_store`: it is no request, and is dropped here.
//! - a delete (`delete`, `md`), `incr`, `decr`, `touch` and `gat` log only their lookup, an
//!   `item_get`: they read as gets. There is no delete event (later versions' `watch deletions`
//!   prints `type=deleted`, read as a delete).
//! - a store that fails (`status=not_stored`, `exists`, ...) is counted skipped as
//!   `item_store:STATUS`; other event types by their type; a `skipped=N` line (events memcached
//!   dropped for a slow watcher) as `watcher-skipped`, N times. Events a worker thread drops
//!   when its log buffer is full (`stats` `log_worker_dropped`) leave no trace in the stream.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::csv::{client, digits, epoch_us, number, past_ok_line, show, Text};
use crate::lines::{Clients, Source};
use crate::{Format, Kind, Reader, TraceError, TraceOp};

const EXPECTED: &str = "expected `ts=EPOCH.MICROS gid=N type=TYPE key=KEY ...`";
/// Events held back to find the stores' own lookups (a store's lookup is the event of its
/// connection just before it; connections interleave in between).
const WINDOW: usize = 1024;

/// Whether a trace's first bytes look like this format: after an optional `OK` line, `ts=` and
/// a digit.
pub fn looks_like(head: &[u8]) -> bool {
    past_ok_line(head).strip_prefix(b"ts=").is_some_and(|rest| digits(rest) > 0)
}

/// Reads memcached `watch fetchers mutations` output.
pub struct WatchReader {
    text: Text,
    clients: Clients,
    held: Held,
    /// An error was returned: the ops held back are never given.
    failed: bool,
}

impl WatchReader {
    pub fn new(src: Source) -> WatchReader {
        WatchReader { text: Text::new(src), clients: Clients::default(), held: Held::default(), failed: false }
    }

    fn fail(&mut self, error: TraceError) -> Option<Result<TraceOp, TraceError>> {
        self.failed = true;
        self.held = Held::default();
        Some(Err(error))
    }

    /// Takes the current line into `held` (or `skipped`).
    fn take(&mut self) -> Result<(), String> {
        let line = &self.text.line;
        if let Some(n) = line.strip_prefix(b"skipped=") {
            let n = number(n).ok_or_else(|| format!("{EXPECTED} (found {})", show(line)))?;
            self.text.skip_n("watcher-skipped", n);
            return Ok(());
        }
        let f = Fields::parse(line)?;
        let cfd = f.cfd.unwrap_or(b"-");
        match f.kind {
            b"item_get" => {
                let found = f.required(f.status, "status")? == b"found";
                let value_size = if found { f.size()? } else { None };
                let client = client(&mut self.clients, f.required(f.cfd, "cfd")?)?;
                self.held.get(f.op(client, Kind::Get, value_size)?);
            }
            b"item_store" => {
                let status = f.required(f.status, "status")?;
                let client = client(&mut self.clients, f.required(f.cfd, "cfd")?)?;
                let op = f.op(client, Kind::Put, f.size()?)?;
                self.held.store(&op);
                if status == b"stored" {
                    self.held.push(op);
                } else {
                    let name = format!("item_store:{}", String::from_utf8_lossy(&status[..status.len().min(32)]));
                    self.text.skip(&name);
                }
            }
            b"deleted" => {
                let client = client(&mut self.clients, cfd)?;
                self.held.push(f.op(client, Kind::Delete, None)?);
            }
            other => {
                let name = String::from_utf8_lossy(&other[..other.len().min(32)]).into_owned();
                self.text.skip(&name);
            }
        }
        Ok(())
    }
}

/// The fields of an event line this reader uses (others are passed over).
struct Fields<'a> {
    ts_us: u64,
    kind: &'a [u8],
    key: Option<&'a [u8]>,
    status: Option<&'a [u8]>,
    cfd: Option<&'a [u8]>,
    size: Option<&'a [u8]>,
}

impl<'a> Fields<'a> {
    fn parse(line: &'a [u8]) -> Result<Fields<'a>, String> {
        if !line.starts_with(b"ts=") {
            return Err(format!("{EXPECTED} (found {})", show(line)));
        }
        let (mut ts, mut kind) = (None, None);
        let mut f = Fields { ts_us: 0, kind: b"", key: None, status: None, cfd: None, size: None };
        for field in line.split(|&b| b == b' ') {
            let eq = field.iter().position(|&b| b == b'=');
            let Some(eq) = eq else { return Err(format!("expected NAME=VALUE fields (found {})", show(field))) };
            let (name, value) = (&field[..eq], &field[eq + 1..]);
            let slot = match name {
                b"ts" => &mut ts,
                b"type" => &mut kind,
                b"key" => &mut f.key,
                b"status" => &mut f.status,
                b"cfd" => &mut f.cfd,
                b"size" => &mut f.size,
                _ => continue,
            };
            *slot = Some(value);
        }
        f.ts_us = timestamp(ts.unwrap_or_default())?;
        f.kind = f.required(kind, "type")?;
        Ok(f)
    }

    fn required(&self, value: Option<&'a [u8]>, name: &str) -> Result<&'a [u8], String> {
        value.ok_or_else(|| format!("{EXPECTED}: no `{name}=` field"))
    }

    fn size(&self) -> Result<Option<u32>, String> {
        let Some(size) = self.size else { return Ok(None) };
        let n = number(size).filter(|&n| n <= u64::from(u32::MAX));
        n.map(|n| Some(n as u32))
            .ok_or_else(|| format!("size={} is not a number (allowed: 0 to {})", show(size), u32::MAX))
    }

    fn op(&self, client: u32, kind: Kind, value_size: Option<u32>) -> Result<TraceOp, String> {
        let key = uri_decode(self.required(self.key, "key")?)?;
        Ok(TraceOp { ts_us: self.ts_us, client, kind, key, value_size, scan_len: None, joined: false })
    }
}

/// `SECONDS.MICROS`, the microseconds not zero-padded (memcached prints `%d.%d`).
fn timestamp(ts: &[u8]) -> Result<u64, String> {
    let bad = || format!("ts={} is not SECONDS.MICROSECONDS (allowed: microseconds 0 to 999999)", show(ts));
    let dot = ts.iter().position(|&b| b == b'.').ok_or_else(bad)?;
    let micros = number(&ts[dot + 1..]).filter(|&m| m < 1_000_000).ok_or_else(bad)?;
    epoch_us(&ts[..dot], micros).ok_or_else(bad)
}

/// A key as memcached's `uriencode` wrote it: `%XX` for every byte but letters, digits and
/// `-._~`.
fn uri_decode(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        let byte = hex.and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        let byte = byte.ok_or_else(|| format!("key={}: bad %-escape at byte {} (allowed: %XX)", show(bytes), i + 1))?;
        out.push(byte);
        i += 3;
    }
    Ok(out)
}

/// Events held back until it is known whether a get was a store's own lookup, in order.
#[derive(Default)]
struct Held {
    /// `None`: a lookup, dropped.
    slots: VecDeque<Slot>,
    /// The number of slots ever taken from the front.
    taken: u64,
    /// Each client's last get, while it may still be a lookup (its number since the start).
    open: HashMap<u32, u64>,
    draining: bool,
}

struct Slot {
    op: Option<TraceOp>,
    open: bool,
}

impl Held {
    fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// A get: a lookup if the next event of its client is a store of its key.
    fn get(&mut self, op: TraceOp) {
        self.close(op.client);
        self.open.insert(op.client, self.taken + self.slots.len() as u64);
        self.slots.push_back(Slot { op: Some(op), open: true });
    }

    /// A store (stored or not): drops its lookup.
    fn store(&mut self, op: &TraceOp) {
        let Some(at) = self.open.remove(&op.client) else { return };
        if let Some(slot) = at.checked_sub(self.taken).and_then(|i| self.slots.get_mut(i as usize)) {
            slot.open = false;
            if slot.op.as_ref().is_some_and(|get| get.key == op.key) {
                slot.op = None;
            }
        }
    }

    /// Any other event: the client's last get was a request.
    fn push(&mut self, op: TraceOp) {
        self.close(op.client);
        self.slots.push_back(Slot { op: Some(op), open: false });
    }

    fn close(&mut self, client: u32) {
        if let Some(at) = self.open.remove(&client) {
            if let Some(slot) = at.checked_sub(self.taken).and_then(|i| self.slots.get_mut(i as usize)) {
                slot.open = false;
            }
        }
    }

    /// The next op whose fate is known (all of them once draining at the end).
    fn ready(&mut self) -> Option<TraceOp> {
        while let Some(front) = self.slots.front() {
            let forced = self.draining || self.slots.len() > WINDOW;
            if front.open && !forced {
                return None;
            }
            let slot = self.slots.pop_front()?;
            if slot.open {
                self.open.retain(|_, at| *at != self.taken);
            }
            self.taken += 1;
            if slot.op.is_some() {
                return slot.op;
            }
        }
        None
    }
}

impl Iterator for WatchReader {
    type Item = Result<TraceOp, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed {
            if let Some(op) = self.held.ready() {
                return Some(Ok(op));
            }
            match self.text.advance() {
                Ok(true) => {}
                Ok(false) if self.held.draining => return None,
                Ok(false) => {
                    self.held.draining = true;
                    continue;
                }
                Err(e) => return self.fail(e),
            }
            if self.text.is_ok_line() {
                continue;
            }
            if let Err(what) = self.take() {
                let e = self.text.fail(what);
                return self.fail(e);
            }
        }
        None
    }
}

impl Reader for WatchReader {
    fn format(&self) -> Format {
        Format::MemcachedWatch
    }
    fn skipped(&self) -> &BTreeMap<String, u64> {
        &self.text.skipped
    }
    fn bytes_read(&self) -> u64 {
        self.text.src.bytes_read()
    }
    fn hash(&self) -> Option<u64> {
        self.held.is_empty().then(|| self.text.hash()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::testing::{fifo, file, read_all, source};
    use crate::Place;

    fn read(bytes: &[u8]) -> (Vec<TraceOp>, Option<TraceError>, BTreeMap<String, u64>) {
        let f = file(bytes);
        let mut r = WatchReader::new(source(f.path()));
        let (ops, err) = read_all(&mut r);
        if err.is_none() {
            assert_eq!(r.hash(), Some(xxhash_rust::xxh3::xxh3_64(bytes)));
        }
        (ops, err, r.skipped().clone())
    }

    fn error(bytes: &[u8]) -> TraceError {
        read(bytes).1.expect("an error")
    }

    fn summary(ops: &[TraceOp]) -> Vec<(Kind, String, Option<u32>)> {
        ops.iter().map(|o| (o.kind, String::from_utf8_lossy(&o.key).into_owned(), o.value_size)).collect()
    }

    /// What memcached 1.6.18 printed for: set k1 (5 bytes), set k1 (3), get k1, get k1 k2,
    /// add k1 (not stored), delete k1, set of a key with `%=/ü"\`, get of it, incr n.
    const CAPTURE: &[u8] = b"OK\r\n\
ts=1795842460.247209 gid=403 type=item_get key=k1 status=not_found clsid=0 cfd=25 size=0\n\
ts=1795842460.247237 gid=404 type=item_store key=k1 status=stored cmd=set ttl=0 clsid=1 cfd=25 size=5\n\
ts=1795842460.296335 gid=405 type=item_get key=k1 status=found clsid=1 cfd=25 size=5\n\
ts=1795842460.296339 gid=406 type=item_store key=k1 status=stored cmd=set ttl=0 clsid=1 cfd=25 size=3\n\
ts=1795842460.346638 gid=407 type=item_get key=k1 status=found clsid=1 cfd=25 size=3\n\
ts=1795842460.396934 gid=408 type=item_get key=k1 status=found clsid=1 cfd=25 size=3\n\
ts=1795842460.396936 gid=409 type=item_get key=k2 status=not_found clsid=0 cfd=25 size=0\n\
ts=1795842460.497619 gid=412 type=item_get key=k1 status=found clsid=1 cfd=25 size=3\n\
ts=1795842460.497620 gid=413 type=item_store key=k1 status=not_stored cmd=add ttl=0 clsid=1 cfd=25 size=1\n\
ts=1795842461.101377 gid=431 type=item_get key=k1 status=found clsid=1 cfd=25 size=3\n\
ts=1795842461.202095 gid=433 type=item_get key=a%25b%3Dc%2F%C3%BC%22%5C status=not_found clsid=0 cfd=25 size=0\n\
ts=1795842461.202097 gid=434 type=item_store key=a%25b%3Dc%2F%C3%BC%22%5C status=stored cmd=set ttl=0 clsid=1 cfd=25 size=1\n\
ts=1795842461.252646 gid=435 type=item_get key=a%25b%3Dc%2F%C3%BC%22%5C status=found clsid=1 cfd=25 size=1\n\
ts=1795842461.697 gid=429 type=item_get key=n status=found clsid=1 cfd=26 size=1\n";

    #[test]
    fn a_real_capture_reads_as_requests_without_the_stores_lookups() {
        let (ops, err, skipped) = read(CAPTURE);
        assert!(err.is_none(), "{err:?}");
        use Kind::*;
        let odd = "a%b=c/\u{fc}\"\\".to_string();
        assert_eq!(
            summary(&ops),
            [
                (Put, "k1".into(), Some(5)),
                (Put, "k1".into(), Some(3)),
                (Get, "k1".into(), Some(3)),
                (Get, "k1".into(), Some(3)),
                (Get, "k2".into(), None),
                (Get, "k1".into(), Some(3)), // the delete, seen as its lookup only
                (Put, odd.clone(), Some(1)),
                (Get, odd, Some(1)),
                (Get, "n".into(), Some(1)),
            ]
        );
        assert_eq!(ops[0].ts_us, 1_795_842_460_247_237);
        assert_eq!(ops[8].ts_us, 1_795_842_461_000_697, "unpadded microseconds");
        assert_eq!((ops[0].client, ops[8].client), (0, 1));
        assert!(ops.iter().all(|o| !o.joined && o.scan_len.is_none()));
        assert_eq!(skipped, [("item_store:not_stored".to_string(), 1)].into());
    }

    #[test]
    fn lookups_are_found_across_interleaved_connections() {
        let trace = b"ts=1.1 gid=1 type=item_get key=a status=not_found cfd=5 size=0\n\
                      ts=1.2 gid=2 type=item_get key=b status=found cfd=6 size=9\n\
                      ts=1.3 gid=3 type=item_store key=a status=stored cmd=set cfd=5 size=4\n\
                      ts=1.4 gid=4 type=item_get key=c status=found cfd=6 size=2\n\
                      ts=1.5 gid=5 type=item_get key=d status=found cfd=5 size=2\n\
                      ts=1.6 gid=6 type=item_store key=x status=stored cmd=set cfd=5 size=1\n";
        let (ops, err, _) = read(trace);
        assert!(err.is_none(), "{err:?}");
        use Kind::*;
        // cfd 6's get of b stays (its next event is a get); cfd 5's get of d stays (a store of
        // another key follows).
        assert_eq!(
            summary(&ops),
            [
                (Get, "b".into(), Some(9)),
                (Put, "a".into(), Some(4)),
                (Get, "c".into(), Some(2)),
                (Get, "d".into(), Some(2)),
                (Put, "x".into(), Some(1))
            ]
        );
    }

    #[test]
    fn a_get_held_longer_than_the_window_is_given_in_order() {
        let mut trace = b"ts=1.0 gid=0 type=item_get key=first status=found cfd=1 size=1\n".to_vec();
        for i in 0..WINDOW + 5 {
            trace.extend_from_slice(
                format!("ts=1.{i} gid=1 type=item_store key=k{i} status=stored cfd=2 size=1\n").as_bytes(),
            );
        }
        trace.extend_from_slice(b"ts=2.0 gid=9 type=item_store key=first status=stored cmd=set cfd=1 size=1\n");
        let (ops, err, _) = read(&trace);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops.len(), WINDOW + 7, "too late to be told a lookup: kept");
        assert_eq!(ops[0].key, b"first");
    }

    #[test]
    fn other_events_and_lost_ones_are_counted() {
        let trace = b"ts=1.1 gid=1 type=eviction key=a fetch=no ttl=0 la=1 clsid=1\n\
                      skipped=42\n\
                      ts=1.3 gid=3 type=deleted key=a cmd=delete clsid=1 size=3\n\
                      ts=1.4 gid=4 type=item_get key=a status=expired clsid=1 cfd=3 size=0\n";
        let (ops, err, skipped) = read(trace);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(summary(&ops), [(Kind::Delete, "a".into(), None), (Kind::Get, "a".into(), None)]);
        assert_eq!(skipped, [("eviction".to_string(), 1), ("watcher-skipped".to_string(), 42)].into());
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_line() {
        let cases = [
            ("hello", "expected `ts=EPOCH.MICROS gid=N type=TYPE"),
            ("ts=1.1 gid=1 key=a", "no `type=` field"),
            ("ts=1.1 gid=1 type=item_get key=a cfd=1", "no `status=` field"),
            ("ts=1.1 gid=1 type=item_get key=a status=found", "no `cfd=` field"),
            ("ts=1.1 gid=1 type=item_get status=found cfd=1", "no `key=` field"),
            ("ts=1 gid=1 type=item_get key=a status=found cfd=1", "ts=\"1\" is not SECONDS.MICROSECONDS"),
            ("ts=1.1000000 gid=1 type=item_get key=a status=found cfd=1", "is not SECONDS.MICROSECONDS"),
            ("ts=1.1 gid=1 type=item_get key=a status=found cfd=1 size=-1", "size=\"-1\" is not a number"),
            ("ts=1.1 gid=1 type=item_get key=a%2 status=found cfd=1", "bad %-escape at byte 2"),
            ("ts=1.1 gid=1 type=item_get key=a%zz status=found cfd=1", "bad %-escape"),
            ("ts=1.1 gid=1  type=item_get", "expected NAME=VALUE fields"),
            ("skipped=x", "expected `ts="),
        ];
        for (line, want) in cases {
            let e = error(format!("OK\nts=1.1 gid=1 type=item_get key=a status=found cfd=1\n{line}\n").as_bytes());
            assert_eq!(e.place, Place::Line(3), "{line}");
            assert!(e.what.contains(want), "{line}: {e}");
        }
    }

    #[test]
    fn no_op_follows_an_error() {
        // The get of a is held (it might be a lookup) when the error comes: it is never given.
        let (ops, err, _) = read(b"ts=1.1 gid=1 type=item_get key=a status=found cfd=1\nbad\n");
        assert!(ops.is_empty());
        assert_eq!(err.unwrap().place, Place::Line(2));
    }

    #[test]
    fn garbage_and_zeros_are_errors_not_panics() {
        for bytes in
            [&b"\x00\x00\x00\x00"[..], b"ts=\xff\xfe\n", b"ts=.\n", b"ts=1.1 type=item_get key=% status=found cfd=1\n"]
        {
            let (_, err, _) = read(bytes);
            assert!(err.is_some(), "{bytes:?}");
        }
    }

    #[test]
    fn a_last_line_without_newline_is_read_when_complete_and_an_error_when_cut() {
        let whole = b"ts=1.1 gid=1 type=item_store key=a status=stored cmd=set cfd=1 size=3\nts=1.2 gid=2 type=item_get key=a status=found cfd=1 size=3";
        let (ops, err, _) = read(whole);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops.len(), 2);
        let e = error(&whole[..whole.len() - 20]);
        assert_eq!(e.place, Place::Line(2));
        assert!(e.what.contains("expected NAME=VALUE fields (found \"statu\")") && e.what.contains("cut short"), "{e}");
    }

    #[test]
    fn a_fifo_is_read_once_as_it_comes() {
        let mut bytes = b"OK\r\n".to_vec();
        for i in 0..300 {
            bytes.extend_from_slice(
                format!("ts=1.{i} gid={i} type=item_get key=k{i} status=not_found clsid=0 cfd=9 size=0\n").as_bytes(),
            );
            bytes.extend_from_slice(
                format!("ts=1.{i} gid={i} type=item_store key=k{i} status=stored cmd=set ttl=0 clsid=1 cfd=9 size=7\n")
                    .as_bytes(),
            );
        }
        let (_dir, path, feeder) = fifo(bytes.clone());
        let mut r = crate::open(&path, None).unwrap();
        assert_eq!(r.format(), Format::MemcachedWatch);
        let (ops, err) = read_all(r.as_mut());
        feeder.join().unwrap();
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops.len(), 300);
        assert!(ops.iter().all(|o| o.kind == Kind::Put));
        assert_eq!(r.hash(), Some(xxhash_rust::xxh3::xxh3_64(&bytes)));
    }

    #[test]
    fn looks_like_claims_watch_lines_only() {
        assert!(looks_like(CAPTURE));
        assert!(looks_like(b"ts=1795842460.247209 gid=4"));
        assert!(looks_like(b"OK\nts=1"));
        assert!(!looks_like(b"OK\r\n"));
        assert!(!looks_like(b"OK\n1795843163.188319 [0 lua] \"GET\" \"a\"\n"));
        assert!(!looks_like(b"0,ts=1,3,10,1,get,0\n"));
        assert!(!looks_like(b"\x00\x00\x00\x00\x00\x00\x00\x00"));
        assert!(!looks_like(b""));
    }
}
