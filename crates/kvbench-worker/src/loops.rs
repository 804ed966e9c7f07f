//! The timed loops: one function per unit kind, run by each thread of an ops step. Only the
//! engine call sits between the two clock reads; keys and values are derived before it (except
//! in a load batch the writer streams, see `stream_unit`) and reads are verified after it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::clock::{delta, stamp};
use super::data::{prefetch, Data};
use super::state::{self, after_delete, after_put, writes, Expect, State};
use super::tally::Tally;
use kvbench_model::engine::{Engine, EngineError, Reader, WriteOp, Writer};
use kvbench_model::job::{OpsStep, PhaseKind};
use kvbench_plan::derive::Expected;
use kvbench_plan::opstream::{Op, OpStream};

/// Everything a thread of an ops step shares with the others.
pub struct Ctx<'a> {
    pub engine: Option<&'a dyn Engine>,
    pub data: &'a Data,
    pub state: &'a State,
    pub step: &'a OpsStep,
    /// Several threads write: records are locked while written.
    pub lock: bool,
    pub start: u64,
    pub interval_ns: u64,
    pub done: &'a AtomicU64,
    /// For open-per-operation: opens the engine once more.
    pub reopen: Option<&'a (dyn Fn() -> kvbench_model::engine::Result<Box<dyn Engine>> + Sync)>,
    /// The step ends early once this is set (a stop rule, or the readers of a background
    /// writer ended).
    pub stop: Option<&'a Arc<AtomicBool>>,
    /// A read step's background writer: paced by sleeping only, latency from each update's start.
    pub background: bool,
}

/// Buffers a thread reuses from one unit to the next.
#[derive(Default)]
struct Bufs {
    keys: Vec<Vec<u8>>,
    values: Vec<Vec<u8>>,
    found: Vec<u8>,
    multi: Vec<Option<Vec<u8>>>,
    states: Vec<(u64, u32, bool)>,
    /// A multi-get's record states before its call (beside a writer).
    before: Vec<u32>,
}

impl Bufs {
    /// The first key buffer (single-key units).
    fn first_key(&mut self) -> &mut Vec<u8> {
        self.keys.resize_with(1.max(self.keys.len()), Vec::new);
        &mut self.keys[0]
    }

    /// The key of `record` into the first key buffer.
    fn one_key(&mut self, data: &Data, record: u64) {
        data.key(record, self.first_key());
    }
}

/// The open engine of a step that writes.
fn engine<'a>(ctx: &Ctx<'a>) -> kvbench_model::engine::Result<&'a dyn Engine> {
    ctx.engine.ok_or_else(|| EngineError::Store("no open engine".into()))
}

/// Run this thread's units of the step.
pub fn run_thread(ctx: &Ctx<'_>, thread: u32, threads: u32) -> Tally {
    let mut t = Tally::new();
    if super::step::paced(ctx.step) {
        crate::sys::precise_sleeps();
    }
    let mut stream = match OpStream::with_plan(ctx.data.dataset(), ctx.data.plan(), ctx.step, thread, threads) {
        Ok(s) => s,
        Err(e) => {
            t.error(EngineError::Store(format!("{e:#}")));
            return t;
        }
    };
    if let Some(flag) = ctx.stop {
        stream.stop_on(flag.clone());
    }
    let (mut reader, mut writer) = match open_reader(ctx).and_then(|r| Ok((r, open_writer(ctx)?))) {
        Ok(h) => h,
        Err(e) => {
            t.error(e);
            return t;
        }
    };
    let mut b = Bufs::default();
    if ctx.step.connections * ctx.step.pipeline > 1 && ctx.step.kind == PhaseKind::Get {
        if let Some(rd) = reader.as_deref_mut() {
            pipelined_units(ctx, &mut t, &mut b, rd, &mut stream);
            t.close_interval(u64::MAX);
            return t;
        }
    }
    if crate::step::gets_only(ctx.step) && !ctx.step.open_per_op && !ctx.lock {
        if let Some(rd) = reader.as_deref().filter(|r| r.reads_in_place()) {
            get_units(ctx, &mut t, rd, &mut stream);
            t.close_interval(u64::MAX);
            return t;
        }
    }
    let mut ops: Vec<Op> = Vec::new();
    let mut dirty = false;
    let mut units = 0u64;
    while stream.next_unit(&mut ops) {
        let due = match ops.first().and_then(|o| stream.due_ns(o.k)) {
            Some(d) => match wait_until(ctx, d) {
                Some(d) => Some(d).filter(|_| !ctx.background),
                None => break,
            },
            None => None,
        };
        let handles = (reader.as_deref_mut(), writer.as_deref_mut());
        let stop = run_unit(ctx, &mut t, &mut b, handles, &ops, &mut dirty, due);
        units += 1;
        if units.is_multiple_of(64) {
            ctx.done.fetch_add(64 * ops.len() as u64, Ordering::Relaxed);
        }
        if stop {
            break;
        }
    }
    ctx.done.fetch_add((units % 64) * ops.len() as u64, Ordering::Relaxed);
    t.close_interval(u64::MAX);
    t
}

/// One connection's GETs in flight, oldest first: each op and when the write that sent it began.
#[derive(Default)]
struct Flight {
    ops: VecDeque<(Op, u64)>,
    keys: Vec<Vec<u8>>,
}

/// A pipelined get phase (jobs.rs decides connections and depth): each connection keeps
/// `pipeline` of this thread's gets in flight, memtier's way: whatever replies have arrived
/// are read, and as many new gets go out at once, so the pipeline never drains between
/// rounds. Connections are served in turn with blocking reads (a round-robin, not an event
/// loop: the server answers every connection meanwhile). Each get is one sample, timed from
/// the write that sent it to the read that brought its reply.
fn pipelined_units(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    rd: &mut (dyn Reader + '_),
    stream: &mut OpStream,
) {
    let conns = ctx.step.connections.max(1) as usize;
    if rd.connections() < conns {
        let have = rd.connections();
        tally.error(EngineError::Store(format!("the reader has {have} connections; the step asks {conns}")));
        return;
    }
    let mut flights: Vec<Flight> = (0..conns).map(|_| Flight::default()).collect();
    let mut spare: Vec<Op> = Vec::new();
    let mut done: Vec<Op> = Vec::new();
    let mut first = true;
    while first || flights.iter().any(|f| !f.ops.is_empty()) {
        for (c, f) in flights.iter_mut().enumerate() {
            if !first {
                if f.ops.is_empty() {
                    continue;
                }
                let r = rd.recv_gets(c, f.ops.len(), &mut bufs.multi);
                if received(ctx, tally, f, &bufs.multi, r, &mut done) {
                    return;
                }
            }
            if let Err(e) = refill(ctx, rd, stream, c, f, &mut spare) {
                // Nothing of this write is known to be on the wire: do not wait for it.
                f.ops.clear();
                if tally.error(e) {
                    return;
                }
            }
        }
        first = false;
    }
}

/// Account the replies `recv_gets` returned on flight `flight`: one sample each, then checked.
/// Returns true when the thread must stop.
fn received(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    flight: &mut Flight,
    values: &[Option<Vec<u8>>],
    outcome: kvbench_model::engine::Result<()>,
    done: &mut Vec<Op>,
) -> bool {
    let end = stamp();
    let at = delta(ctx.start, end);
    let n = values.len().min(flight.ops.len());
    done.clear();
    let samples = flight.ops.drain(..n).map(|(o, sent)| {
        done.push(o);
        (delta(sent, end), at)
    });
    tally.sample_gets(samples, ctx.interval_ns);
    ctx.done.fetch_add(n as u64, Ordering::Relaxed);
    match outcome {
        Ok(()) => {
            check_values(ctx, tally, done, &values[..n]);
            false
        }
        Err(e) => {
            if n == 0 {
                // The connection is lost: its other gets will never be answered.
                flight.ops.clear();
            }
            tally.error(e)
        }
    }
}

/// Send as many of the thread's next gets on connection `connection` as `flight` has free slots, in one
/// write (nothing when the stream is done).
fn refill(
    ctx: &Ctx<'_>,
    rd: &mut (dyn Reader + '_),
    stream: &mut OpStream,
    connection: usize,
    flight: &mut Flight,
    one: &mut Vec<Op>,
) -> kvbench_model::engine::Result<()> {
    let depth = ctx.step.pipeline.max(1) as usize;
    let had = flight.ops.len();
    while flight.ops.len() < depth && stream.next_unit(one) {
        flight.ops.extend(one.iter().map(|&o| (o, 0)));
    }
    let new = flight.ops.len() - had;
    if new == 0 {
        return Ok(());
    }
    flight.keys.resize_with(new.max(flight.keys.len()), Vec::new);
    for (i, (o, _)) in flight.ops.range(had..).enumerate() {
        ctx.data.key(o.record, &mut flight.keys[i]);
    }
    let keys: Vec<&[u8]> = flight.keys[..new].iter().map(|k| &k[..]).collect();
    let sent = stamp();
    for (_, s) in flight.ops.range_mut(had..) {
        *s = sent;
    }
    rd.send_gets(connection, &keys)
}

fn open_reader<'a>(ctx: &Ctx<'a>) -> kvbench_model::engine::Result<Option<Box<dyn Reader + 'a>>> {
    match (ctx.engine, super::step::reads(ctx.step, ctx.data.dataset())) {
        (Some(e), true) => Ok(Some(e.reader()?)),
        _ => Ok(None),
    }
}

/// The thread's own writer, when the step writes and the engine has per-thread writers.
fn open_writer<'a>(ctx: &Ctx<'a>) -> kvbench_model::engine::Result<Option<Box<dyn Writer + 'a>>> {
    match (ctx.engine, super::step::writes(ctx.step)) {
        (Some(e), true) => e.writer(),
        _ => Ok(None),
    }
}

/// A thread's reader and writer (either may be absent).
type Handles<'h, 'a> = (Option<&'h mut (dyn Reader + 'a)>, Option<&'h mut (dyn Writer + 'a)>);

/// Apply `batch` through the thread's writer, or the engine's shared `write` without one.
#[inline]
fn put(
    ctx: &Ctx<'_>,
    writer: Option<&mut (dyn Writer + '_)>,
    batch: &[WriteOp<'_>],
) -> kvbench_model::engine::Result<()> {
    match writer {
        Some(writer) => writer.write(batch),
        None => engine(ctx)?.write(batch),
    }
}

/// How long before a due time an open loop stops sleeping and spins: a sleep ends late by the
/// kernel's wake-up latency (tens of µs on a VM, ~100 µs at the 99th percentile), which the
/// loop would count as latency.
pub(super) const SPIN_NS: u64 = 100_000;

/// The longest single sleep of an open loop: how late it may see its stop flag.
const MAX_SLEEP_NS: u64 = 20_000_000;

/// Open loop: waits until `due` ns after the start. Sleeps (with no timer slack, set when the
/// thread starts), then spins for the last [`spin_ns`], so pacing does not burn a core.
/// Returns the due time, or `None` when the step's stop flag was set meanwhile (a replay's next
/// request may be due hours later than the phase's duration).
fn wait_until(ctx: &Ctx<'_>, due: u64) -> Option<u64> {
    let spin = spin_ns(ctx.background);
    loop {
        if ctx.stop.is_some_and(|f| f.load(Ordering::Relaxed)) {
            return None;
        }
        let now = delta(ctx.start, stamp());
        if now >= due {
            return Some(due);
        }
        if due - now > spin {
            std::thread::sleep(std::time::Duration::from_nanos((due - now - spin).min(MAX_SLEEP_NS)));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// How long an open loop spins before a due time. A background writer never spins: at 10 000
/// updates a second its units are [`SPIN_NS`] apart, so it would spin without pause and take a
/// core from the readers it stands beside; it sleeps instead, and its latency is counted from
/// each update's start rather than its due time, so the wake-up delay is not in it.
fn spin_ns(background: bool) -> u64 {
    if background {
        0
    } else {
        SPIN_NS
    }
}

/// Record one timed unit that started at `t0` (or was due at `due`); returns the end stamp.
#[inline]
fn sample(ctx: &Ctx<'_>, tally: &mut Tally, kind: PhaseKind, t0: u64, due: Option<u64>, ops: u64) {
    let end = stamp();
    let at = delta(ctx.start, end);
    let dt = match due {
        Some(d) => at.saturating_sub(d),
        None => delta(t0, end),
    };
    tally.sample(kind, dt, ops, at, ctx.interval_ns);
}

fn run_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    (reader, writer): Handles<'_, '_>,
    ops: &[Op],
    dirty: &mut bool,
    due: Option<u64>,
) -> bool {
    let Some(first) = ops.first() else { return false };
    let merges = first.kind == PhaseKind::Update && ctx.data.dataset().value.merges_updates();
    let r = match (first.kind, reader) {
        (PhaseKind::Update, _) if merges && ctx.engine.is_some_and(|e| e.writes_fields()) => {
            // The engine keeps fields apart: the one field goes out alone, nothing is read.
            *dirty = true;
            field_unit(ctx, tally, bufs, writer, first, due)
        }
        (PhaseKind::Update, Some(rd)) if merges => {
            // One field: read the record, merge the field in, write it back (units of one op).
            *dirty = true;
            rmw_unit(ctx, tally, bufs, (rd, writer), first, due)
        }
        (PhaseKind::Load | PhaseKind::Update | PhaseKind::Insert | PhaseKind::Delete, rd) => {
            // A reader's snapshot is not held across a write (as the worker core's blocks
            // do): an MVCC store could free no page while it lives, and a run of writes
            // would grow it without bound (LMDB's map fills).
            if let Some(rd) = rd {
                if let Err(e) = rd.refresh() {
                    return tally.error(e);
                }
            }
            *dirty = true;
            write_unit(ctx, tally, bufs, writer, ops, due)
        }
        (_, _) if ctx.step.open_per_op => open_get_unit(ctx, tally, bufs, first, due),
        (kind, Some(rd)) if kind == PhaseKind::MultiGet || ctx.step.kind == PhaseKind::MultiGet => {
            multi_get_unit(ctx, tally, bufs, rd, ops, due)
        }
        (kind, Some(rd)) => {
            // A reader holding a snapshot must see this thread's writes, and with writers on
            // other threads, theirs too. The snapshot is taken after the record's state is
            // read (or its lock taken), so it is never older than the state it is checked
            // against; the refresh is outside the timing.
            let fresh = std::mem::take(dirty) || ctx.lock;
            match kind {
                PhaseKind::Scan => {
                    if fresh {
                        if let Err(e) = rd.refresh() {
                            return tally.error(e);
                        }
                    }
                    scan_unit(ctx, tally, bufs, rd, first, due)
                }
                PhaseKind::Rmw => {
                    *dirty = true;
                    rmw_unit(ctx, tally, bufs, (rd, writer), first, due)
                }
                _ => get_unit(ctx, tally, bufs, rd, first, due, fresh),
            }
        }
        (_, None) => Err(EngineError::Store("no reader for a read operation".into())),
    };
    match r {
        Ok(()) => false,
        Err(e) => tally.error_at(e, delta(ctx.start, stamp()), ctx.interval_ns),
    }
}

/// A write batch: derive keys and values, take the records, one timed `write`.
fn write_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    mut writer: Option<&mut (dyn Writer + '_)>,
    ops: &[Op],
    due: Option<u64>,
) -> kvbench_model::engine::Result<()> {
    // A batch of one has nothing to overlap: its row is derived outside the timed call.
    let streamed = ops.len() > 1
        && ops.iter().all(|o| o.kind == PhaseKind::Load)
        && writer.as_deref().is_some_and(|w| w.streams_rows());
    if let (true, Some(w)) = (streamed, writer.as_deref_mut()) {
        return stream_unit(ctx, tally, w, ops, due);
    }
    let n = ops.len();
    bufs.keys.resize_with(n.max(bufs.keys.len()), Vec::new);
    bufs.values.resize_with(n.max(bufs.values.len()), Vec::new);
    lock_records(ctx, bufs, ops);
    for (i, o) in ops.iter().enumerate() {
        let c = ctx.data.canon(o.record);
        ctx.data.key(o.record, &mut bufs.keys[i]);
        if o.kind == PhaseKind::Load {
            // Each record loads its own value: of a repeated key, the last loaded one stays.
            ctx.data.value(o.record, 0, &mut bufs.values[i]);
            continue;
        }
        let put = o.kind != PhaseKind::Delete;
        // Locked records continue from their pending state, so a record repeated within the
        // batch writes its next version; one thread updates the states as it goes.
        let held = bufs.states.iter().position(|e| e.0 == c);
        let s = match held {
            Some(at) => bufs.states[at].1,
            None => ctx.state.begin_write(c, false),
        };
        if put {
            ctx.data.value(c, writes(s), &mut bufs.values[i]);
        }
        let next = if put { after_put(s) } else { after_delete(s) };
        match held {
            Some(at) => bufs.states[at].1 = next,
            None => ctx.state.end_write(c, next),
        }
    }
    let batch: Vec<WriteOp<'_>> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| WriteOp {
            key: &bufs.keys[i],
            value: (o.kind != PhaseKind::Delete).then_some(&bufs.values[i][..]),
        })
        .collect();
    let t0 = stamp();
    let r = put(ctx, writer, &batch);
    sample(ctx, tally, ops[0].kind, t0, due, n as u64);
    for &(c, next, _) in &bufs.states {
        ctx.state.end_write(c, next);
    }
    r
}

/// A load batch the writer derives as it sends it ([`Writer::streams_rows`]): the rows are
/// derived inside the timed call, as a peer client's reading of its input file is inside its
/// load, and never held all at once. A load writes new records only, so no state changes.
fn stream_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    writer: &mut (dyn Writer + '_),
    ops: &[Op],
    due: Option<u64>,
) -> kvbench_model::engine::Result<()> {
    let data = ctx.data;
    let mut row = |i: usize, key: &mut Vec<u8>, value: &mut Vec<u8>| {
        data.key(ops[i].record, key);
        data.value(ops[i].record, 0, value);
    };
    let t0 = stamp();
    let r = writer.write_rows(ops.len(), &mut row);
    sample(ctx, tally, PhaseKind::Load, t0, due, ops.len() as u64);
    r
}

/// With writers on several threads, take the batch's records before writing, in ascending
/// record order so two batches sharing records can never wait on each other.
fn lock_records(ctx: &Ctx<'_>, bufs: &mut Bufs, ops: &[Op]) {
    bufs.states.clear();
    if !ctx.lock || ops.first().is_some_and(|o| o.kind == PhaseKind::Load) {
        return;
    }
    let mut records: Vec<u64> = ops.iter().map(|o| ctx.data.canon(o.record)).collect();
    records.sort_unstable();
    records.dedup();
    for c in records {
        let s = ctx.state.begin_write(c, true);
        bufs.states.push((c, s, true));
    }
}

/// The state before a read (for the multi-writer rule; without writers it is exact).
#[inline]
fn read_state(ctx: &Ctx<'_>, record: u64) -> u32 {
    ctx.state.get(record)
}

#[inline]
fn check(ctx: &Ctx<'_>, tally: &mut Tally, record: u64, exp: Expect, found: Option<&[u8]>) {
    if ctx.step.verify {
        judge(ctx.data, tally, record, exp, found);
    }
}

/// Count what a read of record `c` returned against what it may return.
#[inline]
pub(super) fn judge(data: &Data, tally: &mut Tally, record: u64, exp: Expect, found: Option<&[u8]>) {
    match (exp, found) {
        (Expect::Absent, None) | (Expect::Between(..), None) => {}
        (Expect::Absent, Some(_)) => tally.mismatches += 1,
        (Expect::Version(_), None) => tally.missing += 1,
        (Expect::Version(v), Some(f)) => {
            if !data.matches(record, v, f) {
                tally.mismatches += 1
            }
        }
        (Expect::Between(lo, hi), Some(f)) => {
            if !(lo..=hi).any(|v| data.matches(record, v, f)) {
                tally.mismatches += 1
            }
        }
    }
}

/// What a get needs before its call: the record, its state and, when the state cannot change
/// during the call (no writer on another thread), the value the call must return.
struct Pending<'d> {
    k: u64,
    c: u64,
    s1: u32,
    exact: Option<Expected<'d>>,
}

/// Derive `o`'s key into `key` and what its read must return.
#[inline(always)]
fn pending<'d>(ctx: &Ctx<'d>, key: &mut Vec<u8>, op: &Op) -> Pending<'d> {
    let c = ctx.data.canon(op.record);
    ctx.data.key(op.record, key);
    let s1 = read_state(ctx, c);
    let exact = (!ctx.lock && ctx.step.verify && state::present(s1)).then(|| ctx.data.expected(c, writes(s1) - 1));
    Pending { k: op.k, c, s1, exact }
}

/// Check what a get returned against what it had to.
#[inline(always)]
fn verify_get(ctx: &Ctx<'_>, tally: &mut Tally, pending: &Pending<'_>, found: Option<&[u8]>) {
    match (pending.exact, found) {
        (Some(e), Some(f)) => tally.mismatches += u64::from(!e.matches(f)),
        (Some(_), None) => tally.missing += 1,
        (None, found) => {
            let s2 = if ctx.lock { read_state(ctx, pending.c) } else { pending.s1 };
            check(ctx, tally, pending.c, State::expect(pending.s1, s2), found);
        }
    }
}

/// One timed get (after a refresh when the reader must see other threads' writes).
fn timed_get<'r>(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    rd: &'r mut (dyn Reader + '_),
    key: &[u8],
    buf: &'r mut Vec<u8>,
    due: Option<u64>,
    fresh: bool,
) -> kvbench_model::engine::Result<Option<&'r [u8]>> {
    if fresh {
        rd.refresh()?;
    }
    let t0 = stamp();
    let r = rd.get_ref(key, buf);
    sample(ctx, tally, PhaseKind::Get, t0, due, 1);
    r
}

/// A get phase on a reader that reads in place ([`Reader::get_shared`]): each value is asked
/// of the CPU (prefetched) right after its get and checked after the next get, so its cache
/// lines arrive while the next key is looked up instead of stalling the check. Every value is
/// still checked, outside the timing; the values stay valid because nothing can refresh or
/// write through the reader while they are held.
fn get_units(ctx: &Ctx<'_>, tally: &mut Tally, rd: &(dyn Reader + '_), stream: &mut OpStream) {
    let (mut key, mut next_key) = (Vec::new(), Vec::new());
    // A get unit is one op: the stream's ops one by one are its units.
    let Some(first) = stream.next() else { return };
    let mut cur = pending(ctx, &mut key, &first);
    // The op after next is drawn one get early: its draw (a chain of multiplies) and the next
    // op's key and value (another chain) then run side by side between two calls.
    let mut after = stream.next();
    let mut held = None;
    let mut units = 0u64;
    loop {
        let due = stream.due_ns(cur.k).map(|d| wait_until(ctx, d).unwrap_or(d));
        let t0 = stamp();
        let got = rd.get_shared(&key);
        sample(ctx, tally, PhaseKind::Get, t0, due, 1);
        if let Some((p, v)) = held.take() {
            verify_get(ctx, tally, &p, v);
        }
        let next = after.map(|o| pending(ctx, &mut next_key, &o));
        after = stream.next();
        let stop = match got {
            Ok(v) => {
                v.inspect(|v| prefetch(v));
                held = Some((cur, v));
                false
            }
            Err(e) => tally.error_at(e, delta(ctx.start, stamp()), ctx.interval_ns),
        };
        units += 1;
        if units.is_multiple_of(64) {
            ctx.done.fetch_add(64, Ordering::Relaxed);
        }
        match next {
            Some(n) if !stop => cur = n,
            _ => break,
        }
        std::mem::swap(&mut key, &mut next_key);
    }
    if let Some((p, v)) = held {
        verify_get(ctx, tally, &p, v);
    }
    ctx.done.fetch_add(units % 64, Ordering::Relaxed);
}

/// One get: in a mixed phase, with writers on other threads, or on a reader that copies.
fn get_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    rd: &mut (dyn Reader + '_),
    op: &Op,
    due: Option<u64>,
    fresh: bool,
) -> kvbench_model::engine::Result<()> {
    let p = pending(ctx, bufs.first_key(), op);
    let found = timed_get(ctx, tally, rd, &bufs.keys[0], &mut bufs.found, due, fresh)?;
    verify_get(ctx, tally, &p, found);
    Ok(())
}

fn multi_get_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    rd: &mut (dyn Reader + '_),
    ops: &[Op],
    due: Option<u64>,
) -> kvbench_model::engine::Result<()> {
    bufs.keys.resize_with(ops.len().max(bufs.keys.len()), Vec::new);
    for (i, o) in ops.iter().enumerate() {
        ctx.data.key(o.record, &mut bufs.keys[i]);
    }
    let keys: Vec<&[u8]> = bufs.keys[..ops.len()].iter().map(|k| &k[..]).collect();
    // Beside a writer, a record may change during the call: its value is judged between the
    // states before and after, and the reader must see the writes before the call.
    bufs.before.clear();
    if ctx.lock {
        bufs.before.extend(ops.iter().map(|o| read_state(ctx, ctx.data.canon(o.record))));
        rd.refresh()?;
    }
    let t0 = stamp();
    let r = rd.multi_get(&keys, &mut bufs.multi);
    sample(ctx, tally, PhaseKind::MultiGet, t0, due, ops.len() as u64);
    r?;
    if ctx.lock {
        check_between(ctx, tally, ops, &bufs.multi, &bufs.before);
    } else {
        check_values(ctx, tally, ops, &bufs.multi);
    }
    Ok(())
}

/// Verify a multi-get's values against the states before the call (`before`) and now.
fn check_between(ctx: &Ctx<'_>, tally: &mut Tally, ops: &[Op], values: &[Option<Vec<u8>>], before: &[u32]) {
    if values.len() != ops.len() {
        tally.mismatches += ops.len() as u64;
        return;
    }
    for ((o, v), &s1) in ops.iter().zip(values).zip(before) {
        let c = ctx.data.canon(o.record);
        check(ctx, tally, c, State::expect(s1, read_state(ctx, c)), v.as_deref());
    }
}

/// Verify the values several keys returned (a multi-get, a pipeline), in the order of `ops`.
fn check_values(ctx: &Ctx<'_>, tally: &mut Tally, ops: &[Op], values: &[Option<Vec<u8>>]) {
    if values.len() != ops.len() {
        tally.mismatches += ops.len() as u64;
        return;
    }
    for (o, v) in ops.iter().zip(values) {
        let c = ctx.data.canon(o.record);
        let s = read_state(ctx, c);
        check(ctx, tally, c, State::expect(s, s), v.as_deref());
    }
}

/// Read-modify-write, or an update merging one field into the record: the read and the write
/// of the next version are one timed unit, of the op's kind.
fn rmw_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    (rd, writer): (&mut (dyn Reader + '_), Option<&mut (dyn Writer + '_)>),
    op: &Op,
    due: Option<u64>,
) -> kvbench_model::engine::Result<()> {
    let c = ctx.data.canon(op.record);
    bufs.values.resize_with(1.max(bufs.values.len()), Vec::new);
    bufs.one_key(ctx.data, op.record);
    let s = ctx.state.begin_write(c, ctx.lock);
    // The read must see the record's last write: a snapshot taken after the record is ours.
    if let Err(e) = rd.refresh() {
        ctx.state.end_write(c, s);
        return Err(e);
    }
    ctx.data.value(c, writes(s), &mut bufs.values[0]);
    // An engine that keeps fields apart writes back only the field changed (YCSB F on Redis).
    let apart = ctx.engine.is_some_and(|e| e.writes_fields());
    let field = match if apart { one_field(ctx, c, s, &bufs.values[0]) } else { Ok(None) } {
        Ok(f) => f,
        Err(e) => {
            ctx.state.end_write(c, s);
            return Err(e);
        }
    };
    let t0 = stamp();
    let r = rd
        .get(&bufs.keys[0], &mut bufs.found)
        .and_then(|found| write_one(ctx, writer, &bufs.keys[0], &bufs.values[0], field).map(|_| found));
    // Timed as what the step asked: a read-modify-write, or an update merging one field.
    sample(ctx, tally, op.kind, t0, due, 1);
    ctx.state.end_write(c, if r.is_ok() { after_put(s) } else { s });
    let found = r?;
    let exp = if state::present(s) { Expect::Version(writes(s) - 1) } else { Expect::Absent };
    check(ctx, tally, c, exp, found.then_some(&bufs.found[..]));
    Ok(())
}

/// An update of one field on an engine that keeps fields apart ([`Engine::writes_fields`]):
/// only that field is written, as YCSB's Redis binding's HSET; a record not present (or a
/// version that writes every field) is written whole.
fn field_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    writer: Option<&mut (dyn Writer + '_)>,
    op: &Op,
    due: Option<u64>,
) -> kvbench_model::engine::Result<()> {
    let c = ctx.data.canon(op.record);
    bufs.values.resize_with(1.max(bufs.values.len()), Vec::new);
    bufs.one_key(ctx.data, op.record);
    let s = ctx.state.begin_write(c, ctx.lock);
    ctx.data.value(c, writes(s), &mut bufs.values[0]);
    let (key, value) = (&bufs.keys[0][..], &bufs.values[0][..]);
    let field = match one_field(ctx, c, s, value) {
        Ok(f) => f,
        Err(e) => {
            ctx.state.end_write(c, s);
            return Err(e);
        }
    };
    let t0 = stamp();
    let r = write_one(ctx, writer, key, value, field);
    sample(ctx, tally, op.kind, t0, due, 1);
    ctx.state.end_write(c, if r.is_ok() { after_put(s) } else { s });
    r
}

/// The one field (name, bytes) the next version of record `record` in state `record_state` writes, found in
/// its derived `value` before the clock starts; `None` when it writes the whole record.
fn one_field<'v>(
    ctx: &Ctx<'_>,
    record: u64,
    record_state: u32,
    value: &'v [u8],
) -> kvbench_model::engine::Result<Option<(&'v [u8], &'v [u8])>> {
    let Some(i) = ctx.data.field_written(record, writes(record_state)).filter(|_| state::present(record_state)) else {
        return Ok(None);
    };
    let field = kvbench_model::job::split_fields(value).and_then(|f| f.get(i as usize).copied());
    field.map(Some).ok_or_else(|| EngineError::Store(format!("value of record {record} has no field {i}")))
}

/// Writes one field where there is one (the engine keeps fields apart), else the record.
fn write_one(
    ctx: &Ctx<'_>,
    writer: Option<&mut (dyn Writer + '_)>,
    key: &[u8],
    value: &[u8],
    field: Option<(&[u8], &[u8])>,
) -> kvbench_model::engine::Result<()> {
    match (field, writer) {
        (Some((name, bytes)), Some(w)) => w.write_field(key, name, bytes),
        (Some(_), None) => Err(EngineError::Store("a write of one field needs the engine's writer".into())),
        (None, w) => put(ctx, w, &[WriteOp { key, value: Some(value) }]),
    }
}

/// Article 000's method: open, read one key, close — all inside the sample.
fn open_get_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    op: &Op,
    due: Option<u64>,
) -> kvbench_model::engine::Result<()> {
    let open = ctx.reopen.ok_or_else(|| EngineError::Store("open per operation without an opener".into()))?;
    let c = ctx.data.canon(op.record);
    bufs.one_key(ctx.data, op.record);
    let t0 = stamp();
    let r = open().and_then(|e| {
        let found = e.reader()?.get(&bufs.keys[0], &mut bufs.found)?;
        e.close()?;
        Ok(found)
    });
    sample(ctx, tally, PhaseKind::Get, t0, due, 1);
    let found = r?;
    let s = read_state(ctx, c);
    check(ctx, tally, c, State::expect(s, s), found.then_some(&bufs.found[..]));
    Ok(())
}

/// Checks a scan's records as the engine visits them (inside the timed scan: a comparison
/// per record). Alone, the scan must return exactly the present records from its start
/// position with their current values. Beside writers on other threads, records may appear
/// or vanish during the scan: then keys must still be in order and of the dataset, and each
/// value one of the record's last versions.
pub(super) struct ScanCheck {
    strict: bool,
    p: u64,
    positions: u64,
    expect: Vec<u8>,
    prev: Vec<u8>,
    pub(super) seen: u64,
    pub(super) bad: u64,
    /// Alone: present records the scan stepped over (the store lacks them).
    skipped: u64,
    /// Alone: records returned that were the next present record.
    matched: u64,
}

/// Versions a concurrent scan accepts below the newest one.
const SCAN_SLACK: u32 = 4;

impl ScanCheck {
    /// A scan from sorted position `position` of `positions`; `strict` when no other thread writes.
    pub(super) fn new(strict: bool, position: u64, positions: u64) -> ScanCheck {
        ScanCheck {
            strict,
            p: position,
            positions,
            expect: Vec::new(),
            prev: Vec::new(),
            seen: 0,
            bad: 0,
            skipped: 0,
            matched: 0,
        }
    }

    fn present(data: &Data, state: &State, position: u64) -> bool {
        state::present(state.get(data.canon(data.sorted(position))))
    }

    /// Check one visited record; false when the scan went past the last position.
    pub(super) fn visit(&mut self, data: &Data, state: &State, key: &[u8], value: &[u8]) -> bool {
        self.seen += 1;
        let found = if self.strict { self.align_alone(data, state, key) } else { self.align_beside_writers(data, key) };
        let Some(at_key) = found else { return self.p < self.positions };
        let ok = at_key && {
            let c = data.canon(data.sorted(self.p));
            self.value_ok(data, c, writes(state.get(c)), value)
        };
        self.bad += u64::from(!ok);
        if at_key {
            self.p += 1;
            self.matched += 1;
        }
        true
    }

    /// Alone, records are compared by key, each once: present records before `key` were not
    /// returned (missing), and `key` before the next present record is a record that should not
    /// be there. Some(true): `key` is the next present record; Some(false): it is not; None: `key`
    /// is past the last position (counted wrong).
    fn align_alone(&mut self, data: &Data, state: &State, key: &[u8]) -> Option<bool> {
        loop {
            while self.p < self.positions && !Self::present(data, state, self.p) {
                self.p += 1;
            }
            if self.p >= self.positions {
                self.bad += 1;
                return None;
            }
            data.key(data.sorted(self.p), &mut self.expect);
            match self.expect[..].cmp(key) {
                std::cmp::Ordering::Less => {
                    self.skipped += 1;
                    self.p += 1;
                }
                std::cmp::Ordering::Greater => return Some(false),
                std::cmp::Ordering::Equal => return Some(true),
            }
        }
    }

    /// Beside writers, keys must be in order and of the dataset: the first position at or past
    /// `key`, which must be `key`'s.
    fn align_beside_writers(&mut self, data: &Data, key: &[u8]) -> Option<bool> {
        if self.seen > 1 && key <= &self.prev[..] {
            self.bad += 1;
        }
        self.prev.clear();
        self.prev.extend_from_slice(key);
        while self.p < self.positions {
            data.key(data.sorted(self.p), &mut self.expect);
            if &self.expect[..] >= key {
                break;
            }
            self.p += 1;
        }
        if self.p >= self.positions {
            self.bad += 1;
            return None;
        }
        data.key(data.sorted(self.p), &mut self.expect);
        Some(key == &self.expect[..])
    }

    fn value_ok(&self, data: &Data, record: u64, writes: u32, value: &[u8]) -> bool {
        if self.strict {
            return data.matches(record, writes.saturating_sub(1), value);
        }
        (writes.saturating_sub(SCAN_SLACK)..=writes).any(|x| data.matches(record, x, value))
    }

    /// Present records the scan should have returned but did not (alone only): those it
    /// stepped over, and when it returned fewer than `len` records, the present ones after the
    /// last it returned, up to `len` expected in all.
    pub(super) fn missing(&self, data: &Data, state: &State, len: u64) -> u64 {
        if !self.strict {
            return 0;
        }
        let mut tail = 0u64;
        if self.seen < len {
            let left = len.saturating_sub(self.matched + self.skipped);
            let mut q = self.p;
            while q < self.positions && tail < left {
                tail += u64::from(Self::present(data, state, q));
                q += 1;
            }
        }
        self.skipped + tail
    }
}

/// A scan from record `o.record`'s key for `o.len` records (0: to the end), as YCSB's.
fn scan_unit(
    ctx: &Ctx<'_>,
    tally: &mut Tally,
    bufs: &mut Bufs,
    rd: &mut (dyn Reader + '_),
    op: &Op,
    due: Option<u64>,
) -> kvbench_model::engine::Result<()> {
    let data = ctx.data;
    let positions = data.positions();
    let len = if op.len == 0 { positions } else { op.len };
    bufs.keys.resize_with(1.max(bufs.keys.len()), Vec::new);
    data.key(op.record, &mut bufs.keys[0]);
    let p = data.rank(op.record);
    let mut check = ScanCheck::new(!ctx.lock, p, positions);
    let verify = ctx.step.verify;
    let mut seen = 0u64;
    let t0 = stamp();
    let r = rd.scan(Some(&bufs.keys[0]), len as usize, &mut |k, v| {
        seen += 1;
        !verify || check.visit(data, ctx.state, k, v)
    });
    sample(ctx, tally, PhaseKind::Scan, t0, due, seen);
    r?;
    if verify {
        tally.mismatches += check.bad;
        tally.missing += check.missing(data, ctx.state, len);
    }
    Ok(())
}

#[cfg(test)]
mod scan_check_tests {
    use super::*;
    use kvbench_model::job::{Dataset, Generator, KeyShape, ValueShape};
    use kvbench_model::spec::{KeyKind, ValueContent};

    fn data(records: u64) -> Data {
        let ds = Dataset {
            generator: Generator::Synthetic,
            key: KeyShape { kind: KeyKind::Decimal, width: 8 },
            value: ValueShape { min: 10, max: 10, content: ValueContent::Printable, ..Default::default() },
            loaded: records,
            total: records,
            ordered: true,
            pool_seed: 1,
            value_seed: 2,
            open_records: records,
            open_bytes: 0,
        };
        Data::open(&ds, None).unwrap()
    }

    /// A scan alone from position 0 for `len` records of a store that lost `deleted` and
    /// returns a wrong value for `flipped`: (wrong values, missing).
    fn scan(records: u64, len: u64, flipped: &[u64], deleted: &[u64]) -> (u64, u64) {
        let (d, state) = (data(records), State::new(records, records));
        let mut check = ScanCheck::new(true, 0, d.positions());
        let (mut k, mut v, mut returned) = (Vec::new(), Vec::new(), 0);
        for r in (0..records).filter(|r| !deleted.contains(r)) {
            if returned == len {
                break;
            }
            d.key(r, &mut k);
            d.value(r, 0, &mut v);
            if flipped.contains(&r) {
                v[0] ^= 1;
            }
            returned += 1;
            assert!(check.visit(&d, &state, &k, &v));
        }
        (check.bad, check.missing(&d, &state, len))
    }

    #[test]
    fn regression_a_scan_counts_wrong_and_missing_records_each_once() {
        let flipped: Vec<u64> = (0..20).map(|i| 100 + i * 2_000).collect();
        let deleted: Vec<u64> = (0..5).map(|i| 1_001 + i * 9_000).collect();
        // Was "49 995 wrong values, 5 missing": every record after the first missing one.
        assert_eq!(scan(50_000, 50_000, &flipped, &deleted), (20, 5));
        assert_eq!(scan(50_000, 50_000, &[], &[]), (0, 0));
        // A bounded scan returns records past its window in place of the lost ones.
        assert_eq!(scan(500, 100, &[3], &[50]), (1, 1));
        // A store that lost its tail returns fewer records than asked.
        assert_eq!(scan(200, 100, &[], &(95..200).collect::<Vec<_>>()), (0, 5));
    }

    #[test]
    fn a_record_that_should_not_be_there_is_one_wrong_value() {
        let (d, mut state) = (data(100), State::new(100, 100));
        state.materialize();
        state.end_write(40, after_delete(state.get(40)));
        let mut check = ScanCheck::new(true, 0, d.positions());
        let (mut k, mut v) = (Vec::new(), Vec::new());
        for r in 0..100 {
            d.key(r, &mut k);
            d.value(r, 0, &mut v);
            check.visit(&d, &state, &k, &v);
        }
        assert_eq!((check.bad, check.missing(&d, &state, 100)), (1, 0), "record 40 came back");
    }
}

#[cfg(test)]
mod pacing_tests {
    use super::*;

    #[test]
    fn regression_a_background_writer_never_spins() {
        // At 10 000 updates a second a writer that spun for SPIN_NS before each due time would
        // never sleep, and take a core from the readers beside it (db_bench's readwhilewriting).
        assert_eq!(spin_ns(true), 0);
        assert_eq!(spin_ns(false), SPIN_NS);
        assert_eq!(
            kvbench_plan::opstream::unit_due_ns(1, 10_000.0),
            SPIN_NS,
            "the rate at which spinning fills every gap"
        );
    }
}
