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
                let (_, width) = escape(&line[i..]).ok_or_else(|| bad_escape(line, i))?;
                i += width;
            }
            Some(_) => i += 1,
        }
        len += 1;
    }
    let next = match line.get(i + 1) {
        None => line.len(),
        Some(b' ') if i + 2 < line.len() => i + 2,
        Some(_) => {
            return Err(format!(
                "expected a space and a quoted argument at byte {} (found {})",
                i + 2,
                show(&line[i + 1..])
            ))
        }
    };
    Ok(Some(Arg { start, end: i, len, next }))
}

fn bad_escape(line: &[u8], at: usize) -> String {
    let shown = if line.get(at + 1) == Some(&b'x') { 4 } else { 2 };
    let shown = show(&line[at..line.len().min(at + shown)]);
    format!("bad escape {shown} at byte {} (allowed: \\xHH \\\" \\\\ \\n \\r \\t \\a \\b)", at + 1)
}

/// An escape at the start of `bytes` (a `\`): its byte and width.
fn escape(bytes: &[u8]) -> Option<(u8, usize)> {
    let byte = match *bytes.get(1)? {
        b'x' => {
            let hex = std::str::from_utf8(bytes.get(2..4)?).ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::testing::{fifo, file, read_all, source};
    use crate::Place;

    const SOCK: &str = "1795843163.188319 [0 unix:/tmp/r.sock]";

    fn read(bytes: &[u8]) -> (Vec<TraceOp>, Option<TraceError>, BTreeMap<String, u64>) {
        let f = file(bytes);
        let mut r = MonitorReader::new(source(f.path()));
        let (ops, err) = read_all(&mut r);
        if err.is_none() {
            assert_eq!(r.hash(), Some(xxhash_rust::xxh3::xxh3_64(bytes)));
        }
        (ops, err, r.skipped().clone())
    }

    fn lines(commands: &[&str]) -> Vec<u8> {
        let mut out = b"OK\n".to_vec();
        for c in commands {
            out.extend_from_slice(format!("{SOCK} {c}\n").as_bytes());
        }
        out
    }

    fn ops(commands: &[&str]) -> Vec<TraceOp> {
        let (ops, err, _) = read(&lines(commands));
        assert!(err.is_none(), "{err:?}");
        ops
    }

    fn error(bytes: &[u8]) -> TraceError {
        read(bytes).1.expect("an error")
    }

    fn summary(ops: &[TraceOp]) -> Vec<(Kind, String, Option<u32>, bool)> {
        ops.iter().map(|o| (o.kind, String::from_utf8_lossy(&o.key).into_owned(), o.value_size, o.joined)).collect()
    }

    #[test]
    fn reads_and_writes_map_to_ops_with_time_and_client() {
        // Lines as Redis 7.0 wrote them (the lua client's commands come from an EVAL).
        let trace = b"OK\n1795843163.188319 [0 unix:/tmp/rdx/r.sock] \"SET\" \"key:000000000006\" \"VXK\"\n\
                      1795843163.199806 [0 lua] \"set\" \"lk\" \"v\"\n\
                      1795843163.199819 [3 127.0.0.1:52110] \"get\" \"lk\"\n\
                      1795843163.200000 [0 [::1]:6379] \"GETEX\" \"lk\" \"EX\" \"10\"\n";
        let (ops, err, _) = read(trace);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            ops[0],
            TraceOp {
                ts_us: 1_795_843_163_188_319,
                client: 0,
                kind: Kind::Put,
                key: b"key:000000000006".to_vec(),
                value_size: Some(3),
                scan_len: None,
                joined: false
            }
        );
        let clients: Vec<u32> = ops.iter().map(|o| o.client).collect();
        assert_eq!(clients, [0, 1, 2, 3]);
        assert_eq!(summary(&ops[2..]), [(Kind::Get, "lk".into(), None, false), (Kind::Get, "lk".into(), None, false)]);
    }

    #[test]
    fn every_set_form_gives_the_value_size() {
        let ops = ops(&[
            r#""SET" "a" "12345" "EX" "10""#,
            r#""SETNX" "b" "12""#,
            r#""SETEX" "c" "100" "1234""#,
            r#""PSETEX" "d" "100" """#,
        ]);
        let sizes: Vec<(String, Option<u32>)> =
            ops.iter().map(|o| (String::from_utf8_lossy(&o.key).into_owned(), o.value_size)).collect();
        assert_eq!(sizes, [("a".into(), Some(5)), ("b".into(), Some(2)), ("c".into(), Some(4)), ("d".into(), Some(0))]);
    }

    #[test]
    fn requests_on_several_keys_are_joined_ops() {
        let ops = ops(&[
            r#""MGET" "a" "b""#,
            r#""MSET" "a" "1" "b" "22" "c" "333""#,
            r#""DEL" "a" "b""#,
            r#""UNLINK" "c""#,
            r#""EXISTS" "a" "c""#,
        ]);
        use Kind::*;
        let want: Vec<(Kind, String, Option<u32>, bool)> = vec![
            (Get, "a".into(), None, false),
            (Get, "b".into(), None, true),
            (Put, "a".into(), Some(1), false),
            (Put, "b".into(), Some(2), true),
            (Put, "c".into(), Some(3), true),
            (Delete, "a".into(), None, false),
            (Delete, "b".into(), None, true),
            (Delete, "c".into(), None, false),
            (Get, "a".into(), None, false),
            (Get, "c".into(), None, true),
        ];
        assert_eq!(summary(&ops), want);
    }

    #[test]
    fn other_commands_are_skipped_by_upper_case_name() {
        let (ops, err, skipped) = read(&lines(&[
            r#""PING""#,
            r#""config" "get" "save""#,
            r#""INCR" "n""#,
            r#""GETDEL" "a""#,
            r#""SCAN" "0""#,
            r#""ping""#,
        ]));
        assert!(err.is_none() && ops.is_empty(), "{err:?}");
        let want: BTreeMap<String, u64> = [("CONFIG", 1), ("GETDEL", 1), ("INCR", 1), ("PING", 2), ("SCAN", 1)]
            .map(|(k, v)| (k.to_string(), v))
            .into();
        assert_eq!(skipped, want);
    }

    #[test]
    fn escapes_are_undone_in_keys_and_counted_in_value_sizes() {
        // As Redis 7.0 printed `SET 'a"b\c' $'x\ny\x01\xffé '`.
        let ops = ops(&[r#""set" "a\"b\\c" "x\ny\x01\xff\xc3\xa9 ""#, r#""SET" "\t\r\a\b\x00" "\"\"""#]);
        assert_eq!(ops[0].key, b"a\"b\\c");
        assert_eq!(ops[0].value_size, Some(8));
        assert_eq!(ops[1].key, b"\t\r\x07\x08\x00");
        assert_eq!(ops[1].value_size, Some(2));
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_line() {
        let cases: [(&str, &str); 10] = [
            ("hello", "expected `EPOCH.MICROS [DB CLIENT] \"CMD\""),
            ("1795843163 [0 lua] \"GET\" \"a\"", "expected `EPOCH.MICROS"),
            ("1795843163.1234567 [0 lua] \"GET\" \"a\"", "expected `EPOCH.MICROS"),
            ("1795843163.123456 [lua] \"GET\" \"a\"", "expected `EPOCH.MICROS"),
            ("1795843163.123456 [0 lua]", "expected `EPOCH.MICROS"),
            ("1795843163.123456 [0 lua] \"GET\" \"a", "unterminated quote"),
            ("1795843163.123456 [0 lua] \"GET\" \"a\\q\"", r#"bad escape "\\q" at byte 35"#),
            ("1795843163.123456 [0 lua] \"GET\" \"a\\x4g\"", r#"bad escape "\\x4g""#),
            ("1795843163.123456 [0 lua] \"GET\"  \"a\"", "expected a quoted argument at byte 33"),
            ("1795843163.123456 [0 lua] \"GET\"x", "expected a space and a quoted argument"),
        ];
        for (line, want) in cases {
            let e = error(format!("OK\n{SOCK} \"PING\"\n{line}\n").as_bytes());
            assert_eq!(e.place, Place::Line(3), "{line}");
            assert!(e.what.contains(want), "{line}: {e}");
        }
        for (cmd, want) in [
            (r#""MSET" "a" "1" "b""#, "MSET needs KEY VALUE pairs (found 3 arguments)"),
            (r#""SET" "a""#, "SET needs at least 2 arguments (found 1)"),
            (r#""SETEX" "a" "1""#, "SETEX needs at least 3 arguments"),
            (r#""GET""#, "GET needs at least 1 arguments (found 0)"),
        ] {
            let e = error(&lines(&[cmd]));
            assert_eq!(e.place, Place::Line(2));
            assert!(e.what.contains(want), "{cmd}: {e}");
        }
        let e = error(b"1795843163.123456 [0 lua] \"GET\" \"a\"\nOK\n");
        assert_eq!(e.place, Place::Line(2), "OK is only a first line");
    }

    #[test]
    fn an_error_in_a_request_comes_before_any_of_its_ops() {
        let (ops, err, _) = read(&lines(&[r#""GET" "x""#, r#""MSET" "a" "1" "b" "\q""#]));
        assert_eq!(ops.len(), 1);
        assert!(err.unwrap().what.contains("bad escape"));
    }

    #[test]
    fn garbage_and_zeros_are_errors_not_panics() {
        for bytes in
            [&b"\x00\x00\x00\x00\x00"[..], b"\xff\xfe\x80\n", b"1.1 [\n", b"1.1 [0 \"] \"\n", b"1.1 [0 x] \"\\"]
        {
            let (_, err, _) = read(bytes);
            assert!(err.is_some(), "{bytes:?}");
        }
    }

    #[test]
    fn a_last_line_without_newline_is_read_when_complete_and_an_error_when_cut() {
        let mut bytes = lines(&[r#""GET" "a""#]);
        bytes.extend_from_slice(format!("{SOCK} \"SET\" \"b\" \"12\"").as_bytes());
        let (ops, err, _) = read(&bytes);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops.len(), 2);
        bytes.truncate(bytes.len() - 2);
        let e = error(&bytes);
        assert_eq!(e.place, Place::Line(3));
        assert!(e.what.contains("unterminated quote") && e.what.contains("cut short"), "{e}");
    }

    #[test]
    fn a_fifo_is_read_once_as_it_comes() {
        let commands: Vec<String> = (0..300).map(|i| format!(r#""MSET" "k{i}" "v" "j{i}" "vv""#)).collect();
        let bytes = lines(&commands.iter().map(String::as_str).collect::<Vec<_>>());
        let (_dir, path, feeder) = fifo(bytes.clone());
        let mut r = crate::open(&path, None).unwrap();
        assert_eq!(r.format(), Format::RedisMonitor);
        let (ops, err) = read_all(r.as_mut());
        feeder.join().unwrap();
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops.len(), 600);
        assert_eq!(r.hash(), Some(xxhash_rust::xxh3::xxh3_64(&bytes)));
    }

    #[test]
    #[ignore = "slow: 256 MiB through the unoptimised hash of a test build (about 6 s)"]
    fn a_line_longer_than_the_cap_is_an_error_naming_it() {
        // Fed through a FIFO: 256 MiB pass through memory once, nothing is written to disk.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        let p = path.clone();
        let feeder = std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            let _ = f.write_all(format!("{SOCK} \"GET\" \"a\"\n{SOCK} \"SET\" \"k\" \"").as_bytes());
            let chunk = vec![b'a'; 1 << 20];
            for _ in 0..=crate::lines::MAX_LINE / chunk.len() {
                if f.write_all(&chunk).is_err() {
                    return; // the reader stopped at the cap
                }
            }
        });
        let mut r = MonitorReader::new(source(&path));
        let (ops, err) = read_all(&mut r);
        drop(r);
        feeder.join().unwrap();
        assert_eq!(ops.len(), 1);
        let e = err.unwrap();
        assert_eq!(e.place, Place::Line(2));
        assert!(e.what.contains("line longer than"), "{e}");
    }

    #[test]
    fn looks_like_claims_monitor_lines_only() {
        assert!(looks_like(b"OK\n1795843163.188319 [0 unix:/tmp/r.sock] \"SET\" \"a\" \"b\"\n"));
        assert!(looks_like(b"OK\r\n1795843163.188319 [0 lua] \"G"));
        assert!(looks_like(b"1795843163.188319 [0 127.0.0.1:5000] \"PING\"\n"));
        assert!(!looks_like(b"OK\n"));
        assert!(!looks_like(b"OK\nts=1795842460.247209 gid=403 type=item_get key=k1\n"));
        assert!(!looks_like(b"0,abc,3,10,1,get,0\n"));
        assert!(!looks_like(b"1795843163.5,abc,3,10,1,get,0\n"));
        assert!(!looks_like(b"\x00\x00\x00\x00\x00\x00\x00\x00"));
        assert!(!looks_like(b""));
    }
}
