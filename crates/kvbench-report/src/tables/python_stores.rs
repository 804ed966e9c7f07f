//! Computed cells and differences of LMDB, RocksDB and Speedb from Python (article 000's
//! table): the write's space and time, what the open per read cost, and why the stores' space
//! differs from the article's.

use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

use super::computed::{ratio_range, took};
use super::figures::minutes;
use super::ran;
use crate::human_bytes;

/// The size phase right after the load (the store closed there, its files measured), if any.
fn size_after_load(row: &EngineResult) -> Option<&PhaseResult> {
    let load = row.phases.iter().position(|p| p.name == "load")?;
    row.phases.get(load + 1).filter(|p| p.kind == "size" && p.status == Status::Ok)
}

/// What the store took right after the write's close (its size phase), else after the run.
pub(super) fn space_after_write(row: &EngineResult) -> String {
    match size_after_load(row) {
        Some(p) if p.space_bytes > 0 => human_bytes(p.space_bytes),
        _ if row.space_bytes > 0 => human_bytes(row.space_bytes),
        _ => "-".into(),
    }
}

/// The load and the close after it (the article's `with` block timed both), on the wall clock
/// as the article's timer; none for a row that opened read-only or as a secondary.
pub(super) fn write_time_with_close(row: &EngineResult) -> Option<String> {
    write_ns(row).filter(|_| opens_read_write(row)).map(|ns| minutes(ns / 1e9))
}

/// Load plus the close after it (ns of wall time).
fn write_ns(row: &EngineResult) -> Option<f64> {
    let load = ran(row, "load")?;
    Some((load.wall_ns + size_after_load(row).map_or(0, |p| p.wall_ns)) as f64)
}

/// Whether the row's reads opened the database read-write (results spell the mode `readwrite`
/// or `read-write`; older ones left it empty).
fn opens_read_write(row: &EngineResult) -> bool {
    matches!(row.open_mode.replace('-', "").to_lowercase().as_str(), "" | "readwrite")
}

fn any_phase<'a>(run: &'a RunResult, name: &str) -> Option<&'a PhaseResult> {
    run.engines.iter().find_map(|e| ran(e, name))
}

/// How much faster the same get is opened once than with an open per read.
pub(super) fn open_per_read_cost(run: &RunResult) -> String {
    let key = super::placeholders::fill("{hot_key}", run);
    let mut open_cost = Vec::new();
    for row in &run.engines {
        let per_open = ran(row, "article-method").and_then(|p| p.latency.as_ref());
        let once = ran(row, "hot-key-open-once").and_then(|p| p.latency.as_ref());
        if let (Some(per_open), Some(once)) = (per_open, once) {
            open_cost.push(per_open.mean_ns / once.mean_ns.max(1.0));
        }
    }
    format!(
        "the read columns time open + get of {key} + close, 1000 times on a hot cache (phase article-method), as the article did: {}",
        match ratio_range(&open_cost) {
            Some(x) => format!("opened once, the same get is {x} faster (phase hot-key-open-once), so the article timed open(), not get()"),
            None => "kvbench times the get alone in phase hot-key-open-once".into(),
        }
    )
}

/// Where the honest read latency is: the random-key phase.
pub(super) fn random_key_reads(run: &RunResult) -> Option<String> {
    let phase = any_phase(run, "get-1m").or_else(|| any_phase(run, "get-1000"))?;
    Some(format!(
        "one hot key stays in cache; random keys (phase {}) give the honest read latency, with percentiles",
        phase.name
    ))
}

/// The rows whose load batched its puts, where the article put one document at a time.
pub(super) fn load_batches(run: &RunResult) -> Option<String> {
    let batches: Vec<String> = run
        .engines
        .iter()
        .filter_map(|e| ran(e, "load").map(|p| format!("{} {}", e.label, p.batch)))
        .filter(|s| !s.ends_with(" 1"))
        .collect();
    (!batches.is_empty()).then(|| format!(
        "write time is the load phase; the article wrote one put per document, these rows batched puts per write (row, batch): {}",
        batches.join(", ")
    ))
}

/// One put per document against kvbench's batches of 1000, per row.
pub(super) fn one_put_against_batches(run: &RunResult) -> Option<String> {
    let batched: Vec<String> = run
        .engines
        .iter()
        .filter_map(|e| {
            let (one, batch) = (ran(e, "load").filter(|p| p.batch == 1)?, ran(e, "rewrite-batch-1000")?);
            Some(format!("{} {:.1}x", e.label, took(one) / took(batch).max(1.0)))
        })
        .collect();
    (!batched.is_empty()).then(|| {
        format!(
            "one put per document costs this much more than kvbench's batches of 1000 (phase rewrite-batch-1000): {}",
            batched.join(", ")
        )
    })
}

/// py-lmdb's rows: one commit per put (kvbench's honest row) beside the article's one
/// transaction (`transaction = "load"`), and what the one transaction saves.
pub(super) fn lmdb_one_transaction(run: &RunResult) -> Option<String> {
    let lmdb = |one: bool| {
        run.engines.iter().find(|e| {
            e.engine == "py-lmdb" && (e.options.get("transaction").and_then(|v| v.as_str()) == Some("load")) == one
        })
    };
    let per_put = lmdb(false).filter(|e| ran(e, "load").is_some_and(|p| p.batch == 1))?;
    let Some(one) = lmdb(true) else {
        return Some(format!("{} commits every put here; the article wrote LMDB in one transaction", per_put.label));
    };
    let ratio = write_ns(per_put).zip(write_ns(one)).map(|(x, y)| x / y.max(1.0));
    Some(format!(
        "{} commits every put (a put is stored once it returns); {} writes as the article did, every put in one transaction committed at the end of the load{}",
        per_put.label,
        one.label,
        ratio.map(|x| format!(": {x:.1}x faster")).unwrap_or_default()
    ))
}

/// Rows that store the article's typed keys and values.
pub(super) fn typed_keys(run: &RunResult) -> Option<String> {
    run.engines.iter().any(|e| e.options.get("keys").and_then(|v| v.as_str()) == Some("int")).then(|| {
        "rows with keys = int store the article's int keys and str values (the binding's typed encoding); the raw rows store the bytes".into()
    })
}

/// The article's "(read-only)" and "(secondary)" rows reopen a default row's database that way
/// for each read, unless a row itself opened another way.
pub(super) fn open_mode_rows(run: &RunResult) -> Option<String> {
    if !run.engines.iter().all(opens_read_write) {
        return Some("read-only and secondary rows open a database their own row loaded (write time not shown, as in the article), not the default row's".into());
    }
    run.engines.iter().any(reopened_per_mode).then(|| {
        "the (read-only) and (secondary) rows reopen the default row's own database that way for each read (phases article-method-read-only and article-method-secondary), as the article did; \"-\" where the binding lacks the mode".into()
    })
}

/// A RocksDB or Speedb default row that reads its database reopened read-only or as a secondary.
fn reopened_per_mode(row: &EngineResult) -> bool {
    let article_store = row.engine.contains("rocksdict") || row.engine.contains("speedict");
    let modes = ["article-method-read-only", "article-method-secondary"];
    article_store && row.label == row.engine && row.phases.iter().any(|p| modes.contains(&p.name.as_str()))
}

/// RocksDB's and Speedb's read-write open writes before it reads (a new MANIFEST, OPTIONS file,
/// WAL and info LOG, each fsynced), so its cells follow the disk's fsync latency: how far each
/// row's read-write open per read is from its read-only one.
pub(super) fn read_write_open_cost(run: &RunResult) -> Option<String> {
    let ratios: Vec<String> = run
        .engines
        .iter()
        .filter(|e| e.engine.contains("rocks") || e.engine.contains("speed"))
        .filter_map(|e| {
            let rw = ran(e, "article-method")?.latency.as_ref()?.mean_ns;
            let ro = ran(e, "article-method-read-only")?.latency.as_ref()?.mean_ns;
            Some(format!("{} {:.1}x", e.label, rw / ro.max(1.0)))
        })
        .collect();
    (!ratios.is_empty()).then(|| format!(
        "a RocksDB or Speedb read-write open writes before it reads (a new MANIFEST, OPTIONS file, WAL and info LOG, fsynced; the article's `with Rdict(path)` did the same), so its cells time the disk's fsync latency and move with the machine's load; read-write against read-only open, per read: {}",
        ratios.join(", ")
    ))
}

/// Where the space column was measured, and what the store held by the end of the run.
pub(super) fn where_space_was_measured(run: &RunResult) -> String {
    let grown: Vec<String> = run
        .engines
        .iter()
        .filter_map(|e| Some((e, size_after_load(e)?.space_bytes)))
        .filter(|(e, after)| *after > 0 && e.space_bytes as f64 > 1.05 * *after as f64)
        .map(|(e, after)| format!("{} {:.1}x", e.label, e.space_bytes as f64 / after as f64))
        .collect();
    let values = "values are generated with the article's distribution (JSON, 0-2000 random chars), not its files";
    if !run.engines.iter().any(|e| size_after_load(e).is_some()) {
        return format!("space is allocated blocks after the whole run's close (what du shows), not right after the write; {values}");
    }
    let mut line = "space is allocated blocks right after the write's close (phase size-after-load, what du shows), as the article measured it".to_string();
    if !grown.is_empty() {
        line.push_str(&format!(
            "; by the end of the run (reads' opens, secondary/, the batched rewrite) the stores took more: {}",
            grown.join(", ")
        ));
    }
    format!("{line}; {values}")
}

/// Speedb's space against RocksDB's, right after the write and at the end of the run: the two
/// take the same after the write, and Speedb more once the reads' read-write opens have run,
/// which is where the article's 1.1G against 1.0G compares.
pub(super) fn speedb_space_against_rocksdb(run: &RunResult) -> Option<String> {
    let default_row = |binding: &str| run.engines.iter().find(|e| e.engine == binding && e.label == e.engine);
    let (rocks, speedb) = (default_row("py-rocksdict")?, default_row("py-speedict")?);
    let after = |e: &EngineResult| size_after_load(e).map(|p| p.space_bytes).filter(|&b| b > 0);
    let (rocks_after, speedb_after) = (after(rocks)?, after(speedb)?);
    let (rocks_end, speedb_end) = (rocks.space_bytes.max(1), speedb.space_bytes);
    Some(format!(
        "Speedb against RocksDB (default rows): right after the write {} against {} ({:.2}x), by the end of the run, after the reads' read-write opens, {} against {} ({:.2}x); the article's du (1.1G against 1.0G) compares with the second (docs/methodology.md, \"Article 000: Speedb's space\")",
        human_bytes(speedb_after),
        human_bytes(rocks_after),
        speedb_after as f64 / rocks_after.max(1) as f64,
        human_bytes(speedb_end),
        human_bytes(rocks_end),
        speedb_end as f64 / rocks_end as f64
    ))
}

/// LMDB's space against the documents' bytes, and why the article's 1.1G is not reproduced.
pub(super) fn lmdb_space(run: &RunResult) -> Option<String> {
    let raw = run.plan.raw_bytes.max(1) as f64;
    let rows: Vec<String> = run
        .engines
        .iter()
        .filter(|e| e.engine.ends_with("lmdb"))
        .filter_map(|e| Some(format!("{} {:.2}x", e.label, size_after_load(e)?.space_bytes as f64 / raw)))
        .collect();
    (!rows.is_empty()).then(|| format!(
        "LMDB's rows take this much of the documents' bytes: {}; LMDB splits a full page in half even when keys arrive in order (only MDB_APPEND fills pages), so documents of about 1 KB leave its 4 KiB pages part-empty, and documents over about 2 KB take whole overflow pages: the article's 1.1G for about 1 GB of documents is below what that layout gives, and is not reproduced",
        rows.join(", ")
    ))
}
