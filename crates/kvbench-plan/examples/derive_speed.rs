//! What deriving an op costs a worker's loop (docs/plan-format.md): the op stream, the key, and
//! verifying a 100-byte printable value, per op, without any engine.
//! `cargo run --release -p kvbench-plan --example derive_speed -- [RECORDS] [OPS] [shuffle|uniform|zipfian|latest]`
//!
//! Verifying needs the bytes an engine would return; the loop builds them with `value` (the
//! engine's stand-in) and times that part separately, so "key + verify" is the total minus it.
//! Times are the thread's CPU time (best of three runs), which a busy machine disturbs less.

use std::hint::black_box;

use kvbench_model::job::{Dataset, Dist, Generator, KeyShape, OpsStep, PhaseKind, ValueShape};
use kvbench_model::spec::{KeyKind, ValueContent};
use kvbench_plan::derive::{latest_dist, zipfian_dist, Keys, Values, YCSB_THETA};
use kvbench_plan::opstream::OpStream;

fn dataset(records: u64) -> Dataset {
    Dataset {
        generator: Generator::Synthetic,
        key: KeyShape { kind: KeyKind::Decimal, width: 16 },
        value: ValueShape { min: 100, max: 100, content: ValueContent::Printable, ..Default::default() },
        loaded: records,
        total: records,
        ordered: true,
        pool_seed: 1,
        value_seed: 2,
        open_records: records,
        open_bytes: 0,
    }
}

fn step(count: u64, dist: Dist, last: u64) -> OpsStep {
    serde_json::from_value(serde_json::json!({
        "index": 0, "name": "speed", "kind": PhaseKind::Get, "count": count, "dist": dist,
        "rec_seed": 3, "perm_seed": 4, "last": last,
    }))
    .expect("a valid step")
}

/// This thread's CPU time: on a shared machine it moves far less than the wall clock.
fn cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU ns per op of `derive` over the op stream (best of three).
fn time(ds: &Dataset, step: &OpsStep, mut derive: impl FnMut(u64)) -> f64 {
    (0..3)
        .map(|_| {
            let t = cpu_ns();
            for op in OpStream::new(ds, step, 0, 1).expect("valid step") {
                derive(op.record);
            }
            (cpu_ns() - t) as f64 / step.count as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn report(name: &str, ds: &Dataset, step: &OpsStep) {
    let keys = Keys::new(ds, None).expect("keys");
    let values = Values::new(ds, None).expect("values");
    let (mut k, mut v) = (Vec::with_capacity(64), Vec::with_capacity(128));
    let stream = time(ds, step, |r| {
        black_box(r);
    });
    let key = time(ds, step, |r| keys.key(black_box(r), &mut k));
    let build = time(ds, step, |r| {
        keys.key(r, &mut k);
        values.value(black_box(r), 0, &mut v);
    });
    let mut bad = 0u64;
    let all = time(ds, step, |r| {
        keys.key(r, &mut k);
        values.value(black_box(r), 0, &mut v);
        bad += !values.matches(r, 0, black_box(&v)) as u64;
    });
    assert_eq!(bad, 0);
    let derive = key + (all - build);
    println!("{name:<28} stream {stream:5.1}  +key {key:5.1}  +value(engine stand-in) {build:5.1}  +verify {all:5.1}  => stream+key+verify {derive:5.1} ns/op");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let records: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let ops: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let only = args.next();
    let ds = dataset(records);
    println!("{records} records, {ops} ops, decimal(16) keys, 100 B printable values");
    let dists = [
        ("shuffle", Dist::Shuffle { n: records }),
        ("uniform", Dist::Uniform { n: records }),
        ("zipfian", zipfian_dist(records + 1, YCSB_THETA).expect("zipfian")),
        ("latest", latest_dist(records, records - 1, YCSB_THETA).expect("latest")),
    ];
    for (name, dist) in dists.into_iter().filter(|d| only.as_deref().is_none_or(|o| o == d.0)) {
        report(name, &ds, &step(ops, dist, records - 1));
    }
}
