//! The declared tables filled from hand-made results: each cell from the phase its heading
//! names, each difference from the figures; the tables come from the shipped scenario files.

use std::path::Path;

use kvbench_model::result::{EngineResult, Latency, PhaseResult, RunResult, Status};
use kvbench_model::scenario::Scenario;

use super::own_table;
use crate::{collapse, Section};

/// The workload a result of scenario file `scenarios/NAME.toml` carries: its table, if any.
fn table_of(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(format!("{name}.toml"));
    let scenario = Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    serde_json::json!({ "report": scenario.report })
}

fn strings(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

/// A copy of a shipped scenario under another name and file keeps its table (it is in the
/// scenario, not looked up by name), and its result renders it without the file.
#[test]
fn a_copied_and_renamed_scenario_keeps_its_table() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/article-003-dictionary.toml");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let copy = dir.path().join("my-dictionary-run.toml");
    let text = std::fs::read_to_string(&shipped).expect("the shipped scenario");
    std::fs::write(&copy, text.replace("name = \"article-003-dictionary\"", "name = \"my-dictionary-run\"")).unwrap();
    let scenario = Scenario::from_file(&copy).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.name, "my-dictionary-run");
    let row = EngineResult { label: "qdbm-depot".into(), engine: "qdbm-depot".into(), ..Default::default() };
    let run = RunResult {
        scenario: scenario.name.clone(),
        workload: serde_json::to_value(&scenario).unwrap(),
        engines: vec![row],
        ..Default::default()
    };
    let json = serde_json::to_string(&run).unwrap();
    drop(dir);
    let read_back: RunResult = serde_json::from_str(&json).unwrap();
    let table = own_table(&read_back).expect("the copy's table");
    assert!(table.title.starts_with("Article 003"), "{}", table.title);
    assert_eq!(table.headers[1], "100 Write");
    assert_eq!(table.rows[0][..2], strings(&["qdbm-depot", "-"]));
}

/// Every name a scenario may declare (kvbench-model's lists) is one the report computes.
#[test]
fn every_computed_name_the_model_allows_is_implemented() {
    use kvbench_model::report_table::{COMPUTED_CELLS, COMPUTED_DIFFERENCES};
    let run = RunResult::default();
    let row = EngineResult::default();
    let phase = PhaseResult::default();
    for name in COMPUTED_CELLS {
        let text = super::computed::cell(name, &run, &row, Some(&phase));
        assert_ne!(text, super::computed::unknown(name), "cell {name}");
    }
    for name in COMPUTED_DIFFERENCES {
        let lines = super::computed::difference(name, &run);
        assert!(!lines.contains(&super::computed::unknown(name)), "difference {name}");
    }
    assert_eq!(super::computed::difference("nope", &run), [super::computed::unknown("nope")]);
}

#[test]
fn a_scenario_without_a_table_has_no_table_of_its_own() {
    let run =
        RunResult { scenario: "article-003-dictionary".into(), workload: table_of("ycsb-a"), ..Default::default() };
    assert!(own_table(&run).is_none(), "a name is not a table");
}

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
    RunResult { scenario: scenario.into(), engines, workload: table_of(scenario), ..Default::default() }
}

fn section(r: &RunResult) -> Section {
    own_table(r).expect("a scenario with a table")
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
    r.workload["phase"] = serde_json::json!([{ "name": "article-method", "hot_key": "12.3456%" }]);
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
    let r =
        run("article-000-python-lmdb-rocksdb-speedb", vec![store("py-rocksdict", 1033), store("py-speedict", 1114)]);
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
    assert!(s.note.contains("100000 rows") && s.note.contains("kvbench_kv (k text PRIMARY KEY, v text)"), "{}", s.note);
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
    assert!(s.note.contains("(1.5 MiB): go-pogreb 2.02x, go-goleveldb 2.02x, go-tokyocabinet 2.02x;"), "{}", s.note);
    assert!(s.note.contains("so its size counts the passes written: 3.0 here (2.02x)"), "{}", s.note);
    assert!(s.note.contains("go-goleveldb: 2.02x the records after 3.0 passes written"), "{}", s.note);
    // The overwrite pass's Go counters over its 2000 puts.
    assert!(s.note.contains("go-tokyocabinet 1000.0 B and 10.00 allocations a Put here"), "{}", s.note);
    let bare = section(&run("article-004-go", vec![a004_row("go-pogreb", "go-pogreb", "v1")]));
    assert!(!bare.note.contains("over the records' key and value bytes"), "no record bytes, no ratio: {}", bare.note);
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
    r.workload["repetitions"] = serde_json::json!(3);
    let s = section(&r);
    assert_eq!(s.rows.len(), 1);
    assert_eq!(s.rows[0][3], "0.200 s");
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
    r.workload["repetitions"] = serde_json::json!(3);
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

/// The reference suites' tables.
mod suites {
    use kvbench_model::result::{Disk, Latency};

    use super::super::own_table;
    use super::table_of;
    use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

    fn phase(name: &str, kind: &str) -> PhaseResult {
        PhaseResult {
            name: name.into(),
            kind: kind.into(),
            ops: 2000,
            requests: 2000,
            ops_per_sec: 1000.0,
            threads: 16,
            stalls: 1,
            intervals: vec![Default::default(); 5],
            latency: Some(Latency {
                mean_ns: 2500.0,
                p50_ns: 2000,
                p99_ns: 9000,
                max_ns: 40_000,
                ..Default::default()
            }),
            disk: Some(Disk {
                write_amplification: 3.5,
                write_bytes: 7000,
                logical_write_bytes: 2000,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn run(scenario: &str, phases: Vec<PhaseResult>) -> RunResult {
        let e = EngineResult {
            label: "rocksdb".into(),
            engine: "rocksdb".into(),
            space_bytes: 4096,
            phases,
            ..Default::default()
        };
        RunResult { scenario: scenario.into(), engines: vec![e], workload: table_of(scenario), ..Default::default() }
    }

    #[test]
    fn a_scenario_without_a_table_gets_none_and_a_suite_its_own() {
        assert!(own_table(&run("ycsb-a", vec![phase("get", "get")])).is_none());
        assert!(own_table(&run("ref-dbbench", vec![])).is_some());
    }

    #[test]
    fn dbbench_rows_are_report_tsv_columns_and_leave_the_settle_out() {
        let s = own_table(&run("ref-dbbench", vec![phase("readrandom", "get"), phase("settle", "settle")])).unwrap();
        assert_eq!(s.rows.len(), 1);
        let row = &s.rows[0];
        assert_eq!(row.len(), s.headers.len());
        let column = |heading: &str| s.headers.iter().position(|h| h == heading).expect(heading);
        let cells = |headings: &[&str]| headings.iter().map(|h| row[column(h)].clone()).collect::<Vec<_>>();
        assert_eq!(cells(&["ops_sec", "all files", "w_amp", "p50", "p99"]), ["1000", "4.0 KiB", "3.50", "2.0", "9.0"]);
        assert_eq!(cells(&["SST"]), ["-"], "no SST counter in this row");
        assert_eq!(row[column("stall%")], "25.0", "1 stall in 4 whole intervals");
        assert_eq!(row[column("test")], "readrandom.t16");
    }

    #[test]
    fn a_scan_counts_once_as_the_peers_count_it_not_per_record() {
        let scan = PhaseResult { requests: 200, ..phase("fwdrange", "scan") };
        let s = own_table(&run("ref-dbbench", vec![phase("open", "open"), scan])).unwrap();
        assert_eq!(s.rows.len(), 1, "the open step is not a test");
        assert_eq!(s.rows[0][0], "100", "200 seeks of 2000 records at 1000 records/s");
    }

    #[test]
    fn pebble_rows_are_its_mixed_phases_with_device_bytes() {
        let s = own_table(&run("ref-pebble-ycsb", vec![phase("load", "load"), phase("A", "mixed")])).unwrap();
        assert_eq!(s.rows.len(), 1);
        assert_eq!(s.rows[0][0], "Benchmarkycsb/A");
        assert_eq!(s.rows[0][5], "7000");
        assert_eq!(s.rows[0][6], "-", "r-amp is Pebble's own counter only");
        assert!(s.note.contains("A 803287 / 3.25"), "{}", s.note);
    }

    #[test]
    fn redb_rows_are_its_benchmark_names_with_the_stores_as_columns_and_the_smallest_in_bold() {
        let sized = |name: &str, kind: &str, wall_ms: u64, space: u64| PhaseResult {
            wall_ns: wall_ms * 1_000_000,
            // redb's size rows read file lengths (its harness sums them).
            disk: Some(Disk { space_bytes: space, file_bytes: space, ..Default::default() }),
            ..phase(name, kind)
        };
        let engine = |label: &str, load_ms: u64, status: Status| EngineResult {
            label: label.into(),
            engine: label.into(),
            phases: vec![
                sized("bulk load", "load", load_ms, 0),
                sized("removals", "delete", 20, 3 << 30),
                PhaseResult { status, ..sized("compaction", "settle", 0, 1 << 20) },
            ],
            ..Default::default()
        };
        let r = RunResult {
            scenario: "ref-redb".into(),
            workload: table_of("ref-redb"),
            engines: vec![engine("redb", 1700, Status::Ok), engine("lmdb", 900, Status::NotApplicable)],
            ..Default::default()
        };
        let s = own_table(&r).unwrap();
        assert_eq!(s.headers, ["", "redb", "lmdb"]);
        let names: Vec<&str> = s.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names.len(), 15);
        assert_eq!(names[..5], ["bulk load", "individual writes", "batch writes", "len()", "random reads"]);
        assert_eq!(s.rows[0][1..], ["1700ms", "**900ms**"]);
        assert_eq!(s.rows[3][1..], ["-", "-"], "len() is not measured");
        assert_eq!(s.rows[13][1..], ["**3.00 GiB**", "3.00 GiB"], "a tie marks the first");
        assert_eq!(s.rows[14][1..], ["**1.00 MiB**", "n/a"]);
        assert!(s.note.contains("\n- len() is not measured"), "{}", s.note);
    }
}

#[test]
fn an_internal_counter_may_name_alternatives_one_per_engine() {
    let mut phase = ph("readrandom", "get", 1.0, 0.1);
    phase.internals.insert("pebble.sstable_bytes".into(), 42.0);
    let r = row("go-pebble", "go-pebble", vec![phase.clone()]);
    let sst = |c: &str| super::figures::value(kvbench_model::report_table::Metric::Internal, Some(c), &r, &phase);
    assert_eq!(sst("rocksdb.sst.live_bytes|pebble.sstable_bytes"), Some(42.0));
    assert_eq!(sst("rocksdb.sst.live_bytes"), None, "a counter the row lacks is no figure");
}

#[test]
fn file_lengths_are_their_own_figure_and_unmeasured_in_results_without_them() {
    use kvbench_model::report_table::Metric;
    let mut phase = ph("removals", "delete", 1.0, 0.1);
    phase.disk = Some(kvbench_model::result::Disk { space_bytes: 8192, ..Default::default() });
    let r = row("lmdb", "lmdb", vec![phase.clone()]);
    assert_eq!(super::figures::value(Metric::PhaseSpace, None, &r, &phase), Some(8192.0));
    assert_eq!(super::figures::value(Metric::PhaseFileBytes, None, &r, &phase), None, "an older result: no 0 B");
    phase.disk.as_mut().unwrap().file_bytes = 5000;
    assert_eq!(super::figures::value(Metric::PhaseFileBytes, None, &r, &phase), Some(5000.0));
}
