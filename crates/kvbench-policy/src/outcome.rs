//! From a worker's raw counters to the phases of a result, once for every runtime: status,
//! rates, units, notes and N/A text are decided here.

use std::collections::BTreeMap;

use crate::histogram::{decode_histogram, new_histogram, summarize};
use crate::job::StepResult;
use crate::result::{Interval, Latency, PhaseResult, Status};
use crate::saturation;

use super::jobs::PhasePlan;

/// The harness share above which a phase carries a warning.
pub const HARNESS_WARN: f64 = 0.10;

/// Phases of one row from the plan of its job and the step results the worker sent (by
/// step index). A phase whose steps never reported fails with what the worker last did.
pub fn phases(plan: &[PhasePlan], steps: &BTreeMap<usize, StepResult>) -> Vec<PhaseResult> {
    let mut out = Vec::with_capacity(plan.len());
    let mut last_done = "start".to_string();
    for p in plan {
        let r = phase(p, steps, &last_done);
        if r.status != Status::Failed || p.main.is_some_and(|m| steps.contains_key(&m)) {
            last_done = p.name.clone();
        }
        out.push(r);
    }
    scaling_notes(plan, &mut out);
    out
}

/// Say when a server phase's client CPU per op grew against the same work at fewer threads
/// earlier in the row (saturation.rs): the client contended with itself. The server's CPU is
/// not measured per phase, so the check cannot rule out a saturated server; a client waiting
/// on a saturated server blocks rather than spends CPU.
fn scaling_notes(plan: &[PhasePlan], out: &mut [PhaseResult]) {
    let load = |p: &PhasePlan, r: &PhaseResult| saturation::PhaseLoad {
        cpu_user_ns: r.cpu_user_ns,
        cpu_sys_ns: r.cpu_sys_ns,
        wall_ns: r.elapsed_ns,
        threads: p.threads.max(1),
        cpus: cpus(),
        ops: r.ops,
        target_rate: p.rate,
        store_in_process: !p.server,
    };
    let shape =
        |p: &PhasePlan| (p.kind.clone(), p.unit.clone(), p.batch, p.connections, p.pipeline, p.writer.is_some());
    let same_work = |a: &PhasePlan, b: &PhasePlan| shape(a) == shape(b);
    for i in 0..out.len().min(plan.len()) {
        let base = (0..i).filter(|&j| out[j].status == Status::Ok && same_work(&plan[j], &plan[i]));
        let Some(j) = base.min_by_key(|&j| plan[j].threads) else { continue };
        if out[i].status != Status::Ok {
            continue;
        }
        if let Some(w) = saturation::scaling(&load(&plan[j], &out[j]), &load(&plan[i], &out[i]), None) {
            out[i].notes.push(w.message());
        }
    }
}

fn base(plan: &PhasePlan) -> PhaseResult {
    PhaseResult {
        name: plan.name.clone(),
        kind: plan.kind.clone(),
        unit: if plan.unit.is_empty() { plan.kind.clone() } else { plan.unit.clone() },
        threads: plan.threads,
        batch: plan.batch,
        cache: plan.cache.clone(),
        notes: plan.notes.clone(),
        ..Default::default()
    }
}

fn phase(plan: &PhasePlan, steps: &BTreeMap<usize, StepResult>, last_done: &str) -> PhaseResult {
    let mut r = base(plan);
    if let Some(why) = &plan.not_applicable {
        r.status = Status::NotApplicable;
        r.reason = Some(why.clone());
        return r;
    }
    for i in &plan.before {
        match steps.get(i) {
            Some(s) if s.error.is_some() => return failed(r, format!("{} failed: {}", s.step, msg(s))),
            Some(s) => before_note(&mut r, s),
            None => return failed(r, format!("worker ended after phase {last_done}")),
        }
    }
    let Some(main) = plan.main.and_then(|m| steps.get(&m)) else {
        return failed(r, format!("worker ended after phase {last_done}"));
    };
    if main.step == "settle" {
        return settled(r, main);
    }
    if plan.kind == "size" && main.error.is_none() {
        return sized(r, main);
    }
    if let Some(e) = &main.error {
        let _ = e;
        return failed(r, format!("{} failed: {}", main.step, msg(main)));
    }
    fill(&mut r, plan, main);
    stop_and_stalls(&mut r, plan, main);
    judge(r, main)
}

/// Why a phase with a stop rule ended, and its stalls: whole intervals whose ops fell below
/// `stall_fraction` of the median whole interval (an interval with no op at all included).
fn stop_and_stalls(result: &mut PhaseResult, plan: &PhasePlan, step: &StepResult) {
    if plan.stop_rule {
        let why = step.stopped_by.clone().unwrap_or_else(|| format!("count reached: {} ops", step.ops));
        result.notes.push(format!("ended: {why}"));
        result.stopped_by = Some(why);
    }
    if step.step != "ops" || plan.interval_ms == 0 {
        return;
    }
    let counts = whole_intervals(step, plan.interval_ms);
    if counts.len() < 2 {
        return;
    }
    let mut sorted = counts.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    let below = plan.stall_fraction * median as f64;
    result.stall_fraction = plan.stall_fraction;
    result.stalls = counts.iter().filter(|&&n| (n as f64) < below).count() as u64;
    if result.stalls > 0 {
        result.notes.push(format!(
            "stalls: {} of {} whole intervals below {}% of the median interval ({median} ops)",
            result.stalls,
            counts.len(),
            plan.stall_fraction * 100.0
        ));
    }
}

/// Ops of each whole interval of the step (the last, partial one left out), 0 for an interval
/// in which no unit ended (the worker leaves those out).
pub(crate) fn whole_intervals(step: &StepResult, interval_ms: u64) -> Vec<u64> {
    let whole = (step.wall_ns / 1_000_000 / interval_ms.max(1)) as usize;
    let mut counts = vec![0u64; whole];
    for i in &step.intervals {
        if let Some(c) = counts.get_mut((i.t_ms / interval_ms.max(1)) as usize) {
            *c += i.ops;
        }
    }
    counts
}

/// A settle phase: untimed, so no throughput or latency (ops 0); its wall time and what the
/// engine did are notes, its CPU, I/O and the engine's internals are kept. An engine without
/// settle makes it N/A with the engine's reason.
fn settled(mut result: PhaseResult, step: &StepResult) -> PhaseResult {
    if step.error_kind.as_deref() == Some("unsupported") {
        result.status = Status::NotApplicable;
        result.reason = Some(msg(step).trim_start_matches("unsupported: ").to_string());
        return result;
    }
    if step.error.is_some() {
        return failed(result, format!("settle failed: {}", msg(step)));
    }
    (result.wall_ns, result.elapsed_ns) = (step.wall_ns, step.wall_ns);
    let done = step.settled.as_deref().filter(|d| !d.is_empty()).unwrap_or("done");
    result.notes.push(format!("settled (untimed, not a throughput figure): {done}; took {}", took(step.wall_ns)));
    usage(&mut result, step);
    result
}

/// A size phase: the allocated bytes right after the close, and the close's time (a write's
/// `with` block times it), but no throughput or latency (ops 0).
fn sized(mut result: PhaseResult, step: &StepResult) -> PhaseResult {
    (result.wall_ns, result.elapsed_ns, result.space_bytes) = (step.wall_ns, step.wall_ns, step.space_bytes);
    result.notes.push(format!(
        "size after the close: {} bytes allocated (the close took {})",
        step.space_bytes,
        took(step.wall_ns)
    ));
    usage(&mut result, step);
    result
}

/// A settle's time: seconds from one second on, else milliseconds.
fn took(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

fn usage(result: &mut PhaseResult, step: &StepResult) {
    result.cpu_user_ns = step.usage.cpu_user_ns;
    result.cpu_sys_ns = step.usage.cpu_sys_ns;
    result.max_rss_kb = step.usage.max_rss_kb;
    result.io_read_bytes = step.usage.io_read_bytes;
    result.io_write_bytes = step.usage.io_write_bytes;
    result.runtime = step.runtime.clone();
    result.internals = step.internals.clone();
    result.wire = step.wire;
    result.internal_series = step.internal_series.clone();
}

fn msg(step: &StepResult) -> String {
    step.error.clone().unwrap_or_default()
}

fn failed(mut result: PhaseResult, why: String) -> PhaseResult {
    result.status = Status::Failed;
    result.reason = Some(why);
    result
}

fn before_note(result: &mut PhaseResult, step: &StepResult) {
    match step.step.as_str() {
        "evict" => result.cache = format!("cold: {} files evicted with posix_fadvise(DONTNEED)", step.evicted),
        "open" => result.notes.push(format!("reopened in {:.3} ms before the phase", step.wall_ns as f64 / 1e6)),
        // A reopen phase's figure is its open; the close before it is said, the page cache kept.
        "close" if result.kind == "reopen" => result.notes.push(format!(
            "closed in {:.3} ms, then opened read-write (the phase's time); page cache kept",
            step.wall_ns as f64 / 1e6
        )),
        "ops" => result.notes.push(format!(
            "after an untimed warm-up of {} ({:.1} ms; not in the figures)",
            warmup_count(&result.kind, step),
            step.wall_ns as f64 / 1e6
        )),
        _ => {}
    }
}

/// A warm-up's size as its flag counts it: requests of a multi-get, scans of a scan phase.
fn warmup_count(kind: &str, step: &StepResult) -> String {
    match kind {
        "multi-get" => format!("{} requests ({} keys)", step.requests, step.ops),
        "scan" => format!("{} scans ({} records)", step.requests, step.ops),
        _ => format!("{} operations", step.ops),
    }
}

/// Counters, rates and latency of the phase's main step.
fn fill(result: &mut PhaseResult, plan: &PhasePlan, step: &StepResult) {
    let single = step.step != "ops";
    result.wall_ns = step.wall_ns;
    result.ops = if single { 1 } else { step.ops };
    result.requests = if single { 1 } else { step.requests };
    result.errors = step.errors;
    result.error_classes = step.error_classes.clone();
    result.mismatches = step.mismatches;
    result.missing = step.missing;
    result.busy_ns = if single { step.wall_ns } else { step.busy_ns };
    result.elapsed_ns = if single { step.wall_ns } else { step.busy_max_ns };
    result.ops_per_sec = result.ops as f64 / (step.wall_ns.max(1) as f64 / 1e9);
    result.space_bytes = step.space_bytes;
    let threads = plan.threads.max(1) as f64;
    // Pipelined gets overlap in time: their summed time says nothing about the harness's
    // share, which is then left at 0 (the row's note says so).
    result.harness_share = if single || step.wall_ns == 0 || plan.connections.max(1) * plan.pipeline.max(1) > 1 {
        0.0
    } else {
        (1.0 - step.busy_ns as f64 / (threads * step.wall_ns as f64)).clamp(0.0, 1.0)
    };
    result.latency = if single { single_latency(step.wall_ns) } else { merged_latency(step, plan.writer.is_some()) };
    if let Some(rate) = plan.writer {
        writer_note(result, step, rate);
    }
    if step.hist.len() > 1 {
        result.latency_by_op = step
            .hist
            .iter()
            .filter_map(|(k, h)| decode_histogram(h).ok().and_then(|h| summarize(&h)).map(|l| (k.clone(), l)))
            .collect();
    }
    result.intervals = step.intervals.iter().filter_map(interval).collect();
    usage(result, step);
    if !single && result.harness_share > HARNESS_WARN {
        // One text for every row, so reports group it; the share itself is a column.
        result.notes.push(
            "the harness took over 10% of the wall time outside the engine's calls (deriving keys and values, \
             verifying, pacing): read the figure with the harness share beside it"
                .into(),
        );
    }
    if !single {
        saturation_notes(result, plan, step);
    }
}

/// Say when the load generator, not the store, limited the phase (saturation.rs): its threads
/// near 100% CPU beside a server, or an open loop short of its rate.
fn saturation_notes(result: &mut PhaseResult, plan: &PhasePlan, step: &StepResult) {
    let load = saturation::PhaseLoad {
        cpu_user_ns: step.usage.cpu_user_ns,
        cpu_sys_ns: step.usage.cpu_sys_ns,
        wall_ns: step.wall_ns,
        threads: plan.threads.max(1),
        cpus: cpus(),
        ops: result.ops,
        target_rate: plan.rate,
        store_in_process: !plan.server,
    };
    for w in saturation::check(&load) {
        result.notes.push(w.message());
    }
}

/// CPUs this process may use: the worker runs on this host.
fn cpus() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

fn single_latency(ns: u64) -> Option<Latency> {
    let mut h = new_histogram();
    h.saturating_record(ns.max(1));
    summarize(&h)
}

/// What the background writer did: its updates are the `update` histogram's samples.
fn writer_note(result: &mut PhaseResult, step: &StepResult, rate: f64) {
    let n = step.hist.get("update").and_then(|h| decode_histogram(h).ok()).map(|h| h.len()).unwrap_or(0);
    let secs = step.wall_ns.max(1) as f64 / 1e9;
    result.notes.push(format!("background writer: {n} updates, {:.0}/s of {rate}/s asked", n as f64 / secs));
}

/// The latency of every kind of the step; beside a background writer, the readers' only.
fn merged_latency(step: &StepResult, writer: bool) -> Option<Latency> {
    let mut all = new_histogram();
    for (_, h) in step.hist.iter().filter(|(k, _)| !writer || k.as_str() != "update") {
        if let Ok(h) = decode_histogram(h) {
            let _ = all.add(&h);
        }
    }
    summarize(&all)
}

fn interval(sample: &crate::job::Interval) -> Option<Interval> {
    let h = decode_histogram(&sample.hdr).ok()?;
    let l = summarize(&h);
    Some(Interval {
        t_ms: sample.t_ms,
        ops: sample.ops,
        errors: sample.errors,
        p50_ns: l.as_ref().map(|l| l.p50_ns).unwrap_or(0),
        p99_ns: l.as_ref().map(|l| l.p99_ns).unwrap_or(0),
        max_ns: l.as_ref().map(|l| l.max_ns).unwrap_or(0),
        hdr: sample.hdr.clone(),
    })
}

/// Status from the counters: an unsupported call makes the phase N/A, errors or wrong values
/// make it fail.
fn judge(mut result: PhaseResult, step: &StepResult) -> PhaseResult {
    if step.error_kind.as_deref() == Some("unsupported") {
        result.status = Status::NotApplicable;
        result.reason = Some(step.first_error.clone().unwrap_or_else(|| "unsupported".into()));
        return result;
    }
    if step.errors > 0 {
        let first = step.first_error.clone().unwrap_or_default();
        return failed(result, format!("{} errors; first: {first}", step.errors));
    }
    if step.mismatches + step.missing > 0 {
        return failed(
            result,
            format!("verification failed: {} wrong values, {} missing keys", step.mismatches, step.missing),
        );
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(name: &str, main: usize) -> PhasePlan {
        PhasePlan {
            name: name.into(),
            kind: "get".into(),
            main: Some(main),
            threads: 1,
            batch: 1,
            ..Default::default()
        }
    }

    fn ops(index: usize, ops: u64, wall: u64, busy: u64) -> StepResult {
        StepResult { index, step: "ops".into(), ops, requests: ops, wall_ns: wall, busy_ns: busy, ..Default::default() }
    }

    #[test]
    fn throughput_is_ops_over_wall_time() {
        let steps = BTreeMap::from([(0, ops(0, 1000, 2_000_000, 1_000_000))]);
        let r = &phases(&[plan("get", 0)], &steps)[0];
        assert_eq!(r.status, Status::Ok);
        assert!((r.ops_per_sec - 500_000.0).abs() < 1e-6, "{}", r.ops_per_sec);
        assert!((r.harness_share - 0.5).abs() < 1e-9);
        assert!(r.notes.iter().any(|n| n.contains("over 10%")), "{:?}", r.notes);
    }

    #[test]
    fn a_phase_the_worker_never_reported_fails_naming_the_last_one() {
        let steps = BTreeMap::from([(0, ops(0, 10, 10, 10))]);
        let r = phases(&[plan("load", 0), plan("get", 1)], &steps);
        assert_eq!(r[1].status, Status::Failed);
        assert_eq!(r[1].reason.as_deref(), Some("worker ended after phase load"));
    }

    #[test]
    fn wrong_values_fail_the_phase_with_the_exact_count() {
        let mut s = ops(0, 100, 10, 10);
        s.mismatches = 7;
        let r = &phases(&[plan("get", 0)], &BTreeMap::from([(0, s)]))[0];
        assert_eq!(r.status, Status::Failed);
        assert!(r.reason.as_deref().unwrap().contains("7 wrong values"));
    }

    #[test]
    fn overlapping_pipelines_get_no_harness_share() {
        // 8 connections of one thread: their pipelines' times add up to more than the wall time.
        let p = PhasePlan { connections: 8, pipeline: 16, ..plan("get", 0) };
        let steps = BTreeMap::from([(0, ops(0, 1000, 1_000_000, 300_000))]);
        let r = &phases(&[p], &steps)[0];
        assert_eq!(r.harness_share, 0.0);
        // One connection: its 16 GETs in flight overlap as much.
        let p = PhasePlan { connections: 1, pipeline: 16, ..plan("get", 0) };
        let r = &phases(&[p], &steps)[0];
        assert_eq!(r.harness_share, 0.0);
        assert!(!r.notes.iter().any(|n| n.contains("over 10%")), "{:?}", r.notes);
    }

    #[test]
    fn a_size_phase_is_the_closes_space_and_time_without_a_rate() {
        let close = StepResult {
            index: 0,
            step: "close".into(),
            wall_ns: 40_000_000,
            space_bytes: 1 << 30,
            ..Default::default()
        };
        let p = PhasePlan { kind: "size".into(), ..plan("size-after-load", 0) };
        let r = &phases(&[p], &BTreeMap::from([(0, close)]))[0];
        assert_eq!(r.status, Status::Ok);
        assert_eq!((r.space_bytes, r.wall_ns, r.elapsed_ns), (1 << 30, 40_000_000, 40_000_000));
        assert_eq!((r.ops, r.ops_per_sec), (0, 0.0), "a size is no throughput figure");
        assert!(r.latency.is_none());
        assert!(r.notes.iter().any(|n| n.starts_with("size after the close: 1073741824 bytes")), "{:?}", r.notes);
    }

    fn settle_step(index: usize) -> StepResult {
        StepResult { index, step: "settle".into(), wall_ns: 2_500_000_000, ..Default::default() }
    }

    fn settle_plan() -> PhasePlan {
        PhasePlan { kind: "settle".into(), ..plan("settle", 0) }
    }

    #[test]
    fn a_settle_phase_is_ok_untimed_with_what_the_engine_did() {
        let mut s = settle_step(0);
        s.settled = Some("flushed the memtable and compacted every level".into());
        s.internals = BTreeMap::from([("rocksdb.num-files-at-level0".to_string(), 0.0)]);
        let r = &phases(&[settle_plan()], &BTreeMap::from([(0, s)]))[0];
        assert_eq!(r.status, Status::Ok);
        assert_eq!((r.ops, r.ops_per_sec, r.latency.is_none()), (0, 0.0, true));
        assert_eq!(r.wall_ns, 2_500_000_000);
        let note = r.notes.iter().find(|n| n.starts_with("settled")).expect("a settle note");
        assert!(
            note.contains("untimed") && note.contains("compacted every level") && note.contains("took 2.50 s"),
            "{note}"
        );
        assert_eq!(r.internals.get("rocksdb.num-files-at-level0"), Some(&0.0));
    }

    #[test]
    fn an_engine_without_settle_makes_the_phase_na_not_failed() {
        let mut s = settle_step(0);
        s.error = Some("unsupported: this engine has no settle (flush and compact) step".into());
        s.error_kind = Some("unsupported".into());
        let r = &phases(&[settle_plan()], &BTreeMap::from([(0, s.clone())]))[0];
        assert_eq!(r.status, Status::NotApplicable);
        assert_eq!(r.reason.as_deref(), Some("this engine has no settle (flush and compact) step"));
        s.error_kind = Some("store".into());
        let r = &phases(&[settle_plan()], &BTreeMap::from([(0, s)]))[0];
        assert_eq!(r.status, Status::Failed);
    }

    #[test]
    fn internals_and_their_series_reach_the_phase() {
        let mut s = ops(0, 1000, 1_000_000_000, 900_000_000);
        s.internals = BTreeMap::from([("l0_files".to_string(), 3.0)]);
        s.internal_series = vec![crate::job::InternalSample { t_ms: 1000, values: s.internals.clone() }];
        let r = &phases(&[plan("get", 0)], &BTreeMap::from([(0, s)]))[0];
        assert_eq!(r.internals.get("l0_files"), Some(&3.0));
        assert_eq!(r.internal_series.len(), 1);
        assert_eq!(r.internal_series[0].t_ms, 1000);
    }

    /// A step of 1 s wall time whose worker used `cpu_ms` of CPU on one thread.
    fn busy_step(cpu_ms: u64) -> StepResult {
        let mut s = ops(0, 100_000, 1_000_000_000, 900_000_000);
        s.usage.cpu_user_ns = cpu_ms * 700_000;
        s.usage.cpu_sys_ns = cpu_ms * 300_000;
        s
    }

    fn saturation_notes_of(plan: PhasePlan, step: StepResult) -> Vec<String> {
        let r = &phases(&[plan], &BTreeMap::from([(0, step)]))[0];
        r.notes.iter().filter(|n| n.contains("saturated") || n.contains("not sustained")).cloned().collect()
    }

    #[test]
    fn a_busy_client_of_a_server_is_reported_as_saturated() {
        let server = PhasePlan { server: true, ..plan("get", 0) };
        let notes = saturation_notes_of(server.clone(), busy_step(970));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("load generator saturated") && notes[0].contains("97%"), "{notes:?}");
        assert!(saturation_notes_of(server, busy_step(500)).is_empty(), "half busy is capacity to spare");
    }

    #[test]
    fn client_cpu_per_op_growing_with_threads_is_reported_on_the_wider_phase() {
        // A server's get phase at 1 thread, 8.5 µs of client CPU per op; again at 2, 14 µs.
        let step = |index: usize, cpu_us: u64| StepResult {
            usage: crate::job::Usage { cpu_user_ns: cpu_us * 100_000 * 1000, ..Default::default() },
            ..ops(index, 100_000, 4_000_000_000, 3_000_000_000)
        };
        let one = PhasePlan { server: true, ..plan("get", 0) };
        let two = PhasePlan { name: "get-2".into(), main: Some(1), threads: 2, ..one.clone() };
        let steps = BTreeMap::from([(0, step(0, 8)), (1, step(1, 14))]);
        let r = phases(&[one.clone(), two.clone()], &steps);
        let contended = |r: &PhaseResult| r.notes.iter().any(|n| n.starts_with("load generator contended"));
        assert!(!contended(&r[0]) && contended(&r[1]), "{:?}", r[1].notes);
        let steady = BTreeMap::from([(0, step(0, 8)), (1, step(1, 9))]);
        assert!(!contended(&phases(&[one, two], &steady)[1]));
    }

    #[test]
    fn a_busy_embedded_engine_is_not_a_saturated_client() {
        assert!(saturation_notes_of(plan("get", 0), busy_step(990)).is_empty());
    }

    #[test]
    fn an_open_loop_short_of_its_rate_is_reported() {
        // 100 000 ops in 1 s against 150 000 asked.
        let p = PhasePlan { rate: Some(150_000.0), server: true, ..plan("get", 0) };
        let notes = saturation_notes_of(p, busy_step(300));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("100000 ops/s of 150000") && notes[0].ends_with("store"), "{notes:?}");
    }

    /// A step of `wall_ms` whose intervals of 1 s (by number) held `ops`.
    fn timed(wall_ms: u64, ops: &[(u64, u64)]) -> StepResult {
        let mut s = ops_step_of(wall_ms);
        s.intervals =
            ops.iter().map(|&(n, o)| crate::job::Interval { t_ms: n * 1000, ops: o, ..Default::default() }).collect();
        s
    }

    fn ops_step_of(wall_ms: u64) -> StepResult {
        ops(0, 1000, wall_ms * 1_000_000, wall_ms * 1_000_000)
    }

    fn stall_plan() -> PhasePlan {
        PhasePlan { interval_ms: 1000, stall_fraction: 0.5, ..plan("get", 0) }
    }

    #[test]
    fn stalls_are_whole_intervals_below_the_fraction_of_the_median() {
        // Interval 3 is missing (no op ended in it), 5 is low, 6 is the partial last one.
        let s = timed(6500, &[(0, 1000), (1, 1100), (2, 900), (4, 1000), (5, 400), (6, 10)]);
        let r = &phases(&[stall_plan()], &BTreeMap::from([(0, s)]))[0];
        assert_eq!(r.stalls, 2);
        assert_eq!(r.stall_fraction, 0.5);
        assert!(r.notes.iter().any(|n| n.starts_with("stalls: 2 of 6 whole intervals below 50%")), "{:?}", r.notes);
        let none = timed(3000, &[(0, 1000), (1, 1000), (2, 990)]);
        let r = &phases(&[stall_plan()], &BTreeMap::from([(0, none)]))[0];
        assert_eq!(r.stalls, 0);
        assert!(!r.notes.iter().any(|n| n.contains("stalls")), "{:?}", r.notes);
    }

    #[test]
    fn a_phase_with_a_stop_rule_says_why_it_ended() {
        let p = PhasePlan { stop_rule: true, ..stall_plan() };
        let mut s = ops_step_of(100);
        let r = &phases(std::slice::from_ref(&p), &BTreeMap::from([(0, s.clone())]))[0];
        assert_eq!(r.stopped_by.as_deref(), Some("count reached: 1000 ops"));
        s.stopped_by = Some("duration 60 s reached".into());
        let r = &phases(&[p], &BTreeMap::from([(0, s)]))[0];
        assert_eq!(r.stopped_by.as_deref(), Some("duration 60 s reached"));
    }
}
