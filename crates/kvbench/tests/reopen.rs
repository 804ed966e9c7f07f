//! The `reopen` phase end to end, through `kvbench run` and its JSON result, in every runtime:
//! the Rust worker (rocksdb), the Go worker (go-pebble) and the Python worker (py-rocksdict)
//! close the store and open it again between a load and the reads, and every record is read
//! back after it. RocksDB's memtable reaches its SST files on the way (the WAL replayed into
//! level 0 at open), which is what RocksDB's benchmark.sh reads after its fill.

use std::path::Path;
use std::process::Command;

use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

const SCENARIO: &str = r#"# load, reopen, get
seed = 7
sync = "none"
timeout = 120
engines = ["rocksdb", "go-pebble", "py-rocksdict"]
[dataset]
records = 3000
[[phase]]
kind = "load"
batch = 10
[[phase]]
kind = "reopen"
[[phase]]
kind = "get"
"#;

fn run(dir: &Path, engines: &str) -> RunResult {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::write(dir.join("s.toml"), SCENARIO).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env("KVBENCH_HOME", &root)
        .env_remove("KVBENCH_FAULT")
        .args(["run", "s.toml", "--engines", engines, "--no-progress", "--format", "json"])
        .output()
        .expect("kvbench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let file = std::fs::read_dir(dir.join("results"))
        .unwrap_or_else(|e| panic!("no results ({e}); kvbench said:\n{stderr}"))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap_or_else(|| panic!("no result file; kvbench said:\n{stderr}"));
    RunResult::from_json(&std::fs::read_to_string(file).unwrap()).unwrap()
}

fn phase<'a>(e: &'a EngineResult, name: &str) -> &'a PhaseResult {
    e.phases.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("{}: no phase {name}", e.label))
}

#[test]
fn a_reopen_phase_closes_and_opens_the_store_in_every_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run(tmp.path(), "rocksdb,go-pebble,py-rocksdict");
    assert_eq!(r.engines.len(), 3);
    for e in &r.engines {
        assert_eq!(e.status, Status::Ok, "{}: {:?}", e.label, e.error);
        let reopen = phase(e, "reopen");
        assert_eq!((reopen.status, reopen.kind.as_str()), (Status::Ok, "reopen"), "{}: {reopen:?}", e.label);
        assert!(reopen.wall_ns > 0, "{}: the open is timed", e.label);
        assert!(reopen.notes.iter().any(|n| n.starts_with("closed in")), "{}: {:?}", e.label, reopen.notes);
        let get = phase(e, "get");
        assert_eq!((get.status, get.ops, get.mismatches + get.missing), (Status::Ok, 3000, 0), "{}", e.label);
    }
    // RocksDB: everything sat in the memtable after the load; the reads find it in SST files.
    let rocks = r.engines.iter().find(|e| e.label == "rocksdb").unwrap();
    let (load, get) = (&phase(rocks, "load").internals, &phase(rocks, "get").internals);
    assert_eq!(load["rocksdb.sst.total_bytes"], 0.0, "{load:?}");
    assert!(get["rocksdb.sst.total_bytes"] > 0.0, "{get:?}");
    assert!(get["rocksdb.memtable.bytes"] < load["rocksdb.memtable.bytes"] / 10.0, "{load:?} {get:?}");
}
