//! The multi-get table by request size (article 001's): its layout, its cold cells and what
//! the cold cache, the settle before the eviction and the HTTP rows mean.

use kvbench_model::report_table::ReportTable;
use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

use super::placeholders::fill_row;
use super::{cell, ran, Place};

/// (keys per request, cold) of a multi-get phase.
fn shape(phase: &PhaseResult) -> Option<(u64, bool)> {
    (phase.kind == "multi-get" && phase.requests > 0)
        .then(|| (phase.ops / phase.requests, phase.cache.starts_with("cold")))
}

/// The row's multi-get of `keys` keys a request, cold or warm, that ran.
fn multi_get(row: &EngineResult, keys: u64, cold: bool) -> Option<&PhaseResult> {
    row.phases.iter().find(|p| ran(row, &p.name).is_some() && shape(p) == Some((keys, cold)))
}

/// The request sizes of every row's multi-get phases, smallest first.
fn request_sizes(run: &RunResult) -> Vec<u64> {
    let mut keys: Vec<u64> =
        run.engines.iter().flat_map(|e| e.phases.iter().filter_map(shape)).map(|(k, _)| k).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// `keys-by-engine`: a row per request size; per engine row, a column per declared column,
/// each reading the multi-get of that size in its `cache` (cold, or warm).
pub(super) fn keys_by_engine(table: &ReportTable, run: &RunResult) -> (Vec<String>, Vec<Vec<String>>) {
    let mut headers = vec![table.first_heading.clone()];
    for row in &run.engines {
        headers.extend(table.columns.iter().map(|c| fill_row(&c.heading, &row.label, None)));
    }
    let rows = request_sizes(run)
        .into_iter()
        .map(|keys| {
            let mut line = vec![keys.to_string()];
            for row in &run.engines {
                for column in &table.columns {
                    let cold = column.cache.as_deref() == Some("cold");
                    line.push(match multi_get(row, keys, cold) {
                        Some(phase) => cell(column, &Place { phase: Some(phase), ..Place::of(row) }, table, run).0,
                        None => "-".into(),
                    });
                }
            }
            line
        })
        .collect();
    (headers, rows)
}

/// A cold phase of one request is the first request after the eviction, on its own (the
/// article's one figure); a phase of several requests gives their mean and says so (only its
/// first request was cold).
pub(super) fn cold_request_ms(phase: &PhaseResult) -> Option<String> {
    let mean = format!("{:.2} ms", phase.latency.as_ref()?.mean_ns / 1e6);
    if phase.cache.starts_with("cold") && phase.requests > 1 {
        Some(format!("{mean} (mean of {})", phase.requests))
    } else {
        Some(mean)
    }
}

/// How the cache was made cold, from the first cold phase.
pub(super) fn cold_cache_method(run: &RunResult) -> String {
    let cold = run.engines.iter().flat_map(|e| &e.phases).find(|p| p.cache.starts_with("cold"));
    format!(
        "cold cache without a reboot: {}",
        cold.map(|p| p.cache.clone()).unwrap_or_else(|| "no cold phase in this run".into())
    )
}

/// Whether each row's store was on disk before its first eviction, as the article's server's
/// was: a settle phase (flush and compact) between the load and the first cold phase, else the
/// load's last writes sit in the memtable and WAL, which the reopen after the eviction writes
/// to a new file in the page cache, so the first cold request is not cold.
pub(super) fn settled_before_eviction(run: &RunResult) -> Option<String> {
    let settled_before_cold = |e: &EngineResult| {
        let cold = e.phases.iter().position(|p| p.cache.starts_with("cold"));
        let settle = e.phases.iter().position(|p| p.kind == "settle" && p.status == Status::Ok);
        matches!((settle, cold), (Some(s), Some(c)) if s < c)
    };
    let with_cold: Vec<&EngineResult> =
        run.engines.iter().filter(|e| e.phases.iter().any(|p| p.cache.starts_with("cold"))).collect();
    if with_cold.is_empty() {
        return None;
    }
    let unsettled: Vec<&str> = with_cold.iter().filter(|e| !settled_before_cold(e)).map(|e| e.label.as_str()).collect();
    Some(if unsettled.is_empty() {
        "each store was flushed and compacted (phase settle) before its first eviction, so the cold cells read the store's own files from the disk, as the article's server had its data on disk".into()
    } else {
        format!(
            "not settled before the first eviction: {}: the load's last writes were still in the memtable and WAL, which the reopen after the eviction writes to a new file the page cache holds, so the first cold cell of such a row is not cold",
            unsettled.join(", ")
        )
    })
}

/// What the figures show about HTTP: each http-* row against the in-process row of the same
/// store, per key count, cold and warm (not a claim fixed in advance).
pub(super) fn http_against_in_process(run: &RunResult) -> Vec<String> {
    let keys = request_sizes(run);
    let mut out = Vec::new();
    for http in run.engines.iter().filter(|e| e.engine.starts_with("http-")) {
        let Some(local) = run.engines.iter().find(|e| Some(e.engine.as_str()) == http.engine.strip_prefix("http-"))
        else {
            continue;
        };
        let mean = |e: &EngineResult, k: u64, cold: bool| multi_get(e, k, cold)?.latency.as_ref().map(|l| l.mean_ns);
        let ratios = |cold: bool| -> Vec<(u64, f64)> {
            keys.iter().filter_map(|&k| Some((k, mean(http, k, cold)? / mean(local, k, cold)?.max(1.0)))).collect()
        };
        let (cold, warm) = (ratios(true), ratios(false));
        if cold.is_empty() && warm.is_empty() {
            continue;
        }
        let show = |v: &[(u64, f64)]| v.iter().map(|(k, x)| format!("{k} keys {x:.2}x")).collect::<Vec<_>>().join(", ");
        let all: Vec<f64> = cold.iter().chain(&warm).map(|(_, x)| *x).collect();
        let verdict = if all.iter().all(|&x| x > 1.0) {
            "the HTTP row was slower at every size: the gap bounds what going through `kvbench serve` cost here"
        } else if all.iter().all(|&x| x < 1.0) {
            "the HTTP row was faster at every size, so the gap is not HTTP's cost: the server process (its own RocksDB open, block cache and threads) differs from the in-process row"
        } else {
            "the HTTP row was slower at some sizes and faster at others, so the gap between the rows is not HTTP's cost alone: one request per cold cell, and the server's RocksDB is its own open"
        };
        out.push(format!(
            "{} against {} (time ratio; below 1x the HTTP row was faster): cold {}; warm {}: {verdict}",
            http.label,
            local.label,
            if cold.is_empty() { "-".into() } else { show(&cold) },
            if warm.is_empty() { "-".into() } else { show(&warm) },
        ));
    }
    out
}
