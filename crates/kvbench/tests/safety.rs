//! Faults a hostile user or an unlucky machine causes, each a named regression test: nothing
//! measured is lost, no server or worker outlives kvbench, Ctrl-C stops at once, bad input is
//! refused with a clear message, and a wrong value is caught with its exact count.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kvbench_model::result::{RunResult, Status};

fn kvbench(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kvbench"));
    c.current_dir(dir).env_remove("KVBENCH_FAULT");
    c.arg("run").args(["--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"]).args(args);
    c
}

fn output(mut c: Command) -> (i32, String) {
    let o = c.output().unwrap();
    let text = format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

/// The result files in `dir` (not `latest.json`, which points at one of them).
fn results(dir: &Path) -> Vec<RunResult> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| !p.ends_with("latest.json")).collect();
    v.sort();
    v.iter().map(|p| RunResult::from_json(&std::fs::read_to_string(p).unwrap()).unwrap()).collect()
}

fn scenario(dir: &Path, body: &str) -> String {
    let p = dir.join("s.toml");
    std::fs::write(&p, body).unwrap();
    p.to_string_lossy().into_owned()
}

const TWO_ROWS: &str = r#"# Two memory rows.
seed = 3
timeout = 60
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

/// Processes (not zombies) whose command line mentions `needle` or whose working directory is
/// inside it (kvbench's workers inherit the test's directory).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if !e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if stat.rsplit_once(") ").is_some_and(|(_, a)| a.starts_with('Z')) {
            continue;
        }
        let cmd =
            String::from_utf8_lossy(&std::fs::read(e.path().join("cmdline")).unwrap_or_default()).replace('\0', " ");
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        if cmd.contains(needle) || cwd.starts_with(needle) {
            found.push(cmd);
        }
    }
    found
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: signalling the kvbench process this test spawned, by its pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

#[test]
fn regression_a_wrong_value_is_caught_with_its_exact_count() {
    let tmp = tempfile::tempdir().unwrap();
    let body = TWO_ROWS.replace("label = \"a\"\n", "label = \"a\"\noptions = { corrupt_every = 10 }\n");
    let s = scenario(tmp.path(), &body);
    let (code, text) = output(kvbench(tmp.path(), &[&s]));
    assert_eq!(code, 1, "{text}");
    let r = &results(&tmp.path().join("results"))[0];
    let a = r.engines.iter().find(|e| e.label == "a").unwrap();
    let get = a.phases.iter().find(|p| p.name == "get").unwrap();
    assert_eq!(get.mismatches, 30, "every 10th of 300 gets is wrong");
    assert_eq!(a.status, Status::Failed);
    assert!(a.error.as_deref().unwrap_or("").contains("30 wrong values"), "{:?}", a.error);
    assert_eq!(r.engines.iter().find(|e| e.label == "b").unwrap().status, Status::Ok);
}

#[test]
fn regression_slash_name() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), &format!("name = \"../../escape/x\"\n{TWO_ROWS}"));
    let (code, text) = output(kvbench(tmp.path(), &[&s]));
    assert_eq!(code, 0, "{text}");
    let files: Vec<_> = std::fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .flatten()
        .filter(|f| f.file_name() != "latest.json")
        .collect();
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().to_string_lossy().into_owned();
    assert!(name.ends_with("-______escape_x.json"), "{name}");
    assert!(!tmp.path().parent().unwrap().join("escape").exists());
    assert_eq!(results(&tmp.path().join("results"))[0].scenario, "../../escape/x", "the name itself is kept");
}

#[test]
fn regression_huge_timeout_on_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, text) = output(kvbench(tmp.path(), &["--engines", "memory", "--timeout", "18446744073709551615"]));
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("timeout") && text.contains("604800") && !text.contains("panicked"), "{text}");
}

#[test]
fn regression_same_second_runs() {
    // Two runs started together in one directory: distinct ids, private data, every row kept.
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), &TWO_ROWS.replace("memory\"\nlabel = \"b\"", "lmdb\"\nlabel = \"b\""));
    let children: Vec<Child> = (0..2)
        .map(|_| kvbench(tmp.path(), &[&s]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap())
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let rs = results(&tmp.path().join("results"));
    assert_eq!(rs.len(), 2, "two result files");
    assert_ne!(rs[0].run_id, rs[1].run_id);
    for r in &rs {
        assert_eq!(r.engines.len(), 2);
        assert!(r.engines.iter().all(|e| e.status == Status::Ok), "{:?}", r.engines);
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path().join("data")).unwrap().flatten().collect();
    assert!(left.is_empty(), "run directories removed: {left:?}");
}

/// A tiny file system for `--out`, full before the run starts (None: cannot mount here).
struct TinyFs(PathBuf);

impl TinyFs {
    fn mount(at: &Path) -> Option<TinyFs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping: mounting a tiny file system needs root");
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipping: cannot mount a tmpfs at {} (no privilege in this container?)", at.display());
            return None;
        }
        let fs = TinyFs(at.to_path_buf());
        // Fill it: writes then fail with ENOSPC.
        let _ = std::fs::write(at.join("filler"), vec![0u8; 1 << 20]);
        Some(fs)
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn regression_out_disk_full_keeps_every_row_and_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(_fs) = TinyFs::mount(&tmp.path().join("results")) else { return };
    let fallback = tmp.path().join("fallback");
    let s = scenario(tmp.path(), TWO_ROWS);
    let mut c = kvbench(tmp.path(), &[&s]);
    c.env("KVBENCH_FALLBACK_DIR", &fallback);
    let (code, text) = output(c);
    assert_eq!(code, 3, "every row ran and was kept, but not where --out said: {text}");
    assert!(text.contains("cannot write") && text.contains("results/"), "the error names the path: {text}");
    assert!(text.contains("No space left"), "{text}");
    assert!(text.contains(&*fallback.to_string_lossy()), "the fallback is named on screen: {text}");
    let r = &results(&fallback)[0];
    assert_eq!(r.engines.len(), 2, "both rows in the fallback file");
    assert!(r.engines.iter().all(|e| e.status == Status::Ok));
    let tmps: Vec<_> = std::fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(tmps.is_empty(), "no temporary file left: {tmps:?}");
}

#[test]
fn ctrl_c_stops_at_once_marks_the_row_interrupted_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), TWO_ROWS);
    let mut c = kvbench(tmp.path(), &[&s]);
    c.env("KVBENCH_FAULT", "hang@get@a").stdout(Stdio::null()).stderr(Stdio::null());
    let child = c.spawn().unwrap();
    let data = tmp.path().join("data");
    wait_for("row a's worker", Duration::from_secs(60), || {
        std::fs::read_dir(&data).into_iter().flatten().flatten().any(|run| run.path().join("a-r0.log").exists())
    });
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    signal(&child, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert!(t0.elapsed() < Duration::from_secs(10), "Ctrl-C took {:?}", t0.elapsed());
    let r = &results(&tmp.path().join("results"))[0];
    assert_eq!(r.engines.len(), 1, "no new engine starts after Ctrl-C");
    assert_eq!(r.engines[0].status, Status::Interrupted);
    assert!(processes_mentioning(&tmp.path().to_string_lossy()).is_empty());
    let left: Vec<_> = std::fs::read_dir(&data).unwrap().flatten().collect();
    assert!(left.is_empty(), "run directory removed: {left:?}");
}

#[test]
fn servers_and_workers_die_with_kvbench_even_on_sigkill() {
    if Command::new("memcached").arg("-V").output().is_err() {
        eprintln!("skipping: memcached is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(
        tmp.path(),
        &TWO_ROWS.replace("name = \"memory\"\nlabel = \"a\"", "name = \"memcached\"\nlabel = \"a\""),
    );
    let mut c = kvbench(tmp.path(), &[&s]);
    c.env("KVBENCH_FAULT", "hang@get@a").stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let needle = tmp.path().to_string_lossy().into_owned();
    wait_for("memcached and the worker", Duration::from_secs(60), || {
        let p = processes_mentioning(&needle);
        p.iter().any(|c| c.contains("memcached -s")) && p.iter().any(|c| c.contains("worker --job"))
    });
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    wait_for("no process of the run left", Duration::from_secs(20), || processes_mentioning(&needle).is_empty());
    // What the killed run could not remove, the next run does.
    let data = tmp.path().join("data");
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 1, "the killed run's directory");
    let (code, text) = output(kvbench(tmp.path(), &["--engines", "memory", "--records", "100"]));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("killed before it could clean up"), "{text}");
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0);
}

/// A run of `body` whose worker hangs in row `row`'s get phase, returned once that worker runs.
fn hanging_run(dir: &Path, body: &str, row: &str) -> Child {
    let s = scenario(dir, body);
    let mut c = kvbench(dir, &[&s]);
    c.env("KVBENCH_FAULT", format!("hang@get@{row}")).stdout(Stdio::null()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let data = dir.join("data");
    let log = format!("{row}-r0.log");
    // The worker says when it reaches its hang: every phase before it has ended by then.
    wait_for("the hanging worker", Duration::from_secs(120), || {
        std::fs::read_dir(&data).into_iter().flatten().flatten().any(|run| {
            std::fs::read_to_string(run.path().join(&log)).is_ok_and(|text| text.contains("fault: hanging at"))
        })
    });
    child
}

#[test]
fn regression_sigterm_and_sighup_stop_like_ctrl_c_and_exit_128_plus_the_signal() {
    // A server row when memcached is here: its directory must go too.
    let body = if Command::new("memcached").arg("-V").output().is_ok() {
        TWO_ROWS.replace("name = \"memory\"\nlabel = \"a\"", "name = \"memcached\"\nlabel = \"a\"")
    } else {
        TWO_ROWS.to_string()
    };
    for (sig, name, code) in [(libc::SIGTERM, "SIGTERM", 143), (libc::SIGHUP, "SIGHUP", 129)] {
        let tmp = tempfile::tempdir().unwrap();
        let child = hanging_run(tmp.path(), &body, "a");
        let t0 = Instant::now();
        signal(&child, sig);
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{name}: {stderr}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{name} took {:?}", t0.elapsed());
        assert!(stderr.contains("result: results/"), "{name}: the result is named: {stderr}");
        let r = &results(&tmp.path().join("results"))[0];
        assert_eq!(r.engines.len(), 1, "{name}: no new engine starts");
        assert_eq!(r.engines[0].status, Status::Interrupted, "{name}");
        let error = r.engines[0].error.clone().unwrap_or_default();
        assert!(error.contains(name) && error.contains("after phase load"), "{name}: {error}");
        let failed: Vec<&str> =
            r.engines[0].phases.iter().filter(|p| p.status == Status::Failed).map(|p| p.name.as_str()).collect();
        assert!(failed.is_empty(), "{name}: phases the signal cut are interrupted, not failed: {failed:?}");
        assert!(processes_mentioning(&tmp.path().to_string_lossy()).is_empty(), "{name}: processes left");
        let left: Vec<_> = std::fs::read_dir(tmp.path().join("data")).unwrap().flatten().collect();
        assert!(left.is_empty(), "{name}: run and server directories removed: {left:?}");
    }
}

#[test]
fn regression_a_second_sigint_within_the_grace_period_still_writes_the_finished_rows_and_says_where() {
    let tmp = tempfile::tempdir().unwrap();
    let three = format!("{TWO_ROWS}[[engine]]\nname = \"memory\"\nlabel = \"c\"\n");
    let child = hanging_run(tmp.path(), &three, "b");
    // A shell and `timeout` both forwarding one Ctrl-C.
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(20));
    signal(&child, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    let r = &results(&tmp.path().join("results"))[0];
    let rows: Vec<(&str, Status)> = r.engines.iter().map(|e| (e.label.as_str(), e.status)).collect();
    assert_eq!(rows, [("a", Status::Ok), ("b", Status::Interrupted)], "{stderr}");
    // "result: PATH" at the end, or "... in PATH" if the second signal came after the last
    // write (two signals this close may also reach the handler as one).
    assert!(stderr.contains(&format!("results/{}.json", r.run_id)), "says where: {stderr}");
}

#[test]
fn regression_the_timeout_bounds_planning() {
    let tmp = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let args = ["--engines", "memory", "--records", "1000000000000", "--no-size-check", "--timeout", "2"];
    let (code, text) = output(kvbench(tmp.path(), &args));
    assert_eq!(code, 2, "{text}");
    assert!(t0.elapsed() < Duration::from_secs(20), "planning ran {:?} past a 2 s timeout", t0.elapsed());
    assert!(text.contains("planning took longer than the timeout (2 s"), "{text}");
}

#[test]
fn regression_a_worker_that_closes_stdout_is_not_waited_for_beyond_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), &TWO_ROWS.replace("timeout = 60", "timeout = 3"));
    let mut c = kvbench(tmp.path(), &[&s]);
    c.env("KVBENCH_FAULT", "mute@get@a");
    let t0 = Instant::now();
    let (code, text) = output(c);
    assert_eq!(code, 1, "{text}");
    assert!(t0.elapsed() < Duration::from_secs(30), "the run took {:?} with a 3 s timeout", t0.elapsed());
    let r = &results(&tmp.path().join("results"))[0];
    let a = &r.engines[0];
    assert_eq!(a.status, Status::Failed);
    assert!(a.error.as_deref().unwrap_or("").contains("did not exit within 3 s"), "{:?}", a.error);
    assert_eq!(r.engines[1].status, Status::Ok, "the next row runs");
}

#[test]
fn regression_keep_data_rows_whose_labels_sanitise_alike_keep_their_own_databases() {
    let tmp = tempfile::tempdir().unwrap();
    let body = TWO_ROWS
        .replace("name = \"memory\"\nlabel = \"a\"", "name = \"lmdb\"\nlabel = \"a/b\"")
        .replace("name = \"memory\"\nlabel = \"b\"", "name = \"lmdb\"\nlabel = \"a_b\"");
    let s = scenario(tmp.path(), &body);
    let (code, text) = output(kvbench(tmp.path(), &["--keep-data", &s]));
    assert_eq!(code, 0, "{text}");
    let run = std::fs::read_dir(tmp.path().join("data")).unwrap().next().unwrap().unwrap().path();
    let rows: Vec<PathBuf> =
        std::fs::read_dir(&run).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    assert_eq!(rows.len(), 2, "one directory per row: {rows:?}");
    for r in rows {
        assert!(std::fs::read_dir(&r).unwrap().count() > 0, "{} keeps its database", r.display());
    }
}

#[test]
fn regression_a_failed_rows_job_file_and_log_survive_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), TWO_ROWS);
    let mut c = kvbench(tmp.path(), &[&s]);
    c.env("KVBENCH_FAULT", "abort@get@a");
    let (code, text) = output(c);
    assert_eq!(code, 1, "{text}");
    let r = &results(&tmp.path().join("results"))[0];
    let error = r.engines[0].error.clone().unwrap_or_default();
    let log = error.split("log: ").nth(1).and_then(|l| l.split(')').next()).map(PathBuf::from);
    let log = tmp.path().join(log.unwrap_or_else(|| panic!("the error names the log: {error}")));
    let job = log.with_extension("job.json");
    assert!(log.exists() && job.exists(), "{error}");
    let (code, text) = output(kvbench(tmp.path(), &["--engines", "memory", "--records", "100"]));
    assert_eq!(code, 0, "{text}");
    assert!(log.exists() && job.exists(), "the next run removed {}: {text}", log.display());
}
