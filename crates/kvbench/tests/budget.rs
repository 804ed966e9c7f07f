//! A row's memory budget (a memory cgroup around its worker): the store is read from the
//! device when its data is larger than the budget, and from the page cache without one.
//! Needs root and a memory cgroup hierarchy (this project's machines and CI have both);
//! elsewhere the test says why it did not run.

use std::path::{Path, PathBuf};
use std::process::Command;

use kvbench_model::result::{PhaseResult, RunResult, Status};

/// LMDB as kvbench opens it by default (read-ahead off: docs/decisions.md).
const SCENARIO: &str = r#"# 58 MiB of records (a 64 MiB LMDB file) in 48 MiB of memory, then every record read once.
seed = 5
timeout = 300
sync = "none"
engines = ["lmdb"]
[dataset]
records = 500000
value = { size = 100 }
[[phase]]
kind = "load"
distribution = "sequential"
batch = 1000
[[phase]]
kind = "get"
"#;

fn cgroups_usable() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let v1 = Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists();
    let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").is_ok_and(|c| c.contains("memory"));
    root && (v1 || v2)
}

/// Run the scenario in `dir` (on the build's disk, not a tmpfs whose pages a cgroup cannot
/// give back), with `extra` flags; the result.
fn run(dir: &Path, extra: &[&str]) -> RunResult {
    std::fs::write(dir.join("s.toml"), SCENARIO).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .args(["run", "s.toml", "--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let entry = std::fs::read_dir(dir.join("results")).unwrap().next().expect("a result file").unwrap();
    let r = RunResult::from_json(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
    std::fs::remove_dir_all(dir.join("results")).unwrap();
    r
}

fn get(r: &RunResult) -> &PhaseResult {
    let e = &r.engines[0];
    assert_eq!(e.status, Status::Ok, "{:?}", e.error);
    let p = e.phases.iter().find(|p| p.name == "get").unwrap();
    assert_eq!(p.mismatches + p.missing + p.errors, 0, "every read verified");
    p
}

fn work_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("budget-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn data_larger_than_the_budget_is_read_from_the_device_and_the_cgroup_stays_within_it() {
    if !cgroups_usable() {
        eprintln!("skipped: a memory budget needs root and a memory cgroup hierarchy");
        return;
    }
    let dir = work_dir();
    // 48 MiB: the test's debug build maps ~20 MiB of its own text, which the budget holds too.
    let bounded = run(&dir, &["--memory", "48MiB"]);
    let budget = bounded.engines[0].budget.clone().expect("the row states its budget");
    assert_eq!(budget.limit_bytes, 48 << 20);
    assert!(budget.peak_bytes <= 48 << 20, "{budget:?}");
    assert!(budget.data_over_budget > 1.1, "{budget:?}");
    let d = get(&bounded).disk.clone().expect("the get phase's disk figures");
    assert!(d.read_bytes > 10 << 20, "a store larger than its budget is read from the device: {d:?}");
    assert!(d.read_amplification > 1.0, "{d:?}");
    assert!(d.cached_at_start.is_some_and(|c| c < 0.9), "not all of the store fits in the budget: {d:?}");

    let free = run(&dir, &[]);
    assert!(free.engines[0].budget.is_none());
    let d = get(&free).disk.clone().expect("the get phase's disk figures");
    assert!(d.read_bytes < 2 << 20, "without a budget the store is read from the page cache: {d:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_budget_below_what_a_worker_needs_is_refused_with_the_range() {
    let dir = work_dir().join("refused");
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(&dir)
        .args(["run", "--engines", "memory", "--memory", "1MiB", "--no-progress"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--memory") && err.contains("8MiB"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
