//! The article's own table, for a run of one of the five article scenarios (`article-000` ...
//! `article-004`): the columns, units and method the article used, filled from kvbench's
//! result, then one line per difference saying why kvbench's honest figure is not the same.
//! The article's own headline figures are quoted beside them (numbers only), so a reader can
//! put the two side by side.

use kvbench_core::result::{EngineResult, Latency, PhaseResult, RunResult, Status};
use kvbench_core::spec::HotKey;

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
    differences.push(a000_space_line(r));
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

fn a001(r: &RunResult) -> Article {
    let mut keys: Vec<u64> =
        r.engines.iter().flat_map(|e| e.phases.iter().filter_map(mget_shape)).map(|(k, _)| k).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut headers = vec!["keys per multi-get".to_string()];
    for e in &r.engines {
        headers.push(format!("{} cold", e.label));
        headers.push(format!("{} warm", e.label));
    }
    let cell = |e: &EngineResult, k: u64, cold: bool| {
        let p = e.phases.iter().find(|p| ran(e, &p.name).is_some() && mget_shape(p) == Some((k, cold)));
        or_dash(p.and_then(|p| p.latency.as_ref()).map(|l| ms(l.mean_ns)))
    };
    let rows = keys
        .iter()
        .map(|&k| {
            let mut row = vec![k.to_string()];
            for e in &r.engines {
                row.push(cell(e, k, true));
                row.push(cell(e, k, false));
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
    differences.push("a cell is the mean over the phase's requests (p50/p99 in the phase tables); the article gave one time per key count from its PHP client".into());
    if r.engines.iter().any(|e| e.engine.starts_with("http-")) {
        differences.push("http-* rows go through `kvbench serve` over HTTP, like RocksServer; the in-process row is RocksDB's MultiGet without HTTP".into());
    }
    Article {
        title: "ms per multi-get of random keys, by key count",
        method: format!(
            "{} keys (the article: 1 000 000) of 50±5-byte values; each cell: time of one multi-get of N random keys (ms), cold and warm cache",
            r.plan.unique_records
        ),
        headline: "SSD 4.7 ms (50 keys), 12.6 ms (300), 29.5 ms (1000), 124.6 ms (10 000), 2346.6 ms (100 000)",
        headers,
        rows,
        differences,
    }
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

/// A setting the rows report (the first row that has it).
fn setting(r: &RunResult, name: &str) -> Option<String> {
    r.engines.iter().find_map(|e| e.settings.get(name).cloned())
}

/// How the client reached the server, from the rows' `access` setting.
fn a002_connection(r: &RunResult) -> String {
    match setting(r, "access") {
        Some(a) if a.contains("Unix socket") => "the client is Rust's postgres crate over the server's Unix socket (kvbench's private server opens no TCP port), where the article's OCaml client connected over TCP to localhost: each INSERT's round trip here skips the loopback TCP stack".into(),
        Some(a) => format!("the client is Rust's postgres crate ({a}), not OCaml"),
        None => "the client is Rust's postgres crate, not OCaml".into(),
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

const A003_COLUMNS: [(&str, &str); 4] = [
    ("100 Write", "write-100x"),
    ("100 AllKey Read", "read-all-100x"),
    ("100 1key Read", "1key-100x"),
    ("10000 1key Read", "1key-10000x"),
];

fn a003(r: &RunResult, reps: u32) -> Article {
    let rows = r
        .engines
        .iter()
        .map(|e| {
            let mut row = vec![e.label.clone()];
            for (_, phase) in A003_COLUMNS {
                let na = e.phases.iter().any(|p| p.name == phase && p.status == Status::NotApplicable);
                row.push(if na { "n/a".into() } else { or_dash(ran(e, phase).map(|p| secs(took(p)))) });
            }
            row
        })
        .collect();
    let mut differences = vec![
        "the article's seconds include starting perl, loading the module and opening the database in every run; these time the loop alone, opened once".into(),
    ];
    let per_open: Vec<String> = r
        .engines
        .iter()
        .filter_map(|e| {
            let (once, per_op) = (ran(e, "1key-10000x")?, ran(e, "1key-10000x-open-per-op")?);
            Some(format!("{} {} vs {}", e.label, secs(took(per_op)), secs(took(once))))
        })
        .collect();
    if !per_open.is_empty() {
        differences.push(format!(
            "10000 one-key reads with an open per read, the article's pattern, against opened once: {}",
            per_open.join("; ")
        ));
    }
    differences.push(format!("the article averaged 3 runs of `time`; this is the median of {reps} repetition(s)"));
    if r.engines.iter().any(|e| e.engine == "tinycdb") {
        differences.push("TinyCDB is built once: its 100 Write is n/a here; the article's figure was one build of 100 copies with put_add".into());
    }
    for e in r.engines.iter().filter(|e| e.status == Status::Expected) {
        let wrong: u64 = e.phases.iter().map(|p| p.mismatches).sum();
        differences
            .push(format!("{}: {wrong} reads returned a repeated name's first copy, declared expected", e.label));
    }
    if r.engines.iter().any(|e| e.engine == "memcached") {
        differences.push("memcached reads one key per get here; the article's all-key read used get_multi".into());
    }
    let mut headers = vec!["Type".to_string()];
    headers.extend(A003_COLUMNS.iter().map(|(h, _)| h.to_string()));
    Article {
        title: "seconds for the article's loops",
        method: "seconds for: writing the dictionary 100 times, reading every key 100 times, one key 100 and 10 000 times".into(),
        headline: "100 Write: TinyCDB 0.945 s, QDBM 3.233 s, memcached 37.446 s; 100 AllKey Read: 24.44 s, 2.84 s, 11.39 s; 10000 1key Read: 1.60 s, 0.81 s, 1.45 s",
        headers,
        rows,
        differences,
    }
}

// ---- 004: Go benchmarks ----

/// How the Get columns relate to the article's b.N average.
fn a004_passes(r: &RunResult) -> String {
    let passes = r.engines.iter().map(|e| a004_get(e).1).fold(1.0, f64::max);
    if passes > 1.0 {
        format!("an article op is one pass over every record, averaged over b.N passes: the Get columns average {passes:.0} passes in one open (phase get-all-passes); the last column is the first pass after a reopen (phase get-all), which pays for cold caches inside the store")
    } else {
        "an article op is one pass over every record, averaged over b.N passes; here one pass, timed once".into()
    }
}

/// The phase that did the article's Put for this engine: Bolt put everything in one
/// transaction, the others looped over single puts.
fn a004_put(e: &EngineResult) -> Option<&PhaseResult> {
    let bolt = e.engine.contains("bolt");
    bolt.then(|| ran(e, "put-all-one-batch")).flatten().or_else(|| ran(e, "put-all"))
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

/// The Get the article averaged over b.N passes (phase get-all-passes, with how many passes),
/// else the single pass.
fn a004_get(e: &EngineResult) -> (Option<&PhaseResult>, f64) {
    let single = ran(e, "get-all");
    match (ran(e, "get-all-passes"), single) {
        (Some(avg), Some(one)) if one.ops > 0 => (Some(avg), (avg.ops as f64 / one.ops as f64).max(1.0)),
        _ => (single, 1.0),
    }
}

fn a004(r: &RunResult) -> Article {
    let rows = r
        .engines
        .iter()
        .map(|e| {
            let mut row = vec![e.label.clone()];
            row.extend(go_bench(a004_put(e), 1.0));
            let (get, passes) = a004_get(e);
            row.extend(go_bench(get, passes));
            row.push(space(e));
            row.push(or_dash(ran(e, "get-all").map(|p| format!("{:.0}", p.elapsed_ns as f64))));
            row
        })
        .collect();
    let mut differences = vec![
        a004_passes(r),
        "Put follows the article per engine: one transaction for all records for Bolt/bbolt (phase put-all-one-batch), one Put per record for the others (put-all); the phase tables time every engine both ways".into(),
        "Get reads a settled database in the order the records were written, as the article's list did: the store is closed and reopened after the load (cache = reopen, page cache kept) and reads replay the load's order (distribution = load-order)".into(),
    ];
    let loops: Vec<String> = r
        .engines
        .iter()
        .filter(|e| e.engine.contains("bolt"))
        .filter_map(|e| ran(e, "put-all").map(|p| format!("{} {}", e.label, secs(p.elapsed_ns as f64))))
        .collect();
    if !loops.is_empty() {
        differences.push(format!("Bolt with one transaction per Put instead: {}", loops.join(", ")));
    }
    let go_counters = r.engines.iter().any(|e| e.phases.iter().any(|p| p.runtime.contains_key("alloc_bytes")));
    differences.push(if go_counters {
        "B/op and allocs/op are Go's runtime memory statistics around the phase, the worker's own reads and checks included".into()
    } else {
        "B/op and allocs/op: this result has no Go runtime counters".into()
    });
    differences.push(format!(
        "size on disk is allocated blocks after close (what du shows); {}; the article's Bolt fsynced each commit, its other stores did not",
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
        ]),
        rows,
        differences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvbench_core::result::Latency;

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
        // The (read-only) row reopens the default row's database: the same space cell.
        let size = PhaseResult { space_bytes: 1000 << 20, ..ph("size-after-load", "size", 1.0, 0.0) };
        let ro = ph("article-method-read-only", "get", 3650.0, 3.65);
        let phases = vec![ph("load", "load", 1.0, 0.1), size, ro];
        let rdb = EngineResult { space_bytes: 1430 << 20, ..row("py-rocksdict", "py-rocksdict", phases) };
        let s = section(&run("article-000-python-lmdb-rocksdb-speedb", vec![rdb]));
        assert_eq!(s.rows[1][..2], ["py-rocksdict (read-only)", "1000.0 MiB"]);
        assert!(!s.note.contains("123456"), "the hot key follows the record count: {}", s.note);
    }

    #[test]
    fn a000_without_a_size_phase_says_space_is_after_the_whole_run() {
        let e = row("lmdb", "lmdb", vec![ph("load", "load", 1000.0, 0.1), ph("article-method", "get", 1.0, 1.0)]);
        let s = section(&run("article-000-python-lmdb-rocksdb-speedb", vec![e]));
        assert_eq!(s.rows[0][1], "3.0 MiB");
        assert!(s.note.contains("after the whole run's close"), "{}", s.note);
        assert!(s.note.contains("one hot key"), "no hot key in the workload: {}", s.note);
    }

    #[test]
    fn a001_has_a_row_per_key_count_and_cold_warm_columns_per_engine() {
        let mget = |name: &str, keys: u64, cold: bool, mean_ms: f64| PhaseResult {
            ops: keys * 10,
            requests: 10,
            cache: if cold { "cold (evicted: posix_fadvise)".into() } else { "warm".into() },
            ..ph(name, "multi-get", 100.0, mean_ms)
        };
        let e = row(
            "http-rocksdb",
            "http-rocksdb",
            vec![
                ph("load", "load", 1.0, 1.0),
                mget("mget-50", 50, true, 4.7),
                mget("mget-1000", 1000, true, 29.5),
                mget("mget-50-warm", 50, false, 0.5),
            ],
        );
        let s = section(&run("article-001-http-multiget", vec![e]));
        assert_eq!(s.headers, ["keys per multi-get", "http-rocksdb cold", "http-rocksdb warm"]);
        assert_eq!(s.rows, [strings(&["50", "4.70 ms", "0.50 ms"]), strings(&["1000", "29.50 ms", "-"])]);
        assert!(s.note.contains("cold (evicted: posix_fadvise)"), "{}", s.note);
        assert!(s.note.contains("kvbench serve"), "{}", s.note);
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
    }

    #[test]
    fn a003_seconds_per_loop_with_na_and_declared_mismatches() {
        let mut cdb = row(
            "tinycdb-put_add",
            "tinycdb",
            vec![
                ph("load", "load", 5.0, 0.001),
                ph("read-all-100x", "get", 1500.0, 0.004),
                ph("1key-100x", "get", 0.5, 0.005),
                ph("1key-10000x", "get", 40.0, 0.004),
                ph("1key-10000x-open-per-op", "get", 900.0, 0.09),
                PhaseResult { status: Status::NotApplicable, ..ph("write-100x", "update", 0.0, 0.0) },
            ],
        );
        cdb.phases[1].status = Status::Expected;
        cdb.phases[1].mismatches = 1200;
        cdb.status = Status::Expected;
        let s = section(&run("article-003-dictionary", vec![cdb]));
        assert_eq!(s.headers, ["Type", "100 Write", "100 AllKey Read", "100 1key Read", "10000 1key Read"]);
        assert_eq!(s.rows[0], ["tinycdb-put_add", "n/a", "1.500 s", "0.000500 s", "0.0400 s"]);
        assert!(s.note.contains("tinycdb-put_add 0.900 s vs 0.0400 s"), "{}", s.note);
        assert!(s.note.contains("1200 reads returned"), "{}", s.note);
    }

    #[test]
    fn a004_puts_bolt_in_one_transaction_and_reports_go_allocations() {
        let go = |p: PhaseResult, bytes: f64, mallocs: f64| {
            let mut p = p;
            p.runtime.insert("alloc_bytes".into(), bytes);
            p.runtime.insert("mallocs".into(), mallocs);
            p
        };
        let bolt = row(
            "go-boltdb",
            "go-boltdb",
            vec![
                go(ph("put-all", "load", 9000.0, 0.09), 1.0, 1.0),
                go(ph("get-all", "get", 90.0, 0.001), 16_800_000.0, 300_000.0),
                go(
                    PhaseResult { ops: 5000, ..ph("get-all-passes", "get", 400.0, 0.001) },
                    5.0 * 16_000_000.0,
                    5.0 * 200_000.0,
                ),
                go(ph("put-all-one-batch", "update", 4000.0, 4000.0), 4.1e9, 5.1e6),
            ],
        );
        let tc = row(
            "tokyocabinet-hash",
            "tokyocabinet-hash",
            vec![ph("put-all", "load", 400.0, 0.004), ph("get-all", "get", 270.0, 0.003)],
        );
        let s = section(&run("article-004-go", vec![bolt, tc]));
        assert_eq!(s.headers.len(), 9);
        let bolt_row =
            ["go-boltdb", "4000000000", "4100000000", "5100000", "80000000", "16000000", "200000", "3.0 MiB"];
        assert_eq!(s.rows[0], strings(&[&bolt_row[..], &["90000000"]].concat()), "Get averages the 5 passes");
        assert_eq!(s.rows[1][1..4], strings(&["400000000", "-", "-"]), "no Go counters outside Go");
        assert_eq!(s.rows[1][4], "270000000", "without a passes phase, the single pass");
        assert!(s.note.contains("average 5 passes"), "{}", s.note);
        assert!(s.note.contains("go-boltdb 9.000 s"), "{}", s.note);
        assert!(s.note.contains("Go's runtime memory statistics"), "{}", s.note);
        assert!(s.note.contains("every row ran with sync = none"), "{}", s.note);
    }

    #[test]
    fn repetitions_collapse_to_the_median() {
        let reps: Vec<EngineResult> = [100.0, 300.0, 200.0]
            .iter()
            .enumerate()
            .map(|(i, &ms)| EngineResult {
                repetition: i as u32,
                ..row("qdbm-depot", "qdbm-depot", vec![ph("1key-100x", "get", ms, 0.1)])
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
}
