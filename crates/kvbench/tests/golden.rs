//! The cross-runtime golden test: `scenarios/every-phase.toml` (every phase kind and mode) on
//! the memory oracle of each runtime — `memory` (Rust), `go-memory` and `py-memory` — must
//! give the same counts: per phase the status, N/A reason, operations, requests, errors, wrong
//! and missing values, the count of every op kind, and the notes kvbench derives. Timings
//! differ; nothing else may. `make test` builds the Go and Python workers before this runs.

use std::path::Path;
use std::process::Command;

use kvbench_model::histogram::decode_histogram;
use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

const ROWS: [&str; 3] = ["memory", "go-memory", "py-memory"];

fn run_every_phase(dir: &Path) -> RunResult {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env("KVBENCH_HOME", &root)
        .arg("run")
        .arg(root.join("scenarios/every-phase.toml"))
        .args(["--engines", &ROWS.join(","), "--no-progress", "--format", "json"])
        .output()
        .expect("kvbench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let results = dir.join("results");
    let file = std::fs::read_dir(&results)
        .unwrap_or_else(|e| panic!("no results dir ({e}); kvbench said:\n{stderr}"))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap_or_else(|| panic!("no result file; kvbench said:\n{stderr}"));
    RunResult::from_json(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// Notes that depend on timing or on the runtime by design (the GIL), left out of the comparison.
fn comparable(note: &str) -> bool {
    const VARYING: [&str; 5] = ["the harness took", "not sustained", "reopened in", "warm-up", "Python threads"];
    !VARYING.iter().any(|v| note.contains(v))
}

/// What must agree between runtimes for one phase.
fn fingerprint(p: &PhaseResult) -> String {
    let mut kinds: Vec<String> = p
        .latency_by_op
        .iter()
        .map(|(k, l)| format!("{k}={}", decode_histogram(&l.hdr).map(|h| h.len()).unwrap_or(0)))
        .collect();
    kinds.sort();
    let notes: Vec<&str> = p.notes.iter().map(|n| n.as_str()).filter(|n| comparable(n)).collect();
    let counted = p.status == Status::Ok || p.status == Status::Failed;
    let (ops, requests) = if counted && p.kind != "open" && p.kind != "close" { (p.ops, p.requests) } else { (0, 0) };
    format!(
        "status={:?} reason={:?} ops={ops} requests={requests} errors={} mismatches={} missing={} kinds=[{}] notes={notes:?}",
        p.status,
        p.reason,
        p.errors,
        p.mismatches,
        p.missing,
        kinds.join(",")
    )
}

fn row<'a>(r: &'a RunResult, label: &str) -> &'a EngineResult {
    r.engines.iter().find(|e| e.label == label).unwrap_or_else(|| panic!("no row {label}"))
}

#[test]
fn every_runtime_agrees_on_every_phase_of_the_oracle() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run_every_phase(tmp.path());
    let reference = row(&r, ROWS[0]);
    assert_eq!(reference.status, Status::Ok, "memory: {:?}", reference.error);
    for label in &ROWS[1..] {
        let other = row(&r, label);
        assert_eq!(other.status, Status::Ok, "{label}: {:?}", other.error);
        assert_eq!(other.phases.len(), reference.phases.len(), "{label}: phases");
        for (a, b) in reference.phases.iter().zip(&other.phases) {
            assert_eq!(a.name, b.name);
            assert_eq!(fingerprint(a), fingerprint(b), "phase {}: memory vs {label}", a.name);
        }
    }
    // The golden scenario really covers every kind: a mixed phase with all six op kinds.
    let mixed = reference.phases.iter().find(|p| p.name == "mixed").unwrap();
    assert_eq!(mixed.latency_by_op.len(), 6, "{:?}", mixed.latency_by_op.keys());
}
