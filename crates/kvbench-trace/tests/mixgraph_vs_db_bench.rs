//! kvbench's mixgraph against the real one: db_bench 7.8.3 (Debian's rocksdb-tools) loads
//! 20 000 keys, runs mixgraph for 50 000 ops with `-trace_file`, and kvbench's stream of the
//! same parameters must give the same mix, value sizes and key popularity (KS distances), and
//! with db_bench's seed the very same ops. Without db_bench the test fails, unless
//! KVBENCH_SKIP_DB_BENCH is set.

use std::path::Path;
use std::process::Command;

use kvbench_trace::fit::{ks_popularity, ks_sizes};
use kvbench_trace::mixgraph::Mixgraph;
use kvbench_trace::profile::Profile;
use kvbench_trace::{Kind, TraceOp};

const RECORDS: u64 = 20_000;
const OPS: u64 = 50_000;
/// db_bench's `-seed`; its one thread draws from mt19937_64 seeded with SEED + 1.
const SEED: u64 = 4242;

/// The FAST '20 ZippyDB fit (the RocksDB wiki's mixgraph examples), on a small store.
fn params() -> Mixgraph {
    Mixgraph {
        key_dist_a: 0.002312,
        key_dist_b: 0.3467,
        keyrange_num: 1,
        value_k: 0.2615,
        value_sigma: 25.45,
        iter_k: 2.517,
        iter_sigma: 14.236,
        mix_get_ratio: 0.85,
        mix_put_ratio: 0.14,
        mix_seek_ratio: 0.01,
        key_size: 16,
        value_size: 100,
        ..Mixgraph::default()
    }
}

fn db_bench(args: &[String]) {
    let out = Command::new("db_bench").args(args).output().expect("db_bench runs");
    assert!(out.status.success(), "db_bench {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// db_bench's trace of its mixgraph run, read back.
fn db_bench_trace(dir: &Path, p: &Mixgraph) -> Vec<TraceOp> {
    let (db, trace) = (dir.join("db"), dir.join("trace"));
    let common = [
        format!("--db={}", db.display()),
        format!("--num={RECORDS}"),
        format!("--key_size={}", p.key_size),
        format!("--value_size={}", p.value_size),
    ];
    db_bench(&[&common[..], &["--benchmarks=fillrandom".to_string()]].concat());
    let flags = [
        "--use_existing_db=1".to_string(),
        "--benchmarks=mixgraph".to_string(),
        format!("--reads={OPS}"),
        format!("--seed={SEED}"),
        format!("-keyrange_num={}", p.keyrange_num),
        format!("-keyrange_dist_a={}", p.keyrange_dist_a),
        format!("-keyrange_dist_b={}", p.keyrange_dist_b),
        format!("-keyrange_dist_c={}", p.keyrange_dist_c),
        format!("-keyrange_dist_d={}", p.keyrange_dist_d),
        format!("-key_dist_a={}", p.key_dist_a),
        format!("-key_dist_b={}", p.key_dist_b),
        format!("-value_k={}", p.value_k),
        format!("-value_sigma={}", p.value_sigma),
        format!("-iter_k={}", p.iter_k),
        format!("-iter_sigma={}", p.iter_sigma),
        format!("-mix_get_ratio={}", p.mix_get_ratio),
        format!("-mix_put_ratio={}", p.mix_put_ratio),
        format!("-mix_seek_ratio={}", p.mix_seek_ratio),
        "-sine_mix_rate=false".to_string(),
        format!("-trace_file={}", trace.display()),
    ];
    db_bench(&[&common[..], &flags[..]].concat());
    let reader = kvbench_trace::open(&trace, None).expect("the trace opens");
    reader.collect::<Result<Vec<_>, _>>().expect("the trace reads")
}

fn have_db_bench() -> bool {
    Command::new("db_bench").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn fraction(ops: &[TraceOp], kind: Kind) -> f64 {
    ops.iter().filter(|o| o.kind == kind).count() as f64 / ops.len() as f64
}

fn profile(ops: &[TraceOp]) -> Profile {
    Profile::build(ops.iter().cloned().map(Ok)).expect("a profile")
}

/// The largest difference of the empirical CDFs of two samples.
fn ks(a: &[u32], b: &[u32]) -> f64 {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_unstable();
    b.sort_unstable();
    let cdf = |s: &[u32], x: u32| s.partition_point(|&v| v <= x) as f64 / s.len() as f64;
    a.iter().chain(&b).map(|&x| (cdf(&a, x) - cdf(&b, x)).abs()).fold(0.0, f64::max)
}

fn put_sizes(ops: &[TraceOp]) -> Vec<u32> {
    ops.iter().filter(|o| o.kind == Kind::Put).filter_map(|o| o.value_size).collect()
}

fn skip_without_db_bench() -> bool {
    if have_db_bench() {
        return false;
    }
    assert!(
        std::env::var_os("KVBENCH_SKIP_DB_BENCH").is_some(),
        "db_bench (rocksdb-tools 7.8.3) is not installed; set KVBENCH_SKIP_DB_BENCH=1 to skip"
    );
    eprintln!("db_bench is not installed: skipped (KVBENCH_SKIP_DB_BENCH)");
    true
}

/// An independent kvbench stream (another seed) has db_bench's distributions.
#[test]
fn mixgraph_distributions_match_db_bench() {
    if skip_without_db_bench() {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let theirs = db_bench_trace(dir.path(), &params());
    let ours: Vec<TraceOp> = params().stream(OPS, RECORDS, 7).collect();
    assert_eq!(theirs.len() as u64, OPS, "db_bench's trace holds every op");
    for kind in [Kind::Get, Kind::Put, Kind::Scan] {
        let (t, o) = (fraction(&theirs, kind), fraction(&ours, kind));
        eprintln!("{}: db_bench {t:.4}, kvbench {o:.4}", kind.as_str());
        assert!((t - o).abs() < 0.01, "{} fraction: db_bench {t}, kvbench {o}", kind.as_str());
    }
    let (tp, op) = (profile(&theirs), profile(&ours));
    let value_ks = ks(&put_sizes(&theirs), &put_sizes(&ours));
    let quantiles = |p: &Profile| p.put_values.as_ref().map(|s| s.q.clone()).unwrap_or_default();
    let value_ks_q = ks_sizes(&quantiles(&tp), &quantiles(&op));
    let key_ks = ks_popularity(&tp, &op);
    eprintln!("value sizes KS {value_ks:.4} (of the quantiles {value_ks_q:.4}), key popularity KS {key_ks:.4}");
    assert!(value_ks < 0.05, "value sizes KS {value_ks}");
    assert!(key_ks < 0.05, "key popularity KS {key_ks}");
}

/// With db_bench's seed, kvbench's ops are db_bench's own, op for op: one power law over all
/// keys, and key ranges with the two-term exponential hotness (the wiki's prefix_dist).
#[test]
fn mixgraph_with_db_bench_seed_is_db_bench() {
    if skip_without_db_bench() {
        return;
    }
    let prefix = Mixgraph {
        keyrange_num: 30,
        keyrange_dist_a: 14.18,
        keyrange_dist_b: -2.917,
        keyrange_dist_c: 0.0164,
        keyrange_dist_d: -0.08082,
        ..params()
    };
    for (name, p) in [("power", params()), ("key ranges", prefix)] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let theirs = db_bench_trace(dir.path(), &p);
        let ours: Vec<TraceOp> = p.stream(OPS, RECORDS, SEED + 1).collect();
        assert_eq!(theirs.len(), ours.len(), "{name}: db_bench's trace holds every op");
        let same = theirs.iter().zip(&ours).filter(|(t, o)| t.kind == o.kind && t.key == o.key).count();
        eprintln!("{name}: same kind and key in {same} of {OPS} ops");
        assert_eq!(same as u64, OPS, "{name}: kvbench's seed {} is db_bench's -seed={SEED}", SEED + 1);
        assert_eq!(put_sizes(&theirs), put_sizes(&ours), "{name}: the puts' value sizes, in order");
    }
}
