//! The cache-trace CSV format of Twitter's published traces (OSDI '20): one request a line,
//! `timestamp,anonymized key,key size,value size,client id,operation,TTL`, the timestamp in
//! whole seconds.
//!
//! This file also holds the line rules the three text readers share ([`Text`]: lines, a last
//! line cut short, skipped names; numbers; the optional `OK` first line of the two captures).

use std::collections::BTreeMap;

use crate::lines::{Clients, Source, MAX_CLIENTS};
use crate::{Format, Kind, Reader, TraceError, TraceOp};

/// The fields of a line, in order, as errors name them.
const FIELDS: [&str; 7] = ["timestamp", "key", "key size", "value size", "client id", "operation", "TTL"];
const MAX_KEY_SIZE: u64 = 65535;
const MAX_VALUE_SIZE: u64 = 1 << 31;
/// The longest operation name kept; longer is not a name (garbage, or another format).
const MAX_OP_NAME: usize = 32;

/// Whether a trace's first bytes look like this format: its first line (possibly cut) is
/// `DIGITS,KEY,DIGITS,DIGITS,CLIENT,NAME,DIGITS`.
pub fn looks_like(head: &[u8]) -> bool {
    let (line, complete) = match head.iter().position(|&b| b == b'\n') {
        Some(i) => (head[..i].strip_suffix(b"\r").unwrap_or(&head[..i]), true),
        None => (head, false),
    };
    let fields: Vec<&[u8]> = line.split(|&b| b == b',').collect();
    let numeric = [0, 2, 3, 6];
    // A cut line's last field may be cut too: only the fields before it are judged.
    let judged = if complete { fields.len() } else { fields.len() - 1 };
    fields.len() >= 2
        && fields.len() <= 7
        && (!complete || fields.len() == 7)
        && line.iter().all(|&b| b >= b' ' && b != 0x7f)
        && numeric.iter().filter(|&&i| i < judged).all(|&i| number(fields[i]).is_some())
}

/// Reads a cache-trace CSV file.
pub struct CacheCsvReader {
    text: Text,
    clients: Clients,
}

impl CacheCsvReader {
    pub fn new(src: Source) -> CacheCsvReader {
        CacheCsvReader { text: Text::new(src), clients: Clients::default() }
    }

    /// The op of the current line; `Ok(None)` when it is skipped.
    fn parse(&mut self) -> Result<Option<TraceOp>, String> {
        let line = &self.text.line;
        let count = line.iter().filter(|&&b| b == b',').count() + 1;
        if count != FIELDS.len() {
            return Err(format!("expected 7 comma-separated fields `{}` (found {count})", FIELDS.join(",")));
        }
        let f: Vec<&[u8]> = line.split(|&b| b == b',').collect();
        let secs = field(&f, 0, 0, u64::MAX / 1_000_000)?;
        let key_size = field(&f, 2, 0, MAX_KEY_SIZE)? as usize;
        let value_size = field(&f, 3, 0, MAX_VALUE_SIZE)? as u32;
        field(&f, 6, 0, u64::MAX)?;
        let Some(kind) = operation(f[5])? else {
            let name = String::from_utf8_lossy(f[5]).to_ascii_lowercase();
            self.text.skip(&name);
            return Ok(None);
        };
        let client = client(&mut self.clients, f[4])?;
        let mut key = Vec::with_capacity(key_size.max(f[1].len()));
        key.extend_from_slice(f[1]);
        // The anonymized key may be shorter than the recorded one: the size is what a replay
        // stores, so it is kept.
        key.resize(key_size.max(f[1].len()), b'.');
        let value_size = match kind {
            Kind::Put => Some(value_size),
            Kind::Get if value_size > 0 => Some(value_size),
            _ => None,
        };
        Ok(Some(TraceOp { ts_us: secs * 1_000_000, client, kind, key, value_size, scan_len: None, joined: false }))
    }
}

/// Field `index` (0-based) as a number in `min..=max`.
fn field(fields: &[&[u8]], index: usize, min: u64, max: u64) -> Result<u64, String> {
    let bad = |why: &str| {
        format!("field {} ({}): {} {why} (allowed: {min} to {max})", index + 1, FIELDS[index], show(fields[index]))
    };
    let n = number(fields[index]).ok_or_else(|| bad("is not a number"))?;
    if n < min || n > max {
        return Err(bad("is out of range"));
    }
    Ok(n)
}

/// What an operation name replays as; `None` for the ones a replay skips.
fn operation(name: &[u8]) -> Result<Option<Kind>, String> {
    const NAMES: [(&str, Option<Kind>); 11] = [
        ("get", Some(Kind::Get)),
        ("gets", Some(Kind::Get)),
        ("set", Some(Kind::Put)),
        ("add", Some(Kind::Put)),
        ("replace", Some(Kind::Put)),
        ("cas", Some(Kind::Put)),
        ("append", Some(Kind::Put)),
        ("prepend", Some(Kind::Put)),
        ("delete", Some(Kind::Delete)),
        ("incr", None),
        ("decr", None),
    ];
    if let Some((_, kind)) = NAMES.iter().find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name)) {
        return Ok(*kind);
    }
    // Any other word is an operation the replay skips; bytes that are no word are an error.
    if name.is_empty() || name.len() > MAX_OP_NAME || !name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
        let names: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "field 6 (operation): {} is not an operation name (allowed: {}, or another word of at most {MAX_OP_NAME} letters)",
            show(name),
            names.join(", ")
        ));
    }
    Ok(None)
}

impl Iterator for CacheCsvReader {
    type Item = Result<TraceOp, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.text.advance() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
            match self.parse() {
                Ok(Some(op)) => return Some(Ok(op)),
                Ok(None) => {}
                Err(what) => return Some(Err(self.text.fail(what))),
            }
        }
    }
}

impl Reader for CacheCsvReader {
    fn format(&self) -> Format {
        Format::CacheCsv
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

// ---- The rules every text reader follows (redis, memcached, this one). ----

/// Most distinct names `skipped` keeps; the rest are counted together, so hostile input cannot
/// grow the map without bound.
const MAX_SKIPPED_NAMES: usize = 1000;
const OTHER: &str = "(other names)";

/// A text trace read a line at a time: blank lines passed over, a failure or the end final.
pub(crate) struct Text {
    pub(crate) src: Source,
    /// The current line, without its line end.
    pub(crate) line: Vec<u8>,
    pub(crate) skipped: BTreeMap<String, u64>,
    /// Nothing more is read: the end was reached or an error returned.
    done: bool,
    ended: bool,
    /// The current line ended with a newline (a last line without one may be cut short).
    whole: bool,
}

impl Text {
    pub(crate) fn new(src: Source) -> Text {
        Text { src, line: Vec::new(), skipped: BTreeMap::new(), done: false, ended: false, whole: true }
    }

    /// The next non-blank line into `line`: `Ok(false)` at the end, and forever after an error.
    pub(crate) fn advance(&mut self) -> Result<bool, TraceError> {
        while !self.done {
            let before = self.src.bytes_read();
            match self.src.line(&mut self.line) {
                Ok(true) => {
                    // Source strips the line end: fewer bytes stripped than read means there was one.
                    self.whole = self.src.bytes_read() - before > self.line.len() as u64;
                    if !self.line.is_empty() {
                        return Ok(true);
                    }
                }
                Ok(false) => (self.done, self.ended) = (true, true),
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        Ok(false)
    }

    /// Whether the current line is an `OK` first line (the reply to MONITOR or watch).
    pub(crate) fn is_ok_line(&self) -> bool {
        self.src.line_number() == 1 && self.line == b"OK"
    }

    /// The error for the current line; nothing more is read after it.
    pub(crate) fn fail(&mut self, what: impl Into<String>) -> TraceError {
        self.done = true;
        let mut what = what.into();
        if !self.whole {
            what.push_str(" (the last line has no newline: was the capture cut short?)");
        }
        self.src.at_line(what)
    }

    /// Counts one skipped operation by name.
    pub(crate) fn skip(&mut self, name: &str) {
        self.skip_n(name, 1);
    }

    pub(crate) fn skip_n(&mut self, name: &str, times: u64) {
        let known = self.skipped.contains_key(name) || self.skipped.len() < MAX_SKIPPED_NAMES;
        let name = if known { name } else { OTHER };
        let count = self.skipped.entry(name.to_string()).or_insert(0);
        *count = count.saturating_add(times);
    }

    /// The trace's hash once every byte was read.
    pub(crate) fn hash(&self) -> Option<u64> {
        self.ended.then(|| self.src.hash())
    }
}

/// A decimal number of ASCII digits only (no sign, no space), without overflow.
pub(crate) fn number(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    bytes.iter().try_fold(0u64, |n, &d| {
        if d.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        } else {
            None
        }
    })
}

/// How many ASCII digits `bytes` starts with.
pub(crate) fn digits(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|d| d.is_ascii_digit()).count()
}

/// `secs` seconds and `micros` microseconds since the epoch, in microseconds.
pub(crate) fn epoch_us(secs: &[u8], micros: u64) -> Option<u64> {
    number(secs)?.checked_mul(1_000_000)?.checked_add(micros)
}

/// A capture's head past its optional `OK` first line.
pub(crate) fn past_ok_line(head: &[u8]) -> &[u8] {
    head.strip_prefix(b"OK\r\n").or_else(|| head.strip_prefix(b"OK\n")).unwrap_or(head)
}

/// The client numbered by its name.
pub(crate) fn client(clients: &mut Clients, name: &[u8]) -> Result<u32, String> {
    clients.id(name).ok_or_else(|| format!("more than {MAX_CLIENTS} clients (allowed: at most {MAX_CLIENTS})"))
}

/// Bytes of a trace as an error shows them: quoted, escaped, at most 64 bytes.
pub(crate) fn show(bytes: &[u8]) -> String {
    const MAX: usize = 64;
    let cut = bytes.len() > MAX;
    let text: String = bytes[..bytes.len().min(MAX)].escape_ascii().to_string();
    format!("\"{text}\"{}", if cut { "..." } else { "" })
}

/// What the readers' tests share: files, FIFOs, and reading a whole stream.
#[cfg(test)]
pub(crate) mod testing {
    use std::io::Write;
    use std::path::{Path, PathBuf};

    use crate::lines::Source;
    use crate::{Reader, TraceError, TraceOp};

    pub(crate) fn file(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    pub(crate) fn source(path: &Path) -> Source {
        Source::open(path).unwrap()
    }

    /// Every op up to the end or the first error (and checks nothing follows an error).
    pub(crate) fn read_all(reader: &mut dyn Reader) -> (Vec<TraceOp>, Option<TraceError>) {
        let mut ops = Vec::new();
        while let Some(item) = reader.next() {
            match item {
                Ok(op) => ops.push(op),
                Err(e) => {
                    assert!(reader.next().is_none(), "nothing after an error");
                    assert_eq!(reader.hash(), None, "no hash after an error");
                    return (ops, Some(e));
                }
            }
        }
        (ops, None)
    }

    /// A FIFO in a fresh directory, fed `bytes` by a thread: the first 4 KiB in one write (so
    /// the format can be told from the head; a pipe write of 4 KiB is atomic), the rest in
    /// small writes.
    pub(crate) fn fifo(bytes: Vec<u8>) -> (tempfile::TempDir, PathBuf, std::thread::JoinHandle<()>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(made.success());
        let p = path.clone();
        let feeder = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            let (head, rest) = bytes.split_at(bytes.len().min(4096));
            for chunk in std::iter::once(head).chain(rest.chunks(7)) {
                // The reader may stop early (an error): a closed pipe ends the feeding.
                if f.write_all(chunk).is_err() {
                    return;
                }
            }
        });
        (dir, path, feeder)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{fifo, file, read_all, source};
    use super::*;
    use crate::Place;

    fn read(bytes: &[u8]) -> (Vec<TraceOp>, Option<TraceError>, BTreeMap<String, u64>) {
        let f = file(bytes);
        let mut r = CacheCsvReader::new(source(f.path()));
        let (ops, err) = read_all(&mut r);
        if err.is_none() {
            assert_eq!(r.hash(), Some(xxhash_rust::xxh3::xxh3_64(bytes)));
            assert_eq!(r.bytes_read(), bytes.len() as u64);
        }
        (ops, err, r.skipped().clone())
    }

    fn error(bytes: &[u8]) -> TraceError {
        read(bytes).1.expect("an error")
    }

    #[test]
    fn every_operation_maps_to_its_kind_and_others_are_skipped_by_name() {
        let trace = b"10,k1,2,100,7,get,0\n10,k2,2,0,7,gets,0\n11,k3,2,5,8,set,60\n11,k,1,6,8,add,0\n\
                      12,k,1,7,8,replace,0\n12,k,1,8,8,cas,0\n12,k,1,9,8,append,0\n12,k,1,10,8,prepend,0\n\
                      13,k,1,0,7,delete,0\n13,k,1,0,7,incr,0\n13,k,1,0,7,decr,0\n13,k,1,0,7,INCR,0\n13,k,1,0,7,touch,0\n";
        let (ops, err, skipped) = read(trace);
        assert!(err.is_none(), "{err:?}");
        let kinds: Vec<Kind> = ops.iter().map(|o| o.kind).collect();
        use Kind::*;
        assert_eq!(kinds, [Get, Get, Put, Put, Put, Put, Put, Put, Delete]);
        assert_eq!(
            ops[0],
            TraceOp {
                ts_us: 10_000_000,
                client: 0,
                kind: Get,
                key: b"k1".to_vec(),
                value_size: Some(100),
                scan_len: None,
                joined: false
            }
        );
        assert_eq!(ops[1].value_size, None, "a get of value size 0 does not say");
        assert_eq!((ops[2].client, ops[2].value_size, ops[2].ts_us), (1, Some(5), 11_000_000));
        assert_eq!(ops[8].value_size, None);
        let want: BTreeMap<String, u64> =
            [("decr".to_string(), 1), ("incr".to_string(), 2), ("touch".to_string(), 1)].into();
        assert_eq!(skipped, want);
    }

    #[test]
    fn a_key_shorter_than_its_size_is_padded_and_a_longer_one_kept() {
        let (ops, err, _) = read(b"0,abc,6,1,1,set,0\n0,abcdef,2,1,1,set,0\n0,,3,1,1,get,0\n");
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops[0].key, b"abc...");
        assert_eq!(ops[1].key, b"abcdef");
        assert_eq!(ops[2].key, b"...");
    }

    #[test]
    fn bad_fields_are_errors_naming_line_and_field() {
        let e = error(b"0,k,1,1,1,get,0\n0,k,abc,1,1,get,0\n");
        assert_eq!(e.place, Place::Line(2));
        assert!(e.what.contains(r#"field 3 (key size): "abc" is not a number (allowed: 0 to 65535)"#), "{e}");
        let e = error(b"0,k,65536,1,1,get,0\n");
        assert!(e.what.contains("field 3 (key size): \"65536\" is out of range (allowed: 0 to 65535)"), "{e}");
        let e = error(b"0,k,1,2147483649,1,get,0\n");
        assert!(e.what.contains("field 4 (value size)") && e.what.contains("2147483648"), "{e}");
        let (ops, err, _) = read(b"0,k,1,2147483648,1,set,0\n");
        assert!(err.is_none() && ops[0].value_size == Some(1 << 31));
        let e = error(b"-1,k,1,1,1,get,0\n");
        assert!(e.what.contains("field 1 (timestamp)"), "{e}");
        let e = error(b"18446744073710,k,1,1,1,get,0\n");
        assert!(e.what.contains("field 1 (timestamp)") && e.what.contains("out of range"), "{e}");
        let e = error(b"0,k,1,1,1,get,x\n");
        assert!(e.what.contains("field 7 (TTL)"), "{e}");
        let e = error(b"0,k,1,1,1,g\x00t,0\n");
        assert!(e.what.contains("field 6 (operation)") && e.what.contains("\\x00"), "{e}");
    }

    #[test]
    fn a_wrong_field_count_is_an_error() {
        let e = error(b"0,k,1,1,1,get\n");
        assert_eq!(e.place, Place::Line(1));
        assert!(e.what.contains("expected 7 comma-separated fields") && e.what.contains("found 6"), "{e}");
        let e = error(b"0,k,1,1,1,get,0,extra\n");
        assert!(e.what.contains("found 8"), "{e}");
    }

    #[test]
    fn garbage_and_zeros_are_errors_not_panics() {
        for bytes in [&b"\x00\x00\x00\x00"[..], b"\xff\xfe,\x80\n", b",,,,,,\n", b"\n\n,\n"] {
            let (_, err, _) = read(bytes);
            assert!(err.is_some(), "{bytes:?}");
        }
        let (ops, err, _) = read(b"\n\n");
        assert!(ops.is_empty() && err.is_none(), "blank lines are passed over");
    }

    #[test]
    fn a_last_line_without_newline_is_read_when_complete_and_an_error_when_cut() {
        let (ops, err, _) = read(b"0,k,1,1,1,get,0\n1,k,1,1,1,set,0");
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops.len(), 2);
        let e = error(b"0,k,1,1,1,get,0\n1,k,1,1,1,se");
        assert_eq!(e.place, Place::Line(2));
        assert!(e.what.contains("cut short"), "{e}");
    }

    #[test]
    fn a_fifo_is_read_once_as_it_comes() {
        let mut bytes = Vec::new();
        for i in 0..500 {
            bytes.extend_from_slice(format!("{i},key{i},8,{i},{},get,0\n", i % 3).as_bytes());
        }
        let (_dir, path, feeder) = fifo(bytes.clone());
        let mut r = crate::open(&path, None).unwrap();
        assert_eq!(r.format(), Format::CacheCsv);
        let (ops, err) = read_all(r.as_mut());
        feeder.join().unwrap();
        assert!(err.is_none(), "{err:?}");
        assert_eq!(ops.len(), 500);
        assert_eq!(ops[499].key, b"key499..");
        assert_eq!(r.hash(), Some(xxhash_rust::xxh3::xxh3_64(&bytes)));
    }

    #[test]
    fn looks_like_claims_csv_lines_only() {
        assert!(looks_like(b"0,abc,3,10,1,get,0\n1,abc,3,10,1,get,0\n"));
        assert!(looks_like(b"1234,abc,3,10,1,g"), "a line cut by the head");
        assert!(!looks_like(b"0,abc,3,10,1,get\n"), "6 fields");
        assert!(!looks_like(b"x,abc,3,10,1,get,0\n"));
        assert!(!looks_like(b"OK\n1795843163.188319 [0 unix:/r.sock] \"SET\" \"a,b\" \"c\"\n"));
        assert!(!looks_like(b"1795843163.188319 [0 127.0.0.1:5000] \"SET\" \"a,b,c,d,e,f\" \"c\"\n"));
        assert!(!looks_like(b"ts=1795842460.247209 gid=403 type=item_get key=k1,a,b status=not_found\n"));
        assert!(!looks_like(b"\x00\x00\x00\x00\x00\x00\x00\x00"));
        assert!(!looks_like(b""));
    }

    #[test]
    fn skipped_names_are_bounded() {
        let mut t = Text::new(source(file(b"").path()));
        for i in 0..MAX_SKIPPED_NAMES + 10 {
            t.skip(&format!("op{i}"));
        }
        assert_eq!(t.skipped.len(), MAX_SKIPPED_NAMES + 1);
        assert_eq!(t.skipped[OTHER], 10);
    }
}
