//! The operations one thread runs in an ops step (docs/plan-format.md, "Operation streams"):
//! every op is a function of its index k and the step's seeds, so a thread derives exactly its
//! own units. A unit is one op, one write batch or one multi-get request; unit j belongs to
//! thread j mod threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, ensure};

use crate::derive::{below, rnd, unit, ycsbhash, zipf_with, Latest, Perm};
use crate::job::{Dataset, Dist, OpsStep, PhaseKind, ScanLen};
use crate::planfile::PlanFile;
use crate::replay::{self, Entry, OP_BYTES};

/// A scan's length when it runs to the end of the key space.
pub const TO_END: u64 = u64::MAX;

/// Ops a stream runs between two looks at its stop flag (whole units; paced streams look
/// before every unit, as they wait between units anyway).
pub const STOP_CHUNK: u64 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// Global index of the op in the step.
    pub k: u64,
    pub kind: PhaseKind,
    /// The record; a scan starts at its key (YCSB's CoreWorkload scans so).
    pub record: u64,
    /// Scans: records to visit (`TO_END`: to the end); 0 for other kinds.
    pub len: u64,
}

/// How records are drawn (the job's `dist`, with what can be computed once).
#[derive(Debug, Clone)]
enum Picker {
    Sequential {
        n: u64,
        start: u64,
    },
    /// `base` is the first op of the pass `perm` belongs to (ops base .. base + n); with
    /// `replay` every pass uses pass 0's permutation.
    Shuffle {
        n: u64,
        perm_seed: u64,
        base: u64,
        perm: Perm,
        replay: bool,
    },
    Uniform {
        n: u64,
    },
    Hot {
        record: u64,
    },
    Zipfian {
        n: u64,
        items: f64,
        zetan: f64,
        eta: f64,
        second: f64,
        alpha: f64,
    },
    Latest(Latest),
}

impl Picker {
    fn new(dist: &Dist) -> anyhow::Result<Picker> {
        let n = dist_n(dist);
        ensure!(
            n >= 1 || matches!(dist, Dist::Hot { .. } | Dist::Latest { .. }),
            "dist {dist:?}: n must be at least 1"
        );
        Ok(match *dist {
            Dist::Sequential { n, start } => Picker::Sequential { n, start },
            Dist::Shuffle { n } => {
                Picker::Shuffle { n, perm_seed: 0, base: u64::MAX, perm: Perm::new(1, 0), replay: false }
            }
            Dist::LoadOrder { n } => {
                Picker::Shuffle { n, perm_seed: 0, base: u64::MAX, perm: Perm::new(1, 0), replay: true }
            }
            Dist::Uniform { n } => Picker::Uniform { n },
            Dist::Hot { record, .. } => Picker::Hot { record },
            Dist::Zipfian { n, items, zetan, eta, theta, alpha } => {
                let second = 1.0 + 0.5f64.powf(theta);
                Picker::Zipfian { n, items: items as f64, zetan, eta, second, alpha }
            }
            Dist::Latest { count, zetan, eta, theta, alpha, .. } => {
                Picker::Latest(Latest::new(count, zetan, eta, theta, alpha))
            }
        })
    }

    /// The record of op number `op`, `last` being the newest record written before it.
    #[inline]
    fn pick(&mut self, rec_seed: u64, op: u64, last: u64) -> u64 {
        match self {
            Picker::Sequential { n, start } => start.wrapping_add(op) % *n,
            Picker::Shuffle { n, perm_seed, base, perm, replay } => {
                // A division per op would cost more than the rest: only a new pass divides.
                if op < *base || op - *base >= *n {
                    let pass = op / *n;
                    let seed = rnd(*perm_seed, if *replay { 0 } else { pass });
                    (*base, *perm) = (pass * *n, Perm::new(*n, seed));
                }
                perm.at(op - *base)
            }
            Picker::Uniform { n } => below(rnd(rec_seed, op), *n),
            Picker::Hot { record } => *record,
            Picker::Zipfian { n, items, zetan, eta, second, alpha } => {
                let x = rnd(rec_seed, op);
                let draw = |x: u64| ycsbhash(zipf_with(unit(x), *items, *zetan, *eta, *second, *alpha)) as u64 % *n;
                let mut r = draw(x);
                let mut t = 0;
                // YCSB draws again when the key is above the newest inserted one.
                while r > last {
                    r = draw(rnd(x, t));
                    t += 1;
                }
                r
            }
            Picker::Latest(g) => g.next(unit(rnd(rec_seed, op)), last),
        }
    }
}

fn dist_n(dist: &Dist) -> u64 {
    match *dist {
        Dist::Sequential { n, .. }
        | Dist::Shuffle { n }
        | Dist::LoadOrder { n }
        | Dist::Uniform { n }
        | Dist::Hot { n, .. } => n,
        Dist::Zipfian { n, .. } | Dist::Latest { n, .. } => n,
    }
}

/// Whether the step runs scans: a scan can be a long request, so its stream looks at the stop
/// flag before each one (a duration then overruns by one request, not by a chunk of them).
fn has_scans(step: &OpsStep) -> bool {
    step.kind == PhaseKind::Scan || step.kinds.contains(&PhaseKind::Scan)
}

/// Ops of a unit: batches for writes, requests for multi-get, single ops otherwise.
fn unit_size(step: &OpsStep) -> u64 {
    match step.kind {
        PhaseKind::Load | PhaseKind::Update | PhaseKind::Insert | PhaseKind::Delete => step.batch.max(1) as u64,
        PhaseKind::MultiGet => step.keys_per_request.max(1) as u64,
        _ => 1,
    }
}

/// Which kind each op has: one kind, or a mixed phase's draw.
#[derive(Debug, Clone)]
struct Kinds {
    single: Option<PhaseKind>,
    kinds: Vec<PhaseKind>,
    thresholds: Vec<u64>,
    seed: u64,
}

impl Kinds {
    fn new(step: &OpsStep) -> anyhow::Result<Kinds> {
        ensure!(
            step.kind.runs_ops(),
            "step {}: an ops step of kind `{}` has no operations to run",
            step.name,
            step.kind.as_str()
        );
        if step.kind != PhaseKind::Mixed {
            return Ok(Kinds { single: Some(step.kind), kinds: vec![], thresholds: vec![], seed: 0 });
        }
        ensure!(!step.kinds.is_empty(), "step {}: a mixed phase needs kinds", step.name);
        ensure!(
            step.kinds.len() == step.thresholds.len(),
            "step {}: {} kinds but {} thresholds",
            step.name,
            step.kinds.len(),
            step.thresholds.len()
        );
        for k in &step.kinds {
            ensure!(
                k.mixes(),
                "step {}: `{}` cannot be part of a mix (allowed: get, scan, update, insert, delete, rmw)",
                step.name,
                k.as_str()
            );
        }
        let (kinds, thresholds) = (step.kinds.clone(), step.thresholds.clone());
        Ok(Kinds { single: None, kinds, thresholds, seed: step.kind_seed })
    }

    #[inline]
    fn at(&self, op: u64) -> PhaseKind {
        if let Some(kind) = self.single {
            return kind;
        }
        let x = rnd(self.seed, op);
        let i = self.thresholds.iter().position(|&t| x < t).unwrap_or(self.kinds.len() - 1);
        self.kinds[i]
    }

    fn may_insert(&self) -> bool {
        self.single == Some(PhaseKind::Insert) || self.kinds.contains(&PhaseKind::Insert)
    }
}

/// The ops thread `thread` of `threads` runs in an ops step, unit by unit.
#[derive(Debug, Clone)]
pub struct OpStream {
    count: u64,
    unit: u64,
    stride: u64,
    kinds: Kinds,
    picker: Picker,
    rec_seed: u64,
    len_seed: u64,
    scan: ScanLen,
    insert_base: u64,
    last0: u64,
    /// Next op; end of the run of ops this thread runs without a gap (one unit, or every op
    /// for a single thread); inserts among ops before `k`.
    k: u64,
    block_end: u64,
    inserts: u64,
    /// Set by the step's monitor to end the stream early ([`OpStream::stop_on`]); looked at
    /// only when a block ends: every `check_units` units.
    stop: Option<Arc<AtomicBool>>,
    check_units: u64,
    units_left: u64,
    /// A replay step's requests, read from the plan's OPS section.
    replay: Option<Replay>,
    rate: Option<f64>,
}

impl OpStream {
    pub fn new(ds: &Dataset, step: &OpsStep, thread: u32, threads: u32) -> anyhow::Result<OpStream> {
        OpStream::with_plan(ds, None, step, thread, threads)
    }

    /// As [`OpStream::new`], with the plan file a replay step reads its ops from.
    pub fn with_plan(
        ds: &Dataset,
        plan: Option<&Arc<PlanFile>>,
        step: &OpsStep,
        thread: u32,
        threads: u32,
    ) -> anyhow::Result<OpStream> {
        ensure!(threads >= 1 && thread < threads, "thread {thread} of {threads}");
        if step.replay.is_some() {
            return Replay::stream(ds, plan, step, thread, threads);
        }
        let kinds = Kinds::new(step)?;
        check_records(ds, step, &kinds)?;
        let (unit, mut picker) = (unit_size(step), Picker::new(&step.dist)?);
        if let Picker::Shuffle { perm_seed, .. } = &mut picker {
            *perm_seed = step.perm_seed;
        }
        let mut s = OpStream {
            count: step.count,
            unit,
            stride: unit * threads as u64,
            kinds,
            picker,
            rec_seed: step.rec_seed,
            len_seed: step.len_seed,
            scan: step.scan,
            insert_base: step.insert_base,
            last0: step.last,
            k: 0,
            block_end: 0,
            inserts: 0,
            stop: None,
            check_units: if step.rate.is_some() || has_scans(step) { 1 } else { STOP_CHUNK.div_ceil(unit) },
            units_left: 0,
            replay: None,
            rate: step.rate,
        };
        s.skip_to((thread as u64 * unit).min(s.count));
        Ok(s)
    }

    /// End early once `flag` is set. The ops run are then a prefix of the ops this thread runs
    /// without a stop: the same ops in the same order, whatever the stop's time. A single
    /// thread's run of ops is cut into chunks of whole units so the hot loop's one compare
    /// with the block's end is also the only check.
    pub fn stop_on(&mut self, flag: Arc<AtomicBool>) {
        self.stop = Some(flag);
        self.units_left = self.check_units;
        if self.stride == self.unit {
            self.block_end = self.block_end.min(self.k.saturating_add(self.check_units * self.unit));
        }
    }

    /// Ops per unit (the last unit may be shorter).
    pub fn unit_len(&self) -> u64 {
        self.unit
    }

    /// Moves to op `to` (the start of this thread's next unit), counting the inserts of the
    /// ops in between, which other threads run.
    fn skip_to(&mut self, to: u64) {
        if self.kinds.single == Some(PhaseKind::Insert) {
            self.inserts += to - self.k;
        } else if self.kinds.may_insert() {
            self.inserts += (self.k..to).filter(|&k| self.kinds.at(k) == PhaseKind::Insert).count() as u64;
        }
        self.k = to;
        let run = match (self.stride == self.unit, &self.stop) {
            (true, None) => self.count,
            (true, Some(_)) => self.check_units * self.unit,
            (false, _) => self.unit,
        };
        self.block_end = to.saturating_add(run).min(self.count);
    }

    /// Whether the stop flag is set, looked at once every `check_units` units.
    fn stopped(&mut self) -> bool {
        let Some(flag) = &self.stop else { return false };
        if self.stride != self.unit {
            self.units_left -= 1;
            if self.units_left > 0 {
                return false;
            }
            self.units_left = self.check_units;
        }
        let stop = flag.load(Ordering::Relaxed);
        if stop {
            // The stream ends here for good.
            self.count = self.k;
        }
        stop
    }

    #[inline]
    fn op(&mut self, op: u64) -> Op {
        let kind = self.kinds.at(op);
        if kind == PhaseKind::Insert {
            self.inserts += 1;
            return Op { k: op, kind, record: self.insert_base + self.inserts - 1, len: 0 };
        }
        let record = self.picker.pick(self.rec_seed, op, self.last0 + self.inserts);
        let len = if kind == PhaseKind::Scan { self.scan_len(op) } else { 0 };
        Op { k: op, kind, record, len }
    }

    fn scan_len(&self, op: u64) -> u64 {
        let ScanLen { min, max } = self.scan;
        if max == 0 {
            return TO_END;
        }
        min + below(rnd(self.len_seed, op), max - min + 1)
    }

    /// When the current unit is done, moves to this thread's next one; false at the end.
    fn start_next_unit(&mut self) -> bool {
        if self.k >= self.count || self.stopped() {
            return false;
        }
        // A block that ended before `count` ends a whole unit, one unit after the start of
        // this thread's last unit (single thread: the next unit is the next op).
        self.skip_to((self.k - self.unit + self.stride).min(self.count));
        self.k < self.count
    }

    /// When op number `op`, the first of a unit, is due in an open loop (ns after the step's
    /// start): unit j at `j / rate` seconds, a replay's request at its recorded time over the
    /// speed; `None` in a closed loop.
    pub fn due_ns(&self, op: u64) -> Option<u64> {
        if let Some(r) = &self.replay {
            return r.due_ns(op);
        }
        self.rate.map(|rate| unit_due_ns(op / self.unit.max(1), rate))
    }

    /// Fills `ops` (cleared first) with this thread's next unit; false when none is left.
    pub fn next_unit(&mut self, ops: &mut Vec<Op>) -> bool {
        ops.clear();
        if let Some(r) = &mut self.replay {
            return !self.stop.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)) && r.next_unit(ops);
        }
        if self.k == self.block_end && !self.start_next_unit() {
            return false;
        }
        // Blocks start at unit boundaries, so k is at one here.
        let end = (self.k + self.unit).min(self.block_end);
        while self.k < end {
            let k = self.k;
            self.k += 1;
            ops.push(self.op(k));
        }
        true
    }
}

impl Iterator for OpStream {
    type Item = Op;

    /// This thread's ops in order, unit after unit.
    #[inline]
    fn next(&mut self) -> Option<Op> {
        if self.replay.is_some() {
            return self.next_replayed();
        }
        if self.k == self.block_end && !self.start_next_unit() {
            return None;
        }
        let k = self.k;
        self.k += 1;
        Some(self.op(k))
    }
}

/// When unit number `unit` of an open loop at `rate` units a second is due, in ns after the start.
pub fn unit_due_ns(unit: u64, rate: f64) -> u64 {
    (unit as f64 * 1e9 / rate) as u64
}

/// A replay step's cursor over the OPS section (docs/plan-format.md, "Replays"): every thread
/// walks all entries and keeps its own requests, so it needs no other thread's.
#[derive(Debug, Clone)]
struct Replay {
    plan: Arc<PlanFile>,
    next: u64,
    count: u64,
    thread: u64,
    threads: u64,
    by_client: bool,
    /// Requests passed so far, every thread's (request j goes to thread j mod threads).
    requests: u64,
    speed: Option<f64>,
    /// Ops of the unit `next()` hands out one by one.
    pending: Vec<Op>,
}

impl Replay {
    fn stream(
        ds: &Dataset,
        plan: Option<&Arc<PlanFile>>,
        step: &OpsStep,
        thread: u32,
        threads: u32,
    ) -> anyhow::Result<OpStream> {
        let plan = plan.ok_or_else(|| anyhow::anyhow!("step {}: a replay needs the plan file", step.name))?;
        let n = replay::entries(plan)?.len() / OP_BYTES;
        let cfg = step.replay.expect("a replay step");
        let r = Replay {
            plan: plan.clone(),
            next: 0,
            count: step.count.min(n as u64),
            thread: thread.into(),
            threads: threads.into(),
            by_client: cfg.by_client,
            requests: 0,
            speed: cfg.speed,
            pending: Vec::new(),
        };
        let mut s = OpStream::new(ds, &Self::placeholder(step), 0, 1)?;
        s.replay = Some(r);
        Ok(s)
    }

    /// A one-op stream the replay stands in for (its own fields are never used).
    fn placeholder(step: &OpsStep) -> OpsStep {
        OpsStep { kind: PhaseKind::Get, count: 0, replay: None, rate: None, ..step.clone() }
    }

    fn entry(&self, index: u64) -> Option<Entry> {
        let b = replay::entries(&self.plan).ok()?;
        Entry::decode(b.get(index as usize * OP_BYTES..(index as usize + 1) * OP_BYTES)?)
    }

    fn due_ns(&self, op: u64) -> Option<u64> {
        let speed = self.speed?;
        self.entry(op).map(|e| (e.at_us as f64 * 1e3 / speed) as u64)
    }

    /// This thread's next request; false at the end.
    fn next_unit(&mut self, ops: &mut Vec<Op>) -> bool {
        while self.next < self.count {
            let first = self.next;
            let Some(head) = self.entry(first) else { return false };
            let mut end = first + 1;
            while end < self.count && self.entry(end).is_some_and(|e| e.joined) {
                end += 1;
            }
            self.next = end;
            let owner = if self.by_client { u64::from(head.client) } else { self.requests };
            self.requests += 1;
            if owner % self.threads != self.thread {
                continue;
            }
            ops.extend((first..end).filter_map(|k| self.entry(k).map(|e| op_of(k, &e))));
            return true;
        }
        false
    }
}

fn op_of(op: u64, entry: &Entry) -> Op {
    Op { k: op, kind: entry.kind, record: entry.record.into(), len: entry.len.into() }
}

impl OpStream {
    fn next_replayed(&mut self) -> Option<Op> {
        let r = self.replay.as_mut()?;
        if r.pending.is_empty() {
            let mut unit = Vec::new();
            if !r.next_unit(&mut unit) {
                return None;
            }
            unit.reverse();
            r.pending = unit;
        }
        r.pending.pop()
    }
}

/// Inserts a step makes (exact: a mixed phase's kinds are drawn per op). kvbench sizes the
/// dataset's `total` with it; O(count) for mixed phases.
pub fn inserts(step: &OpsStep) -> anyhow::Result<u64> {
    let kinds = Kinds::new(step)?;
    Ok(match kinds.single {
        Some(PhaseKind::Insert) => step.count,
        Some(_) => 0,
        None if kinds.may_insert() => (0..step.count).filter(|&k| kinds.at(k) == PhaseKind::Insert).count() as u64,
        None => 0,
    })
}

/// Records an op stream can name must exist in the dataset (a mixed phase's inserts are
/// kvbench's to size, with [`inserts`]).
fn check_records(ds: &Dataset, step: &OpsStep, kinds: &Kinds) -> anyhow::Result<()> {
    let n = dist_n(&step.dist);
    let name = &step.name;
    if kinds.single == Some(PhaseKind::Insert) {
        ensure!(
            step.insert_base.checked_add(step.count).is_some_and(|e| e <= ds.total),
            "step {name}: inserts from record {} may pass total {}",
            step.insert_base,
            ds.total
        );
    }
    match step.dist {
        Dist::Hot { record, .. } => {
            ensure!(record < ds.total, "step {name}: hot record {record} is not below total {}", ds.total)
        }
        Dist::Latest { count, .. } => ensure!(
            count >= 1 && step.last >= 1,
            "step {name}: latest needs last >= 1 (last {}, count {count})",
            step.last
        ),
        // YCSB's n exceeds the loaded records by one (and by the expected inserts); draws
        // above the newest record are drawn again, so far more would nearly never end.
        Dist::Zipfian { .. } if step.last.saturating_add(1).saturating_mul(2) < n && !kinds.may_insert() => {
            bail!(
                "step {name}: zipfian over {n} records but the newest is {}: most draws would be drawn again",
                step.last
            )
        }
        Dist::Zipfian { .. } => {}
        _ => ensure!(n <= ds.total.max(1), "step {name}: dist over {n} records, the dataset has {}", ds.total),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
