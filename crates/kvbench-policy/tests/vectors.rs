//! Shared protocol vectors (tests/vectors/protocol/), which every runtime reads identically.
//!
//! - `job-every-step.json` is the job the policy builds for `scenarios/every-phase.toml` on
//!   the `memory` engine: every step and op kind. This test asserts that the policy still
//!   builds exactly it (so a change of policy is a visible change of the vector).
//! - `events-*.jsonl`: the events a worker printed for that job. Every line must parse, serialise
//!   back to the same JSON value, and each step's histograms must hold one sample per request.
//!
//! `UPDATE_VECTORS=1 cargo test -p kvbench-policy --test vectors` rewrites the job vector and
//! `events-rust.jsonl` (timings differ from run to run; counters must not).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kvbench_model::histogram::decode_histogram;
use kvbench_model::job::{Event, Job, PROTOCOL_VERSION};
use kvbench_model::scenario::Scenario;
use kvbench_policy::{dataset, jobs};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn vectors() -> PathBuf {
    root().join("tests/vectors/protocol")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_VECTORS").is_some()
}

/// The job of `scenarios/every-phase.toml` for the memory engine, with fixed paths.
fn every_step_job() -> Job {
    let s = Scenario::from_file(&root().join("scenarios/every-phase.toml")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let data = dataset::resolve(&s, tmp.path()).unwrap();
    assert!(data.plan.is_none(), "a derived dataset with ordered keys needs no plan file");
    let desc = kvbench_engines_memory_caps();
    let v = kvbench_model::scenario::Variant { name: "memory".into(), ..s.all_variants()[0].clone() };
    let dir = PathBuf::from("/tmp/kvbench-vector/memory");
    // The memory engines' one option, resolved as kvbench writes it (every runtime's has it).
    let options = BTreeMap::from([("corrupt_every".to_string(), serde_json::json!(0))]);
    let facts = jobs::RowFacts { variant: &v, options: &options, caps: desc, runtime: "rust", server: false };
    let mut plan = jobs::build(&s, &data, &facts).unwrap();
    plan.place(&dir, None, None);
    plan.job
}

/// The memory oracle's capabilities (the engines crate is not a dependency of the policy).
fn kvbench_engines_memory_caps() -> kvbench_model::engine::Capabilities {
    kvbench_model::engine::Capabilities {
        ordered_scan: true,
        multi_get: false,
        batch: true,
        read_only_open: false,
        secondary_open: false,
        persistent: false,
        build_once: false,
        delete: true,
        field_update: false,
    }
}

#[test]
fn the_policy_builds_the_committed_job_vector() {
    let job = every_step_job();
    let path = vectors().join("job-every-step.json");
    let text = serde_json::to_string_pretty(&job).unwrap() + "\n";
    if updating() {
        std::fs::write(&path, &text).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed: Job = serde_json::from_str(&committed).unwrap();
    assert_eq!(parsed.protocol, PROTOCOL_VERSION);
    assert_eq!(parsed, job, "the policy no longer builds {} (UPDATE_VECTORS=1 to accept)", path.display());
}

fn event_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(vectors())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("events-")))
        .collect();
    v.sort();
    v
}

#[test]
fn event_vectors_parse_round_trip_and_hold_one_sample_per_request() {
    let mut seen = BTreeMap::new();
    let files = event_files();
    assert!(!files.is_empty(), "no events-*.jsonl in {}", vectors().display());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = format!("{}:{}", path.display(), no + 1);
            let original: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: not JSON: {e}"));
            let event: Event = serde_json::from_value(original.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(serde_json::to_value(&event).unwrap(), original, "{at}: does not serialise back");
            *seen.entry(original["event"].as_str().unwrap().to_string()).or_insert(0) += 1;
            if let Event::Step(r) = &event {
                let samples: u64 = r.hist.values().map(|h| decode_histogram(h).unwrap().len()).sum();
                if r.step == "ops" && r.requests > 0 {
                    assert_eq!(samples, r.requests, "{at}: one sample per request");
                }
            }
        }
    }
    for tag in ["hello", "step", "done"] {
        assert!(seen.contains_key(tag), "no `{tag}` event among the vectors: {seen:?}");
    }
}
