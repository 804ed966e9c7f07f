//! `make install PREFIX=...` (scripts/install.sh): an installed copy in a temporary prefix runs
//! from a directory outside the checkout, finds its workers beside itself, and says which
//! runtimes it found and where; and every example command of the README runs there as written
//! (`run` examples on 1000 records and 100 operations a phase, `serve` until it answers). The
//! first test installs the Rust and Go runtimes only (the Python venv comes from PyPI); the
//! README's needs every runtime, so it skips unless `make go python java node` has run, as
//! `make test` does.

use std::path::Path;
use std::process::Command;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_installed_copy_lists_and_plans_from_outside_the_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if !root.join("drivers/go/bin/kvbench-go-worker").exists() {
        eprintln!("skipped: no Go worker built (make go)");
        return;
    }
    let prefix = tempfile::tempdir().unwrap();
    let o = Command::new(root.join("scripts/install.sh"))
        .arg(prefix.path())
        .env("KVBENCH_BIN", env!("CARGO_BIN_EXE_kvbench"))
        .env("KVBENCH_RUNTIMES", "go")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let away = tempfile::tempdir().unwrap();
    let kvbench = prefix.path().join("bin/kvbench");
    let home = prefix.path().canonicalize().unwrap().join("lib/kvbench");
    let o = Command::new(&kvbench).arg("list").current_dir(away.path()).env_remove("KVBENCH_HOME").output().unwrap();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let go_bbolt = out.lines().find(|l| l.starts_with("go-bbolt ")).unwrap_or_else(|| panic!("{out}"));
    // The status column may go on (", default": one of the default comparison's rows).
    assert!(go_bbolt.split_whitespace().nth(3).is_some_and(|s| s.starts_with("ok")), "{go_bbolt}");
    assert!(out.contains(&format!("  go      {}/drivers/go/bin/kvbench-go-worker", home.display())), "{out}");
    assert!(out.contains(&format!("  home    {}", home.display())), "{out}");
    // A scenario named as in the README, from any directory: the installed copy's.
    let o = Command::new(&kvbench)
        .args(["plan", "scenarios/quick.toml", "--engines", "go-bbolt", "--records", "500"])
        .current_dir(away.path())
        .env_remove("KVBENCH_HOME")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("scenarios/quick.toml (from kvbench's home)"), "{}", text(&o.stderr));
}

/// The example commands of the README's `sh` blocks (the usage and the articles' runs), each
/// without its comment.
fn readme_examples(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        let cmd = line.split(" # ").next().unwrap_or("").trim();
        if in_sh && (cmd.starts_with("kvbench ") || cmd.starts_with("make install")) {
            out.push(cmd.to_string());
        }
    }
    out
}

/// How the test runs an example.
#[derive(Debug, PartialEq)]
enum Way {
    /// As written.
    AsWritten,
    /// Smaller (see [`smaller`]) to keep the test short: the full sizes take minutes each.
    Smaller,
    /// Started, checked to listen, stopped (it serves until stopped).
    Serve,
    /// `make install`: the test's own install step (the script `make install` runs).
    Install,
}

fn way(cmd: &str) -> Way {
    if cmd.starts_with("make install PREFIX=") {
        Way::Install
    } else if cmd.starts_with("kvbench serve ") {
        Way::Serve
    } else if cmd == "kvbench run" || cmd.starts_with("kvbench run ") {
        Way::Smaller
    } else {
        Way::AsWritten
    }
}

/// Scenarios whose phases already run few operations (article 001: at most 20 requests a
/// phase, of up to 100 000 keys each): `--ops 100` would make them longer, not shorter.
const FEW_OPS: &[&str] = &["article-001"];

/// `cmd` with `--records 1000` and (unless it runs few operations) `--ops 100`, replacing the
/// values it gives: article 000's phases that open the store per operation make each
/// operation an open, so the ops are the test's time.
fn smaller(cmd: &str) -> String {
    if cmd.contains("--trace ") {
        // A trace's size is its own: neither flag applies to it.
        return cmd.to_string();
    }
    let mut words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
    let few = FEW_OPS.iter().any(|s| cmd.contains(s));
    for (flag, n) in [("--records", "1000"), ("--ops", "100")].into_iter().filter(|(f, _)| !(few && *f == "--ops")) {
        match words.iter().position(|w| w == flag) {
            Some(i) => words[i + 1] = n.into(),
            None => words.extend([flag.to_string(), n.into()]),
        }
    }
    words.join(" ")
}

/// The README's placeholders made real: `<run>` is the newest run, `A.json`/`B.json` two runs
/// of one scenario (results/A.json and B.json, as both forms are written).
fn placeholders(cmd: &str, dir: &Path) -> String {
    if !cmd.contains("<run>") {
        return cmd.to_string();
    }
    let latest = std::fs::read_link(dir.join("results/latest.json")).expect("results/latest.json");
    let stem = latest.file_stem().unwrap().to_string_lossy().into_owned();
    cmd.replace("<run>", &stem)
}

/// What `redis-cli monitor` prints of a few clients' GET, SET, MSET and DEL (the README's
/// trace examples read `monitor.txt`).
fn monitor_capture() -> String {
    let mut t = String::from("OK\n");
    for i in 0..600u64 {
        let (client, key) = (format!("127.0.0.1:{}", 40000 + i % 3), format!("key:{:012}", (i * 37) % 90));
        let cmd = match i % 6 {
            0 | 1 => format!("\"GET\" \"{key}\""),
            2 | 3 => format!("\"SET\" \"{key}\" \"v\\x00{i}\""),
            4 => format!("\"MSET\" \"{key}\" \"a\" \"key:{:012}\" \"bb\"", (i * 11) % 90),
            _ => format!("\"DEL\" \"{key}\""),
        };
        t.push_str(&format!("{}.{:06} [0 {client}] {cmd}\n", 1_795_840_000 + i / 1000, (i % 1000) * 1000));
    }
    t
}

/// Two result files of the same scenario among `dir/results`, copied to A.json and B.json
/// there and in `dir`.
fn two_runs(dir: &Path) {
    let mut by_scenario: std::collections::BTreeMap<String, Vec<std::path::PathBuf>> = Default::default();
    for e in std::fs::read_dir(dir.join("results")).unwrap().flatten() {
        let p = e.path();
        // A.json and B.json are this function's own copies: copying one onto itself empties it.
        let copy = ["A.json", "B.json"].iter().any(|n| p.file_name().is_some_and(|f| f == *n));
        let is_run = p.extension().is_some_and(|x| x == "json") && !p.is_symlink() && !copy;
        let Some(v) = is_run.then(|| std::fs::read_to_string(&p).ok()).flatten() else { continue };
        let v: serde_json::Value = serde_json::from_str(&v).unwrap_or_default();
        if let Some(s) = v["scenario"].as_str() {
            by_scenario.entry(s.to_string()).or_default().push(p);
        }
    }
    let pair = by_scenario.values().find(|v| v.len() >= 2).expect("two runs of one scenario");
    for (name, from) in [("A.json", &pair[0]), ("B.json", &pair[1])] {
        std::fs::copy(from, dir.join("results").join(name)).unwrap();
        std::fs::copy(from, dir.join(name)).unwrap();
    }
}

/// Run `cmd` with bash (pipes as written) in `dir`, `bin` first on PATH; (status, stdout, stderr).
fn sh(cmd: &str, dir: &Path, bin: &Path) -> (Option<i32>, String, String) {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new("bash")
        .args(["-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("KVBENCH_HOME")
        .output()
        .unwrap();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

/// Every row of the newest run that failed, with its error.
fn failed_rows(dir: &Path) -> Vec<String> {
    let latest = std::fs::read_to_string(dir.join("results/latest.json")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&latest).unwrap_or_default();
    let rows = v["engines"].as_array().cloned().unwrap_or_default();
    rows.iter().filter(|e| e["status"] == "failed").map(|e| format!("{}: {}", e["label"], e["error"])).collect()
}

/// `kvbench serve ...` as written: it answers on its address, then stops on SIGTERM.
fn serve(cmd: &str, dir: &Path, bin: &Path) {
    let addr = cmd.split_whitespace().skip_while(|w| *w != "--listen").nth(1).expect("--listen ADDR");
    let store = cmd.split_whitespace().skip_while(|w| *w != "--dir").nth(1).map(Path::new);
    let fresh = store.is_some_and(|s| !s.exists());
    let mut child = Command::new(bin.join("kvbench"))
        .args(cmd.split_whitespace().skip(1))
        .current_dir(dir)
        .env_remove("KVBENCH_HOME")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut up = false;
    while !up && std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        up = std::net::TcpStream::connect(addr).is_ok();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    if let Some(s) = store.filter(|_| fresh) {
        let _ = std::fs::remove_dir_all(s);
    }
    assert!(up, "`{cmd}` listens on {addr}");
}

#[test]
fn readme_examples_run_from_an_installed_copy_outside_the_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let go = root.join("drivers/go/bin/kvbench-go-worker").exists();
    let python = root.join("drivers/python/.venv/bin/python").exists();
    let java = root.join("drivers/java/target/kvbench-java-worker.jar").exists();
    let node = root.join("drivers/node/node_modules").exists();
    if !go || !python || !java || !node {
        eprintln!("skipped: the README's examples need every runtime (make go python java node)");
        return;
    }
    let examples = readme_examples(&std::fs::read_to_string(root.join("README.md")).unwrap());
    assert!(examples.len() >= 25, "the README's examples are found: {examples:?}");
    assert!(examples.iter().any(|e| way(e) == Way::Install), "the README says how to install");
    let prefix = tempfile::tempdir().unwrap();
    let o = Command::new(root.join("scripts/install.sh"))
        .arg(prefix.path())
        .env("KVBENCH_BIN", env!("CARGO_BIN_EXE_kvbench"))
        .output()
        .unwrap();
    assert!(o.status.success(), "install: {}", text(&o.stderr));
    let bin = prefix.path().join("bin");
    let away = tempfile::tempdir().unwrap();
    let dir = away.path();
    std::fs::write(dir.join("monitor.txt"), monitor_capture()).unwrap();
    for ex in &examples {
        let cmd = match way(ex) {
            Way::Install => continue,
            Way::Serve => {
                serve(ex, dir, &bin);
                continue;
            }
            Way::Smaller => smaller(ex),
            Way::AsWritten => placeholders(ex, dir),
        };
        if cmd.contains("A.json") {
            two_runs(dir);
        }
        let started = std::time::Instant::now();
        let (code, out, err) = sh(&cmd, dir, &bin);
        eprintln!("$ {cmd} ({:.1} s)", started.elapsed().as_secs_f64());
        // The CI gate's exit 1 is its answer (B slower), not a failure.
        let ok = code == Some(0) || (cmd.contains("--fail-if-slower") && code == Some(1));
        // The summary table cuts a long status: the failed rows' errors are named whole.
        let failed = if ok { vec![] } else { failed_rows(dir) };
        assert!(ok, "`{cmd}` exited {code:?}; failed rows: {failed:#?}\n{out}\n{err}");
        match cmd.split_whitespace().skip_while(|w| *w != "-o").nth(1) {
            // It writes where -o says.
            Some(o) => assert!(dir.join(o).exists(), "`{cmd}` wrote {o}"),
            None => assert!(!out.is_empty() || !err.is_empty(), "`{cmd}` says something"),
        }
        if way(ex) == Way::Smaller {
            assert!(failed_rows(dir).is_empty(), "`{cmd}`: {:?}", failed_rows(dir));
        }
        if cmd == "kvbench list" {
            // Which runtimes it found, and where: every one, in the installed home.
            let home = prefix.path().canonicalize().unwrap().join("lib/kvbench");
            for (k, at) in [
                ("rust", "bin/kvbench"),
                ("go", "lib/kvbench/drivers/go/bin/"),
                ("python", "lib/kvbench/drivers/python/.venv/"),
                ("java", "lib/kvbench/drivers/java/bin/"),
                ("node", "lib/kvbench/drivers/node/bin/"),
            ] {
                let line =
                    out.lines().find(|l| l.starts_with(&format!("  {k:<8}"))).unwrap_or_else(|| panic!("{k}: {out}"));
                let want = prefix.path().canonicalize().unwrap().join(at);
                assert!(line.contains(want.to_str().unwrap()), "{k} found in the install: {line}");
            }
            assert!(out.contains(&format!("  home    {}", home.display())), "{out}");
        }
    }
}
