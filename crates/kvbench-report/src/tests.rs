//! Report tests on a fixed, hand-made result (the deterministic mock: no clock, no engine):
//! real HdrHistograms built from a fixed quantile function, one-second intervals, a Go row
//! with allocation counters, a server row whose space is not measured, and a failed row.
//! Any change in a format shows up as a snapshot diff.

use super::*;
use kvbench_model::histogram::{encode_histogram, new_histogram, summarize};
use kvbench_model::result::*;

/// A histogram of `n` latencies around `p50` with an exponential tail (deterministic).
fn hist(n: u64, p50: u64) -> hdrhistogram::Histogram<u64> {
    let mut h = new_histogram();
    for i in 1..=n {
        let q = i as f64 / (n + 1) as f64;
        let v = p50 as f64 * (0.5 + 0.5 * (-(1.0 - q).ln()) / std::f64::consts::LN_2);
        h.record(v.max(1.0) as u64).unwrap();
    }
    h
}

/// One-second intervals of a phase lasting `secs`, the third one slower (a stall).
fn intervals(secs: u64, ops_per_sec: u64, p50: u64) -> Vec<Interval> {
    (0..secs)
        .map(|s| {
            let slow = if s == 2 { 4 } else { 1 };
            let h = hist(200, p50 * slow);
            Interval {
                t_ms: s * 1000,
                ops: ops_per_sec / slow,
                errors: 0,
                p50_ns: h.value_at_quantile(0.5),
                p99_ns: h.value_at_quantile(0.99),
                max_ns: h.max(),
                hdr: encode_histogram(&h),
            }
        })
        .collect()
}

fn phase(name: &str, kind: &str, ops: u64, wall_ns: u64, p50: u64) -> PhaseResult {
    let secs = wall_ns / 1_000_000_000;
    PhaseResult {
        name: name.into(),
        kind: kind.into(),
        ops,
        requests: ops,
        unit: "op".into(),
        elapsed_ns: wall_ns * 9 / 10,
        wall_ns,
        busy_ns: wall_ns * 9 / 10,
        harness_share: 0.1 * 0.9,
        ops_per_sec: if wall_ns == 0 { 0.0 } else { ops as f64 / (wall_ns as f64 / 1e9) },
        latency: summarize(&hist(ops.clamp(1, 2000), p50)),
        intervals: if secs >= 1 { intervals(secs, ops / secs, p50) } else { Vec::new() },
        threads: 1,
        batch: 1,
        cache: "warm".into(),
        ..Default::default()
    }
}

fn engine(label: &str, scale: u64) -> EngineResult {
    EngineResult {
        label: label.into(),
        engine: label.into(),
        runtime: "rust".into(),
        version: "1.0".into(),
        sync: "commit".into(),
        phases: vec![
            phase("open", "open", 1, 1_000_000, 1_000_000),
            phase("load", "load", 100_000, 2_000_000_000 * scale, 1500 * scale),
            phase("get", "get", 100_000, 1_000_000_000 * scale, 400 * scale),
            PhaseResult {
                status: Status::NotApplicable,
                reason: Some("engine has no ordered scan".into()),
                ..phase("scan", "scan", 0, 0, 1)
            },
            phase("close", "close", 1, 100_000, 100_000),
        ],
        space_bytes: 2_000_000 * scale,
        apparent_bytes: 1_900_000,
        space_amplification: 1.5 * scale as f64,
        ..Default::default()
    }
}

pub(crate) fn fixture() -> RunResult {
    let mut go = engine("go-thing", 2);
    go.runtime = "go".into();
    go.version = "v1.4.2 (go1.23.4)".into();
    for p in go.phases.iter_mut() {
        p.runtime.insert("alloc_bytes".into(), p.ops as f64 * 48.0);
        p.runtime.insert("mallocs".into(), p.ops as f64 * 2.0);
    }
    go.phases[2].harness_share = 0.25;
    let mut server = engine("server", 4);
    server.version = "redis-server 7.0.15 (git:00000000 build 4f09c66d2e2b1c0a, malloc=jemalloc-5.3.0 bits=64)".into();
    server.settings.insert("url".into(), "unix:///tmp/x.sock".into());
    server.space_bytes = 4096;
    server.space_amplification = 0.0;
    let failed = EngineResult {
        label: "broken".into(),
        engine: "broken".into(),
        runtime: "rust".into(),
        status: Status::Failed,
        error: Some("worker exited with signal 9 during phase get".into()),
        phases: vec![phase("load", "load", 100_000, 9_000_000_000, 3000)],
        ..Default::default()
    };
    RunResult {
        schema: SCHEMA.into(),
        kvbench_version: "0.1.0".into(),
        run_id: "20260101-000000-test".into(),
        started_at: 1_767_225_600,
        scenario: "test".into(),
        command: vec!["kvbench".into(), "run".into()],
        intent: "Snapshot fixture.".into(),
        sync: "commit".into(),
        plan: PlanInfo {
            hash: "00ff".into(),
            seed: 1,
            records: 100_000,
            unique_records: 100_000,
            raw_bytes: 11_600_000,
            generation_ns: 1,
            reused: false,
            trace: None,
        },
        workload: serde_json::json!({}),
        environment: Environment {
            hostname: "host".into(),
            os: "Debian GNU/Linux 12 (bookworm)".into(),
            kernel: "6.1.0".into(),
            cpu_model: "Test CPU".into(),
            cores: 2,
            memory_bytes: 24 << 30,
            data_dir: "/data".into(),
            filesystem: "ext4".into(),
            build: "release".into(),
            load_average: 0.1,
            read_ahead_kb: None,
        },
        warnings: vec!["a sample warning".into()],
        engines: vec![engine("fast", 1), engine("slow", 3), go, server, failed],
    }
}

/// The fixture with three repetitions of each row, ops/s varied by a few percent.
pub(crate) fn repeated(r: &RunResult, jitter: &[f64]) -> RunResult {
    let mut out = r.clone();
    out.engines.clear();
    // Another run: its id differs as its figures do.
    out.run_id = format!("{}-x{:?}", r.run_id, jitter);
    for (rep, j) in jitter.iter().enumerate() {
        for e in &r.engines {
            let mut e = e.clone();
            e.repetition = rep as u32;
            for p in e.phases.iter_mut() {
                p.ops_per_sec *= j;
            }
            out.engines.push(e);
        }
    }
    out
}

/// Issue 42: repetitions whose histograms each hold `i64::MAX` samples pooled beyond what the
/// V2 encoding writes; every people's format renders (the crafted histograms refused), no panic.
#[test]
fn regression_histogram_counts_of_2_pow_63_render_without_a_panic() {
    let mut h = new_histogram();
    h.record_n(1000, i64::MAX as u64).unwrap();
    let hdr = encode_histogram(&h);
    let mut r = repeated(&fixture(), &[1.0, 1.01]);
    for p in r.engines.iter_mut().flat_map(|e| e.phases.iter_mut()) {
        if let Some(l) = p.latency.as_mut() {
            l.hdr = hdr.clone();
        }
    }
    for fmt in [Format::Table, Format::Markdown, Format::Html, Format::Csv] {
        assert!(!render(&r, fmt).is_empty(), "{fmt:?}");
    }
}

/// Issue 42: a label from a crafted result reaches `report -f csv` with its ESC and BEL
/// escaped, as the table shows them.
#[test]
fn regression_csv_escapes_control_characters_of_labels() {
    let mut r = fixture();
    r.engines[0].label = "evil\u{1b}]0;title\u{7}\u{1b}[31m".into();
    let text = render(&r, Format::Csv);
    assert!(!text.contains(['\u{1b}', '\u{7}']), "{text}");
    assert!(text.contains("evil\\u001b]0;title\\u0007\\u001b[31m"), "{text}");
}

#[test]
fn table_snapshot() {
    insta::assert_snapshot!(text_table(&preamble(&fixture()), &sections(&fixture())));
}

#[test]
fn table_fits_100_columns() {
    let t = text_table_width(&preamble(&fixture()), &sections(&fixture()), Some(100));
    for l in t.lines() {
        assert!(l.chars().count() <= 100, "{} chars: {l}", l.chars().count());
    }
    assert!(t.contains("left out to fit"), "columns were dropped and said so");
    insta::assert_snapshot!(t);
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(markdown(&fixture(), &ReportOptions::default()));
}

#[test]
fn csv_snapshot() {
    insta::assert_snapshot!(csv(&fixture()));
}

#[test]
fn csv_leaves_unmeasured_cells_empty_and_says_why() {
    let text = csv(&fixture());
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let scan = text.lines().find(|l| l.contains(",fast,") && l.contains(",scan,")).unwrap();
    let cells: Vec<&str> = scan.split(',').collect();
    assert_eq!(cells[col("reason")], "engine has no ordered scan");
    for c in ["ops_per_sec", "p50_ns", "p95_ns", "wall_ns", "cpu_user_ns"] {
        assert_eq!(cells[col(c)], "", "{c} of an n/a phase");
    }
    let server = text.lines().find(|l| l.contains(",server,") && l.contains(",get,")).unwrap();
    assert_eq!(server.split(',').nth(col("space_bytes")).unwrap(), "", "server space is not measured");
    let go = text.lines().find(|l| l.contains(",go-thing,") && l.contains(",get,")).unwrap();
    assert_eq!(go.split(',').nth(col("alloc_bytes")).unwrap(), "4800000");
}

#[test]
fn server_space_is_a_dash_with_a_note_and_never_best() {
    let s = sections(&fixture());
    let sum = &s[0];
    let row = sum.rows.iter().position(|r| r[0] == "server").unwrap();
    assert_eq!(sum.rows[row][7], "–");
    assert_ne!(sum.best[7], Some(row));
    assert_eq!(sum.best[7], Some(0), "fast has the least space");
    assert!(sum.note.contains("own files): server"), "{}", sum.note);
}

#[test]
fn a_rows_log_files_are_named_apart_in_its_space_cell() {
    let mut run = fixture();
    run.engines[0].log_space_bytes = 300 << 20;
    let sum = &sections(&run)[0];
    assert!(sum.rows[0][7].ends_with("(logs 300.0 MiB)"), "{}", sum.rows[0][7]);
    assert!(!sum.rows[1][7].contains("logs"), "a row without log files: {}", sum.rows[1][7]);
}

#[test]
fn repetitions_median_their_log_space_with_their_space() {
    let mut run = fixture();
    let mut reps = Vec::new();
    for (rep, logs) in [(0, 10u64 << 20), (1, 30 << 20), (2, 20 << 20)] {
        let mut row = run.engines[0].clone();
        (row.repetition, row.log_space_bytes) = (rep, logs);
        reps.push(row);
    }
    run.engines = reps;
    let (collapsed, _) = collapse(&run);
    assert_eq!(collapsed.engines[0].log_space_bytes, 20 << 20);
}

#[test]
fn long_versions_are_shortened() {
    assert_eq!(short_version("1.0"), "1.0");
    assert_eq!(short_version("redis-server 7.0.15 (git:00000000 build 4f09c66d2e2b1c0a)"), "7.0.15…");
    let s = sections(&fixture());
    assert!(s[0].rows.iter().all(|r| r[1].chars().count() <= 20));
}

#[test]
fn html_shows_versions_whole() {
    let r = fixture();
    let whole = &r.engines[3].version;
    assert!(whole.chars().count() > 20, "the fixture's server banner is long");
    let page = render(&r, Format::Html);
    assert!(page.contains(&format!("<td class=\"text\">{}</td>", svg::esc(whole))), "version cell whole");
    assert!(!render(&r, Format::Markdown).contains(whole.as_str()), "a table still shortens it");
}

#[test]
fn percentiles_are_an_option_of_each_report_not_process_state() {
    let r = fixture();
    let tail = ReportOptions::with_percentiles(Some(vec![50.0, 99.99]));
    // Two reports with different options from the same process, in either order.
    let a = render_with(&r, Format::Markdown, &tail);
    let b = render(&r, Format::Markdown);
    let c = render_with(&r, Format::Markdown, &tail);
    assert!(a.contains("p99.99") && !a.contains("p95"), "{a}");
    assert!(b.contains("p95") && !b.contains("p99.99"), "{b}");
    assert_eq!(a, c);
    assert_eq!(ReportOptions::with_percentiles(None), ReportOptions::default());
}

/// The fixture with `n` rows in all, half the extra ones in runtime `rust`, the others `go` or `python`.
pub(crate) fn many_rows(n: usize) -> RunResult {
    let mut r = fixture();
    let base = r.engines[0].clone();
    for i in r.engines.len()..n {
        let mut e = base.clone();
        e.label = format!("row-{i:02}");
        e.runtime = ["rust", "rust", "go", "python"][i % 4].into();
        r.engines.push(e);
    }
    r
}

/// The labels of the rows drawn in each `latency-PHASE` figure of `page`.
pub(crate) fn latency_groups(page: &str, phase: &str) -> Vec<Vec<String>> {
    page.split(&format!("data-chart=\"latency-{phase}\""))
        .skip(1)
        .map(|fig| {
            let fig = fig.split("</figure>").next().unwrap_or("");
            fig.split("<g class=\"series\"><title>")
                .skip(1)
                .map(|t| t.split(['<', ' ']).next().unwrap_or("").to_string())
                .collect()
        })
        .collect()
}

/// `r` with row `fast`'s scan phase measured on three samples (three scans).
pub(crate) fn three_sample_scan(mut r: RunResult) -> RunResult {
    let e = r.engines.iter_mut().find(|e| e.label == "fast").expect("row fast");
    let scan = e.phases.iter_mut().find(|p| p.name == "scan").expect("scan phase");
    *scan = PhaseResult { latency: summarize(&hist(3, 90_000)), ..phase("scan", "scan", 3, 300_000, 90_000) };
    r
}

#[test]
fn html_percentile_chart_of_30_rows_is_grouped_by_runtime() {
    let page = render(&many_rows(30), Format::Html);
    let groups = latency_groups(&page, "get");
    assert!(groups.len() >= 3, "{} groups", groups.len());
    assert!(groups.iter().all(|g| !g.is_empty() && g.len() <= 12), "{groups:?}");
    // 29 rows measured get (the broken row did not): each drawn once.
    let mut all: Vec<&String> = groups.iter().flatten().collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 29, "{all:?}");
    assert_eq!(groups.iter().map(Vec::len).sum::<usize>(), 29);
    assert!(page.contains("data-group=\"rust rows, 1–"), "the rust group is split by p50");
    // A run of few rows keeps one chart.
    assert_eq!(latency_groups(&render(&fixture(), Format::Html), "get").len(), 1);
}

#[test]
fn regression_a_short_timeline_axis_reads_milliseconds_not_zero_seconds() {
    let mut r = fixture();
    // A 4 ms phase with intervals every millisecond.
    let p = &mut r.engines[1].phases[2];
    p.wall_ns = 4_000_000;
    for (i, iv) in p.intervals.iter_mut().enumerate() {
        iv.t_ms = i as u64;
    }
    let page = render(&r, Format::Html);
    let tl = page.split("data-chart=\"timeline-get\"").nth(1).unwrap();
    let slow = tl.split("timeline of slow").nth(1).unwrap().split("</svg>").next().unwrap();
    assert!(slow.contains(">1 ms</text>") && !slow.contains(">0s</text>"), "{slow}");
}

#[test]
fn html_is_self_contained_with_every_chart() {
    let h = render(&fixture(), Format::Html);
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(!h.contains("<script"), "no scripts");
    assert!(!h.contains("http://") && !h.contains("https://"), "no network references");
    assert!(h.contains("class=\"best\""));
    for id in
        ["load-time", "space", "throughput-load", "latency-get", "throughput-get", "timeline-get", "timeline-load"]
    {
        assert!(h.contains(&format!("data-chart=\"{id}\"")), "chart {id}");
    }
    for label in ["99.999%", "percentile", "operations per second", "time into the phase", "raw data"] {
        assert!(h.contains(label), "label {label}");
    }
    assert!(h.contains("<title>slow, 2–3 s:"), "hover values on timeline intervals");
}

#[test]
fn html_aggregates_repetitions() {
    let r = repeated(&fixture(), &[1.0, 0.95, 1.05]);
    let h = render(&r, Format::Html);
    let throughput = h.split("data-chart=\"throughput-get\"").nth(1).unwrap().split("</figure>").next().unwrap();
    assert_eq!(throughput.matches(">fast</text>").count(), 1, "one bar per row, not per repetition");
    assert!(throughput.contains("class=\"whisker\""), "min–max whisker");
    assert!(throughput.contains("median of 3"));
}

#[test]
fn json_round_trips() {
    let r = fixture();
    let text = render(&r, Format::Json);
    let back = RunResult::from_json(&text).unwrap();
    assert_eq!(render(&back, Format::Json), text);
    assert_eq!(back.engines.len(), r.engines.len());
}

#[test]
fn the_best_value_is_marked_per_column() {
    let s = sections(&fixture());
    let get = s.iter().find(|s| s.title == "Phase get").unwrap();
    assert_eq!(get.best[1], Some(0), "fast has the best ops/s");
    assert_eq!(get.headers[2], "MB/s");
    assert_eq!(get.best[2], None, "MB/s ranks as ops/s: not marked twice");
    assert_eq!(get.best[3], Some(0), "and the best p50");
    assert!(get.rows[4][1].starts_with("- ("), "{:?}", get.rows[4]);
    assert!(get.note.contains("WARNING: the harness"), "{}", get.note);
    assert!(get.headers.contains(&"p95".to_string()) && get.headers.contains(&"B/op".to_string()));
}

#[test]
fn no_best_between_rows_measured_differently() {
    let mut r = fixture();
    r.engines[1].phases[2].threads = 4;
    let s = sections(&r);
    let get = s.iter().find(|s| s.title == "Phase get").unwrap();
    assert!(get.best.iter().all(|b| b.is_none()), "{:?}", get.best);
    assert!(get.note.contains("no best marked"));
    let t = text_table(&[], std::slice::from_ref(get));
    assert!(!t.contains("* best"), "no footer without a mark");
}

#[test]
fn a_foreign_file_is_refused_with_a_reason() {
    assert!(RunResult::from_json("{}").unwrap_err().contains("schema"));
    assert!(RunResult::from_json("{\"schema\":\"other/9\"}").unwrap_err().contains("other/9"));
}

#[test]
fn repetitions_collapse_to_the_median_and_flag_a_wide_spread() {
    let mut r = fixture();
    r.engines.truncate(1);
    let mut second = r.engines[0].clone();
    second.repetition = 1;
    let mut third = r.engines[0].clone();
    third.repetition = 2;
    // get: 100k, 50k, 150k ops/s -> median 100k, range 100% of it.
    second.phases[2].ops_per_sec = 5e4;
    third.phases[2].ops_per_sec = 1.5e5;
    r.engines.push(second);
    r.engines.push(third);
    let s = sections(&r);
    assert_eq!(s[0].rows.len(), 1, "one summary row per label");
    let get = s.iter().find(|s| s.title == "Phase get").unwrap();
    assert_eq!(get.rows[0][1], "100.0k ±50% ! (n=3)");
    assert!(get.note.contains("median of repetitions"));
}

#[test]
fn ratios_the_scenario_asks_for_are_computed() {
    let mut r = fixture();
    r.workload = serde_json::json!({"ratio": [
        {"phase": "get", "numerator": "fast", "denominator": "slow"},
        {"phase": "get", "numerator": "fast", "denominator": "broken"},
    ]});
    let s = sections(&r);
    let ratios = s.iter().find(|s| s.title == "Ratios").unwrap();
    assert_eq!(ratios.rows[0][3], "3.00x");
    assert_eq!(ratios.rows[1][3], "-", "a failed row gives no ratio");
}

#[test]
fn ycsb_lines_as_ycsb_prints_them() {
    let y = ycsb(&fixture());
    let block = y.split("# engine fast (repetition 0), phase get").nth(1).unwrap();
    assert!(block.contains("[OVERALL], RunTime(ms), 1000\n"), "{block}");
    assert!(block.contains("[OVERALL], Throughput(ops/sec), 100000\n"));
    assert!(block.contains("[READ], Operations, 2000\n"));
    assert!(block.contains("[READ], 95thPercentileLatency(us), 1\n"));
    for k in ["AverageLatency(us)", "MinLatency(us)", "MaxLatency(us)", "99thPercentileLatency(us)", "Return=OK"] {
        assert!(block.contains(&format!("[READ], {k}, ")), "{k}");
    }
    assert!(y.contains("[INSERT], Operations"));
    assert!(y.contains("# not measured: engine has no ordered scan"));
}

#[test]
fn regression_ycsb_operations_of_a_batched_load_count_records_not_batches() {
    let mut r = fixture();
    let load = r.engines[0].phases.iter_mut().find(|p| p.name == "load").unwrap();
    (load.unit, load.requests) = ("batch".into(), 100);
    load.latency = summarize(&hist(100, 3000));
    let y = ycsb(&r);
    let block = y.split("# engine fast (repetition 0), phase load").nth(1).unwrap();
    assert!(
        block.starts_with(
            " (load, latency per batch; Operations counts records: 1000.0 records per batch on average, 100 samples)"
        ),
        "{block}"
    );
    assert!(block.contains("[INSERT], Operations, 100000\n"), "{block}");
}

#[test]
fn hlog_files_read_back_as_interval_logs() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let files = hlog_files(&fixture());
    let (name, text) = files.iter().find(|(n, _)| n == "slow-r0-get.hlog").expect("slow get log");
    assert!(text.starts_with("#[Histogram log format version 1.3]"), "{name}");
    let mut n = 0;
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        if let Ok(LogEntry::Interval(h)) = entry {
            let hist = kvbench_model::histogram::decode_histogram(h.encoded_histogram()).unwrap();
            assert_eq!(hist.len(), 200);
            assert_eq!(h.start_timestamp().as_secs(), n);
            n += 1;
        }
    }
    assert_eq!(n, 3, "one histogram per second of the 3 s phase");
}

/// The hlog lines are written from the result's encodings without decoding them: they must be
/// the ones HdrHistogram's own interval log writer makes from the decoded histograms.
#[test]
fn hlog_lines_are_the_interval_log_writers_without_decoding() {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    use hdrhistogram::serialization::V2DeflateSerializer;
    use std::time::Duration;
    let r = fixture();
    let files = hlog_files(&r);
    let (_, text) = files.iter().find(|(n, _)| n == "slow-r0-get.hlog").unwrap();
    let p = r.engines.iter().find(|e| e.label == "slow").unwrap().phases.iter().find(|p| p.name == "get").unwrap();
    let (mut buf, mut ser) = (Vec::new(), V2DeflateSerializer::new());
    let mut w = IntervalLogWriterBuilder::new().with_max_value_divisor(1e6).begin_log_with(&mut buf, &mut ser).unwrap();
    let end_ms = crate::wall_ns(p) / 1_000_000;
    for (i, iv) in p.intervals.iter().enumerate() {
        let h = kvbench_model::histogram::decode_histogram(&iv.hdr).unwrap();
        let next = p.intervals.get(i + 1).map(|n| n.t_ms).unwrap_or(end_ms);
        let len = Duration::from_millis(next - iv.t_ms);
        w.write_histogram(&h, Duration::from_millis(iv.t_ms), len, None).unwrap();
    }
    drop(w);
    let theirs = String::from_utf8(buf).unwrap();
    let lines = |t: &str| t.lines().filter(|l| !l.starts_with('#')).map(String::from).collect::<Vec<_>>();
    assert_eq!(lines(text), lines(&theirs));
    assert_eq!(lines(text).len(), 3);
}

#[test]
fn compare_says_no_verdict_with_one_repetition() {
    let a = fixture();
    let mut b = fixture();
    b.engines[0].phases[2].ops_per_sec *= 2.0;
    b.plan.hash = "other".into();
    let (pre, s) = compare(&a, &b, &Method::default());
    assert!(pre.iter().any(|l| l.contains("different plans")));
    let get = s.iter().find(|s| s.title == "Phase get").unwrap();
    assert_eq!(get.rows[0][0], "fast");
    assert_eq!(get.rows[0][3], "2.00x");
    assert!(get.rows[0][4].starts_with("no verdict: 1 and 1 repetitions"), "{:?}", get.rows[0]);
}

#[test]
fn compare_gives_a_verdict_beyond_the_noise() {
    let m = Method::default();
    let a = repeated(&fixture(), &[1.0, 0.97, 1.03, 0.99, 1.01]);
    let same = repeated(&fixture(), &[1.02, 0.99, 0.98, 1.0, 1.01]);
    for c in compared(&a, &same, &m).iter().filter(|c| !c.a.is_empty()) {
        assert_eq!(c.verdict.key(), "no significant difference", "{} {}: {:?}", c.label, c.phase, c.verdict);
    }
    let faster = repeated(&fixture(), &[1.25, 1.22, 1.28, 1.24, 1.26]);
    let rows = compared(&a, &faster, &m);
    let get = rows.iter().find(|c| c.label == "fast" && c.phase == "get").unwrap();
    assert_eq!(get.verdict.key(), "faster", "{:?}", get.verdict);
    assert!(get.text().starts_with("B is 1.25x faster (B/A "), "{}", get.text());
    assert!(regressions(&rows, 5.0, false).is_empty());
    let back = compared(&faster, &a, &m);
    let slow = back.iter().find(|c| c.label == "fast" && c.phase == "get").unwrap();
    assert_eq!(slow.verdict.key(), "slower");
    assert!(!regressions(&back, 5.0, false).is_empty(), "20% slower is a regression at 5%");
    assert!(regressions(&back, 30.0, false).is_empty(), "but not at 30%");
    let j = compare_json(&a, &faster, &m);
    assert_eq!(j["rows"][0]["verdict"], "faster");
}

#[test]
fn a_slower_verdict_reads_the_same_way_as_its_ratio_column() {
    let m = Method::default();
    let a = repeated(&fixture(), &[1.0, 0.99, 1.01, 1.0, 1.0]);
    let b = repeated(&fixture(), &[0.87, 0.86, 0.88, 0.87, 0.87]);
    let (_, s) = compare(&a, &b, &m);
    let get = s.iter().find(|s| s.title == "Phase get").unwrap();
    let row = get.rows.iter().find(|r| r[0] == "fast").unwrap();
    assert_eq!(row[3], "0.87x");
    assert!(row[4].starts_with("B is 1.15x slower (B/A 0.8"), "{row:?}");
}

#[test]
fn overlapping_repetitions_are_noise_whatever_their_medians() {
    // Medians 10% apart, but the sides interleave: the rank test does not set them apart.
    let v = verdict(&[100.0, 104.0, 80.0, 96.0, 110.0], &[90.0, 101.0, 85.0, 88.0, 92.0], &Method::default());
    assert_eq!(v.key(), "no significant difference", "{v:?}");
    // Apart, but within a 15% declared minimum effect: no call either.
    let (a, b) = ([100.0, 101.0, 99.0, 100.5, 99.5], [90.0, 89.0, 91.0, 90.5, 89.5]);
    let m = Method { min_effect: 0.15, ..Default::default() };
    assert_eq!(verdict(&a, &b, &m).key(), "no significant difference");
    assert_eq!(verdict(&a, &b, &Method::default()).key(), "slower");
}

#[test]
fn three_repetitions_a_side_are_too_few_for_a_verdict_at_one_percent() {
    // Three against three, wholly apart: the exact rank test's smallest p is 0.1.
    assert!((rank_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
    let v = verdict(&[100.0, 101.0, 99.0], &[50.0, 51.0, 49.0], &Method::default());
    assert!(matches!(&v, Verdict::NoVerdict(why) if why.contains("needs 5 a side")), "{v:?}");
}

#[test]
fn the_rank_test_matches_its_tables() {
    // Mann–Whitney, n = m = 5, smaller U = 3: two-sided p = 2 × 7/252 (exact tables: 1, 1, 2, 3).
    assert!((rank_p(&[1.0, 2.0, 3.0, 5.0, 7.0], &[4.0, 6.0, 8.0, 9.0, 10.0]) - 2.0 * 7.0 / 252.0).abs() < 1e-12);
    assert_eq!(rank_p(&[1.0, 2.0], &[1.0, 2.0]), 1.0);
    // Past 40 values, the normal approximation: a clear shift is far below 1%.
    let a: Vec<f64> = (0..30).map(f64::from).collect();
    let b: Vec<f64> = (20..50).map(f64::from).collect();
    assert!(rank_p(&a, &b) < 1e-4);
}

#[test]
fn a_busy_machine_makes_verdicts_unreliable_and_the_gate_ignores_them() {
    let m = Method::default();
    let a = repeated(&fixture(), &[1.25, 1.22, 1.28, 1.24, 1.26]);
    let mut b = repeated(&fixture(), &[1.0, 0.97, 1.03, 0.99, 1.01]);
    b.run_id = "other-run".into();
    b.warnings.push("machine is busy: load average 3.00 on 2 cores before the run".into());
    let rows = compared(&a, &b, &m);
    let get = rows.iter().find(|c| c.label == "fast" && c.phase == "get").unwrap();
    assert_eq!(get.key(), "unreliable");
    assert!(get.text().starts_with("unreliable (B: machine is busy"), "{}", get.text());
    assert!(regressions(&rows, 5.0, false).is_empty(), "not without --strict");
    assert!(!regressions(&rows, 5.0, true).is_empty(), "with --strict");
    let (pre, _) = compare(&a, &b, &m);
    assert!(pre.iter().any(|l| l.starts_with("WARNING: every verdict is unreliable: B: machine is busy")), "{pre:?}");
}

#[test]
fn comparing_a_run_with_itself_says_so() {
    let a = repeated(&fixture(), &[1.0, 0.97, 1.03]);
    let (pre, _) = compare(&a, &a, &Method::default());
    assert!(pre.iter().any(|l| l.contains("A and B are the same run")), "{pre:?}");
}

#[test]
fn compare_lists_the_settings_that_differ() {
    let a = fixture();
    let mut b = fixture();
    b.sync = "none".into();
    b.environment.hostname = "other".into();
    for e in b.engines.iter_mut() {
        for p in e.phases.iter_mut().filter(|p| p.name == "get") {
            p.threads = 2;
        }
    }
    b.engines[0].version = "1.1".into();
    let d = differences(&a, &b);
    assert!(d.contains(&"machine: A host, B other".to_string()), "{d:?}");
    assert!(d.contains(&"sync: A commit, B none".to_string()), "{d:?}");
    assert!(d.iter().any(|l| l == "get threads: A 1, B 2 (fast, slow, go-thing, server)"), "{d:?}");
    assert!(d.iter().any(|l| l == "version: A 1.0, B 1.1 (fast)"), "{d:?}");
    assert!(differences(&a, &a).is_empty());
    b.engines.retain(|e| e.label != "broken");
    assert!(differences(&a, &b).contains(&"rows only in A: broken".to_string()));
}

#[test]
fn a_saturated_load_generator_is_a_warning_on_its_row_in_every_format() {
    let mut r = fixture();
    let server = r.engines.iter_mut().find(|e| e.label == "server").unwrap();
    let get = server.phases.iter_mut().find(|p| p.name == "get").unwrap();
    get.notes.push("load generator saturated: its threads were on CPU 97% of the phase".into());
    let s = sections(&r);
    let get = s.iter().find(|s| s.note.contains("load generator saturated")).expect("a section with the note");
    assert!(
        get.note.contains("WARNING: load generator saturated: its threads were on CPU 97% of the phase (server)"),
        "{}",
        get.note
    );
    for f in [Format::Table, Format::Markdown, Format::Html] {
        assert!(render(&r, f).contains("load generator saturated"), "{f:?}");
    }
}

#[test]
fn a_run_without_budget_says_its_store_fits_in_memory() {
    let line = crate::regime(&fixture());
    assert!(line.contains("no memory budget") && line.contains("fits in memory"), "{line}");
}

#[test]
fn regression_a_row_whose_budget_was_not_applied_is_not_said_to_fit_in_memory() {
    let mut r = fixture();
    for e in r.engines.iter_mut() {
        e.budget_requested = Some(128 << 20);
        e.status = Status::Failed;
    }
    let line = crate::regime(&r);
    assert!(line.contains("memory budget 128.0 MiB NOT applied to fast,"), "{line}");
    assert!(!line.contains("fits in memory") && !line.contains("no memory budget"), "{line}");
    let e = &r.engines[0];
    assert!(crate::row_regime(&r, e).contains("128.0 MiB NOT applied"));
}

#[test]
fn each_budgeted_row_states_its_peak_limit_hits_and_oom_kills() {
    use kvbench_model::result::Budget;
    let mut r = fixture();
    let b = Budget { limit_bytes: 64 << 20, peak_bytes: 64 << 20, limit_hits: 36238, ..Default::default() };
    r.engines[0].budget = Some(b.clone());
    r.engines[1].budget = Some(Budget { oom_kills: 1, limit_hits: 5, ..b });
    let line = crate::regime(&r);
    let (a, b) = (&r.engines[0].label, &r.engines[1].label);
    assert!(line.contains(&format!("{a}: peak 64.0 MiB, 36238 limit hits, 0 OOM kills")), "{line}");
    assert!(line.contains(&format!("{b}: peak 64.0 MiB, 5 limit hits, 1 OOM kills")), "{line}");
    assert!(line.contains("without a budget: "), "{line}");
}

#[test]
fn a_budget_and_what_the_disk_saw_are_stated_in_every_format() {
    use kvbench_model::result::{Budget, Disk};
    let mut r = fixture();
    for e in r.engines.iter_mut() {
        e.budget = Some(Budget { limit_bytes: 4 << 20, peak_bytes: 4 << 20, ..Default::default() });
        for p in e.phases.iter_mut().filter(|p| p.name == "get") {
            let disk = Disk { read_bytes: p.ops * 4096, logical_read_bytes: p.ops * 116, ..Default::default() };
            p.disk = Some(Disk { read_amplification: 4096.0 / 116.0, ..disk });
        }
    }
    let table = text_table(&preamble(&r), &sections(&r));
    assert!(
        table.contains("memory budget per row (a cgroup: heap and page cache) 4.0 MiB: the data is 2.77x the budget"),
        "{table}"
    );
    assert!(table.contains("disk r/op") && table.contains("4.0 KiB") && table.contains("35.31x"), "{table}");
    let html = crate::render(&r, crate::Format::Html);
    assert!(html.contains("4.0 MiB: the data is 2.77x the budget"));
    let csv = crate::csv(&r);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with("read_amplification,write_amplification,cached_at_start,budget_bytes,budget_peak_bytes"));
    assert!(csv.lines().any(|l| l.contains(",35.310,") && l.ends_with(",4194304,4194304")), "{csv}");
}

#[test]
fn github_action_benchmark_lists_ops_per_row_and_phase_bigger_is_better() {
    let r = repeated(&fixture(), &[1.0, 0.9, 1.1]);
    let j: serde_json::Value = serde_json::from_str(&render(&r, Format::GithubActionBenchmark)).unwrap();
    let list = j.as_array().unwrap();
    let get = list.iter().find(|e| e["name"].as_str().unwrap().ends_with(" fast get")).expect("fast get");
    let median = fixture().engines[0].phases.iter().find(|p| p.name == "get").unwrap().ops_per_sec;
    assert_eq!(get["unit"], "ops/s");
    assert!((get["value"].as_f64().unwrap() - median).abs() < 1e-6);
    assert!(list.iter().all(|e| e["value"].as_f64().unwrap() > 0.0), "only phases that ran");
}

#[test]
fn bencher_metrics_carry_the_repetitions_range() {
    let r = repeated(&fixture(), &[1.0, 0.9, 1.1]);
    let j: serde_json::Value = serde_json::from_str(&render(&r, Format::Bencher)).unwrap();
    let (name, m) = j.as_object().unwrap().iter().find(|(k, _)| k.ends_with(" fast get")).expect("fast get");
    let t = &m["throughput"];
    assert!(
        t["lower_value"].as_f64() < t["value"].as_f64() && t["value"].as_f64() < t["upper_value"].as_f64(),
        "{name}: {t}"
    );
    assert!(m.get("latency-p99-ns").is_some(), "{name}: {m}");
}

#[test]
fn varied_rows_get_a_verdict_against_their_first_value() {
    let mut r = repeated(&fixture(), &[1.0, 0.98, 1.02, 0.99, 1.01]);
    r.workload = serde_json::json!({ "vary": [{ "parameter": "x.opt", "labels": ["fast", "slow"] }] });
    let s = sections(&r);
    let v = s.iter().find(|s| s.title == "Varied rows").expect("a varied-rows section");
    let get: Vec<&Vec<String>> = v.rows.iter().filter(|row| row[1] == "get").collect();
    assert_eq!(get[0][2..], ["fast".to_string(), get[0][3].clone(), "1.00x".into(), "baseline".into()]);
    assert_eq!(get[1][2], "slow");
    assert!(get[1][5].starts_with("B is ") && get[1][5].contains("slower"), "{:?}", get[1]);
    assert!(!sections(&fixture()).iter().any(|s| s.title == "Varied rows"), "only when --vary made rows");
}

#[test]
fn html_rows_past_the_palette_are_dashed_and_one_interval_phases_are_said_not_drawn() {
    let mut r = fixture();
    let base = r.engines[0].clone();
    for i in 0..12 {
        let mut e = base.clone();
        e.label = format!("extra-{i}");
        r.engines.push(e);
    }
    let page = render(&r, Format::Html);
    assert!(page.contains("stroke-dasharray=\"6 3\""), "the 11th row's line is dashed");
    assert!(page.contains("class=\"dash-key\""), "and its legend key shows the dash");
    // The fixture's fast row runs its get phase in one second: one interval.
    let note = page.split("data-chart=\"timeline-short-get\">").nth(1).expect("a note for one-interval rows");
    assert!(note.starts_with("No timeline for rows whose phase fit in one interval: fast ("), "{}", &note[..120]);
}

#[test]
fn regression_a_percentile_curve_stops_where_its_samples_do() {
    // 3 samples resolve up to p66.7 (log10 3 = 0.48 nines): the curve must not reach p99.999.
    assert!((crate::html::supported_nines(3) - 3f64.log10()).abs() < 1e-9);
    assert_eq!(crate::html::supported_nines(100_000), 5.0);
    assert_eq!(crate::html::supported_nines(10_000_000), 5.0);
}
