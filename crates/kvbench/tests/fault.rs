//! The kill step end to end on a real Redis Cluster (3 masters, 1 replica each, started by
//! kvbench): `kvbench run` kills master 1 one second into an open-loop get phase; its replica
//! takes over and the row records the errors, the time to recover and the spike, as the
//! declared outcome (the run succeeds), with every read that succeeded verified. A second row
//! on the same cluster shape runs after it, on a whole cluster (a killed one is replaced).
//! Set KVBENCH_ALLOW_MISSING=1 to skip without redis-server.

use std::path::Path;
use std::process::Command;

use kvbench_model::result::{RunResult, Status};

const SCENARIO: &str = r#"# A master killed mid-phase.
seed = 5
timeout = 120
[dataset]
records = 300
value = { min = 10, max = 50 }
[[engine]]
name = "redis-cluster"
label = "first"
options = { replicas = 1 }
[[engine]]
name = "redis-cluster"
label = "second"
options = { replicas = 1 }
[[phase]]
kind = "load"
batch = 50
[[phase]]
name = "failover"
kind = "get"
threads = 4
count = 9000
rate = 600
distribution = "uniform"
kill = { member = 1, after = "1s" }
"#;

fn have_redis() -> bool {
    let found = Command::new("redis-server").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("KVBENCH_ALLOW_MISSING").is_none() {
        panic!("redis-server not installed: apt-get install redis-server (or KVBENCH_ALLOW_MISSING=1)");
    }
    found
}

fn result(dir: &Path) -> RunResult {
    let entry = std::fs::read_dir(dir.join("results")).unwrap().next().expect("a result file").unwrap();
    RunResult::from_json(&std::fs::read_to_string(entry.path()).unwrap()).unwrap()
}

#[test]
fn a_killed_master_is_reported_with_its_errors_and_recovery() {
    if !have_redis() {
        eprintln!("skipping: redis-server not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("s.toml"), SCENARIO).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(tmp.path())
        .args(["run", "s.toml", "--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let r = result(tmp.path());
    assert_eq!(r.engines.len(), 2);
    for e in &r.engines {
        assert_eq!(e.status, Status::Ok, "{}: {:?}", e.label, e.error);
        let p = e.phases.iter().find(|p| p.name == "failover").unwrap();
        let f = p.fault.as_ref().unwrap_or_else(|| panic!("{}: no fault recorded: {:?}", e.label, p.notes));
        assert!(f.member.starts_with("node-1 "), "{}", f.member);
        // The master's slots fail until its replica is promoted (cluster-node-timeout 5 s).
        assert!(p.errors > 0 && f.errors == p.errors, "{}: {} errors", e.label, p.errors);
        assert_eq!(f.errors_by.values().sum::<u64>(), p.errors, "the errors by kind: {:?}", f.errors_by);
        assert_eq!(p.status, Status::Expected, "errors explained by the kill are the declared outcome");
        assert_eq!(p.mismatches + p.missing, 0, "every read that succeeded matched the plan");
        let rec = f.recovery_ms.unwrap_or_else(|| panic!("{}: not recovered: {:?}", e.label, p.notes));
        assert!((1..14_000).contains(&rec), "{}: recovery {rec} ms", e.label);
        assert!(f.p99_worst_after_ns > f.p99_before_ns, "the spike shows in the timeline");
        let in_intervals: u64 = p.intervals.iter().map(|i| i.errors).sum();
        assert_eq!(in_intervals, p.errors, "every error is on the timeline");
        assert!(p.intervals.windows(2).all(|w| w[1].t_ms - w[0].t_ms >= 100), "100 ms intervals");
    }
}
