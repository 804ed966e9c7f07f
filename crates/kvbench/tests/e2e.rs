//! End-to-end tests of the `kvbench` binary on tiny datasets with the memory engine (and
//! LMDB where a persistent engine matters). They check outcomes, never speed.

use std::path::Path;
use std::process::Command;

use kvbench_model::result::{RunResult, Status};

fn kvbench(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kvbench"));
    c.current_dir(dir);
    c.env_remove("KVBENCH_FAULT");
    c
}

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = kvbench(dir);
    c.arg("run").args(["--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"]).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn result(dir: &Path) -> RunResult {
    let entry = std::fs::read_dir(dir.join("results")).unwrap().next().expect("a result file").unwrap();
    RunResult::from_json(&std::fs::read_to_string(entry.path()).unwrap()).unwrap()
}

fn write_scenario(dir: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("s.toml");
    std::fs::write(&p, body).unwrap();
    p
}

const TWO_ROWS: &str = r#"# Two memory rows, to prove one broken worker costs one row.
seed = 3
timeout = 20
[dataset]
records = 300
[[phase]]
kind = "load"
[[phase]]
kind = "get"
[[engine]]
name = "memory"
label = "a"
[[engine]]
name = "memory"
label = "b"
"#;

#[test]
fn default_workload_runs_and_verifies_every_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = run(tmp.path(), &["--engines", "memory", "--records", "400", "--threads", "2"], &[]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("Phase get") && out.contains("Phase multi-get") && out.contains("Phase scan"), "{out}");
    let r = result(tmp.path());
    assert_eq!(r.engines.len(), 1);
    let e = &r.engines[0];
    assert_eq!(e.status, Status::Ok, "{:?}", e.error);
    let names: Vec<_> = e.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["open", "load", "get", "multi-get", "scan", "close"]);
    let get = &e.phases[2];
    assert_eq!(get.ops, 400);
    assert_eq!(get.mismatches + get.missing, 0);
    assert!(get.latency.as_ref().unwrap().hdr.len() > 10);
    let hist = kvbench_model::histogram::decode_histogram(&get.latency.as_ref().unwrap().hdr).unwrap();
    assert_eq!(hist.len(), 400, "one latency sample per get");
    assert!(e.timer_overhead_ns > 0.0);
    assert_eq!(r.plan.records, 400);
}

#[test]
fn a_worker_killed_mid_run_costs_only_its_row() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), TWO_ROWS);
    let (code, out, err) = run(tmp.path(), &[s.to_str().unwrap()], &[("KVBENCH_FAULT", "abort@get@a")]);
    assert_eq!(code, 1, "a failed row makes the exit code 1\n{out}\n{err}");
    let r = result(tmp.path());
    let a = r.engines.iter().find(|e| e.label == "a").unwrap();
    let b = r.engines.iter().find(|e| e.label == "b").unwrap();
    assert_eq!(a.status, Status::Failed);
    let why = a.error.as_deref().unwrap();
    assert!(why.contains("signal") && why.contains("after phase load"), "{why}");
    let ok: Vec<&str> = a.phases.iter().filter(|p| p.status == Status::Ok).map(|p| p.name.as_str()).collect();
    assert_eq!(ok, ["open", "load"], "what was measured is kept");
    let get = a.phases.iter().find(|p| p.name == "get").unwrap();
    assert_eq!(get.status, Status::Failed, "every phase the job asked for is in the row");
    assert_eq!(get.reason.as_deref(), Some("worker ended after phase load"));
    assert_eq!(b.status, Status::Ok, "{:?}", b.error);
    assert!(out.contains("FAILED"), "{out}");
}

#[test]
fn a_worker_printing_garbage_or_hanging_costs_only_its_row() {
    for (fault, expect) in [("garbage@get@a", "not a protocol event"), ("hang@get@a", "did not finish within 2 s")] {
        let tmp = tempfile::tempdir().unwrap();
        let s = write_scenario(tmp.path(), TWO_ROWS);
        let (code, _, err) = run(tmp.path(), &[s.to_str().unwrap(), "--timeout", "2"], &[("KVBENCH_FAULT", fault)]);
        assert_eq!(code, 1, "{err}");
        let r = result(tmp.path());
        let a = r.engines.iter().find(|e| e.label == "a").unwrap();
        assert!(a.error.as_deref().unwrap_or("").contains(expect), "{fault}: {:?}", a.error);
        assert_eq!(r.engines.iter().find(|e| e.label == "b").unwrap().status, Status::Ok);
    }
}

#[test]
fn a_bad_scenario_names_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), "engines = [\"memory\"]\n[[phase]]\nkind = \"lod\"\n");
    let (code, _, err) = run(tmp.path(), &[s.to_str().unwrap()], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("s.toml") && err.contains("line 3") && err.contains("lod"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unknown_engines_and_options_are_refused_before_running() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(
        tmp.path(),
        "engines = []\n[[phase]]\nkind = \"load\"\n[[engine]]\nname = \"memory\"\noptions = { bogus = 1 }\n",
    );
    let (code, _, err) = run(tmp.path(), &[s.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no option `bogus`"), "{err}");
    let (code, _, err) = run(tmp.path(), &["--engines", "memory,memroy", "--records", "50"], &[]);
    assert_eq!(code, 2, "an unknown engine stops the run before it starts: {err}");
    assert!(err.contains("unknown engine `memroy`") && err.contains("did you mean `memory`"), "{err}");
    assert!(
        !tmp.path().join("results").exists() || std::fs::read_dir(tmp.path().join("results")).unwrap().next().is_none()
    );
}

#[test]
fn report_renders_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = run(tmp.path(), &["--engines", "memory", "--records", "100", "--workload", "readrandom"], &[]);
    assert_eq!(code, 0, "{err}");
    let file = std::fs::read_dir(tmp.path().join("results")).unwrap().next().unwrap().unwrap().path();
    for (fmt, needle) in [
        ("table", "Phase get"),
        ("markdown", "## Phase get"),
        ("csv", "run_id,engine"),
        ("json", "\"schema\""),
        ("html", "<!DOCTYPE html>"),
    ] {
        let o = kvbench(tmp.path()).args(["report", file.to_str().unwrap(), "--format", fmt]).output().unwrap();
        assert!(o.status.success(), "{fmt}");
        assert!(String::from_utf8_lossy(&o.stdout).contains(needle), "{fmt}");
    }
    let o = kvbench(tmp.path()).args(["report", "nope.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope.json"));
}

#[test]
fn list_shows_engines_and_why_one_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path()).args(["list"]).env("KVBENCH_PYTHON", "/nonexistent/python").output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(out.contains("memory") && out.contains("capabilities"), "{out}");
    assert!(out.contains("py-*") && out.contains("unavailable"), "the Python worker's absence is explained: {out}");
}

#[test]
fn cold_cache_evicts_the_files_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) =
        run(tmp.path(), &["--engines", "lmdb", "--records", "300", "--workload", "readrandom", "--cache", "cold"], &[]);
    assert_eq!(code, 0, "{err}");
    let r = result(tmp.path());
    let get = r.engines[0].phases.iter().find(|p| p.name == "get").unwrap();
    assert!(get.cache.starts_with("cold: ") && get.cache.contains("posix_fadvise"), "{}", get.cache);
    assert!(!get.cache.starts_with("cold: 0 files"), "{}", get.cache);
}

#[test]
fn open_per_operation_is_explicit_and_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(
        tmp.path(),
        "engines = [\"lmdb\"]\n[dataset]\nrecords = 200\n[[phase]]\nkind = \"load\"\n\
         [[phase]]\nname = \"hot-reopen\"\nkind = \"get\"\ndistribution = \"hot\"\nhot_key = 123\ncount = 50\nopen_per = \"operation\"\n\
         [[phase]]\nname = \"hot\"\nkind = \"get\"\ndistribution = \"hot\"\nhot_key = 123\ncount = 50\n",
    );
    let (code, out, err) = run(tmp.path(), &[s.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    let r = result(tmp.path());
    let p = r.engines[0].phases.iter().find(|p| p.name == "hot-reopen").unwrap();
    assert_eq!(p.unit, "open+op+close");
    assert_eq!((p.ops, p.mismatches, p.missing), (50, 0, 0));
    assert!(out.contains("open+op+close"), "the report says what a sample covers: {out}");
}

#[test]
fn rows_with_different_durability_are_warned() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(
        tmp.path(),
        "[dataset]\nrecords = 50\n[[phase]]\nkind = \"load\"\n[[engine]]\nname = \"memory\"\nlabel = \"x\"\nsync = \"none\"\n[[engine]]\nname = \"memory\"\nlabel = \"y\"\n",
    );
    let (code, _, err) = run(tmp.path(), &[s.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(result(tmp.path()).warnings.iter().any(|w| w.contains("different durability")), "{err}");
}

#[test]
fn a_tsv_dataset_loads_and_a_malformed_line_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("d.tsv"), "x\t株式会社あいう\t1\ny\t有限会社かき\t2\nz\t合同会社さし\t3\n").unwrap();
    let args = [
        "--engines",
        "memory",
        "--workload",
        "readrandom",
        "--dataset",
        "file:d.tsv",
        "--key-column",
        "2",
        "--value-column",
        "3",
    ];
    let (code, _, err) = run(tmp.path(), &args, &[]);
    assert_eq!(code, 0, "{err}");
    let r = result(tmp.path());
    assert_eq!(r.plan.records, 3);
    assert_eq!(r.engines[0].phases.iter().find(|p| p.name == "get").unwrap().ops, 3);

    std::fs::write(tmp.path().join("d.tsv"), "x\t株式会社あいう\t1\ny\t有限会社かき\n").unwrap();
    let (code, _, err) = run(tmp.path(), &args, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("d.tsv") && err.contains("line 2"), "{err}");
}

#[test]
fn an_open_mode_the_engine_lacks_is_not_applicable() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(
        tmp.path(),
        "[dataset]\nrecords = 50\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\n[[engine]]\nname = \"lmdb\"\nopen = \"secondary\"\n",
    );
    let (code, _, err) = run(tmp.path(), &[s.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    let r = result(tmp.path());
    let get = r.engines[0].phases.iter().find(|p| p.name == "get").unwrap();
    assert_eq!(get.status, Status::NotApplicable);
    assert!(get.reason.as_deref().unwrap().contains("secondary"));
}

#[test]
fn the_size_guard_refuses_a_run_that_would_not_fit_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) =
        run(tmp.path(), &["--engines", "lmdb", "--records", "100000000000", "--value-size", "1000"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--no-size-check") && err.contains("free"), "{err}");
    let data = tmp.path().join("data");
    let written: u64 = kvbench_worker::sys::space(&data).0;
    assert!(written < 1 << 20, "nothing large was written ({written} bytes)");
}
