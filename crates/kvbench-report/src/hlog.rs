//! HdrHistogram interval logs (`.hlog`, the format of jHiccup and `HistogramLogProcessor`)
//! from the interval histograms of each phase: one file per row, repetition and phase.
//! Timestamps are seconds after the phase started (BaseTime = the run's start); values are
//! nanoseconds, and the `Interval_Max` column is in milliseconds as the Java tools expect.
//! An interval's histogram is written as the result holds it (its encoding is the log's) after
//! a check of its cookie, never inflated nor decoded: a log costs time linear in the result's
//! bytes.

use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use kvbench_model::result::{EngineResult, PhaseResult, RunResult};

fn file_name(row: &EngineResult, phase: &PhaseResult) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
    };
    format!("{}-r{}-{}.hlog", clean(&row.label), row.repetition, clean(&phase.name))
}

/// (file name, contents) of every phase that has intervals.
pub fn hlog_files(run: &RunResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in &run.engines {
        for p in e.phases.iter().filter(|p| !p.intervals.is_empty()) {
            if let Some(text) = log(run, e, p) {
                out.push((file_name(e, p), text));
            }
        }
    }
    out
}

fn log(run: &RunResult, row: &EngineResult, phase: &PhaseResult) -> Option<String> {
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let start = UNIX_EPOCH + Duration::from_secs(run.started_at);
    let w = IntervalLogWriterBuilder::new()
        .add_comment("[Histogram log format version 1.3]")
        .add_comment(&format!(
            "[kvbench {} run {}: {} repetition {}, phase {} ({}), latency per {} in ns]",
            run.kvbench_version, run.run_id, row.label, row.repetition, phase.name, phase.kind, phase.unit
        ))
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1e6)
        .begin_log_with(&mut buf, &mut ser)
        .ok()?;
    drop(w);
    let mut text = String::from_utf8(buf).ok()?;
    let end_ms = crate::wall_ns(phase) / 1_000_000;
    for (i, iv) in phase.intervals.iter().enumerate() {
        if !kvbench_model::hdrcheck::is_v2(&iv.hdr) {
            continue;
        }
        let next = phase.intervals.get(i + 1).map(|n| n.t_ms).unwrap_or(end_ms.max(iv.t_ms + 1));
        let len = next.saturating_sub(iv.t_ms).max(1);
        // The writer's own line: start and length in seconds, max in milliseconds.
        let secs = |ms: u64| ms as f64 / 1000.0;
        let max_ms = iv.max_ns as f64 / 1e6;
        text.push_str(&format!("{:.3},{:.3},{max_ms:.3},{}\n", secs(iv.t_ms), secs(len), iv.hdr.trim()));
    }
    Some(text)
}
