//! Secrets never reach a result, a log or a report (issue 32): a password planted in two Redis
//! rows' URLs — one row that runs, one whose server is not there (its log and job are kept) —
//! appears in none of the run's outputs: the result JSON, every report format, the files kept
//! under the data and plan directories, and the commands' stdout and stderr.
//! The same for the password of the role kvbench's PostgreSQL server admits over TCP
//! (`connection = "tcp"`), planted through its environment variable.
//! Set KVBENCH_ALLOW_MISSING=1 to skip without redis-server or PostgreSQL 15.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "Planted-S3cret-x9";

fn have_redis() -> bool {
    let found = Command::new("redis-server").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("KVBENCH_ALLOW_MISSING").is_none() {
        panic!("redis-server not installed: apt-get install redis-server (or KVBENCH_ALLOW_MISSING=1)");
    }
    found
}

/// A Redis that demands SECRET, on a free loopback port; killed on drop.
struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_redis(dir: &Path) -> (Redis, u16) {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--requirepass", SECRET])
        .args(["--save", "", "--appendonly", "no", "--dir", dir.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let redis = Redis(child);
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(10), "redis-server did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    (redis, port)
}

fn kvbench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env_remove("KVBENCH_FAULT")
        .env_remove(kvbench_engines::servers::postgres::PASSWORD_ENV)
        .args(args)
        .output()
        .unwrap()
}

/// `kvbench run s.toml` in `dir` with the planted postgres password in its environment.
fn run_with_pg_password(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env_remove("KVBENCH_FAULT")
        .env(kvbench_engines::servers::postgres::PASSWORD_ENV, SECRET)
        .args(["run", "s.toml", "--no-progress", "--format", "markdown", "--out", "out"])
        .args(["--data-dir", ".kvbench/data", "--plan-dir", ".kvbench/plans"])
        .output()
        .unwrap()
}

/// The run's result file under `dir/out`.
fn result_file(dir: &Path, run: &Output) -> PathBuf {
    let result = files(&dir.join("out")).into_iter().find(|p| p.extension().is_some_and(|e| e == "json"));
    result.unwrap_or_else(|| panic!("no result: {}", String::from_utf8_lossy(&run.stderr)))
}

/// Every report format of `result`, to stdout and to a file, as commands' outputs.
fn reports(dir: &Path, result: &Path) -> Vec<Output> {
    let mut outputs = Vec::new();
    for format in ["table", "markdown", "csv", "json", "html", "ycsb"] {
        let out = dir.join(format!("report.{format}"));
        let file = result.to_str().unwrap();
        outputs.push(kvbench(dir, &["report", file, "--format", format]));
        outputs.push(kvbench(dir, &["report", file, "--format", format, "--output", out.to_str().unwrap()]));
    }
    outputs
}

/// No file under `dir` but the scenario, and no command's stdout or stderr, holds SECRET; the
/// failed row's log was kept (so it was looked at).
fn assert_nowhere(dir: &Path, outputs: &[Output]) {
    let kept = files(&dir.join(".kvbench"));
    assert!(kept.iter().any(|p| p.extension().is_some_and(|e| e == "log")), "the failed row's log is kept: {kept:?}");
    for p in files(dir).iter().filter(|p| !p.ends_with("s.toml")) {
        assert!(!holds_secret(&std::fs::read(p).unwrap()), "{} holds the secret", p.display());
    }
    for (i, o) in outputs.iter().enumerate() {
        assert!(!holds_secret(&o.stdout), "command {i}'s stdout holds the secret");
        assert!(!holds_secret(&o.stderr), "command {i}'s stderr holds the secret");
    }
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn holds_secret(bytes: &[u8]) -> bool {
    bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes())
}

#[test]
fn a_planted_secret_reaches_no_output() {
    if !have_redis() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let server_dir = tempfile::tempdir().unwrap();
    let (_redis, port) = start_redis(server_dir.path());
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let scenario = format!(
        "name = \"secret\"\nseed = 3\ntimeout = 60\n\
         [[engine]]\nname = \"redis\"\nlabel = \"up\"\nurl = \"redis://:{SECRET}@127.0.0.1:{port}\"\n\
         [[engine]]\nname = \"redis\"\nlabel = \"down\"\nurl = \"redis://:{SECRET}@127.0.0.1:{closed}\"\n\
         [dataset]\nrecords = 200\nvalue = {{ size = 20 }}\n\
         [[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\n"
    );
    std::fs::write(tmp.path().join("s.toml"), scenario).unwrap();
    let mut outputs = vec![kvbench(
        tmp.path(),
        &["run", "s.toml", "--no-progress", "--format", "markdown", "--out", "out"]
            .iter()
            .chain(&["--data-dir", ".kvbench/data", "--plan-dir", ".kvbench/plans"])
            .copied()
            .collect::<Vec<_>>(),
    )];
    let result = result_file(tmp.path(), &outputs[0]);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    let rows = r["engines"].as_array().unwrap();
    assert_eq!(rows[0]["status"], "ok", "the row with the password must have run: {}", rows[0]);
    assert_eq!(rows[1]["status"], "failed", "{}", rows[1]);
    assert!(r["workload"].to_string().contains(&format!("redis://***@127.0.0.1:{port}")), "{}", r["workload"]);
    outputs.extend(reports(tmp.path(), &result));
    assert_nowhere(tmp.path(), &outputs);
}

/// Two postgres rows over TCP, the server's role password planted: one row runs, one fails at
/// its open (a bad table name), keeping its log and job.
#[test]
fn a_planted_postgres_tcp_password_reaches_no_output() {
    if !Path::new("/usr/lib/postgresql/15/bin/postgres").is_file() {
        assert!(
            std::env::var_os("KVBENCH_ALLOW_MISSING").is_some(),
            "PostgreSQL 15 not installed: apt-get install postgresql-15 (or KVBENCH_ALLOW_MISSING=1)"
        );
        return;
    }
    let tmp = tempfile::Builder::new().prefix("kvbench-secret-").tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let scenario = "name = \"secret-pg\"\nseed = 3\ntimeout = 120\n\
         [[engine]]\nname = \"postgres\"\nlabel = \"up\"\noptions = { connection = \"tcp\" }\n\
         [[engine]]\nname = \"postgres\"\nlabel = \"bad\"\noptions = { connection = \"tcp\", table = \"Bad\" }\n\
         [dataset]\nrecords = 200\nvalue = { size = 20 }\n\
         [[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\n";
    std::fs::write(tmp.path().join("s.toml"), scenario).unwrap();
    let mut outputs = vec![run_with_pg_password(tmp.path())];
    let result = result_file(tmp.path(), &outputs[0]);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    let rows = r["engines"].as_array().unwrap();
    assert_eq!(rows[0]["status"], "ok", "the row over TCP must have run: {}", rows[0]);
    let connection = rows[0]["settings"]["connection"].as_str().unwrap_or_default();
    assert!(connection.starts_with("TCP 127.0.0.1:"), "{}", rows[0]["settings"]);
    assert_eq!(rows[1]["status"], "failed", "{}", rows[1]);
    outputs.extend(reports(tmp.path(), &result));
    assert_nowhere(tmp.path(), &outputs);
}
