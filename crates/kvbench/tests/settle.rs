//! Settle phases and engine internals end to end, through `kvbench run` and its JSON result:
//! an engine without settle makes the phase N/A and the run goes on; go-pebble (the Go worker,
//! which `make test` builds first) settles and its internals reach the phases.

use std::path::Path;
use std::process::Command;

use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

const SCENARIO: &str = r#"# load, settle, get
seed = 7
sync = "none"
timeout = 120
engines = ["memory"]
[dataset]
records = 3000
[[phase]]
kind = "load"
batch = 10
[[phase]]
kind = "settle"
[[phase]]
kind = "get"
"#;

/// `kvbench run` of [`SCENARIO`] on `engines`: its exit code and JSON result.
fn run(dir: &Path, engines: &str) -> (i32, RunResult) {
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
    let file = std::fs::read_dir(dir.join("results"))
        .unwrap_or_else(|e| panic!("no results ({e}); kvbench said:\n{stderr}"))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap_or_else(|| panic!("no result file; kvbench said:\n{stderr}"));
    (out.status.code().unwrap_or(-1), RunResult::from_json(&std::fs::read_to_string(file).unwrap()).unwrap())
}

fn phase<'a>(e: &'a EngineResult, name: &str) -> &'a PhaseResult {
    e.phases.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("{}: no phase {name}", e.label))
}

#[test]
fn a_settle_phase_is_na_on_an_engine_without_settle_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, r) = run(tmp.path(), "memory");
    let e = &r.engines[0];
    assert_eq!((code, e.status), (0, Status::Ok), "{:?}", e.error);
    let settle = phase(e, "settle");
    assert_eq!(settle.status, Status::NotApplicable);
    assert_eq!(settle.reason.as_deref(), Some("this engine has no settle (flush and compact) step"));
    let get = phase(e, "get");
    assert_eq!((get.status, get.ops, get.mismatches + get.missing), (Status::Ok, 3000, 0));
}

/// `engine` settles (its note says `did`), untimed, every record still readable after it; its
/// internals (`counter` among them) are in the load's and the settle's results.
fn settles_with_internals(engine: &str, did: &str, counter: &str) -> EngineResult {
    let tmp = tempfile::tempdir().unwrap();
    let (code, r) = run(tmp.path(), engine);
    let e = r.engines.into_iter().next().unwrap();
    assert_eq!((code, e.status), (0, Status::Ok), "{:?}", e.error);
    let settle = phase(&e, "settle");
    assert_eq!(settle.status, Status::Ok, "{:?}", settle.reason);
    assert_eq!((settle.ops, settle.ops_per_sec, settle.latency.is_none()), (0, 0.0, true), "untimed");
    let note = settle.notes.iter().find(|n| n.starts_with("settled (untimed")).expect("the settle's note");
    assert!(note.contains(did), "{note}");
    for name in ["load", "settle"] {
        assert!(phase(&e, name).internals.contains_key(counter), "{name}: {:?}", phase(&e, name).internals);
    }
    let get = phase(&e, "get");
    assert_eq!((get.status, get.ops, get.mismatches + get.missing), (Status::Ok, 3000, 0));
    e
}

#[test]
fn go_pebble_settles_and_its_internals_reach_the_result() {
    let e = settles_with_internals("go-pebble", "compacted every key", "pebble.l0_files");
    // Flushed and compacted: tables on disk, nothing left at L0, no debt.
    let after = &phase(&e, "settle").internals;
    assert!(after["pebble.sstable_bytes"] > 0.0, "{after:?}");
    assert_eq!((after["pebble.l0_files"], after["pebble.compaction_debt_bytes"]), (0.0, 0.0), "{after:?}");
    assert!(phase(&e, "load").internals["pebble.wal_bytes_written"] > 0.0);
}
