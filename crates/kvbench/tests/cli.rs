//! The command line's errors and the report commands on real runs of the memory engine:
//! bad flag values, unwritable paths, compare's verdict and regression gate, YCSB lines and
//! interval logs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kvbench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env_remove("KVBENCH_FAULT")
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One run of the memory engine with `extra` flags; its result file.
fn run(dir: &Path, out: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["run", "--no-progress", "--engines", "memory", "--records", "300", "--workload", "readrandom"];
    args.extend(["--out", out, "--data-dir", "data", "--plan-dir", "plans"]);
    args.extend(extra);
    let o = kvbench(dir, &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    std::fs::read_dir(dir.join(out)).unwrap().next().unwrap().unwrap().path()
}

#[test]
fn bad_flag_values_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, value) in
        [("--threads", "0"), ("--threads", "-2"), ("--records", "-5"), ("--repetitions", "0"), ("--rate", "-1")]
    {
        let o = kvbench(tmp.path(), &["run", flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let err = text(&o.stderr);
        assert!(err.contains(flag) && err.contains(&format!("got `{value}`")), "{flag} {value}: {err}");
    }
}

#[test]
fn duration_takes_units_and_applies_to_the_phases_after_the_load() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path(), &["run", "--duration", "60"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("--duration") && err.contains("\"10m\""), "{err}");
    let file = run(tmp.path(), "out", &["--duration", "200ms", "--format", "json"]);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let phases = r["engines"][0]["phases"].as_array().unwrap();
    let by = |name: &str| phases.iter().find(|p| p["name"] == name).unwrap();
    assert_eq!(by("get")["stopped_by"], "duration 0.2 s reached");
    assert!(by("load").get("stopped_by").is_none());
}

#[test]
fn an_unwritable_path_names_its_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path(), &["run", "--engines", "memory", "--out", "/proc/kvbench-x", "--no-progress"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--output /proc/kvbench-x"), "{}", text(&o.stderr));
}

#[test]
fn compare_of_two_runs_gives_verdicts_and_lists_what_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let a = run(tmp.path(), "a", &["--repetitions", "2"]);
    let b = run(tmp.path(), "b", &["--repetitions", "2", "--threads", "2"]);
    let o = kvbench(tmp.path(), &["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    // A debug build: every called verdict is marked unreliable.
    let known = ["faster", "slower", "no significant difference", "unreliable", "no verdict"];
    assert!(rows.iter().all(|r| known.contains(&r["verdict"].as_str().unwrap())), "{rows:?}");
    let diffs: Vec<&str> = j["differences"].as_array().unwrap().iter().filter_map(|d| d.as_str()).collect();
    assert!(diffs.iter().any(|d| d.starts_with("get threads: A 1, B 2")), "{diffs:?}");
    // One repetition: no verdict, and the gate cannot fail on it.
    let c = run(tmp.path(), "c", &[]);
    let o = kvbench(tmp.path(), &["compare", c.to_str().unwrap(), c.to_str().unwrap(), "--fail-if-slower", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("no verdict: 1 and 1 repetitions"), "{}", text(&o.stdout));
}

#[test]
fn report_writes_ycsb_lines_and_interval_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = run(tmp.path(), "r", &[]);
    let o = kvbench(tmp.path(), &["report", file.to_str().unwrap(), "--format", "ycsb"]);
    let y = text(&o.stdout);
    assert!(y.contains("[OVERALL], RunTime(ms), ") && y.contains("[READ], 99thPercentileLatency(us), "), "{y}");
    let o = kvbench(tmp.path(), &["report", file.to_str().unwrap(), "--format", "hlog", "--output", "h"]);
    let logs: Vec<_> = std::fs::read_dir(tmp.path().join("h")).map(|d| d.flatten().collect()).unwrap_or_default();
    // Results carry interval histograms once the workers record them; until then, say so.
    if logs.is_empty() {
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains("no phase carries interval histograms"), "{}", text(&o.stderr));
    } else {
        assert!(logs.iter().all(|f| f.file_name().to_string_lossy().ends_with(".hlog")));
    }
}

#[test]
fn vary_makes_interleaved_rows_with_verdicts_against_the_first_value() {
    let tmp = tempfile::tempdir().unwrap();
    let f = run(tmp.path(), "v", &["--repetitions", "2", "--vary", "memory.delay_ns=0,2000", "--history", "h.sqlite"]);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(r["workload"]["order"], "interleaved");
    let order: Vec<(String, u64)> = r["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["label"].as_str().unwrap().to_string(), e["repetition"].as_u64().unwrap()))
        .collect();
    let (a, b) = ("memory delay_ns=0".to_string(), "memory delay_ns=2000".to_string());
    assert_eq!(order, [(a.clone(), 0), (b.clone(), 0), (b, 1), (a, 1)], "round 2 starts one row further on");
    let o = kvbench(tmp.path(), &["report", f.to_str().unwrap()]);
    let t = text(&o.stdout);
    assert!(t.contains("Varied rows") && t.contains("baseline"), "{t}");
    // The run went into the history store.
    let o = kvbench(tmp.path(), &["history", "--db", "h.sqlite"]);
    assert!(o.status.success() && text(&o.stdout).contains(r["run_id"].as_str().unwrap()), "{}", text(&o.stderr));
}

#[test]
fn regression_41_a_bare_history_goes_into_the_output_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["run", "--no-progress", "--engines", "memory", "--records", "100", "--workload", "readrandom"];
    args.extend(["--data-dir", "data", "--plan-dir", "plans", "--output", "elsewhere", "--history"]);
    let o = kvbench(tmp.path(), &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(tmp.path().join("elsewhere/history.sqlite").is_file(), "{}", text(&o.stderr));
    assert!(!tmp.path().join("results").exists(), "nothing written to ./results");
    let o = kvbench(tmp.path(), &["history", "--db", "elsewhere/history.sqlite"]);
    assert!(o.status.success() && text(&o.stdout).starts_with("started (UTC)"), "{}", text(&o.stderr));
}

#[test]
fn compare_takes_several_runs_each_against_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let a = run(tmp.path(), "a", &["--repetitions", "2"]);
    let b = run(tmp.path(), "b", &["--repetitions", "2"]);
    let c = run(tmp.path(), "c", &["--repetitions", "2"]);
    let args = ["compare", a.to_str().unwrap(), b.to_str().unwrap(), c.to_str().unwrap(), "--format", "json"];
    let o = kvbench(tmp.path(), &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = j.as_array().expect("one comparison per B");
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|x| x["a"]["run_id"] == runs[0]["a"]["run_id"]));
    assert_ne!(runs[0]["b"]["run_id"], runs[1]["b"]["run_id"]);
}
