//! A replay's plan (docs/plan-format.md, "Replays"): a recorded or modelled operation stream
//! made into a stored dataset — each distinct key a record, its value at the recorded size —
//! and an OPS section holding every operation in recorded order.
//!
//! The stream is read once (a FIFO or a pipe works): operations are spooled to a file beside
//! the plan with provisional record numbers, then renumbered so the records a replay loads
//! first (keys whose first operation is not a put) come before the others. Memory grows with
//! the distinct keys (their bytes twice, plus a few words each), never with the operations.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use anyhow::{ensure, Context};
use kvbench_model::result::TraceInfo;
use kvbench_trace::{Kind, TraceError, TraceOp};

use crate::derive::PRINTABLE;
use crate::gen::RecordSource;
use crate::job::PhaseKind;
use crate::planfile::{self, Extra, LoadOrder, PlanId, OPS};
use crate::primitives::rnd;

/// Bytes of one OPS entry: u64 time (µs after the first op), u32 record, u32 scan length,
/// u32 client, u8 kind, u8 flags (bit 0: joined to the previous op's request), 2 bytes zero.
pub const OP_BYTES: usize = 24;

/// The value size of a record no operation gives a size for, when no put gives one either.
pub const DEFAULT_VALUE: u32 = 100;

/// One OPS entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub at_us: u64,
    pub record: u32,
    /// Records a scan visits (at least 1); 0 for other kinds.
    pub len: u32,
    pub client: u32,
    /// `get`, `multi-get`, `scan`, `update` (a put) or `delete`.
    pub kind: PhaseKind,
    pub joined: bool,
}

fn kind_code(kind: PhaseKind) -> u8 {
    match kind {
        PhaseKind::Get => 1,
        PhaseKind::MultiGet => 2,
        PhaseKind::Scan => 3,
        PhaseKind::Update => 4,
        _ => 5,
    }
}

fn code_kind(code: u8) -> Option<PhaseKind> {
    Some(match code {
        1 => PhaseKind::Get,
        2 => PhaseKind::MultiGet,
        3 => PhaseKind::Scan,
        4 => PhaseKind::Update,
        5 => PhaseKind::Delete,
        _ => return None,
    })
}

impl Entry {
    pub fn encode(&self) -> [u8; OP_BYTES] {
        let mut b = [0u8; OP_BYTES];
        b[0..8].copy_from_slice(&self.at_us.to_le_bytes());
        b[8..12].copy_from_slice(&self.record.to_le_bytes());
        b[12..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..20].copy_from_slice(&self.client.to_le_bytes());
        b[20] = kind_code(self.kind);
        b[21] = u8::from(self.joined);
        b
    }

    /// The entry at `bytes` (at least [`OP_BYTES`] long); `None` for an unknown kind.
    pub fn decode(bytes: &[u8]) -> Option<Entry> {
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        Some(Entry {
            at_us: u64::from_le_bytes(bytes[0..8].try_into().expect("8 bytes")),
            record: u32_at(8),
            len: u32_at(12),
            client: u32_at(16),
            kind: code_kind(bytes[20])?,
            joined: bytes[21] & 1 == 1,
        })
    }
}

/// Where the stream comes from, for the result.
pub struct Origin<'a> {
    pub source: &'a str,
    pub format: &'a str,
}

/// What is known of one distinct key after the first pass.
struct KeyInfo {
    preload: bool,
    size: Option<u32>,
}

/// The first pass: keys numbered in order of first appearance, operations spooled.
struct Pass {
    ids: HashMap<Box<[u8]>, u32>,
    keys: Vec<Box<[u8]>>,
    info: Vec<KeyInfo>,
    spool: BufWriter<File>,
    first_us: Option<u64>,
    last_at: u64,
    t: TraceInfo,
    put_sizes: (u64, u64),
    profile: kvbench_trace::profile::Profiler,
}

/// Builds the plan file of a replay at `path` from `ops`; returns what the stream holds.
/// `hash` gives the trace file's hash once the stream has ended (none for a generated one).
pub fn build(
    path: &Path,
    id: PlanId,
    ops: &mut dyn Iterator<Item = Result<TraceOp, TraceError>>,
    origin: Origin<'_>,
) -> anyhow::Result<TraceInfo> {
    let spool_path = spool_path(path);
    let result = build_spooled(path, &spool_path, id, ops, origin);
    let _ = std::fs::remove_file(&spool_path);
    result
}

fn spool_path(path: &Path) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".ops{}", std::process::id()));
    s.into()
}

fn build_spooled(
    path: &Path,
    spool_path: &Path,
    id: PlanId,
    ops: &mut dyn Iterator<Item = Result<TraceOp, TraceError>>,
    origin: Origin<'_>,
) -> anyhow::Result<TraceInfo> {
    let spool = File::create(spool_path).with_context(|| format!("{}: cannot create", spool_path.display()))?;
    let mut pass = Pass {
        ids: HashMap::new(),
        keys: Vec::new(),
        info: Vec::new(),
        spool: BufWriter::with_capacity(1 << 20, spool),
        first_us: None,
        last_at: 0,
        t: TraceInfo { source: origin.source.into(), format: origin.format.into(), ..TraceInfo::default() },
        put_sizes: (0, 0),
        profile: kvbench_trace::profile::Profiler::new(),
    };
    for op in ops {
        pass.add(op?)?;
    }
    pass.spool.flush()?;
    ensure!(!pass.keys.is_empty(), "{}: the stream holds no operation a replay can run", origin.source);
    let profile = std::mem::take(&mut pass.profile).finish();
    let (mut source, order) = pass.records(id.seed);
    let count = pass.t.ops;
    let mut reader = BufReader::with_capacity(1 << 20, File::open(spool_path)?);
    let mut requests = 0;
    let mut write = |w: &mut dyn Write| renumber(&mut reader, &order, count, w, &mut requests);
    let extra = Extra { kind: OPS, count, write: &mut write };
    planfile::build_stored_with(path, id, &mut source, LoadOrder::Sequential, extra)?;
    let mut t = pass.t;
    t.requests = requests;
    t.distinct_keys = order.len() as u64;
    t.preloaded = source.preloaded;
    t.duration_us = pass.last_at;
    t.read_write_ratio = ratio(&t.by_kind);
    t.profile = Some(profile);
    Ok(t)
}

fn ratio(by_kind: &BTreeMap<String, u64>) -> f64 {
    let n = |k: &str| by_kind.get(k).copied().unwrap_or(0);
    let writes = n("put") + n("delete");
    if writes == 0 {
        return 0.0;
    }
    (n("get") + n("scan")) as f64 / writes as f64
}

impl Pass {
    fn add(&mut self, op: TraceOp) -> anyhow::Result<()> {
        ensure!(self.t.ops < u64::from(u32::MAX), "a replay holds at most {} operations", u32::MAX);
        let first = *self.first_us.get_or_insert(op.ts_us);
        // Recorded times may step back (clocks of several clients): a replay never waits
        // for the past, so an op is due no earlier than the one before it.
        let at = op.ts_us.saturating_sub(first).max(self.last_at);
        self.last_at = at;
        self.profile.add(&op);
        let id = self.key_id(&op)?;
        let kind = match op.kind {
            Kind::Get => PhaseKind::Get,
            Kind::Put => PhaseKind::Update,
            Kind::Delete => PhaseKind::Delete,
            Kind::Scan => PhaseKind::Scan,
        };
        if op.kind == Kind::Put {
            self.count_put_size(id, op.value_size);
        }
        let len = if op.kind == Kind::Scan { op.scan_len.unwrap_or(1).max(1) } else { 0 };
        let e = Entry { at_us: at, record: id, len, client: op.client, kind, joined: op.joined };
        self.spool.write_all(&e.encode())?;
        self.t.ops += 1;
        self.t.clients = self.t.clients.max(op.client.saturating_add(1));
        *self.t.by_kind.entry(op.kind.as_str().to_string()).or_default() += 1;
        Ok(())
    }

    fn key_id(&mut self, op: &TraceOp) -> anyhow::Result<u32> {
        if let Some(&id) = self.ids.get(op.key.as_slice()) {
            let info = &mut self.info[id as usize];
            info.size = info.size.or(op.value_size);
            return Ok(id);
        }
        ensure!(self.keys.len() < u32::MAX as usize, "a replay holds at most {} distinct keys", u32::MAX);
        let id = self.keys.len() as u32;
        let key: Box<[u8]> = op.key.clone().into_boxed_slice();
        self.ids.insert(key.clone(), id);
        self.keys.push(key);
        self.info.push(KeyInfo { preload: op.kind != Kind::Put, size: op.value_size });
        Ok(id)
    }

    fn count_put_size(&mut self, id: u32, size: Option<u32>) {
        let Some(size) = size else { return };
        self.put_sizes.0 += u64::from(size);
        self.put_sizes.1 += 1;
        if self.info[id as usize].size.is_some_and(|first| first != size) {
            self.t.resized_puts += 1;
        }
    }

    /// The records in final order (preloaded keys first, each group in order of first
    /// appearance) and each provisional id's final record number.
    fn records(&mut self, seed: u64) -> (ReplayRecords, Vec<u32>) {
        let fallback = match self.put_sizes {
            (_, 0) => DEFAULT_VALUE,
            (sum, n) => (sum / n) as u32,
        };
        let ids = (0..self.keys.len() as u32).filter(|&i| self.info[i as usize].preload);
        let later = (0..self.keys.len() as u32).filter(|&i| !self.info[i as usize].preload);
        let by_record: Vec<u32> = ids.chain(later).collect();
        let mut order = vec![0u32; by_record.len()];
        for (r, &i) in by_record.iter().enumerate() {
            order[i as usize] = r as u32;
        }
        self.ids = HashMap::new();
        let keys = std::mem::take(&mut self.keys);
        let sizes = by_record.iter().map(|&i| self.info[i as usize].size.unwrap_or(fallback)).collect();
        let preloaded = self.info.iter().filter(|k| k.preload).count() as u64;
        (ReplayRecords { keys, by_record, sizes, seed, preloaded }, order)
    }
}

/// The spooled entries with final record numbers, a multi-key read marked `multi-get`;
/// counts the requests.
fn renumber(
    spool: &mut dyn Read,
    order: &[u32],
    count: u64,
    out: &mut dyn Write,
    requests: &mut u64,
) -> anyhow::Result<()> {
    let mut unit: Vec<Entry> = Vec::new();
    let mut b = [0u8; OP_BYTES];
    for _ in 0..count {
        spool.read_exact(&mut b)?;
        let mut e = Entry::decode(&b).context("spooled entry")?;
        e.record = order[e.record as usize];
        if !(e.joined && same_request(unit.last(), &e)) {
            flush_unit(&mut unit, out)?;
            e.joined = false;
            *requests += 1;
        }
        unit.push(e);
    }
    flush_unit(&mut unit, out)
}

/// Joined ops form one request when they read alike (gets) or write alike (puts, deletes).
fn same_request(prev: Option<&Entry>, entry: &Entry) -> bool {
    let writes = |k: PhaseKind| matches!(k, PhaseKind::Update | PhaseKind::Delete);
    match prev {
        Some(p) => (p.kind == PhaseKind::Get && entry.kind == PhaseKind::Get) || (writes(p.kind) && writes(entry.kind)),
        None => false,
    }
}

fn flush_unit(unit: &mut Vec<Entry>, out: &mut dyn Write) -> anyhow::Result<()> {
    let multi = unit.len() > 1 && unit[0].kind == PhaseKind::Get;
    for e in unit.iter_mut() {
        if multi {
            e.kind = PhaseKind::MultiGet;
        }
        out.write_all(&e.encode())?;
    }
    unit.clear();
    Ok(())
}

/// The replay's records: the recorded keys, printable values at each key's size.
struct ReplayRecords {
    keys: Vec<Box<[u8]>>,
    by_record: Vec<u32>,
    sizes: Vec<u32>,
    seed: u64,
    preloaded: u64,
}

impl RecordSource for ReplayRecords {
    fn len(&self) -> u64 {
        self.by_record.len() as u64
    }

    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        self.key(record, key);
        let size = self.sizes[record as usize] as usize;
        value.clear();
        let mut j = 0u64;
        while value.len() < size {
            let x = rnd(self.seed ^ record, j);
            value.extend((0..8).map(|t| PRINTABLE[((x >> (8 * t)) & 0xFF) as usize % 93]));
            j += 1;
        }
        value.truncate(size);
        Ok(())
    }

    fn update_value(&mut self, _i: u64, _version: u64, _value: &mut Vec<u8>) {}

    fn key(&mut self, record: u64, key: &mut Vec<u8>) {
        key.clear();
        key.extend_from_slice(&self.keys[self.by_record[record as usize] as usize]);
    }
}

/// The OPS entries of an open plan, checked as they are read.
pub fn entries(plan: &planfile::PlanFile) -> anyhow::Result<&[u8]> {
    let b = plan.section_bytes(OPS).with_context(|| format!("plan {}: no OPS section", plan.path().display()))?;
    ensure!(b.len() % OP_BYTES == 0, "plan {}: OPS is not whole entries", plan.path().display());
    Ok(b)
}

#[cfg(test)]
mod tests;
