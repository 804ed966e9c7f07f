//! Executes a job inside a worker: opens the engine, runs each phase of the plan, times every
//! operation, checks every read against the plan and emits protocol events.
//! This is the only place in the Rust worker where clocks are read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::engine::{Engine, EngineDescriptor, EngineError, OpenArgs, OpenMode, Options, Reader, WriteOp};
use crate::plan::{op, Op, Plan, NONE};
use crate::protocol::{Event, Job, JobPhase, PROTOCOL_VERSION};
use crate::result::{Latency, PhaseResult, Status};
use crate::spec::{CacheMode, OpenPer, PhaseKind};
use crate::sys::{self, Usage};

/// Longest latency a histogram holds (1 hour); longer samples saturate.
const MAX_NS: u64 = 3_600_000_000_000;
/// A phase stops after this many engine errors.
const MAX_ERRORS: u64 = 1000;

/// The clock of every sample: the CPU's time-stamp counter where it is invariant, calibrated
/// against the monotonic clock by `quanta` (a pair of reads costs ~20 ns here against ~53 ns for
/// two `Instant::now()`); quanta falls back to the monotonic clock where the TSC is unusable.
static CLOCK: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();

fn clock() -> &'static quanta::Clock {
    CLOCK.get_or_init(quanta::Clock::new)
}

/// A raw time stamp for [`since`].
#[inline]
pub fn stamp() -> u64 {
    clock().raw()
}

/// Nanoseconds since a [`stamp`].
#[inline]
pub fn since(t0: u64) -> u64 {
    let c = clock();
    c.delta_as_nanos(t0, c.raw())
}

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// HdrHistogram V2 compressed encoding, base64 (what every HdrHistogram library decodes).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).expect("histogram serialises");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s.trim()).map_err(|e| e.to_string())?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("{e:?}"))
}

pub fn summarize(h: &Histogram<u64>) -> Option<Latency> {
    if h.is_empty() {
        return None;
    }
    Some(Latency {
        min_ns: h.min(),
        mean_ns: h.mean(),
        p50_ns: h.value_at_quantile(0.50),
        p90_ns: h.value_at_quantile(0.90),
        p95_ns: h.value_at_quantile(0.95),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        max_ns: h.max(),
        stdev_ns: h.stdev(),
        hdr: encode_histogram(h),
    })
}

/// Mean cost (ns) of what the runner adds to each sample: two clock reads and a record.
pub fn calibrate_timer() -> f64 {
    let mut h = new_histogram();
    let n = 200_000u64;
    let start = Instant::now();
    for _ in 0..n {
        let t0 = stamp();
        let dt = since(t0);
        h.saturating_record(dt.max(1));
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// What one thread of a phase measured.
struct Tally {
    hist: Histogram<u64>,
    ops: u64,
    requests: u64,
    errors: u64,
    mismatches: u64,
    missing: u64,
    first_error: Option<String>,
    unsupported: Option<String>,
    /// Mixed phases: one histogram per operation kind as well.
    by_op: std::collections::BTreeMap<&'static str, Histogram<u64>>,
    /// Time inside timed calls (the sum of the samples): the phase's `elapsed`.
    busy_ns: u64,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            hist: new_histogram(),
            ops: 0,
            requests: 0,
            errors: 0,
            mismatches: 0,
            missing: 0,
            first_error: None,
            unsupported: None,
            by_op: Default::default(),
            busy_ns: 0,
        }
    }

    /// A sample of a mixed phase, also kept under its operation kind.
    #[inline]
    fn sample_as(&mut self, t0: u64, kind: &'static str) {
        let dt = since(t0).max(1);
        self.busy_ns += dt;
        self.hist.saturating_record(dt);
        self.by_op.entry(kind).or_insert_with(new_histogram).saturating_record(dt);
    }

    /// One sample from a [`stamp`] taken just before the call.
    #[inline]
    fn sample(&mut self, t0: u64) {
        let dt = since(t0);
        self.busy_ns += dt;
        self.hist.saturating_record(dt.max(1));
    }

    /// One sample from an instant (the open loop's due time).
    fn sample_since(&mut self, t0: Instant) {
        let dt = t0.elapsed().as_nanos() as u64;
        self.busy_ns += dt;
        self.hist.saturating_record(dt.max(1));
    }

    fn error(&mut self, e: EngineError) -> bool {
        if let EngineError::Unsupported(what) = &e {
            self.unsupported = Some(what.clone());
            return true;
        }
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
        self.errors >= MAX_ERRORS
    }

    /// Compare what a read found with what the plan expects.
    #[inline]
    fn check(&mut self, plan: &Plan, expected: u32, found: Option<&[u8]>) {
        match (expected, found) {
            (NONE, None) => {}
            (NONE, Some(_)) => self.mismatches += 1,
            (_, None) => self.missing += 1,
            (j, Some(v)) => {
                if plan.value(j) != v {
                    self.mismatches += 1;
                }
            }
        }
    }

    fn merge(&mut self, o: Tally) {
        self.hist.add(&o.hist).expect("same histogram bounds");
        self.ops += o.ops;
        self.busy_ns += o.busy_ns;
        self.requests += o.requests;
        self.errors += o.errors;
        self.mismatches += o.mismatches;
        self.missing += o.missing;
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
        if self.unsupported.is_none() {
            self.unsupported = o.unsupported;
        }
        for (k, h) in o.by_op {
            self.by_op.entry(k).or_insert_with(new_histogram).add(&h).expect("same histogram bounds");
        }
    }
}

pub struct Runner<'a> {
    job: &'a Job,
    desc: &'a EngineDescriptor,
    plan: &'a Plan,
    options: Options,
    emit: &'a mut dyn FnMut(Event),
    engine: Option<Box<dyn Engine>>,
    mode: OpenMode,
}

/// Run `job` on the engine `desc`, emitting events. Returns Err with the message already
/// emitted as an error event when the job could not go on.
pub fn run_job(job: &Job, desc: &EngineDescriptor, emit: &mut dyn FnMut(Event)) -> Result<(), String> {
    let fail = |emit: &mut dyn FnMut(Event), phase: Option<String>, message: String| {
        emit(Event::Error { phase, message: message.clone() });
        Err(message)
    };
    if job.protocol != PROTOCOL_VERSION {
        return fail(emit, None, format!("job protocol {} but this worker speaks {PROTOCOL_VERSION}", job.protocol));
    }
    if let Err(why) = (desc.available)() {
        return fail(emit, None, format!("engine {} unavailable: {why}", desc.name));
    }
    let plan = match Plan::open(&job.plan) {
        Ok(p) => p,
        Err(e) => return fail(emit, None, format!("{e:#}")),
    };
    let options = match Options::parse(desc.name, desc.options, &job.options) {
        Ok(o) => o,
        Err(e) => return fail(emit, None, e),
    };
    let timer_overhead_ns = calibrate_timer();
    let mut r = Runner { job, desc, plan: &plan, options, emit, engine: None, mode: OpenMode::ReadWrite };

    let usage0 = Usage::now();
    let t0 = Instant::now();
    if let Err(e) = r.open(OpenMode::ReadWrite) {
        return fail(r.emit, Some("open".into()), format!("open failed: {e}"));
    }
    let open_ns = t0.elapsed().as_nanos() as u64;
    let settings = r.engine.as_ref().map(|e| e.settings()).unwrap_or_default();
    (r.emit)(Event::Hello {
        protocol: PROTOCOL_VERSION,
        worker: format!("rust kvbench {}", env!("CARGO_PKG_VERSION")),
        engine: desc.name.to_string(),
        version: (desc.version)(),
        capabilities: desc.capabilities.names().iter().map(|s| s.to_string()).collect(),
        options: r.options.effective(),
        settings,
        timer_overhead_ns,
    });
    let open_result = r.single("open", open_ns, usage0);
    (r.emit)(Event::Phase { result: open_result });

    for ph in &job.phases {
        let result = r.phase(ph);
        let fatal = ph.kind == PhaseKind::Load && result.status == Status::Failed;
        let reason = result.reason.clone();
        (r.emit)(Event::Phase { result });
        if fatal {
            return fail(r.emit, Some(ph.name.clone()), format!("load failed: {}", reason.unwrap_or_default()));
        }
        if r.engine.is_none() {
            return fail(r.emit, Some(ph.name.clone()), "engine could not be reopened".into());
        }
    }

    let usage0 = Usage::now();
    let t0 = Instant::now();
    let closed = r.engine.take().map(|e| e.close()).unwrap_or(Ok(()));
    let close_ns = t0.elapsed().as_nanos() as u64;
    let mut close = r.single("close", close_ns, usage0);
    if let Err(e) = closed {
        close.status = Status::Failed;
        close.reason = Some(e.to_string());
    }
    (r.emit)(Event::Phase { result: close });
    (r.emit)(Event::Done {});
    Ok(())
}

impl Runner<'_> {
    fn open(&mut self, mode: OpenMode) -> Result<(), EngineError> {
        let e = (self.desc.open)(&self.args(mode))?;
        self.engine = Some(e);
        self.mode = mode;
        Ok(())
    }

    fn args(&self, mode: OpenMode) -> OpenArgs<'_> {
        OpenArgs {
            dir: &self.job.dir,
            options: &self.options,
            sync: self.job.sync,
            mode,
            expected_records: self.plan.records(),
            expected_bytes: self.plan.raw_bytes() + self.plan.update_values() * 2 * 1024,
            url: self.job.url.as_deref(),
            token: None,
        }
    }

    fn close(&mut self) -> Result<(), EngineError> {
        match self.engine.take() {
            Some(e) => e.close(),
            None => Ok(()),
        }
    }

    /// Close and open again in `mode`; returns the open time.
    fn reopen(&mut self, mode: OpenMode, evict: bool) -> Result<(Duration, u64), EngineError> {
        self.close()?;
        let evicted = if evict { sys::evict(&self.job.dir)? } else { 0 };
        let t0 = Instant::now();
        self.open(mode)?;
        Ok((t0.elapsed(), evicted))
    }

    fn single(&self, name: &str, ns: u64, usage0: Usage) -> PhaseResult {
        let mut h = new_histogram();
        h.saturating_record(ns.max(1));
        let mut r = PhaseResult {
            name: name.into(),
            kind: name.into(),
            ops: 1,
            requests: 1,
            unit: name.into(),
            elapsed_ns: ns,
            wall_ns: ns,
            ops_per_sec: 1e9 / ns.max(1) as f64,
            latency: summarize(&h),
            threads: 1,
            batch: 1,
            cache: "-".into(),
            ..Default::default()
        };
        fill_usage(&mut r, usage0);
        r
    }

    fn phase(&mut self, ph: &JobPhase) -> PhaseResult {
        let caps = self.desc.capabilities;
        let mut res = PhaseResult {
            name: ph.name.clone(),
            kind: ph.kind.as_str().into(),
            threads: ph.threads.max(1),
            batch: ph.batch.max(1),
            cache: match ph.cache {
                CacheMode::Warm => "warm".into(),
                CacheMode::Cold => "cold".into(),
            },
            unit: "op".into(),
            ..Default::default()
        };
        let na = |mut res: PhaseResult, why: String| {
            res.status = Status::NotApplicable;
            res.reason = Some(why);
            res
        };
        let plan = self.plan;
        let Some(ops) = plan.ops(ph.plan_phase) else {
            res.status = Status::Failed;
            res.reason = Some(format!("plan has no phase {}", ph.plan_phase));
            return res;
        };
        match ph.kind {
            PhaseKind::Scan if !caps.ordered_scan => return na(res, "engine has no ordered scan".into()),
            PhaseKind::Update | PhaseKind::Delete | PhaseKind::Mixed if caps.build_once => {
                return na(res, "engine is written once (build-once): no updates or deletes".into())
            }
            PhaseKind::Delete if !caps.delete => return na(res, "engine cannot delete".into()),
            PhaseKind::Mixed if !caps.delete && has_kind(ops, op::DELETE) => {
                return na(res, "engine cannot delete".into())
            }
            PhaseKind::Mixed if !caps.ordered_scan && has_kind(ops, op::SCAN) => {
                return na(res, "engine has no ordered scan".into())
            }
            PhaseKind::MultiGet if !caps.multi_get => {
                res.notes.push("no native multi-get: each request loops over get".into())
            }
            _ => {}
        }
        if ph.kind.writes() && self.job.open_mode != OpenMode::ReadWrite && ph.kind != PhaseKind::Load {
            return na(res, format!("reads use a {:?} open; writes are not possible", self.job.open_mode));
        }

        // Open mode and cache state for this phase.
        let want = if ph.kind.writes() { OpenMode::ReadWrite } else { self.job.open_mode };
        match want {
            OpenMode::ReadOnly if !caps.read_only_open => return na(res, "engine has no read-only open".into()),
            OpenMode::Secondary if !caps.secondary_open => return na(res, "engine has no secondary open".into()),
            _ => {}
        }
        if want != self.mode || ph.cache == CacheMode::Cold {
            match self.reopen(want, ph.cache == CacheMode::Cold) {
                Ok((t, evicted)) => {
                    if ph.cache == CacheMode::Cold {
                        res.cache = format!("cold: {evicted} files evicted with posix_fadvise(DONTNEED)");
                    }
                    res.notes.push(format!("reopened {:?} in {:.3} ms before the phase", want, t.as_secs_f64() * 1e3));
                }
                Err(e) => {
                    res.status = Status::Failed;
                    res.reason = Some(format!("reopen failed: {e}"));
                    return res;
                }
            }
        }
        if ph.kind == PhaseKind::Mixed && ph.threads > 1 {
            res.notes.push("mixed phases run on one thread so reads can be checked exactly".into());
            res.threads = 1;
        }

        let usage0 = Usage::now();
        let t0 = Instant::now();
        let total = ops.len();
        let tally = match (ph.kind, ph.open_per) {
            (PhaseKind::Get, OpenPer::Operation) => {
                res.unit = "open+op+close".into();
                res.notes.push("each sample opens the database, reads one key and closes it".into());
                self.open_per_op(ops, ph)
            }
            (PhaseKind::Load | PhaseKind::Update | PhaseKind::Delete, _) => {
                if ph.batch > 1 {
                    res.unit = "batch".into();
                }
                self.writes(ops, ph)
            }
            (PhaseKind::Mixed, _) => self.mixed(ops, ph),
            (PhaseKind::Get | PhaseKind::MultiGet | PhaseKind::Scan, _) => {
                if ph.kind != PhaseKind::Get {
                    res.unit = "request".into();
                }
                if let (Some(rate), PhaseKind::Get) = (ph.rate, ph.kind) {
                    res.notes.push(format!(
                        "open loop at {rate} ops/s: latency counts from each operation's intended start \
                         (coordinated omission corrected)"
                    ));
                }
                self.reads(ops, ph, total)
            }
        };
        // `elapsed` is the time inside the timed calls; the runner's own work between them
        // (plan lookups, verification, progress) is in `wall_ns` only. An open loop is paced
        // by the wall clock, so there both are the wall time.
        let mut wall = t0.elapsed();
        let mut elapsed = if ph.rate.is_some() { wall } else { Duration::from_nanos(tally.busy_ns) };
        let mut tally = tally;
        if ph.kind == PhaseKind::Load && tally.errors == 0 {
            let t = Instant::now();
            if let Some(e) = self.engine.as_mut() {
                if let Err(err) = e.finish_load() {
                    tally.error(err);
                }
            }
            let fin = t.elapsed();
            elapsed += fin;
            wall += fin;
            if fin > Duration::from_millis(1) {
                res.notes.push(format!("includes {:.1} ms to finish the load", fin.as_secs_f64() * 1e3));
            }
        }
        if ph.open_per == OpenPer::Operation && self.engine.is_none() {
            if let Err(e) = self.open(self.mode) {
                tally.error(e);
            }
        }
        res.elapsed_ns = elapsed.as_nanos() as u64;
        res.wall_ns = wall.as_nanos() as u64;
        fill_usage(&mut res, usage0);
        res.ops = tally.ops;
        res.requests = tally.requests;
        res.errors = tally.errors;
        res.mismatches = tally.mismatches;
        res.missing = tally.missing;
        res.ops_per_sec = tally.ops as f64 / elapsed.as_secs_f64().max(1e-9);
        if let (Some(rate), PhaseKind::Get) = (ph.rate, ph.kind) {
            if res.ops_per_sec < rate * 0.95 {
                res.notes.push(format!("the target rate was not sustained: {:.0} ops/s achieved", res.ops_per_sec));
            }
        }
        res.latency = summarize(&tally.hist);
        res.latency_by_op = tally.by_op.iter().filter_map(|(k, h)| summarize(h).map(|l| (k.to_string(), l))).collect();
        if let Some(what) = tally.unsupported {
            return na(res, format!("unsupported: {what}"));
        }
        if let Some(e) = tally.first_error {
            res.status = Status::Failed;
            res.reason = Some(format!("{} errors; first: {e}", tally.errors));
        } else if tally.mismatches + tally.missing > 0 {
            res.status = Status::Failed;
            res.reason =
                Some(format!("verification failed: {} wrong values, {} missing keys", tally.mismatches, tally.missing));
        }
        res
    }

    fn writes(&mut self, ops: crate::plan::Ops<'_>, ph: &JobPhase) -> Tally {
        let engine = self.engine.as_ref().expect("engine open");
        let plan = self.plan;
        let batch = ph.batch.max(1) as usize;
        let progress = AtomicU64::new(0);
        let mut t = Tally::new();
        let mut buf: Vec<WriteOp<'_>> = Vec::with_capacity(batch);
        let emit = &mut *self.emit;
        let mut last = Instant::now();
        let mut i = 0;
        while i < ops.len() {
            buf.clear();
            for j in i..(i + batch).min(ops.len()) {
                let o = ops.get(j);
                let value = (o.kind == op::PUT).then(|| plan.value(o.value));
                buf.push(WriteOp { key: plan.key(o.key), value });
            }
            i += buf.len();
            let t0 = stamp();
            let r = engine.write(&buf);
            t.sample(t0);
            t.requests += 1;
            t.ops += buf.len() as u64;
            if let Err(e) = r {
                if t.error(e) || t.unsupported.is_some() {
                    break;
                }
            }
            progress.store(i as u64, Ordering::Relaxed);
            if last.elapsed().as_millis() as u64 >= self.job.progress_ms {
                last = Instant::now();
                emit(Event::Progress { phase: ph.name.clone(), done: i as u64, total: ops.len() as u64 });
            }
        }
        t
    }

    fn reads(&mut self, ops: crate::plan::Ops<'_>, ph: &JobPhase, total: usize) -> Tally {
        let engine: &dyn Engine = self.engine.as_deref().expect("engine open");
        let plan = self.plan;
        let per = if ph.kind == PhaseKind::MultiGet { ph.keys_per_request.max(1) as usize } else { 1 };
        let requests = total / per;
        let threads = (ph.threads.max(1) as usize).min(requests.max(1));
        let done = AtomicU64::new(0);
        let kind = ph.kind;
        let rate = ph.rate.filter(|r| *r > 0.0 && kind == PhaseKind::Get).map(|r| r / threads as f64);
        let plan_phase = ph.plan_phase;
        let emit = &mut *self.emit;
        let progress_ms = self.job.progress_ms;
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (a, b) = (requests * t / threads, requests * (t + 1) / threads);
                    let done = &done;
                    s.spawn(move || {
                        let mut tally = Tally::new();
                        let mut reader = match engine.reader() {
                            Ok(r) => r,
                            Err(e) => {
                                tally.error(e);
                                return tally;
                            }
                        };
                        match kind {
                            PhaseKind::Get if rate.is_some() => {
                                let (rate, offset) = (rate.unwrap_or(1.0), t as f64 / threads as f64);
                                paced_get_loop(plan, ops, a..b, reader.as_mut(), &mut tally, done, rate, offset)
                            }
                            PhaseKind::Get => get_loop(plan, ops, a..b, reader.as_mut(), &mut tally, done),
                            PhaseKind::MultiGet => {
                                multi_get_loop(plan, ops, per, a..b, reader.as_mut(), &mut tally, done)
                            }
                            _ => scan_loop(plan, plan_phase, ops, a..b, reader.as_mut(), &mut tally, done),
                        }
                        tally
                    })
                })
                .collect();
            let mut last = Instant::now();
            while !handles.iter().all(|h| h.is_finished()) {
                std::thread::sleep(Duration::from_millis(5));
                if last.elapsed().as_millis() as u64 >= progress_ms {
                    last = Instant::now();
                    let d = done.load(Ordering::Relaxed) * per as u64;
                    emit(Event::Progress { phase: ph.name.clone(), done: d, total: total as u64 });
                }
            }
            let mut all = Tally::new();
            // Threads run side by side: the phase took as long as its busiest thread.
            let mut busiest = 0;
            for h in handles {
                match h.join() {
                    Ok(t) => {
                        busiest = busiest.max(t.busy_ns);
                        all.merge(t)
                    }
                    Err(_) => {
                        all.error(EngineError::Store("a reader thread panicked".into()));
                    }
                }
            }
            all.busy_ns = busiest;
            all
        })
    }

    fn mixed(&mut self, ops: crate::plan::Ops<'_>, ph: &JobPhase) -> Tally {
        let engine: &dyn Engine = self.engine.as_deref().expect("engine open");
        let plan = self.plan;
        let mut t = Tally::new();
        let mut reader = match engine.reader() {
            Ok(r) => r,
            Err(e) => {
                t.error(e);
                return t;
            }
        };
        let mut buf = Vec::new();
        let mut dirty = false;
        let mut last = Instant::now();
        for i in 0..ops.len() {
            let o = ops.get(i);
            let key = plan.key(o.key);
            let r = match o.kind {
                op::GET | op::SCAN => {
                    if dirty {
                        if let Err(e) = reader.refresh() {
                            t.error(e);
                        }
                        dirty = false;
                    }
                    if o.kind == op::GET {
                        let t0 = stamp();
                        let r = reader.get(key, &mut buf);
                        t.sample_as(t0, "read");
                        r.map(|found| t.check(plan, o.value, found.then_some(&buf[..])))
                    } else {
                        let start = plan.key(plan.sorted(o.key as u64));
                        let mut prev: Vec<u8> = Vec::new();
                        let mut disorder = 0u64;
                        let t0 = stamp();
                        let r = reader.scan(Some(start), o.aux as usize, &mut |k, _v| {
                            if k < &prev[..] {
                                disorder += 1;
                            }
                            prev.clear();
                            prev.extend_from_slice(k);
                            true
                        });
                        t.sample_as(t0, "scan");
                        t.mismatches += disorder;
                        r.map(|_| ())
                    }
                }
                _ => {
                    let value = (o.kind == op::PUT).then(|| plan.value(o.value));
                    dirty = true;
                    let w = [WriteOp { key, value }];
                    let t0 = stamp();
                    let r = engine.write(&w);
                    t.sample_as(t0, if o.kind == op::PUT { "update" } else { "delete" });
                    r
                }
            };
            t.ops += 1;
            t.requests += 1;
            if let Err(e) = r {
                if t.error(e) || t.unsupported.is_some() {
                    break;
                }
            }
            if last.elapsed().as_millis() as u64 >= self.job.progress_ms {
                last = Instant::now();
                (self.emit)(Event::Progress { phase: ph.name.clone(), done: i as u64, total: ops.len() as u64 });
            }
        }
        t
    }

    /// The article 000 method: open, read one key, close, for every operation.
    fn open_per_op(&mut self, ops: crate::plan::Ops<'_>, ph: &JobPhase) -> Tally {
        let mut t = Tally::new();
        if let Err(e) = self.close() {
            t.error(e);
            return t;
        }
        let mode = self.mode;
        let mut buf = Vec::new();
        let mut last = Instant::now();
        for i in 0..ops.len() {
            let o = ops.get(i);
            let key = self.plan.key(o.key);
            let args = self.args(mode);
            let t0 = stamp();
            let r = (|| -> Result<bool, EngineError> {
                let e = (self.desc.open)(&args)?;
                let found = {
                    let mut rd = e.reader()?;
                    rd.get(key, &mut buf)?
                };
                e.close()?;
                Ok(found)
            })();
            t.sample(t0);
            t.ops += 1;
            t.requests += 1;
            match r {
                Ok(found) => t.check(self.plan, o.value, found.then_some(&buf[..])),
                Err(e) => {
                    if t.error(e) {
                        break;
                    }
                }
            }
            if last.elapsed().as_millis() as u64 >= self.job.progress_ms {
                last = Instant::now();
                (self.emit)(Event::Progress { phase: ph.name.clone(), done: i as u64, total: ops.len() as u64 });
            }
        }
        t
    }
}

fn has_kind(ops: crate::plan::Ops<'_>, kind: u32) -> bool {
    (0..ops.len()).any(|i| ops.get(i).kind == kind)
}

fn fill_usage(r: &mut PhaseResult, before: Usage) {
    let after = Usage::now();
    r.cpu_user_ns = after.user_ns.saturating_sub(before.user_ns);
    r.cpu_sys_ns = after.sys_ns.saturating_sub(before.sys_ns);
    r.max_rss_kb = after.max_rss_kb;
    r.io_read_bytes = after.read_bytes.saturating_sub(before.read_bytes);
    r.io_write_bytes = after.write_bytes.saturating_sub(before.write_bytes);
}

const PROGRESS_EVERY: usize = 1024;

fn get_loop(
    plan: &Plan,
    ops: crate::plan::Ops<'_>,
    range: std::ops::Range<usize>,
    reader: &mut dyn Reader,
    t: &mut Tally,
    done: &AtomicU64,
) {
    let mut buf = Vec::with_capacity(4096);
    let end = range.end;
    for i in range {
        // Plan data of later operations is fetched ahead (outside the timing) so the plan's
        // own cache misses do not slow the loop: index entries 16 ahead, keys and values 8.
        if i + 16 < end {
            plan.prefetch_index(ops.get(i + 16).key);
        }
        if i + 8 < end {
            let ahead = ops.get(i + 8);
            plan.prefetch_record(ahead.key, ahead.value);
        }
        let o: Op = ops.get(i);
        let key = plan.key(o.key);
        let t0 = stamp();
        let r = reader.get(key, &mut buf);
        t.sample(t0);
        t.ops += 1;
        t.requests += 1;
        match r {
            Ok(found) => t.check(plan, o.value, found.then_some(&buf[..])),
            Err(e) => {
                if t.error(e) || t.unsupported.is_some() {
                    break;
                }
            }
        }
        if i % PROGRESS_EVERY == 0 {
            done.fetch_add(PROGRESS_EVERY as u64, Ordering::Relaxed);
        }
    }
}

/// The open loop of a get phase: operation k of this thread is due at start + (k + offset) /
/// rate, and its latency is measured from that due time. A slow reply delays the operations
/// after it and is charged to them too, instead of silently lowering the offered load
/// (coordinated omission). Waiting sleeps until ~100 µs before the due time, then spins.
#[allow(clippy::too_many_arguments)]
fn paced_get_loop(
    plan: &Plan,
    ops: crate::plan::Ops<'_>,
    range: std::ops::Range<usize>,
    reader: &mut dyn Reader,
    t: &mut Tally,
    done: &AtomicU64,
    rate: f64,
    offset: f64,
) {
    let mut buf = Vec::with_capacity(4096);
    let period_ns = 1e9 / rate;
    let start = Instant::now();
    for (k, i) in range.enumerate() {
        let due = start + Duration::from_nanos(((k as f64 + offset) * period_ns) as u64);
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            if due - now > Duration::from_micros(250) {
                std::thread::sleep(due - now - Duration::from_micros(100));
            } else {
                std::hint::spin_loop();
            }
        }
        let o: Op = ops.get(i);
        let r = reader.get(plan.key(o.key), &mut buf);
        t.sample_since(due);
        t.ops += 1;
        t.requests += 1;
        match r {
            Ok(found) => t.check(plan, o.value, found.then_some(&buf[..])),
            Err(e) => {
                if t.error(e) || t.unsupported.is_some() {
                    break;
                }
            }
        }
        if i % PROGRESS_EVERY == 0 {
            done.fetch_add(PROGRESS_EVERY as u64, Ordering::Relaxed);
        }
    }
}

fn multi_get_loop(
    plan: &Plan,
    ops: crate::plan::Ops<'_>,
    per: usize,
    range: std::ops::Range<usize>,
    reader: &mut dyn Reader,
    t: &mut Tally,
    done: &AtomicU64,
) {
    let mut keys: Vec<&[u8]> = Vec::with_capacity(per);
    let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(per);
    for req in range {
        keys.clear();
        for j in req * per..(req + 1) * per {
            keys.push(plan.key(ops.get(j).key));
        }
        let t0 = stamp();
        let r = reader.multi_get(&keys, &mut out);
        t.sample(t0);
        t.ops += per as u64;
        t.requests += 1;
        match r {
            Ok(()) => {
                if out.len() != per {
                    t.mismatches += per as u64;
                    continue;
                }
                for (n, j) in (req * per..(req + 1) * per).enumerate() {
                    t.check(plan, ops.get(j).value, out[n].as_deref());
                }
            }
            Err(e) => {
                if t.error(e) || t.unsupported.is_some() {
                    break;
                }
            }
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
}

fn scan_loop(
    plan: &Plan,
    plan_phase: usize,
    ops: crate::plan::Ops<'_>,
    range: std::ops::Range<usize>,
    reader: &mut dyn Reader,
    t: &mut Tally,
    done: &AtomicU64,
) {
    let unique = plan.unique_records();
    for i in range {
        let o = ops.get(i);
        let start = plan.key(plan.sorted(o.key as u64));
        // Verification walks the expected sorted positions beside the engine's cursor; it is a
        // comparison per record inside the timed scan, stated in docs/methodology.md.
        let mut p = o.key as u64;
        let mut bad = 0u64;
        let mut seen = 0u64;
        let t0 = stamp();
        let r = reader.scan(Some(start), o.aux as usize, &mut |k, v| {
            while p < unique && plan.scan_expect(plan_phase, p) == Some(NONE) {
                p += 1;
            }
            seen += 1;
            if p >= unique {
                bad += 1;
                return false;
            }
            let expect_value = plan.scan_expect(plan_phase, p).unwrap_or(NONE);
            if k != plan.key(plan.sorted(p)) || (expect_value != NONE && v != plan.value(expect_value)) {
                bad += 1;
            }
            p += 1;
            true
        });
        t.sample(t0);
        t.requests += 1;
        t.ops += seen;
        match r {
            Ok(_) => {
                t.mismatches += bad;
                t.missing += (o.aux as u64).saturating_sub(seen);
            }
            Err(e) => {
                if t.error(e) || t.unsupported.is_some() {
                    break;
                }
            }
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
}
