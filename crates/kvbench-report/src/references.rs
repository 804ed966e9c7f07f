//! A reference suite's own table, for a run of `ref-dbbench` (RocksDB's benchmark.sh) or
//! `ref-pebble-ycsb` (Pebble's `ycsb` command): the peer's columns, filled from kvbench's
//! result, one row per test and store. The scenario's intent, printed above every report,
//! lists the differences from the peer's method; the peer's published figures, where there
//! are some, are quoted in the note.

use kvbench_core::result::{EngineResult, PhaseResult, RunResult, Status};

use crate::{human_bytes, pooled_histogram, Section};

/// The peer's table for a reference scenario's result; None for any other scenario.
pub fn reference_section(r: &RunResult) -> Option<Section> {
    match r.scenario.as_str() {
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
    let pick = |f: fn(&kvbench_core::result::Latency) -> u64| lat.map_or("-".into(), |l| us(f(l)));
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
    let pick = |f: fn(&kvbench_core::result::Latency) -> u64| lat.map_or("-".into(), |l| ms(f(l)));
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

#[cfg(test)]
mod tests {
    use kvbench_core::result::{Disk, Latency};

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
}
