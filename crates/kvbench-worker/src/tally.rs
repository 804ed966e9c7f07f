//! What one thread of an ops step measured: counters, one histogram per op kind, and the
//! interval histograms of the timeline (taken as differences of snapshots, so each sample is
//! recorded once).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::clock::{decode_histogram, encode_histogram, new_histogram};
use kvbench_model::engine::EngineError;
use kvbench_model::job::PhaseKind;

/// A thread stops after this many engine errors.
pub const MAX_ERRORS: u64 = 1000;

/// Distinct error classes a step reports; more are counted under `other`.
pub const MAX_ERROR_CLASSES: usize = 8;

/// An error's class: its message with every ASCII digit replaced by `#` (ports, pids and
/// counts differ between otherwise equal errors), cut to 80 characters (docs/protocol.md).
pub fn error_class(message: &str) -> String {
    message.chars().take(80).map(|c| if c.is_ascii_digit() { '#' } else { c }).collect()
}

/// Count `count` errors of `class` in `classes`, keeping at most [`MAX_ERROR_CLASSES`] classes.
pub fn add_error_class(classes: &mut BTreeMap<String, u64>, class: &str, count: u64) {
    let key = if classes.len() >= MAX_ERROR_CLASSES && !classes.contains_key(class) { "other" } else { class };
    *classes.entry(key.to_string()).or_default() += count;
}

pub struct KindHist {
    pub total: Histogram<u64>,
    /// `total` at the start of the current interval.
    mark: Histogram<u64>,
}

pub struct Tally {
    pub ops: u64,
    pub requests: u64,
    pub errors: u64,
    pub mismatches: u64,
    pub missing: u64,
    pub busy_ns: u64,
    /// Busy time of the busiest thread (set when threads are merged).
    pub busy_max: u64,
    pub first_error: Option<(String, &'static str)>,
    /// Errors by class ([`error_class`]).
    pub error_classes: BTreeMap<String, u64>,
    pub unsupported: bool,
    /// One histogram per kind, in kind order (a phase has a few kinds: a short list searched
    /// from the front costs less per sample than a map).
    pub hists: Vec<(PhaseKind, KindHist)>,
    /// Finished intervals: (interval number, ops, errors, histogram of all kinds, encoded: a
    /// long phase keeps a few hundred bytes a second, not a whole histogram).
    pub intervals: Vec<(u64, u64, u64, String)>,
    interval: u64,
    /// Where the running interval ends (ns after the start): a sample before it needs no
    /// division to find its interval.
    interval_end: u64,
    ops_mark: u64,
    errors_mark: u64,
}

impl Tally {
    pub fn new() -> Tally {
        Tally {
            ops: 0,
            requests: 0,
            errors: 0,
            mismatches: 0,
            missing: 0,
            busy_ns: 0,
            busy_max: 0,
            first_error: None,
            error_classes: BTreeMap::new(),
            unsupported: false,
            hists: Vec::new(),
            intervals: Vec::new(),
            interval: 0,
            interval_end: 0,
            ops_mark: 0,
            errors_mark: 0,
        }
    }

    /// One timed unit of `kind` that took `dt` ns and touched `ops` records, ending `at_ns`
    /// after the start, in intervals of `interval_ns`.
    #[inline]
    pub fn sample(&mut self, kind: PhaseKind, dt: u64, ops: u64, at_ns: u64, interval_ns: u64) {
        self.enter(at_ns, interval_ns);
        self.busy_ns += dt;
        self.ops += ops;
        self.requests += 1;
        self.hist(kind).total.saturating_record(dt.max(1));
    }

    /// Gets of one op each, `(dt, at_ns)` in time order: what `sample` counts for each, with
    /// the histogram found once.
    pub fn sample_gets(&mut self, samples: impl Iterator<Item = (u64, u64)>, interval_ns: u64) {
        let i = self.hist_at(PhaseKind::Get);
        for (dt, at_ns) in samples {
            self.enter(at_ns, interval_ns);
            self.busy_ns += dt;
            self.ops += 1;
            self.requests += 1;
            self.hists[i].1.total.saturating_record(dt.max(1));
        }
    }

    /// Move to the interval `at_ns` falls in, closing the running one if it ended.
    #[inline]
    fn enter(&mut self, at_ns: u64, interval_ns: u64) {
        if at_ns >= self.interval_end {
            let at = at_ns / interval_ns.max(1);
            if at != self.interval {
                self.close_interval(at);
            }
            self.interval_end = (at + 1).saturating_mul(interval_ns.max(1));
        }
    }

    fn hist(&mut self, kind: PhaseKind) -> &mut KindHist {
        let i = self.hist_at(kind);
        &mut self.hists[i].1
    }

    /// Where `kind`'s histogram is in `hists`, added in kind order if it is not there yet.
    #[inline]
    fn hist_at(&mut self, kind: PhaseKind) -> usize {
        // Most steps have one kind: its histogram is the first (this runs once a sample).
        if self.hists.first().is_some_and(|(k, _)| *k == kind) {
            return 0;
        }
        match self.hists.iter().position(|(k, _)| *k == kind) {
            Some(i) => i,
            None => self.add_hist(kind),
        }
    }

    #[cold]
    fn add_hist(&mut self, kind: PhaseKind) -> usize {
        let i = self.hists.partition_point(|(k, _)| *k < kind);
        self.hists.insert(i, (kind, KindHist { total: new_histogram(), mark: new_histogram() }));
        i
    }

    /// Close the running interval (its histogram is the growth of every kind's histogram).
    pub fn close_interval(&mut self, next: u64) {
        let mut h = new_histogram();
        for (_, k) in self.hists.iter_mut() {
            let mut d = k.total.clone();
            let _ = d.subtract(&k.mark);
            let _ = h.add(&d);
            k.mark = k.total.clone();
        }
        let errors = self.errors - self.errors_mark;
        if !h.is_empty() || errors > 0 {
            self.intervals.push((self.interval, self.ops - self.ops_mark, errors, encode_histogram(&h)));
        }
        self.ops_mark = self.ops;
        self.errors_mark = self.errors;
        self.interval = next;
    }

    /// Count an engine error of a timed unit that ended `at_ns` after the start (the timeline
    /// shows when errors happened); true when the thread should stop.
    pub fn error_at(&mut self, error: EngineError, at_ns: u64, interval_ns: u64) -> bool {
        self.enter(at_ns, interval_ns);
        self.error(error)
    }

    /// Count an engine error; true when the thread should stop.
    pub fn error(&mut self, error: EngineError) -> bool {
        if let EngineError::Unsupported(_) = &error {
            self.unsupported = true;
        }
        self.errors += 1;
        add_error_class(&mut self.error_classes, &error_class(&error.to_string()), 1);
        if self.first_error.is_none() {
            let kind = match &error {
                EngineError::Unsupported(_) => "unsupported",
                EngineError::Store(_) => "store",
                EngineError::Option(_) => "option",
                EngineError::Io(_) => "io",
            };
            self.first_error = Some((error.to_string(), kind));
        }
        self.unsupported || self.errors >= MAX_ERRORS
    }

    /// Errors, wrong and missing values of `other` (what a step's outcome counts), without its
    /// ops and times: a background writer's join the readers' figures this way.
    pub fn merge_outcomes(&mut self, other: &mut Tally) {
        self.errors += other.errors;
        self.mismatches += other.mismatches;
        self.missing += other.missing;
        self.unsupported |= other.unsupported;
        if self.first_error.is_none() {
            self.first_error = other.first_error.take();
        }
        for (class, n) in &other.error_classes {
            add_error_class(&mut self.error_classes, class, *n);
        }
    }

    pub fn merge(&mut self, mut other: Tally) {
        self.ops += other.ops;
        self.requests += other.requests;
        self.busy_ns += other.busy_ns;
        self.merge_outcomes(&mut other);
        for (k, h) in other.hists {
            let _ = self.hist(k).total.add(&h.total);
        }
        self.intervals.extend(other.intervals);
    }

    /// Intervals of all threads merged by number, in order, still encoded. Only one interval's
    /// histograms are decoded at a time: decoding every interval of a long phase at once held
    /// a whole histogram per second until the step ended.
    pub fn merged_intervals(&mut self) -> Vec<(u64, u64, u64, String)> {
        let mut all = std::mem::take(&mut self.intervals);
        all.sort_by_key(|i| i.0);
        let mut out: Vec<(u64, u64, u64, String)> = Vec::with_capacity(all.len());
        for (n, ops, errors, hdr) in all {
            match out.last_mut() {
                Some(last) if last.0 == n => {
                    last.1 += ops;
                    last.2 += errors;
                    last.3 = add_encoded(&last.3, &hdr);
                }
                _ => out.push((n, ops, errors, hdr)),
            }
        }
        out
    }
}

/// The sum of two encoded histograms, encoded (an undecodable one counts as empty).
fn add_encoded(encoded: &str, more: &str) -> String {
    let mut sum = decode_histogram(encoded).unwrap_or_else(|_| new_histogram());
    if let Ok(h) = decode_histogram(more) {
        let _ = sum.add(&h);
    }
    encode_histogram(&sum)
}

impl Default for Tally {
    fn default() -> Self {
        Tally::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_land_in_the_interval_they_happened_in() {
        let mut t = Tally::new();
        t.sample(PhaseKind::Get, 100, 1, 0, 1);
        t.error_at(EngineError::Store("refused".into()), 1, 1);
        t.error_at(EngineError::Store("refused".into()), 1, 1);
        // Interval 2 has nothing but an error: it is still on the timeline.
        t.error_at(EngineError::Store("refused".into()), 2, 1);
        t.sample(PhaseKind::Get, 100, 1, 3, 1);
        t.close_interval(u64::MAX);
        let by: Vec<(u64, u64, u64)> = t.merged_intervals().iter().map(|(n, ops, e, _)| (*n, *ops, *e)).collect();
        assert_eq!(by, [(0, 1, 0), (1, 0, 2), (2, 0, 1), (3, 1, 0)]);
        assert_eq!(t.errors, 3);
        assert_eq!(t.error_classes, BTreeMap::from([("refused".to_string(), 3)]));
    }

    #[test]
    fn merged_intervals_add_each_numbers_histograms_once() {
        let (mut a, mut b) = (Tally::new(), Tally::new());
        a.sample(PhaseKind::Get, 100, 1, 0, 1);
        a.sample(PhaseKind::Get, 300, 1, 1, 1);
        b.sample(PhaseKind::Get, 200, 2, 1, 1);
        a.close_interval(u64::MAX);
        b.close_interval(u64::MAX);
        a.merge(b);
        let merged = a.merged_intervals();
        let counts: Vec<(u64, u64, u64)> =
            merged.iter().map(|(n, ops, _, h)| (*n, *ops, decode_histogram(h).unwrap().len())).collect();
        assert_eq!(counts, [(0, 1, 1), (1, 3, 2)]);
        assert!(a.intervals.is_empty(), "the encoded intervals are handed over, not copied");
    }

    #[test]
    fn samples_at_a_time_land_in_the_interval_that_time_falls_in() {
        let mut t = Tally::new();
        // Intervals of 1000 ns: 0, 999 -> 0; 1000 -> 1; 3500 -> 3; 3999 -> 3; 4000 -> 4.
        for at in [0, 999, 1000, 3500, 3999, 4000] {
            t.sample(PhaseKind::Get, 10, 1, at, 1000);
        }
        t.close_interval(u64::MAX);
        let by: Vec<(u64, u64)> = t.merged_intervals().iter().map(|(n, ops, _, _)| (*n, *ops)).collect();
        assert_eq!(by, [(0, 2), (1, 1), (3, 2), (4, 1)]);
    }

    #[test]
    fn sample_gets_counts_what_sample_counts_get_by_get() {
        let samples = [(10, 0), (7, 999), (30, 1000), (1, 3500), (0, 3999), (12, 4000)];
        let (mut a, mut b) = (Tally::new(), Tally::new());
        a.sample(PhaseKind::Scan, 5, 1, 0, 1000);
        b.sample(PhaseKind::Scan, 5, 1, 0, 1000);
        for (dt, at) in samples {
            a.sample(PhaseKind::Get, dt, 1, at, 1000);
        }
        b.sample_gets(samples.into_iter(), 1000);
        for t in [&mut a, &mut b] {
            t.close_interval(u64::MAX);
        }
        assert_eq!((a.ops, a.requests, a.busy_ns), (b.ops, b.requests, b.busy_ns));
        assert_eq!(a.merged_intervals(), b.merged_intervals());
        let kinds = |t: &Tally| t.hists.iter().map(|(k, h)| (*k, h.total.len(), h.total.max())).collect::<Vec<_>>();
        assert_eq!(kinds(&a), kinds(&b));
        assert_eq!(kinds(&b)[0], (PhaseKind::Get, 6, 30));
    }

    #[test]
    fn histograms_stay_in_kind_order_whatever_order_kinds_come_in() {
        let (mut a, mut b) = (Tally::new(), Tally::new());
        for (kind, dt) in [(PhaseKind::Scan, 5), (PhaseKind::Get, 7), (PhaseKind::Scan, 9), (PhaseKind::Update, 3)] {
            a.sample(kind, dt, 1, 0, 1);
        }
        b.sample(PhaseKind::Delete, 4, 1, 0, 1);
        b.sample(PhaseKind::Get, 8, 1, 0, 1);
        a.merge(b);
        let kinds: Vec<PhaseKind> = a.hists.iter().map(|(k, _)| *k).collect();
        let mut sorted = kinds.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(kinds, sorted, "one histogram per kind, in kind order");
        let count = |k: PhaseKind| a.hists.iter().find(|(x, _)| *x == k).map(|(_, h)| h.total.len());
        assert_eq!(
            [count(PhaseKind::Get), count(PhaseKind::Scan), count(PhaseKind::Update), count(PhaseKind::Delete)],
            [Some(2), Some(2), Some(1), Some(1)]
        );
    }

    #[test]
    fn error_classes_ignore_digits_and_stop_at_eight() {
        assert_eq!(error_class("connect 127.0.0.1:7001 refused"), "connect ###.#.#.#:#### refused");
        let mut m = BTreeMap::new();
        for i in 0..10 {
            add_error_class(&mut m, &format!("kind {}", char::from(b'a' + i)), 1);
        }
        assert_eq!(m.len(), 9);
        assert_eq!(m["other"], 2);
    }
}
