//! kvbench-worker: the Rust worker and the worker core of every other runtime. It executes a
//! job (docs/protocol.md) step by step and reports raw counters; it decides nothing, since
//! kvbench resolved every step before writing the job. It stands on the model and the plan.
//!
//! - [`run_job`]: the Rust worker, engines called in process (the `kvbench worker` command).
//! - [`hosted`] and [`blocks`]: the same job for a worker in another language, which calls its
//!   engine between two calls into this core (kvbench-ffi's C ABI, the Node addon): the core
//!   derives each block's keys and values and what each read must return, and counts.
//! - [`state`]: which value a read must return, per record, so every read is verified.
//! - [`clock`] and [`tally`]: the only clock reads, and what one thread measured.
//! - [`until`]: when a step with a duration or a steadiness rule stops.
//! - [`sys`]: what the operating system says about a process and a directory.
//!
//! A record's state says which version a read must find, after each write:
//!
//! ```
//! use kvbench_worker::state::{after_delete, after_put, Expect, State, LOADED};
//!
//! let mut states = State::new(10, 20);
//! assert_eq!(State::expect(states.get(3), states.get(3)), Expect::Version(0));
//! assert_eq!(State::expect(states.get(15), states.get(15)), Expect::Absent);
//!
//! states.materialize();
//! let before = states.begin_write(3, false);
//! assert_eq!(before, LOADED);
//! states.end_write(3, after_put(before));
//! assert_eq!(State::expect(states.get(3), states.get(3)), Expect::Version(1));
//! states.end_write(3, after_delete(states.get(3)));
//! assert_eq!(State::expect(states.get(3), states.get(3)), Expect::Absent);
//! ```

pub mod abi;
mod beside;
pub mod blocks;
pub mod clock;
pub mod data;
pub mod hosted;
mod loops;
pub mod state;
mod step;
pub mod sys;
pub mod tally;
pub mod until;
mod writer;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{Engine, EngineDescriptor, EngineError, OpenArgs, OpenMode, Options};
use crate::job::{Event, Job, OpsStep, PhaseKind, Step, StepResult, PROTOCOL_VERSION};
use crate::sys::Usage;
// The files here moved from kvbench-core and keep their `crate::` paths to the model and plan.
use clock::stamp;
use data::Data;
use kvbench_model::{engine, job};
use loops::Ctx;
use state::State;
use step::{counters, keeps_states, locks_records, usage_since};
use tally::Tally;

/// One job in progress: the engine (when open), the data and the record states.
struct Worker<'a> {
    job: &'a Job,
    desc: &'a EngineDescriptor,
    options: Options,
    data: Data,
    state: State,
    engine: Option<Box<dyn Engine>>,
    loaded: bool,
}

/// Run `job` on the engine `desc`, emitting events. Err when the job could not start.
pub fn run_job(job: &Job, desc: &EngineDescriptor, emit: &mut dyn FnMut(Event)) -> Result<(), String> {
    let mut w = match start(job, desc) {
        Ok(w) => w,
        Err(message) => {
            emit(Event::Error { message: message.clone() });
            return Err(message);
        }
    };
    emit(Event::Hello {
        protocol: PROTOCOL_VERSION,
        worker: format!("rust kvbench {}", env!("CARGO_PKG_VERSION")),
        engine: desc.name.to_string(),
        version: (desc.version)(),
        capabilities: desc.capabilities.names().iter().map(|s| s.to_string()).collect(),
        options: w.options.effective(),
        timer_overhead_ns: clock::calibrate_timer(),
    });
    for step in &job.steps {
        let (res, stop) = w.step(step, emit);
        let failed = res.error.is_some();
        emit(Event::Step(Box::new(res)));
        if failed && stop {
            break;
        }
    }
    if let Some(e) = w.engine.take() {
        let _ = e.close();
    }
    emit(Event::Done {});
    Ok(())
}

fn start<'a>(job: &'a Job, desc: &'a EngineDescriptor) -> Result<Worker<'a>, String> {
    if job.protocol != PROTOCOL_VERSION {
        return Err(format!("job protocol {} but this worker speaks {PROTOCOL_VERSION}", job.protocol));
    }
    (desc.available)().map_err(|why| format!("engine {} unavailable: {why}", desc.name))?;
    let options = Options::resolved(job.options.clone());
    let data = Data::open(&job.dataset, job.plan.as_deref())?;
    let state = State::new(job.dataset.loaded, job.dataset.total);
    Ok(Worker { job, desc, options, data, state, engine: None, loaded: false })
}

pub(crate) fn error_kind(error: &EngineError) -> &'static str {
    match error {
        EngineError::Unsupported(_) => "unsupported",
        EngineError::Store(_) => "store",
        EngineError::Option(_) => "option",
        EngineError::Io(_) => "io",
    }
}

impl Worker<'_> {
    fn args(&self, mode: OpenMode) -> OpenArgs<'_> {
        OpenArgs {
            dir: &self.job.dir,
            options: &self.options,
            sync: self.job.sync,
            mode,
            expected_records: self.job.dataset.open_records,
            expected_bytes: self.job.dataset.open_bytes,
            url: self.job.url.as_deref(),
            token: self.job.token.as_deref(),
        }
    }

    /// Execute one step; returns its counters and whether a failure ends the job.
    fn step(&mut self, step: &Step, emit: &mut dyn FnMut(Event)) -> (StepResult, bool) {
        let usage0 = Usage::now();
        let t0 = Instant::now();
        let (mut res, stop) = match step {
            Step::Open { mode, stop, .. } => (self.open(*mode), *stop),
            Step::Prepare { stop, .. } => (self.prepare(), *stop),
            Step::Close { stop, .. } => (self.close(), *stop),
            Step::Evict { stop, .. } => (self.evict(), *stop),
            Step::Settle { stop, .. } => (self.settle(), *stop),
            Step::Ops(o) => (self.ops(o, emit), o.stop),
        };
        res.index = step.index();
        if res.wall_ns == 0 {
            res.wall_ns = t0.elapsed().as_nanos() as u64;
        }
        res.usage = usage_since(usage0);
        // After the step's clock and usage: the engine's own counters are never timed.
        if let Some(e) = self.engine.as_deref() {
            res.internals = e.internals();
        }
        (res, stop)
    }

    fn failed(step: &str, error: EngineError) -> StepResult {
        StepResult {
            step: step.into(),
            error_kind: Some(error_kind(&error).into()),
            error: Some(error.to_string()),
            ..Default::default()
        }
    }

    fn open(&mut self, mode: OpenMode) -> StepResult {
        if let Some(e) = self.engine.take() {
            let _ = e.close();
        }
        let t0 = Instant::now();
        match (self.desc.open)(&self.args(mode)) {
            Ok(e) => {
                let wall_ns = t0.elapsed().as_nanos() as u64;
                let mut settings = e.settings();
                step::state_record(&self.job.dataset, &mut settings);
                self.engine = Some(e);
                StepResult { step: "open".into(), wall_ns, settings, ..Default::default() }
            }
            Err(e) => Self::failed("open", e),
        }
    }

    fn simple(&mut self, name: &str, call: impl FnOnce(&mut dyn Engine) -> crate::engine::Result<()>) -> StepResult {
        match self.engine.as_deref_mut() {
            Some(e) => match call(e) {
                Ok(()) => StepResult { step: name.into(), ..Default::default() },
                Err(err) => Self::failed(name, err),
            },
            None => Self::failed(name, EngineError::Store("no open engine".into())),
        }
    }

    /// Prepare, then report the settings in effect: what prepare applies (a server's
    /// durability) is what the phases run with.
    fn prepare(&mut self) -> StepResult {
        let mut res = self.simple("prepare", |e| e.prepare());
        if res.error.is_none() {
            if let Some(e) = self.engine.as_deref() {
                res.settings = e.settings();
                step::state_record(&self.job.dataset, &mut res.settings);
            }
        }
        res
    }

    fn close(&mut self) -> StepResult {
        let t0 = Instant::now();
        let r = self.engine.take().map(|e| e.close()).unwrap_or(Ok(()));
        match r {
            Ok(()) => {
                let wall_ns = t0.elapsed().as_nanos() as u64;
                let space_bytes = sys::space(&self.job.dir).0;
                StepResult { step: "close".into(), wall_ns, space_bytes, ..Default::default() }
            }
            Err(e) => Self::failed("close", e),
        }
    }

    /// Untimed for the phases: the engine flushes and compacts; its note says what it did.
    fn settle(&mut self) -> StepResult {
        let mut done = String::new();
        let mut res = self.simple("settle", |e| e.settle().map(|d| done = d));
        if res.error.is_none() {
            res.settled = Some(done);
        }
        res
    }

    fn evict(&mut self) -> StepResult {
        match sys::evict(&self.job.dir) {
            Ok(n) => StepResult { step: "evict".into(), evicted: n, ..Default::default() },
            Err(e) => Self::failed("evict", EngineError::Io(e)),
        }
    }

    /// The timed loop of an ops step, on `threads` threads; the calling thread reports progress.
    fn ops(&mut self, st: &OpsStep, emit: &mut dyn FnMut(Event)) -> StepResult {
        if keeps_states(st, self.loaded) {
            self.state.materialize();
        }
        let writers = locks_records(st);
        let threads = st.threads.max(1);
        let done = AtomicU64::new(0);
        let args = self.args(st.mode);
        let desc = self.desc;
        let reopen = move || (desc.open)(&args);
        let stop = Arc::new(AtomicBool::new(false));
        let ctx = Ctx {
            engine: self.engine.as_deref(),
            data: &self.data,
            state: &self.state,
            step: st,
            lock: writers,
            start: stamp(),
            interval_ns: self.job.interval_ms.max(1) * 1_000_000,
            done: &done,
            reopen: if st.open_per_op { Some(&reopen) } else { None },
            stop: until::has_rule(st).then_some(&stop),
            background: false,
        };
        // The client's counts around the step: what went over the wire, however the step ran.
        let wire0 = self.engine.as_deref().and_then(|e| e.wire());
        let t0 = Instant::now();
        let start_unix_ns = unix_ns();
        let mut sampler = Sampler::new(ctx.engine, self.job.interval_ms);
        let ran = run_threads(&ctx, threads, self.job.progress_ms, self.job.interval_ms, emit, &mut sampler);
        let series = sampler.series;
        let mut tally = ran.tally;
        let mut wall_ns = ran.end.duration_since(t0).as_nanos() as u64;
        if st.finish && tally.errors == 0 {
            let t = Instant::now();
            let r = self.engine.as_deref_mut().map(|e| e.finish_load()).unwrap_or(Ok(()));
            let fin = t.elapsed().as_nanos() as u64;
            wall_ns += fin;
            tally.busy_ns += fin;
            if let Err(e) = r {
                tally.error(e);
            }
        }
        if st.kind == PhaseKind::Load {
            self.loaded = true;
        }
        let mut r = counters(st, tally, wall_ns, self.job.interval_ms);
        let wire1 = self.engine.as_deref().and_then(|e| e.wire());
        r.wire = wire0.zip(wire1).map(|(a, b)| b.since(a));
        r.start_unix_ns = start_unix_ns;
        r.stopped_by = ran.stopped_by;
        r.internal_series = series;
        r
    }
}

/// The engine's internals once per interval of an ops step, read by the step's monitor thread
/// (never by a timed one); an engine that has none (an empty map) adds nothing.
struct Sampler<'a> {
    engine: Option<&'a dyn Engine>,
    start: Instant,
    every: Duration,
    next: Duration,
    series: Vec<job::InternalSample>,
}

impl<'a> Sampler<'a> {
    fn new(engine: Option<&'a dyn Engine>, interval_ms: u64) -> Self {
        let every = Duration::from_millis(interval_ms.max(1));
        Sampler { engine, start: Instant::now(), every, next: every, series: Vec::new() }
    }

    /// Sample when an interval has passed since the last sample (the monitor polls more often).
    fn poll(&mut self) {
        let (Some(e), t) = (self.engine, self.start.elapsed()) else { return };
        if t < self.next {
            return;
        }
        self.next = t + self.every;
        let values = e.internals();
        if !values.is_empty() {
            self.series.push(job::InternalSample { t_ms: t.as_millis() as u64, values });
        }
    }
}

/// This host's clock in ns since the epoch (0 if it is set before 1970).
fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// What the threads of an ops step did: their counters, when the last reader ended, and why
/// the step stopped before its count (if it did).
struct Ran {
    tally: Tally,
    end: Instant,
    stopped_by: Option<String>,
}

fn run_threads(
    ctx: &Ctx<'_>,
    threads: u32,
    progress_ms: u64,
    interval_ms: u64,
    emit: &mut dyn FnMut(Event),
    sampler: &mut Sampler<'_>,
) -> Ran {
    let st = ctx.step;
    std::thread::scope(|s| {
        // Each thread says when it is done, so the step's wall time ends with its last thread,
        // not at the next poll; a thread that panics says so by dropping its sender.
        let (tx, rx) = std::sync::mpsc::channel();
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let tx = tx.clone();
                s.spawn(move || {
                    let tally = loops::run_thread(ctx, t, threads);
                    let _ = tx.send(());
                    tally
                })
            })
            .collect();
        drop(tx);
        let writer = writer::Writer::start(s, ctx);
        let mut stopper =
            ctx.stop.zip(until::Until::new(st, interval_ms)).map(|(f, u)| until::Stopper::new(u, f.clone()));
        // A stop rule is looked at every POLL_MS; progress is still reported every progress_ms.
        let every = Duration::from_millis(progress_ms.max(1));
        let poll = until::poll_every(stopper.is_some(), every);
        let mut last_progress = Instant::now();
        let mut running = threads;
        while running > 0 {
            match rx.recv_timeout(poll) {
                Ok(()) => running -= 1,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let done = ctx.done.load(Ordering::Relaxed);
                    if let Some(s) = stopper.as_mut() {
                        s.poll(done);
                    }
                    if last_progress.elapsed() >= every {
                        last_progress = Instant::now();
                        emit(Event::Progress { index: st.index, done, total: st.count })
                    }
                    sampler.poll();
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let end = Instant::now();
        let mut all = Tally::new();
        let mut busy_max = 0;
        for h in handles {
            match h.join() {
                Ok(t) => {
                    busy_max = busy_max.max(t.busy_ns);
                    all.merge(t);
                }
                Err(_) => {
                    all.error(EngineError::Store("a worker thread panicked".into()));
                }
            }
        }
        all.busy_max = busy_max;
        if let Some(w) = writer {
            w.finish(&mut all);
        }
        Ran { tally: all, end, stopped_by: stopper.and_then(|s| s.reason) }
    })
}
