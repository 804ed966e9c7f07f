//! Report snapshots from a fixed, hand-made result (the deterministic mock: no clock, no
//! engine), so any change in a format shows up as a snapshot diff.

use super::*;
use kvbench_core::result::*;

fn phase(name: &str, kind: &str, ops: u64, elapsed_ns: u64, p50: u64) -> PhaseResult {
    PhaseResult {
        name: name.into(),
        kind: kind.into(),
        ops,
        requests: ops,
        unit: "op".into(),
        elapsed_ns,
        ops_per_sec: if elapsed_ns == 0 { 0.0 } else { ops as f64 / (elapsed_ns as f64 / 1e9) },
        latency: Some(Latency {
            min_ns: p50 / 2,
            mean_ns: p50 as f64 * 1.1,
            p50_ns: p50,
            p90_ns: p50 * 2,
            p95_ns: p50 * 2,
            p99_ns: p50 * 4,
            p999_ns: p50 * 8,
            max_ns: p50 * 100,
            stdev_ns: p50 as f64,
            hdr: "HISTFAKE".into(),
        }),
        threads: 1,
        batch: 1,
        cache: "warm".into(),
        ..Default::default()
    }
}

pub fn fixture() -> RunResult {
    let mk = |label: &str, scale: u64| EngineResult {
        label: label.into(),
        engine: label.into(),
        runtime: "rust".into(),
        version: "1.0".into(),
        sync: "commit".into(),
        phases: vec![
            phase("open", "open", 1, 1_000_000, 1_000_000),
            phase("load", "load", 1000, 2_000_000 * scale, 1500 * scale),
            phase("get", "get", 1000, 500_000 * scale, 400 * scale),
            PhaseResult {
                status: Status::NotApplicable,
                reason: Some("engine has no ordered scan".into()),
                ..phase("scan", "scan", 0, 0, 1)
            },
            phase("close", "close", 1, 100_000, 100_000),
        ],
        space_bytes: 200_000 * scale,
        apparent_bytes: 190_000,
        space_amplification: 1.5 * scale as f64,
        ..Default::default()
    };
    let failed = EngineResult {
        label: "broken".into(),
        engine: "broken".into(),
        runtime: "rust".into(),
        status: Status::Failed,
        error: Some("worker exited with signal 9 during phase get".into()),
        phases: vec![phase("load", "load", 1000, 9_000_000, 3000)],
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
            records: 1000,
            unique_records: 1000,
            raw_bytes: 116_000,
            generation_ns: 1,
            reused: false,
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
        },
        warnings: vec!["a sample warning".into()],
        engines: vec![mk("fast", 1), mk("slow", 3), failed],
    }
}

#[test]
fn table_snapshot() {
    insta::assert_snapshot!(table(&fixture()));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(markdown(&fixture()));
}

#[test]
fn csv_snapshot() {
    insta::assert_snapshot!(csv(&fixture()));
}

#[test]
fn html_is_self_contained_and_marks_the_best() {
    let h = render(&fixture(), Format::Html);
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(!h.contains("<script"), "no scripts");
    assert!(!h.contains("http://") && !h.contains("https://"), "no network references");
    assert!(h.contains("class=\"best\""));
    assert!(h.contains("<svg"));
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
    assert_eq!(get.best[2], Some(0), "and the best p50");
    assert!(get.rows[2][1].contains("engine exited") || get.rows[2][1].starts_with("- ("), "{:?}", get.rows[2]);
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
    // get: 2.0M, 1.0M, 3.0M ops/s -> median 2.0M, range 100% of it.
    second.phases[2].ops_per_sec = 1e6;
    third.phases[2].ops_per_sec = 3e6;
    r.engines.push(second);
    r.engines.push(third);
    let s = sections(&r);
    assert_eq!(s[0].rows.len(), 1, "one summary row per label");
    let get = s.iter().find(|s| s.title == "Phase get").unwrap();
    assert_eq!(get.rows[0][1], "2.00M ±50% ! (n=3)");
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
fn compare_puts_two_runs_side_by_side() {
    let a = fixture();
    let mut b = fixture();
    b.engines[0].phases[2].ops_per_sec *= 2.0;
    b.plan.hash = "other".into();
    let (pre, s) = compare(&a, &b);
    assert!(pre.iter().any(|l| l.contains("different plans")));
    let get = s.iter().find(|s| s.title == "Phase get").unwrap();
    assert_eq!(get.rows[0][0], "fast");
    assert_eq!(get.rows[0][3], "2.00x");
    assert_eq!(get.rows[1][3], "1.00x");
}
