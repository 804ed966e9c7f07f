//! The RocksDB reader against traces the real `db_bench` records, and against a FIFO.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use kvbench_trace::{Format, Kind, Place, TraceOp};

/// db_bench, from PATH. Missing is a failure (CI installs it with `make deps`) unless
/// KVBENCH_SKIP_DB_BENCH is set.
fn db_bench() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("db_bench")).find(|f| f.is_file()));
    if found.is_none() {
        assert!(
            std::env::var_os("KVBENCH_SKIP_DB_BENCH").is_some(),
            "db_bench is not on PATH: install it with `make deps` (rocksdb-tools), or set KVBENCH_SKIP_DB_BENCH=1"
        );
        eprintln!("db_bench missing and KVBENCH_SKIP_DB_BENCH set: skipped");
    }
    found
}

/// Runs db_bench with `args` and returns its stdout.
fn run(bin: &Path, args: &[String]) -> String {
    let out = Command::new(bin).args(args).output().expect("db_bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "db_bench {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Every op of a trace, with the reader's skipped counts and whether it gave a hash.
fn read_all(path: &Path) -> (Vec<TraceOp>, BTreeMap<String, u64>) {
    let mut r = kvbench_trace::open(path, None).expect("the trace opens and is recognised");
    assert_eq!(r.format(), Format::Rocksdb);
    let ops: Vec<TraceOp> = r.by_ref().map(|op| op.expect("a valid op")).collect();
    assert!(r.hash().is_some(), "a hash once the stream ended");
    assert_eq!(r.bytes_read(), std::fs::metadata(path).unwrap().len(), "every byte read");
    (ops, r.skipped().clone())
}

/// db_bench's `( Gets:N Puts:M Seek:K, ...)` counts.
fn mixgraph_counts(stdout: &str) -> BTreeMap<Kind, u64> {
    let line = stdout.lines().find(|l| l.contains("( Gets:")).expect("a mixgraph result line");
    let field = |name: &str| -> u64 {
        let rest = &line[line.find(name).unwrap_or_else(|| panic!("{name} in {line}")) + name.len()..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().unwrap_or_else(|_| panic!("a count after {name} in {line}"))
    };
    BTreeMap::from([(Kind::Get, field("Gets:")), (Kind::Put, field("Puts:")), (Kind::Scan, field("Seek:"))])
}

fn counts(ops: &[TraceOp]) -> BTreeMap<Kind, u64> {
    let mut c = BTreeMap::new();
    for op in ops {
        *c.entry(op.kind).or_insert(0) += 1;
    }
    c
}

#[test]
fn a_mixgraph_trace_holds_exactly_the_ops_db_bench_counted() {
    let Some(bin) = db_bench() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let trace = dir.path().join("mixgraph.trace");
    let keys = ["--num=2000", "--key_size=16", "--value_size=100"];
    run(&bin, &[args(&[&db, "--benchmarks=fillrandom"]), args(&keys)].concat());
    let mix = args(&[
        &db,
        "--use_existing_db=1",
        "--benchmarks=mixgraph",
        "--reads=5000",
        "-keyrange_num=1",
        "-value_k=0.2615",
        "-value_sigma=25.45",
        "-iter_k=2.517",
        "-iter_sigma=14.236",
        "-mix_get_ratio=0.85",
        "-mix_put_ratio=0.14",
        "-mix_seek_ratio=0.01",
        "-sine_mix_rate=false",
        &format!("-trace_file={}", trace.display()),
    ]);
    let stdout = run(&bin, &[mix, args(&keys)].concat());
    let (ops, skipped) = read_all(&trace);

    let want = mixgraph_counts(&stdout);
    let mut got = counts(&ops);
    assert_eq!(got.remove(&Kind::Delete), None, "mixgraph deletes nothing");
    assert_eq!(got, want, "the reader's ops by kind against db_bench's result line");
    assert!(skipped.is_empty(), "nothing skipped: {skipped:?}");
    assert!(ops.iter().all(|op| op.key.len() == 16 && op.client == 0 && !op.joined), "16-byte keys, one client");
    assert!(ops.iter().filter(|op| op.kind == Kind::Put).all(|op| op.value_size.is_some_and(|v| v > 0)));
    assert!(ops.iter().filter(|op| op.kind != Kind::Put).all(|op| op.value_size.is_none() && op.scan_len.is_none()));
    assert!(ops.windows(2).all(|w| w[0].ts_us <= w[1].ts_us), "one thread's trace is in time order");

    // db_bench prints the mean put value size to one decimal.
    let sizes: Vec<f64> = ops.iter().filter_map(|op| op.value_size).map(f64::from).collect();
    let mean = sizes.iter().sum::<f64>() / sizes.len() as f64;
    assert!(stdout.contains(&format!("avg size: {mean:.1} value")), "mean put value {mean:.1} in:\n{stdout}");
}

/// Joined flags of ops recorded in requests of `n` keys each.
fn assert_groups_of(ops: &[TraceOp], n: usize) {
    for (i, group) in ops.chunks(n).enumerate() {
        let joined: Vec<bool> = group.iter().map(|op| op.joined).collect();
        let want: Vec<bool> = (0..n).map(|j| j > 0).collect();
        assert_eq!(joined, want, "request {i}");
        assert!(group.iter().all(|op| op.ts_us == group[0].ts_us), "request {i}: one time");
    }
}

#[test]
fn multi_gets_and_batched_deletes_are_one_op_per_key() {
    let Some(bin) = db_bench() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let keys = ["--num=1000", "--key_size=16", "--value_size=100"];
    run(&bin, &[args(&[&db, "--benchmarks=fillrandom"]), args(&keys)].concat());
    // One benchmark a run: db_bench starts the trace file afresh for each benchmark.
    let traced = |bench: &str| {
        let trace = dir.path().join(format!("{bench}.trace"));
        let flags = [&db, "--use_existing_db=1", "--reads=100", "--batch_size=10", &format!("--benchmarks={bench}")];
        let stdout =
            run(&bin, &[args(&flags), args(&keys), args(&[&format!("-trace_file={}", trace.display())])].concat());
        (read_all(&trace).0, stdout)
    };

    let (gets, stdout) = traced("multireadrandom");
    assert!(stdout.contains(" of 100 found)"), "db_bench read 100 keys:\n{stdout}");
    assert_eq!(gets.len(), 100);
    assert!(gets.iter().all(|op| op.kind == Kind::Get && op.key.len() == 16 && op.value_size.is_none()));
    assert_groups_of(&gets, 10);

    let (deletes, _) = traced("deleterandom");
    assert_eq!(deletes.len(), 1000, "deleterandom deletes --num keys");
    assert!(deletes.iter().all(|op| op.kind == Kind::Delete && op.key.len() == 16));
    assert_groups_of(&deletes, 10);
}

#[test]
fn a_batched_fill_is_read_as_joined_puts() {
    let Some(bin) = db_bench() else { return };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("fill.trace");
    run(
        &bin,
        &args(&[
            &format!("--db={}", dir.path().join("db").display()),
            "--benchmarks=fillrandom",
            "--num=1000",
            "--batch_size=10",
            "--key_size=16",
            "--value_size=100",
            &format!("-trace_file={}", trace.display()),
        ]),
    );
    let (ops, _) = read_all(&trace);
    assert_eq!(ops.len(), 1000);
    assert!(ops.iter().all(|op| op.kind == Kind::Put && op.value_size == Some(100) && op.key.len() == 16));
    assert_groups_of(&ops, 10);
}

/// A record: timestamp, type, fixed32 length, payload.
fn record(ts: u64, ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut r = ts.to_le_bytes().to_vec();
    r.push(ty);
    r.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    r.extend_from_slice(payload);
    r
}

/// A version 0.2 header.
fn header() -> Vec<u8> {
    record(1, 1, b"feedcafedeadbeef\tTrace Version: 0.2\tRocksDB Version: 7.8\tFormat: Timestamp OpType Payload\n")
}

/// A version 0.2 header and one Get of `key`.
fn header_and_get(key: &[u8]) -> Vec<u8> {
    let mut get = (0b1100u64).to_le_bytes().to_vec();
    get.extend_from_slice(&0u32.to_le_bytes());
    get.push(key.len() as u8);
    get.extend_from_slice(key);
    [header(), record(2, 4, &get)].concat()
}

/// Reads `path` on a thread; the result, or a failure after a minute (a hang).
fn read_with_deadline(path: PathBuf) -> Result<Vec<TraceOp>, kvbench_trace::TraceError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let got = kvbench_trace::open(&path, None).and_then(|r| r.collect::<Result<Vec<_>, _>>());
        let _ = tx.send(got);
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the reader ends, it does not hang")
}

fn fifo_fed(bytes: Vec<u8>) -> (tempfile::TempDir, PathBuf, std::thread::JoinHandle<()>) {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let to = fifo.clone();
    // Opening a FIFO to write waits for its reader; the write ends with the writer's close.
    let writer = std::thread::spawn(move || {
        let _ = std::fs::write(&to, bytes);
    });
    (dir, fifo, writer)
}

#[test]
fn a_fifo_fed_a_truncated_trace_gives_a_clear_error_not_a_hang() {
    let mut t = header_and_get(b"0123456789abcdef");
    let get_at = header().len() as u64;
    t.truncate(t.len() - 5);
    let (_dir, fifo, writer) = fifo_fed(t);
    let e = read_with_deadline(fifo).expect_err("a truncated record is an error");
    writer.join().unwrap();
    assert_eq!(e.place, Place::Offset(get_at), "{e}");
    assert!(e.to_string().contains("truncated") && e.to_string().contains("Get"), "{e}");
}

#[test]
fn a_fifo_with_a_huge_declared_length_is_refused_without_reading_it() {
    let mut t = header_and_get(b"k");
    t.extend_from_slice(&7u64.to_le_bytes());
    t.push(3);
    t.extend_from_slice(&u32::MAX.to_le_bytes());
    let (_dir, fifo, writer) = fifo_fed(t);
    let e = read_with_deadline(fifo).expect_err("an impossible length is an error");
    writer.join().unwrap();
    assert!(e.to_string().contains("allowed: at most"), "{e}");
}

#[test]
fn a_fifo_with_a_whole_trace_reads_like_a_file() {
    let (_dir, fifo, writer) = fifo_fed(header_and_get(b"key"));
    let ops = read_with_deadline(fifo).expect("a valid trace");
    writer.join().unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!((ops[0].kind, ops[0].key.as_slice(), ops[0].ts_us), (Kind::Get, &b"key"[..], 2));
}
