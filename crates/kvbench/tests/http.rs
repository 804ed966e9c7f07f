//! http-rocksdb (and http-lmdb): RocksDB served by `kvbench serve`, measured over HTTP. The
//! conformance suite runs against a server started per test; an end-to-end `kvbench run`
//! verifies every read and checks that the served process is gone afterwards. These tests live
//! in the kvbench crate because the http-* engines start this crate's binary (KVBENCH_BIN);
//! the server's own behaviour is tested beside it (crates/kvbench-serve/tests/server.rs).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use kvbench_engines::conformance::{self, engine_or_skip as descriptor};
use kvbench_model::result::{RunResult, Status};

/// The token the servers these tests start require (through $KVBENCH_SERVE_TOKEN, which the
/// http-* engines use when they start a server and when kvbench hands them no token, as the
/// shared conformance suite does).
const TEST_TOKEN: &str = "test-token-0123456789";

fn use_this_binary() {
    // Every test sets the same values, so concurrent tests agree.
    std::env::set_var("KVBENCH_BIN", env!("CARGO_BIN_EXE_kvbench"));
    std::env::set_var(kvbench_engines::http::TOKEN_ENV, TEST_TOKEN);
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn conformance_of(name: &str) {
    use_this_binary();
    let Some(desc) = descriptor(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    std::fs::create_dir_all(&db).unwrap();
    let sdir = tempfile::Builder::new().prefix("kvbench-server-").tempdir().unwrap();
    let start = desc.start_server.expect("http engines start a server");
    let server = start(sdir.path()).unwrap_or_else(|e| panic!("{name}: server did not start: {e}"));
    let url = server.url();
    let pid: i32 = server.info()["pid"].parse().unwrap();
    conformance::run(desc, &db, Some(&url)).unwrap_or_else(|e| panic!("{name}: {e}"));
    conformance::sync_modes(desc, tmp.path(), Some(&url)).unwrap_or_else(|e| panic!("{name}: {e}"));
    // The served database lives in the job directory.
    assert!(std::fs::read_dir(&db).unwrap().count() > 0, "{name}: nothing written in the job directory");
    let token = server.token().expect("kvbench starts its server with a token");
    assert_eq!(token, TEST_TOKEN, "the token of $KVBENCH_SERVE_TOKEN");
    assert_eq!(unauthenticated_status(&url), 401, "{name}: the server kvbench starts requires its token");
    no_nagle_stall(desc, tmp.path(), &url, &token);
    server.stop().unwrap_or_else(|e| panic!("{name}: stop: {e}"));
    assert!(!alive(pid), "{name}: the served process {pid} survived stop");
}

/// Regression: the earlier tiny_http server wrote head and body separately without
/// TCP_NODELAY, so every small response waited for the client's delayed ACK (~40 ms a request).
/// `kvbench serve` sets TCP_NODELAY on every accepted socket; small requests must not take
/// anywhere near 40 ms.
fn no_nagle_stall(desc: &kvbench_model::engine::EngineDescriptor, root: &Path, url: &str, token: &str) {
    use kvbench_model::engine::{OpenArgs, OpenMode, Options, SyncMode, WriteOp};
    let dir = root.join("nagle");
    std::fs::create_dir_all(&dir).unwrap();
    let options = Options::parse(desc.name, desc.options, &BTreeMap::new()).unwrap();
    let args = OpenArgs {
        dir: &dir,
        options: &options,
        sync: SyncMode::None,
        mode: OpenMode::ReadWrite,
        expected_records: 10,
        expected_bytes: 1000,
        url: Some(url),
        token: Some(token),
    };
    let e = (desc.open)(&args).unwrap();
    e.write(&[WriteOp { key: b"k", value: Some(&[7u8; 3000]) }]).unwrap();
    let mut r = e.reader().unwrap();
    let mut times = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..21 {
        let t = std::time::Instant::now();
        assert!(r.get(b"k", &mut buf).unwrap());
        let mut out = Vec::new();
        r.multi_get(&[b"k", b"k"], &mut out).unwrap();
        times.push(t.elapsed());
    }
    times.sort();
    assert!(times[10] < std::time::Duration::from_millis(30), "a get and a multi-get took {:?} (median)", times[10]);
    drop(r);
    e.close().unwrap();
}

fn unauthenticated_status(url: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /get?a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    all.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn http_rocksdb_conformance() {
    conformance_of("http-rocksdb");
}

#[test]
fn http_lmdb_conformance() {
    conformance_of("http-lmdb");
}

const SCENARIO: &str = r#"# http-rocksdb against rocksdb through kvbench run: every read verified.
seed = 11
timeout = 120
sync = "none"
[dataset]
records = 3000
value = { min = 45, max = 55 }
[[phase]]
kind = "load"
batch = 500
[[phase]]
kind = "get"
count = 500
[[phase]]
name = "mget-50"
kind = "multi-get"
keys = 50
count = 20
[[phase]]
name = "mget-1000-cold"
kind = "multi-get"
keys = 1000
count = 3
cache = "cold"
[[phase]]
kind = "scan"
[[engine]]
name = "http-rocksdb"
options = { block_cache = "1m" }
[[engine]]
name = "rocksdb"
options = { block_cache = "1m" }
"#;

#[test]
fn kvbench_run_with_http_rocksdb_verifies_reads_and_stops_the_server() {
    if descriptor("http-rocksdb").is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("s.toml"), SCENARIO).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(tmp.path())
        .env_remove("KVBENCH_BIN")
        // The random token of the server kvbench starts reaches the worker through the job.
        .env_remove(kvbench_engines::http::TOKEN_ENV)
        .args(["run", "s.toml", "--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{}\nstderr:\n{stderr}", String::from_utf8_lossy(&o.stdout));
    let entry = std::fs::read_dir(tmp.path().join("results")).unwrap().next().unwrap().unwrap();
    let r = RunResult::from_json(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
    let row = r.engines.iter().find(|e| e.engine == "http-rocksdb").expect("an http-rocksdb row");
    assert_eq!(row.status, Status::Ok, "{:?}", row.error);
    let mut kinds = BTreeMap::new();
    for p in &row.phases {
        assert_eq!(p.status, Status::Ok, "{}: {:?}", p.name, p.reason);
        assert_eq!(p.mismatches + p.missing + p.errors, 0, "{}", p.name);
        kinds.insert(p.name.clone(), p.ops);
    }
    assert_eq!(kinds.get("mget-50"), Some(&1000), "{kinds:?}");
    assert!(row.space_bytes > 0, "the served database lives in the job directory");
    let cold = row.phases.iter().find(|p| p.name == "mget-1000-cold").unwrap();
    assert!(cold.cache.starts_with("cold"), "{}", cold.cache);
    let pid: i32 = row.settings.get("server.pid").expect("server.pid in the row's settings").parse().unwrap();
    assert!(!alive(pid), "the served process {pid} is still running after kvbench run");
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}
