//! kvbench-ffi: the C ABI of kvbench's worker core (`kvbench.h`), for the Go worker (linked
//! statically by cgo), the Python worker (loaded with ctypes) and the Java worker (the Foreign
//! Function & Memory API); the Node addon calls the same functions as Rust functions.
//! Everything here converts pointers and hands the call to kvbench-worker's [`Hosted`] and
//! [`Thread`]; the rules live there, once.
//!
//! A worker's life: `kvb_job_open` the job file, then per step `kvb_step_begin`, per thread
//! `kvb_thread_new` and a loop of `kvb_next` (a block of keys and values) and `kvb_done` (what
//! the engine calls returned and how long they took), `kvb_thread_end`, and `kvb_step_end` with
//! the step's report; `kvb_job_free` at the end. The numbers both sides share (op kinds, error
//! classes) come from `kvb_abi_constant`, generated into `kvbench_abi.h` by [`header`].
//!
//! A call never unwinds into the caller: a panic becomes an error the worker reports, and a
//! job that cannot be read is an error to ask for, not a crash:
//!
//! ```
//! use std::ffi::{CStr, CString};
//! use kvbench_ffi::{kvb_abi_constant, kvb_job_error, kvb_job_free, kvb_job_open};
//!
//! let path = CString::new("/nonexistent/job.json").unwrap();
//! // SAFETY: a NUL-terminated path; fd 2 stays open for the job's life.
//! let job = unsafe { kvb_job_open(path.as_ptr(), 2) };
//! // SAFETY: the job kvb_job_open returned, freed once.
//! let error = unsafe { CStr::from_ptr(kvb_job_error(job)) }.to_string_lossy().into_owned();
//! unsafe { kvb_job_free(job) };
//! assert!(error.contains("/nonexistent/job.json"), "{error}");
//!
//! let (mut name, mut value) = (std::ptr::null(), 0i64);
//! // SAFETY: one write to each of two live locals.
//! assert_eq!(unsafe { kvb_abi_constant(0, &mut name, &mut value) }, 1);
//! // SAFETY: the constants' names are static NUL-terminated strings.
//! assert!(!unsafe { CStr::from_ptr(name) }.to_bytes().is_empty());
//! ```

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, CStr, CString};
use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::{Arc, Mutex};

use kvbench_model::engine::EngineError;
use kvbench_model::job::PROTOCOL_VERSION;
use kvbench_worker::blocks::Thread;
use kvbench_worker::hosted::{Emit, Hosted, Report, StepView};

pub mod header;

/// A job (kvbench.h `kvb_job`).
pub struct kvb_job {
    hosted: Option<Hosted>,
    error: Option<CString>,
    step: kvb_step,
    emit: Emit,
}

/// A `got_len` entry: the value read equals the key's `exp` (kvbench.h).
pub const KVB_MATCHED: i32 = kvbench_worker::blocks::MATCHED;

#[repr(C)]
#[derive(Default)]
pub struct kvb_step {
    pub step: i32,
    pub mode: i32,
    pub threads: u32,
    pub reads: u8,
    pub open_per_op: u8,
    pub interval_ms: u32,
}

#[repr(C)]
pub struct kvb_report {
    pub wall_ns: u64,
    pub start_unix_ns: u64,
    pub finish_ns: u64,
    pub error: *const c_char,
    pub error_kind: *const c_char,
    pub finish_error: *const c_char,
    pub settings: *const c_char,
    pub runtime: *const c_char,
    pub settled: *const c_char,
    pub internals: *const c_char,
}

#[repr(C)]
pub struct kvb_block {
    pub units: u32,
    pub kind: *const u8,
    pub refresh: *const u8,
    pub due: *const i64,
    pub key_end: *const u32,
    pub scan_len: *const u64,
    pub key: *const u8,
    pub key_off: *const u32,
    pub val: *const u8,
    pub val_off: *const u32,
    pub del: *const u8,
    pub exp: *const *const u8,
    pub exp_len: *const u32,
    pub plain: u8,
}

/// A thread of an ops step (kvbench.h `kvb_thread`) and the view of its current block.
pub struct kvb_thread {
    th: Thread,
    view: kvb_block,
}

/// Run `call`, turning a panic into `fallback`.
fn guard<T>(fallback: T, call: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(call)).unwrap_or(fallback)
}

/// # Safety
/// `ptr` is NULL or a NUL-terminated string that outlives the returned borrow.
unsafe fn text<'a>(ptr: *const c_char) -> Option<&'a str> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the caller passes a NUL-terminated string (kvbench.h).
    unsafe { CStr::from_ptr(ptr) }.to_str().ok()
}

/// # Safety
/// `ptr` is NULL (then `len` is 0) or points at `len` readable values.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller passes len values at ptr (kvbench.h).
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// Event lines on the worker's events descriptor, one write per line under a lock.
fn emitter(fd: c_int) -> Emit {
    // SAFETY: the worker hands over a descriptor open for writing; ManuallyDrop leaves it open
    // (it is the worker's).
    let out = Mutex::new(ManuallyDrop::new(unsafe { File::from_raw_fd(fd) }));
    Arc::new(move |line: &str| {
        let mut b = Vec::with_capacity(line.len() + 1);
        b.extend_from_slice(line.as_bytes());
        b.push(b'\n');
        let mut f = out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f.write_all(&b);
    })
}

/// # Safety
/// `path` is a NUL-terminated string; `events_fd` is open for writing for the job's life.
#[no_mangle]
pub unsafe extern "C" fn kvb_job_open(path: *const c_char, events_fd: c_int) -> *mut kvb_job {
    let emit = emitter(events_fd);
    // SAFETY: per this function's contract.
    let path = unsafe { text(path) }.unwrap_or("");
    let opened = guard(Err("the worker core failed reading the job".to_string()), || {
        Hosted::open(Path::new(path), emit.clone())
    });
    let (hosted, error) = match opened {
        Ok(h) => (Some(h), None),
        Err(e) => (None, Some(CString::new(e.replace('\0', " ")).unwrap_or_default())),
    };
    Box::into_raw(Box::new(kvb_job { hosted, error, step: kvb_step::default(), emit }))
}

/// # Safety
/// `job` comes from kvb_job_open.
#[no_mangle]
pub unsafe extern "C" fn kvb_job_error(job: *const kvb_job) -> *const c_char {
    // SAFETY: a live job from kvb_job_open.
    match unsafe { job.as_ref() }.and_then(|j| j.error.as_ref()) {
        Some(e) => e.as_ptr(),
        None => std::ptr::null(),
    }
}

/// # Safety
/// `job` comes from kvb_job_open and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn kvb_job_free(job: *mut kvb_job) {
    if !job.is_null() {
        // SAFETY: the box kvb_job_open made.
        drop(unsafe { Box::from_raw(job) });
    }
}

/// # Safety
/// `job` comes from kvb_job_open; `json` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn kvb_emit(job: *mut kvb_job, json: *const c_char) {
    // SAFETY: per this function's contract.
    if let (Some(j), Some(line)) = (unsafe { job.as_ref() }, unsafe { text(json) }) {
        (j.emit)(line);
    }
}

#[no_mangle]
pub extern "C" fn kvb_protocol() -> u32 {
    PROTOCOL_VERSION
}

/// # Safety
/// `name` and `value` are NULL or valid for one write each.
#[no_mangle]
pub unsafe extern "C" fn kvb_abi_constant(index: usize, name: *mut *const c_char, value: *mut i64) -> c_int {
    let Some(c) = kvbench_worker::abi::ALL.get(index) else { return 0 };
    // SAFETY: per this function's contract (NULL: not asked for); the name is a static string.
    unsafe {
        if let Some(n) = name.as_mut() {
            *n = c.name.as_ptr();
        }
        if let Some(v) = value.as_mut() {
            *v = c.value;
        }
    }
    1
}

/// # Safety
/// `job` comes from kvb_job_open.
#[no_mangle]
pub unsafe extern "C" fn kvb_step_begin(job: *mut kvb_job) -> *const kvb_step {
    // SAFETY: a live job from kvb_job_open, used by one thread at a time.
    let Some(j) = (unsafe { job.as_mut() }) else { return std::ptr::null() };
    let v = match j.hosted.as_mut() {
        Some(h) => guard(StepView::default(), || h.begin()),
        None => StepView::default(),
    };
    j.step = kvb_step {
        step: v.step,
        mode: v.mode,
        threads: v.threads,
        reads: v.reads.into(),
        open_per_op: v.open_per_op.into(),
        interval_ms: v.interval_ms,
    };
    &j.step
}

/// # Safety
/// `job` comes from kvb_job_open; `raw` points at a report whose strings are NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kvb_step_end(job: *mut kvb_job, raw: *const kvb_report) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(j), Some(r)) = (unsafe { job.as_mut() }, unsafe { raw.as_ref() }) else { return 1 };
    // SAFETY: the report's strings per the contract.
    let report = unsafe {
        Report {
            wall_ns: r.wall_ns,
            start_unix_ns: r.start_unix_ns,
            finish_ns: r.finish_ns,
            error: text(r.error),
            error_kind: text(r.error_kind),
            finish_error: text(r.finish_error),
            settings: text(r.settings),
            runtime: text(r.runtime),
            settled: text(r.settled),
            internals: text(r.internals),
        }
    };
    match j.hosted.as_mut() {
        Some(h) => guard(true, || h.end(&report)).into(),
        None => 1,
    }
}

/// # Safety
/// `job` comes from kvb_job_open; `json` is a NUL-terminated string. Called during an ops step
/// while the job's other calls are only kvb_next, kvb_done, kvb_error and kvb_scan (kvbench.h).
#[no_mangle]
pub unsafe extern "C" fn kvb_internals(job: *const kvb_job, t_ns: i64, json: *const c_char) {
    // SAFETY: per this function's contract.
    if let (Some(h), Some(json)) = (unsafe { job.as_ref() }.and_then(|j| j.hosted.as_ref()), unsafe { text(json) }) {
        guard((), || h.sample(t_ns, json));
    }
}

/// # Safety
/// `job` comes from kvb_job_open.
#[no_mangle]
pub unsafe extern "C" fn kvb_finish_due(job: *mut kvb_job) -> c_int {
    // SAFETY: a live job.
    let due = unsafe { job.as_ref() }.and_then(|j| j.hosted.as_ref()).is_some_and(|h| h.finish_due());
    due.into()
}

/// # Safety
/// `job` comes from kvb_job_open; the thread is ended before the step.
#[no_mangle]
pub unsafe extern "C" fn kvb_thread_new(job: *mut kvb_job, thread: u32, max_units: u32) -> *mut kvb_thread {
    // SAFETY: a live job.
    let Some(h) = unsafe { job.as_ref() }.and_then(|j| j.hosted.as_ref()) else { return std::ptr::null_mut() };
    match guard(None, || h.thread(thread, max_units)) {
        Some(th) => Box::into_raw(Box::new(kvb_thread { th, view: empty_view() })),
        None => std::ptr::null_mut(),
    }
}

/// # Safety
/// `th` comes from kvb_thread_new.
#[no_mangle]
pub unsafe extern "C" fn kvb_set_origin(th: *mut kvb_thread, origin_ns: i64) {
    // SAFETY: a live thread.
    if let Some(t) = unsafe { th.as_mut() } {
        t.th.set_origin(origin_ns);
    }
}

/// # Safety
/// `th` comes from kvb_thread_new and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn kvb_thread_end(th: *mut kvb_thread) {
    if !th.is_null() {
        // SAFETY: the box kvb_thread_new made.
        let th = unsafe { Box::from_raw(th) };
        guard((), || th.th.end());
    }
}

fn empty_view() -> kvb_block {
    kvb_block {
        units: 0,
        kind: std::ptr::null(),
        refresh: std::ptr::null(),
        due: std::ptr::null(),
        key_end: std::ptr::null(),
        scan_len: std::ptr::null(),
        key: std::ptr::null(),
        key_off: std::ptr::null(),
        val: std::ptr::null(),
        val_off: std::ptr::null(),
        del: std::ptr::null(),
        exp: std::ptr::null(),
        exp_len: std::ptr::null(),
        plain: 0,
    }
}

/// # Safety
/// `th` comes from kvb_thread_new; the block is read only until the next call on `th`.
#[no_mangle]
pub unsafe extern "C" fn kvb_next(th: *mut kvb_thread) -> *const kvb_block {
    // SAFETY: a live thread, used by one OS thread at a time.
    let Some(t) = (unsafe { th.as_mut() }) else { return std::ptr::null() };
    let view = guard(None, || {
        let plain = u8::from(t.th.plain());
        let b = t.th.next_block();
        Some(kvb_block {
            units: b.kind.len() as u32,
            kind: b.kind.as_ptr(),
            refresh: b.refresh.as_ptr(),
            due: b.due.as_ptr(),
            key_end: b.key_end.as_ptr(),
            scan_len: b.scan_len.as_ptr(),
            key: b.key.as_ptr(),
            key_off: b.key_off.as_ptr(),
            val: b.val.as_ptr(),
            val_off: b.val_off.as_ptr(),
            del: b.del.as_ptr(),
            exp: b.exp.as_ptr(),
            exp_len: b.exp_len.as_ptr(),
            plain,
        })
    });
    t.view = view.unwrap_or_else(empty_view);
    &t.view
}

/// # Safety
/// `th` comes from kvb_thread_new; the worker wrote the first `keep` bytes of the buffer the
/// last call returned for the current block.
#[no_mangle]
pub unsafe extern "C" fn kvb_got(th: *mut kvb_thread, keep: usize, need: usize) -> *mut u8 {
    // SAFETY: a live thread, used by one OS thread at a time.
    let Some(t) = (unsafe { th.as_mut() }) else { return std::ptr::null_mut() };
    guard(std::ptr::null_mut(), || t.th.got_room(keep, need))
}

/// # Safety
/// `th` comes from kvb_thread_new; `t` holds 2 values per unit of the current block, `got_len`
/// one per key, `got` the sum of got_len's non-negative entries.
#[no_mangle]
pub unsafe extern "C" fn kvb_done(
    th: *mut kvb_thread,
    units_run: u32,
    times: *const i64,
    got: *const u8,
    got_len: *const i32,
) {
    // SAFETY: a live thread.
    let Some(th) = (unsafe { th.as_mut() }) else { return };
    let units = th.view.units as usize;
    let keys = th.th.block.key_off.len().saturating_sub(1);
    // SAFETY: the sizes per the contract.
    let (times, got_len) = unsafe { (slice(times, 2 * units), slice(got_len, keys)) };
    let total: usize = got_len.iter().filter(|&&n| n > 0).map(|&n| n as usize).sum();
    // SAFETY: got holds the sum of the non-negative lengths.
    let got = unsafe { slice(got, total) };
    guard((), || th.th.done(units_run, times, got, got_len));
}

/// # Safety
/// `th` comes from kvb_thread_new; `kind` and `msg` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn kvb_error(
    th: *mut kvb_thread,
    unit: u32,
    kind: *const c_char,
    msg: *const c_char,
    at_ns: i64,
) -> c_int {
    // SAFETY: a live thread.
    let Some(th) = (unsafe { th.as_mut() }) else { return 1 };
    // SAFETY: strings per the contract.
    let (kind, msg) = unsafe { (text(kind).unwrap_or("store"), text(msg).unwrap_or("an engine error").to_string()) };
    let e = match kind {
        "unsupported" => EngineError::Unsupported(msg.trim_start_matches("unsupported: ").to_string()),
        "option" => EngineError::Option(msg.trim_start_matches("invalid option: ").to_string()),
        "io" => EngineError::Io(std::io::Error::other(msg)),
        _ => EngineError::Store(msg),
    };
    guard(true, || th.th.error(unit, e, at_ns)).into()
}

/// # Safety
/// `th` comes from kvb_thread_new; `recs` points at `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn kvb_scan(th: *mut kvb_thread, recs: *const u8, len: usize) {
    // SAFETY: a live thread and len bytes at recs.
    if let (Some(th), recs) = (unsafe { th.as_mut() }, unsafe { slice(recs, len) }) {
        guard((), || th.th.scanned(recs));
    }
}
