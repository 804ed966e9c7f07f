//! Engine options are checked and resolved by kvbench for every runtime: a bad option of a Go
//! or Python engine stops the run with the scenario file, line, row and option before any
//! worker runs a job, and a good one reaches the worker resolved (a size as an integer).
//! The real workers answer `--list` (`make test` builds them); a wrapper in front of each
//! notes every job it is given.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use kvbench_model::result::RunResult;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A shell script that touches `marker` when called with `--job`, then runs `real`.
fn wrapper(dir: &Path, name: &str, real: &Path, marker: &Path) -> PathBuf {
    assert!(real.exists(), "{} missing: `make go python` builds the workers", real.display());
    let script = format!(
        "#!/bin/sh\ncase \" $* \" in *\" --job \"*) touch '{}';; esac\nexec '{}' \"$@\"\n",
        marker.display(),
        real.display()
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

struct Case {
    dir: tempfile::TempDir,
    marker: PathBuf,
    scenario: PathBuf,
}

/// A scenario whose one row is `engine` with `options` (a TOML inline table) on line 9.
fn case(engine: &str, options: &str) -> Case {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("a-worker-ran-a-job");
    let text = format!(
        "name = \"opts\"\n[dataset]\nrecords = 100\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\n\
         [[engine]]\noptions = {options}\nname = \"{engine}\"\nlabel = \"row-{engine}\"\n"
    );
    let scenario = dir.path().join("opts.toml");
    std::fs::write(&scenario, text).unwrap();
    Case { dir, marker, scenario }
}

fn run(c: &Case) -> Output {
    let go = wrapper(c.dir.path(), "go-worker", &root().join("drivers/go/bin/kvbench-go-worker"), &c.marker);
    let py = wrapper(c.dir.path(), "python", &root().join("drivers/python/.venv/bin/python"), &c.marker);
    std::process::Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(c.dir.path())
        .env("KVBENCH_HOME", root())
        .env("KVBENCH_GO_WORKER", go)
        .env("KVBENCH_PYTHON", py)
        .env_remove("KVBENCH_FAULT")
        .args(["run", c.scenario.to_str().unwrap(), "--no-progress", "--format", "json"])
        .output()
        .unwrap()
}

#[test]
fn a_bad_option_of_a_go_or_python_engine_fails_before_any_worker_runs() {
    let size = "expected an integer (sizes may say 64m, 1g)";
    for (engine, known) in [("go-memory", "corrupt_every, stable_values"), ("py-memory", "corrupt_every")] {
        let cases = [
            (r#"{ corrupt = 1 }"#, format!("engine {engine} has no option `corrupt` (options: {known})")),
            (r#"{ corrupt_every = true }"#, format!("engine {engine} option `corrupt_every` = true: {size}")),
            (r#"{ corrupt_every = "12q" }"#, format!("engine {engine} option `corrupt_every` = \"12q\": {size}")),
        ];
        for (options, message) in cases {
            let c = case(engine, options);
            let o = run(&c);
            let err = String::from_utf8_lossy(&o.stderr);
            let want = format!("{}, line 9: [[engine]] row-{engine}: {message}", c.scenario.display());
            assert_eq!(o.status.code(), Some(2), "{engine} {options}: {err}");
            assert!(err.contains(&want), "{engine} {options}: want {want:?} in:\n{err}");
            assert!(!c.marker.exists(), "{engine} {options}: a worker was given a job");
            let results = std::fs::read_dir(c.dir.path().join("results")).into_iter().flatten().count();
            assert_eq!(results, 0, "{engine} {options}: a result was written");
        }
    }
}

#[test]
fn a_size_reaches_the_go_and_python_workers_as_an_integer() {
    for engine in ["go-memory", "py-memory"] {
        let c = case(engine, r#"{ corrupt_every = "1k" }"#);
        let o = run(&c);
        assert!(o.status.success(), "{engine}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(c.marker.exists(), "{engine}: the worker never ran");
        let results = c.dir.path().join("results");
        let file = std::fs::read_dir(results).unwrap().flatten().next().unwrap().path();
        let r = RunResult::from_json(&std::fs::read_to_string(file).unwrap()).unwrap();
        // As the worker's hello said it read them.
        assert_eq!(r.engines[0].options.get("corrupt_every"), Some(&serde_json::json!(1024)), "{engine}");
    }
}
