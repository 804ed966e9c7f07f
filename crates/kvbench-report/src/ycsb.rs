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

fn op_lines(out: &mut String, name: &str, l: &Latency, count: u64, errors: u64) {
    let n = op_name(name);
    out.push_str(&format!("[{n}], Operations, {count}\n"));
    out.push_str(&format!("[{n}], AverageLatency(us), {:.3}\n", l.mean_ns / 1000.0));
    out.push_str(&format!("[{n}], MinLatency(us), {}\n", us(l.min_ns)));
    out.push_str(&format!("[{n}], MaxLatency(us), {}\n", us(l.max_ns)));
    out.push_str(&format!("[{n}], 95thPercentileLatency(us), {}\n", us(l.p95_ns)));
    out.push_str(&format!("[{n}], 99thPercentileLatency(us), {}\n", us(l.p99_ns)));
    out.push_str(&format!("[{n}], Return=OK, {}\n", count.saturating_sub(errors)));
    if errors > 0 {
        out.push_str(&format!("[{n}], Return=ERROR, {errors}\n"));
    }
}

/// Samples in a latency histogram (the count of timed operations of that kind).
fn samples(l: &Latency) -> Option<u64> {
    kvbench_model::histogram::decode_histogram(&l.hdr).ok().map(|h| h.len())
}

fn phase_block(out: &mut String, p: &PhaseResult) {
    out.push_str(&format!("[OVERALL], RunTime(ms), {}\n", crate::wall_ns(p) / 1_000_000));
    out.push_str(&format!("[OVERALL], Throughput(ops/sec), {}\n", p.ops_per_sec));
    if p.latency_by_op.is_empty() {
        // Operations count records, as Throughput does (a batched load's 100 000 records, not
        // its 100 batches); the header line says what one latency sample covers.
        if let Some(l) = &p.latency {
            let count = if p.unit == "op" { samples(l).unwrap_or(p.requests) } else { p.ops };
            op_lines(out, &p.kind, l, count, p.errors);
        }
    } else {
        for (op, l) in &p.latency_by_op {
            op_lines(out, op, l, samples(l).unwrap_or(0), 0);
        }
    }
}

/// Where one latency sample covers several records: how many, since Operations counts records.
fn per_sample(p: &PhaseResult) -> String {
    let n = p.latency.as_ref().and_then(samples).unwrap_or(p.requests);
    if p.latency_by_op.is_empty() && p.unit != "op" && n > 0 {
        let avg = p.ops as f64 / n as f64;
        format!("; Operations counts records: {avg:.1} records per {} on average, {n} samples", p.unit)
    } else {
        String::new()
    }
}

pub fn ycsb(r: &RunResult) -> String {
    let mut out = format!("# kvbench {} run {} scenario {}\n", r.kvbench_version, r.run_id, r.scenario);
    for e in &r.engines {
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
