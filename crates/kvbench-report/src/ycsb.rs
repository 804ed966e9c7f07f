//! `--format ycsb`: YCSB's summary lines (`[OVERALL], RunTime(ms), ...`, then per operation
//! `Operations`, latencies in µs), one block per row, repetition and phase, each under a `#`
//! comment naming them, so tools that parse YCSB output read kvbench results.

use kvbench_model::result::{Latency, PhaseResult, RunResult, Status};

/// YCSB's name for an operation kind (`[READ]`, `[UPDATE]` ...).
fn op_name(kind: &str) -> String {
    match kind {
        "get" | "read" => "READ".into(),
        "load" | "insert" => "INSERT".into(),
        "update" => "UPDATE".into(),
        "scan" => "SCAN".into(),
        "delete" => "DELETE".into(),
        "rmw" | "read-modify-write" => "READ-MODIFY-WRITE".into(),
        other => other.to_uppercase(),
    }
}

fn us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

fn op_lines(out: &mut String, name: &str, latency: &Latency, count: u64, errors: u64) {
    let n = op_name(name);
    out.push_str(&format!("[{n}], Operations, {count}\n"));
    out.push_str(&format!("[{n}], AverageLatency(us), {:.3}\n", latency.mean_ns / 1000.0));
    out.push_str(&format!("[{n}], MinLatency(us), {}\n", us(latency.min_ns)));
    out.push_str(&format!("[{n}], MaxLatency(us), {}\n", us(latency.max_ns)));
    out.push_str(&format!("[{n}], 95thPercentileLatency(us), {}\n", us(latency.p95_ns)));
    out.push_str(&format!("[{n}], 99thPercentileLatency(us), {}\n", us(latency.p99_ns)));
    out.push_str(&format!("[{n}], Return=OK, {}\n", count.saturating_sub(errors)));
    if errors > 0 {
        out.push_str(&format!("[{n}], Return=ERROR, {errors}\n"));
    }
}

/// Samples in a latency histogram (the count of timed operations of that kind).
fn samples(latency: &Latency) -> Option<u64> {
    kvbench_model::histogram::decode_histogram(&latency.hdr).ok().map(|h| h.len())
}

fn phase_block(out: &mut String, phase: &PhaseResult) {
    out.push_str(&format!("[OVERALL], RunTime(ms), {}\n", crate::wall_ns(phase) / 1_000_000));
    out.push_str(&format!("[OVERALL], Throughput(ops/sec), {}\n", phase.ops_per_sec));
    if phase.latency_by_op.is_empty() {
        // Operations count records, as Throughput does (a batched load's 100 000 records, not
        // its 100 batches); the header line says what one latency sample covers.
        if let Some(l) = &phase.latency {
            let count = if phase.unit == "op" { samples(l).unwrap_or(phase.requests) } else { phase.ops };
            op_lines(out, &phase.kind, l, count, phase.errors);
        }
    } else {
        for (op, l) in &phase.latency_by_op {
            op_lines(out, op, l, samples(l).unwrap_or(0), 0);
        }
    }
}

/// Where one latency sample covers several records: how many, since Operations counts records.
fn per_sample(phase: &PhaseResult) -> String {
    let n = phase.latency.as_ref().and_then(samples).unwrap_or(phase.requests);
    if phase.latency_by_op.is_empty() && phase.unit != "op" && n > 0 {
        let avg = phase.ops as f64 / n as f64;
        format!("; Operations counts records: {avg:.1} records per {} on average, {n} samples", phase.unit)
    } else {
        String::new()
    }
}

pub fn ycsb(run: &RunResult) -> String {
    let mut out = format!("# kvbench {} run {} scenario {}\n", run.kvbench_version, run.run_id, run.scenario);
    for e in &run.engines {
        for p in e.phases.iter().filter(|p| p.name != "open" && p.name != "close") {
            out.push_str(&format!(
                "# engine {} (repetition {}), phase {} ({}, latency per {}{})\n",
                e.label,
                e.repetition,
                p.name,
                p.kind,
                p.unit,
                per_sample(p)
            ));
            match p.status {
                Status::Ok => phase_block(&mut out, p),
                _ => out.push_str(&format!(
                    "# not measured: {}\n",
                    p.reason.as_deref().or(e.error.as_deref()).map(crate::first_line).unwrap_or("")
                )),
            }
        }
    }
    out
}
