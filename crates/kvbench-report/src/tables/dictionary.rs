//! Differences of TinyCDB, QDBM and memcached's dictionary loops (article 003's table): the
//! open per read, TinyCDB's two builds, the declared mismatches and memcached's bulk read.

use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

use super::computed::{secs, took};
use super::ran;

/// memcached's all-key read as its client's get_multi did it.
const BULK: &str = "read-all-100x-bulk";

fn is_put_add(row: &EngineResult) -> bool {
    row.engine == "tinycdb" && row.options.get("put").and_then(|v| v.as_str()) == Some("add")
}

/// The article's open-per-read pattern against opened once, per row.
pub(super) fn open_per_read_against_once(run: &RunResult) -> Vec<String> {
    let per_open: Vec<String> = run
        .engines
        .iter()
        .filter_map(|e| {
            let (once, per_op) = (ran(e, "1key-10000x")?, ran(e, "1key-10000x-open-per-op")?);
            Some(format!(
                "{} {} opened once ({:.0}x less)",
                e.label,
                secs(took(once)),
                took(per_op) / took(once).max(1.0)
            ))
        })
        .collect();
    if per_open.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the 10000 1key Read cells time an open as a reader per read (the article's OREADER / load), so they measure open(); opened once, the same reads take: {}",
        per_open.join("; ")
    )]
}

/// TinyCDB: what the build holds and how far kvbench's all-key read is from the article's walk.
pub(super) fn cdb_builds(run: &RunResult) -> Vec<String> {
    let records = run.plan.records.max(1);
    let mut out = Vec::new();
    for e in run.engines.iter().filter(|e| e.engine == "tinycdb") {
        let (Some(load), Some(read)) = (ran(e, "load"), ran(e, "read-all-100x")) else { continue };
        let copies = load.ops / records;
        if !is_put_add(e) {
            out.push(cdb_replace_build(run, e, load, copies));
            continue;
        }
        let walked = load.ops * (read.ops / records);
        out.push(format!(
            "{}: its 100 Write is one put_add build of {copies} copies ({} entries), as the article's; the article's all-key read opened that file for each pass and walked every entry in file order with each() ({walked} in all), which no kvbench phase does (its scans go in key order and check each record once): this row's AllKey cell is a get per record and pass ({} gets), not the article's walk, which a get per key does not predict; bench/cdb_walk.sh walks the same file with TinyCDB's cdb_seqinit/cdb_seqnext beside it (its figures in docs/methodology.md)",
            e.label,
            load.ops,
            read.ops,
        ));
    }
    out
}

/// A TinyCDB build where a repeated key zero-fills its old copy so the last value wins, against
/// the article's put_add build that keeps every copy.
fn cdb_replace_build(run: &RunResult, row: &EngineResult, load: &PhaseResult, copies: u64) -> String {
    let add = run
        .engines
        .iter()
        .filter(|a| a.engine == row.engine && a.options.get("put").and_then(|v| v.as_str()) == Some("add"));
    let beside = add
        .filter_map(|a| Some((a, ran(a, "load")?)))
        .map(|(a, p)| format!(": {} against {} for {}", secs(took(load)), secs(took(p)), a.label))
        .next()
        .unwrap_or_default();
    format!(
        "{}: its 100 Write is one build of {copies} copies where a repeated key zero-fills its old copy in place (CDB_PUT_REPLACE0) so the last value wins, where the article kept every copy with put_add{beside}",
        row.label
    )
}

/// memcached: the bulk read is the article's; the get per key is kvbench's extra figure.
pub(super) fn memcached_bulk_against_per_key(run: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    for e in run.engines.iter().filter(|e| e.engine == "memcached") {
        let (Some(bulk), Some(each)) = (ran(e, BULK), ran(e, "read-all-100x")) else { continue };
        out.push(format!(
            "{}'s 100 AllKey Read is one multi-get of {} keys a pass (phase {BULK}), as the article's get_multi; one get per key (phase read-all-100x) takes {}, {:.1}x",
            e.label,
            bulk.ops / bulk.requests.max(1),
            secs(took(each)),
            took(each) / took(bulk).max(1.0)
        ));
    }
    out
}

/// Rows declared to fail verification (`expect = "mismatch"`): how many reads did.
pub(super) fn declared_mismatches(run: &RunResult) -> Vec<String> {
    let declared = run.engines.iter().filter(|e| e.status == Status::Expected);
    declared
        .map(|e| {
            let wrong: u64 = e.phases.iter().map(|p| p.mismatches).sum();
            format!("{}: {wrong} reads returned a repeated name's first copy, declared expected", e.label)
        })
        .collect()
}
