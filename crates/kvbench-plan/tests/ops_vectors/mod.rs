//! The `ops` part of derive.json: complete ops steps and the ops each thread runs.

use kvbench_model::engine::OpenMode;
use kvbench_model::job::{Dataset, Dist, Generator, KeyShape, OpsStep, PhaseKind, ScanLen, ValueShape};
use kvbench_model::spec::{KeyKind, ValueContent};
use kvbench_plan::derive::{latest_dist, stream, thresholds, zipfian_dist, YCSB_THETA};
use kvbench_plan::opstream::{OpStream, TO_END};
use serde_json::{json, Value};

const LOADED: u64 = 40;
const TOTAL: u64 = 50;

fn dataset() -> Dataset {
    let key = KeyShape { kind: KeyKind::Decimal, width: 8 };
    let value = ValueShape { min: 0, max: 24, content: ValueContent::Printable, ..Default::default() };
    super::dataset(Generator::Synthetic, key, value, LOADED, TOTAL)
}

fn step(index: usize, name: &str, kind: PhaseKind, count: u64, dist: Dist) -> OpsStep {
    let seed = |id: u64| stream(7, index as u64 * 16 + id);
    OpsStep {
        index,
        name: name.into(),
        kind,
        count,
        threads: 1,
        batch: 1,
        keys_per_request: 1,
        connections: 1,
        pipeline: 1,
        kinds: vec![],
        thresholds: vec![],
        dist,
        rec_seed: seed(1),
        kind_seed: seed(2),
        len_seed: seed(3),
        perm_seed: seed(4),
        scan: ScanLen::default(),
        insert_base: 0,
        last: LOADED - 1,
        rate: None,
        open_per_op: false,
        field_updates: false,
        mode: OpenMode::default(),
        finish: false,
        verify: true,
        stop: false,
        duration_ms: None,
        steady: None,
        writer: None,
        replay: None,
    }
}

fn mixed(index: usize, name: &str, count: u64, dist: Dist, mix: &[(PhaseKind, f64)]) -> OpsStep {
    let parts: Vec<f64> = mix.iter().map(|m| m.1).collect();
    OpsStep {
        kinds: mix.iter().map(|m| m.0).collect(),
        thresholds: thresholds(&parts).unwrap(),
        insert_base: LOADED,
        scan: ScanLen { min: 1, max: 10 },
        ..step(index, name, PhaseKind::Mixed, count, dist)
    }
}

fn steps() -> Vec<OpsStep> {
    use PhaseKind::*;
    let zipf = zipfian_dist(LOADED + 1, YCSB_THETA).unwrap();
    let latest = latest_dist(TOTAL, LOADED - 1, YCSB_THETA).unwrap();
    let n = LOADED;
    vec![
        OpsStep { batch: 4, ..step(0, "load-shuffle", Load, n, Dist::Shuffle { n }) },
        step(1, "load-sequential", Load, n, Dist::Sequential { n, start: 0 }),
        step(2, "get-shuffle-2-passes", Get, 90, Dist::Shuffle { n }),
        step(3, "get-uniform", Get, 20, Dist::Uniform { n }),
        OpsStep { keys_per_request: 4, ..step(4, "multi-get-uniform", MultiGet, 20, Dist::Uniform { n }) },
        OpsStep {
            scan: ScanLen { min: 1, max: 5 },
            ..step(5, "scan-sequential", Scan, 10, Dist::Sequential { n: TOTAL, start: 5 })
        },
        step(6, "scan-to-end", Scan, 4, Dist::Uniform { n: TOTAL }),
        step(7, "update-zipfian", Update, 30, zipf.clone()),
        OpsStep { batch: 2, insert_base: LOADED, ..step(8, "insert", Insert, 5, Dist::Sequential { n: 1, start: 0 }) },
        step(9, "delete-hot", Delete, 3, Dist::Hot { n, record: 7 }),
        step(10, "rmw-latest", Rmw, 20, latest.clone()),
        mixed(11, "mixed-latest", 60, latest, &[(Get, 0.5), (Update, 0.3), (Insert, 0.1), (Scan, 0.05), (Rmw, 0.05)]),
        mixed(
            12,
            "mixed-zipfian-scan-insert",
            40,
            zipfian_dist(LOADED + 9, YCSB_THETA).unwrap(),
            &[(Scan, 0.95), (Insert, 0.05)],
        ),
        mixed(13, "mixed-uniform-delete", 30, Dist::Uniform { n }, &[(Get, 0.6), (Delete, 0.2), (Update, 0.2)]),
    ]
}

fn op_json(op: kvbench_plan::opstream::Op) -> Value {
    match op.kind {
        PhaseKind::Scan if op.len == TO_END => json!([op.k, "scan", op.record, null]),
        PhaseKind::Scan => json!([op.k, "scan", op.record, op.len]),
        kind => json!([op.k, kind.as_str(), op.record]),
    }
}

fn run(ds: &Dataset, s: &OpsStep, threads: u32) -> Value {
    let per_thread: Vec<Value> =
        (0..threads).map(|t| Value::Array(OpStream::new(ds, s, t, threads).unwrap().map(op_json).collect())).collect();
    json!({"threads": threads, "per_thread": per_thread})
}

pub fn ops() -> Value {
    let ds = dataset();
    let rows = steps().into_iter().map(|s| {
        let inserts = kvbench_plan::opstream::inserts(&s).unwrap();
        assert!(s.insert_base + inserts <= TOTAL || inserts == 0, "{}: {inserts} inserts", s.name);
        let runs: Vec<Value> = [1, 2, 3].iter().map(|&t| run(&ds, &s, t)).collect();
        json!({"dataset": ds, "step": s, "runs": runs})
    });
    Value::Array(rows.collect())
}
