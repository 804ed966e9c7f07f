//! What a block that ran counts: each unit's sample and the checks of what it read. It needs
//! the block and what the worker handed back, nothing of the thread that built the block, so
//! it runs on the client thread or beside it (`Ran`, an owned copy).

use std::sync::atomic::Ordering;

use super::{Block, Check, Run, CHECK_AHEAD};
use crate::abi::{GET, MATCHED, MULTI_GET, OPEN_GET, RMW, SCAN, WAIT};
use crate::data::prefetch;
use crate::loops::judge;
use crate::state::{self, writes, Expect, State};
use crate::tally::Tally;
use kvbench_plan::derive::Expected;

/// A block that ran and what the worker handed back for it: `times` holds (start, end) per
/// unit, `got` the values read in key order, `got_len` one length per key (-1: not found or
/// nothing read); `scan_ops` the records the block's scan visited (counted as it ran).
pub(super) struct View<'a> {
    pub block: &'a Block,
    pub plain: bool,
    pub ran: usize,
    pub origin: i64,
    pub scan_ops: u64,
    pub times: &'a [i64],
    pub got: &'a [u8],
    pub got_len: &'a [i32],
}

/// A `View` that owns what it holds, to be counted on another thread.
#[derive(Default)]
pub(super) struct Ran {
    pub block: Block,
    /// Its values read (longer than they are when it is a worker's buffer, `Thread::got_room`).
    pub got: Vec<u8>,
    plain: bool,
    ran: usize,
    origin: i64,
    scan_ops: u64,
    times: Vec<i64>,
    got_len: Vec<i32>,
}

impl Ran {
    /// Takes `v`'s numbers, and its values when `values`; its block (and the buffer of values
    /// otherwise) is swapped in by the caller.
    pub fn copy(&mut self, v: &View, values: bool) {
        (self.plain, self.ran, self.origin, self.scan_ops) = (v.plain, v.ran, v.origin, v.scan_ops);
        self.times.clear();
        self.times.extend_from_slice(v.times);
        if values {
            self.got.clear();
            self.got.extend_from_slice(v.got);
        }
        self.got_len.clear();
        self.got_len.extend_from_slice(v.got_len);
    }

    pub fn view(&self) -> View<'_> {
        View {
            block: &self.block,
            plain: self.plain,
            ran: self.ran,
            origin: self.origin,
            scan_ops: self.scan_ops,
            times: &self.times,
            got: &self.got,
            got_len: &self.got_len,
        }
    }
}

/// Counts the block: its samples into `tally`, its reads checked, its ops added to the run's.
pub(super) fn count(run: &Run, tally: &mut Tally, v: &View) {
    let ops = if v.plain { count_gets(run, tally, v) } else { count_units(run, tally, v) };
    run.done.fetch_add(ops, Ordering::Relaxed);
}

fn count_units(run: &Run, tally: &mut Tally, v: &View) -> u64 {
    let (b, got_len) = (v.block, v.got_len);
    let (mut off, mut key, mut ops_done) = (0usize, 0usize, 0u64);
    fetch_unit_checks(run, b, 0);
    for u in 0..v.ran {
        fetch_unit_checks(run, b, u + 1);
        let (unit, kind) = (b.units[u], b.kind[u]);
        let end = (b.key_end[u] as usize).min(got_len.len());
        let k0 = key.min(end);
        let lens = &got_len[k0..end];
        key = end;
        if kind == WAIT {
            continue;
        }
        let (from, reads) = (off, matches!(kind, GET | MULTI_GET | RMW | OPEN_GET));
        if reads {
            off += lens.iter().map(|&n| n.max(0) as usize).sum::<usize>();
        }
        let ops = if kind == SCAN { v.scan_ops } else { unit.ops };
        let at = |i: usize| v.times[i].saturating_sub(v.origin).max(0) as u64;
        let (t0, t1, due) = (at(2 * u), at(2 * u + 1), b.due[u]);
        let dt = if due >= 0 { t1.saturating_sub(due as u64) } else { t1.saturating_sub(t0) };
        tally.sample(unit.op, dt, ops, t1, run.interval_ns);
        ops_done += ops;
        if reads && run.step.verify && !unit.failed {
            let at = unit.first_read as usize..(unit.first_read + unit.reads) as usize;
            let got = v.got.get(from..off).unwrap_or_default();
            check_reads(run, tally, b, (k0, &b.reads[at]), lens, got);
        }
    }
    ops_done
}

/// `count_units` for a block of plain gets: unit u read key u.
fn count_gets(run: &Run, tally: &mut Tally, v: &View) -> u64 {
    let ran = v.ran.min(v.got_len.len()).min(v.times.len() / 2);
    let at = |i: usize| v.times[i].saturating_sub(v.origin).max(0) as u64;
    let samples = (0..ran).map(|u| (at(2 * u + 1).saturating_sub(at(2 * u)), at(2 * u + 1)));
    tally.sample_gets(samples, run.interval_ns);
    if run.step.verify {
        check_gets(run, tally, v.block, &v.got_len[..ran], v.got);
    }
    ran as u64
}

/// The checks of a block of plain gets: those the worker matched with their key's `exp`
/// need nothing more.
fn check_gets(run: &Run, tally: &mut Tally, b: &Block, got_len: &[i32], got: &[u8]) {
    let mut off = 0usize;
    for (u, &n) in got_len.iter().enumerate() {
        fetch_check(run, b, u + CHECK_AHEAD, u + CHECK_AHEAD);
        let from = off;
        off += n.max(0) as usize;
        if (n == MATCHED && !b.exp[u].is_null()) || b.units[u].failed {
            continue;
        }
        let v = got.get(from..off).unwrap_or_default();
        check_reads(run, tally, b, (u, &b.reads[u..=u]), &got_len[u..=u], v);
    }
}

/// Has the bytes that read r's check (of key k) compares with fetched into the cache, when
/// derived here (not the block's `exp`): a record's fields are slices of a pool spread over
/// a MiB, whose lines the block's engine calls have evicted by the time of its checks, and
/// fetched together they arrive side by side instead of one miss after another.
#[inline]
fn fetch_check(run: &Run, b: &Block, r: usize, k: usize) {
    if b.exp.get(k).is_none_or(|e| !e.is_null()) {
        return;
    }
    let e = match b.reads.get(r) {
        Some(&Check::Get { c, s1 }) => run.known(c, s1),
        Some(&Check::Rmw { c, s }) if !run.lock && state::present(s) => Some(run.data.expected_later(c, writes(s) - 1)),
        _ => None,
    };
    if let Some(e) = e {
        e.each_source(prefetch);
    }
}

/// fetch_check for every read of unit u (none past the block's end).
fn fetch_unit_checks(run: &Run, b: &Block, u: usize) {
    let Some(unit) = b.units.get(u) else { return };
    if !run.step.verify {
        return;
    }
    let k0 = if u == 0 { 0 } else { b.key_end[u - 1] as usize };
    for j in 0..unit.reads as usize {
        fetch_check(run, b, unit.first_read as usize + j, k0 + j);
    }
}

/// Check the values a unit read against its checks: `got` packed, `lens` one per key from
/// key `k0` of the block on (-1 not found, MATCHED: the worker found it equal to the key's
/// `exp`). Where the value is known exactly it is compared with it; elsewhere judged by the
/// record's state.
fn check_reads(run: &Run, tally: &mut Tally, block: &Block, (k0, checks): (usize, &[Check]), lens: &[i32], got: &[u8]) {
    let mut off = 0usize;
    for (j, (check, &n)) in checks.iter().zip(lens).enumerate() {
        let given = block.exp(k0 + j);
        if n == MATCHED {
            // Only a key with an `exp` can match it.
            tally.mismatches += u64::from(given.is_none());
            continue;
        }
        let found = (n >= 0).then(|| {
            let end = (off + n as usize).min(got.len());
            let v = &got[off.min(end)..end];
            off = end;
            v
        });
        // Not in the block when not bytes (random or JSON values): derived again here.
        let exp = match (given, *check) {
            (Some(e), _) => Some(Expected::Bytes(e)),
            (None, Check::Get { c, s1 }) => run.known(c, s1),
            _ => None,
        };
        if let Some(e) = exp {
            match found {
                Some(f) => tally.mismatches += u64::from(!e.matches(f)),
                None => tally.missing += 1,
            }
            continue;
        }
        let (c, exp) = match *check {
            Check::Get { c, s1 } => (c, State::expect(s1, s1)),
            Check::Read { c, s1, s2 } => (c, State::expect(s1, s2)),
            Check::Now { c } => {
                let s = run.state.get(c);
                (c, State::expect(s, s))
            }
            Check::Rmw { c, s } => (c, if state::present(s) { Expect::Version(writes(s) - 1) } else { Expect::Absent }),
        };
        judge(&run.data, tally, c, exp, found);
    }
}
