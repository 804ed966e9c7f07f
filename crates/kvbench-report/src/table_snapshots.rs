//! The article and reference-suite tables of every shipped scenario that declares one, each
//! rendered from a result made from the scenario file itself (its rows, phases and the table it
//! carries into the result), so a change in any of them shows as a snapshot diff.

use std::path::Path;

use kvbench_model::histogram::{encode_histogram, new_histogram, summarize};
use kvbench_model::result::{Disk, EngineResult, Interval, PhaseResult, PlanInfo, RunResult, Status};
use kvbench_model::scenario::{PhaseDef, Scenario, Variant};
use kvbench_model::spec::{CacheMode, PhaseKind};

use crate::{markdown_of, sections, Section};

/// The records every fixture's plan holds.
const RECORDS: u64 = 1000;

fn scenario(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// A latency summary with a real histogram of `n` values around `p50` ns.
fn latency(n: u64, p50: u64) -> Option<kvbench_model::result::Latency> {
    let mut hist = new_histogram();
    for i in 1..=n {
        let q = i as f64 / (n + 1) as f64;
        let v = p50 as f64 * (0.5 + 0.5 * (-(1.0 - q).ln()) / std::f64::consts::LN_2);
        hist.record(v.max(1.0) as u64).expect("in range");
    }
    let mut summary = summarize(&hist)?;
    summary.hdr = encode_histogram(&hist);
    Some(summary)
}

/// The operations a phase of the scenario makes over `RECORDS` records, and its requests.
fn ops_of(def: &PhaseDef) -> (u64, u64) {
    let ops = match (def.count, def.passes, def.share) {
        (Some(count), _, _) => count * u64::from(def.keys.unwrap_or(1)),
        (None, Some(passes), _) => u64::from(passes) * RECORDS,
        (None, None, Some(share)) => (share * RECORDS as f64) as u64,
        _ => RECORDS,
    };
    let per_request = match def.kind {
        PhaseKind::MultiGet => u64::from(def.keys.unwrap_or(1)).min(RECORDS),
        PhaseKind::Scan => 10,
        _ => 1,
    };
    (ops, (ops / per_request).max(1))
}

fn cache_of(def: &PhaseDef) -> String {
    match def.cache {
        CacheMode::Cold => "cold (posix_fadvise DONTNEED)".into(),
        other => serde_json::to_value(other).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
    }
}

/// One phase of row `row` (repetition `rep`), its figures distinct per row and phase.
fn phase_result(engine: &str, row: u64, rep: u64, index: u64, def: &PhaseDef, name: String) -> PhaseResult {
    let (ops, requests) = ops_of(def);
    let scale = (row + 2) * (index + 3) * (10 + rep);
    let wall_ns = scale * 1_234_567;
    let mut runtime = std::collections::BTreeMap::new();
    if engine.starts_with("go-") {
        runtime.insert("alloc_bytes".to_string(), (ops * 48 * (row + 1)) as f64);
        runtime.insert("mallocs".to_string(), (ops * (row + 2)) as f64);
    }
    let mut internals = std::collections::BTreeMap::new();
    if engine.contains("pebble") {
        internals.insert("pebble.read_amp".to_string(), 1.5 + row as f64);
    }
    // Each LSM engine's SST bytes under its own name (ref-dbbench's SST column reads them all).
    let sst = ["rocksdb.sst.live_bytes", "leveldb.sst.bytes", "pebble.sstable_bytes", "goleveldb.tables_bytes"];
    if let Some(name) = sst.iter().find(|n| engine.trim_start_matches("go-").starts_with(n.split('.').next().unwrap()))
    {
        internals.insert(name.to_string(), ((3 + row + index) << 20) as f64);
    }
    PhaseResult {
        name,
        kind: def.kind.as_str().to_string(),
        status: Status::Ok,
        ops,
        requests,
        unit: "op".into(),
        elapsed_ns: wall_ns * 9 / 10,
        wall_ns,
        ops_per_sec: ops as f64 / (wall_ns as f64 / 1e9),
        latency: latency(ops.clamp(1, 500), scale * 37),
        intervals: vec![Interval::default(); 5],
        stalls: index % 2,
        runtime,
        internals,
        threads: def.threads.unwrap_or(1),
        batch: def.batch.unwrap_or(1),
        cache: cache_of(def),
        cpu_user_ns: wall_ns / 2,
        cpu_sys_ns: wall_ns / 5,
        max_rss_kb: 20_000 + row * 1000,
        space_bytes: if def.kind == PhaseKind::Size { (3 + row) << 20 } else { 0 },
        disk: Some(Disk {
            read_bytes: ops * 100 * (row + 1),
            write_bytes: ops * 300 * (row + 1),
            logical_write_bytes: if def.kind.may_write() { ops * 100 } else { 0 },
            write_amplification: 3.0 * (row + 1) as f64,
            space_bytes: (5 + row + index) << 20,
            file_bytes: ((5 + row + index) << 20) - 1000,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// What a row's engine reports about itself beyond its figures.
fn describe(e: &mut EngineResult, variant: &Variant) {
    e.version = match variant.name.as_str() {
        n if n.contains("bolt") => "go.etcd.io/bbolt v1.5.0".into(),
        "go-goleveldb" => "github.com/syndtr/goleveldb v1.0.0".into(),
        _ => "1.0".into(),
    };
    if variant.name == "postgres" {
        let on = if e.sync == "none" { "off" } else { "on" };
        for (k, v) in [
            ("fsync", on),
            ("synchronous_commit", on),
            ("connection", "TCP 127.0.0.1:41234"),
            ("table", "kvbench_kv (k text PRIMARY KEY, v text)"),
            ("one-row writes", "sent with their SQL text"),
        ] {
            e.settings.insert(k.into(), v.into());
        }
    }
}

/// Statuses a real run of these scenarios gives: a binding without secondary opens, the
/// put_add build's declared mismatches.
fn mark_statuses(e: &mut EngineResult) {
    for p in e.phases.iter_mut() {
        if e.engine == "py-speedict" && p.name.ends_with("secondary") {
            p.status = Status::NotApplicable;
        }
        if e.label == "tinycdb-put_add" && p.name == "read-all-100x" {
            (p.status, p.mismatches) = (Status::Expected, 12);
            e.status = Status::Expected;
        }
    }
}

/// A result of `file`'s scenario: every row and repetition with every phase it declares.
fn result_of(file: &str) -> RunResult {
    let s = scenario(file);
    let mut engines = Vec::new();
    for rep in 0..u64::from(s.repetitions) {
        for (row, variant) in s.all_variants().iter().enumerate() {
            let sync = variant.effective_sync(&s);
            let mut e = EngineResult {
                label: variant.label(),
                engine: variant.name.clone(),
                options: variant.options.clone(),
                sync: serde_json::to_value(sync).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                open_mode: "readwrite".into(),
                repetition: rep as u32,
                space_bytes: (4 + row as u64) << 20,
                ..Default::default()
            };
            describe(&mut e, variant);
            e.phases = s
                .phases
                .iter()
                .enumerate()
                .map(|(i, def)| phase_result(&variant.name, row as u64, rep, i as u64, def, s.phase_name(i)))
                .collect();
            mark_statuses(&mut e);
            engines.push(e);
        }
    }
    let mut r = RunResult {
        scenario: s.name.clone(),
        sync: "none".into(),
        plan: PlanInfo { records: RECORDS, unique_records: RECORDS, raw_bytes: RECORDS * 1556, ..Default::default() },
        workload: serde_json::to_value(&s).expect("a scenario serialises"),
        engines,
        ..Default::default()
    };
    (r.environment.filesystem, r.environment.data_dir) = ("ext4".into(), "/data".into());
    r
}

/// The scenario's own table (the report's first section), as Markdown.
fn own_table(file: &str) -> String {
    let first: Vec<Section> = sections(&result_of(file)).into_iter().take(1).collect();
    assert_ne!(first[0].title, "Summary", "{file} has no table of its own");
    markdown_of(&[], &first)
}

#[test]
fn article_000_table() {
    insta::assert_snapshot!(own_table("article-000-python-lmdb-rocksdb-speedb.toml"));
}

#[test]
fn article_001_table() {
    insta::assert_snapshot!(own_table("article-001-http-multiget.toml"));
}

#[test]
fn article_002_table() {
    insta::assert_snapshot!(own_table("article-002-postgres-copy.toml"));
}

#[test]
fn article_002_1m_table() {
    insta::assert_snapshot!(own_table("article-002-postgres-copy-1m.toml"));
}

#[test]
fn article_003_table() {
    insta::assert_snapshot!(own_table("article-003-dictionary.toml"));
}

#[test]
fn article_004_table() {
    insta::assert_snapshot!(own_table("article-004-go.toml"));
}

#[test]
fn ref_redb_table() {
    insta::assert_snapshot!(own_table("ref-redb.toml"));
}

#[test]
fn ref_dbbench_table() {
    insta::assert_snapshot!(own_table("ref-dbbench.toml"));
}

#[test]
fn ref_pebble_ycsb_table() {
    insta::assert_snapshot!(own_table("ref-pebble-ycsb.toml"));
}
