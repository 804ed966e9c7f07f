//! Computed cells and differences of the Go stores' benchmarks (article 004's table): Bolt's
//! version in its row, what a pass is, the two ways of putting, sizes on disk and the Go
//! runtime's allocation counters.

use kvbench_model::result::{EngineResult, PhaseResult, RunResult};

use super::ran;
use crate::human_bytes;

/// The phase of the article's Bolt Put (the first load, every record in one transaction) and
/// of the other stores' (a pass of single Puts of the same values over the loaded database:
/// overwrites).
const FRESH: &str = "put-all-one-batch";

const OVERWRITE: &str = "put-all";

/// How the Get columns relate to the article's b.N average.
pub(super) fn passes_per_article_op(run: &RunResult) -> String {
    let passes = run.engines.iter().map(get_passes).fold(1.0, f64::max);
    if passes > 1.0 {
        format!("an article op is one pass over every record, averaged over b.N passes: the Get columns average {passes:.0} passes in one open (phase get-all-passes); the last column is the first pass after a reopen (phase get-all), which pays for cold caches inside the store")
    } else {
        "an article op is one pass over every record, averaged over b.N passes; here one pass, timed once".into()
    }
}

fn is_bolt(row: &EngineResult) -> bool {
    row.engine.contains("bolt")
}

/// Passes over every record a phase made (an update of 2 passes is 2 article ops).
fn passes_of(row: &EngineResult, phase: &PhaseResult) -> f64 {
    let records = ran(row, "get-all").or_else(|| ran(row, FRESH)).map(|q| q.ops).unwrap_or(0);
    if records == 0 {
        1.0
    } else {
        (phase.ops as f64 / records as f64).max(1.0)
    }
}

/// The passes the article's Get averaged over (phase get-all-passes against the single pass
/// get-all), 1 without both.
fn get_passes(row: &EngineResult) -> f64 {
    match (ran(row, "get-all-passes"), ran(row, "get-all")) {
        (Some(avg), Some(one)) if one.ops > 0 => (avg.ops as f64 / one.ops as f64).max(1.0),
        _ => 1.0,
    }
}

/// The row's name; Bolt rows name their library's version, which their allocations depend on.
pub(super) fn label_with_bolt_version(row: &EngineResult) -> String {
    let version = row
        .version
        .split_whitespace()
        .rfind(|w| w.starts_with('v') && w[1..].starts_with(|c: char| c.is_ascii_digit()));
    match version {
        Some(v) if is_bolt(row) => format!("{} {v}", row.label),
        _ => row.label.clone(),
    }
}

/// What the overwrite pass wrote: the article put the same list again, so a faithful pass is a
/// later load (every record's loaded value again); an update writes new values of new lengths,
/// which changes the work and the size on disk.
pub(super) fn overwrite_pass_values(run: &RunResult) -> Option<String> {
    let kinds: Vec<&str> = run.engines.iter().filter_map(|e| ran(e, OVERWRITE)).map(|p| p.kind.as_str()).collect();
    if kinds.is_empty() {
        None
    } else if kinds.iter().all(|k| *k == "load") {
        Some(format!("the overwrite pass (phase {OVERWRITE}) writes every record's value again, the same bytes, as the article put the same list again: a second load over the loaded database, in the first load's order"))
    } else {
        Some(format!("this result's overwrite pass (phase {OVERWRITE}) wrote new values (an update: each record's next version, of a new length) where the article put the same list again, so its Put time and the size on disk after it are not the article's method (the scenario now runs it as a second load of the same values)"))
    }
}

/// How far each store's pass of single Puts over the loaded database is from its first load
/// in one batch.
pub(super) fn single_puts_against_one_batch(run: &RunResult) -> Option<String> {
    let gap = |e: &EngineResult| {
        let (fresh, over) = (ran(e, FRESH)?, ran(e, OVERWRITE)?);
        let over_ns = over.elapsed_ns as f64 / passes_of(e, over);
        Some(format!("{} {:.2}x", e.label, over_ns / (fresh.elapsed_ns as f64).max(1.0)))
    };
    let gaps: Vec<String> = run.engines.iter().filter_map(gap).collect();
    (!gaps.is_empty()).then(|| {
        format!(
            "a pass of single Puts over the loaded database against the first load in one batch, per engine: {}",
            gaps.join(", ")
        )
    })
}

/// The records' mean size against the article's.
pub(super) fn record_size(run: &RunResult) -> Option<String> {
    (run.plan.unique_records > 0 && run.plan.raw_bytes > 0).then(|| {
        format!(
            "records average {:.0} bytes, key and value (the article's 100 000 records: 1 556 bytes)",
            run.plan.raw_bytes as f64 / run.plan.unique_records as f64
        )
    })
}

/// Records written by the puts of the run (every pass of both Put phases).
fn written(row: &EngineResult) -> u64 {
    [FRESH, OVERWRITE].iter().filter_map(|n| ran(row, n)).map(|p| p.ops).sum()
}

/// Size on disk as copies of the records' bytes, beside the article's; pogreb's and goleveldb's
/// sizes depend on what was written and when the files were measured, said per store.
pub(super) fn size_on_disk_against_records(run: &RunResult) -> Vec<String> {
    let (raw, unique) = (run.plan.raw_bytes, run.plan.unique_records);
    if raw == 0 || unique == 0 {
        return Vec::new();
    }
    let copies = |e: &EngineResult| e.space_bytes as f64 / raw as f64;
    let here: Vec<String> =
        run.engines.iter().filter(|e| e.space_bytes > 0).map(|e| format!("{} {:.2}x", e.label, copies(e))).collect();
    if here.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "size on disk over the records' key and value bytes ({}): {}; the article's over its 148 MB: Tokyo Cabinet 1.02x, goleveldb 0.63x, Bolt 1.51x, bbolt 1.50x, pebble 1.58x, pogreb 15.2x",
        human_bytes(raw),
        here.join(", ")
    )];
    for e in run.engines.iter().filter(|e| e.engine.contains("pogreb") && e.space_bytes > 0) {
        out.push(format!(
            "{}: pogreb appends every Put, an overwrite too, and frees nothing until Compact(), which neither kvbench nor the article calls, so its size counts the passes written: {:.1} here ({:.2}x); the go test run that printed the article's table alone wrote at least 9 (b.N = 1, then the reported 8) into a directory its benchmarks never emptied: the article's 15.2x is every pass written there",
            e.label,
            written(e) as f64 / unique as f64,
            copies(e)
        ));
    }
    for e in run.engines.iter().filter(|e| e.engine.contains("goleveldb") && e.space_bytes > 0) {
        out.push(format!(
            "{}: {:.2}x the records after {:.1} passes written, the article's 0.63x: goleveldb's snappy does not shrink these values (printable bytes cut at random from a pool: compacted to one copy they take more than the records' bytes), where the article's compressed to about 60%; and an overwritten copy stays until a compaction reaches it, which the article's Get runs (b.N passes, whose seeks trigger compactions) gave time to",
            e.label,
            copies(e),
            written(e) as f64 / unique as f64
        ));
    }
    out
}

/// Tokyo Cabinet's Put B/op: what Go counts is the binding's, never Tokyo Cabinet's own mallocs.
fn tokyo_cabinet_put_counters(run: &RunResult) -> String {
    let per_put: Vec<String> = run
        .engines
        .iter()
        .filter(|e| e.engine.contains("tokyocabinet"))
        .filter_map(|e| {
            let p = ran(e, OVERWRITE)?;
            let (bytes, mallocs) = (p.runtime.get("alloc_bytes")?, p.runtime.get("mallocs")?);
            let ops = p.ops.max(1) as f64;
            Some(format!("{} {:.1} B and {:.2} allocations", e.label, bytes / ops, mallocs / ops))
        })
        .collect();
    format!(
        "Tokyo Cabinet Put B/op counts only Go's heap, not Tokyo Cabinet's own mallocs in C; the article's 48 B and 2 allocations a Put were its binding's cgo pointer checks, which box the whole slice of each `&key[0]` argument (24 B) on the heap under Go 1.21, not under Go 1.26; kvbench's binding passes bare pointers: {} a Put here",
        if per_put.is_empty() { "no counters".to_string() } else { per_put.join(", ") }
    )
}

/// Why B/op and allocs/op differ from the article's beyond the method.
pub(super) fn go_allocation_counters(run: &RunResult) -> Vec<String> {
    let go_counters = run.engines.iter().any(|e| e.phases.iter().any(|p| p.runtime.contains_key("alloc_bytes")));
    if !go_counters {
        return vec!["B/op and allocs/op: this result has no Go runtime counters".into()];
    }
    let mut out = vec!["B/op and allocs/op are Go's runtime memory statistics around the phase, the worker's own reads and checks included".into()];
    if run.engines.iter().any(|e| e.engine.contains("tokyocabinet")) {
        out.push("Tokyo Cabinet Get B/op is far below the article's (1 690 B a get there): kvbench's binding copies each value into one reused buffer, where the article's returned a new Go slice per Get".into());
        out.push(tokyo_cabinet_put_counters(run));
    }
    if run.engines.iter().any(is_bolt) {
        out.push("Bolt's allocations depend on its version (bbolt v1.4.3 allocates about 4x more per Get than v1.5.0): the row names the version it ran".into());
    }
    out
}
