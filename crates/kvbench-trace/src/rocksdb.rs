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
        if !self.src.peek(1)?.is_empty() {
            return Err(self.error(after, "bytes after the trace's end record (allowed: nothing)"));
        }
        Ok(false)
    }

    /// Reads a payload of `len` bytes (kept in `self.payload` or discarded) as it arrives, so a
    /// declared length that the file does not hold costs no memory.
    fn read_payload(&mut self, at: u64, len: u32, name: &str, keep: bool) -> Result<(), TraceError> {
        self.payload.clear();
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

    fn bad(&self, b: Bad, record: &str) -> TraceError {
        self.error(self.payload_at + b.at as u64, format!("malformed {record} record: expected {}", b.expected))
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

fn read_fixed32(c: &mut Cursor, bit: u32) -> Result<u32, Bad> {
    c.fixed::<4>(field_name(bit)).map(u32::from_le_bytes)
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
fn multi_get(f: &Fields) -> Result<Pending, Bad> {
    let n = f.fixed32[MULTI_GET_SIZE as usize].unwrap_or(0);
    if n == 0 {
        return Err(Bad::new(0, "a MultiGet of at least one key, found none"));
    }
    let cfs = f.slice(MULTI_GET_CFS).unwrap_or(0..0);
    if cfs.len() as u64 != u64::from(n) * 4 {
        let want = u64::from(n) * 4;
        return Err(Bad::new(cfs.start, format!("{n} column family ids ({want} bytes), found {} bytes", cfs.len())));
    }
    let keys = f.slice(MULTI_GET_KEYS).unwrap_or(0..0);
    Ok(Pending::MultiGet { pos: keys.start, end: keys.end, left: n })
}

/// One WriteBatch record: its name, and the op it is when it is one.
fn batch_entry(c: &mut Cursor) -> Result<(&'static str, Option<Op>), Bad> {
    let at = c.pos;
    let tag = c.u8("a write batch record type")?;
    if matches!(tag, 0x4..=0x6 | 0x8 | 0xE | 0x10 | 0x17) {
        c.varint32("a column family id")?;
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
    let first = if slices > 0 { Some(c.slice(&format!("a {name}'s key"))?) } else { None };
    let second = if slices > 1 { Some(c.slice(&format!("a {name}'s value"))?) } else { None };
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
