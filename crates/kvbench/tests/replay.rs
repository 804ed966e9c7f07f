//! `run --trace`, `trace describe` and `trace fit` end to end on small cache-trace CSV files
//! written here (the format of Twitter's published traces): the memory engine and LMDB replay
//! them with every read verified. Real tools' traces are replayed in crates/kvbench-trace's
//! tests and bench/trace_replay.sh.

use std::path::Path;
use std::process::Command;

use kvbench_model::result::{RunResult, Status};

fn kvbench(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env_remove("KVBENCH_FAULT")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["run", "--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"];
    all.extend_from_slice(args);
    kvbench(dir, &all)
}

fn result(dir: &Path) -> RunResult {
    let entry = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("latest.json"))
        .expect("a result file");
    RunResult::from_json(&std::fs::read_to_string(entry).unwrap()).unwrap()
}

/// A cache trace of `n` requests from 3 clients over 50 keys: gets of keys never set (the
/// cache's earlier contents), sets, deletes, and gets after them.
fn cache_trace(n: u64) -> String {
    let mut t = String::new();
    for i in 0..n {
        let key = format!("k{}", (i * 7919) % 50);
        let (op, size) = match i % 10 {
            0..=5 => ("get", 40 + i % 50),
            6..=8 => ("set", 40 + (i * 7919) % 50),
            _ => ("delete", 0),
        };
        t.push_str(&format!("{},{key},{},{size},{},{op},0\n", 1000 + i / 20, key.len(), i % 3));
    }
    t
}

#[test]
fn a_cache_trace_replays_on_every_row_with_every_read_verified() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.csv"), cache_trace(3000)).unwrap();
    let (code, out, err) = run(tmp.path(), &["--engines", "memory,lmdb", "--trace", "t.csv"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let r = result(tmp.path());
    let t = r.plan.trace.as_ref().expect("the result names its trace");
    assert_eq!((t.format.as_str(), t.ops, t.clients, t.distinct_keys), ("cache-csv", 3000, 3, 50));
    assert_eq!(t.by_kind["get"] + t.by_kind["put"] + t.by_kind["delete"], 3000);
    assert_eq!(t.hash.len(), 16, "the trace's bytes are named by their hash");
    let profile = t.profile.as_ref().expect("the result holds the trace's profile");
    assert_eq!((profile.ops, *profile.working_set.last().unwrap()), (3000, 50), "working set grows to every key");
    for row in &r.engines {
        assert_eq!(row.status, Status::Ok, "{}: {:?}", row.label, row.error);
        let replay = row.phases.iter().find(|p| p.kind == "replay").expect("a replay phase");
        assert_eq!(replay.ops, 3000, "{}", row.label);
        assert_eq!((replay.mismatches, replay.missing, replay.errors), (0, 0, 0), "{}", row.label);
        let load = row.phases.iter().find(|p| p.kind == "load").unwrap();
        assert_eq!(load.ops, t.preloaded, "the load writes the keys read before written");
    }
    assert!(out.contains("replay of t.csv"), "the table says what was replayed: {out}");
    let (code, html, err) = kvbench(tmp.path(), &["report", "--format", "html"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        html.contains("The stream&#39;s profile") || html.contains("The stream's profile"),
        "the page shows the profile"
    );
}

#[test]
fn an_open_loop_replay_takes_the_recorded_time() {
    let tmp = tempfile::tempdir().unwrap();
    // 400 requests over 2 recorded seconds, replayed at speed 4: about half a second.
    let t: String = (0..400).map(|i| format!("{},k{},2,10,0,get,0\n", i / 200, i % 20)).collect();
    std::fs::write(tmp.path().join("t.csv"), t).unwrap();
    let (code, out, err) = run(tmp.path(), &["--engines", "memory", "--trace", "t.csv", "--speed", "4"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let r = result(tmp.path());
    let replay = r.engines[0].phases.iter().find(|p| p.kind == "replay").unwrap();
    // The last request is due at 1 s / 4 = 250 ms; a closed loop would take well under that.
    assert!(replay.wall_ns >= 250_000_000, "wall {} ns", replay.wall_ns);
}

#[test]
fn a_bad_trace_line_is_named_with_its_file_and_line_and_nothing_runs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.csv"), "1,a,1,10,0,get,0\n2,b,1,ten,0,get,0\n").unwrap();
    let (code, _, err) = run(tmp.path(), &["--engines", "memory", "--trace", "t.csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("t.csv: line 2"), "{err}");
}

#[test]
fn trace_flags_that_cannot_apply_are_errors_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.csv"), cache_trace(10)).unwrap();
    let (code, _, err) = run(tmp.path(), &["--engines", "memory", "--trace", "t.csv", "--records", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--records"), "{err}");
    let (code, _, err) = run(tmp.path(), &["--engines", "memory", "--speed", "2"]);
    assert_eq!(code, 2);
    assert!(err.contains("--speed 2") && err.contains("replay"), "{err}");
    let (code, _, err) = run(tmp.path(), &["--engines", "memory", "--trace", "t.csv", "--trace-format", "csv"]);
    assert_eq!(code, 2);
    assert!(err.contains("`csv` is not a trace format"), "{err}");
}

#[test]
fn describe_and_fit_give_a_scenario_that_runs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.csv"), cache_trace(2000)).unwrap();
    let (code, out, err) = kvbench(tmp.path(), &["trace", "describe", "t.csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2000") && out.to_lowercase().contains("zipf"), "{out}");
    let (code, _, err) = kvbench(tmp.path(), &["trace", "fit", "t.csv", "-o", "fitted.toml"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) =
        run(tmp.path(), &["fitted.toml", "--engines", "memory", "--records", "500", "--ops", "3000"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let r = result(tmp.path());
    let replay = r.engines[0].phases.iter().find(|p| p.kind == "replay").unwrap();
    assert_eq!(replay.status, Status::Ok);
    assert_eq!(replay.ops, 3000);
    assert_eq!((replay.mismatches, replay.missing), (0, 0));
}

/// Hostile traces: every reader ends with a clear error naming the file (exit 2), whatever
/// the bytes, in bounded time and memory.
#[test]
fn hostile_traces_are_refused_by_name_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let garbage: Vec<u8> = (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(tmp.path().join("garbage"), &garbage).unwrap();
    std::fs::write(tmp.path().join("empty"), b"").unwrap();
    let (code, _, err) = kvbench(tmp.path(), &["trace", "describe", "garbage"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("garbage: not a trace kvbench reads"), "{err}");
    let (code, _, err) = kvbench(tmp.path(), &["trace", "describe", "empty"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("empty: the trace is empty"), "{err}");
    for format in ["rocksdb", "redis-monitor", "memcached-watch", "cache-csv"] {
        let (code, _, err) = kvbench(tmp.path(), &["trace", "describe", "garbage", "--trace-format", format]);
        assert_eq!(code, 2, "{format}: {err}");
        assert!(err.contains("garbage: "), "{format}: {err}");
        // /dev/zero never ends: a binary reader finds no header, a text reader a line over its cap.
        let (code, _, err) = kvbench(tmp.path(), &["trace", "describe", "/dev/zero", "--trace-format", format]);
        assert_eq!(code, 2, "{format}: {err}");
        assert!(err.contains("/dev/zero"), "{format}: {err}");
    }
}

#[test]
fn a_trace_from_a_fifo_is_read_once_and_replayed() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let body = cache_trace(500);
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::write(fifo, body)
    });
    let (code, out, err) = run(tmp.path(), &["--engines", "memory", "--trace", "fifo", "--trace-format", "cache-csv"]);
    // Should kvbench not have read the FIFO, a reader of our own releases the writer.
    use std::os::unix::fs::OpenOptionsExt;
    let _release = std::fs::OpenOptions::new().read(true).custom_flags(0o4000).open(&fifo);
    let _ = writer.join().unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    let r = result(tmp.path());
    assert_eq!(r.plan.trace.as_ref().unwrap().ops, 500);
}

#[test]
fn regression_an_open_loop_replay_waiting_for_a_late_request_ends_at_its_duration() {
    let tmp = tempfile::tempdir().unwrap();
    // The second request is due 1000 s after the first.
    std::fs::write(tmp.path().join("t.csv"), "0,a,1,10,0,get,0\n1000,b,1,10,0,get,0\n").unwrap();
    let started = std::time::Instant::now();
    let args = ["--engines", "memory", "--trace", "t.csv", "--speed", "1", "--duration", "replay=300ms"];
    let (code, out, err) = run(tmp.path(), &args);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "the wait was cut at the duration");
    let r = result(tmp.path());
    let replay = r.engines[0].phases.iter().find(|p| p.kind == "replay").unwrap();
    assert_eq!(replay.ops, 1, "the late request never ran");
}

#[test]
fn regression_a_trace_that_writes_every_key_first_has_no_load_and_verifies_every_read() {
    let tmp = tempfile::tempdir().unwrap();
    // Three clients each set their keys, then read and overwrite them: nothing exists before.
    let mut t = String::new();
    for i in 0..900u64 {
        let op = if i < 300 {
            "set"
        } else if i % 2 == 0 {
            "get"
        } else {
            "set"
        };
        t.push_str(&format!("{},k{},3,{},{},{op},0\n", i / 100, i % 300, 20 + i % 7, i % 3));
    }
    std::fs::write(tmp.path().join("t.csv"), t).unwrap();
    let (code, out, err) = run(tmp.path(), &["--engines", "memory,lmdb", "--trace", "t.csv"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let r = result(tmp.path());
    assert_eq!(r.plan.trace.as_ref().unwrap().preloaded, 0);
    for row in &r.engines {
        assert_eq!(row.status, Status::Ok, "{}: {:?}", row.label, row.error);
        let load = row.phases.iter().find(|p| p.kind == "load").unwrap();
        assert_eq!(load.status, Status::NotApplicable, "nothing to load");
        let replay = row.phases.iter().find(|p| p.kind == "replay").unwrap();
        assert_eq!((replay.ops, replay.mismatches, replay.missing), (900, 0, 0), "{}", row.label);
    }
}
