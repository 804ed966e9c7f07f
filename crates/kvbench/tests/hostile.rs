//! Issue 31: what a hostile local user or a careless one can do to kvbench's inputs and outputs,
//! each a named regression test. Results never go to a place another user prepared; no write
//! error panics or loops; nothing from a result file reaches a terminal or a spreadsheet as a
//! command.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kvbench(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kvbench"));
    c.current_dir(dir).env_remove("KVBENCH_FAULT").env_remove("KVBENCH_FALLBACK_DIR");
    c
}

fn run_args(out: &str) -> Vec<String> {
    ["run", "--no-progress", "--out", out, "--data-dir", "data", "--plan-dir", "plans"].map(String::from).to_vec()
}

const THREE_ROWS: &str = r#"# Three memory rows.
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
[[engine]]
name = "memory"
label = "c"
"#;

fn scenario(dir: &Path) -> String {
    let p = dir.join("s.toml");
    std::fs::write(&p, THREE_ROWS).unwrap();
    p.to_string_lossy().into_owned()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs of `size` at `at`, unmounted on drop (None: cannot mount here).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        if !is_root() {
            eprintln!("skipping: mounting a file system needs root");
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipping: cannot mount a tmpfs at {}", at.display());
            return None;
        }
        Some(Tmpfs(at.to_path_buf()))
    }

    /// Fill it: every later write fails with ENOSPC.
    fn fill(&self) {
        let _ = std::fs::write(self.0.join("filler"), vec![0u8; 4 << 20]);
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The `RESULTS WRITTEN TO THE FALLBACK <path> (...)` line's path.
fn fallback_named(stderr: &str) -> Option<PathBuf> {
    let rest = stderr.split("RESULTS WRITTEN TO THE FALLBACK ").nth(1)?;
    Some(PathBuf::from(rest.split(" (").next()?))
}

#[test]
fn regression_fallback_is_a_new_private_directory_never_one_planted_in_tmp() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(out) = Tmpfs::mount(&tmp.path().join("results"), "64k") else { return };
    out.fill();
    // What another user prepares in the shared temporary directory: the old fixed name as a
    // world-writable directory of theirs, and a symlink beside it.
    let shared = tmp.path().join("shared-tmp");
    let planted = shared.join("kvbench-results");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let _ = std::os::unix::fs::chown(&planted, Some(65534), Some(65534));
    let s = scenario(tmp.path());
    let o = kvbench(tmp.path())
        .args(run_args("results"))
        .arg(&s)
        .env("TMPDIR", &shared)
        .env("HOME", tmp.path().join("no-home"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(std::fs::read_dir(&planted).unwrap().count(), 0, "nothing written into the planted directory: {stderr}");
    let file = fallback_named(&stderr).unwrap_or_else(|| panic!("the fallback is named: {stderr}"));
    let dir = file.parent().unwrap();
    assert_eq!(dir.parent().unwrap(), shared, "{stderr}");
    let meta = std::fs::symlink_metadata(dir).unwrap();
    assert!(meta.is_dir(), "a real directory, not a symlink");
    assert_eq!(meta.mode() & 0o777, 0o700, "owner-only");
    assert_eq!(meta.uid(), std::fs::metadata(tmp.path()).unwrap().uid(), "made by us");
    assert!(std::fs::read(&file).unwrap().starts_with(b"{"), "the results are there");
}

#[test]
fn regression_a_failed_out_exits_non_zero_and_removes_the_partial_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(out) = Tmpfs::mount(&tmp.path().join("results"), "1m") else { return };
    let s = scenario(tmp.path());
    // Row c hangs until its timeout: time to fill the disk after the first rows were written.
    let mut child = kvbench(tmp.path())
        .args(run_args("results"))
        .args([&s, "--timeout", "3"])
        .env("KVBENCH_FAULT", "hang@get@c")
        .env("KVBENCH_FALLBACK_DIR", tmp.path().join("fallback"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stderr = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        stderr.push_str(&line);
        stderr.push('\n');
        if line.trim_start().starts_with("b: ok") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let partial: Vec<_> =
        std::fs::read_dir(&out.0).unwrap().flatten().filter(|e| e.file_name() != "filler").map(|e| e.path()).collect();
    assert_eq!(partial.len(), 1, "rows a and b were written to --out: {stderr}");
    out.fill();
    lines.for_each(|l| stderr.push_str(&(l.unwrap() + "\n")));
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(3), "a failed --out is not a success: {stderr}");
    assert!(stderr.contains("No space left"), "{stderr}");
    let file = fallback_named(&stderr).unwrap_or_else(|| panic!("the fallback is named: {stderr}"));
    assert!(stderr.contains(&format!("the results are in {}", file.display())), "{stderr}");
    assert!(!partial[0].exists(), "the partial copy is gone from --out: {stderr}");
    let r = kvbench_model::result::RunResult::from_json(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let labels: Vec<&str> = r.engines.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["a", "b", "c"], "all three rows in the fallback");
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap()
}

#[test]
fn regression_stdout_on_a_full_device_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path()).arg("list").stdout(dev_full()).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(74), "{stderr}");
    assert!(stderr.contains("cannot write to standard output") && !stderr.contains("panicked"), "{stderr}");
}

#[test]
fn regression_stderr_on_a_full_device_does_not_stop_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path());
    let o = kvbench(tmp.path()).args(run_args("results")).arg(&s).stderr(dev_full()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    let files = std::fs::read_dir(tmp.path().join("results")).unwrap().flatten();
    let results = files.filter(|e| e.file_name() != "latest.json").count();
    assert_eq!(results, 1, "the result file is written");
}

#[test]
fn regression_plan_dump_into_a_closed_pipe_stops_at_once_quietly_with_status_141() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = kvbench(tmp.path())
        .args(["plan", "--dump", "--records", "10000000", "--plan-dir", "plans"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("# phase"), "{first}");
    // The reader is gone (as `| head -1` exits): the next writes fail with EPIPE.
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("plan --dump still runs {:?} after its reader went away", t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    // As `head` expects of a program before it: 128 + SIGPIPE, and nothing said.
    assert_eq!(status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// A result file of a real run whose labels and intent carry terminal escapes and formulas.
fn crafted_result(dir: &Path) -> PathBuf {
    let s = scenario(dir);
    let o = kvbench(dir).args(run_args("results")).arg(&s).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = std::fs::read_dir(dir.join("results")).unwrap().next().unwrap().unwrap().path();
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["intent"] = "\u{1b}]0;owned\u{7}intent\u{1b}[2J".into();
    for (e, label) in v["engines"].as_array_mut().unwrap().iter_mut().zip(["=HYPERLINK(\"x\")", "\u{1b}[31mred", "@c"])
    {
        e["label"] = label.into();
    }
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    p
}

#[test]
fn regression_report_and_compare_escape_control_characters_from_result_files() {
    let tmp = tempfile::tempdir().unwrap();
    let p = crafted_result(tmp.path());
    let f = p.to_str().unwrap();
    let shown = [
        kvbench(tmp.path()).args(["report", f]).output().unwrap(),
        kvbench(tmp.path()).args(["report", "-f", "markdown", f]).output().unwrap(),
        kvbench(tmp.path()).args(["compare", f, f]).output().unwrap(),
        kvbench(tmp.path()).args(["compare", "-f", "markdown", f, f]).output().unwrap(),
    ];
    for o in shown {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "no raw escape reaches the terminal: {text:?}");
        assert!(text.contains("\\u001b[31mred"), "the label is shown, escaped: {text}");
    }
}

#[test]
fn regression_csv_cells_cannot_start_a_formula() {
    let tmp = tempfile::tempdir().unwrap();
    let p = crafted_result(tmp.path());
    let o = kvbench(tmp.path()).args(["report", "-f", "csv", p.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for line in text.lines().skip(1) {
        for cell in line.split(',') {
            let c = cell.trim_start_matches('"');
            let formula = c.starts_with(['=', '+', '@']) || (c.starts_with('-') && c.parse::<f64>().is_err());
            assert!(!formula, "cell `{cell}` would run as a formula: {line}");
        }
    }
    assert!(text.contains("'=HYPERLINK") && text.contains(",'@c,"), "{text}");
}

/// `kvbench ARGS` must stop within 10 s with status 2 and an error containing `says`.
fn refused_within_10_s(dir: &Path, args: &[&str], says: &str) {
    let mut child = kvbench(dir).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kvbench {args:?} still runs after 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "kvbench {args:?}: {stderr}");
    assert!(stderr.contains(says), "kvbench {args:?} names the file and why: {stderr}");
}

#[test]
fn regression_inputs_are_read_only_from_regular_files() {
    let tmp = tempfile::tempdir().unwrap();
    let c = std::ffi::CString::new(tmp.path().join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (fifo, zero) = ("scenario fifo: a FIFO", "/dev/zero: a character device");
    refused_within_10_s(tmp.path(), &["run", "fifo"], fifo);
    refused_within_10_s(tmp.path(), &["plan", "/dev/zero"], &format!("scenario {zero}"));
    refused_within_10_s(tmp.path(), &["report", "fifo"], "result file fifo: a FIFO");
    refused_within_10_s(tmp.path(), &["report", "/dev/zero"], &format!("result file {zero}"));
    refused_within_10_s(tmp.path(), &["compare", "/dev/zero", "fifo"], &format!("result file {zero}"));
    refused_within_10_s(tmp.path(), &["plan", "--dataset", "file:/dev/zero"], &format!("dataset source file {zero}"));
    refused_within_10_s(tmp.path(), &["plan", "--dataset", "file:fifo"], "dataset source file fifo: a FIFO");
    let serve = ["serve", "--engine", "memory", "--dir", "sd", "--token-file", "/dev/zero"];
    refused_within_10_s(tmp.path(), &serve, &format!("--token-file {zero}"));
}

#[test]
fn regression_value_column_4294967296_is_an_error_not_an_abort() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("d.tsv"), "a\t1\nb\t2\n").unwrap();
    let flag = ["plan", "--dataset", "file:d.tsv", "--value-column", "4294967296"];
    refused_within_10_s(tmp.path(), &flag, "--value-column");
    let body = "[dataset]\nsource = \"file:d.tsv\"\nvalue_column = 4294967296\n[[phase]]\nkind = \"load\"\n";
    std::fs::write(tmp.path().join("s.toml"), body).unwrap();
    refused_within_10_s(tmp.path(), &["plan", "s.toml"], "s.toml, line 3");
}

/// Exit status and peak RSS (MiB) of `kvbench ARGS`, read from the kernel when it is reaped.
#[allow(clippy::zombie_processes)] // reaped by wait4, which also gives its peak RSS
fn status_and_peak_mib(dir: &Path, args: &[&str]) -> (i32, i64, String) {
    let mut child = kvbench(dir).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    // SAFETY: rusage is plain integers, for which all-zero bytes are a valid value.
    let mut usage = unsafe { std::mem::zeroed::<libc::rusage>() };
    let mut status = 0;
    // SAFETY: our own child, valid pointers.
    assert_eq!(unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) }, child.id() as i32);
    (libc::WEXITSTATUS(status), usage.ru_maxrss / 1024, stderr)
}

/// An uncompressed HdrHistogram V2 header that asks for a 4 GiB payload and 5 digits.
fn hostile_histogram() -> String {
    let mut h = Vec::new();
    for v in [0x1c84_9313u32, 0xffff_fff0, 0, 5] {
        h.extend_from_slice(&v.to_be_bytes());
    }
    h.extend_from_slice(&1u64.to_be_bytes());
    h.extend_from_slice(&(1u64 << 62).to_be_bytes());
    h.extend_from_slice(&1.0f64.to_be_bytes());
    // Base64 by hand: the test needs no dependency for 40 bytes.
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in h.chunks(3) {
        let n = c.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            s.push(if i <= c.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    s
}

#[test]
fn regression_crafted_histograms_in_a_result_file_cost_no_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let p = crafted_result(tmp.path());
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for e in v["engines"].as_array_mut().unwrap() {
        for ph in e["phases"].as_array_mut().unwrap() {
            if ph.get("latency").is_some_and(|l| !l.is_null()) {
                ph["latency"]["hdr"] = hostile_histogram().into();
            }
        }
    }
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let f = p.to_str().unwrap();
    for args in [vec!["report", f], vec!["report", "-f", "ycsb", f], vec!["compare", f, f]] {
        let (code, peak, stderr) = status_and_peak_mib(tmp.path(), &args);
        assert_eq!(code, 0, "{args:?}: the report is made from the figures: {stderr}");
        assert!(peak < 200, "{args:?} peaked at {peak} MiB");
    }
    // More histograms than the decode budget: refused before any is decoded.
    let one = serde_json::json!({"t_ms": 0, "ops": 1, "p50_ns": 1, "p99_ns": 1, "max_ns": 1, "hdr": "x"});
    v["engines"][0]["phases"][0]["intervals"] = vec![one; 200_001].into();
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, _, stderr) = status_and_peak_mib(tmp.path(), &["report", f]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("histograms, above the limit of 200000"), "{stderr}");
}

/// A scenario of one memory row with `phases` after its header and `rows` for its engines.
fn bad_scenario(dir: &Path, name: &str, phases: &str, rows: &str) -> String {
    let text = format!("# {name}\nseed = 1\n[dataset]\nrecords = 200\n{phases}{rows}");
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn regression_bad_scenarios_stop_with_exit_2_naming_file_line_and_field_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("empty.tsv"), "").unwrap();
    let memory = "[[engine]]\nname = \"memory\"\n";
    let load = "[[phase]]\nkind = \"load\"\n";
    let cases = [
        (
            "zipf",
            format!("{load}[[phase]]\nkind = \"get\"\ndistribution = \"zipfian\"\nzipf_exponent = 1.5\n"),
            memory.to_string(),
            "line 10: field `phase[2].zipf_exponent`: 1.5 is out of range (allowed: a number > 0 and < 1",
        ),
        (
            "zipf-load",
            format!("{load}distribution = \"zipfian\"\n"),
            memory.to_string(),
            "line 7: field `phase[1].distribution`: `zipfian` does not apply to a load",
        ),
        (
            "mixed",
            format!("{load}[[phase]]\nkind = \"mixed\"\n"),
            memory.to_string(),
            "line 8: field `phase[2].kind`: a mixed phase needs its `mix`",
        ),
        (
            "cold-load",
            format!("{load}cache = \"cold\"\n"),
            memory.to_string(),
            "line 7: field `phase[1].cache`: a load starts from an empty store",
        ),
        ("reopen-load", format!("{load}cache = \"reopen\"\n"), memory.to_string(), "line 7: field `phase[1].cache`"),
        (
            "reopen-step",
            format!("{load}[[phase]]\nkind = \"reopen\"\ndistribution = \"uniform\"\n"),
            memory.to_string(),
            "line 9: field `phase[2].distribution`: `distribution` does not apply to a reopen phase",
        ),
        (
            "labels",
            load.to_string(),
            "[[engine]]\nname = \"memory\"\nlabel = \"x\"\n[[engine]]\nname = \"memory\"\nlabel = \"x\"\n".into(),
            "line 12: field `engine[2].label`: two engine rows are labelled `x`",
        ),
        ("engine", load.to_string(), "[[engine]]\nname = \"nosuch\"\n".into(), "line 8: unknown engine `nosuch`"),
        (
            "url",
            load.to_string(),
            "[[engine]]\nname = \"lmdb\"\nurl = \"redis://127.0.0.1:1\"\n".into(),
            "line 9: [[engine]] lmdb: url: `lmdb` is an embedded engine",
        ),
    ];
    for (name, phases, rows, says) in cases {
        let s = bad_scenario(tmp.path(), name, &phases, &rows);
        let o = kvbench(tmp.path()).args(run_args("results")).arg(&s).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(&format!("{name}.toml, {says}")), "{name}: {stderr}");
        let runs = std::fs::read_dir(tmp.path().join("data")).map(|d| d.count()).unwrap_or(0);
        assert_eq!(runs, 0, "{name}: nothing ran");
    }
    let empty = bad_scenario(tmp.path(), "empty", &format!("[dataset]\nsource = \"file:empty.tsv\"\n{load}"), "");
    let text = std::fs::read_to_string(&empty).unwrap().replace("[dataset]\nrecords = 200\n", "");
    std::fs::write(&empty, format!("{text}{memory}")).unwrap();
    let o = kvbench(tmp.path()).args(run_args("results")).arg(&empty).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("dataset.source `file:empty.tsv`: no records"), "{stderr}");
    let invalid = tmp.path().join("utf8.toml");
    std::fs::write(&invalid, b"seed = 1\n# \xff\xfe\n").unwrap();
    let o = kvbench(tmp.path()).args(run_args("results")).arg(&invalid).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("utf8.toml, line 2: not valid UTF-8"));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn regression_plan_and_serve_refuse_what_run_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path()).args(["plan", "--engines", "nosuch", "--plan-dir", "plans"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--engines: unknown engine `nosuch`"), "{stderr}");
    let o = kvbench(tmp.path()).args(["serve", "--engine", "memory", "--max-connections", "0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`0` is out of range (allowed: 1 to 65536)"), "{stderr}");
}
