use super::*;
use crate::derive::{latest_dist, thresholds, zipfian_dist};
use crate::job::{Generator, KeyShape, ValueShape};
use crate::spec::{KeyKind, ValueContent};

fn dataset(loaded: u64, total: u64) -> Dataset {
    Dataset {
        generator: Generator::Synthetic,
        key: KeyShape { kind: KeyKind::Decimal, width: 8 },
        value: ValueShape { min: 10, max: 10, content: ValueContent::Printable, ..Default::default() },
        loaded,
        total,
        ordered: true,
        pool_seed: 1,
        value_seed: 2,
        open_records: total,
        open_bytes: 0,
    }
}

fn step(kind: PhaseKind, count: u64, dist: Dist) -> OpsStep {
    serde_json::from_value(serde_json::json!({
        "index": 0, "name": "t", "kind": kind, "count": count, "dist": dist,
        "rec_seed": 11, "kind_seed": 12, "len_seed": 13, "perm_seed": 14, "last": 999,
    }))
    .unwrap()
}

fn mixed(count: u64, dist: Dist) -> OpsStep {
    use PhaseKind::*;
    OpsStep {
        kinds: vec![Get, Update, Insert, Scan, Rmw],
        thresholds: thresholds(&[0.5, 0.2, 0.2, 0.05, 0.05]).unwrap(),
        insert_base: 1000,
        scan: ScanLen { min: 1, max: 10 },
        ..step(Mixed, count, dist)
    }
}

fn all(ds: &Dataset, s: &OpsStep, t: u32, threads: u32) -> Vec<Op> {
    OpStream::new(ds, s, t, threads).unwrap().collect()
}

fn steps() -> Vec<OpsStep> {
    vec![
        OpsStep { batch: 7, ..step(PhaseKind::Load, 1000, Dist::Shuffle { n: 1000 }) },
        OpsStep { keys_per_request: 5, ..step(PhaseKind::MultiGet, 333, Dist::Uniform { n: 1000 }) },
        OpsStep { batch: 3, insert_base: 1000, ..step(PhaseKind::Insert, 100, Dist::Sequential { n: 1, start: 0 }) },
        step(PhaseKind::Get, 500, zipfian_dist(1001, 0.99).unwrap()),
        mixed(2000, latest_dist(2000, 999, 0.99).unwrap()),
        mixed(2000, Dist::Uniform { n: 1000 }),
    ]
}

#[test]
fn threads_split_the_single_thread_stream_by_unit() {
    let ds = dataset(1000, 2000);
    for s in steps() {
        let one = all(&ds, &s, 0, 1);
        assert_eq!(one.len() as u64, s.count);
        for threads in [2, 3, 8] {
            let mut merged: Vec<Op> = (0..threads).flat_map(|t| all(&ds, &s, t, threads)).collect();
            let unit = unit_size(&s);
            for t in 0..threads {
                let owned = all(&ds, &s, t, threads).iter().all(|op| (op.k / unit) % threads as u64 == t as u64);
                assert!(owned, "{:?}: thread {t} ran another thread's unit", s.kind);
            }
            merged.sort_by_key(|op| op.k);
            assert_eq!(merged, one, "{:?} on {threads} threads", s.kind);
        }
    }
}

#[test]
fn units_have_the_batch_size() {
    let ds = dataset(1000, 1000);
    let s = OpsStep { batch: 7, ..step(PhaseKind::Load, 1000, Dist::Shuffle { n: 1000 }) };
    let mut st = OpStream::new(&ds, &s, 1, 2).unwrap();
    let mut ops = Vec::new();
    let mut sizes = Vec::new();
    while st.next_unit(&mut ops) {
        sizes.push(ops.len());
        assert_eq!(ops[0].k % 14, 7);
    }
    assert_eq!(sizes.len(), 71);
    assert!(sizes.iter().all(|&n| n == 7));
}

#[test]
fn shuffle_reads_every_record_once_per_pass() {
    let ds = dataset(1000, 1000);
    let ops = all(&ds, &step(PhaseKind::Get, 3000, Dist::Shuffle { n: 1000 }), 0, 1);
    for pass in ops.chunks(1000) {
        let mut seen: Vec<u64> = pass.iter().map(|o| o.record).collect();
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }
    assert_ne!(ops[..10], ops[1000..1010], "each pass has its own permutation");
}

#[test]
fn load_order_replays_the_loads_permutation_every_pass() {
    let ds = dataset(1000, 1000);
    let load: Vec<u64> =
        all(&ds, &step(PhaseKind::Load, 1000, Dist::Shuffle { n: 1000 }), 0, 1).iter().map(|o| o.record).collect();
    let reads = all(&ds, &step(PhaseKind::Get, 3000, Dist::LoadOrder { n: 1000 }), 0, 1);
    for pass in reads.chunks(1000) {
        assert_eq!(pass.iter().map(|o| o.record).collect::<Vec<_>>(), load);
    }
}

#[test]
fn inserts_number_records_in_op_order() {
    let ds = dataset(1000, 2000);
    let s = mixed(2000, latest_dist(2000, 999, 0.99).unwrap());
    let inserted: Vec<u64> =
        all(&ds, &s, 0, 1).iter().filter(|o| o.kind == PhaseKind::Insert).map(|o| o.record).collect();
    assert_eq!(inserted, (1000..1000 + inserted.len() as u64).collect::<Vec<_>>());
    assert_eq!(inserts(&s).unwrap(), inserted.len() as u64);
    assert!((300..500).contains(&inserted.len()), "about 20% inserts: {}", inserted.len());
}

#[test]
fn latest_never_reads_past_the_newest_record() {
    let ds = dataset(1000, 2000);
    let s = mixed(2000, latest_dist(2000, 999, 0.99).unwrap());
    let mut newest = 999;
    for op in all(&ds, &s, 0, 1) {
        if op.kind == PhaseKind::Insert {
            newest = op.record;
        } else {
            assert!(op.record <= newest, "op {} reads {} beyond {newest}", op.k, op.record);
        }
    }
}

#[test]
fn zipfian_draws_again_above_the_newest_record() {
    let ds = dataset(1000, 1000);
    let ops = all(&ds, &step(PhaseKind::Get, 20_000, zipfian_dist(1001, 0.99).unwrap()), 0, 1);
    assert!(ops.iter().all(|o| o.record <= 999));
}

#[test]
fn sequential_starts_where_told_and_wraps() {
    let ds = dataset(10, 10);
    let ops = all(&ds, &step(PhaseKind::Get, 12, Dist::Sequential { n: 10, start: 8 }), 0, 1);
    let recs: Vec<u64> = ops.iter().map(|o| o.record).collect();
    assert_eq!(recs, [8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn scans_to_the_end_say_so() {
    let ds = dataset(10, 10);
    let s = step(PhaseKind::Scan, 3, Dist::Uniform { n: 10 });
    assert!(all(&ds, &s, 0, 1).iter().all(|o| o.len == TO_END));
    let s = OpsStep { scan: ScanLen { min: 1, max: 100 }, ..s };
    assert!(all(&ds, &s, 0, 1).iter().all(|o| (1..=100).contains(&o.len)));
}

#[test]
fn bad_steps_are_errors() {
    let ds = dataset(10, 10);
    let hot = step(PhaseKind::Get, 3, Dist::Hot { n: 10, record: 10 });
    assert!(OpStream::new(&ds, &hot, 0, 1).unwrap_err().to_string().contains("hot record 10"));
    let far = OpsStep { last: 3, ..step(PhaseKind::Get, 3, zipfian_dist(100, 0.99).unwrap()) };
    assert!(OpStream::new(&dataset(100, 100), &far, 0, 1).is_err());
    let m = OpsStep { thresholds: vec![1], ..mixed(10, Dist::Uniform { n: 10 }) };
    assert!(OpStream::new(&ds, &m, 0, 1).unwrap_err().to_string().contains("thresholds"));
    assert!(OpStream::new(&ds, &step(PhaseKind::Get, 3, Dist::Uniform { n: 10 }), 2, 2).is_err());
}

#[test]
fn a_job_step_of_a_kind_without_operations_is_an_error_naming_it() {
    let ds = dataset(10, 10);
    for kind in [PhaseKind::Settle, PhaseKind::Size] {
        let err = OpStream::new(&ds, &step(kind, 3, Dist::Uniform { n: 10 }), 0, 1).unwrap_err().to_string();
        assert!(err.contains(&format!("step t: an ops step of kind `{}`", kind.as_str())), "{err}");
    }
    let settle_in_mix = OpsStep {
        kinds: vec![PhaseKind::Get, PhaseKind::Settle],
        thresholds: thresholds(&[0.5, 0.5]).unwrap(),
        ..mixed(10, Dist::Uniform { n: 10 })
    };
    let err = OpStream::new(&ds, &settle_in_mix, 0, 1).unwrap_err().to_string();
    assert!(err.contains("`settle` cannot be part of a mix"), "{err}");
}

/// Thread `t`'s ops with a stop flag set once `after` units were taken (via next_unit).
fn stopped_after(ds: &Dataset, s: &OpsStep, t: u32, threads: u32, after: usize) -> Vec<Op> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let flag = Arc::new(AtomicBool::new(false));
    let mut st = OpStream::new(ds, s, t, threads).unwrap();
    st.stop_on(flag.clone());
    let (mut out, mut ops) = (Vec::new(), Vec::new());
    while st.next_unit(&mut ops) {
        out.extend_from_slice(&ops);
        if out.len() >= after {
            flag.store(true, Ordering::Relaxed);
        }
    }
    // Stopped for good: nothing more comes.
    assert!(!st.next_unit(&mut ops));
    out
}

#[test]
fn a_stopped_stream_runs_a_prefix_of_the_same_ops() {
    let ds = dataset(1000, 2000);
    let many = |s: OpsStep| OpsStep { count: 50_000, ..s };
    let streams = [
        many(step(PhaseKind::Get, 0, Dist::Shuffle { n: 1000 })),
        many(OpsStep { keys_per_request: 5, ..step(PhaseKind::MultiGet, 0, Dist::Uniform { n: 1000 }) }),
        many(OpsStep { batch: 7, ..step(PhaseKind::Update, 0, zipfian_dist(1001, 0.99).unwrap()) }),
        mixed(50_000, Dist::Uniform { n: 1000 }),
    ];
    for s in streams {
        for threads in [1, 3] {
            let unit = unit_size(&s);
            let chunk = STOP_CHUNK.div_ceil(unit) * unit;
            for after in [1, 1000, 1025, 7777] {
                let full = all(&ds, &s, threads - 1, threads);
                let cut = stopped_after(&ds, &s, threads - 1, threads, after);
                assert_eq!(cut[..], full[..cut.len()], "{:?} on {threads} threads", s.kind);
                // The stop is seen within one chunk of ops.
                let most = (after as u64).div_ceil(unit) * unit + chunk;
                assert!(cut.len() as u64 >= after as u64 && cut.len() as u64 <= most, "{} after {after}", cut.len());
            }
        }
    }
}

#[test]
fn a_paced_stream_looks_at_its_stop_before_every_unit() {
    let ds = dataset(1000, 1000);
    let s = OpsStep { rate: Some(100.0), ..step(PhaseKind::Get, 10_000, Dist::Uniform { n: 1000 }) };
    assert_eq!(stopped_after(&ds, &s, 0, 1, 10).len(), 10);
    assert_eq!(stopped_after(&ds, &s, 1, 2, 10).len(), 10);
}

#[test]
fn a_stream_whose_stop_is_never_set_runs_every_op() {
    let ds = dataset(1000, 2000);
    for s in steps().into_iter().filter(|s| s.kind != PhaseKind::Insert) {
        for threads in [1, 4] {
            let full = all(&ds, &s, 0, threads);
            assert_eq!(stopped_after(&ds, &s, 0, threads, usize::MAX), full, "{:?}", s.kind);
        }
    }
}
