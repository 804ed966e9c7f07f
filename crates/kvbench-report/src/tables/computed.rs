//! The cells and differences a table names by `computed`: figures no declared metric gives (a
//! ratio between rows, a cell that depends on how a row was built), each function named after
//! what it computes. The names are kvbench-model's `COMPUTED_CELLS` and `COMPUTED_DIFFERENCES`.

use kvbench_model::result::{EngineResult, PhaseResult, RunResult};

use super::{dictionary, go_stores, multiget, postgres, python_stores};

/// A computed cell of `row`, reading `phase` (the cell's declared phase, where it has one).
pub(super) fn cell(name: &str, run: &RunResult, row: &EngineResult, phase: Option<&PhaseResult>) -> String {
    let text = match name {
        "space_after_write" => Some(python_stores::space_after_write(row)),
        "write_time_with_close" => python_stores::write_time_with_close(row),
        "fsync_on_off" => Some(postgres::fsync_on_off(row)),
        "rate_over_insert_at_same_sync" => phase.and_then(|p| postgres::rate_over_insert_at_same_sync(run, row, p)),
        "label_with_bolt_version" => Some(go_stores::label_with_bolt_version(row)),
        "cold_request_ms" => phase.and_then(multiget::cold_request_ms),
        // A result from a kvbench that knows more names: say so, do not guess.
        _ => Some(unknown(name)),
    };
    text.unwrap_or_else(|| "-".into())
}

/// The lines of a computed difference (none where the run has nothing to say).
pub(super) fn difference(name: &str, run: &RunResult) -> Vec<String> {
    let lines: Vec<String> = match name {
        "open_per_read_cost" => vec![python_stores::open_per_read_cost(run)],
        "random_key_reads" => python_stores::random_key_reads(run).into_iter().collect(),
        "load_batches" => python_stores::load_batches(run).into_iter().collect(),
        "one_put_against_batches" => python_stores::one_put_against_batches(run).into_iter().collect(),
        "lmdb_one_transaction" => python_stores::lmdb_one_transaction(run).into_iter().collect(),
        "typed_keys" => python_stores::typed_keys(run).into_iter().collect(),
        "open_mode_rows" => python_stores::open_mode_rows(run).into_iter().collect(),
        "read_write_open_cost" => python_stores::read_write_open_cost(run).into_iter().collect(),
        "where_space_was_measured" => vec![python_stores::where_space_was_measured(run)],
        "speedb_space_against_rocksdb" => python_stores::speedb_space_against_rocksdb(run).into_iter().collect(),
        "lmdb_space" => python_stores::lmdb_space(run).into_iter().collect(),
        "cold_cache_method" => vec![multiget::cold_cache_method(run)],
        "settled_before_eviction" => multiget::settled_before_eviction(run).into_iter().collect(),
        "http_against_in_process" => multiget::http_against_in_process(run),
        "insert_statements" => vec![postgres::insert_statements(run)],
        "open_per_read_against_once" => dictionary::open_per_read_against_once(run).into_iter().collect(),
        "cdb_builds" => dictionary::cdb_builds(run),
        "declared_mismatches" => dictionary::declared_mismatches(run),
        "memcached_bulk_against_per_key" => dictionary::memcached_bulk_against_per_key(run),
        "passes_per_article_op" => vec![go_stores::passes_per_article_op(run)],
        "overwrite_pass_values" => go_stores::overwrite_pass_values(run).into_iter().collect(),
        "single_puts_against_one_batch" => go_stores::single_puts_against_one_batch(run).into_iter().collect(),
        "record_size" => go_stores::record_size(run).into_iter().collect(),
        "size_on_disk_against_records" => go_stores::size_on_disk_against_records(run),
        "go_allocation_counters" => go_stores::go_allocation_counters(run),
        _ => vec![unknown(name)],
    };
    lines
}

/// The text of a computed name this kvbench does not implement.
pub(super) fn unknown(name: &str) -> String {
    format!("({name}: not computed by this kvbench)")
}

/// `lo`–`hi` of the ratios, or None when there are none.
pub(super) fn ratio_range(ratios: &[f64]) -> Option<String> {
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    if ratios.is_empty() {
        None
    } else if hi / lo < 1.05 {
        Some(format!("{lo:.0}x"))
    } else {
        Some(format!("{lo:.0}-{hi:.0}x"))
    }
}

/// A phase's time inside the engine calls: the figure repetitions are collapsed on (median).
pub(super) fn took(phase: &PhaseResult) -> f64 {
    phase.elapsed_ns as f64
}

/// Seconds as articles 002 and 003 gave them: three significant digits below a second.
pub(super) fn secs(ns: f64) -> String {
    super::figures::significant(ns / 1e9, 3) + " s"
}
