//! The article's own table, for a run of one of the five article scenarios (`article-000` ...
//! `article-004`): the columns, units and method the article used, filled from kvbench's
//! result, then one line per difference saying why kvbench's honest figure is not the same.
//! The article's own headline figures are quoted beside them (numbers only), so a reader can
//! put the two side by side.

use kvbench_model::result::{EngineResult, Latency, PhaseResult, RunResult, Status};
use kvbench_model::spec::HotKey;

use crate::{collapse, human_bytes, Section};

/// The article's table for an article scenario's result; None for any other scenario.
pub fn article_section(r: &RunResult) -> Option<Section> {
    let n = article_number(&r.scenario)?;
    let reps = r.workload.get("repetitions").and_then(|v| v.as_u64()).unwrap_or(1) as u32;
    let (r, _) = collapse(r);
    let a = match n {
        0 => a000(&r),
        1 => a001(&r),
        2 => a002(&r, reps),
        3 => a003(&r, reps),
        _ => a004(&r),
    };
    Some(a.section(n))
}

/// `article-00N` at the start of a scenario name (`article-002-postgres-copy-1m` is 2).
fn article_number(scenario: &str) -> Option<u8> {
    let rest = scenario.strip_prefix("article-00")?;
    let n = rest.chars().next()?.to_digit(10)? as u8;
    let end = rest[1..].chars().next();
    (n <= 4 && matches!(end, None | Some('-'))).then_some(n)
}

/// One article's table before it becomes a Section.
struct Article {
    title: &'static str,
    method: String,
    headline: &'static str,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    differences: Vec<String>,
}

impl Article {
    fn section(self, n: u8) -> Section {
        let mut note =
            format!("{}\nthe article's own figures: {}\nwhy kvbench's figures differ:", self.method, self.headline);
        for d in &self.differences {
            note.push_str("\n- ");
            note.push_str(d);
        }
        let best = vec![None; self.headers.len()];
        // Every column of the article's table matters equally: a narrow terminal wraps it.
        let priority = vec![0; self.headers.len()];
        Section {
            title: format!("Article {n:03} as the article measured it: {}", self.title),
            note,
            headers: self.headers,
            rows: self.rows,
            best,
            priority,
        }
    }
}

fn strings(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

/// A phase that ran (ok, or failed only as the row declared).
fn ran<'a>(e: &'a EngineResult, name: &str) -> Option<&'a PhaseResult> {
    e.phases.iter().find(|p| p.name == name && matches!(p.status, Status::Ok | Status::Expected))
}

fn any_phase<'a>(r: &'a RunResult, name: &str) -> Option<&'a PhaseResult> {
    r.engines.iter().find_map(|e| ran(e, name))
}

/// A phase's time inside the engine calls: the figure repetitions are collapsed on (median).
fn took(p: &PhaseResult) -> f64 {
    p.elapsed_ns as f64
}

fn ms(ns: f64) -> String {
    format!("{:.2} ms", ns / 1e6)
}

/// Seconds, as article 002 and 003 gave them, with three significant digits below a second
/// (a loop of 100 reads takes microseconds once the open is out of it).
fn secs(ns: f64) -> String {
    let s = ns / 1e9;
    if s >= 1.0 || s <= 0.0 {
        return format!("{s:.3} s");
    }
    let decimals = (2.0 - s.log10().floor()) as usize;
    format!("{s:.decimals$} s")
}

/// Minutes and seconds, as article 000 wrote its write times.
fn min_sec(ns: f64) -> String {
    let s = ns / 1e9;
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m {:.0}s", (s / 60.0).floor(), s % 60.0)
    }
}

fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

fn space(e: &EngineResult) -> String {
    if e.space_bytes > 0 {
        human_bytes(e.space_bytes)
    } else {
        "-".into()
    }
}

/// `lo`–`hi` of the ratios, or None when there are none.
fn ratio_range(ratios: &[f64]) -> Option<String> {
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

// ---- 000: LMDB vs RocksDB vs Speedb from Python ----

/// The size phase right after the load (the store closed there, its files measured), if any.
fn size_after_load(e: &EngineResult) -> Option<&PhaseResult> {
    let load = e.phases.iter().position(|p| p.name == "load")?;
    e.phases.get(load + 1).filter(|p| p.kind == "size" && p.status == Status::Ok)
}

/// Article 000's space: what the store took right after the write's close (its size phase),
/// else after the whole run.
fn a000_space(e: &EngineResult) -> String {
    match size_after_load(e) {
        Some(p) if p.space_bytes > 0 => human_bytes(p.space_bytes),
        _ => space(e),
    }
}

/// Article 000's write time: the load and the close after it (the article's `with` block timed
/// both), on the wall clock as the article's timer.
fn a000_write(e: &EngineResult) -> Option<String> {
    a000_write_ns(e).filter(|_| opens_read_write(e)).map(min_sec)
}

/// The record the article-method phase read (the article: 123456 of 1 000 000), from the
/// scenario as run and the record count.
fn a000_hot_key(r: &RunResult) -> String {
    let phases = r.workload.get("phase").and_then(|p| p.as_array());
    let hot = phases
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(|n| n.as_str()) == Some("article-method"))
        .and_then(|p| serde_json::from_value::<HotKey>(p.get("hot_key")?.clone()).ok());
    match hot.and_then(|h| h.record(r.plan.records)) {
        Some(k) => format!("key {k}"),
        None => "one hot key".into(),
    }
}

fn a000(r: &RunResult) -> Article {
    let mut rows = Vec::new();
    let mut open_cost = Vec::new();
    let key = a000_hot_key(r);
    for e in &r.engines {
        let read = ran(e, "article-method").and_then(|p| p.latency.as_ref());
        rows.push(a000_row(e.label.clone(), a000_space(e), a000_write(e), read));
        rows.extend(a000_open_modes(e));
        let once = ran(e, "hot-key-open-once").and_then(|p| p.latency.as_ref());
        if let (Some(per_open), Some(once)) = (read, once) {
            open_cost.push(per_open.mean_ns / once.mean_ns.max(1.0));
        }
    }
    let mut differences = vec![format!(
        "the read columns time open + get of {key} + close, 1000 times on a hot cache (phase article-method), as the article did: {}",
        match ratio_range(&open_cost) {
            Some(x) => format!("opened once, the same get is {x} faster (phase hot-key-open-once), so the article timed open(), not get()"),
            None => "kvbench times the get alone in phase hot-key-open-once".into(),
        }
    )];
    if let Some(p) = any_phase(r, "get-1m").or_else(|| any_phase(r, "get-1000")) {
        differences.push(format!(
            "one hot key stays in cache; random keys (phase {}) give the honest read latency, with percentiles",
            p.name
        ));
    }
    let batches: Vec<String> = r
        .engines
        .iter()
        .filter_map(|e| ran(e, "load").map(|p| format!("{} {}", e.label, p.batch)))
        .filter(|s| !s.ends_with(" 1"))
        .collect();
    if !batches.is_empty() {
        differences.push(format!(
            "write time is the load phase; the article wrote one put per document, these rows batched puts per write (row, batch): {}",
            batches.join(", ")
        ));
    }
    differences.extend(a000_writes(r));
    if !r.engines.iter().all(opens_read_write) {
        differences.push("read-only and secondary rows open a database their own row loaded (write time not shown, as in the article), not the default row's".into());
    } else if r.engines.iter().any(|e| !a000_open_modes(e).is_empty()) {
        differences.push("the (read-only) and (secondary) rows reopen the default row's own database that way for each read (phases article-method-read-only and article-method-secondary), as the article did; \"-\" where the binding lacks the mode".into());
    }
    differences.extend(a000_read_write_opens(r));
    differences.push(a000_space_line(r));
    differences.extend(a000_speedb_space(r));
    differences.extend(a000_lmdb_space(r));
    differences.push("the article's write time also read each document from its own JSON file (a directory listing, then an open, read and parse per document) inside the timed loop; kvbench derives each document in memory, so its write time is the store's alone".into());
    Article {
        title: "space, write time, read min/avg/max",
        method: format!("one row per store and mode; write: every document loaded, then the store closed; read: min/avg/max ms of 1000 × (open, get {key}, close)"),
        headline: "lmdb 0.31 ms, rocksdb 6.32 ms, speedb 10.44 ms average read; lmdb 1m 26s, rocksdb 1m 29s to write",
        headers: strings(&["name", "space", "write time", "read min", "read avg", "read max"]),
        rows,
        differences,
    }
}

fn a000_row(label: String, space: String, write: Option<String>, read: Option<&Latency>) -> Vec<String> {
    vec![
        label,
        space,
        or_dash(write),
        or_dash(read.map(|l| ms(l.min_ns as f64))),
        or_dash(read.map(|l| ms(l.mean_ns))),
        or_dash(read.map(|l| ms(l.max_ns as f64))),
    ]
}

/// The article's "(read-only)" and "(secondary)" rows: its RocksDB and Speedb default databases
/// reopened that way for each read; a mode the binding lacks reads "-", as in the article.
fn a000_open_modes(e: &EngineResult) -> Vec<Vec<String>> {
    let article_store = e.engine.contains("rocksdict") || e.engine.contains("speedict");
    if !article_store || e.label != e.engine {
        return Vec::new();
    }
    [("read-only", "article-method-read-only"), ("secondary", "article-method-secondary")]
        .iter()
        .filter(|(_, phase)| e.phases.iter().any(|p| p.name == *phase))
        .map(|(mode, phase)| {
            let read = ran(e, phase).and_then(|p| p.latency.as_ref());
            a000_row(format!("{} ({mode})", e.label), a000_space(e), None, read)
        })
        .collect()
}

/// RocksDB's and Speedb's read-write open writes before it reads (a new MANIFEST, OPTIONS file,
/// WAL and info LOG, each fsynced), so its cells follow the disk's fsync latency: how far each
/// row's read-write open per read is from its read-only one.
fn a000_read_write_opens(r: &RunResult) -> Vec<String> {
    let ratios: Vec<String> = r
        .engines
        .iter()
        .filter(|e| e.engine.contains("rocks") || e.engine.contains("speed"))
        .filter_map(|e| {
            let rw = ran(e, "article-method")?.latency.as_ref()?.mean_ns;
            let ro = ran(e, "article-method-read-only")?.latency.as_ref()?.mean_ns;
            Some(format!("{} {:.1}x", e.label, rw / ro.max(1.0)))
        })
        .collect();
    if ratios.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "a RocksDB or Speedb read-write open writes before it reads (a new MANIFEST, OPTIONS file, WAL and info LOG, fsynced; the article's `with Rdict(path)` did the same), so its cells time the disk's fsync latency and move with the machine's load; read-write against read-only open, per read: {}",
        ratios.join(", ")
    )]
}

/// Whether the row's reads opened the database read-write (results spell the mode `readwrite`
/// or `read-write`; older ones left it empty).
fn opens_read_write(e: &EngineResult) -> bool {
    matches!(e.open_mode.replace('-', "").to_lowercase().as_str(), "" | "readwrite")
}

/// Where the space column was measured, and what the store held by the end of the run.
fn a000_space_line(r: &RunResult) -> String {
    let grown: Vec<String> = r
        .engines
        .iter()
        .filter_map(|e| Some((e, size_after_load(e)?.space_bytes)))
        .filter(|(e, after)| *after > 0 && e.space_bytes as f64 > 1.05 * *after as f64)
        .map(|(e, after)| format!("{} {:.1}x", e.label, e.space_bytes as f64 / after as f64))
        .collect();
    let values = "values are generated with the article's distribution (JSON, 0-2000 random chars), not its files";
    if !r.engines.iter().any(|e| size_after_load(e).is_some()) {
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
fn a000_speedb_space(r: &RunResult) -> Option<String> {
    let default_row = |binding: &str| r.engines.iter().find(|e| e.engine == binding && e.label == e.engine);
    let (rocks, speedb) = (default_row("py-rocksdict")?, default_row("py-speedict")?);
    let after = |e: &EngineResult| size_after_load(e).map(|p| p.space_bytes).filter(|&b| b > 0);
    let (ra, sa) = (after(rocks)?, after(speedb)?);
    let (re, se) = (rocks.space_bytes.max(1), speedb.space_bytes);
    Some(format!(
        "Speedb against RocksDB (default rows): right after the write {} against {} ({:.2}x), by the end of the run, after the reads' read-write opens, {} against {} ({:.2}x); the article's du (1.1G against 1.0G) compares with the second (docs/methodology.md, \"Article 000: Speedb's space\")",
        human_bytes(sa),
        human_bytes(ra),
        sa as f64 / ra.max(1) as f64,
        human_bytes(se),
        human_bytes(re),
        se as f64 / re as f64
    ))
}

/// LMDB's space against the documents' bytes, and why the article's 1.1G is not reproduced.
fn a000_lmdb_space(r: &RunResult) -> Option<String> {
    let raw = r.plan.raw_bytes.max(1) as f64;
    let rows: Vec<String> = r
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

/// Differences in how article 000's rows wrote: batching, LMDB's one transaction, typed keys.
fn a000_writes(r: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    let batched: Vec<String> = r
        .engines
        .iter()
        .filter_map(|e| {
            let (one, batch) = (ran(e, "load").filter(|p| p.batch == 1)?, ran(e, "rewrite-batch-1000")?);
            Some(format!("{} {:.1}x", e.label, took(one) / took(batch).max(1.0)))
        })
        .collect();
    if !batched.is_empty() {
        out.push(format!(
            "one put per document costs this much more than kvbench's batches of 1000 (phase rewrite-batch-1000): {}",
            batched.join(", ")
        ));
    }
    out.extend(a000_lmdb_transactions(r));
    if r.engines.iter().any(|e| e.options.get("keys").and_then(|v| v.as_str()) == Some("int")) {
        out.push("rows with keys = int store the article's int keys and str values (the binding's typed encoding); the raw rows store the bytes".into());
    }
    out
}

/// py-lmdb's rows: one commit per put (kvbench's honest row) beside the article's one
/// transaction (`transaction = "load"`), and what the one transaction saves.
fn a000_lmdb_transactions(r: &RunResult) -> Vec<String> {
    let lmdb = |one: bool| {
        r.engines.iter().find(|e| {
            e.engine == "py-lmdb" && (e.options.get("transaction").and_then(|v| v.as_str()) == Some("load")) == one
        })
    };
    let per_put = lmdb(false).filter(|e| ran(e, "load").is_some_and(|p| p.batch == 1));
    let mut out = vec!["write time is the load plus the close after it (phase size-after-load), on the wall clock, as the article's `with` block timed both".to_string()];
    match (per_put, lmdb(true)) {
        (Some(a), Some(b)) => {
            let ratio = a000_write_ns(a).zip(a000_write_ns(b)).map(|(x, y)| x / y.max(1.0));
            out.push(format!(
                "{} commits every put (a put is stored once it returns); {} writes as the article did, every put in one transaction committed at the end of the load{}",
                a.label,
                b.label,
                ratio.map(|x| format!(": {x:.1}x faster")).unwrap_or_default()
            ));
        }
        (Some(a), None) => {
            out.push(format!("{} commits every put here; the article wrote LMDB in one transaction", a.label))
        }
        _ => {}
    }
    out
}

/// Load plus the close after it (ns of wall time).
fn a000_write_ns(e: &EngineResult) -> Option<f64> {
    let load = ran(e, "load")?;
    Some((load.wall_ns + size_after_load(e).map_or(0, |p| p.wall_ns)) as f64)
}

/// Which sync setting the rows ran with, naming the rows that differ from the first.
fn sync_line(r: &RunResult) -> String {
    let first = r.engines.first().map(|e| e.sync.as_str()).unwrap_or("none");
    let other: Vec<String> =
        r.engines.iter().filter(|e| e.sync != first).map(|e| format!("{} sync = {}", e.label, e.sync)).collect();
    if other.is_empty() {
        format!("every row ran with sync = {first}")
    } else {
        format!("rows ran with sync = {first} except {}", other.join(", "))
    }
}

// ---- 001: RocksServer multi-get ----

/// (keys per request, cold) of a multi-get phase.
fn mget_shape(p: &PhaseResult) -> Option<(u64, bool)> {
    (p.kind == "multi-get" && p.requests > 0).then(|| (p.ops / p.requests, p.cache.starts_with("cold")))
}

/// The phase behind a cell: the engine's multi-get of `k` keys a request, cold or warm.
fn a001_phase(e: &EngineResult, k: u64, cold: bool) -> Option<&PhaseResult> {
    e.phases.iter().find(|p| ran(e, &p.name).is_some() && mget_shape(p) == Some((k, cold)))
}

/// A cell: a cold phase of one request is the first request after the eviction, on its own
/// (the article's one figure); a phase of several requests gives their mean and says so (only
/// its first request was cold).
fn a001_cell(p: Option<&PhaseResult>) -> String {
    let Some((p, l)) = p.and_then(|p| Some((p, p.latency.as_ref()?))) else { return "-".into() };
    if p.cache.starts_with("cold") && p.requests > 1 {
        format!("{} (mean of {})", ms(l.mean_ns), p.requests)
    } else {
        ms(l.mean_ns)
    }
}

fn a001(r: &RunResult) -> Article {
    let mut keys: Vec<u64> =
        r.engines.iter().flat_map(|e| e.phases.iter().filter_map(mget_shape)).map(|(k, _)| k).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut headers = vec!["keys per multi-get".to_string()];
    for e in &r.engines {
        headers.push(format!("{} cold, first request", e.label));
        headers.push(format!("{} warm", e.label));
    }
    let rows = keys
        .iter()
        .map(|&k| {
            let mut row = vec![k.to_string()];
            for e in &r.engines {
                row.push(a001_cell(a001_phase(e, k, true)));
                row.push(a001_cell(a001_phase(e, k, false)));
            }
            row
        })
        .collect();
    let cold = r.engines.iter().flat_map(|e| &e.phases).find(|p| p.cache.starts_with("cold"));
    let mut differences = vec![format!(
        "cold cache without a reboot: {}",
        cold.map(|p| p.cache.clone()).unwrap_or_else(|| "no cold phase in this run".into())
    )];
    differences.push(format!(
        "one disk, this machine's ({} on {}), not the article's SSD and HDD",
        r.environment.filesystem, r.environment.data_dir
    ));
    differences.extend(a001_settled(r));
    differences.push("a cold cell is the first request after the eviction, timed on its own (the article's one time per key count from its PHP client); a warm cell is the mean over the warm phase's requests (p50/p99 in the phase tables)".into());
    differences.extend(a001_http(r, &keys));
    Article {
        title: "ms per multi-get of random keys, by key count",
        method: format!(
            "{} keys (the article: 1 000 000) of 50±5-byte values; each cell: time of one multi-get of N random keys (ms), the first request after the page cache was evicted, and warm",
            r.plan.unique_records
        ),
        headline: "SSD 4.7 ms (50 keys), 12.6 ms (300), 29.5 ms (1000), 124.6 ms (10 000), 2346.6 ms (100 000)",
        headers,
        rows,
        differences,
    }
}

/// Whether each row's store was on disk before its first eviction, as the article's server's
/// was: a settle phase (flush and compact) between the load and the first cold phase, else the
/// load's last writes sit in the memtable and WAL, which the reopen after the eviction writes
/// to a new file in the page cache, so the first cold request is not cold.
fn a001_settled(r: &RunResult) -> Option<String> {
    let settled_before_cold = |e: &EngineResult| {
        let cold = e.phases.iter().position(|p| p.cache.starts_with("cold"));
        let settle = e.phases.iter().position(|p| p.kind == "settle" && p.status == Status::Ok);
        matches!((settle, cold), (Some(s), Some(c)) if s < c)
    };
    let with_cold: Vec<&EngineResult> =
        r.engines.iter().filter(|e| e.phases.iter().any(|p| p.cache.starts_with("cold"))).collect();
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
fn a001_http(r: &RunResult, keys: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for http in r.engines.iter().filter(|e| e.engine.starts_with("http-")) {
        let Some(local) = r.engines.iter().find(|e| Some(e.engine.as_str()) == http.engine.strip_prefix("http-"))
        else {
            continue;
        };
        let mean = |e: &EngineResult, k: u64, cold: bool| a001_phase(e, k, cold)?.latency.as_ref().map(|l| l.mean_ns);
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

// ---- 002: PostgreSQL INSERT vs COPY ----

fn is_insert(e: &EngineResult) -> bool {
    e.options.get("load").and_then(|v| v.as_str()) == Some("insert")
}

fn a002(r: &RunResult, reps: u32) -> Article {
    let insert_rate = |sync: &str| {
        r.engines.iter().find(|e| is_insert(e) && e.sync == sync).and_then(|e| ran(e, "load")).map(|p| p.ops_per_sec)
    };
    let rows = r
        .engines
        .iter()
        .map(|e| {
            let load = ran(e, "load");
            let ratio = match (load, insert_rate(&e.sync)) {
                (Some(p), Some(base)) if base > 0.0 => format!("{:.1}x", p.ops_per_sec / base),
                _ => "-".into(),
            };
            vec![
                e.label.clone(),
                if e.sync == "none" { "off".into() } else { "on".into() },
                or_dash(load.map(|p| p.ops.to_string())),
                // Both from the wall clock, as the article's gettimeofday pair.
                or_dash(load.map(|p| secs(p.wall_ns as f64))),
                or_dash(load.map(|p| format!("{:.0}", p.ops_per_sec))),
                ratio,
            ]
        })
        .collect();
    let differences = vec![
        format!(
            "the article ran with fsync = off and did not say so in its figures: rows with fsync on are the durable ones; {}",
            a002_durability(r)
        ),
        format!(
            "the server's state (checkpoints, WAL) swings the COPY/INSERT ratio; this is the median of {reps} repetition(s), the spread is in the phase tables"
        ),
        format!("kvbench's table has a primary key (the article's had none); {}", a002_connection(r)),
        a002_statements(r),
        "seconds and rows/s are both the load phase's wall time (one transaction of INSERTs or one COPY), as the article's gettimeofday pair timed it".into(),
    ];
    let table = setting(r, "table").unwrap_or_else(|| "a table (k text primary key, v text)".into());
    Article {
        title: "rows per second, INSERT in one transaction vs COPY FROM STDIN",
        method: format!(
            "{} rows, each the article's (int, text, double) values as one line in COPY's text form, stored as the value of {table}; seconds for the whole load, rows/s, and the ratio to INSERT at the same fsync",
            r.plan.records
        ),
        headline: "100 000 rows: INSERT 13.38 s (7 500 rows/s), COPY 0.46 s (220 000 rows/s), about 30x; COPY 240 000 rows/s at 1 000 000 rows",
        headers: strings(&["method", "fsync", "rows", "seconds", "rows/s", "x INSERT"]),
        rows,
        differences,
    }
}

/// How the INSERT rows sent their statements, from each row's `one-row writes` setting.
fn a002_statements(r: &RunResult) -> String {
    let rows: Vec<String> = r
        .engines
        .iter()
        .filter(|e| is_insert(e))
        .filter_map(|e| Some(format!("{}: {}", e.label, e.settings.get("one-row writes")?)))
        .collect();
    let theirs = "the article's client sent every INSERT with its SQL text and parameters, so the server parsed and planned it for each row";
    if rows.is_empty() {
        return format!("{theirs}; the INSERT rows here do not say how they sent theirs (a result from before the `prepared` option)");
    }
    format!("{theirs}; kvbench's INSERT rows: {}", rows.join("; "))
}

/// A setting the rows report (the first row that has it).
fn setting(r: &RunResult, name: &str) -> Option<String> {
    r.engines.iter().find_map(|e| e.settings.get(name).cloned())
}

/// How the client reached the server, from the rows' `connection` setting (older results:
/// `access`).
fn a002_connection(r: &RunResult) -> String {
    match setting(r, "connection").or_else(|| setting(r, "access")) {
        Some(c) if c.starts_with("TCP") => format!(
            "kvbench's client (Rust, each row's `client` setting) connects over loopback TCP ({c}, a password login), as the article's OCaml client connected to localhost"
        ),
        Some(c) if c.contains("Unix socket") => "kvbench's client (Rust, each row's `client` setting) connects over the server's Unix socket, where the article's OCaml client connected over TCP to localhost: each INSERT's round trip here skips the loopback TCP stack (connection = \"tcp\" takes the article's way)".into(),
        Some(c) => format!("kvbench's client (Rust, each row's `client` setting) reached the server by {c}, not OCaml"),
        None => "kvbench's client is Rust (each row's `client` setting), not OCaml".into(),
    }
}

/// What `fsync` on/off meant for the server, as the rows read it back.
fn a002_durability(r: &RunResult) -> String {
    let mut pairs: Vec<String> = r
        .engines
        .iter()
        .filter_map(|e| {
            Some(format!(
                "fsync={} with synchronous_commit={}",
                e.settings.get("fsync")?,
                e.settings.get("synchronous_commit")?
            ))
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    if pairs.is_empty() {
        "fsync=off rows also set synchronous_commit=off (sync = none sets both), fsync=on rows keep both on".into()
    } else {
        format!("the rows ran {} (sync = none sets both off)", pairs.join(", "))
    }
}

// ---- 003: TinyCDB vs QDBM vs memcached ----

/// The article's columns and the phase each is read from; memcached's all-key read is the bulk
/// phase, as its client's get_multi was.
const A003_COLUMNS: [(&str, &str); 4] = [
    ("100 Write", "load"),
    ("100 AllKey Read", "read-all-100x"),
    ("100 1key Read", "1key-100x"),
    ("10000 1key Read", "1key-10000x"),
];
const A003_BULK: &str = "read-all-100x-bulk";

fn is_memcached(e: &EngineResult) -> bool {
    e.engine == "memcached"
}

/// The phase a column of the article's table reads for this engine: memcached's all-key read
/// is the bulk read (its client's get_multi); the one-key reads of the stores that open a file
/// are the open-per-read phases (the article's scripts opened the file as a reader for every
/// read), memcached's the opened-once ones (its client connected once a run).
fn a003_phase(e: &EngineResult, phase: &str) -> String {
    match phase {
        "read-all-100x" if is_memcached(e) => A003_BULK.into(),
        "1key-100x" | "1key-10000x" if !is_memcached(e) => format!("{phase}{A003_PER_READ}"),
        _ => phase.into(),
    }
}

/// The suffix of the phases that open the store for every read.
const A003_PER_READ: &str = "-open-per-op";

fn a003_cell(e: &EngineResult, phase: &str) -> String {
    let phase = a003_phase(e, phase);
    if e.phases.iter().any(|p| p.name == phase && p.status == Status::NotApplicable) {
        return "n/a".into();
    }
    // The article walked a put_add file's every copy; a get per key is not that method.
    let other_method = phase == "read-all-100x" && is_put_add(e);
    or_dash(
        ran(e, &phase).map(|p| if other_method { format!("{} (get per key)", secs(took(p))) } else { secs(took(p)) }),
    )
}

fn is_put_add(e: &EngineResult) -> bool {
    e.engine == "tinycdb" && e.options.get("put").and_then(|v| v.as_str()) == Some("add")
}

fn a003(r: &RunResult, reps: u32) -> Article {
    let rows = r
        .engines
        .iter()
        .map(|e| {
            let mut row = vec![e.label.clone()];
            row.extend(A003_COLUMNS.iter().map(|(_, phase)| a003_cell(e, phase)));
            row
        })
        .collect();
    let mut differences = vec![
        "the article's seconds include starting perl and loading the module in every run; these time the loops alone: Write and AllKey Read in one open, the 1key reads with an open as a reader around every read for the stores that open a file (phases 1key-100x-open-per-op and 1key-10000x-open-per-op), as the article's scripts did, and in one connection for memcached, as its client did".into(),
    ];
    differences.extend(a003_open_per_read(r));
    differences.push(format!("the article averaged 3 runs of `time`; this is the median of {reps} repetition(s)"));
    differences.extend(a003_cdb(r));
    for e in r.engines.iter().filter(|e| e.status == Status::Expected) {
        let wrong: u64 = e.phases.iter().map(|p| p.mismatches).sum();
        differences
            .push(format!("{}: {wrong} reads returned a repeated name's first copy, declared expected", e.label));
    }
    differences.extend(a003_memcached(r));
    let mut headers = vec!["Type".to_string()];
    headers.extend(A003_COLUMNS.iter().map(|(h, _)| h.to_string()));
    Article {
        title: "seconds for the article's loops",
        method: "seconds for: writing the dictionary 100 times (phase load, 100 passes), reading every key 100 times (read-all-100x; memcached: read-all-100x-bulk), one key 100 and 10 000 times with an open per read (1key-*-open-per-op; memcached: one connection, 1key-100x and 1key-10000x)".into(),
        headline: "100 Write: TinyCDB 0.945 s, QDBM 3.233 s, memcached 37.446 s; 100 AllKey Read: 24.44 s, 2.84 s, 11.39 s; 10000 1key Read: 1.60 s, 0.81 s, 1.45 s",
        headers,
        rows,
        differences,
    }
}

/// The article's open-per-read pattern against opened once, per row.
fn a003_open_per_read(r: &RunResult) -> Vec<String> {
    let per_open: Vec<String> = r
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
fn a003_cdb(r: &RunResult) -> Vec<String> {
    let records = r.plan.records.max(1);
    let mut out = Vec::new();
    for e in r.engines.iter().filter(|e| e.engine == "tinycdb") {
        let (Some(load), Some(read)) = (ran(e, "load"), ran(e, "read-all-100x")) else { continue };
        let copies = load.ops / records;
        if !is_put_add(e) {
            out.push(a003_cdb_replace(r, e, load, copies));
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
fn a003_cdb_replace(r: &RunResult, e: &EngineResult, load: &PhaseResult, copies: u64) -> String {
    let add = r
        .engines
        .iter()
        .filter(|a| a.engine == e.engine && a.options.get("put").and_then(|v| v.as_str()) == Some("add"));
    let beside = add
        .filter_map(|a| Some((a, ran(a, "load")?)))
        .map(|(a, p)| format!(": {} against {} for {}", secs(took(load)), secs(took(p)), a.label))
        .next()
        .unwrap_or_default();
    format!(
        "{}: its 100 Write is one build of {copies} copies where a repeated key zero-fills its old copy in place (CDB_PUT_REPLACE0) so the last value wins, where the article kept every copy with put_add{beside}",
        e.label
    )
}

/// memcached: the bulk read is the article's; the get per key is kvbench's extra figure.
fn a003_memcached(r: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    for e in r.engines.iter().filter(|e| is_memcached(e)) {
        let (Some(bulk), Some(each)) = (ran(e, A003_BULK), ran(e, "read-all-100x")) else { continue };
        out.push(format!(
            "{}'s 100 AllKey Read is one multi-get of {} keys a pass (phase {A003_BULK}), as the article's get_multi; one get per key (phase read-all-100x) takes {}, {:.1}x",
            e.label,
            bulk.ops / bulk.requests.max(1),
            secs(took(each)),
            took(each) / took(bulk).max(1.0)
        ));
    }
    out
}

// ---- 004: Go benchmarks ----

/// The phase of the article's Bolt Put (the first load, every record in one transaction) and
/// of the other stores' (a pass of single Puts of the same values over the loaded database:
/// overwrites).
const A004_FRESH: &str = "put-all-one-batch";
const A004_OVERWRITE: &str = "put-all";

/// How the Get columns relate to the article's b.N average.
fn a004_passes(r: &RunResult) -> String {
    let passes = r.engines.iter().map(|e| a004_get(e).1).fold(1.0, f64::max);
    if passes > 1.0 {
        format!("an article op is one pass over every record, averaged over b.N passes: the Get columns average {passes:.0} passes in one open (phase get-all-passes); the last column is the first pass after a reopen (phase get-all), which pays for cold caches inside the store")
    } else {
        "an article op is one pass over every record, averaged over b.N passes; here one pass, timed once".into()
    }
}

fn is_bolt(e: &EngineResult) -> bool {
    e.engine.contains("bolt")
}

/// The phase that did the article's Put for this engine: Bolt's b.N = 1 run loaded an empty
/// file in one transaction; the others' reported runs put every record again, one at a time.
fn a004_put(e: &EngineResult) -> Option<&PhaseResult> {
    ran(e, if is_bolt(e) { A004_FRESH } else { A004_OVERWRITE })
}

/// Passes over every record a phase made (an update of 2 passes is 2 article ops).
fn a004_passes_of(e: &EngineResult, p: &PhaseResult) -> f64 {
    let records = ran(e, "get-all").or_else(|| ran(e, A004_FRESH)).map(|q| q.ops).unwrap_or(0);
    if records == 0 {
        1.0
    } else {
        (p.ops as f64 / records as f64).max(1.0)
    }
}

/// ns/op, B/op, allocs/op per pass (an article "op" is a pass over every record), averaged
/// over the phase's `passes` passes.
fn go_bench(p: Option<&PhaseResult>, passes: f64) -> [String; 3] {
    let counter = |k: &str| p.and_then(|p| p.runtime.get(k)).map(|v| format!("{:.0}", v / passes));
    [
        or_dash(p.map(|p| format!("{:.0}", p.elapsed_ns as f64 / passes))),
        or_dash(counter("alloc_bytes")),
        or_dash(counter("mallocs")),
    ]
}

/// A phase's ns per pass over every record.
fn a004_ns(e: &EngineResult, name: &str) -> String {
    or_dash(ran(e, name).map(|p| format!("{:.0}", p.elapsed_ns as f64 / a004_passes_of(e, p))))
}

/// The Get the article averaged over b.N passes (phase get-all-passes, with how many passes),
/// else the single pass.
fn a004_get(e: &EngineResult) -> (Option<&PhaseResult>, f64) {
    let single = ran(e, "get-all");
    match (ran(e, "get-all-passes"), single) {
        (Some(avg), Some(one)) if one.ops > 0 => (Some(avg), (avg.ops as f64 / one.ops as f64).max(1.0)),
        _ => (single, 1.0),
    }
}

/// The row's name; Bolt rows name their library's version, which their allocations depend on.
fn a004_name(e: &EngineResult) -> String {
    let version =
        e.version.split_whitespace().rfind(|w| w.starts_with('v') && w[1..].starts_with(|c: char| c.is_ascii_digit()));
    match version {
        Some(v) if is_bolt(e) => format!("{} {v}", e.label),
        _ => e.label.clone(),
    }
}

fn a004_row(e: &EngineResult) -> Vec<String> {
    let mut row = vec![a004_name(e)];
    let put = a004_put(e);
    row.extend(go_bench(put, put.map(|p| a004_passes_of(e, p)).unwrap_or(1.0)));
    let (get, passes) = a004_get(e);
    row.extend(go_bench(get, passes));
    row.push(space(e));
    row.push(or_dash(ran(e, "get-all").map(|p| format!("{:.0}", p.elapsed_ns as f64))));
    row.push(a004_ns(e, A004_FRESH));
    row.push(a004_ns(e, A004_OVERWRITE));
    row
}

fn a004(r: &RunResult) -> Article {
    let rows = r.engines.iter().map(a004_row).collect();
    let mut differences = vec![
        a004_passes(r),
        "Put follows what the article's go test reported per engine: Bolt's b.N = 1 run, the first load into an empty file with every record in one transaction (phase put-all-one-batch); the others' b.N run, every record put again with the same value over the loaded database one Put at a time, i.e. overwrites (phase put-all, one pass where go test averaged its b.N passes); the last two columns give every engine both ways".into(),
        "Get reads a settled database in the order the records were written, as the article's list did: the store is closed and reopened after the puts (cache = reopen, page cache kept) and reads replay the load's order (distribution = load-order)".into(),
    ];
    differences.extend(a004_same_values(r));
    differences.extend(a004_put_gaps(r));
    differences.extend(a004_sizes(r));
    differences.extend(a004_allocations(r));
    differences.push(format!(
        "size on disk is allocated blocks after close (what du shows), after the same puts as the article's (one fresh load, then the list again); {}; the article's Bolt fsynced each commit, its other stores did not",
        sync_line(r)
    ));
    Article {
        title: "ns/op, B/op, allocs/op and size on disk",
        method: "go test -bench style: an op is a pass that puts (or gets and checks) every record; bytes and allocations per op; size of the files on disk".into(),
        headline: "100 000 records: Tokyo Cabinet Put 0.40 s/op, Get 0.27 s/op; goleveldb Put 7.33 s/op; BoltDB Put 42.5 s/op (4.1 GB/op), Get 0.09 s/op; sizes TC 152M, goleveldb 94M, Bolt 224M",
        headers: strings(&[
            "engine",
            "Put ns/op",
            "Put B/op",
            "Put allocs/op",
            "Get ns/op",
            "Get B/op",
            "Get allocs/op",
            "size on disk",
            "Get ns, one pass",
            "Put ns, first load in one batch",
            "Put ns/pass, one Put each (overwrites)",
        ]),
        rows,
        differences,
    }
}

/// What the overwrite pass wrote: the article put the same list again, so a faithful pass is a
/// later load (every record's loaded value again); an update writes new values of new lengths,
/// which changes the work and the size on disk.
fn a004_same_values(r: &RunResult) -> Option<String> {
    let kinds: Vec<&str> = r.engines.iter().filter_map(|e| ran(e, A004_OVERWRITE)).map(|p| p.kind.as_str()).collect();
    if kinds.is_empty() {
        None
    } else if kinds.iter().all(|k| *k == "load") {
        Some(format!("the overwrite pass (phase {A004_OVERWRITE}) writes every record's value again, the same bytes, as the article put the same list again: a second load over the loaded database, in the first load's order"))
    } else {
        Some(format!("this result's overwrite pass (phase {A004_OVERWRITE}) wrote new values (an update: each record's next version, of a new length) where the article put the same list again, so its Put time and the size on disk after it are not the article's method (the scenario now runs it as a second load of the same values)"))
    }
}

/// How far each store's Put in the article's method is from the other method, and the size of
/// the records against the article's.
fn a004_put_gaps(r: &RunResult) -> Vec<String> {
    let gap = |e: &EngineResult| {
        let (fresh, over) = (ran(e, A004_FRESH)?, ran(e, A004_OVERWRITE)?);
        let over_ns = over.elapsed_ns as f64 / a004_passes_of(e, over);
        Some(format!("{} {:.2}x", e.label, over_ns / (fresh.elapsed_ns as f64).max(1.0)))
    };
    let gaps: Vec<String> = r.engines.iter().filter_map(gap).collect();
    let mut out = Vec::new();
    if !gaps.is_empty() {
        out.push(format!(
            "a pass of single Puts over the loaded database against the first load in one batch, per engine: {}",
            gaps.join(", ")
        ));
    }
    if r.plan.unique_records > 0 && r.plan.raw_bytes > 0 {
        out.push(format!(
            "records average {:.0} bytes, key and value (the article's 100 000 records: 1 556 bytes)",
            r.plan.raw_bytes as f64 / r.plan.unique_records as f64
        ));
    }
    out
}

/// Records written by the puts of the run (every pass of both Put phases).
fn a004_written(e: &EngineResult) -> u64 {
    [A004_FRESH, A004_OVERWRITE].iter().filter_map(|n| ran(e, n)).map(|p| p.ops).sum()
}

/// Size on disk as copies of the records' bytes, beside the article's; pogreb's and goleveldb's
/// sizes depend on what was written and when the files were measured, said per store.
fn a004_sizes(r: &RunResult) -> Vec<String> {
    let (raw, unique) = (r.plan.raw_bytes, r.plan.unique_records);
    if raw == 0 || unique == 0 {
        return Vec::new();
    }
    let copies = |e: &EngineResult| e.space_bytes as f64 / raw as f64;
    let here: Vec<String> =
        r.engines.iter().filter(|e| e.space_bytes > 0).map(|e| format!("{} {:.2}x", e.label, copies(e))).collect();
    if here.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "size on disk over the records' key and value bytes ({}): {}; the article's over its 148 MB: Tokyo Cabinet 1.02x, goleveldb 0.63x, Bolt 1.51x, bbolt 1.50x, pebble 1.58x, pogreb 15.2x",
        human_bytes(raw),
        here.join(", ")
    )];
    for e in r.engines.iter().filter(|e| e.engine.contains("pogreb") && e.space_bytes > 0) {
        out.push(format!(
            "{}: pogreb appends every Put, an overwrite too, and frees nothing until Compact(), which neither kvbench nor the article calls, so its size counts the passes written: {:.1} here ({:.2}x); the go test run that printed the article's table alone wrote at least 9 (b.N = 1, then the reported 8) into a directory its benchmarks never emptied: the article's 15.2x is every pass written there",
            e.label,
            a004_written(e) as f64 / unique as f64,
            copies(e)
        ));
    }
    for e in r.engines.iter().filter(|e| e.engine.contains("goleveldb") && e.space_bytes > 0) {
        out.push(format!(
            "{}: {:.2}x the records after {:.1} passes written, the article's 0.63x: goleveldb's snappy does not shrink these values (printable bytes cut at random from a pool: compacted to one copy they take more than the records' bytes), where the article's compressed to about 60%; and an overwritten copy stays until a compaction reaches it, which the article's Get runs (b.N passes, whose seeks trigger compactions) gave time to",
            e.label,
            copies(e),
            a004_written(e) as f64 / unique as f64
        ));
    }
    out
}

/// Tokyo Cabinet's Put B/op: what Go counts is the binding's, never Tokyo Cabinet's own mallocs.
fn a004_tokyocabinet_put(r: &RunResult) -> String {
    let per_put: Vec<String> = r
        .engines
        .iter()
        .filter(|e| e.engine.contains("tokyocabinet"))
        .filter_map(|e| {
            let p = ran(e, A004_OVERWRITE)?;
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
fn a004_allocations(r: &RunResult) -> Vec<String> {
    let go_counters = r.engines.iter().any(|e| e.phases.iter().any(|p| p.runtime.contains_key("alloc_bytes")));
    if !go_counters {
        return vec!["B/op and allocs/op: this result has no Go runtime counters".into()];
    }
    let mut out = vec!["B/op and allocs/op are Go's runtime memory statistics around the phase, the worker's own reads and checks included".into()];
    if r.engines.iter().any(|e| e.engine.contains("tokyocabinet")) {
        out.push("Tokyo Cabinet Get B/op is far below the article's (1 690 B a get there): kvbench's binding copies each value into one reused buffer, where the article's returned a new Go slice per Get".into());
        out.push(a004_tokyocabinet_put(r));
    }
    if r.engines.iter().any(is_bolt) {
        out.push("Bolt's allocations depend on its version (bbolt v1.4.3 allocates about 4x more per Get than v1.5.0): the row names the version it ran".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvbench_model::result::Latency;

    fn lat(mean_ms: f64) -> Option<Latency> {
        let ns = (mean_ms * 1e6) as u64;
        Some(Latency { min_ns: ns / 2, mean_ns: mean_ms * 1e6, p50_ns: ns, max_ns: ns * 3, ..Default::default() })
    }

    fn ph(name: &str, kind: &str, elapsed_ms: f64, mean_ms: f64) -> PhaseResult {
        let elapsed_ns = (elapsed_ms * 1e6) as u64;
        PhaseResult {
            name: name.into(),
            kind: kind.into(),
            ops: 1000,
            requests: 1000,
            elapsed_ns,
            wall_ns: elapsed_ns,
            ops_per_sec: 1000.0 / (elapsed_ms / 1e3),
            latency: lat(mean_ms),
            batch: 1,
            cache: "warm".into(),
            ..Default::default()
        }
    }

    fn row(label: &str, engine: &str, phases: Vec<PhaseResult>) -> EngineResult {
        EngineResult {
            label: label.into(),
            engine: engine.into(),
            open_mode: "readwrite".into(),
            sync: "none".into(),
            space_bytes: 3 << 20,
            phases,
            ..Default::default()
        }
    }

    fn run(scenario: &str, engines: Vec<EngineResult>) -> RunResult {
        RunResult { scenario: scenario.into(), engines, ..Default::default() }
    }

    fn section(r: &RunResult) -> Section {
        article_section(r).expect("an article scenario")
    }

    #[test]
    fn only_article_scenarios_get_a_section() {
        assert_eq!(article_number("article-002-postgres-copy-1m"), Some(2));
        assert_eq!(article_number("article-000-small"), Some(0));
        assert_eq!(article_number("article-004"), Some(4));
        for other in ["ycsb-a", "article-005-x", "article-0001", "quick", "article-00"] {
            assert_eq!(article_number(other), None, "{other}");
        }
        assert!(article_section(&run("ycsb-a", vec![])).is_none());
    }

    #[test]
    fn a000_reads_are_the_open_per_read_phase_and_the_difference_says_by_how_much() {
        let mut rdb = row(
            "py-rocksdict",
            "py-rocksdict",
            vec![
                ph("load", "load", 90_000.0, 0.1),
                ph("article-method", "get", 6320.0, 6.0),
                ph("hot-key-open-once", "get", 2.0, 0.002),
            ],
        );
        rdb.phases[0].batch = 1000;
        let mut ro = row(
            "py-rocksdict (read-only)",
            "py-rocksdict",
            vec![ph("load", "load", 1.0, 1.0), ph("article-method", "get", 1.0, 3.0)],
        );
        ro.open_mode = "readonly".into();
        let s = section(&run("article-000-python-lmdb-rocksdb-speedb", vec![rdb, ro]));
        assert_eq!(s.headers, ["name", "space", "write time", "read min", "read avg", "read max"]);
        assert_eq!(s.rows[0], ["py-rocksdict", "3.0 MiB", "1m 30s", "3.00 ms", "6.00 ms", "18.00 ms"]);
        assert_eq!(s.rows[1][2], "-", "a read-only row has no write time, as in the article");
        assert!(s.note.contains("3000x faster"), "{}", s.note);
        assert!(s.note.contains("(row, batch): py-rocksdict 1000"), "{}", s.note);
        assert!(s.note.contains("read-only and secondary rows"), "{}", s.note);
        assert!(!s.note.contains("one put per document costs"), "no rewrite phase, no ratio");
        assert!(s.title.starts_with("Article 000"));
    }

    #[test]
    fn a000_read_only_and_secondary_rows_come_from_the_default_rows_database() {
        let mut secondary = ph("article-method-secondary", "get", 1.0, 5.0);
        secondary.status = Status::NotApplicable;
        let phases = vec![
            ph("load", "load", 90_000.0, 0.1),
            ph("article-method", "get", 6320.0, 6.0),
            ph("article-method-read-only", "get", 3650.0, 3.0),
            secondary,
        ];
        let rdb = row("py-speedict", "py-speedict", phases.clone());
        let raw = row("py-speedict (raw)", "py-speedict", phases);
        let s = section(&run("article-000-python-lmdb-rocksdb-speedb", vec![rdb, raw]));
        let names: Vec<&str> = s.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, ["py-speedict", "py-speedict (read-only)", "py-speedict (secondary)", "py-speedict (raw)"]);
        assert_eq!(s.rows[1], ["py-speedict (read-only)", "3.0 MiB", "-", "1.50 ms", "3.00 ms", "9.00 ms"]);
        assert_eq!(s.rows[2][3..], ["-", "-", "-"], "a mode the binding lacks reads -, as in the article");
        assert!(s.note.contains("reopen the default row's own database"), "{}", s.note);
        let rw = "read-write against read-only open, per read: py-speedict 2.0x, py-speedict (raw) 2.0x";
        assert!(s.note.contains(rw), "what the read-write open's writes cost, per row: {}", s.note);
    }

    #[test]
    fn a000_puts_one_put_per_document_beside_batches() {
        let mut rdb = row(
            "py-rocksdict",
            "py-rocksdict",
            vec![ph("load", "load", 90_000.0, 0.1), ph("rewrite-batch-1000", "update", 30_000.0, 30.0)],
        );
        rdb.options.insert("keys".into(), serde_json::json!("int"));
        let lmdb = row("py-lmdb", "py-lmdb", vec![ph("load", "load", 1000.0, 0.1)]);
        let s = section(&run("article-000-python-lmdb-rocksdb-speedb", vec![rdb, lmdb]));
        assert!(s.note.contains("(phase rewrite-batch-1000): py-rocksdict 3.0x"), "{}", s.note);
        assert!(s.note.contains("py-lmdb commits every put"), "{}", s.note);
        assert!(s.note.contains("keys = int"), "{}", s.note);
        assert!(!s.note.contains("(row, batch)"), "every load was one put per document: {}", s.note);
    }

    #[test]
    fn a000_cells_come_from_the_phases_their_headings_name() {
        let size = PhaseResult { space_bytes: 1100 << 20, ..ph("size-after-load", "size", 4_000.0, 0.0) };
        let phases = vec![
            ph("load", "load", 82_000.0, 0.08),
            size,
            ph("article-method", "get", 310.0, 0.31),
            ph("hot-key-open-once", "get", 1.0, 0.001),
        ];
        let per_put = EngineResult { space_bytes: 2200 << 20, ..row("py-lmdb", "py-lmdb", phases.clone()) };
        let mut one = row("py-lmdb (one transaction)", "py-lmdb", phases);
        one.options.insert("transaction".into(), serde_json::json!("load"));
        one.phases[0].wall_ns = 36_000_000_000;
        let mut r = run("article-000-python-lmdb-rocksdb-speedb", vec![per_put, one]);
        r.plan.records = 1000;
        r.workload = serde_json::json!({ "phase": [{ "name": "article-method", "hot_key": "12.3456%" }] });
        let s = section(&r);
        // space: the size phase after the load, not the row's size after the whole run
        assert_eq!(s.rows[0][1], "1.1 GiB");
        // write: the load and the close after it, on the wall clock (82 s + 4 s)
        assert_eq!(s.rows[0][2], "1m 26s");
        assert_eq!(s.rows[1][2], "40.0s");
        // reads: the open-per-read phase, not the phase that opened once
        assert_eq!(s.rows[0][3..], ["0.15 ms", "0.31 ms", "0.93 ms"]);
        assert!(s.note.contains("py-lmdb 2.0x"), "the end-of-run size is named: {}", s.note);
        assert!(s.note.contains("committed at the end of the load: 2.1x faster"), "{}", s.note);
        assert!(s.note.contains("get key 123,") && s.note.contains("get of key 123 +"), "{}", s.note);
        // LMDB's space against the documents' bytes, from the size phase (1.1 GiB of 1 GiB).
        let mut r = r.clone();
        r.plan.raw_bytes = 1 << 30;
        let s = section(&r);
        assert!(s.note.contains("documents' bytes: py-lmdb 1.07x, py-lmdb (one transaction) 1.07x"), "{}", s.note);
        assert!(s.note.contains("its own JSON file"), "{}", s.note);
        // The (read-only) row reopens the default row's database: the same space cell.
        let size = PhaseResult { space_bytes: 1000 << 20, ..ph("size-after-load", "size", 1.0, 0.0) };
        let ro = ph("article-method-read-only", "get", 3650.0, 3.65);
        let phases = vec![ph("load", "load", 1.0, 0.1), size, ro];
        let rdb = EngineResult { space_bytes: 1430 << 20, ..row("py-rocksdict", "py-rocksdict", phases) };
        let s = section(&run("article-000-python-lmdb-rocksdb-speedb", vec![rdb]));
        assert_eq!(s.rows[1][..2], ["py-rocksdict (read-only)", "1000.0 MiB"]);
        assert!(!s.note.contains("123456"), "the hot key follows the record count: {}", s.note);
    }

    /// Issue 45 point 6: Speedb's space beside RocksDB's, after the write and at the end.
    #[test]
    fn regression_a000_speedb_space_after_the_write_and_after_the_reads() {
        let size = |mib: u64| PhaseResult { space_bytes: mib << 20, ..ph("size-after-load", "size", 1.0, 0.0) };
        let store = |name: &str, end: u64| EngineResult {
            space_bytes: end << 20,
            ..row(name, name, vec![ph("load", "load", 1.0, 0.1), size(1010), ph("article-method", "get", 1.0, 1.0)])
        };
        let r = run(
            "article-000-python-lmdb-rocksdb-speedb",
            vec![store("py-rocksdict", 1033), store("py-speedict", 1114)],
        );
        let s = section(&r);
        let line = "right after the write 1010.0 MiB against 1010.0 MiB (1.00x), by the end of the run, after the reads' read-write opens, 1.1 GiB against 1.0 GiB (1.08x)";
        assert!(s.note.contains(line), "{}", s.note);
        assert_eq!(s.rows[1][1], "1010.0 MiB", "the space cell is the one after the write");
    }

    #[test]
    fn a000_without_a_size_phase_says_space_is_after_the_whole_run() {
        let e = row("lmdb", "lmdb", vec![ph("load", "load", 1000.0, 0.1), ph("article-method", "get", 1.0, 1.0)]);
        let s = section(&run("article-000-python-lmdb-rocksdb-speedb", vec![e]));
        assert_eq!(s.rows[0][1], "3.0 MiB");
        assert!(s.note.contains("after the whole run's close"), "{}", s.note);
        assert!(s.note.contains("one hot key"), "no hot key in the workload: {}", s.note);
    }

    fn mget(name: &str, keys: u64, requests: u64, cold: bool, mean_ms: f64) -> PhaseResult {
        PhaseResult {
            ops: keys * requests,
            requests,
            cache: if cold { "cold (evicted: posix_fadvise)".into() } else { "warm".into() },
            ..ph(name, "multi-get", 100.0, mean_ms)
        }
    }

    #[test]
    fn a001_cells_come_from_the_phases_their_headings_name() {
        let phases = |scale: f64| {
            vec![
                ph("load", "load", 1.0, 1.0),
                mget("mget-50", 50, 1, true, 4.7 * scale),
                mget("mget-1000", 1000, 1, true, 29.5 * scale),
                mget("mget-50-warm", 50, 200, false, 0.5 * scale),
            ]
        };
        let http = row("http-rocksdb", "http-rocksdb", phases(1.0));
        let mut local = row("rocksdb", "rocksdb", phases(2.0));
        local.phases[3].latency = lat(0.25);
        let s = section(&run("article-001-http-multiget", vec![http, local]));
        assert_eq!(
            s.headers,
            [
                "keys per multi-get",
                "http-rocksdb cold, first request",
                "http-rocksdb warm",
                "rocksdb cold, first request",
                "rocksdb warm"
            ]
        );
        assert_eq!(s.rows[0], strings(&["50", "4.70 ms", "0.50 ms", "9.40 ms", "0.25 ms"]));
        assert_eq!(s.rows[1], strings(&["1000", "29.50 ms", "-", "59.00 ms", "-"]));
        assert!(s.note.contains("cold (evicted: posix_fadvise)"), "{}", s.note);
        assert!(s.note.contains("cold 50 keys 0.50x, 1000 keys 0.50x; warm 50 keys 2.00x"), "{}", s.note);
        assert!(s.note.contains("slower at some sizes and faster at others"), "{}", s.note);
        assert!(!s.note.contains("what HTTP costs"), "no claim the figures do not make: {}", s.note);
    }

    /// Issue 45 point 3: the cold cells are cold only when the store was on disk before the
    /// first eviction; the note names a row whose load was not settled.
    #[test]
    fn regression_a001_names_rows_not_settled_before_the_first_eviction() {
        let settle = PhaseResult { ops: 0, requests: 0, latency: None, ..ph("settle", "settle", 500.0, 0.0) };
        let phases = |settled: bool| {
            let mut v = vec![ph("load", "load", 1.0, 1.0)];
            v.extend(settled.then(|| settle.clone()));
            v.push(mget("mget-50", 50, 1, true, 4.7));
            v
        };
        let both = run(
            "article-001-http-multiget",
            vec![row("http-rocksdb", "http-rocksdb", phases(true)), row("rocksdb", "rocksdb", phases(true))],
        );
        let s = section(&both);
        assert!(s.note.contains("flushed and compacted (phase settle) before its first eviction"), "{}", s.note);
        assert_eq!(s.rows[0][1], "4.70 ms", "the cold cell is the cold phase, not the settle");
        let one = run(
            "article-001-http-multiget",
            vec![row("http-rocksdb", "http-rocksdb", phases(false)), row("rocksdb", "rocksdb", phases(true))],
        );
        let s = section(&one);
        assert!(s.note.contains("not settled before the first eviction: http-rocksdb:"), "{}", s.note);
    }

    #[test]
    fn a001_a_cold_phase_of_several_requests_says_its_cell_is_a_mean() {
        let e = row("rocksdb", "rocksdb", vec![mget("mget-50", 50, 20, true, 4.7)]);
        let s = section(&run("article-001-http-multiget", vec![e]));
        assert_eq!(s.rows[0][1], "4.70 ms (mean of 20)", "only the first of 20 requests was cold");
    }

    #[test]
    fn a002_ratio_is_against_insert_at_the_same_fsync() {
        let pg = |label: &str, load: &str, sync: &str, ms: f64| {
            let mut e = row(label, "postgres", vec![ph("load", "load", ms, 0.01)]);
            e.options.insert("load".into(), serde_json::json!(load));
            e.sync = sync.into();
            e
        };
        let r = run(
            "article-002-postgres-copy",
            vec![
                pg("INSERT fsync=on", "insert", "commit", 1000.0),
                pg("COPY fsync=on", "copy-text", "commit", 50.0),
                pg("INSERT fsync=off", "insert", "none", 500.0),
                pg("COPY fsync=off", "copy-text", "none", 50.0),
            ],
        );
        let s = section(&r);
        assert_eq!(s.rows[1], ["COPY fsync=on", "on", "1000", "0.0500 s", "20000", "20.0x"]);
        assert_eq!(s.rows[3][5], "10.0x");
        assert_eq!(s.rows[0][5], "1.0x");
        assert!(s.note.contains("median of 1 repetition"), "{}", s.note);
    }

    #[test]
    fn a002_cells_come_from_the_load_phases_wall_clock_and_the_rows_settings() {
        let mut load = ph("load", "load", 460.0, 0.004);
        // Time inside the calls (elapsed) is less than the wall time: the cells use the wall.
        (load.ops, load.elapsed_ns, load.wall_ns, load.ops_per_sec) = (100_000, 360_000_000, 500_000_000, 200_000.0);
        let mut e = row("COPY fsync=off", "postgres", vec![load, ph("verify", "scan", 50.0, 50.0)]);
        e.sync = "none".into();
        e.options.insert("load".into(), serde_json::json!("copy-text"));
        for (k, v) in [
            ("access", "Unix socket"),
            ("table", "kvbench_kv (k text PRIMARY KEY, v text)"),
            ("fsync", "off"),
            ("synchronous_commit", "off"),
        ] {
            e.settings.insert(k.into(), v.into());
        }
        let mut r = run("article-002-postgres-copy", vec![e]);
        r.plan.records = 100_000;
        let s = section(&r);
        assert_eq!(s.rows[0], ["COPY fsync=off", "off", "100000", "0.500 s", "200000", "-"]);
        assert!(
            s.note.contains("100000 rows") && s.note.contains("kvbench_kv (k text PRIMARY KEY, v text)"),
            "{}",
            s.note
        );
        assert!(s.note.contains("fsync=off with synchronous_commit=off"), "{}", s.note);
        assert!(s.note.contains("Unix socket") && !s.note.contains("over loopback TCP"), "{}", s.note);
        // A row that connected over TCP says so, from its own `connection` setting.
        let mut r = r.clone();
        r.engines[0].settings.insert("connection".into(), "TCP 127.0.0.1:41234".into());
        let s = section(&r);
        assert!(
            s.note.contains("connects over loopback TCP (TCP 127.0.0.1:41234") && !s.note.contains("Unix socket"),
            "{}",
            s.note
        );
        // An INSERT row says how it sent its statements, from its own setting.
        r.engines[0].options.insert("load".into(), serde_json::json!("insert"));
        r.engines[0].settings.insert("one-row writes".into(), "sent with their SQL text".into());
        let s = section(&r);
        assert!(s.note.contains("kvbench's INSERT rows: COPY fsync=off: sent with their SQL text"), "{}", s.note);
    }

    /// An article-003 row of 10 records: a 100-pass load, 100-pass reads, the bulk read and the
    /// one-key loops, each with its own time so a cell from the wrong phase shows.
    fn a003_row(label: &str, engine: &str) -> EngineResult {
        let with_ops = |p: PhaseResult, ops: u64, requests: u64| PhaseResult { ops, requests, ..p };
        row(
            label,
            engine,
            vec![
                with_ops(ph("load", "load", 900.0, 0.001), 1000, 1000),
                with_ops(ph("read-all-100x", "get", 1500.0, 0.004), 1000, 1000),
                with_ops(ph("read-all-100x-bulk", "multi-get", 120.0, 1.2), 1000, 100),
                ph("1key-100x", "get", 0.5, 0.005),
                ph("1key-10000x", "get", 40.0, 0.004),
                ph("1key-100x-open-per-op", "get", 9.0, 0.09),
                ph("1key-10000x-open-per-op", "get", 900.0, 0.09),
            ],
        )
    }

    #[test]
    fn a003_cells_come_from_the_phases_their_headings_name() {
        let mut cdb = a003_row("tinycdb-put_add", "tinycdb");
        cdb.options.insert("put".into(), serde_json::json!("add"));
        cdb.phases[1].status = Status::Expected;
        cdb.phases[1].mismatches = 12;
        cdb.status = Status::Expected;
        let mut replace = a003_row("tinycdb", "tinycdb");
        replace.phases[0].elapsed_ns = 2_000_000_000;
        let mut r = run(
            "article-003-dictionary",
            vec![cdb, a003_row("qdbm-depot", "qdbm-depot"), a003_row("memcached", "memcached"), replace],
        );
        r.plan.records = 10;
        let s = section(&r);
        assert_eq!(s.headers, ["Type", "100 Write", "100 AllKey Read", "100 1key Read", "10000 1key Read"]);
        // 100 Write is the load (100 passes); AllKey Read is the get per key, except memcached's
        // bulk read; the 1key reads open the file per read (issue 45 point 4), except memcached's.
        // The put_add row's AllKey cell says it is not the article's walk (issue 45 point 2).
        assert_eq!(s.rows[0], ["tinycdb-put_add", "0.900 s", "1.500 s (get per key)", "0.00900 s", "0.900 s"]);
        assert_eq!(s.rows[1][1..], strings(&["0.900 s", "1.500 s", "0.00900 s", "0.900 s"]));
        assert_eq!(s.rows[2][1..3], strings(&["0.900 s", "0.120 s"]), "memcached reads all keys in bulk");
        assert_eq!(s.rows[2][3..], strings(&["0.000500 s", "0.0400 s"]), "memcached's client connected once");
        assert!(s.note.contains("one put_add build of 100 copies (1000 entries)"), "{}", s.note);
        assert!(s.note.contains("(100000 in all)"), "the article walked every copy 100 times: {}", s.note);
        assert!(!s.note.contains("would take about"), "no estimate from the get time: {}", s.note);
        assert!(s.note.contains("bench/cdb_walk.sh walks the same file"), "{}", s.note);
        assert!(s.note.contains("multi-get of 10 keys a pass"), "{}", s.note);
        assert!(s.note.contains("takes 1.500 s, 12.5x"), "{}", s.note);
        assert!(s.note.contains("tinycdb-put_add 0.0400 s opened once (22x less)"), "{}", s.note);
        assert!(s.note.contains("12 reads returned"), "{}", s.note);
        assert_eq!(s.rows[3][..2], strings(&["tinycdb", "2.000 s"]));
        let replace = "zero-fills its old copy in place (CDB_PUT_REPLACE0) so the last value wins, where the article kept every copy with put_add: 2.000 s against 0.900 s for tinycdb-put_add";
        assert!(s.note.contains(replace), "{}", s.note);
    }

    #[test]
    fn a003_not_applicable_phases_read_na() {
        let mut q = a003_row("qdbm-depot", "qdbm-depot");
        q.phases[0].status = Status::NotApplicable;
        let s = section(&run("article-003-dictionary", vec![q]));
        assert_eq!(s.rows[0][1], "n/a");
    }

    fn go(p: PhaseResult, bytes: f64, mallocs: f64) -> PhaseResult {
        let mut p = p;
        p.runtime.insert("alloc_bytes".into(), bytes);
        p.runtime.insert("mallocs".into(), mallocs);
        p
    }

    /// A 1000-record article-004 row: each phase's time and counters are distinct, so a cell
    /// taken from the wrong phase shows.
    fn a004_row(label: &str, engine: &str, version: &str) -> EngineResult {
        let mut e = row(
            label,
            engine,
            vec![
                go(ph("put-all-one-batch", "load", 4000.0, 4000.0), 4.1e9, 5.1e6),
                go(PhaseResult { ops: 2000, ..ph("put-all", "load", 10_000.0, 0.09) }, 2e6, 2e4),
                go(ph("get-all", "get", 90.0, 0.001), 16_800_000.0, 300_000.0),
                go(PhaseResult { ops: 5000, ..ph("get-all-passes", "get", 400.0, 0.001) }, 8e7, 1e6),
            ],
        );
        e.version = version.into();
        e
    }

    #[test]
    fn a004_cells_come_from_the_phases_their_headings_name() {
        let bolt = a004_row("go-bbolt", "go-bbolt", "go.etcd.io/bbolt v1.5.0");
        let ldb = a004_row("go-goleveldb", "go-goleveldb", "github.com/syndtr/goleveldb v1.0.0");
        let mut r = run("article-004-go", vec![bolt, ldb]);
        (r.plan.unique_records, r.plan.raw_bytes) = (1000, 1_556_000);
        let s = section(&r);
        let col = |h: &str| s.headers.iter().position(|x| x == h).unwrap_or_else(|| panic!("no column {h}"));
        let (bolt, ldb) = (&s.rows[0], &s.rows[1]);
        assert_eq!(bolt[0], "go-bbolt v1.5.0", "a Bolt row names its version");
        assert_eq!(ldb[0], "go-goleveldb", "other rows keep their label");
        // Bolt's Put: the fresh load in one transaction (put-all-one-batch), whole.
        let put = [col("Put ns/op"), col("Put B/op"), col("Put allocs/op")];
        assert_eq!(put.map(|c| bolt[c].as_str()), ["4000000000", "4100000000", "5100000"]);
        // The others' Put: the overwrite pass (put-all), per pass (2 passes of 1000 records).
        assert_eq!(put.map(|c| ldb[c].as_str()), ["5000000000", "1000000", "10000"]);
        // Get: get-all-passes averaged over its 5 passes; the single pass is get-all.
        let get = [col("Get ns/op"), col("Get B/op"), col("Get allocs/op")];
        assert_eq!(get.map(|c| bolt[c].as_str()), ["80000000", "16000000", "200000"]);
        assert_eq!(bolt[col("Get ns, one pass")], "90000000");
        assert_eq!(bolt[col("size on disk")], "3.0 MiB");
        assert_eq!(ldb[col("Put ns, first load in one batch")], "4000000000");
        assert_eq!(ldb[col("Put ns/pass, one Put each (overwrites)")], "5000000000");
        assert!(s.note.contains("go-bbolt 1.25x"), "overwrite pass against the fresh load: {}", s.note);
        assert!(s.note.contains("records average 1556 bytes"), "{}", s.note);
        assert!(s.note.contains("average 5 passes"), "{}", s.note);
        assert!(s.note.contains("every row ran with sync = none"), "{}", s.note);
        assert!(s.note.contains("depend on its version"), "{}", s.note);
        assert!(!s.note.contains("Tokyo Cabinet Get B/op"), "no Tokyo Cabinet row: {}", s.note);
    }

    /// Issue 45 point 5: the article put the same list again; the report says whether the
    /// overwrite pass did (a later load) or wrote new values (an older result's update).
    #[test]
    fn regression_a004_the_overwrite_pass_writes_the_same_values() {
        let r = run("article-004-go", vec![a004_row("go-tokyocabinet", "go-tokyocabinet", "v1")]);
        let s = section(&r);
        assert!(s.note.contains("the same bytes, as the article put the same list again"), "{}", s.note);
        let mut old = r.clone();
        old.engines[0].phases[1].kind = "update".into();
        let s = section(&old);
        assert!(s.note.contains("wrote new values (an update"), "{}", s.note);
        assert_eq!(s.rows[0][1], "5000000000", "the Put cell is still the overwrite pass");
    }

    #[test]
    fn a004_sizes_and_tokyo_cabinet_put_say_why_they_differ() {
        let rows = ["go-pogreb", "go-goleveldb", "go-tokyocabinet"].map(|n| a004_row(n, n, "v1"));
        let mut r = run("article-004-go", rows.to_vec());
        (r.plan.unique_records, r.plan.raw_bytes) = (1000, 1_556_000);
        let s = section(&r);
        // 3 MiB over 1 556 000 bytes; 1000 fresh puts and 2000 overwrites over 1000 records.
        assert!(
            s.note.contains("(1.5 MiB): go-pogreb 2.02x, go-goleveldb 2.02x, go-tokyocabinet 2.02x;"),
            "{}",
            s.note
        );
        assert!(s.note.contains("so its size counts the passes written: 3.0 here (2.02x)"), "{}", s.note);
        assert!(s.note.contains("go-goleveldb: 2.02x the records after 3.0 passes written"), "{}", s.note);
        // The overwrite pass's Go counters over its 2000 puts.
        assert!(s.note.contains("go-tokyocabinet 1000.0 B and 10.00 allocations a Put here"), "{}", s.note);
        let bare = section(&run("article-004-go", vec![a004_row("go-pogreb", "go-pogreb", "v1")]));
        assert!(
            !bare.note.contains("over the records' key and value bytes"),
            "no record bytes, no ratio: {}",
            bare.note
        );
    }

    #[test]
    fn a004_without_go_counters_or_a_passes_phase() {
        let tc = row(
            "tokyocabinet-hash",
            "tokyocabinet-hash",
            vec![
                ph("put-all-one-batch", "load", 300.0, 0.003),
                ph("put-all", "update", 400.0, 0.004),
                ph("get-all", "get", 270.0, 0.003),
            ],
        );
        let s = section(&run("article-004-go", vec![tc]));
        assert_eq!(s.rows[0][1..4], strings(&["400000000", "-", "-"]), "no Go counters outside Go");
        assert_eq!(s.rows[0][4], "270000000", "without a passes phase, the single pass");
        assert!(s.note.contains("no Go runtime counters"), "{}", s.note);
    }

    #[test]
    fn repetitions_collapse_to_the_median() {
        let reps: Vec<EngineResult> = [100.0, 300.0, 200.0]
            .iter()
            .enumerate()
            .map(|(i, &ms)| EngineResult {
                repetition: i as u32,
                ..row("qdbm-depot", "qdbm-depot", vec![ph("1key-100x-open-per-op", "get", ms, 0.1)])
            })
            .collect();
        let mut r = run("article-003-dictionary", reps);
        r.workload = serde_json::json!({ "repetitions": 3 });
        let s = section(&r);
        assert_eq!(s.rows.len(), 1);
        assert_eq!(s.rows[0][3], "0.200 s");
        assert_eq!(secs(12_345.0), "0.0000123 s");
        assert!(s.note.contains("median of 3 repetition"), "{}", s.note);
    }

    /// Issue 45 point 1: a row declaring `expect = "mismatch"` has every repetition Expected;
    /// its cells are the median over them, not repetition 0.
    #[test]
    fn regression_declared_mismatch_repetitions_collapse_to_the_median() {
        let reps: Vec<EngineResult> = [177.0, 819.0, 622.0]
            .iter()
            .enumerate()
            .map(|(i, &ms)| {
                let mut e = a003_row("tinycdb-put_add", "tinycdb");
                e.options.insert("put".into(), serde_json::json!("add"));
                e.phases[1] =
                    PhaseResult { status: Status::Expected, mismatches: 5, ..ph("read-all-100x", "get", ms, 0.1) };
                EngineResult { repetition: i as u32, status: Status::Expected, ..e }
            })
            .collect();
        let mut r = run("article-003-dictionary", reps);
        r.workload = serde_json::json!({ "repetitions": 3 });
        let s = section(&r);
        assert_eq!(s.rows.len(), 1);
        assert_eq!(s.rows[0][2], "0.622 s (get per key)", "the median of 0.177, 0.819 and 0.622 s");
        let (collapsed, spreads) = collapse(&r);
        assert_eq!(collapsed.engines[0].status, Status::Expected, "still declared, not failed");
        let spread = spreads.get(&("tinycdb-put_add".to_string(), "read-all-100x".to_string()));
        assert_eq!(spread.map(|s| s.0), Some(3), "every repetition counted");
    }

    #[test]
    fn a_failed_repetition_outranks_a_declared_one() {
        let mut reps: Vec<EngineResult> = (0..3)
            .map(|i| EngineResult { repetition: i, status: Status::Expected, ..a003_row("tinycdb-put_add", "tinycdb") })
            .collect();
        reps[2].status = Status::Failed;
        reps[2].error = Some("crashed".into());
        let (collapsed, _) = collapse(&run("article-003-dictionary", reps));
        assert_eq!(collapsed.engines[0].status, Status::Failed);
        assert_eq!(collapsed.engines[0].error.as_deref(), Some("repetition 2: crashed"));
    }
}
