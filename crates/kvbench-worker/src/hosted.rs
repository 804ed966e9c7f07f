//! A job run by a worker in another language (docs/protocol.md, "Worker core"): this side
//! reads the job, hands out its steps, keeps the record states across them, and writes each
//! step's event from the worker's report and the threads' counters. The worker opens its
//! engine, runs the blocks ([`super::blocks`]) and times everything; this side reads no clock.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::abi;
use super::blocks::{Run, Thread};
use super::data::Data;
use super::state::State;
use super::step::{counters, keeps_states, locks_records, reads, usage_since};
use crate::sys::{self, Usage};
use kvbench_model::engine::{EngineError, OpenMode};
use kvbench_model::job::{Event, InternalSample, Job, PhaseKind, Step, StepResult, PROTOCOL_VERSION};

/// Writes one event line.
pub type Emit = Arc<dyn Fn(&str) + Send + Sync>;

pub use crate::abi::{CLOSE, END, EVICTED, OPEN, OPS, PREPARE, SETTLE};

/// What the worker must do for a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepView {
    pub step: i32,
    pub mode: i32,
    pub threads: u32,
    pub reads: bool,
    pub open_per_op: bool,
    /// OPS: the timeline's interval, how often the worker hands in the engine's internals.
    pub interval_ms: u32,
}

/// What the worker reports when a step ends (kvbench.h, `kvb_report`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Report<'a> {
    pub wall_ns: u64,
    pub start_unix_ns: u64,
    pub finish_ns: u64,
    pub error: Option<&'a str>,
    pub error_kind: Option<&'a str>,
    pub finish_error: Option<&'a str>,
    pub settings: Option<&'a str>,
    pub runtime: Option<&'a str>,
    /// SETTLE: what the engine did.
    pub settled: Option<&'a str>,
    /// The engine's own counters at the step's end (a JSON object of numbers).
    pub internals: Option<&'a str>,
}

/// The step in progress.
struct Current {
    index: usize,
    name: &'static str,
    stop: bool,
    usage: Usage,
    evicted: Result<u64, String>,
    ops: Option<(Arc<Run>, Progress)>,
    /// The engine's internals the worker handed in during an ops step ([`Hosted::sample`]).
    samples: Mutex<Vec<InternalSample>>,
}

pub struct Hosted {
    job: Job,
    data: Arc<Data>,
    state: Arc<State>,
    emit: Emit,
    next: usize,
    loaded: bool,
    current: Option<Current>,
}

impl Hosted {
    /// Read the job file and open its dataset; the error names the file (and serde's line and
    /// column) or the field.
    pub fn open(path: &Path, emit: Emit) -> Result<Hosted, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading job {}: {e}", path.display()))?;
        let job: Job = serde_json::from_str(&text).map_err(|e| format!("job {}: {e}", path.display()))?;
        if job.protocol != PROTOCOL_VERSION {
            return Err(format!(
                "job {}: protocol {} but this worker speaks {PROTOCOL_VERSION}",
                path.display(),
                job.protocol
            ));
        }
        let data = Data::open(&job.dataset, job.plan.as_deref())?;
        let state = State::new(job.dataset.loaded, job.dataset.total);
        Ok(Hosted { job, data: Arc::new(data), state: Arc::new(state), emit, next: 0, loaded: false, current: None })
    }

    pub fn emit(&self, line: &str) {
        (self.emit)(line)
    }

    /// Begin the next step (ending a step left open first).
    pub fn begin(&mut self) -> StepView {
        if self.current.is_some() {
            self.end(&Report { error: Some("the worker began a step before ending this one"), ..Default::default() });
        }
        let Some(step) = self.job.steps.get(self.next).cloned() else { return StepView::default() };
        self.next += 1;
        let mut cur = Current {
            index: step.index(),
            name: "",
            stop: false,
            usage: Usage::now(),
            evicted: Ok(0),
            ops: None,
            samples: Mutex::new(Vec::new()),
        };
        let view = match &step {
            Step::Open { mode, stop, .. } => {
                (cur.name, cur.stop) = ("open", *stop);
                StepView { step: OPEN, mode: mode_code(*mode), ..Default::default() }
            }
            Step::Prepare { stop, .. } => {
                (cur.name, cur.stop) = ("prepare", *stop);
                StepView { step: PREPARE, ..Default::default() }
            }
            Step::Close { stop, .. } => {
                (cur.name, cur.stop) = ("close", *stop);
                StepView { step: CLOSE, ..Default::default() }
            }
            Step::Evict { stop, .. } => {
                (cur.name, cur.stop) = ("evict", *stop);
                cur.evicted = sys::evict(&self.job.dir).map_err(|e| e.to_string());
                StepView { step: EVICTED, ..Default::default() }
            }
            Step::Settle { stop, .. } => {
                (cur.name, cur.stop) = ("settle", *stop);
                StepView { step: SETTLE, ..Default::default() }
            }
            Step::Ops(o) => {
                (cur.name, cur.stop) = ("ops", o.stop);
                let view = self.begin_ops((**o).clone());
                cur.ops = Some(view.1);
                view.0
            }
        };
        self.current = Some(cur);
        view
    }

    fn begin_ops(&mut self, st: kvbench_model::job::OpsStep) -> (StepView, (Arc<Run>, Progress)) {
        if keeps_states(&st, self.loaded) {
            if let Some(state) = Arc::get_mut(&mut self.state) {
                state.materialize();
            }
        }
        let lock = locks_records(&st);
        let view = StepView {
            step: OPS,
            mode: mode_code(st.mode),
            threads: st.threads.max(1),
            reads: reads(&st, self.data.dataset()),
            open_per_op: st.open_per_op,
            interval_ms: self.job.interval_ms.min(u32::MAX.into()) as u32,
        };
        let interval_ns = self.job.interval_ms.max(1) * 1_000_000;
        let run = Arc::new(Run::new(self.data.clone(), self.state.clone(), st, lock, interval_ns));
        let progress = Progress::start(run.clone(), self.emit.clone(), self.job.progress_ms);
        (view, (run, progress))
    }

    /// Thread `thread` of the running ops step (None outside one).
    pub fn thread(&self, thread: u32, max_units: u32) -> Option<Thread> {
        let (run, _) = self.current.as_ref()?.ops.as_ref()?;
        let threads = run.step.threads.max(1);
        Some(Thread::new(run.clone(), thread, threads, max_units))
    }

    /// After the threads ended: whether the worker must call the engine's finish-load now.
    pub fn finish_due(&self) -> bool {
        match self.current.as_ref().and_then(|c| c.ops.as_ref()) {
            Some((run, _)) => run.step.finish && run.errors() == 0,
            None => false,
        }
    }

    /// The engine's internals (a JSON object of numbers) at `t_ns` after the running ops step's
    /// start, from the worker's sampling thread; ignored outside an ops step, and when empty or
    /// not an object of numbers.
    pub fn sample(&self, t_ns: i64, json: &str) {
        let Some(cur) = self.current.as_ref().filter(|c| c.ops.is_some()) else { return };
        let Some(values) = parse_map::<f64>(Some(json)).filter(|m| !m.is_empty()) else { return };
        let t_ms = (t_ns.max(0) / 1_000_000) as u64;
        cur.samples.lock().unwrap_or_else(|p| p.into_inner()).push(InternalSample { t_ms, values });
    }

    /// End the step: emit its event; true when the job stops here.
    pub fn end(&mut self, report: &Report<'_>) -> bool {
        let Some(cur) = self.current.take() else { return false };
        let mut res = match cur.ops {
            Some((run, progress)) => {
                drop(progress);
                self.ops_result(&run, report)
            }
            None => simple_result(cur.name, &cur.evicted, report),
        };
        if res.step == "close" && res.error.is_none() {
            // Before the event goes out: the worker starts the next step only after it.
            res.space_bytes = sys::space(&self.job.dir).0;
        }
        if matches!(res.step.as_str(), "open" | "prepare") && res.error.is_none() {
            crate::step::state_record(&self.job.dataset, &mut res.settings);
        }
        res.index = cur.index;
        res.runtime = parse_map(report.runtime).unwrap_or_default();
        res.internals = parse_map(report.internals).unwrap_or_default();
        res.internal_series = cur.samples.into_inner().unwrap_or_else(|p| p.into_inner());
        res.usage = usage_since(cur.usage);
        let stop = res.error.is_some() && cur.stop;
        self.emit(&Event::Step(Box::new(res)).to_line());
        stop
    }

    fn ops_result(&mut self, run: &Run, report: &Report<'_>) -> StepResult {
        let mut tally = run.take_tally();
        if let Some(e) = report.finish_error {
            tally.error(EngineError::Store(e.to_string()));
        }
        tally.busy_ns += report.finish_ns;
        if run.step.kind == PhaseKind::Load {
            self.loaded = true;
        }
        let mut res = counters(&run.step, tally, report.wall_ns, self.job.interval_ms);
        res.start_unix_ns = report.start_unix_ns;
        res.stopped_by = run.stopped_by.lock().unwrap_or_else(|p| p.into_inner()).take();
        res
    }
}

fn simple_result(name: &str, evicted: &Result<u64, String>, report: &Report<'_>) -> StepResult {
    let mut res = StepResult { step: name.into(), wall_ns: report.wall_ns, ..Default::default() };
    match (report.error, evicted) {
        (Some(e), _) => {
            res.error = Some(e.to_string());
            res.error_kind = Some(report.error_kind.unwrap_or("store").to_string());
        }
        (None, Err(e)) => {
            res.error = Some(e.clone());
            res.error_kind = Some("io".into());
        }
        (None, Ok(n)) => res.evicted = *n,
    }
    if res.error.is_none() {
        res.settings = parse_map(report.settings).unwrap_or_default();
        if name == "settle" {
            res.settled = Some(report.settled.unwrap_or_default().to_string());
        }
    }
    res
}

/// A JSON object from the worker (settings, runtime counters); None when absent or not one.
fn parse_map<V: serde::de::DeserializeOwned>(text: Option<&str>) -> Option<std::collections::BTreeMap<String, V>> {
    serde_json::from_str(text?).ok()
}

fn mode_code(mode: OpenMode) -> i32 {
    match mode {
        OpenMode::ReadWrite => abi::READ_WRITE,
        OpenMode::ReadOnly => abi::READ_ONLY,
        OpenMode::Secondary => abi::SECONDARY,
    }
}

/// Emits progress events while an ops step runs, and applies its stop rule; stops when dropped.
pub struct Progress {
    stop: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Progress {
    fn start(run: Arc<Run>, emit: Emit, every_ms: u64) -> Progress {
        let (stop, stopped) = channel::<()>();
        let every = Duration::from_millis(every_ms.max(1));
        let until = super::until::Until::new(&run.step, run.interval_ns / 1_000_000);
        let mut stopper = until.map(|u| super::until::Stopper::new(u, run.stop.clone()));
        let poll = super::until::poll_every(stopper.is_some(), every);
        let handle = std::thread::spawn(move || {
            let (mut next, mut next_progress) = (Instant::now() + poll, Instant::now() + every);
            // Dropping the sender ends the wait at once.
            while let Err(RecvTimeoutError::Timeout) =
                stopped.recv_timeout(next.saturating_duration_since(Instant::now()))
            {
                next += poll;
                if let Some(s) = stopper.as_mut().filter(|s| s.reason.is_none()) {
                    s.poll(run.done.load(Ordering::Relaxed));
                    if let Some(why) = &s.reason {
                        *run.stopped_by.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
                    }
                }
                if Instant::now() >= next_progress {
                    next_progress += every;
                    let done = run.done.load(Ordering::Relaxed);
                    emit(&Event::Progress { index: run.step.index, done, total: run.step.count }.to_line());
                }
            }
        });
        Progress { stop: Some(stop), handle: Some(handle) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
