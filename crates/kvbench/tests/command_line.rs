//! The command line a benchmarker expects (issue 28): counts, durations and warm-ups per
//! phase, engine options and servers by flag, errors that name the flag, help for every flag.
//! Runs use the memory engine; plans need no engine.

use std::path::Path;
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

/// A run of the memory engine (readrandom, 300 records) into `out` with `extra` flags; its result.
fn run(dir: &Path, out: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", "--no-progress", "--records", "300", "--workload", "readrandom"];
    if !extra.contains(&"--engines") {
        args.extend(["--engines", "memory"]);
    }
    args.extend(["--out", out, "--data-dir", "data", "--plan-dir", "plans", "--format", "json"]);
    args.extend(extra);
    let o = kvbench(dir, &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn phase<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["engines"][0]["phases"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap()
}

#[test]
fn ops_and_warmup_bound_every_timed_phase_or_the_one_named() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run(tmp.path(), "a", &["--ops", "120", "--warmup", "40"]);
    assert_eq!(phase(&r, "load")["ops"], 300, "--ops leaves the load alone");
    assert_eq!(phase(&r, "get")["ops"], 120);
    let notes = phase(&r, "get")["notes"].to_string();
    assert!(notes.contains("untimed warm-up of 40 operations"), "{notes}");
    // One phase by name; a warm-up for a time.
    let r = run(tmp.path(), "b", &["--ops", "get=70", "--warmup", "get=50ms"]);
    assert_eq!(phase(&r, "get")["ops"], 70);
    assert!(phase(&r, "get")["notes"].to_string().contains("untimed warm-up of"), "{r}");
}

#[test]
fn duration_per_phase_ends_that_phase_only() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["plan", "--engines", "memory", "--records", "300", "--duration", "get=150ms"];
    let o = kvbench(tmp.path(), &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let line = |name: &str| out.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap().to_string();
    assert!(line("get").contains("runs for 0.15 s"), "{out}");
    assert!(!line("multi-get").contains("runs for"), "{out}");
    assert!(out.contains("estimate: at least 150 ms (largest part: memory's get for its duration)"), "{out}");
}

#[test]
fn a_flag_value_for_a_missing_phase_or_the_load_names_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, want) in [
        (&["--ops", "nope=3"][..], "--ops nope=3: no phase named `nope` (phases: load, get, multi-get, scan)"),
        (&["--ops", "load=3"][..], "--ops load=3: a load writes every record once"),
        (
            &["--duration", "load=1s"][..],
            "a load writes every record once: it cannot run for a duration, because of --duration load=1s",
        ),
        (&["--warmup", "soon"][..], "--warmup"),
    ] {
        let mut a = vec!["plan", "--engines", "memory", "--records", "300"];
        a.extend(args);
        let o = kvbench(tmp.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o.stderr).contains(want), "{args:?}: {}", text(&o.stderr));
    }
}

#[test]
fn plan_estimates_from_the_newest_earlier_result() {
    let tmp = tempfile::tempdir().unwrap();
    run(tmp.path(), "out", &[]);
    let o = kvbench(
        tmp.path(),
        &["plan", "--engines", "memory", "--records", "300", "--workload", "readrandom", "--out", "out"],
    );
    let out = text(&o.stdout);
    let est = out.lines().find(|l| l.starts_with("estimate: about ")).unwrap_or_else(|| panic!("{out}"));
    assert!(
        est.contains("memory's 300 ")
            && est.contains("each, from ")
            && est.contains("basis: the newest earlier results in out"),
        "{est}"
    );
}

#[test]
fn engine_options_by_flag_are_checked_like_the_files_and_name_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run(
        tmp.path(),
        "o",
        &["--engines", "memory,lmdb", "--set", "lmdb.map_size=64m", "-O", "memory.corrupt_every=0"],
    );
    let rows = r["engines"].as_array().unwrap();
    let row = |l: &str| rows.iter().find(|e| e["label"] == l).unwrap();
    assert_eq!(row("lmdb")["options"]["map_size"], 64 << 20);
    assert_eq!(row("memory")["options"]["corrupt_every"], 0);
    for (flag, want) in [
        (
            "memory.corrupt_every=abc",
            "--set memory.corrupt_every=abc: engine memory option `corrupt_every` = \"abc\": expected an integer",
        ),
        ("memory.nope=1", "--set memory.nope=1: engine memory has no option `nope` (options: corrupt_every"),
        ("lmdb.map_size=1", "--set lmdb.map_size=1: no row is engine or label `lmdb` (rows: memory)"),
        ("memory=1", "--set memory=1: expected ENGINE.OPTION=VALUE"),
    ] {
        let o = kvbench(tmp.path(), &["plan", "--engines", "memory", "--records", "300", "--set", flag]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert!(text(&o.stderr).contains(want), "{flag}: {}", text(&o.stderr));
    }
    // `-o` is the output everywhere now; the old engine-option forms name the new one.
    for old in [["-o", "lmdb.map_size=64m"], ["--option", "lmdb.map_size=64m"]] {
        let o = kvbench(tmp.path(), &["plan", "--engines", "lmdb", "--records", "300", old[0], old[1]]);
        assert_eq!(o.status.code(), Some(2), "{old:?}");
        assert!(text(&o.stderr).contains("--set lmdb.map_size=64m"), "{old:?}: {}", text(&o.stderr));
    }
}

#[test]
fn url_by_flag_points_a_server_row_at_a_running_server() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path(), &["plan", "--engines", "memory", "--url", "memory=redis://127.0.0.1:1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--url memory=redis://127.0.0.1:1: memory is not a server engine"),
        "{}",
        text(&o.stderr)
    );
    // Nothing listens on port 1: the row fails connecting to the URL given, not to a server of its own.
    let args = ["--engines", "redis", "--url", "redis=redis://127.0.0.1:1"];
    let mut a =
        vec!["run", "--no-progress", "--records", "100", "--workload", "readrandom", "--out", "u", "--format", "json"];
    a.extend(args);
    let o = kvbench(tmp.path(), &a);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o.stderr)));
    let row = &r["engines"][0];
    assert_eq!(row["status"], "failed", "{row}");
    let why = row.to_string();
    assert!(why.contains("redis://127.0.0.1:1"), "{why}");
}

fn scenario(name: &str) -> String {
    format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The records a dry run's `--dump` of one phase reads.
fn dumped(dir: &Path, args: &[&str]) -> Vec<String> {
    let o = kvbench(dir, args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout).lines().filter(|l| !l.starts_with('#')).map(String::from).collect()
}

#[test]
fn an_error_a_flag_causes_names_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    let body = "engines = [\"memory\"]\n[dataset]\nrecords = 200000\n[[phase]]\nkind = \"load\"\n\
                [[phase]]\nkind = \"get\"\ndistribution = \"hot\"\nhot_key = 123456\ncount = 10\n";
    std::fs::write(&file, body).unwrap();
    let o = kvbench(tmp.path(), &["plan", file.to_str().unwrap(), "--records", "20000"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("phase[2].hot_key`: 123456 is out of range (allowed: 0 to 19999")
            && err.contains("because of --records 20000"),
        "{err}"
    );
    // A share of the records that is no share is an error naming the file, line and forms.
    std::fs::write(&file, body.replace("123456", "\"120%\"")).unwrap();
    let err = text(&kvbench(tmp.path(), &["plan", file.to_str().unwrap()]).stderr);
    assert!(err.contains("line 9") && err.contains("\"12.5%\""), "{err}");
}

#[test]
fn article_000_hot_key_scales_with_records() {
    let tmp = tempfile::tempdir().unwrap();
    let a000 = scenario("article-000-python-lmdb-rocksdb-speedb.toml");
    let ops = dumped(tmp.path(), &["plan", &a000, "--records", "20000", "--dump", "--phase", "hot-key-open-once"]);
    // 12.3456% of 20 000 records: record 2469, every time (record 123456 of the article's 1 000 000).
    assert_eq!(ops.len(), 1000);
    assert!(ops.iter().all(|l| l == "get 2469"), "{:?}", &ops[..3]);
}

#[test]
fn article_003_whole_dictionary_phases_scale_with_records() {
    let tmp = tempfile::tempdir().unwrap();
    let a003 = scenario("article-003-dictionary.toml");
    let o = kvbench(tmp.path(), &["plan", &a003, "--records", "1200"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let ops = |name: &str| {
        let l = out.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap();
        l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap()
    };
    assert_eq!(ops("read-all-100x"), 120_000);
    assert_eq!(ops("load"), 120_000, "100 Write: the dictionary written 100 times");
    assert_eq!(ops("read-all-100x-bulk"), 100, "100 multi-gets of the whole dictionary");
    assert!(out.contains("100 requests of 1200 keys (120000 keys)"), "{out}");
    assert_eq!(ops("read-all-open-per-op"), 1200);
    assert_eq!(ops("1key-10000x"), 10_000, "the article's one-key counts stay");
    let hot = dumped(tmp.path(), &["plan", &a003, "--records", "1200", "--dump", "--phase", "1key-100x"]);
    assert!(hot.iter().all(|l| l == "get 342"), "28.58% of 1200: {:?}", &hot[..2]);
}

#[test]
fn list_is_one_engine_a_line_within_80_columns_and_list_engine_shows_its_options() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path(), &["list"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    let lmdb: Vec<&str> = out.lines().filter(|l| l.split_whitespace().next() == Some("lmdb")).collect();
    assert_eq!(lmdb.len(), 1, "{out}");
    // sled's unmaintained mark survives the short version column.
    let sled = out.lines().find(|l| l.starts_with("sled ")).unwrap_or_default();
    assert!(sled.is_empty() || sled.contains("unmaintained"), "{sled}");
    let o = kvbench(tmp.path(), &["list", "lmdb"]);
    let page = text(&o.stdout);
    assert!(page.lines().all(|l| l.chars().count() <= 80), "{page}");
    assert!(page.contains("capabilities  ") && page.contains("  map_size ("), "{page}");
    let o = kvbench(tmp.path(), &["list", "lmbd"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("did you mean lmdb"), "{}", text(&o.stderr));
}

#[test]
fn latest_json_points_at_the_newest_run_and_report_reads_it_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvbench(tmp.path(), &["report"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no results/latest.json here"), "{}", text(&o.stderr));
    let a = run(tmp.path(), "results", &[]);
    let b = run(tmp.path(), "results", &["--seed", "7"]);
    let link = std::fs::read_link(tmp.path().join("results/latest.json")).unwrap();
    assert!(link.is_relative() && link.to_string_lossy().contains(b["run_id"].as_str().unwrap()), "{link:?}");
    let o = kvbench(tmp.path(), &["report", "--format", "json"]);
    let shown: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown["run_id"], b["run_id"]);
    assert_ne!(a["run_id"], b["run_id"]);
    // Results written elsewhere get their own link there.
    run(tmp.path(), "elsewhere", &[]);
    assert!(tmp.path().join("elsewhere/latest.json").exists());
}

#[test]
fn several_formats_print_the_first_and_write_the_rest_beside_the_result() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["run", "--no-progress", "--engines", "memory", "--records", "300", "--workload", "readrandom"];
    args.extend(["--out", "r", "--data-dir", "data", "--plan-dir", "plans", "--format", "markdown,html,csv,ycsb"]);
    let o = kvbench(tmp.path(), &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("| engine |"), "markdown on stdout");
    let result = tmp.path().join("r").join(std::fs::read_link(tmp.path().join("r/latest.json")).unwrap());
    for ext in ["html", "csv", "ycsb.txt"] {
        let p = result.with_extension(ext);
        assert!(std::fs::metadata(&p).is_ok_and(|m| m.len() > 0), "{p:?}");
        assert!(text(&o.stderr).contains(&format!("{ext}: ")), "{}", text(&o.stderr));
    }
    let o = kvbench(tmp.path(), &["run", "--format", "table,nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--format: unknown format `nope`"), "{}", text(&o.stderr));
}

#[test]
fn outside_a_terminal_a_status_line_comes_every_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let args =
        ["run", "--engines", "memory", "--records", "300", "--workload", "readrandom", "--duration", "get=1500ms"];
    let mut a = args.to_vec();
    a.extend(["--out", "r", "--data-dir", "data", "--plan-dir", "plans", "--status-interval", "1"]);
    let o = kvbench(tmp.path(), &a);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.lines().any(|l| l.starts_with("status: engine 1 of 1 · ") && l.contains(" · memory get ")), "{err}");
    a.push("--no-progress");
    let o = kvbench(tmp.path(), &a);
    assert!(!text(&o.stderr).contains("status: "), "--no-progress: no status lines");
}

#[test]
fn percentiles_choose_the_latency_columns() {
    let tmp = tempfile::tempdir().unwrap();
    run(tmp.path(), "results", &[]);
    let o = kvbench(tmp.path(), &["report", "--format", "markdown", "--percentiles", "50,99,99.99"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("| engine | ops/s | MB/s | p50 | p99 | p99.99 | max |"), "{out}");
    let mut args = vec!["run", "--no-progress", "--engines", "memory", "--records", "300", "--workload", "readrandom"];
    args.extend([
        "--out",
        "r",
        "--data-dir",
        "data",
        "--plan-dir",
        "plans",
        "--percentiles",
        "90,99.999",
        "-f",
        "markdown",
    ]);
    let o = kvbench(tmp.path(), &args);
    assert!(text(&o.stdout).contains("| p90 | p99.999 | max |"), "{}", text(&o.stdout));
    let o = kvbench(tmp.path(), &["report", "--percentiles", "50,101"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--percentiles") && text(&o.stderr).contains("`101` is not a percentile"),
        "{}",
        text(&o.stderr)
    );
}

/// A default-workload run (get, multi-get of 100 keys, a full scan) of `engine` with `extra`.
fn run_default(dir: &Path, out: &str, engine: &str, records: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", "--no-progress", "--records", records, "--engines", engine, "--out", out];
    args.extend(["--data-dir", "data", "--plan-dir", "plans", "--format", "json"]);
    args.extend(extra);
    let o = kvbench(dir, &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn regression_ops_and_warmup_count_requests_and_leave_a_full_scan_one_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run_default(tmp.path(), "a", "memory", "300", &["--ops", "50", "--warmup", "5"]);
    let (mget, scan) = (phase(&r, "multi-get"), phase(&r, "scan"));
    assert_eq!((mget["requests"].as_u64(), mget["ops"].as_u64()), (Some(50), Some(5000)), "{mget}");
    assert!(mget["notes"].to_string().contains("warm-up of 5 requests (500 keys"), "{mget}");
    // Once 50 full scans and 5 untimed ones.
    assert_eq!((scan["requests"].as_u64(), scan["ops"].as_u64()), (Some(1), Some(300)), "{scan}");
    assert!(!scan["notes"].to_string().contains("warm-up"), "{scan}");
    // Named, a full-scan phase runs what it is told.
    let r = run_default(tmp.path(), "b", "memory", "300", &["--ops", "scan=3"]);
    assert_eq!(phase(&r, "scan")["requests"], 3);
    let o = kvbench(tmp.path(), &["plan", "--records", "300", "--engines", "memory", "--ops", "50"]);
    let plan = text(&o.stdout);
    assert!(plan.contains("50 requests of 100 keys (5000 keys)") && plan.contains("1 scans"), "{plan}");
    let o = kvbench(tmp.path(), &["plan", "--records", "300", "--engines", "memory", "--dump", "--phase", "scan"]);
    assert!(text(&o.stdout).contains("\nscan 0 end\n"), "{}", text(&o.stdout));
}

#[test]
fn regression_a_duration_ends_every_phase_kind_within_one_request_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run_default(tmp.path(), "a", "lmdb", "20000", &["--duration", "200ms"]);
    for name in ["get", "multi-get", "scan"] {
        let p = phase(&r, name);
        let (wall, max) = (p["wall_ns"].as_u64().unwrap(), p["latency"]["max_ns"].as_u64().unwrap());
        // The monitor looks every 5 ms; the slack is for a loaded machine's late wake-ups (the
        // stop flag read every 1024 scans overran by seconds here).
        let bound = 200_000_000 + 150_000_000 + max;
        assert!((200_000_000..=bound).contains(&wall), "{name}: {wall} ns, bound {bound} ns");
    }
}

/// Issue 42: `plan` over a trillion records printed nothing for minutes; `--dump` of a
/// billion gave no first byte in 30 s. Both are refused at once with the range a plan shows.
#[test]
fn regression_plan_refuses_more_records_than_it_can_show_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--dump"][..]] {
        let mut args = vec!["plan", "--engines", "memory", "--records", "1000000000000"];
        args.extend(extra);
        let started = std::time::Instant::now();
        let o = kvbench(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        let e = text(&o.stderr);
        assert!(e.contains("records = 1000000000000") && e.contains("1 to 10000000"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "refused before any record is derived");
    }
}

/// Issue 42: a `--history` append that fails (the store is a directory, or garbage) exits 3,
/// not 0, so a CI job sees that the store misses the run; the result file is still written.
#[test]
fn regression_a_failed_history_append_exits_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("store-dir")).unwrap();
    std::fs::write(tmp.path().join("garbage.sqlite"), vec![0x5a; 4096]).unwrap();
    for store in ["store-dir", "garbage.sqlite"] {
        let history = format!("--history={store}");
        let mut args = vec!["run", "--no-progress", "--records", "300", "--workload", "readrandom"];
        args.extend(["--engines", "memory", "--out", "out", "--data-dir", "data", "--plan-dir", "plans"]);
        args.extend(["--format", "json", &history]);
        let o = kvbench(tmp.path(), &args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{store}: {e}");
        assert!(e.contains("error: --history:") && e.contains("the results are in out/"), "{store}: {e}");
    }
}

/// Issue 42: multi-gets of 100 keys of 64 MiB values grew the worker to 6 GB. A phase whose
/// requests may hold more than the worker's limit is refused before anything runs, naming the
/// keys per request that fit.
#[test]
fn regression_multi_get_of_huge_values_is_refused_beyond_the_workers_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["plan", "--engines", "memory", "--records", "2", "--value-size", "67108864"];
    let o = kvbench(tmp.path(), &args);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("above its limit of 1073741824: keys_per_request at most 16"), "{e}");
}
