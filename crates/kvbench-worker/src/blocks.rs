//! One thread of an ops step run by a worker in another language (docs/protocol.md, "Worker
//! core"): this side derives each block of units (keys, values, what a read must return, the
//! records a write takes), and after the worker ran the block's engine calls between its own
//! clock reads, counts the samples and checks what was read. The rules are the Rust worker's
//! (loops.rs): the same states, the same checks, the same tally.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::beside::{Beside, Cpu};
use super::data::Data;
use super::loops::ScanCheck;
use super::state::{self, after_delete, after_put, writes, State};
use super::tally::Tally;
use kvbench_model::engine::EngineError;
use kvbench_model::job::{OpsStep, PhaseKind};
use kvbench_plan::derive::Expected;
use kvbench_plan::opstream::{Op, OpStream};

mod checks;

use checks::{Ran, View};

pub use crate::abi::{DELETE, GET, MATCHED, MERGE_FIELDS, MULTI_GET, OPEN_GET, PUT, RMW, SCAN, WAIT, WRITE};

/// What the threads of one ops step share.
pub struct Run {
    pub data: Arc<Data>,
    pub state: Arc<State>,
    pub step: OpsStep,
    /// Several threads write: records are locked while written.
    pub lock: bool,
    pub interval_ns: u64,
    /// Ops done, for progress events.
    pub done: AtomicU64,
    /// The counters of the threads that ended, and the busiest one's busy time.
    merged: Mutex<(Tally, u64)>,
    /// Set when the step's stop rule says stop (the threads' streams look at it), and why.
    pub stop: Arc<AtomicBool>,
    pub stopped_by: Mutex<Option<String>>,
}

impl Run {
    pub fn new(data: Arc<Data>, state: Arc<State>, step: OpsStep, lock: bool, interval_ns: u64) -> Run {
        let merged = Mutex::new((Tally::new(), 0));
        let (stop, stopped_by) = (Arc::new(AtomicBool::new(false)), Mutex::new(None));
        Run { data, state, step, lock, interval_ns, done: AtomicU64::new(0), merged, stop, stopped_by }
    }

    /// The step's counters once every thread ended (and was merged).
    pub fn take_tally(&self) -> Tally {
        let mut m = self.merged.lock().unwrap_or_else(|p| p.into_inner());
        let busy_max = m.1;
        let mut t = std::mem::take(&mut m.0);
        t.busy_max = busy_max;
        t
    }

    /// What a get of record `record`, in state `s1` before the call, must read, where it is known
    /// before the call: no other thread writes, the step verifies, the record is present.
    /// Not fetched into the cache: a worker does that right before its call (kvbench.h).
    fn known(&self, record: u64, s1: u32) -> Option<Expected<'_>> {
        (!self.lock && self.step.verify && state::present(s1)).then(|| self.data.expected_later(record, writes(s1) - 1))
    }

    /// The errors counted so far by the threads that ended.
    pub fn errors(&self) -> u64 {
        let m = self.merged.lock().unwrap_or_else(|p| p.into_inner());
        m.0.errors + u64::from(m.0.unsupported)
    }
}

/// The fewest reads a block has for the idle checker to count it (docs/decisions.md, "The
/// worker core behind a C ABI").
const IDLE_HAND_MIN_READS: usize = 32;

/// How many keys ahead of its check a plain block's check has its expected bytes fetched:
/// enough for the lines to arrive, few enough that they are still there.
const CHECK_AHEAD: usize = 2;

/// One unit of a block, as this side needs it after the block ran.
#[derive(Clone, Copy)]
struct Unit {
    op: PhaseKind,
    ops: u64,
    /// The unit's first read in `Block::reads`.
    first_read: u32,
    reads: u32,
    /// The engine call failed: nothing of the unit is checked.
    failed: bool,
}

/// How a read is checked after the block ran.
#[derive(Clone, Copy)]
enum Check {
    /// A get: `s1` is the record's state before the call.
    Get { c: u64, s1: u32 },
    /// A get beside other writers, settled when its block was done: it may return any
    /// version written between `s1` and `s2`, the record's state then.
    Read { c: u64, s1: u32, s2: u32 },
    /// A multi-get or open-per-op get: the state at the check, as the Rust worker takes it.
    Now { c: u64 },
    /// Read-modify-write: the record was held with state `s` during the unit.
    Rmw { c: u64, s: u32 },
}

/// A block of units: the public vectors are what the worker reads (kvbench.h, `kvb_block`).
#[derive(Default)]
pub struct Block {
    pub kind: Vec<u8>,
    pub refresh: Vec<u8>,
    pub due: Vec<i64>,
    pub key_end: Vec<u32>,
    pub scan_len: Vec<u64>,
    pub key: Vec<u8>,
    pub key_off: Vec<u32>,
    pub val: Vec<u8>,
    pub val_off: Vec<u32>,
    pub del: Vec<u8>,
    /// Per key: where what a get must read is known as bytes, those bytes (null elsewhere).
    /// They are in the run's `Data`, which the thread's `Run` keeps alive.
    pub exp: Vec<*const u8>,
    pub exp_len: Vec<u32>,
    units: Vec<Unit>,
    reads: Vec<Check>,
    /// Records written by the block: (unit, record, state before, state after the write).
    written: Vec<(u32, u64, u32, u32)>,
    scratch: Vec<u8>,
    /// The check of the block's scan, checked as it runs.
    scan: Option<ScanCheck>,
    /// The ops of each unit (`src_end`: where each unit's end), and whether the thread had
    /// written since its reader refreshed when the block was made: enough to make it again.
    src: Vec<Op>,
    src_end: Vec<u32>,
    dirty_before: bool,
    /// Made ahead on a state that then changed: to be made again from `src`.
    redo: bool,
}

// SAFETY: `exp` points into the run's Data, which every holder of a block keeps alive (the
// thread that built it and the checker beside it each hold the `Run`); a block is moved
// between them, never shared.
unsafe impl Send for Block {}

impl Block {
    fn clear(&mut self) {
        for v in [&mut self.kind, &mut self.refresh, &mut self.key, &mut self.val, &mut self.del] {
            v.clear();
        }
        self.due.clear();
        self.exp.clear();
        self.exp_len.clear();
        self.scan_len.clear();
        self.key_end.clear();
        self.key_off.clear();
        self.key_off.push(0);
        self.val_off.clear();
        self.val_off.push(0);
        self.units.clear();
        self.reads.clear();
        self.written.clear();
        self.scan = None;
        self.src.clear();
        self.src_end.clear();
    }

    /// Puts back the states the block's writes moved (it was made ahead and will not run as made).
    fn undo_writes(&self, state: &State) {
        for &(_, c, before, _) in self.written.iter().rev() {
            state.end_write(c, before);
        }
    }

    fn push_key(&mut self, data: &Data, record: u64) {
        data.key(record, &mut self.scratch);
        self.push_scratch_key();
    }

    /// The key just derived into `scratch`.
    fn push_scratch_key(&mut self) {
        self.key.extend_from_slice(&self.scratch);
        self.key_off.push(self.key.len() as u32);
    }

    /// The value of the key just pushed (empty for a read or a delete).
    fn push_val(&mut self, value: Option<(&Data, u64, u32)>) {
        if let Some((data, c, v)) = value {
            data.value(c, v, &mut self.scratch);
            self.val.extend_from_slice(&self.scratch);
        }
        self.end_key(PUT);
    }

    /// The write batch entry of the key just pushed, record `c` in state `s` before it: a put
    /// of its next version, a delete, or the fields that version changes (MERGE_FIELDS).
    fn push_entry(&mut self, data: &Data, c: u64, s: u32, entry: u8) {
        match entry {
            DELETE => {}
            MERGE_FIELDS => data.changed_fields(c, writes(s), &mut self.scratch),
            _ => data.value(c, writes(s), &mut self.scratch),
        }
        if entry != DELETE {
            self.val.extend_from_slice(&self.scratch);
        }
        self.end_key(entry);
    }

    fn end_key(&mut self, entry: u8) {
        self.val_off.push(self.val.len() as u32);
        self.del.push(entry);
        self.exp.push(std::ptr::null());
        self.exp_len.push(0);
    }

    /// What a get of the key just pushed must read, where known as bytes.
    fn set_exp(&mut self, expected: Expected<'_>) {
        if let Expected::Bytes(b) = expected {
            *self.exp.last_mut().expect("a key was pushed") = b.as_ptr();
            *self.exp_len.last_mut().expect("a key was pushed") = b.len() as u32;
        }
    }

    /// Key i's expected bytes, when the block has them.
    fn exp(&self, unit: usize) -> Option<&[u8]> {
        let p = *self.exp.get(unit)?;
        // SAFETY: set_exp took them from the run's Data, alive as long as the thread's Run.
        (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, self.exp_len[unit] as usize) })
    }

    fn keys(&self) -> u32 {
        self.key_off.len() as u32 - 1
    }

    /// A lone writer's block is made before it runs: the reads after a read-modify-write that
    /// failed (which left its record as it was) were made expecting what it would have written.
    /// They expect the record as it was, up to the next write of it that ran (the Rust worker
    /// makes each op after the one before it ran).
    fn expect_failed_rmws_undone(&mut self, ran: usize) {
        // Records whose last write in the block was a failed read-modify-write: the state it left.
        let mut left: Vec<(u64, u32)> = Vec::new();
        let mut w = 0;
        for v in 0..ran.min(self.units.len()) {
            let unit = self.units[v];
            let k0 = if v == 0 { 0 } else { self.key_end[v - 1] as usize };
            for j in 0..unit.reads as usize {
                let (c, s) = match &mut self.reads[unit.first_read as usize + j] {
                    Check::Get { c, s1 } => (*c, s1),
                    Check::Rmw { c, s } => (*c, s),
                    Check::Read { .. } | Check::Now { .. } => continue,
                };
                if let Some(&(_, was)) = left.iter().find(|l| l.0 == c) {
                    *s = was;
                    (self.exp[k0 + j], self.exp_len[k0 + j]) = (std::ptr::null(), 0);
                }
            }
            while let Some(&(_, c, before, _)) = self.written.get(w).filter(|e| e.0 as usize == v) {
                match left.iter().position(|l| l.0 == c) {
                    Some(i) if !self.failed_rmw(v) => _ = left.swap_remove(i),
                    None if self.failed_rmw(v) => left.push((c, before)),
                    _ => {}
                }
                w += 1;
            }
        }
    }

    /// Beside other writers a get may return what was written until its block was done: the
    /// states then are taken now, so that its check can be counted later (beside the client).
    fn settle_reads(&mut self, state: &State) {
        for r in &mut self.reads {
            if let Check::Get { c, s1 } = *r {
                *r = Check::Read { c, s1, s2: state.get(c) };
            }
        }
    }

    /// Unit u is a read-modify-write that failed: it left its record as it was.
    fn failed_rmw(&self, u: usize) -> bool {
        self.kind[u] == RMW && self.units[u].failed
    }

    fn begin_unit(&mut self, kind: u8, refresh: u8, due: i64) {
        self.kind.push(kind);
        self.refresh.push(refresh);
        self.due.push(due);
    }

    fn end_unit(&mut self, scan_len: u64) {
        let keys = self.keys();
        self.key_end.push(keys);
        self.scan_len.push(scan_len);
    }
}

/// A thread of an ops step driven by a worker in another language.
pub struct Thread {
    run: Arc<Run>,
    pub tally: Tally,
    pub block: Block,
    making: Making,
    /// The block made ahead is out: being made, or made and not yet taken.
    ahead_out: bool,
    stopped: bool,
    scan: Option<ScanCheck>,
    /// Records the running scan visited, and whether its check went past the last position
    /// (the Rust worker's scan stops there: later records are not counted).
    scan_seen: u64,
    scan_over: bool,
    /// The step's start on the worker's clock: subtracted from the times it hands back.
    origin: i64,
    /// Every unit is a get of one key, unpaced, beside no writer: the common unit, whose
    /// blocks are made and counted without the general bookkeeping (the same units, samples
    /// and checks).
    plain: bool,
    /// Counts and checks the blocks that ran, beside the client thread (docs/decisions.md,
    /// "The worker core behind a C ABI").
    beside: Option<Checker>,
    /// The checker runs only on CPU time no client thread wants, a block at a time: the blocks
    /// that end while it has one, and those of few reads, are counted on the client thread.
    idle_checks: bool,
    /// A block is out with the idle checker.
    checks_out: bool,
    /// Where a worker may read a block's values into (`got_room`): handed to the checker with
    /// the block rather than copied.
    got: Vec<u8>,
}

/// The checker of a thread: its own counters of what it counted.
type Checker = Beside<Ran, (Arc<Run>, Tally)>;

/// Where a thread's blocks are made: on the client thread as it asks, or beside it, one block
/// ahead, while the client runs the one before (when its checks are beside it too).
enum Making {
    Here(Box<Maker>),
    Ahead(Beside<Block, Maker>),
}

impl Thread {
    pub fn new(run: Arc<Run>, thread: u32, threads: u32, max_units: u32) -> Thread {
        let mut tally = Tally::new();
        let stream = match OpStream::with_plan(run.data.dataset(), run.data.plan(), &run.step, thread, threads) {
            Ok(mut s) => {
                if super::until::has_rule(&run.step) {
                    s.stop_on(run.stop.clone());
                }
                Some(s)
            }
            Err(e) => {
                tally.error(EngineError::Store(format!("{e:#}")));
                None
            }
        };
        if super::step::paced(&run.step) {
            // The worker paces on the thread that asked for this one (Python's threads are the
            // OS's; Go sets it again before each sleep, as goroutines move).
            crate::sys::precise_sleeps();
        }
        let step = &run.step;
        let plain = super::step::gets_only(step)
            && !super::step::paced(step)
            && !run.lock
            && !step.open_per_op
            && stream.as_ref().is_some_and(|s| s.unit_len() == 1);
        let maker = Maker::new(Arc::clone(&run), stream, max_units, plain);
        Thread {
            run,
            tally,
            block: Block::default(),
            making: Making::Here(Box::new(maker)),
            ahead_out: false,
            stopped: false,
            scan: None,
            scan_seen: 0,
            scan_over: false,
            origin: 0,
            plain,
            beside: None,
            idle_checks: false,
            checks_out: false,
            got: Vec::new(),
        }
        .with_checker(threads)
        .with_maker_beside()
    }

    /// Counts beside the client thread: with a CPU of its own when no other thread writes (a
    /// read's expectation is taken as the block is built) and the step leaves a CPU free;
    /// beside other writers only on CPU time the step's threads leave (they wait for each
    /// other's writes, an engine's lock, a server), the blocks it has no time for counted where
    /// they ran. Readers alone on every CPU leave none: they count their own blocks.
    fn with_checker(mut self, threads: u32) -> Thread {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.idle_checks = self.run.lock;
        if !self.run.step.verify || (!self.run.lock && threads as usize >= cpus) {
            return self;
        }
        let count = |(run, tally): &mut (Arc<Run>, Tally), r: &mut Ran| checks::count(run, tally, &r.view());
        let state = (Arc::clone(&self.run), Tally::new());
        let cpu = if self.idle_checks { Cpu::Idle } else { Cpu::Shared };
        self.beside = Beside::start("kvbench-checks", state, count, cpu).ok();
        self
    }

    /// Makes the blocks beside the client thread, one ahead, where the checks are beside it
    /// and every check takes the state as the block was made (no scan, multi-get or
    /// open-per-op get, whose checks take it as they are counted).
    fn with_maker_beside(mut self) -> Thread {
        if self.beside.is_none() || self.idle_checks || !super::step::checked_as_made(&self.run.step) {
            return self;
        }
        let none = Box::new(Maker::new(Arc::clone(&self.run), None, 1, self.plain));
        let Making::Here(mut maker) = std::mem::replace(&mut self.making, Making::Here(none)) else {
            return self;
        };
        maker.ahead = true;
        match Beside::start("kvbench-blocks", *maker, |m: &mut Maker, b: &mut Block| m.fill(b), Cpu::Shared) {
            Ok(ahead) => self.making = Making::Ahead(ahead),
            Err(e) => self.maker_lost(&format!("did not start: {e}")),
        }
        self
    }

    /// The maker beside the client thread is gone (it could not start, or panicked): the
    /// thread stops with an error rather than run blocks no one made.
    fn maker_lost(&mut self, why: &str) {
        self.tally.error(EngineError::Store(format!("the worker core's block maker {why}")));
        self.stopped = true;
        self.ahead_out = false;
    }

    /// Room for `need` bytes of the block's values read, its first `keep` bytes (written by the
    /// worker) kept: a worker that reads its values there and hands the same buffer to `done`
    /// saves it a copy (kvbench.h, `kvb_got`). Valid until the next call on the thread; null
    /// when the memory cannot be had (an error for the worker to report, not an abort).
    pub fn got_room(&mut self, keep: usize, need: usize) -> *mut u8 {
        let len = self.got.len();
        if len < need {
            // The first `keep` bytes move with the rest; the new ones are zeros until written.
            debug_assert!(keep <= len);
            let Some(to) = [need.max(len.saturating_mul(2)), need]
                .into_iter()
                .find(|&n| self.got.try_reserve_exact(n - len).is_ok())
            else {
                return std::ptr::null_mut();
            };
            self.got.resize(to, 0);
        }
        self.got.as_mut_ptr()
    }

    /// Whether the thread counts beside the client thread, on a CPU of its own.
    pub fn checks_beside(&self) -> bool {
        self.beside.is_some() && !self.idle_checks
    }

    /// Whether the thread counts beside the client thread on CPU time the clients leave.
    pub fn checks_when_idle(&self) -> bool {
        self.beside.is_some() && self.idle_checks
    }

    /// Whether every unit is a get of one key, unpaced, beside no writer.
    pub fn plain(&self) -> bool {
        self.plain
    }

    /// From now on the worker hands back times on its own clock, `origin` being the step's start
    /// (a runtime where a subtraction per time costs, like Python, leaves it to this side).
    pub fn set_origin(&mut self, origin: i64) {
        self.origin = origin;
    }

    /// The thread ended: its counters join the step's.
    pub fn end(mut self) {
        self.take_back_ahead();
        self.tally.close_interval(u64::MAX);
        if let Some(checker) = self.beside.take() {
            match checker.finish() {
                Some((_, mut counted)) => {
                    counted.close_interval(u64::MAX);
                    self.tally.merge(counted);
                }
                None => {
                    self.tally.error(EngineError::Store("the worker core's checks stopped: a bug".into()));
                }
            }
        }
        let mut m = self.run.merged.lock().unwrap_or_else(|p| p.into_inner());
        m.1 = m.1.max(self.tally.busy_ns);
        m.0.merge(self.tally);
    }

    /// The next block; no units when the thread is done.
    pub fn next_block(&mut self) -> &Block {
        match &mut self.making {
            Making::Here(_) if self.stopped => self.block.clear(),
            Making::Here(m) => m.fill(&mut self.block),
            // A stop rule that said stop ends the thread at the block it ran, as the stream
            // would have (the block made ahead came from before the rule said so).
            Making::Ahead(_) if self.stopped || self.run.stop.load(Ordering::Relaxed) => {
                self.take_back_ahead();
                self.block.clear();
            }
            Making::Ahead(_) => match self.take_ahead() {
                Some(made) => {
                    let spare = std::mem::replace(&mut self.block, made);
                    self.hand_ahead(spare);
                }
                None => {
                    self.maker_lost("stopped: a bug");
                    self.block.clear();
                }
            },
        }
        self.scan = self.block.scan.take();
        (self.scan_seen, self.scan_over) = (0, false);
        &self.block
    }

    /// Has the maker beside make the block after the one the client takes next, in `spare`.
    fn hand_ahead(&mut self, spare: Block) {
        if let Making::Ahead(a) = &mut self.making {
            self.ahead_out = a.hand(spare).is_ok();
        }
    }

    /// The block the maker beside made (asked for now when none is out); None when it is gone.
    fn take_ahead(&mut self) -> Option<Block> {
        if !self.ahead_out {
            let spare = std::mem::take(&mut self.block);
            self.hand_ahead(spare);
        }
        let Making::Ahead(a) = &mut self.making else { return None };
        std::mem::take(&mut self.ahead_out).then(|| a.back()).flatten()
    }

    /// Takes back the block made ahead, the states its writes moved put back: the thread stops,
    /// or the block before it left the records otherwise than it was made on.
    fn take_back_ahead(&mut self) -> Option<Block> {
        if !self.ahead_out {
            return None;
        }
        let b = self.take_ahead()?;
        b.undo_writes(&self.run.state);
        Some(b)
    }

    /// Records visited by the current scan unit (u32le key length, key, u32le value length,
    /// value), checked as they come.
    pub fn scanned(&mut self, mut recs: &[u8]) {
        let Some(check) = self.scan.as_mut() else { return };
        let run = &self.run;
        while let Some((k, v, rest)) = split_record(recs) {
            recs = rest;
            if self.scan_over {
                break;
            }
            self.scan_seen += 1;
            self.scan_over = run.step.verify && !check.visit(&run.data, &run.state, k, v);
        }
    }

    /// Count an engine error of unit `index` that ended at `at_ns` (`u32::MAX`: outside a unit);
    /// true when the thread must stop.
    pub fn error(&mut self, index: u32, error: EngineError, at_ns: i64) -> bool {
        let stop = if index == u32::MAX {
            self.tally.error(error)
        } else {
            if let Some(unit) = self.block.units.get_mut(index as usize) {
                unit.failed = true;
            }
            self.tally.error_at(error, at_ns.saturating_sub(self.origin).max(0) as u64, self.run.interval_ns)
        };
        self.stopped |= stop;
        stop
    }

    /// The block ran: `times` holds (start, end) per unit, `got` the values read in key order,
    /// `got_len` one length per key (-1: not found or nothing read). The block's records are
    /// released and its scan ended now; its samples and reads are counted now or beside.
    pub fn done(&mut self, units_run: u32, times: &[i64], got: &[u8], got_len: &[i32]) {
        let ran = (units_run as usize).min(self.block.units.len()).min(times.len() / 2);
        self.stopped |= ran < self.block.units.len();
        // The block made ahead expects the records as this one leaves them when all of it ran
        // as made: otherwise it is taken back before this one's records are settled, and made
        // again after (unless the thread stops).
        let failed = !self.block.written.is_empty() && self.block.units.iter().any(|u| u.failed);
        let again = if self.stopped || failed { self.take_back_ahead() } else { None };
        if failed && !self.run.lock {
            self.block.expect_failed_rmws_undone(ran);
        }
        if !self.plain {
            self.finish_writes(ran);
        }
        if let Some(mut b) = again.filter(|_| !self.stopped) {
            b.redo = true;
            self.hand_ahead(b);
        }
        if self.run.lock && self.run.step.verify {
            self.block.settle_reads(&self.run.state);
        }
        let scan_ops = self.end_scans(ran);
        let v = View { block: &self.block, plain: self.plain, ran, origin: self.origin, scan_ops, times, got, got_len };
        // A multi-get's expectation is the state when it is checked: checked now.
        let now = self.block.kind.iter().any(|&k| k == MULTI_GET || k == OPEN_GET);
        let Some(checker) = self.beside.as_mut().filter(|_| !now) else {
            return checks::count(&self.run, &mut self.tally, &v);
        };
        // Handing a block over wakes the idle checker, which costs a client more than checking
        // a few reads itself; beside other writers most blocks are one unit.
        if self.idle_checks && self.block.reads.len() < IDLE_HAND_MIN_READS {
            return checks::count(&self.run, &mut self.tally, &v);
        }
        let mut r = match checker.take() {
            Some(r) => r,
            None if self.checks_out => return checks::count(&self.run, &mut self.tally, &v),
            None => Ran::default(),
        };
        self.checks_out = self.idle_checks;
        let own = !got.is_empty() && std::ptr::eq(got.as_ptr(), self.got.as_ptr());
        r.copy(&v, !own);
        std::mem::swap(&mut r.block, &mut self.block);
        if own {
            std::mem::swap(&mut r.got, &mut self.got);
        }
        if let Err(r) = checker.hand(r) {
            checks::count(&self.run, &mut self.tally, &r.view());
            self.beside = None;
        }
    }

    /// Ends the block's scan, checked as it came: the records it visited.
    fn end_scans(&mut self, ran: usize) -> u64 {
        if self.scan.is_none() {
            return 0;
        }
        match (0..ran).find(|&u| self.block.kind[u] == SCAN) {
            Some(u) => {
                let unit = self.block.units[u];
                self.end_scan(&unit, self.block.scan_len[u])
            }
            None => 0,
        }
    }

    /// Release the records the block's writes took: the state after the write for units that
    /// ran, the state before for those that did not (undone in reverse order). An rmw that
    /// failed leaves its record as it was (alone: unless a later unit of the block that did not
    /// fail wrote it); a write that failed counts as written, as in the Rust worker.
    fn finish_writes(&mut self, ran: usize) {
        let (state, b) = (&self.run.state, &self.block);
        let rewritten = |u: u32, c: u64| {
            b.written.iter().any(|&(v, d, ..)| d == c && v > u && (v as usize) < ran && !b.failed_rmw(v as usize))
        };
        for &(u, c, before, after) in b.written.iter().rev() {
            if u as usize >= ran || (!self.run.lock && b.failed_rmw(u as usize) && !rewritten(u, c)) {
                state.end_write(c, before);
            } else if self.run.lock {
                state.end_write(c, after);
            }
        }
        if !self.run.lock {
            return;
        }
        for (u, unit) in self.block.units.iter().enumerate() {
            if let (RMW, Some(&Check::Rmw { c, s })) =
                (self.block.kind[u], self.block.reads.get(unit.first_read as usize))
            {
                state.end_write(c, if u >= ran || unit.failed { s } else { after_put(s) });
            }
        }
    }

    fn end_scan(&mut self, unit: &Unit, len: u64) -> u64 {
        let Some(check) = self.scan.take() else { return 0 };
        if self.run.step.verify && !unit.failed {
            self.tally.mismatches += check.bad;
            self.tally.missing += check.missing(&self.run.data, &self.run.state, len);
        }
        self.scan_seen
    }
}

/// What makes a thread's blocks: its stream of ops and where the thread is in it. The states
/// of the records a block writes move as it is made (no other thread writes them), so the
/// reads of the next block expect what this one leaves.
struct Maker {
    run: Arc<Run>,
    stream: Option<OpStream>,
    max_units: usize,
    /// This thread wrote since its reader last refreshed.
    dirty: bool,
    /// The unit pulled from the stream but not yet in a block (after a WAIT).
    pending: Vec<Op>,
    ops: Vec<Op>,
    /// The WAIT before the pending unit was handed out.
    waited: bool,
    plain: bool,
    /// Makes blocks ahead: each keeps its ops, to be made again.
    ahead: bool,
}

impl Maker {
    fn new(run: Arc<Run>, stream: Option<OpStream>, max_units: u32, plain: bool) -> Maker {
        let max_units = max_units.max(1) as usize;
        let (pending, ops) = (Vec::new(), Vec::new());
        Maker { run, stream, max_units, dirty: false, pending, ops, waited: false, plain, ahead: false }
    }

    /// Makes the next block in `b`, or `b` again (`redo`) from the ops it was made of.
    fn fill(&mut self, b: &mut Block) {
        if std::mem::take(&mut b.redo) {
            return self.refill(b);
        }
        b.clear();
        b.dirty_before = self.dirty;
        if self.plain {
            return self.push_gets(b);
        }
        let paced = super::step::paced(&self.run.step);
        while b.units.len() < self.max_units {
            if self.pending.is_empty() && !self.pull() {
                break;
            }
            let ops = std::mem::take(&mut self.pending);
            if self.run.lock && paced && !std::mem::take(&mut self.waited) {
                // A writer beside others waits for its due time before it takes records.
                self.push_wait(b, &ops);
                self.pending = ops;
                self.waited = true;
                break;
            }
            // With locks a unit's records are held only while it runs: beside other writers
            // a block is gets alone or one unit, and a unit that takes records starts the next.
            let alone = self.run.lock && (paced || self.unit_kind(&ops[0]) != GET);
            if alone && !b.units.is_empty() {
                self.pending = ops;
                break;
            }
            let kind = self.push_unit(b, &ops);
            self.ops = ops;
            // A scan is checked as it comes.
            if alone || kind == SCAN {
                break;
            }
        }
    }

    /// The kind of the unit that starts with op `first`.
    fn unit_kind(&self, first: &Op) -> u8 {
        match first.kind {
            // One field: read the record, merge the field in, write it back (units of one op);
            // an engine that merges fields in itself is handed the field as a write.
            PhaseKind::Update if super::step::updates_read(&self.run.step, self.run.data.dataset()) => RMW,
            PhaseKind::Load | PhaseKind::Update | PhaseKind::Insert | PhaseKind::Delete => WRITE,
            _ if self.run.step.open_per_op => OPEN_GET,
            PhaseKind::MultiGet => MULTI_GET,
            PhaseKind::Scan => SCAN,
            PhaseKind::Rmw => RMW,
            _ => GET,
        }
    }

    /// Makes `b` again from its ops, on the states as they are now (its own writes undone).
    fn refill(&mut self, b: &mut Block) {
        let (src, ends, dirty) = (std::mem::take(&mut b.src), std::mem::take(&mut b.src_end), b.dirty_before);
        b.clear();
        self.dirty = dirty;
        let mut from = 0;
        for &end in &ends {
            self.push_unit(b, &src[from..end as usize]);
            from = end as usize;
        }
    }

    /// A block of plain gets: what push_unit makes of each, the per-unit vectors that are the
    /// same for every unit filled at the end.
    fn push_gets(&mut self, b: &mut Block) {
        let run = &self.run;
        let Some(stream) = self.stream.as_mut() else { return };
        while b.reads.len() < self.max_units {
            let Some(o) = stream.next() else { break };
            let c = run.data.canon(o.record);
            b.push_key(&run.data, o.record);
            b.exp.push(std::ptr::null());
            b.exp_len.push(0);
            let s1 = run.state.get(c);
            if let Some(e) = run.known(c, s1) {
                b.set_exp(e);
            }
            b.reads.push(Check::Get { c, s1 });
        }
        let n = b.reads.len();
        b.kind.resize(n, GET);
        b.refresh.resize(n, 0);
        b.due.resize(n, -1);
        b.key_end.extend(1..=n as u32);
        b.scan_len.resize(n, 0);
        b.val_off.resize(n + 1, 0);
        b.del.resize(n, 0);
        let unit = |i| Unit { op: PhaseKind::Get, ops: 1, first_read: i, reads: 1, failed: false };
        b.units.extend((0..n as u32).map(unit));
    }

    /// Take the stream's next unit into `pending`; false at the end.
    fn pull(&mut self) -> bool {
        let mut ops = std::mem::take(&mut self.ops);
        let more = self.stream.as_mut().is_some_and(|s| s.next_unit(&mut ops));
        self.pending = ops;
        more
    }

    /// Open loop: when the unit starting at `first` is due (-1: closed loop).
    fn due(&self, first: &Op) -> i64 {
        match self.stream.as_ref().and_then(|s| s.due_ns(first.k)) {
            Some(d) => d as i64,
            None => -1,
        }
    }

    fn push_wait(&mut self, b: &mut Block, ops: &[Op]) {
        let due = self.due(&ops[0]);
        b.begin_unit(WAIT, 1, due);
        b.units.push(Unit { op: ops[0].kind, ops: 0, first_read: 0, reads: 0, failed: false });
        b.end_unit(0);
    }

    /// Add one unit of the stream to the block; returns its unit kind.
    fn push_unit(&mut self, b: &mut Block, ops: &[Op]) -> u8 {
        let first = ops[0];
        let due = self.due(&first);
        let kind = self.unit_kind(&first);
        let writes = matches!(kind, WRITE | RMW);
        // A reader must see this thread's writes, and beside other writers, theirs; none is
        // held across a write (a store may wait for it).
        let refresh = writes || std::mem::take(&mut self.dirty) || self.run.lock;
        self.dirty = writes;
        b.begin_unit(kind, u8::from(refresh), due);
        let first_read = b.reads.len() as u32;
        let mut unit = Unit { op: first.kind, ops: ops.len() as u64, first_read, reads: 0, failed: false };
        let scan_len = match kind {
            WRITE => self.push_write(b, ops),
            SCAN => self.push_scan(b, &first),
            RMW => self.push_rmw(b, &first),
            _ => self.push_reads(b, ops, kind),
        };
        unit.reads = b.reads.len() as u32 - first_read;
        b.units.push(unit);
        if self.ahead {
            b.src.extend_from_slice(ops);
            b.src_end.push(b.src.len() as u32);
        }
        b.end_unit(scan_len);
        kind
    }

    fn push_reads(&mut self, b: &mut Block, ops: &[Op], kind: u8) -> u64 {
        let run = &self.run;
        for o in ops {
            let c = run.data.canon(o.record);
            b.push_key(&run.data, o.record);
            b.push_val(None);
            if kind != GET {
                b.reads.push(Check::Now { c });
                continue;
            }
            let s1 = run.state.get(c);
            // Data::expected prefetches the bytes it points at.
            if let Some(e) = run.known(c, s1) {
                b.set_exp(e);
            }
            b.reads.push(Check::Get { c, s1 });
        }
        0
    }

    fn push_scan(&mut self, b: &mut Block, op: &Op) -> u64 {
        let data = &self.run.data;
        let positions = data.positions();
        // To the end is a limit every runtime can hold as a signed index.
        let len = if op.len == 0 { positions } else { op.len }.min(1 << 62);
        data.key(op.record, &mut b.scratch);
        b.push_scratch_key();
        b.push_val(None);
        b.scan = Some(ScanCheck::new(!self.run.lock, data.rank(op.record), positions));
        len
    }

    fn push_rmw(&mut self, b: &mut Block, op: &Op) -> u64 {
        let run = &self.run;
        let u = b.units.len() as u32;
        let c = run.data.canon(op.record);
        let s = run.state.begin_write(c, run.lock);
        if !run.lock {
            // As a write's (push_write): the unit writes whatever its read finds, so later
            // units of the block see the state it leaves.
            b.written.push((u, c, s, after_put(s)));
            run.state.end_write(c, after_put(s));
        }
        b.push_key(&run.data, op.record);
        b.push_val(Some((&run.data, c, writes(s))));
        b.reads.push(Check::Rmw { c, s });
        0
    }

    /// A write batch: with other writers, its records are taken in ascending order first (two
    /// batches sharing records never wait on each other); a record repeated in the batch writes
    /// its next version.
    fn push_write(&mut self, b: &mut Block, ops: &[Op]) -> u64 {
        let run = &self.run;
        let u = b.units.len() as u32;
        let load = ops[0].kind == PhaseKind::Load;
        let start = b.written.len();
        if run.lock && !load {
            let mut records: Vec<u64> = ops.iter().map(|o| run.data.canon(o.record)).collect();
            records.sort_unstable();
            records.dedup();
            for c in records {
                let s = run.state.begin_write(c, true);
                b.written.push((u, c, s, s));
            }
        }
        for o in ops {
            b.push_key(&run.data, o.record);
            if load {
                // Each record loads its own value: of a repeated key, the last loaded one stays.
                b.push_val(Some((&run.data, o.record, 0)));
                continue;
            }
            let c = run.data.canon(o.record);
            let put = o.kind != PhaseKind::Delete;
            let next = |s| if put { after_put(s) } else { after_delete(s) };
            let s = if run.lock {
                let held = &mut b.written[start..];
                let w = held.iter_mut().find(|w| w.1 == c).expect("the batch's records are held");
                let s = w.3;
                w.3 = next(s);
                s
            } else {
                // Without other writers the state moves now, so later units of the block see
                // it; it is put back if the unit does not run.
                let s = run.state.begin_write(c, false);
                b.written.push((u, c, s, next(s)));
                run.state.end_write(c, next(s));
                s
            };
            b.push_entry(&run.data, c, s, entry(&run.step, o.kind, s));
        }
        0
    }
}

/// What a write batch does with the key of an op of kind `kind` on a record in state `s`: an
/// update of a present record hands an engine that merges fields in the fields it changes.
fn entry(step: &OpsStep, kind: PhaseKind, s: u32) -> u8 {
    match kind {
        PhaseKind::Delete => DELETE,
        PhaseKind::Update if step.field_updates && state::present(s) => MERGE_FIELDS,
        _ => PUT,
    }
}

/// One record of a scan buffer and the rest; None at the end (or on a cut record).
fn split_record(bytes: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (k, rest) = take_field(bytes)?;
    let (v, rest) = take_field(rest)?;
    Some((k, v, rest))
}

fn take_field(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let rest = &bytes[4..];
    (rest.len() >= n).then(|| rest.split_at(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A get beside other writers may return what was written until its block was done, and no
    /// later version: its check, counted beside the client when that has time, must not take the
    /// record's state as it is then.
    #[test]
    fn regression_a_get_beside_writers_is_settled_when_its_block_is_done() {
        let mut st = State::new(4, 4);
        st.materialize();
        let reads = vec![Check::Get { c: 1, s1: st.get(1) }, Check::Rmw { c: 2, s: st.get(2) }];
        let mut b = Block { reads, ..Block::default() };
        let s = st.begin_write(1, true);
        st.end_write(1, after_put(s));
        let done = st.get(1);
        b.settle_reads(&st);
        let s = st.begin_write(1, true);
        st.end_write(1, after_put(s));
        assert!(matches!(b.reads[0], Check::Read { c: 1, s1: state::LOADED, s2 } if s2 == done));
        assert!(matches!(b.reads[1], Check::Rmw { c: 2, s: state::LOADED }), "an rmw's check holds its state");
    }
}
