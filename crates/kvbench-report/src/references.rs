//! A reference suite's own table, for a run of `ref-redb` (redb's `lmdb_benchmark`),
//! `ref-dbbench` (RocksDB's benchmark.sh) or `ref-pebble-ycsb` (Pebble's `ycsb` command): the
//! peer's layout, filled from kvbench's
//! result, one row per test and store. The scenario's intent, printed above every report,
//! lists the differences from the peer's method; the peer's published figures, where there
//! are some, are quoted in the note.

use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

use crate::{human_bytes, pooled_histogram, Section};

/// The peer's table for a reference scenario's result; None for any other scenario.
pub fn reference_section(r: &RunResult) -> Option<Section> {
    match r.scenario.as_str() {
        "ref-redb" => Some(redb(r)),
        "ref-dbbench" => Some(dbbench(r)),
        "ref-pebble-ycsb" => Some(pebble_ycsb(r)),
        _ => None,
    }
}

/// The operation phases a row ran (not its open, close or settle steps), in the row's order.
fn timed(e: &EngineResult) -> impl Iterator<Item = &PhaseResult> {
    e.phases.iter().filter(|p| {
        !matches!(p.kind.as_str(), "settle" | "open" | "close") && matches!(p.status, Status::Ok | Status::Expected)
    })
}

/// Requests per second: both peers count a scan (a seek and its nexts) as one operation, where
/// kvbench's ops of a scan are the records it read.
fn requests_per_sec(p: &PhaseResult) -> f64 {
    if p.ops == 0 {
        return 0.0;
    }
    p.ops_per_sec * p.requests as f64 / p.ops as f64
}

fn section(title: &str, note: String, headers: &[&str], rows: Vec<Vec<String>>) -> Section {
    Section {
        title: title.into(),
        note,
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
        best: vec![None; headers.len()],
        priority: (0..headers.len()).map(|i| u8::from(i >= 8)).collect(),
    }
}

/// Microseconds with db_bench's precision.
fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// Milliseconds as Pebble's table gives them, with the digits a microsecond operation needs.
fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Stalled share of a phase's whole intervals, as report.tsv's stall%.
fn stall_pct(p: &PhaseResult) -> String {
    let whole = p.intervals.len().saturating_sub(1).max(1);
    format!("{:.1}", 100.0 * p.stalls as f64 / whole as f64)
}

/// Device bytes written over the records' bytes; "-" where the phase wrote no records.
fn wamp(p: &PhaseResult) -> String {
    match p.disk.as_ref() {
        Some(d) if d.logical_write_bytes > 0 => format!("{:.2}", d.write_amplification),
        _ => "-".into(),
    }
}

fn dbbench_row(e: &EngineResult, p: &PhaseResult) -> Vec<String> {
    let p9999 = pooled_histogram(&[p]).map(|h| h.value_at_quantile(0.9999));
    let lat = p.latency.as_ref();
    let pick = |f: fn(&kvbench_model::result::Latency) -> u64| lat.map_or("-".into(), |l| us(f(l)));
    vec![
        format!("{:.0}", requests_per_sec(p)),
        human_bytes(e.space_bytes),
        wamp(p),
        lat.map_or("-".into(), |l| format!("{:.1}", l.mean_ns / 1e3)),
        pick(|l| l.p50_ns),
        pick(|l| l.p99_ns),
        pick(|l| l.p999_ns),
        p9999.map_or("-".into(), us),
        pick(|l| l.max_ns),
        stall_pct(p),
        format!("{:.1}", p.cpu_user_ns as f64 / 1e9),
        format!("{:.1}", p.cpu_sys_ns as f64 / 1e9),
        human_bytes(p.max_rss_kb * 1024),
        format!("{}.t{}", p.name, p.threads),
        e.label.clone(),
    ]
}

fn dbbench(r: &RunResult) -> Section {
    let rows = r.engines.iter().flat_map(|e| timed(e).map(|p| dbbench_row(e, p))).collect();
    let note = "report.tsv's columns (mb_sec, blob and compaction columns left out): ops_sec over the phase's wall \
                time; lsm_sz is the space after close; w_amp the device bytes written over the records' bytes; \
                usec_op the mean latency and p50..pmax in µs; stall% the share of 1 s intervals below half \
                the median; u_cpu/s_cpu in s; rss the peak. The differences from benchmark.sh are listed in the \
                intent above."
        .to_string();
    let headers = [
        "ops_sec", "lsm_sz", "w_amp", "usec_op", "p50", "p99", "p99.9", "p99.99", "pmax", "stall%", "u_cpu", "s_cpu",
        "rss", "test", "store",
    ];
    section("RocksDB benchmark.sh's report.tsv", note, &headers, rows)
}

fn pebble_row(e: &EngineResult, p: &PhaseResult) -> Vec<String> {
    let lat = p.latency.as_ref();
    let pick = |f: fn(&kvbench_model::result::Latency) -> u64| lat.map_or("-".into(), |l| ms(f(l)));
    let (read, write) =
        p.disk.as_ref().map_or(("-".into(), "-".into()), |d| (d.read_bytes.to_string(), d.write_bytes.to_string()));
    let ramp = p.internals.get("pebble.read_amp").map_or("-".into(), |v| format!("{v:.2}"));
    vec![
        format!("Benchmarkycsb/{}", p.name),
        e.label.clone(),
        p.requests.to_string(),
        format!("{:.1}", requests_per_sec(p)),
        read,
        write,
        ramp,
        wamp(p),
        pick(|l| l.p50_ns),
        pick(|l| l.p95_ns),
        pick(|l| l.p99_ns),
        pick(|l| l.max_ns),
    ]
}

fn pebble_ycsb(r: &RunResult) -> Section {
    let rows =
        r.engines.iter().flat_map(|e| timed(e).filter(|p| p.kind == "mixed").map(|p| pebble_row(e, p))).collect();
    let note = "its Benchmarkycsb lines with the latencies (ms) of its per-operation table: read and write are \
                the device bytes of the phase, r-amp Pebble's own read amplification (Pebble rows only), w-amp the \
                device bytes written over the records' bytes (Pebble reports its LSM's). Pebble's nightly of \
                2021-10-27, values=64, run 1 (cockroachdb/pebble internal/mkbench/testdata), ops/sec and w-amp: \
                A 803287 / 3.25, B 1035169 / 6.59, C 2541970 / 0.00, D 835936 / 12.49, E 217989 / 25.54, \
                F 238435 / 10.79."
        .to_string();
    let headers =
        ["benchmark", "store", "ops", "ops/sec", "read", "write", "r-amp", "w-amp", "p50", "p95", "p99", "pMax"];
    section("Pebble's ycsb benchmark lines", note, &headers, rows)
}

/// What a row of redb's table is made of.
enum RedbCell {
    /// The wall time of the phase of this name.
    Time(&'static str),
    /// Not measured by kvbench (redb's `len()`).
    Absent,
    /// The space on disk at the end of the phase of this name.
    Size(&'static str),
}

/// redb's rows in its order, each from the ref-redb phase that measures it.
const REDB_ROWS: [(&str, RedbCell); 15] = [
    ("bulk load", RedbCell::Time("bulk load")),
    ("individual writes", RedbCell::Time("individual writes")),
    ("batch writes", RedbCell::Time("batch writes")),
    ("len()", RedbCell::Absent),
    ("random reads", RedbCell::Time("random reads")),
    ("random reads", RedbCell::Time("random reads again")),
    ("random range reads", RedbCell::Time("random range reads")),
    ("random range reads", RedbCell::Time("random range reads again")),
    ("random reads (4 threads)", RedbCell::Time("random reads 4 threads")),
    ("random reads (8 threads)", RedbCell::Time("random reads 8 threads")),
    ("random reads (16 threads)", RedbCell::Time("random reads 16 threads")),
    ("random reads (32 threads)", RedbCell::Time("random reads 32 threads")),
    ("removals", RedbCell::Time("removals")),
    ("uncompacted size", RedbCell::Size("removals")),
    ("compacted size", RedbCell::Size("compaction")),
];

/// Sizes as redb prints them: two decimals of the largest binary unit.
fn redb_size(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let u = (0..units.len()).rev().find(|&u| b >= 1u64 << (10 * u)).unwrap_or(0);
    format!("{:.2} {}", b as f64 / (1u64 << (10 * u)) as f64, units[u])
}

/// One cell of redb's table, and the number it is ranked by (smaller is better).
fn redb_cell(e: &EngineResult, cell: &RedbCell) -> (String, Option<f64>) {
    let phase = |name: &str| e.phases.iter().find(|p| p.name == name);
    let shown = |p: &PhaseResult| matches!(p.status, Status::Ok | Status::Expected);
    match cell {
        RedbCell::Absent => ("-".into(), None),
        RedbCell::Time(name) => match phase(name) {
            Some(p) if shown(p) => {
                let ms = crate::wall_ns(p) as f64 / 1e6;
                (format!("{ms:.0}ms"), Some(ms))
            }
            Some(p) => (status_word(p.status), None),
            None => ("-".into(), None),
        },
        RedbCell::Size(name) => match phase(name).map(|p| (p, p.disk.as_ref())) {
            Some((p, Some(d))) if shown(p) => (redb_size(d.space_bytes), Some(d.space_bytes as f64)),
            Some((p, _)) if !shown(p) => (status_word(p.status), None),
            _ => ("-".into(), None),
        },
    }
}

/// A phase's status as the result file spells it (`failed`, `n/a`...).
fn status_word(s: Status) -> String {
    serde_json::to_value(s).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// One of redb's rows: its name, then a cell per store, the smallest in bold as redb marks it.
fn redb_row(r: &RunResult, name: &str, cell: &RedbCell) -> Vec<String> {
    let cells: Vec<(String, Option<f64>)> = r.engines.iter().map(|e| redb_cell(e, cell)).collect();
    let best = cells
        .iter()
        .enumerate()
        .filter_map(|(i, (_, v))| v.map(|v| (i, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    let marked =
        cells.into_iter().enumerate().map(|(i, (text, _))| if Some(i) == best { format!("**{text}**") } else { text });
    std::iter::once(name.to_string()).chain(marked).collect()
}

/// The differences from redb's harness that a reader of the table must know.
const REDB_DIFFERENCES: [&str; 8] = [
    "keys are 24 bytes derived from the record number (kvbench's `random` key kind), values 150 random bytes: \
     redb's shape, not its fastrand stream",
    "`--records N` scales the reads, range reads and removals as shares of the records in the store, the \
     shares redb's counts are at 5 000 000 (1 000 000 reads, 500 000 range reads, half removed); the writes \
     keep redb's counts",
    "the bulk load and the removal commit every 1 000 000 records (kvbench's largest batch): one transaction \
     up to that size, as redb's (whose harness itself commits RocksDB's load every 100 000)",
    "len() is not measured: kvbench has no count operation",
    "each cell is the phase's wall time, redb's one clock around the loop; kvbench also times every operation \
     (the phase tables below) and checks every value read, where redb sums one byte of each",
    "reads on N threads split the records as kvbench splits a phase (unit j on thread j mod N), not in N \
     contiguous shards",
    "each store runs with kvbench's settings for it (the row's settings in the JSON), not redb's harness's \
     (a 4 GiB cache for each; RocksDB as an OptimisticTransactionDB with a bloom filter)",
    "sizes are allocated blocks, not file lengths; compaction is each engine's settle step: redb compacts \
     its file, RocksDB and fjall compact the whole key range, SQLite checkpoints its WAL (redb's harness \
     runs VACUUM), LMDB and libmdbx sync, where redb's harness copies LMDB with compaction",
];

fn redb(r: &RunResult) -> Section {
    let rows = REDB_ROWS.iter().map(|(name, cell)| redb_row(r, name, cell)).collect();
    let mut note = format!(
        "the table redb's README prints from crates/redb-bench/benches/lmdb_benchmark.rs, {} records; the smallest of each \
         row in bold. redb's own figures (5 000 000 records, its README of 2025-08-07), redb / lmdb / rocksdb \
         / fjall / sqlite: bulk load 17063 / 9232 / 13969 / 18619 / 15341 ms; random reads 1138 / 637 / \
         2911 / 2177 / 4283 ms; removals 23297 / 10435 / 6900 / 6004 / 10323 ms; compacted size 1.69 GiB / \
         1.26 GiB / 454.71 MiB / 1000.95 MiB / 556.85 MiB.\nwhere kvbench's method differs from redb's:",
        r.plan.unique_records
    );
    for d in REDB_DIFFERENCES {
        note.push_str("\n- ");
        note.push_str(d);
    }
    let mut headers = vec![String::new()];
    headers.extend(r.engines.iter().map(|e| e.label.clone()));
    let n = headers.len();
    Section { title: "redb's benchmark table".into(), note, headers, rows, best: vec![None; n], priority: vec![0; n] }
}

#[cfg(test)]
mod tests {
    use kvbench_model::result::{Disk, Latency};

    use super::*;

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
        RunResult { scenario: scenario.into(), engines: vec![e], ..Default::default() }
    }

    #[test]
    fn only_reference_scenarios_get_a_section() {
        assert!(reference_section(&run("ycsb-a", vec![phase("get", "get")])).is_none());
        assert!(reference_section(&run("ref-dbbench", vec![])).is_some());
    }

    #[test]
    fn dbbench_rows_are_report_tsv_columns_and_leave_the_settle_out() {
        let s = reference_section(&run("ref-dbbench", vec![phase("readrandom", "get"), phase("settle", "settle")]))
            .unwrap();
        assert_eq!(s.rows.len(), 1);
        let row = &s.rows[0];
        assert_eq!(row.len(), s.headers.len());
        assert_eq!(&row[..3], ["1000", "4.0 KiB", "3.50"]);
        assert_eq!(&row[4..6], ["2.0", "9.0"]);
        assert_eq!(row[9], "25.0", "1 stall in 4 whole intervals");
        assert_eq!(row[13], "readrandom.t16");
    }

    #[test]
    fn a_scan_counts_once_as_the_peers_count_it_not_per_record() {
        let scan = PhaseResult { requests: 200, ..phase("fwdrange", "scan") };
        let s = reference_section(&run("ref-dbbench", vec![phase("open", "open"), scan])).unwrap();
        assert_eq!(s.rows.len(), 1, "the open step is not a test");
        assert_eq!(s.rows[0][0], "100", "200 seeks of 2000 records at 1000 records/s");
    }

    #[test]
    fn pebble_rows_are_its_mixed_phases_with_device_bytes() {
        let s = reference_section(&run("ref-pebble-ycsb", vec![phase("load", "load"), phase("A", "mixed")])).unwrap();
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
            disk: Some(Disk { space_bytes: space, ..Default::default() }),
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
            engines: vec![engine("redb", 1700, Status::Ok), engine("lmdb", 900, Status::NotApplicable)],
            ..Default::default()
        };
        let s = reference_section(&r).unwrap();
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
