//! RocksDB trace files, as `db_bench -trace_file` and `DB::StartTrace` write them.
//!
//! The file is a sequence of records: a fixed64 timestamp (µs), a type byte, a fixed32 payload
//! length, the payload (all little-endian). The first record is the header (type "trace begin",
//! a magic string and "Trace Version: M.N"); the last is the footer (type "trace end"). In a
//! version 0.2 trace each query payload starts with a fixed64 *payload map*, one bit per field
//! present, the fields following in bit order; version 0.1 payloads have fixed fields.
//!
//! Mapping: a Get is a [`Kind::Get`]; a Write (a WriteBatch) is one op per Put
//! ([`Kind::Put`], with the value's length) and per Delete or SingleDelete ([`Kind::Delete`]);
//! a MultiGet is one Get per key; an IteratorSeek or IteratorSeekForPrev is one [`Kind::Scan`]
//! at the seek key, `scan_len` unknown (the trace records the seek, not the `Next` calls). The
//! later ops of one batch or MultiGet are `joined`. Column families are not told apart: every
//! key is in one key space. Other records (block-cache and IO trace records, Merge and
//! DeleteRange in a batch, ...) are counted in [`Reader::skipped`] by name.
//!
//! A trace without its footer (cut at a record boundary, as when db_bench is killed) is read as
//! complete: what precedes the cut is a valid trace. A file ending inside a record is an error.
//! Memory stays bounded: a record's payload is read as it arrives, never beyond
//! [`MAX_PAYLOAD`], and ops are decoded from it one at a time.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::lines::Source;
use crate::{Format, Kind, Place, Reader, TraceError, TraceOp};

/// The largest record payload read: one request (a write batch) rarely exceeds a few MiB; a
/// larger length is taken as garbage, as a FIFO's remaining size cannot be known.
pub const MAX_PAYLOAD: u32 = 1 << 30;

/// The largest header payload (RocksDB's is about a hundred bytes).
const MAX_HEADER: u32 = 64 << 10;

/// Timestamp, type byte, payload length.
const RECORD_HEAD: usize = 13;

const MAGIC: &[u8] = b"feedcafedeadbeef";
const VERSION_TAG: &[u8] = b"Trace Version: ";

/// Bytes read from a FIFO in one go while a payload arrives.
const CHUNK: usize = 1 << 16;

const BEGIN: u8 = 1;
const END: u8 = 2;
const WRITE: u8 = 3;
const GET: u8 = 4;
const SEEK: u8 = 5;
const SEEK_FOR_PREV: u8 = 6;
const MULTI_GET: u8 = 13;

/// The record types RocksDB defines, by their `TraceType` value.
const TYPE_NAMES: [&str; 14] = [
    "TraceNone",
    "TraceBegin",
    "TraceEnd",
    "Write",
    "Get",
    "IteratorSeek",
    "IteratorSeekForPrev",
    "BlockTraceIndexBlock",
    "BlockTraceFilterBlock",
    "BlockTraceDataBlock",
    "BlockTraceUncompressionDictBlock",
    "BlockTraceRangeDeletionBlock",
    "IOTracer",
    "MultiGet",
];

/// Whether a trace's first bytes look like a RocksDB trace header record.
pub fn looks_like(head: &[u8]) -> bool {
    if head.len() < RECORD_HEAD || head[8] != BEGIN {
        return false;
    }
    let len = u32::from_le_bytes([head[9], head[10], head[11], head[12]]) as usize;
    let payload = &head[RECORD_HEAD..head.len().min(RECORD_HEAD.saturating_add(len))];
    payload.windows(VERSION_TAG.len()).any(|w| w == VERSION_TAG)
}

/// Ops still to be taken from the current record's payload.
enum Pending {
    Idle,
    /// A Get or a seek, its key at this range of the payload.
    One(Kind, Range<usize>),
    /// WriteBatch records from `pos` to `end`.
    Batch {
        pos: usize,
        end: usize,
    },
    /// `left` length-prefixed keys from `pos` to `end`.
    MultiGet {
        pos: usize,
        end: usize,
        left: u32,
    },
}

pub struct RocksdbReader {
    src: Source,
    skipped: BTreeMap<String, u64>,
    /// The trace version as RocksDB numbers it (0.2 is 2); `None` before the header is read.
    version: Option<u32>,
    payload: Vec<u8>,
    /// Byte offset of the current payload in the file (for errors inside it).
    payload_at: u64,
    ts: u64,
    pending: Pending,
    /// Whether the current record has given an op already (the next ones are `joined`).
    emitted: bool,
    ended: bool,
}

impl RocksdbReader {
    pub fn new(src: Source) -> RocksdbReader {
        RocksdbReader {
            src,
            skipped: BTreeMap::new(),
            version: None,
            payload: Vec::new(),
            payload_at: 0,
            ts: 0,
            pending: Pending::Idle,
            emitted: false,
            ended: false,
        }
    }

    fn step(&mut self) -> Result<Option<TraceOp>, TraceError> {
        loop {
            if let Some(op) = self.take_pending()? {
                return Ok(Some(op));
            }
            if !self.read_record()? {
                return Ok(None);
            }
        }
    }

    /// Reads the next record and sets what it holds pending; `false` at the end of the trace.
    fn read_record(&mut self) -> Result<bool, TraceError> {
        let at = self.src.bytes_read();
        let mut head = [0u8; RECORD_HEAD];
        if !self.src.exact(&mut head, "a record's timestamp, type and length")? {
            if self.version.is_none() {
                return Err(TraceError::new(self.src.path(), Place::File, "the trace is empty: no header record"));
            }
            return Ok(false);
        }
        let ts = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
        let ty = head[8];
        let len = u32::from_le_bytes(head[9..].try_into().unwrap_or_default());
        let name = type_name(ty).ok_or_else(|| self.error(at, unknown_type(ty)))?;
        if self.version.is_none() {
            return self.read_header(at, ty, len).map(|()| true);
        }
        if len > MAX_PAYLOAD {
            return Err(self.error(at, too_long(name, len)));
        }
        self.ts = ts;
        self.emitted = false;
        match ty {
            BEGIN => Err(self.error(at, "a second header record (allowed: one, at the start)")),
            END => self.read_footer(at, len),
            WRITE | GET | SEEK | SEEK_FOR_PREV | MULTI_GET => {
                self.read_payload(at, len, name, true)?;
                self.pending = self.decode(ty).map_err(|b| self.bad(b, name))?;
                Ok(true)
            }
            _ => {
                self.read_payload(at, len, name, false)?;
                *self.skipped.entry(name.to_string()).or_default() += 1;
                Ok(true)
            }
        }
    }

    fn read_header(&mut self, at: u64, ty: u8, len: u32) -> Result<(), TraceError> {
        if ty != BEGIN {
            let what = format!("expected the header record (type {BEGIN}), found a record of type {ty}");
            return Err(self.error(at, format!("{what}: not a RocksDB trace, or its start is missing")));
        }
        if len > MAX_HEADER {
            return Err(self.error(at, format!("a header record of {len} bytes (allowed: at most {MAX_HEADER})")));
        }
        self.read_payload(at, len, "TraceBegin", true)?;
        if !self.payload.starts_with(MAGIC) {
            return Err(self.error(self.payload_at, "the header lacks RocksDB's trace magic"));
        }
        let version = parse_version(&self.payload).ok_or_else(|| {
            self.error(self.payload_at, "the header has no readable `Trace Version: M.N` (allowed: 0.1, 0.2)")
        })?;
        if !(1..=2).contains(&version) {
            return Err(self.error(self.payload_at, format!("trace version {version} (allowed: 0.1, 0.2)")));
        }
        self.version = Some(version);
        Ok(())
    }

    /// The footer ends the trace: bytes after it are an error rather than silently ignored.
    fn read_footer(&mut self, at: u64, len: u32) -> Result<bool, TraceError> {
        self.read_payload(at, len, "TraceEnd", false)?;
        let after = self.src.bytes_read();
        if !self.src.at_end()? {
            return Err(self.error(after, "bytes after the trace's end record (allowed: nothing)"));
        }
        Ok(false)
    }

    /// Reads a payload of `len` bytes (kept in `self.payload` or discarded) as it arrives, so a
    /// declared length that the file does not hold costs no memory.
    fn read_payload(&mut self, at: u64, len: u32, name: &str, keep: bool) -> Result<(), TraceError> {
        self.payload.clear();
        // One large batch should not keep its buffer for the rest of the trace.
        if self.payload.capacity() > 64 * CHUNK {
            self.payload.shrink_to(CHUNK);
        }
        self.payload_at = self.src.bytes_read();
        let mut scratch = [0u8; 4096];
        let mut left = len as usize;
        while left > 0 {
            let take = left.min(if keep { CHUNK } else { scratch.len() });
            let buf = if keep {
                let old = self.payload.len();
                self.payload.resize(old + take, 0);
                &mut self.payload[old..]
            } else {
                &mut scratch[..take]
            };
            // A short read is reported at the record's start, not at the chunk that ran short.
            match self.src.exact(buf, "a payload") {
                Ok(true) => left -= take,
                Ok(false) => return Err(self.truncated(at, len, name)),
                Err(e) if e.what.starts_with("truncated") => return Err(self.truncated(at, len, name)),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn truncated(&self, at: u64, len: u32, name: &str) -> TraceError {
        let got = self.src.bytes_read() - self.payload_at;
        self.error(at, format!("truncated: the file ends {got} bytes into the {len}-byte payload of a {name} record"))
    }

    /// What a query record's payload holds, checked but not yet turned into ops.
    fn decode(&self, ty: u8) -> Result<Pending, Bad> {
        let fields = if self.version == Some(1) { v1_fields(ty, &self.payload)? } else { v2_fields(&self.payload)? };
        match ty {
            WRITE => {
                let rep = fields.slice(BATCH_DATA).unwrap_or(0..0);
                if rep.len() < BATCH_HEADER {
                    return Err(Bad::new(rep.start, "a write batch of at least 12 bytes (sequence and count)"));
                }
                Ok(Pending::Batch { pos: rep.start + BATCH_HEADER, end: rep.end })
            }
            GET => Ok(Pending::One(Kind::Get, fields.slice(GET_KEY).unwrap_or(0..0))),
            SEEK | SEEK_FOR_PREV => Ok(Pending::One(Kind::Scan, fields.slice(ITER_KEY).unwrap_or(0..0))),
            _ => multi_get(&fields),
        }
    }

    /// The next op of the current record, if it has more.
    fn take_pending(&mut self) -> Result<Option<TraceOp>, TraceError> {
        loop {
            let got = match std::mem::replace(&mut self.pending, Pending::Idle) {
                Pending::Idle => return Ok(None),
                Pending::One(kind, key) => Some((kind, key, None)),
                Pending::Batch { pos, end } => self.batch_record(pos, end).map_err(|b| self.bad(b, "Write"))?,
                Pending::MultiGet { pos, end, left } => self.multi_get_key(pos, end, left)?,
            };
            if let Some((kind, key, value_size)) = got {
                let joined = std::mem::replace(&mut self.emitted, true);
                let key = self.payload[key].to_vec();
                return Ok(Some(TraceOp { ts_us: self.ts, client: 0, kind, key, value_size, scan_len: None, joined }));
            }
        }
    }

    /// One WriteBatch record at `pos`: an op, or `None` when it was skipped (the rest stays
    /// pending).
    fn batch_record(&mut self, pos: usize, end: usize) -> Result<Option<Op>, Bad> {
        if pos >= end {
            return Ok(None);
        }
        let mut c = Cursor { buf: &self.payload[..end], pos };
        let (name, op) = batch_entry(&mut c)?;
        self.pending = Pending::Batch { pos: c.pos, end };
        if op.is_none() {
            *self.skipped.entry(name.to_string()).or_default() += 1;
        }
        Ok(op)
    }

    fn multi_get_key(&mut self, pos: usize, end: usize, left: u32) -> Result<Option<Op>, TraceError> {
        if left == 0 {
            return Ok(None);
        }
        let mut c = Cursor { buf: &self.payload[..end], pos };
        let key = c.slice("a MultiGet key").map_err(|b| self.bad(b, "MultiGet"))?;
        self.pending = Pending::MultiGet { pos: c.pos, end, left: left - 1 };
        Ok(Some((Kind::Get, key, None)))
    }

    fn error(&self, at: u64, what: impl Into<String>) -> TraceError {
        TraceError::new(self.src.path(), Place::Offset(at), what)
    }

    fn bad(&self, malformed: Bad, record: &str) -> TraceError {
        self.error(
            self.payload_at + malformed.at as u64,
            format!("malformed {record} record: expected {}", malformed.expected),
        )
    }
}

fn type_name(ty: u8) -> Option<&'static str> {
    TYPE_NAMES.get(ty as usize).copied()
}

fn unknown_type(ty: u8) -> String {
    format!("unknown record type {ty} (allowed: 0 to {}): not a RocksDB trace, or a damaged one", TYPE_NAMES.len() - 1)
}

fn too_long(name: &str, len: u32) -> String {
    format!("a {name} record declares a {len}-byte payload (allowed: at most {MAX_PAYLOAD}): a damaged trace?")
}

/// `M.N` after "Trace Version: ", numbered as RocksDB does (its digits read as one number).
fn parse_version(header: &[u8]) -> Option<u32> {
    let start = header.windows(VERSION_TAG.len()).position(|w| w == VERSION_TAG)? + VERSION_TAG.len();
    let text = header[start..].split(|&b| b == b'\t' || b == b'\n').next()?;
    if text.iter().filter(|&&b| b == b'.').count() != 1 || text.len() > 8 {
        return None;
    }
    text.iter().filter(|&&b| b != b'.').try_fold(0u32, |n, &b| b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0')))
}

/// A kind, a key's range in the payload and a put's value size.
type Op = (Kind, Range<usize>, Option<u32>);

/// What was expected at a payload offset.
#[derive(Debug)]
struct Bad {
    at: usize,
    expected: String,
}

impl Bad {
    fn new(at: usize, expected: impl Into<String>) -> Bad {
        Bad { at, expected: expected.into() }
    }
}

/// Reads RocksDB's encodings from a payload.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn u8(&mut self, what: &str) -> Result<u8, Bad> {
        let b = *self.buf.get(self.pos).ok_or_else(|| Bad::new(self.pos, format!("{what}, found the end")))?;
        self.pos += 1;
        Ok(b)
    }

    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Bad> {
        let bytes = self.buf.get(self.pos..self.pos + N).ok_or_else(|| {
            Bad::new(self.pos, format!("{what} ({N} bytes), found {} bytes", self.buf.len() - self.pos))
        })?;
        self.pos += N;
        Ok(bytes.try_into().unwrap_or([0; N]))
    }

    fn varint32(&mut self, what: &str) -> Result<u32, Bad> {
        let at = self.pos;
        let mut n = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.u8(what)?;
            if shift == 28 && b > 0x0f {
                return Err(Bad::new(at, format!("{what} (a varint32), found one over 32 bits")));
            }
            n |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(n);
            }
        }
        Err(Bad::new(at, format!("{what} (a varint32), found one longer than 5 bytes")))
    }

    /// A varint32-prefixed slice, as its range.
    fn slice(&mut self, what: &str) -> Result<Range<usize>, Bad> {
        let len = self.varint32(&format!("the length of {what}"))? as usize;
        let left = self.buf.len() - self.pos;
        if len > left {
            return Err(Bad::new(self.pos, format!("{what} of {len} bytes, found {left} bytes")));
        }
        self.pos += len;
        Ok(self.pos - len..self.pos)
    }
}

/// Payload map bits (RocksDB's `TracePayloadType`) and the fields they stand for.
const BATCH_DATA: u32 = 1;
const GET_CF: u32 = 2;
const GET_KEY: u32 = 3;
const ITER_CF: u32 = 4;
const ITER_KEY: u32 = 5;
const ITER_LOWER: u32 = 6;
const ITER_UPPER: u32 = 7;
const MULTI_GET_SIZE: u32 = 8;
const MULTI_GET_CFS: u32 = 9;
const MULTI_GET_KEYS: u32 = 10;

/// A WriteBatch's sequence number and count.
const BATCH_HEADER: usize = 12;

/// A query payload's fields, by payload map bit.
#[derive(Default)]
struct Fields {
    slices: [Option<Range<usize>>; 11],
    fixed32: [Option<u32>; 11],
}

impl Fields {
    fn slice(&self, bit: u32) -> Option<Range<usize>> {
        self.slices[bit as usize].clone()
    }
}

/// A version 0.2 payload: the payload map, then each field present in bit order.
fn v2_fields(payload: &[u8]) -> Result<Fields, Bad> {
    let mut c = Cursor { buf: payload, pos: 0 };
    let mut map = u64::from_le_bytes(c.fixed::<8>("the payload map")?);
    let mut f = Fields::default();
    while map != 0 {
        let bit = map.trailing_zeros();
        map &= map - 1;
        match bit {
            GET_CF | ITER_CF | MULTI_GET_SIZE => f.fixed32[bit as usize] = Some(read_fixed32(&mut c, bit)?),
            BATCH_DATA | GET_KEY | ITER_KEY | ITER_LOWER | ITER_UPPER | MULTI_GET_CFS | MULTI_GET_KEYS => {
                f.slices[bit as usize] = Some(c.slice(field_name(bit))?);
            }
            _ => return Err(Bad::new(0, format!("payload map bits of known fields (1 to 10), found bit {bit}"))),
        }
    }
    Ok(f)
}

fn read_fixed32(cursor: &mut Cursor, bit: u32) -> Result<u32, Bad> {
    cursor.fixed::<4>(field_name(bit)).map(u32::from_le_bytes)
}

fn field_name(bit: u32) -> &'static str {
    match bit {
        BATCH_DATA => "the write batch",
        GET_CF | ITER_CF => "the column family id",
        MULTI_GET_CFS => "the column family ids",
        GET_KEY | ITER_KEY => "the key",
        ITER_LOWER => "the lower bound",
        ITER_UPPER => "the upper bound",
        MULTI_GET_SIZE => "the key count",
        _ => "the keys",
    }
}

/// A version 0.1 payload: a Write is the batch itself; a Get or a seek is a fixed32 column
/// family and the key. (MultiGet records came with version 0.2.)
fn v1_fields(ty: u8, payload: &[u8]) -> Result<Fields, Bad> {
    let mut f = Fields::default();
    let mut c = Cursor { buf: payload, pos: 0 };
    match ty {
        WRITE => f.slices[BATCH_DATA as usize] = Some(0..payload.len()),
        GET => {
            read_fixed32(&mut c, GET_CF)?;
            f.slices[GET_KEY as usize] = Some(c.slice("the key")?);
        }
        SEEK | SEEK_FOR_PREV => {
            read_fixed32(&mut c, ITER_CF)?;
            f.slices[ITER_KEY as usize] = Some(c.slice("the key")?);
        }
        _ => return Err(Bad::new(0, "no MultiGet in a version 0.1 trace (MultiGet came with 0.2)")),
    }
    Ok(f)
}

/// A MultiGet's keys, checked against its key count and column family ids.
fn multi_get(fields: &Fields) -> Result<Pending, Bad> {
    let n = fields.fixed32[MULTI_GET_SIZE as usize].unwrap_or(0);
    if n == 0 {
        return Err(Bad::new(0, "a MultiGet of at least one key, found none"));
    }
    let cfs = fields.slice(MULTI_GET_CFS).unwrap_or(0..0);
    if cfs.len() as u64 != u64::from(n) * 4 {
        let want = u64::from(n) * 4;
        return Err(Bad::new(cfs.start, format!("{n} column family ids ({want} bytes), found {} bytes", cfs.len())));
    }
    let keys = fields.slice(MULTI_GET_KEYS).unwrap_or(0..0);
    Ok(Pending::MultiGet { pos: keys.start, end: keys.end, left: n })
}

/// One WriteBatch record: its name, and the op it is when it is one.
fn batch_entry(cursor: &mut Cursor) -> Result<(&'static str, Option<Op>), Bad> {
    let at = cursor.pos;
    let tag = cursor.u8("a write batch record type")?;
    if matches!(tag, 0x4..=0x6 | 0x8 | 0xE | 0x10 | 0x17) {
        cursor.varint32("a column family id")?;
    }
    let (name, slices) = match tag {
        0x1 | 0x5 => ("Put", 2),
        0x0 | 0x4 => ("Delete", 1),
        0x7 | 0x8 => ("SingleDelete", 1),
        0x2 | 0x6 => ("Merge", 2),
        0xF | 0xE => ("DeleteRange", 2),
        0x11 | 0x10 => ("BlobIndex", 2),
        0x16 | 0x17 => ("PutEntity", 2),
        0x3 => ("LogData", 1),
        0xD => ("Noop", 0),
        0x9 => ("BeginPrepareXID", 0),
        0x12 => ("BeginPersistedPrepareXID", 0),
        0x13 => ("BeginUnprepareXID", 0),
        0xA => ("EndPrepareXID", 1),
        0xB => ("CommitXID", 1),
        0x15 => ("CommitXIDAndTimestamp", 2),
        0xC => ("RollbackXID", 1),
        _ => return Err(Bad::new(at, format!("a write batch record type, found {tag:#04x}"))),
    };
    let first = if slices > 0 { Some(cursor.slice(&format!("a {name}'s key"))?) } else { None };
    let second = if slices > 1 { Some(cursor.slice(&format!("a {name}'s value"))?) } else { None };
    let op = match (name, first, second) {
        ("Put", Some(key), Some(value)) => Some((Kind::Put, key, Some(value.len() as u32))),
        ("Delete" | "SingleDelete", Some(key), _) => Some((Kind::Delete, key, None)),
        _ => None,
    };
    Ok((name, op))
}

impl Iterator for RocksdbReader {
    type Item = Result<TraceOp, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let got = self.step();
        if !matches!(got, Ok(Some(_))) {
            self.ended = true;
        }
        got.transpose()
    }
}

impl Reader for RocksdbReader {
    fn format(&self) -> Format {
        Format::Rocksdb
    }
    fn skipped(&self) -> &BTreeMap<String, u64> {
        &self.skipped
    }
    fn bytes_read(&self) -> u64 {
        self.src.bytes_read()
    }
    fn hash(&self) -> Option<u64> {
        self.ended.then(|| self.src.hash())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn rec(ts: u64, ty: u8, payload: &[u8]) -> Vec<u8> {
        let mut r = ts.to_le_bytes().to_vec();
        r.push(ty);
        r.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        r.extend_from_slice(payload);
        r
    }

    fn header(version: &str) -> Vec<u8> {
        let text = format!(
            "feedcafedeadbeef\tTrace Version: {version}\tRocksDB Version: 7.8\tFormat: Timestamp OpType Payload\n"
        );
        rec(1, BEGIN, text.as_bytes())
    }

    fn footer() -> Vec<u8> {
        rec(99, END, b"")
    }

    fn slice(out: &mut Vec<u8>, bytes: &[u8]) {
        varint(out, bytes.len() as u32);
        out.extend_from_slice(bytes);
    }

    fn varint(out: &mut Vec<u8>, mut value: u32) {
        while value >= 0x80 {
            out.push(value as u8 | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }

    /// A version 0.2 payload: the map of `fields`' bits, then each field.
    fn v2(fields: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let map: u64 = fields.iter().map(|(bit, _)| 1u64 << bit).sum();
        let mut p = map.to_le_bytes().to_vec();
        for (_, f) in fields {
            p.extend_from_slice(f);
        }
        p
    }

    fn lps(bytes: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        slice(&mut v, bytes);
        v
    }

    fn get(ts: u64, key: &[u8]) -> Vec<u8> {
        rec(ts, GET, &v2(&[(GET_CF, 0u32.to_le_bytes().to_vec()), (GET_KEY, lps(key))]))
    }

    /// A WriteBatch rep of `entries` (each a record type byte and its encoded fields).
    fn batch(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut rep = 7u64.to_le_bytes().to_vec();
        rep.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        entries.iter().for_each(|e| rep.extend_from_slice(e));
        rep
    }

    fn entry(tag: u8, cf: Option<u32>, parts: &[&[u8]]) -> Vec<u8> {
        let mut e = vec![tag];
        if let Some(cf) = cf {
            varint(&mut e, cf);
        }
        parts.iter().for_each(|p| slice(&mut e, p));
        e
    }

    fn write(ts: u64, rep: &[u8]) -> Vec<u8> {
        rec(ts, WRITE, &v2(&[(BATCH_DATA, lps(rep))]))
    }

    fn multi_get(ts: u64, keys: &[&[u8]]) -> Vec<u8> {
        let cfs: Vec<u8> = keys.iter().flat_map(|_| 0u32.to_le_bytes()).collect();
        let packed: Vec<u8> = keys.iter().flat_map(|k| lps(k)).collect();
        let size = (keys.len() as u32).to_le_bytes().to_vec();
        rec(ts, MULTI_GET, &v2(&[(MULTI_GET_SIZE, size), (MULTI_GET_CFS, lps(&cfs)), (MULTI_GET_KEYS, lps(&packed))]))
    }

    fn seek(ts: u64, ty: u8, key: &[u8], lower: &[u8]) -> Vec<u8> {
        let mut fields = vec![(ITER_CF, 1u32.to_le_bytes().to_vec()), (ITER_KEY, lps(key))];
        if !lower.is_empty() {
            fields.push((ITER_LOWER, lps(lower)));
        }
        rec(ts, ty, &v2(&fields))
    }

    fn reader(bytes: &[u8]) -> (tempfile::NamedTempFile, RocksdbReader) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        let r = RocksdbReader::new(Source::open(f.path()).unwrap());
        (f, r)
    }

    /// Every item the reader gives (ending at the first error), and the reader.
    fn read(bytes: &[u8]) -> (Vec<Result<TraceOp, TraceError>>, RocksdbReader) {
        let (_f, mut r) = reader(bytes);
        let items = r.by_ref().collect();
        (items, r)
    }

    fn ops(bytes: &[u8]) -> (Vec<TraceOp>, BTreeMap<String, u64>) {
        let (items, r) = read(bytes);
        (items.into_iter().map(|i| i.unwrap()).collect(), r.skipped().clone())
    }

    fn error(bytes: &[u8]) -> TraceError {
        let (items, _) = read(bytes);
        items.into_iter().find_map(|i| i.err()).expect("an error")
    }

    fn summary(ops: &[TraceOp]) -> Vec<(Kind, String, Option<u32>, bool)> {
        ops.iter().map(|o| (o.kind, String::from_utf8_lossy(&o.key).into_owned(), o.value_size, o.joined)).collect()
    }

    fn trace(records: &[Vec<u8>]) -> Vec<u8> {
        [vec![header("0.2")], records.to_vec(), vec![footer()]].concat().concat()
    }

    #[test]
    fn a_get_is_one_get_at_its_time() {
        let (ops, skipped) = ops(&trace(&[get(42, b"k1")]));
        assert_eq!(summary(&ops), [(Kind::Get, "k1".into(), None, false)]);
        assert_eq!((ops[0].ts_us, ops[0].client, ops[0].scan_len), (42, 0, None));
        assert!(skipped.is_empty());
    }

    #[test]
    fn a_write_batch_is_its_puts_and_deletes_joined_and_the_rest_skipped_by_name() {
        let rep = batch(&[
            entry(0x2, None, &[b"m", b"mv"]),
            entry(0x1, None, &[b"p", b"value"]),
            entry(0x0, None, &[b"d"]),
            entry(0x7, None, &[b"sd"]),
            entry(0xF, None, &[b"a", b"z"]),
            entry(0x5, Some(3), &[b"cfp", b"vv"]),
            entry(0x4, Some(3), &[b"cfd"]),
            entry(0x8, Some(3), &[b"cfsd"]),
            entry(0x6, Some(3), &[b"cfm", b"x"]),
            entry(0xE, Some(3), &[b"b", b"y"]),
            entry(0x3, None, &[b"blob"]),
            entry(0xD, None, &[]),
        ]);
        let (ops, skipped) = ops(&trace(&[write(5, &rep), write(6, &batch(&[entry(0x1, None, &[b"q", b""])]))]));
        assert_eq!(
            summary(&ops),
            [
                (Kind::Put, "p".into(), Some(5), false),
                (Kind::Delete, "d".into(), None, true),
                (Kind::Delete, "sd".into(), None, true),
                (Kind::Put, "cfp".into(), Some(2), true),
                (Kind::Delete, "cfd".into(), None, true),
                (Kind::Delete, "cfsd".into(), None, true),
                (Kind::Put, "q".into(), Some(0), false),
            ]
        );
        assert!(ops[..6].iter().all(|o| o.ts_us == 5) && ops[6].ts_us == 6);
        let names: Vec<(&str, u64)> = skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(names, [("DeleteRange", 2), ("LogData", 1), ("Merge", 2), ("Noop", 1)]);
    }

    #[test]
    fn an_empty_write_batch_gives_no_op() {
        let (ops, _) = ops(&trace(&[write(5, &batch(&[])), get(6, b"g")]));
        assert_eq!(summary(&ops), [(Kind::Get, "g".into(), None, false)]);
    }

    #[test]
    fn a_multi_get_is_one_get_per_key_joined() {
        let (ops, _) = ops(&trace(&[multi_get(8, &[b"a", b"bb", b"ccc"])]));
        assert_eq!(
            summary(&ops),
            [
                (Kind::Get, "a".into(), None, false),
                (Kind::Get, "bb".into(), None, true),
                (Kind::Get, "ccc".into(), None, true)
            ]
        );
    }

    #[test]
    fn seeks_forward_and_backward_are_scans_at_the_seek_key() {
        let (ops, skipped) = ops(&trace(&[seek(3, SEEK, b"from", b""), seek(4, SEEK_FOR_PREV, b"back", b"lower")]));
        assert_eq!(summary(&ops), [(Kind::Scan, "from".into(), None, false), (Kind::Scan, "back".into(), None, false)]);
        assert!(ops.iter().all(|o| o.scan_len.is_none()));
        assert!(skipped.is_empty());
    }

    #[test]
    fn block_cache_and_io_records_are_skipped_by_name() {
        let (ops, skipped) = ops(&trace(&[rec(2, 9, b"block"), rec(3, 12, b"io"), get(4, b"g"), rec(5, 9, b"")]));
        assert_eq!(ops.len(), 1);
        let names: Vec<(&str, u64)> = skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(names, [("BlockTraceDataBlock", 2), ("IOTracer", 1)]);
    }

    #[test]
    fn a_version_0_1_trace_has_fixed_fields_and_no_payload_map() {
        let cf_key = |key: &[u8]| [0u32.to_le_bytes().to_vec(), lps(key)].concat();
        let rep = batch(&[entry(0x1, None, &[b"p", b"vvv"])]);
        let t = [header("0.1"), rec(2, GET, &cf_key(b"g")), rec(3, SEEK, &cf_key(b"s")), rec(4, WRITE, &rep), footer()];
        let (ops, _) = ops(&t.concat());
        assert_eq!(
            summary(&ops),
            [
                (Kind::Get, "g".into(), None, false),
                (Kind::Scan, "s".into(), None, false),
                (Kind::Put, "p".into(), Some(3), false)
            ]
        );
    }

    #[test]
    fn the_hash_is_known_once_the_stream_ends_and_covers_every_byte() {
        let t = trace(&[get(2, b"a"), get(3, b"b")]);
        let (_f, mut r) = reader(&t);
        assert!(r.next().unwrap().is_ok());
        assert_eq!(r.hash(), None);
        assert!(r.next().unwrap().is_ok());
        assert!(r.next().is_none());
        assert_eq!(r.hash(), Some(xxhash_rust::xxh3::xxh3_64(&t)));
        assert_eq!(r.bytes_read(), t.len() as u64);
        assert_eq!(r.format(), Format::Rocksdb);
        assert!(r.next().is_none(), "and it stays ended");
    }

    #[test]
    fn a_trace_without_its_footer_is_complete_but_bytes_after_the_footer_are_not() {
        let cut = [header("0.2"), get(2, b"a")].concat();
        assert_eq!(ops(&cut).0.len(), 1);
        let e = error(&[trace(&[get(2, b"a")]), b"x".to_vec()].concat());
        assert!(e.what.contains("after the trace's end"), "{e}");
    }

    #[test]
    fn a_missing_or_wrong_header_is_an_error() {
        let e = error(b"");
        assert_eq!(e.place, Place::File);
        assert!(e.what.contains("empty"), "{e}");
        let e = error(&get(2, b"a"));
        assert_eq!(e.place, Place::Offset(0));
        assert!(e.what.contains("expected the header record"), "{e}");
        let e = error(&rec(1, BEGIN, b"cafe\tTrace Version: 0.2\t"));
        assert!(e.what.contains("magic"), "{e}");
        let e = error(&header("0.3"));
        assert!(e.what.contains("trace version 3 (allowed: 0.1, 0.2)"), "{e}");
        let e = error(&header("zero"));
        assert!(e.what.contains("Trace Version"), "{e}");
        let e = error(&[header("0.2"), header("0.2")].concat());
        assert!(e.what.contains("second header"), "{e}");
    }

    #[test]
    fn a_cut_anywhere_gives_a_prefix_or_an_error_at_the_cut_record() {
        let records = [
            header("0.2"),
            write(2, &batch(&[entry(0x1, None, &[b"p", b"v"]), entry(0x2, None, &[b"m", b"v"])])),
            multi_get(3, &[b"a", b"b"]),
            seek(4, SEEK, b"s", b"l"),
            get(5, b"g"),
            footer(),
        ];
        let starts: Vec<usize> = records.iter().scan(0, |at, r| Some(std::mem::replace(at, *at + r.len()))).collect();
        let whole = records.concat();
        let (all, _) = ops(&whole);
        for cut in 0..whole.len() {
            let (items, r) = read(&whole[..cut]);
            assert!(r.hash().is_some(), "cut at {cut}: ended");
            let got: Vec<&TraceOp> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
            assert!(all.iter().zip(&got).all(|(a, b)| a == *b), "cut at {cut}: a prefix");
            match (starts.contains(&cut) && cut >= records[0].len(), items.last()) {
                (true, last) => assert!(last.is_none_or(|l| l.is_ok()), "cut at {cut}: clean"),
                (false, Some(Err(e))) if cut == 0 => assert_eq!(e.place, Place::File),
                (false, Some(Err(e))) => {
                    let record = *starts.iter().rfind(|&&s| s <= cut).unwrap() as u64;
                    assert_eq!(e.place, Place::Offset(record), "cut at {cut}: {e}");
                    assert!(e.what.starts_with("truncated"), "cut at {cut}: {e}");
                }
                (false, other) => panic!("cut at {cut}: expected an error, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_huge_declared_length_is_refused_before_any_allocation() {
        let mut t = trace(&[]);
        t.truncate(t.len() - footer().len());
        let at = t.len() as u64;
        t.extend_from_slice(&rec(2, WRITE, b"")[..9]);
        t.extend_from_slice(&(MAX_PAYLOAD + 1).to_le_bytes());
        let e = error(&t);
        assert_eq!(e.place, Place::Offset(at));
        assert!(e.what.contains("allowed: at most 1073741824"), "{e}");
        let mut big_header = rec(1, BEGIN, b"");
        big_header[9..13].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(error(&big_header).what.contains("header record of 4294967295 bytes"));
    }

    #[test]
    fn a_declared_length_the_file_does_not_hold_is_truncated_not_allocated() {
        let mut t = [header("0.2"), rec(2, WRITE, b"")].concat();
        let at = t.len() - 4;
        t[at..].copy_from_slice(&MAX_PAYLOAD.to_le_bytes());
        t.extend_from_slice(b"short");
        let e = error(&t);
        assert!(e.what.contains("ends 5 bytes into the 1073741824-byte payload of a Write record"), "{e}");
    }

    #[test]
    fn malformed_payloads_name_the_byte_and_what_was_expected() {
        let h = header("0.2").len() as u64;
        let payload_at = h + RECORD_HEAD as u64;
        let bad_varint = rec(2, GET, &v2(&[(GET_CF, vec![0; 4]), (GET_KEY, vec![0xff; 6])]));
        let e = error(&trace(&[bad_varint]));
        assert_eq!(e.place, Place::Offset(payload_at + 12), "{e}");
        assert!(e.what.contains("malformed Get record: expected the length of the key (a varint32)"), "{e}");

        let long_key = rec(2, GET, &v2(&[(GET_CF, vec![0; 4]), (GET_KEY, vec![9, b'k'])]));
        assert!(error(&trace(&[long_key])).what.contains("the key of 9 bytes, found 1 bytes"));

        let unknown_bit = rec(2, GET, &(1u64 << 40).to_le_bytes());
        assert!(error(&trace(&[unknown_bit])).what.contains("found bit 40"));

        let short_map = rec(2, SEEK, &[1, 2]);
        assert!(error(&trace(&[short_map])).what.contains("the payload map (8 bytes), found 2 bytes"));

        let bad_tag = write(2, &batch(&[vec![0x42, 1, b'k']]));
        let e = error(&trace(&[bad_tag]));
        assert!(e.what.contains("a write batch record type, found 0x42"), "{e}");

        assert!(error(&trace(&[write(2, b"short")])).what.contains("at least 12 bytes"));
        assert!(error(&trace(&[rec(2, 42, b"")])).what.contains("unknown record type 42"));
        let empty_multi_get = rec(2, MULTI_GET, &v2(&[(MULTI_GET_SIZE, vec![0; 4])]));
        assert!(error(&trace(&[empty_multi_get])).what.contains("at least one key"));
        let mut short_multi_get = multi_get(2, &[b"a", b"b"]);
        let size_at = RECORD_HEAD + 8;
        short_multi_get[size_at..size_at + 4].copy_from_slice(&3u32.to_le_bytes());
        assert!(error(&trace(&[short_multi_get])).what.contains("3 column family ids"));
    }

    #[test]
    fn garbage_never_panics_and_always_ends() {
        let valid = trace(&[
            write(2, &batch(&[entry(0x1, None, &[b"p", b"v"]), entry(0x5, Some(1), &[b"q", b"w"])])),
            multi_get(3, &[b"a", b"b"]),
            seek(4, SEEK_FOR_PREV, b"s", b"l"),
            get(5, b"g"),
        ]);
        // Every byte of a valid trace, replaced by values that matter to its decoders.
        for i in 0..valid.len() {
            for v in [0x00, 0x01, 0x05, 0x0d, 0x7f, 0x80, 0xff] {
                let mut t = valid.clone();
                t[i] = v;
                let (items, r) = read(&t);
                assert!(items.len() <= 8 && r.hash().is_some(), "byte {i} = {v}");
            }
        }
        // Pseudo-random files, some behind a valid header.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..300 {
            let len = n % 97;
            let noise: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let t = if n % 2 == 0 { noise } else { [header("0.2"), noise].concat() };
            let (items, _) = read(&t);
            assert!(items.iter().filter(|i| i.is_err()).count() <= 1);
        }
    }

    #[test]
    fn looks_like_a_header_record() {
        let h = header("0.2");
        assert!(looks_like(&h));
        assert!(looks_like(&trace(&[get(2, b"a")])));
        assert!(!looks_like(&h[..20]), "too little to see the version");
        assert!(!looks_like(&get(2, b"Trace Version: 0.2")));
        assert!(!looks_like(b"1795840293.008164 [0 unix:/tmp/s] \"GET\" \"k\"\n"));
        assert!(!looks_like(b""));
        let mut lying = h.clone();
        lying[9..13].copy_from_slice(&4u32.to_le_bytes());
        assert!(!looks_like(&lying), "the version text must be inside the header's payload");
    }
}
