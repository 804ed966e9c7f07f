//! Phases that end on a duration or a steady state, and read phases beside a background
//! writer, run on the `memory` engine in this process: they stop in time, run the same ops
//! whatever their length, and every read stays verified.

mod in_process;

use std::time::Duration;

use kvbench_model::result::{Latency, PhaseResult, Status};
use kvbench_model::scenario::Scenario;

/// Run `phases` (TOML `[[phase]]` tables after a load of `records`) on `memory`.
fn run(records: u64, phases: &str) -> Vec<PhaseResult> {
    let text = format!("engines = [\"memory\"]\n[dataset]\nrecords = {records}\n[[phase]]\nkind = \"load\"\n{phases}");
    let s: Scenario = toml::from_str(&text).unwrap();
    s.check().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let v = s.all_variants()[0].clone();
    in_process::run_in_process(&s, &v, &kvbench_engines::memory::DESCRIPTOR, tmp.path(), None, None).unwrap()
}

fn phase<'a>(r: &'a [PhaseResult], name: &str) -> &'a PhaseResult {
    r.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no phase {name}"))
}

fn samples(l: &Latency) -> u64 {
    kvbench_model::histogram::decode_histogram(&l.hdr).unwrap().len()
}

fn assert_verified(p: &PhaseResult) {
    assert_eq!(p.status, Status::Ok, "{}: {:?}", p.name, p.reason);
    assert_eq!((p.mismatches, p.missing, p.errors), (0, 0, 0), "{}", p.name);
}

#[test]
fn a_duration_phase_stops_in_time_with_every_read_verified() {
    let r = run(
        20_000,
        "[[phase]]\nkind = \"get\"\nduration = \"300ms\"\n\
         [[phase]]\nkind = \"get\"\nname = \"get4\"\nthreads = 4\nduration = \"300ms\"\n\
         [[phase]]\nkind = \"scan\"\nlength = 100\nduration = \"300ms\"\n\
         [[phase]]\nkind = \"update\"\nduration = \"300ms\"\n\
         [[phase]]\nkind = \"get\"\nname = \"after\"\n",
    );
    for name in ["get", "get4", "scan", "update"] {
        let p = phase(&r, name);
        assert_verified(p);
        let wall = Duration::from_nanos(p.wall_ns);
        // The stop is seen within a poll and a chunk of ops: generous for a loaded machine.
        assert!(wall >= Duration::from_millis(300) && wall < Duration::from_millis(1500), "{name}: {wall:?}");
        assert_eq!(p.stopped_by.as_deref(), Some("duration 0.3 s reached"), "{name}");
        assert!(p.ops > 0, "{name}");
    }
    // The updates a duration cut short left states the next phase verifies against.
    assert_verified(phase(&r, "after"));
}

#[test]
fn with_a_duration_a_count_is_a_cap() {
    let r = run(5_000, "[[phase]]\nkind = \"get\"\ncount = 1000\nduration = \"1m\"\n");
    let p = phase(&r, "get");
    assert_verified(p);
    assert_eq!(p.ops, 1000);
    assert_eq!(p.stopped_by.as_deref(), Some("count reached: 1000 ops"));
}

#[test]
fn until_steady_stops_once_the_last_intervals_agree() {
    let r = run(5_000, "[[phase]]\nkind = \"get\"\nuntil = \"steady\"\nsteady_window = 2\nsteady_within = 0.9\n");
    let p = phase(&r, "get");
    assert_verified(p);
    let why = p.stopped_by.as_deref().unwrap();
    assert!(why.starts_with("steady after ") && why.contains("last 2 intervals within"), "{why}");
    assert!(p.wall_ns < 10_000_000_000, "{}", p.wall_ns);
}

#[test]
fn reads_beside_a_background_writer_stay_verified() {
    let r = run(
        5_000,
        "[[phase]]\nkind = \"get\"\nthreads = 2\nduration = \"400ms\"\nwriter = { rate = 20000 }\n\
         [[phase]]\nkind = \"scan\"\nlength = 50\nduration = \"300ms\"\nwriter = { rate = 20000 }\n\
         [[phase]]\nkind = \"multi-get\"\nkeys = 10\nduration = \"300ms\"\nwriter = { rate = 20000 }\n\
         [[phase]]\nkind = \"get\"\nname = \"after\"\n",
    );
    for name in ["get", "scan", "multi-get", "after"] {
        assert_verified(phase(&r, name));
    }
    let p = phase(&r, "get");
    let update = p.latency_by_op.get("update").expect("the writer's latency, as kind update");
    let reads = p.latency_by_op.get("get").expect("the readers' latency");
    assert_eq!(samples(p.latency.as_ref().unwrap()), samples(reads), "the main latency is the readers'");
    assert_eq!(p.ops, samples(reads), "ops/s counts the readers' ops");
    // 20 000/s for 0.4 s: about 8 000 updates, fewer on a loaded machine.
    let n = samples(update);
    assert!(n > 1_000 && n <= 9_000, "{n}");
    assert!(p.notes.iter().any(|n| n.starts_with("background writer: ")), "{:?}", p.notes);
}
