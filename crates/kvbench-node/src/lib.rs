//! kvbench's worker core for the Node.js worker (drivers/node): a Node-API addon over the same C
//! ABI the Go and Python workers use (crates/kvbench-ffi/kvbench.h), called as Rust functions.
//!
//! JavaScript calls in once per step and twice per block of units (`next`, `done`), never per
//! operation: a block's arrays come out as Buffers and typed arrays (copies of the core's
//! memory, which is only valid until the thread's next call), and its times and values go back
//! in one call. Times cross as milliseconds on `performance.now()`'s clock (a double: exact to
//! well below a nanosecond for the length of any run); this side turns them into nanoseconds.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};

use kvbench_ffi as ffi;
use napi::bindgen_prelude::{Buffer, Float64Array, Int32Array, Uint32Array};
use napi::{Error, Result};
use napi_derive::napi;

/// Milliseconds (the worker's clock) as the core's nanoseconds.
fn ns(ms: f64) -> i64 {
    (ms * 1e6).round() as i64
}

/// `text` as a C string; a NUL inside (never in JSON or messages kvbench writes) becomes a space.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).unwrap_or_default()
}

/// # Safety
/// `ptr` is NULL or a NUL-terminated string.
unsafe fn string(ptr: *const c_char) -> Option<String> {
    // SAFETY: per the contract.
    (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
}

/// The protocol version for the hello event.
#[napi]
pub fn protocol() -> u32 {
    ffi::kvb_protocol()
}

/// kvbench_abi.h's constants by name (KVB_GET ...), read from the core as the Python worker does.
#[napi]
pub fn abi() -> HashMap<String, i64> {
    let mut out = HashMap::new();
    for i in 0.. {
        let (mut name, mut value) = (std::ptr::null(), 0i64);
        // SAFETY: both out-pointers are valid for one write.
        if unsafe { ffi::kvb_abi_constant(i, &mut name, &mut value) } == 0 {
            break;
        }
        // SAFETY: the core hands back a static NUL-terminated name.
        if let Some(n) = unsafe { string(name) } {
            out.insert(n, value);
        }
    }
    out
}

/// Keep stdout for events: returns a new descriptor on the old stdout and points descriptor 1 at
/// stderr, so that what an engine's native code prints there cannot break the event stream.
#[napi]
pub fn events_fd() -> Result<i32> {
    // SAFETY: dup and dup2 on the process's own standard descriptors.
    let fd = unsafe { libc::dup(1) };
    // SAFETY: as above.
    if fd < 0 || unsafe { libc::dup2(2, 1) } < 0 {
        return Err(Error::from_reason(format!("events descriptor: {}", std::io::Error::last_os_error())));
    }
    Ok(fd)
}

/// A step as kvb_step_begin hands it out.
#[napi(object)]
pub struct Step {
    pub step: i32,
    pub mode: i32,
    pub threads: u32,
    pub reads: bool,
    pub open_per_op: bool,
    pub interval_ms: u32,
}

/// A step's outcome for kvb_step_end (kvbench.h kvb_report); times in nanoseconds.
#[napi(object)]
pub struct Report {
    pub wall_ns: f64,
    /// ops: the host's clock at the step's start, in milliseconds since the epoch.
    pub start_unix_ms: Option<f64>,
    pub finish_ns: Option<f64>,
    pub error: Option<String>,
    pub error_kind: Option<String>,
    pub finish_error: Option<String>,
    pub settings: Option<String>,
    pub runtime: Option<String>,
    pub settled: Option<String>,
    pub internals: Option<String>,
}

/// One job (kvb_job): open until `free`.
#[napi]
pub struct Job {
    job: *mut ffi::kvb_job,
}

#[napi]
impl Job {
    /// Opens the job file; events go to descriptor `fd`. A bad job: `error()` says why.
    #[napi(constructor)]
    pub fn new(path: String, fd: i32) -> Self {
        let p = c_string(&path);
        // SAFETY: a NUL-terminated path; fd is the worker's events descriptor, open for the job.
        Job { job: unsafe { ffi::kvb_job_open(p.as_ptr(), fd) } }
    }

    #[napi]
    pub fn error(&self) -> Option<String> {
        // SAFETY: a live job; the string is copied before any other call.
        unsafe { string(ffi::kvb_job_error(self.job)) }
    }

    /// One event line among the core's.
    #[napi]
    pub fn emit(&self, json: String) {
        let j = c_string(&json);
        // SAFETY: a live job and a NUL-terminated line.
        unsafe { ffi::kvb_emit(self.job, j.as_ptr()) }
    }

    #[napi]
    pub fn step_begin(&mut self) -> Step {
        // SAFETY: a live job; the step is copied before any other call.
        let s = unsafe { &*ffi::kvb_step_begin(self.job) };
        Step {
            step: s.step,
            mode: s.mode,
            threads: s.threads,
            reads: s.reads == 1,
            open_per_op: s.open_per_op == 1,
            interval_ms: s.interval_ms,
        }
    }

    /// True when the job stops here.
    #[napi]
    pub fn step_end(&mut self, given: Report) -> bool {
        let strings = [
            &given.error,
            &given.error_kind,
            &given.finish_error,
            &given.settings,
            &given.runtime,
            &given.settled,
            &given.internals,
        ]
        .map(|s| s.as_deref().map(c_string));
        let p = |i: usize| strings[i].as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        let report = ffi::kvb_report {
            wall_ns: given.wall_ns.max(0.0) as u64,
            start_unix_ns: (given.start_unix_ms.unwrap_or(0.0) * 1e6).max(0.0) as u64,
            finish_ns: given.finish_ns.unwrap_or(0.0).max(0.0) as u64,
            error: p(0),
            error_kind: p(1),
            finish_error: p(2),
            settings: p(3),
            runtime: p(4),
            settled: p(5),
            internals: p(6),
        };
        // SAFETY: a live job; the report's strings outlive the call.
        unsafe { ffi::kvb_step_end(self.job, &report) == 1 }
    }

    /// The engine's counters during an ops step, read `t_ms` after the step's start.
    #[napi]
    pub fn internals(&self, t_ms: f64, json: String) {
        let j = c_string(&json);
        // SAFETY: a live job and a NUL-terminated object.
        unsafe { ffi::kvb_internals(self.job, ns(t_ms), j.as_ptr()) }
    }

    #[napi]
    pub fn finish_due(&mut self) -> bool {
        // SAFETY: a live job.
        unsafe { ffi::kvb_finish_due(self.job) == 1 }
    }

    /// Thread `thread` of the running ops step; `None` outside one.
    #[napi]
    pub fn thread(&mut self, thread: u32, max_units: u32) -> Option<Thread> {
        // SAFETY: a live job; the thread is ended (Thread::end) before the step.
        let th = unsafe { ffi::kvb_thread_new(self.job, thread, max_units) };
        (!th.is_null()).then_some(Thread { th, keys: 0 })
    }

    /// Frees the job (the core writes out its events). Later calls are not made.
    #[napi]
    pub fn free(&mut self) {
        // SAFETY: the job from kvb_job_open, freed once.
        unsafe { ffi::kvb_job_free(self.job) };
        self.job = std::ptr::null_mut();
    }
}

/// A block of units (kvbench.h kvb_block), copied out of the core. Times are milliseconds after
/// the step's start (`due`, -1: at once). A key's expected value is `exp[expOff[i]..expOff[i+1]]`
/// when `expKnown[i]` is 1.
#[napi(object)]
pub struct Block {
    pub units: u32,
    pub plain: bool,
    pub kind: Buffer,
    pub refresh: Buffer,
    pub due: Float64Array,
    pub key_end: Uint32Array,
    pub scan_len: Float64Array,
    pub key: Buffer,
    pub key_off: Uint32Array,
    pub val: Buffer,
    pub val_off: Uint32Array,
    pub del: Buffer,
    pub exp: Buffer,
    pub exp_off: Uint32Array,
    pub exp_known: Buffer,
}

/// # Safety
/// `ptr` is NULL (then `len` is 0) or points at `len` readable values.
unsafe fn view<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// A thread of an ops step (kvb_thread).
#[napi]
pub struct Thread {
    th: *mut ffi::kvb_thread,
    /// Keys of the current block: `done`'s got_len must hold that many.
    keys: usize,
}

#[napi]
impl Thread {
    /// The step's start on the worker's clock (ms): times handed in are on that clock.
    #[napi]
    pub fn set_origin(&mut self, origin_ms: f64) {
        // SAFETY: a live thread.
        unsafe { ffi::kvb_set_origin(self.th, ns(origin_ms)) }
    }

    /// The next block; `None` when the thread is done.
    #[napi(js_name = "next")]
    pub fn next_block(&mut self) -> Option<Block> {
        // SAFETY: a live thread; the block is copied before the next call on it.
        let b = unsafe { &*ffi::kvb_next(self.th) };
        let n = b.units as usize;
        if n == 0 {
            self.keys = 0;
            return None;
        }
        // SAFETY: the block's arrays per kvbench.h: n per unit, keys (+1) per key.
        unsafe {
            let key_end = view(b.key_end, n);
            let keys = key_end[n - 1] as usize;
            self.keys = keys;
            let key_off = view(b.key_off, keys + 1);
            let val_off = view(b.val_off, keys + 1);
            let (exp, exp_off, exp_known) = expected(view(b.exp, keys), view(b.exp_len, keys));
            Some(Block {
                units: b.units,
                plain: b.plain == 1,
                kind: view(b.kind, n).to_vec().into(),
                refresh: view(b.refresh, n).to_vec().into(),
                due: Float64Array::new(
                    view(b.due, n).iter().map(|&d| if d < 0 { -1.0 } else { d as f64 / 1e6 }).collect(),
                ),
                key_end: Uint32Array::new(key_end.to_vec()),
                scan_len: Float64Array::new(view(b.scan_len, n).iter().map(|&l| l as f64).collect()),
                key: view(b.key, key_off.last().map_or(0, |&e| e as usize)).to_vec().into(),
                key_off: Uint32Array::new(key_off.to_vec()),
                val: view(b.val, val_off.last().map_or(0, |&e| e as usize)).to_vec().into(),
                val_off: Uint32Array::new(val_off.to_vec()),
                del: view(b.del, keys).to_vec().into(),
                exp: exp.into(),
                exp_off: Uint32Array::new(exp_off),
                exp_known: exp_known.into(),
            })
        }
    }

    /// The block ran: 2 times per unit (ms, the worker's clock), the values read packed and one
    /// length per key (-1: none; the ABI's MATCHED: equal to what the core expects).
    #[napi]
    pub fn done(&mut self, units_run: u32, times: Float64Array, got: Buffer, got_len: Int32Array) -> Result<()> {
        let t: Vec<i64> = times.iter().take(2 * units_run as usize).map(|&ms| ns(ms)).collect();
        if t.len() < 2 * units_run as usize || got_len.len() < self.keys {
            return Err(Error::from_reason(format!(
                "done: {} times for {units_run} units, {} lengths for {} keys",
                times.len(),
                got_len.len(),
                self.keys
            )));
        }
        let total: usize = got_len[..self.keys].iter().filter(|&&n| n > 0).map(|&n| n as usize).sum();
        if got.len() < total {
            return Err(Error::from_reason(format!(
                "done: {} bytes of values for lengths summing to {total}",
                got.len()
            )));
        }
        // SAFETY: a live thread; t holds 2 per unit run, got_len one per key, got their sum.
        unsafe { ffi::kvb_done(self.th, units_run, t.as_ptr(), got.as_ptr(), got_len.as_ptr()) };
        Ok(())
    }

    /// Unit `unit` failed at `at_ms` (0xFFFFFFFF: outside every unit); true when the thread must
    /// stop.
    #[napi]
    pub fn error(&mut self, unit: u32, kind: String, msg: String, at_ms: f64) -> bool {
        let (k, m) = (c_string(&kind), c_string(&msg));
        // SAFETY: a live thread and NUL-terminated strings.
        unsafe { ffi::kvb_error(self.th, unit, k.as_ptr(), m.as_ptr(), ns(at_ms)) == 1 }
    }

    /// Scanned records (u32le key length, key, u32le value length, value) for the core to check.
    #[napi]
    pub fn scan(&mut self, recs: Buffer, len: u32) {
        let len = (len as usize).min(recs.len());
        // SAFETY: a live thread and len bytes of recs.
        unsafe { ffi::kvb_scan(self.th, recs.as_ptr(), len) }
    }

    /// Merges the thread's counters into the step; later calls are not made.
    #[napi]
    pub fn end(&mut self) {
        // SAFETY: the thread from kvb_thread_new, ended once.
        unsafe { ffi::kvb_thread_end(self.th) };
        self.th = std::ptr::null_mut();
    }
}

/// The expected values packed, their offsets and which keys have one.
///
/// # Safety
/// Every non-NULL `exp[i]` points at `len[i]` readable bytes.
unsafe fn expected(exp: &[*const u8], len: &[u32]) -> (Vec<u8>, Vec<u32>, Vec<u8>) {
    let total: usize = exp.iter().zip(len).filter(|(p, _)| !p.is_null()).map(|(_, &l)| l as usize).sum();
    let (mut bytes, mut off, mut known) =
        (Vec::with_capacity(total), Vec::with_capacity(exp.len() + 1), Vec::with_capacity(exp.len()));
    off.push(0);
    for (&p, &l) in exp.iter().zip(len) {
        // SAFETY: per the contract.
        bytes.extend_from_slice(unsafe { view(p, l as usize) });
        off.push(bytes.len() as u32);
        known.push(u8::from(!p.is_null()));
    }
    (bytes, off, known)
}
