//! The worker core through its C ABI agrees with the Rust worker: a small executor written
//! the way the Go and Python workers are (blocks from kvb_next, engine calls between clock
//! reads, kvb_done) runs a job with every step and op kind on the memory engine, and each
//! step's counters must equal the Rust worker's on the same job.

use std::ffi::{CStr, CString};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use kvbench_ffi::*;
use kvbench_model::engine::{Engine, EngineError, OpenArgs, OpenMode, Options, SyncMode, WriteOp};
use kvbench_model::job::{Event, Job, StepResult};
use kvbench_worker::blocks::{DELETE, MERGE_FIELDS};
use kvbench_worker::hosted::{Hosted, Report};

const DESC: &kvbench_model::engine::EngineDescriptor = &kvbench_engines::memory::DESCRIPTOR;

fn open_args<'a>(dir: &'a Path, options: &'a Options, mode: i32) -> OpenArgs<'a> {
    let mode = [OpenMode::ReadWrite, OpenMode::ReadOnly, OpenMode::Secondary][mode as usize];
    OpenArgs {
        dir,
        options,
        sync: SyncMode::None,
        mode,
        expected_records: 0,
        expected_bytes: 0,
        url: None,
        token: None,
    }
}

/// A job file for `dir` from the test's job `name` (a stored plan from tests/vectors) with
/// engine options `options`, and the job itself.
/// `{"fields": true}` in `options` makes it a plan of YCSB's records for an engine with
/// field-update, `"lone"` every step one thread, `"unpaced"` every step unpaced, `"several"`
/// the steps' threads kept with `corrupt_every` (none of them an engine option).
fn job_in(name: &str, dir: &Path, mut options: serde_json::Value) -> (std::path::PathBuf, Job) {
    let fields = options.as_object_mut().and_then(|o| o.remove("fields")).is_some();
    let lone = options.as_object_mut().and_then(|o| o.remove("lone")).is_some();
    let unpaced = options.as_object_mut().and_then(|o| o.remove("unpaced")).is_some();
    let several = options.as_object_mut().and_then(|o| o.remove("several")).is_some();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name)).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["dir"] = dir.to_str().unwrap().into();
    if lone || (options.get("corrupt_every").is_some() && !several) {
        // Which read the engine's shared counter corrupts depends on how threads interleave,
        // and so do the mismatches counted: one thread a step makes both runs comparable.
        for s in v["steps"].as_array_mut().unwrap().iter_mut().filter(|s| s.get("threads").is_some()) {
            s["threads"] = 1.into();
        }
    }
    if unpaced {
        for s in v["steps"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("rate");
        }
    }
    v["options"] = options;
    if fields {
        // YCSB's records, and the plan an engine with field-update is given (updates one at a time,
        // as the policy asks of updates of one field).
        v["dataset"]["value"] = serde_json::json!({"min": 100, "max": 100, "fields": 10});
        v["dataset"]["open_bytes"] = (2600 * 1200).into();
        for s in v["steps"].as_array_mut().unwrap().iter_mut().filter(|s| s["step"] == "ops") {
            s["field_updates"] = true.into();
            if s["name"] == "update" {
                s["batch"] = 1.into();
            }
        }
    }
    if v["plan"] == "STORED" {
        v["plan"] = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/plan2-stored.kvbplan").into();
    }
    let path = dir.join("job.json");
    std::fs::write(&path, v.to_string()).unwrap();
    (path, serde_json::from_value(v).unwrap())
}

/// The values read, written into the core's buffer as a worker that reads into it does: the
/// first half, then the rest after the buffer was asked to grow (what was written must stay).
fn in_core_buffer(th: *mut kvb_thread, got: &[u8]) -> *const u8 {
    let half = got.len() / 2;
    // SAFETY: th is live; each buffer holds what was asked, the first `keep` bytes kept.
    unsafe {
        let p = kvb_got(th, 0, half.max(1));
        std::ptr::copy_nonoverlapping(got.as_ptr(), p, half);
        let p = kvb_got(th, half, 2 * got.len().max(1));
        std::ptr::copy_nonoverlapping(got[half..].as_ptr(), p.add(half), got.len() - half);
        p
    }
}

/// Step results out of event lines.
fn steps(lines: &str) -> Vec<StepResult> {
    lines
        .lines()
        .filter_map(|l| match serde_json::from_str::<Event>(l) {
            Ok(Event::Step(s)) => Some(*s),
            _ => None,
        })
        .collect()
}

struct Ptr<T>(*mut T);
// SAFETY: each thread handle is used by one thread only; the job is only read by threads.
unsafe impl<T> Send for Ptr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Ptr<T> {}

/// How the executor runs: the engine's options, and whether it compares a get's value with the
/// block's `exp` itself (as the Go worker does) or hands every value back (as Python does).
#[derive(Clone, Copy)]
struct Exec<'a> {
    options: &'a Options,
    in_place: bool,
    seen: &'a Seen,
    faults: Faults,
}

/// What goes wrong in the executor: every `fail_every`-th read-modify-write unit of a thread
/// fails without being run (a write that failed counts as written, later reads then differ), and a thread of a step that reads stops after `stop_at`
/// units, in the middle of a block (it hands back the units before; a load that stopped would
/// leave records missing).
#[derive(Clone, Copy)]
struct Faults {
    fail_every: usize,
    stop_at: usize,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults { fail_every: usize::MAX, stop_at: usize::MAX }
    }
}

/// What the executor saw of the blocks.
#[derive(Default)]
struct Seen {
    /// The most read-modify-writes one block held.
    rmws: AtomicUsize,
    /// Write entries that handed fields to merge in, and the fields they held.
    merges: AtomicUsize,
    merged_fields: AtomicUsize,
    /// Steps of several threads: blocks where a unit that takes records shared the block, and
    /// the most gets one block held where the thread wrote too.
    shared_takers: AtomicUsize,
    most_shared_gets: AtomicUsize,
}

/// The fields of a serialised record: (name, value) pairs.
fn fields(mut rec: &[u8]) -> Vec<(&[u8], &[u8])> {
    fn take<'a>(rec: &mut &'a [u8]) -> &'a [u8] {
        let n = u32::from_be_bytes(rec[..4].try_into().unwrap()) as usize;
        let (f, rest) = rec[4..].split_at(n);
        *rec = rest;
        f
    }
    let mut out = Vec::new();
    while !rec.is_empty() {
        let name = take(&mut rec);
        out.push((name, take(&mut rec)));
    }
    out
}

/// `stored` with the fields of `changed` in place of its own, as an engine's update merges them.
fn merge(stored: &[u8], changed: &[u8]) -> Vec<u8> {
    let new = fields(changed);
    let mut out = Vec::new();
    for (name, old) in fields(stored) {
        let v = new.iter().find(|(n, _)| *n == name).map_or(old, |&(_, v)| v);
        for f in [name, v] {
            out.extend_from_slice(&(f.len() as u32).to_be_bytes());
            out.extend_from_slice(f);
        }
    }
    out
}

/// Run the blocks of one thread of the current ops step on `rd` / `eng`.
fn run_thread(
    job: &Ptr<kvb_job>,
    (t, threads): (u32, u32),
    eng: Option<&dyn Engine>,
    dir: &Path,
    mode: i32,
    start: Instant,
    x: Exec,
) {
    // SAFETY: the job is live for the step; the thread handle is this thread's.
    let th = unsafe { kvb_thread_new(job.0, t, 64) };
    // Times on a clock that does not start at the step's start, as Python's does.
    const ORIGIN: i64 = 1 << 40;
    // SAFETY: th is live.
    unsafe { kvb_set_origin(th, ORIGIN) };
    let mut rd = eng.map(|e| e.reader().unwrap());
    let now = || start.elapsed().as_nanos() as i64 + ORIGIN;
    let (mut units, mut rmws, mut reads) = (0usize, 0usize, false);
    let (mut wrote, mut most_gets) = (false, 0);
    loop {
        // SAFETY: the block is read before the next call on th.
        let b = unsafe { &*kvb_next(th) };
        if b.units == 0 {
            break;
        }
        let n = b.units as usize;
        // SAFETY: the block's arrays per kvbench.h.
        let (kind, refresh, due, key_end, scan_len) = unsafe {
            (
                std::slice::from_raw_parts(b.kind, n),
                std::slice::from_raw_parts(b.refresh, n),
                std::slice::from_raw_parts(b.due, n),
                std::slice::from_raw_parts(b.key_end, n),
                std::slice::from_raw_parts(b.scan_len, n),
            )
        };
        let keys = key_end[n - 1] as usize;
        reads |= kind.iter().any(|&k| k != 4);
        x.seen.rmws.fetch_max(kind.iter().filter(|&&k| k == 5).count(), Ordering::Relaxed);
        if threads > 1 {
            let takes = kind.iter().filter(|&&k| k == 4 || k == 5).count();
            x.seen.shared_takers.fetch_add(usize::from(takes > 0 && n > 1), Ordering::Relaxed);
            wrote |= takes > 0;
            most_gets = most_gets.max(kind.iter().filter(|&&k| k == 1).count());
        }
        // SAFETY: as above.
        let (key_off, val_off, del, exp, exp_len) = unsafe {
            (
                std::slice::from_raw_parts(b.key_off, keys + 1),
                std::slice::from_raw_parts(b.val_off, keys + 1),
                std::slice::from_raw_parts(b.del, keys),
                std::slice::from_raw_parts(b.exp, keys),
                std::slice::from_raw_parts(b.exp_len, keys),
            )
        };
        // SAFETY: a non-NULL exp holds exp_len bytes until the next call on th.
        let expected =
            |i: usize| (!exp[i].is_null()).then(|| unsafe { std::slice::from_raw_parts(exp[i], exp_len[i] as usize) });
        // SAFETY: as above.
        let key_buf = unsafe { std::slice::from_raw_parts(b.key, key_off[keys] as usize) };
        // SAFETY: as above.
        let val_buf = unsafe { std::slice::from_raw_parts(b.val, val_off[keys] as usize) };
        let key = |i: usize| &key_buf[key_off[i] as usize..key_off[i + 1] as usize];
        let val = |i: usize| &val_buf[val_off[i] as usize..val_off[i + 1] as usize];
        let (mut times, mut got, mut got_len) = (vec![0i64; 2 * n], Vec::new(), vec![-1i32; keys]);
        let mut ran = n as u32;
        let mut k0 = 0usize;
        for u in 0..n {
            let k1 = key_end[u] as usize;
            if reads && units == x.faults.stop_at {
                ran = u as u32;
                break;
            }
            units += 1;
            rmws += usize::from(kind[u] == 5);
            let fail = kind[u] == 5 && rmws % x.faults.fail_every == 0;
            if refresh[u] == 1 {
                if let Some(r) = rd.as_mut() {
                    r.refresh().unwrap();
                }
            }
            if due[u] >= 0 {
                // An open loop's sleeps must end on time: no timer slack on a pacing thread.
                assert_eq!(kvbench_worker::sys::timer_slack(), 1, "the core left a pacing thread its timer slack");
            }
            while due[u] >= 0 && now() - ORIGIN < due[u] {
                std::hint::spin_loop();
            }
            let mut read = |i: usize, v: Option<&[u8]>| match v {
                Some(v) if x.in_place && expected(i) == Some(v) => got_len[i] = KVB_MATCHED,
                Some(v) => {
                    got.extend_from_slice(v);
                    got_len[i] = v.len() as i32;
                }
                None => {}
            };
            let mut scanned = Vec::new();
            let t0 = now();
            let r: kvbench_model::engine::Result<()> = match kind[u] {
                _ if fail => Err(EngineError::Store("failed on purpose".into())),
                1 | 2 => (k0..k1).try_for_each(|i| {
                    let mut out = Vec::new();
                    let found = rd.as_mut().unwrap().get(key(i), &mut out)?;
                    read(i, found.then_some(&out[..]));
                    Ok(())
                }),
                3 => rd
                    .as_mut()
                    .unwrap()
                    .scan(Some(key(k0)), scan_len[u].min(usize::MAX as u64) as usize, &mut |k, v| {
                        for f in [k, v] {
                            scanned.extend_from_slice(&(f.len() as u32).to_le_bytes());
                            scanned.extend_from_slice(f);
                        }
                        true
                    })
                    .map(|_| ()),
                4 if (k0..k1).any(|i| del[i] == MERGE_FIELDS) => (k0..k1).try_for_each(|i| {
                    // Entry by entry, as a YCSB binding's calls: a merge reads what the one before wrote.
                    let mut stored = Vec::new();
                    if del[i] == MERGE_FIELDS {
                        let r = rd.as_mut().unwrap();
                        r.refresh()?;
                        assert!(r.get(key(i), &mut stored)?, "fields to merge into an absent record");
                        x.seen.merges.fetch_add(1, Ordering::Relaxed);
                        x.seen.merged_fields.fetch_add(fields(val(i)).len(), Ordering::Relaxed);
                        stored = merge(&stored, val(i));
                    }
                    let value = match del[i] {
                        DELETE => None,
                        MERGE_FIELDS => Some(&stored[..]),
                        _ => Some(val(i)),
                    };
                    eng.unwrap().write(&[WriteOp { key: key(i), value }])
                }),
                4 => {
                    let batch: Vec<WriteOp<'_>> =
                        (k0..k1).map(|i| WriteOp { key: key(i), value: (del[i] == 0).then(|| val(i)) }).collect();
                    eng.unwrap().write(&batch)
                }
                5 => {
                    let mut out = Vec::new();
                    let r = rd.as_mut().unwrap();
                    let found = r.get(key(k0), &mut out).unwrap();
                    r.refresh().unwrap();
                    read(k0, found.then_some(&out[..]));
                    eng.unwrap().write(&[WriteOp { key: key(k0), value: Some(val(k0)) }])
                }
                6 => {
                    let e = (DESC.open)(&open_args(dir, x.options, mode)).unwrap();
                    let mut out = Vec::new();
                    let found = e.reader().unwrap().get(key(k0), &mut out).unwrap();
                    e.close().unwrap();
                    read(k0, found.then_some(&out[..]));
                    Ok(())
                }
                _ => Ok(()),
            };
            times[2 * u] = t0;
            times[2 * u + 1] = now();
            if !scanned.is_empty() {
                // SAFETY: th is live; the buffer holds scanned.len() bytes.
                unsafe { kvb_scan(th, scanned.as_ptr(), scanned.len()) };
            }
            if let Err(e) = r {
                let msg = CString::new(e.to_string()).unwrap();
                // SAFETY: th is live; strings are NUL-terminated.
                if unsafe { kvb_error(th, u as u32, c"store".as_ptr(), msg.as_ptr(), times[2 * u + 1]) } == 1 {
                    ran = u as u32 + 1;
                    break;
                }
            }
            k0 = k1;
        }
        let got = if x.in_place { in_core_buffer(th, &got) } else { got.as_ptr() };
        // SAFETY: th is live; the arrays have the sizes kvbench.h asks.
        unsafe { kvb_done(th, ran, times.as_ptr(), got, got_len.as_ptr()) };
    }
    drop(rd);
    if wrote {
        x.seen.most_shared_gets.fetch_max(most_gets, Ordering::Relaxed);
    }
    // SAFETY: th is not used afterwards.
    unsafe { kvb_thread_end(th) };
}

/// Run the job file through the C ABI on the memory engine; returns the event lines.
fn run_hosted(path: &Path, dir: &Path, spec: &Job, (in_place, faults): (bool, Faults), seen: &Seen) -> String {
    let out = tempfile::tempfile().unwrap();
    let cpath = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and an open file.
    let job = Ptr(unsafe { kvb_job_open(cpath.as_ptr(), out.as_raw_fd()) });
    // SAFETY: the job is live.
    assert!(unsafe { kvb_job_error(job.0) }.is_null(), "{:?}", unsafe { CStr::from_ptr(kvb_job_error(job.0)) });
    let options = Options::resolved(spec.options.clone());
    let x = Exec { options: &options, in_place, seen, faults };
    let mut eng: Option<Box<dyn Engine>> = None;
    loop {
        // SAFETY: the job is live.
        let st = unsafe { &*kvb_step_begin(job.0) };
        let start = Instant::now();
        let mut finish_ns = 0;
        let (mut error, mut error_kind, mut settled) = (None, None, None);
        match st.step {
            0 => break,
            1 => eng = Some((DESC.open)(&open_args(dir, &options, st.mode)).unwrap()),
            2 => eng.as_mut().unwrap().prepare().unwrap(),
            3 => eng.take().unwrap().close().unwrap(),
            5 => {
                let e = eng.as_deref();
                std::thread::scope(|s| {
                    for t in 0..st.threads {
                        let job = &job;
                        s.spawn(move || run_thread(job, (t, st.threads), e, dir, st.mode, start, x));
                    }
                });
                // SAFETY: the job is live.
                if unsafe { kvb_finish_due(job.0) } == 1 {
                    let t = Instant::now();
                    eng.as_mut().unwrap().finish_load().unwrap();
                    finish_ns = t.elapsed().as_nanos() as u64;
                }
            }
            6 => match eng.as_mut().unwrap().settle() {
                Ok(done) => settled = Some(CString::new(done).unwrap()),
                Err(e) => (error, error_kind) = (Some(CString::new(e.to_string()).unwrap()), Some(c"unsupported")),
            },
            _ => {}
        }
        let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        let r = kvb_report {
            wall_ns: start.elapsed().as_nanos() as u64,
            start_unix_ns: 1,
            finish_ns,
            error: ptr(&error),
            error_kind: error_kind.map_or(std::ptr::null(), |k| k.as_ptr()),
            finish_error: std::ptr::null(),
            settings: std::ptr::null(),
            runtime: std::ptr::null(),
            settled: ptr(&settled),
            internals: std::ptr::null(),
        };
        // SAFETY: the job is live; the report's strings are NULL or NUL-terminated.
        unsafe { kvb_step_end(job.0, &r) };
    }
    // SAFETY: not used afterwards.
    unsafe { kvb_job_free(job.0) };
    let mut text = String::new();
    use std::io::{Read, Seek};
    let mut out = out;
    out.rewind().unwrap();
    out.read_to_string(&mut text).unwrap();
    text
}

fn run_rust(job: &Job) -> String {
    let mut lines = String::new();
    kvbench_worker::run_job(job, DESC, &mut |e| {
        lines.push_str(&e.to_line());
        lines.push('\n');
    })
    .unwrap();
    lines
}

/// Per step: the counters that must agree, and the samples per op kind.
fn counts(s: &StepResult) -> String {
    let kinds: Vec<String> = s
        .hist
        .iter()
        .map(|(k, h)| format!("{k}={}", kvbench_worker::clock::decode_histogram(h).unwrap().len()))
        .collect();
    format!(
        "{} {}: ops {} requests {} errors {} mismatches {} missing {} evicted {} error {:?} [{}]",
        s.index,
        s.step,
        s.ops,
        s.requests,
        s.errors,
        s.mismatches,
        s.missing,
        s.evicted,
        s.error,
        kinds.join(" ")
    )
}

/// Run job `name` both ways, with engine options `options`; the steps' counters must agree.
/// Returns the steps and what the executor saw.
fn agree_with(name: &str, options: serde_json::Value, in_place: bool) -> (Vec<StepResult>, Seen) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (path, job) = job_in(name, a.path(), options.clone());
    let seen = Seen::default();
    let hosted = steps(&run_hosted(&path, a.path(), &job, (in_place, Faults::default()), &seen));
    let (_, job) = job_in(name, b.path(), options);
    let rust = steps(&run_rust(&job));
    assert_eq!(hosted.len(), job.steps.len(), "one event per step");
    let (h, r): (Vec<String>, Vec<String>) = (hosted.iter().map(counts).collect(), rust.iter().map(counts).collect());
    assert_eq!(h, r);
    // The timeline is on the step's clock, whatever the worker's clock starts at.
    for s in &hosted {
        let ms = s.wall_ns / 1_000_000 + job.interval_ms;
        assert!(s.intervals.iter().all(|i| i.t_ms <= ms), "step {}: an interval after the step's end", s.index);
    }
    (hosted, seen)
}

/// Run job `name` both ways, the executor comparing in place and not; nothing may be wrong.
fn agree(name: &str) {
    for in_place in [true, false] {
        let (hosted, _) = agree_with(name, serde_json::json!({}), in_place);
        let h: Vec<String> = hosted.iter().map(counts).collect();
        assert!(hosted.iter().all(|s| s.mismatches == 0 && s.missing == 0 && s.errors == 0), "{h:#?}");
    }
}

#[test]
fn blocks_through_the_c_abi_count_what_the_rust_worker_counts() {
    agree("every-step.json");
}

/// A worker that compares a get's value with the block's `exp` itself hands back only the
/// values that differ: the core must count each of them, as the Rust worker does.
#[test]
fn values_compared_in_place_count_every_mismatch() {
    let (hosted, _) = agree_with("every-step.json", serde_json::json!({"corrupt_every": 7}), true);
    let gets = hosted.iter().find(|s| s.hist.keys().eq(["get"])).expect("a step of gets only");
    assert!(gets.mismatches > 0 && gets.mismatches >= gets.ops / 7 - 1, "{}", counts(gets));
}

/// Where every CPU has a client thread, or other threads write, a thread's checks run beside
/// it only on CPU time the clients leave, a block of many reads at a time, the others where
/// they ran: every wrong value is counted either way, every op of a block handed over comes
/// back, and a get beside writers is judged by the record's states until its block was done.
#[test]
fn regression_checks_on_idle_cpu_time_count_every_mismatch() {
    let several = serde_json::json!({"corrupt_every": 7, "several": true});
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (path, job) = job_in("every-step.json", a.path(), several.clone());
    let hosted = steps(&run_hosted(&path, a.path(), &job, (false, Faults::default()), &Seen::default()));
    let (_, job) = job_in("every-step.json", b.path(), several);
    let rust = steps(&run_rust(&job));
    // Of a step of gets alone, or read-modify-writes, which reads the engine corrupts does not
    // depend on how threads interleave.
    for kind in ["get", "rmw"] {
        let alone = |steps: &[StepResult]| steps.iter().find(|s| s.hist.keys().eq([kind])).map(counts);
        assert_eq!(alone(&hosted), alone(&rust));
    }
    // Beside writers, a block of many gets goes to the idle checker: every op comes back from it.
    let idle = job.steps.iter().find_map(|st| match st {
        kvbench_model::job::Step::Ops(o) if o.name == "mixed-mostly-gets-threads" => Some(o.index),
        _ => None,
    });
    let ops = |steps: &[StepResult]| steps.iter().find(|s| Some(s.index) == idle).map(|s| s.ops);
    assert_eq!(ops(&hosted), Some(4000));
    assert_eq!(ops(&rust), Some(4000));
    let threads = |s: &&StepResult| {
        job.steps.iter().any(|st| matches!(st, kvbench_model::job::Step::Ops(o) if o.index == s.index && o.threads > 1))
    };
    for s in hosted.iter().filter(threads).filter(|s| s.hist.contains_key("get") || s.hist.contains_key("rmw")) {
        assert!(s.mismatches > 0, "{}", counts(s));
    }
}

/// A stored dataset's record count includes repeated keys: a scan drawn past the last sorted
/// position must start past the last key and find nothing (it started at the last key and
/// counted it as a mismatch).
#[test]
fn scans_past_the_last_key_of_a_stored_dataset_find_nothing() {
    agree("stored.json");
}

/// A thread that writes alone moves a read-modify-write's record when it fills the block, as a
/// write's: the block goes on past it (it ended there, a crossing of the C ABI per one or two
/// units of YCSB A), and the reads after it in the block are still verified.
#[test]
fn regression_an_rmw_does_not_end_the_block_of_a_lone_writer() {
    let (hosted, seen) = agree_with("every-step.json", serde_json::json!({}), false);
    let rmws = seen.rmws.into_inner();
    assert!(rmws > 1, "at most {rmws} rmw a block");
    let mixed: Vec<String> =
        hosted.iter().filter(|s| s.hist.len() > 1 && s.hist.contains_key("rmw")).map(counts).collect();
    assert!(!mixed.is_empty(), "a mixed step with rmws");
    assert!(hosted.iter().all(|s| s.mismatches == 0 && s.missing == 0), "{mixed:#?}");
}

/// Beside other writers a unit that takes records is a block alone (it holds them only while
/// it runs), and gets share blocks (they take none): a crossing of the C ABI per get cost YCSB A
/// at two threads more than its checks.
#[test]
fn regression_gets_beside_other_writers_share_blocks_and_writes_are_alone() {
    let (_, seen) = agree_with("every-step.json", serde_json::json!({"unpaced": true}), false);
    assert_eq!(seen.shared_takers.into_inner(), 0, "blocks where a write shared");
    assert!(seen.most_shared_gets.into_inner() > 1, "gets beside writers one a block");
}

/// An engine that merges fields in itself (field-update, a YCSB binding's update) is handed
/// each update of one field as a write entry holding that field alone; it counts as the
/// Rust worker's read-modify-write does, and every later read finds the field merged in.
#[test]
fn regression_an_engine_with_field_update_is_handed_the_one_field() {
    let (hosted, seen) = agree_with("every-step.json", serde_json::json!({"fields": true}), true);
    let merges = seen.merges.into_inner();
    assert!(merges >= 500, "{merges} merges: the update step's 500 at least");
    assert_eq!(seen.merged_fields.into_inner(), merges, "one field each");
    let h: Vec<String> = hosted.iter().map(counts).collect();
    assert!(hosted.iter().all(|s| s.mismatches == 0 && s.missing == 0 && s.errors == 0), "{h:#?}");
}

/// A lone writer's next block is made beside it while it runs one (where a CPU is free, as the
/// checks): made on the records as the block before leaves them when all of it runs as made.
/// When units of that block failed, it is taken back and made again from the same ops (none
/// lost); when the thread stops in the middle of a block, taken back with the records it moved
/// put back (every later read still finds what it must).
#[test]
fn regression_a_block_made_ahead_is_made_again_after_failures_and_taken_back_at_a_stop() {
    let run = |faults: Faults| {
        let dir = tempfile::tempdir().unwrap();
        let (path, job) = job_in("every-step.json", dir.path(), serde_json::json!({"lone": true}));
        steps(&run_hosted(&path, dir.path(), &job, (false, faults), &Seen::default()))
    };
    let clean = run(Faults::default());
    let failing = run(Faults { fail_every: 3, ..Faults::default() });
    let stopping = run(Faults { stop_at: 150, ..Faults::default() });
    for s in clean.iter().chain(&failing).chain(&stopping) {
        assert!(s.mismatches == 0 && s.missing == 0, "{}", counts(s));
    }
    assert!(failing.iter().any(|s| s.errors > 0), "no unit failed");
    // (A scan's ops are the records it visited: fewer where a failed rmw left one absent.)
    let requests = |steps: &[StepResult]| steps.iter().map(|s| s.requests).collect::<Vec<_>>();
    assert_eq!(requests(&failing), requests(&clean), "a failed unit is a request done");
    assert!(stopping.iter().zip(&clean).any(|(s, c)| s.requests < c.requests), "no thread stopped");
}

/// A step of one thread is counted and checked beside it wherever a CPU is free, so that the
/// tests above, run on such a machine, check that path: each ops step of one thread starts a
/// checker when the machine has more than one CPU; a step of writers beside each other, one
/// that runs on the CPU time they leave; none of them takes a CPU from a client thread.
#[test]
fn a_lone_thread_is_counted_beside_it_when_a_cpu_is_free() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = job_in("every-step.json", dir.path(), serde_json::json!({}));
    let mut hosted = Hosted::open(&path, std::sync::Arc::new(|_: &str| {})).unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mut lone, mut idle) = (0, 0);
    loop {
        let st = hosted.begin();
        if st.step == 0 {
            break;
        }
        if st.step == 5 && st.threads == 1 {
            let th = hosted.thread(0, 64).unwrap();
            assert_eq!(th.checks_beside(), cpus > 1, "{cpus} CPUs");
            assert_eq!(th.checks_when_idle(), cpus == 1, "{cpus} CPUs");
            th.end();
            lone += 1;
        } else if st.step == 5 {
            let th = hosted.thread(0, 64).unwrap();
            assert!(!th.checks_beside() || (st.threads as usize) < cpus, "{} threads on {cpus} CPUs", st.threads);
            idle += usize::from(th.checks_when_idle());
            th.end();
        }
        hosted.end(&Report::default());
    }
    assert!(lone >= 5, "{lone} steps of one thread");
    assert!(idle >= 1, "{idle} steps of writers beside each other counted on the CPU time they leave");
}

/// A buffer of values read larger than the memory there is comes back NULL (which the worker
/// reports as the thread's error), not an abort of the worker; the buffer before it stays.
#[test]
fn regression_a_buffer_of_values_beyond_memory_is_null_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = job_in("every-step.json", dir.path(), serde_json::json!({}));
    let mut hosted = Hosted::open(&path, std::sync::Arc::new(|_: &str| {})).unwrap();
    while hosted.begin().step != 5 {
        hosted.end(&Report::default());
    }
    let mut th = hosted.thread(0, 64).unwrap();
    assert!(!th.got_room(0, 1 << 16).is_null());
    assert!(th.got_room(0, usize::MAX / 4).is_null());
    assert!(!th.got_room(0, 1 << 17).is_null(), "a smaller buffer after it still comes");
    th.end();
}
