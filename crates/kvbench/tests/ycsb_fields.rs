//! YCSB's record shape (issue 32): values of 10 fields, read whole, updated one field at a time
//! (read, merged, written back), inserted whole — the same counts in every runtime's memory
//! oracle (`memory`, `go-memory`, `py-memory`), every read verified field by field, and a
//! wrong field caught. `make test` builds the Go and Python workers before this runs.

use std::path::Path;
use std::process::{Command, Output};

use kvbench_model::histogram::decode_histogram;
use kvbench_model::result::{RunResult, Status};

const SCENARIO: &str = r#"name = "fields"
seed = 9
[dataset]
records = 2000
key = { kind = "ycsb" }
value = { fields = 10, field_size = 20 }
[[engine]]
name = "memory"
[[engine]]
name = "go-memory"
[[engine]]
name = "py-memory"
[[engine]]
name = "memory"
label = "corrupt"
options = { corrupt_every = 50 }
[[phase]]
kind = "load"
batch = 100
[[phase]]
name = "update"
kind = "update"
count = 1500
distribution = "zipfian"
[[phase]]
name = "mixed"
kind = "mixed"
count = 4000
distribution = "zipfian"
length = 10
min_length = 1
mix = { read = 40, update = 30, insert = 10, rmw = 10, scan = 10 }
[[phase]]
name = "mixed-threads"
kind = "mixed"
count = 4000
threads = 2
distribution = "uniform"
mix = { read = 50, update = 40, rmw = 10 }
[[phase]]
name = "get"
kind = "get"
"#;

fn kvbench(dir: &Path, args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env("KVBENCH_HOME", &root)
        .env_remove("KVBENCH_FAULT")
        .args(args)
        .output()
        .unwrap()
}

/// What must agree between runtimes for one phase: counts and samples per op kind.
fn counts(p: &kvbench_model::result::PhaseResult) -> String {
    let mut kinds: Vec<String> = p
        .latency_by_op
        .iter()
        .map(|(k, l)| format!("{k}={}", decode_histogram(&l.hdr).map(|h| h.len()).unwrap_or(0)))
        .collect();
    kinds.sort();
    format!("ops={} requests={} errors={} kinds=[{}]", p.ops, p.requests, p.errors, kinds.join(","))
}

#[test]
fn ycsb_records_are_read_whole_and_updated_one_field_in_every_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("s.toml"), SCENARIO).unwrap();
    let o = kvbench(tmp.path(), &["run", "s.toml", "--no-progress", "--format", "json", "--out", "out"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let file = std::fs::read_dir(tmp.path().join("out")).ok().and_then(|mut d| d.next()).unwrap_or_else(|| {
        panic!("no result; kvbench said:\n{stderr}");
    });
    let r = RunResult::from_json(&std::fs::read_to_string(file.unwrap().path()).unwrap()).unwrap();
    let row = |label: &str| r.engines.iter().find(|e| e.label == label).unwrap();
    let reference = row("memory");
    for label in ["memory", "go-memory", "py-memory"] {
        let e = row(label);
        assert_eq!(e.status, Status::Ok, "{label}: {:?}", e.error);
        for (p, q) in e.phases.iter().zip(&reference.phases) {
            assert_eq!((p.mismatches, p.missing), (0, 0), "{label} {}: every field verified", p.name);
            if p.name != "mixed-threads" || label == "memory" {
                assert_eq!(counts(p), counts(q), "{label} {} against memory", p.name);
            }
        }
        let update = e.phases.iter().find(|p| p.name == "update").unwrap();
        assert_eq!(update.requests, 1500, "{label}: an update of one field is one unit");
        let mixed = e.phases.iter().find(|p| p.name == "mixed").unwrap();
        assert!(mixed.latency_by_op.contains_key("update"), "{label}: timed as updates, not rmw");
    }
    let corrupt = row("corrupt");
    let caught: u64 = corrupt.phases.iter().map(|p| p.mismatches).sum();
    assert!(
        caught > 0,
        "a wrong value is counted: {:?}",
        corrupt.phases.iter().map(|p| p.mismatches).collect::<Vec<_>>()
    );
}

#[test]
fn an_update_of_one_field_in_batches_is_refused_with_the_way_out() {
    let tmp = tempfile::tempdir().unwrap();
    let batched =
        SCENARIO.replace("name = \"update\"\nkind = \"update\"", "name = \"update\"\nkind = \"update\"\nbatch = 10");
    std::fs::write(tmp.path().join("s.toml"), batched).unwrap();
    let o = kvbench(tmp.path(), &["plan", "s.toml", "--plan-dir", "plans"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("phase update") && err.contains("batch 10") && err.contains("write_all_fields"), "{err}");
}
