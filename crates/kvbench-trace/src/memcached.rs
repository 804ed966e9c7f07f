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

    fn fail(&mut self, e: TraceError) -> Option<Result<TraceOp, TraceError>> {
        self.failed = true;
        self.held = Held::default();
        Some(Err(e))
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
        n.map(|n| Some(n as u32)).ok_or_else(|| format!("size={} is not a number (allowed: 0 to {})", show(size), u32::MAX))
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
fn uri_decode(b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let hex = b.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        let byte = hex.and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        let byte = byte.ok_or_else(|| format!("key={}: bad %-escape at byte {} (allowed: %XX)", show(b), i + 1))?;
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
