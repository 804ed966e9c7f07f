//! `redis-cli monitor` output (Redis 7.0): an optional `OK` first line, then one command a line,
//! `EPOCH.MICROS [DB CLIENT] "CMD" "arg" ...`, every argument quoted with C-style escapes.
//!
//! Reads become gets, writes of whole values puts, deletions deletes; a request on several keys
//! (MGET, MSET, DEL, EXISTS) is one op per key, the later ones `joined`, made as they are taken
//! so a line of a million keys costs its line only. Every other command is counted in `skipped`
//! by its upper-case name. The DB number is not part of the key.

use std::collections::BTreeMap;

use crate::csv::{client, digits, epoch_us, number, past_ok_line, show, Text};
use crate::lines::{Clients, Source};
use crate::{Format, Kind, Reader, TraceError, TraceOp};

const EXPECTED: &str = r#"expected `EPOCH.MICROS [DB CLIENT] "CMD" "ARG" ...`"#;
/// Longer command names are not kept as names in `skipped`.
const MAX_NAME: usize = 64;

/// Whether a trace's first bytes look like this format: after an optional `OK` line, digits, a
/// dot, digits, a space and `[`.
pub fn looks_like(head: &[u8]) -> bool {
    let line = past_ok_line(head);
    let secs = digits(line);
    let Some(rest) = line.get(secs..).and_then(|r| r.strip_prefix(b".")) else { return false };
    let frac = digits(rest);
    secs > 0 && frac > 0 && rest[frac..].starts_with(b" [")
}

/// Reads `redis-cli monitor` output.
pub struct MonitorReader {
    text: Text,
    clients: Clients,
    /// The request of the current line whose ops are still to come.
    request: Option<Request>,
    /// Scratch for a command name.
    name: Vec<u8>,
}

/// How a command's arguments become ops.
#[derive(Clone, Copy)]
struct Shape {
    kind: Kind,
    /// Arguments after the command it needs at least.
    min_args: usize,
    /// One op (the first key); otherwise one per key (or per key and value pair) to the end.
    single: bool,
    /// An argument between the key and its value (SETEX's expiry).
    gap: bool,
}

/// What a command (upper case) replays as; `None` for the ones a replay skips.
fn shape(name: &[u8]) -> Option<Shape> {
    let s = |kind, min_args, single, gap| Some(Shape { kind, min_args, single, gap });
    match name {
        b"GET" | b"GETEX" => s(Kind::Get, 1, true, false),
        b"MGET" | b"EXISTS" => s(Kind::Get, 1, false, false),
        b"DEL" | b"UNLINK" => s(Kind::Delete, 1, false, false),
        b"SET" | b"SETNX" => s(Kind::Put, 2, true, false),
        b"SETEX" | b"PSETEX" => s(Kind::Put, 3, true, true),
        b"MSET" => s(Kind::Put, 2, false, false),
        _ => None,
    }
}

/// A request's ops, made one at a time from the current line.
struct Request {
    ts_us: u64,
    client: u32,
    shape: Shape,
    /// Byte offset in the line of the next key's argument.
    at: usize,
    /// Ops made so far.
    made: u32,
}

impl MonitorReader {
    pub fn new(src: Source) -> MonitorReader {
        MonitorReader { text: Text::new(src), clients: Clients::default(), request: None, name: Vec::new() }
    }

    /// The next op of the current request; `Ok(None)` when none is left.
    fn next_of_request(&mut self) -> Result<Option<TraceOp>, String> {
        let Some(r) = self.request.as_mut() else { return Ok(None) };
        let line = &self.text.line;
        let key = match arg_at(line, r.at)? {
            Some(key) if !(r.shape.single && r.made > 0) => key,
            _ => {
                self.request = None;
                return Ok(None);
            }
        };
        r.at = key.next;
        let mut value_size = None;
        if r.shape.kind == Kind::Put {
            if r.shape.gap {
                r.at = arg_at(line, r.at)?.ok_or(EXPECTED)?.next;
            }
            let value = arg_at(line, r.at)?.ok_or("a key without a value")?;
            value_size = Some(value.len);
            r.at = value.next;
        }
        let joined = r.made > 0;
        r.made += 1;
        let (ts_us, client, kind) = (r.ts_us, r.client, r.shape.kind);
        Ok(Some(TraceOp { ts_us, client, kind, key: key.decode(line), value_size, scan_len: None, joined }))
    }

    /// Takes the current line: a request whose ops come next, or a skipped command.
    fn start(&mut self) -> Result<(), String> {
        let line = &self.text.line;
        let (ts_us, client_name, at) = header(line)?;
        // The whole line is checked first, so a request is never cut by an error in its middle.
        let args = count_args(line, at)? - 1;
        let cmd = arg_at(line, at)?.ok_or(EXPECTED)?;
        self.name.clear();
        cmd.decode_into(line, &mut self.name);
        self.name.make_ascii_uppercase();
        let Some(shape) = shape(&self.name) else {
            let name = match self.name.len() <= MAX_NAME {
                true => String::from_utf8_lossy(&self.name).into_owned(),
                false => "(long name)".into(),
            };
            self.text.skip(&name);
            return Ok(());
        };
        let name = String::from_utf8_lossy(&self.name);
        if args < shape.min_args {
            return Err(format!("{name} needs at least {} arguments (found {args})", shape.min_args));
        }
        if !shape.single && shape.kind == Kind::Put && args % 2 == 1 {
            return Err(format!("{name} needs KEY VALUE pairs (found {args} arguments)"));
        }
        let client = client(&mut self.clients, client_name)?;
        self.request = Some(Request { ts_us, client, shape, at: cmd.next, made: 0 });
        Ok(())
    }
}

/// The time, the client and the offset of the first argument of a MONITOR line:
/// `EPOCH.MICROS [DB CLIENT] "`.
fn header(line: &[u8]) -> Result<(u64, &[u8], usize), String> {
    let bad = || format!("{EXPECTED} (found {})", show(line));
    let secs = digits(line);
    let rest = line[secs..].strip_prefix(b".").ok_or_else(bad)?;
    let frac = digits(rest);
    // Redis prints six digits; fewer are read as a decimal fraction all the same.
    if frac == 0 || frac > 6 {
        return Err(bad());
    }
    let micros = number(&rest[..frac]).ok_or_else(bad)? * 10u64.pow(6 - frac as u32);
    let ts_us = epoch_us(&line[..secs], micros).ok_or_else(bad)?;
    let rest = rest[frac..].strip_prefix(b" [").ok_or_else(bad)?;
    let db = digits(rest);
    let rest = rest[db..].strip_prefix(b" ").filter(|_| db > 0).ok_or_else(bad)?;
    // The client ends at the first `] "`: an IPv6 address (`[::1]:6379`) has brackets of its own.
    let end = rest.windows(3).position(|w| w == b"] \"").ok_or_else(bad)?;
    let at = line.len() - rest.len() + end + 2;
    Ok((ts_us, &rest[..end], at))
}

/// One quoted argument: where its escaped bytes are, their unescaped length, where the next
/// argument starts.
struct Arg {
    start: usize,
    end: usize,
    len: u32,
    next: usize,
}

impl Arg {
    fn decode(&self, line: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len as usize);
        self.decode_into(line, &mut out);
        out
    }

    /// Appends the unescaped bytes (the argument was checked by [`arg_at`]).
    fn decode_into(&self, line: &[u8], out: &mut Vec<u8>) {
        let mut i = self.start;
        while i < self.end {
            let (byte, width) = match line[i] {
                b'\\' => escape(&line[i..self.end]).unwrap_or((b'\\', 1)),
                b => (b, 1),
            };
            out.push(byte);
            i += width;
        }
    }
}

/// The quoted argument at `at` (a `"`), or `None` at the end of the line.
fn arg_at(line: &[u8], at: usize) -> Result<Option<Arg>, String> {
    if at >= line.len() {
        return Ok(None);
    }
    if line[at] != b'"' {
        return Err(format!("expected a quoted argument at byte {} (found {})", at + 1, show(&line[at..])));
    }
    let (start, mut i, mut len) = (at + 1, at + 1, 0u32);
    loop {
        match line.get(i) {
            None => return Err(format!("unterminated quote: the argument at byte {} has no closing `\"`", at + 1)),
            Some(b'"') => break,
            Some(b'\\') => {
                let (_, width) = escape(&line[i..]).ok_or_else(|| {
                    format!("bad escape {} at byte {} (allowed: \\xHH \\\" \\\\ \\n \\r \\t \\a \\b)", show(&line[i..line.len().min(i + 4)]), i + 1)
                })?;
                i += width;
            }
            Some(_) => i += 1,
        }
        len += 1;
    }
    let next = match line.get(i + 1) {
        None => line.len(),
        Some(b' ') if i + 2 < line.len() => i + 2,
        Some(_) => return Err(format!("expected a space and a quoted argument at byte {} (found {})", i + 2, show(&line[i + 1..]))),
    };
    Ok(Some(Arg { start, end: i, len, next }))
}

/// An escape at the start of `b` (a `\`): its byte and width.
fn escape(b: &[u8]) -> Option<(u8, usize)> {
    let byte = match *b.get(1)? {
        b'x' => {
            let hex = std::str::from_utf8(b.get(2..4)?).ok()?;
            let byte = u8::from_str_radix(hex, 16).ok().filter(|_| hex.bytes().all(|h| h.is_ascii_hexdigit()))?;
            return Some((byte, 4));
        }
        b'"' => b'"',
        b'\\' => b'\\',
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'a' => 0x07,
        b'b' => 0x08,
        _ => return None,
    };
    Some((byte, 2))
}

/// How many arguments follow `at`, every one checked.
fn count_args(line: &[u8], mut at: usize) -> Result<usize, String> {
    let mut n = 0;
    while let Some(arg) = arg_at(line, at)? {
        n += 1;
        at = arg.next;
    }
    Ok(n)
}

impl Iterator for MonitorReader {
    type Item = Result<TraceOp, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_of_request() {
                Ok(Some(op)) => return Some(Ok(op)),
                Ok(None) => {}
                Err(what) => return Some(Err(self.text.fail(what))),
            }
            match self.text.advance() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
            if self.text.is_ok_line() {
                continue;
            }
            if let Err(what) = self.start() {
                return Some(Err(self.text.fail(what)));
            }
        }
    }
}

impl Reader for MonitorReader {
    fn format(&self) -> Format {
        Format::RedisMonitor
    }
    fn skipped(&self) -> &BTreeMap<String, u64> {
        &self.text.skipped
    }
    fn bytes_read(&self) -> u64 {
        self.text.src.bytes_read()
    }
    fn hash(&self) -> Option<u64> {
        self.text.hash()
    }
}
